"""The LAIA community's V20 house rules — the dice rules (shared/seeds/003_612eda57cd93bf24.txt).

Read top to bottom, this module follows the rule document: difficulty and its chart, what counts as
a success, degrees of success, the specialty, the 1s cancelling successes from left to right, the
signed sum that decides success, failure or botch, the reply line the community's old bot printed,
the caution about difficulty 10, then trying again, extended, resisted, extended-and-resisted and
teamwork. Every function is pure: faces or counts in, result out. What the rules share with the
other d10 rule sets comes from :mod:`coterie.d10`.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from math import comb

from coterie.dice import d10
from coterie.records import dataclass
from coterie.render.elements import Role

# --- difficulty ---------------------------------------------------------------------------------

MIN_DIFFICULTY = 2
MAX_DIFFICULTY = 10
#: the difficulty when the Storyteller (or the roll) names none
DEFAULT_DIFFICULTY = 6

#: the document's chart runs from 3 to 9; 2 and 10 are legal but not on it
DIFFICULTY_LABELS: dict[int, str] = {
    3: "Trivial",
    4: "Easy",
    5: "Straightforward",
    6: "Standard",
    7: "Challenging",
    8: "Difficult",
    9: "Extremely difficult",
}

#: at or below this difficulty the document doubts the task needs a roll at all
HARDLY_WORTH_A_ROLL = 3
#: the difficulty the document asks Storytellers to be careful with
CAUTION_DIFFICULTY = 10


def difficulty_label(difficulty: int) -> str:
    """The chart's name for a difficulty; 2 and 10 are described by where they sit."""
    if difficulty in DIFFICULTY_LABELS:
        return DIFFICULTY_LABELS[difficulty]
    if difficulty < min(DIFFICULTY_LABELS):
        return "easier than Trivial"
    return "beyond the chart"


# --- successes and degrees ------------------------------------------------------------------------


def is_success(face: int, difficulty: int) -> bool:
    """A face equal to or above the difficulty is a success (so a 10 always is)."""
    return d10.is_success(face, difficulty)


DEGREES = ("Marginal", "Moderate", "Complete", "Exceptional", "Phenomenal")


def degree(successes: int) -> str | None:
    """1 Marginal, 2 Moderate, 3 Complete, 4 Exceptional, 5 or more Phenomenal; none below 1."""
    return d10.degree(successes, DEGREES)


# --- the specialty ------------------------------------------------------------------------------

#: with a specialty, a 10 that is not cancelled is worth this many successes
SPECIALTY_TEN = 2

# --- 1s cancel successes, from left to right ------------------------------------------------------


def cancellations(faces: Sequence[int], difficulty: int) -> list[tuple[int, int]]:
    """Which 1 cancels which success: ``(index of the 1, index of the success)`` pairs.

    Both lists are taken in roll order: the first 1 cancels the leftmost success, the second 1 the
    next success to the right, and so on — wherever the 1 itself lies. 1s beyond the number of
    successes find nothing to cancel.
    """
    successes = [i for i, face in enumerate(faces) if is_success(face, difficulty)]
    ones = [i for i, face in enumerate(faces) if face == 1]
    return list(zip(ones, successes, strict=False))


# --- one throw: the signed sum --------------------------------------------------------------------


@dataclass(frozen=True)
class Throw:
    """One dice pool thrown against a difficulty and counted the LAIA way."""

    faces: tuple[int, ...]
    difficulty: int
    specialty: bool
    #: dice at or above the difficulty
    rolled: int
    #: dice showing 1
    ones: int
    #: ``(one, success)`` index pairs, see :func:`cancellations`
    pairs: tuple[tuple[int, int], ...]
    #: extra successes from 10s under a specialty that were not cancelled
    bonus: int

    @property
    def cancelled(self) -> tuple[int, ...]:
        """Indices of the successes that 1s cancelled, left to right."""
        return tuple(success for _, success in self.pairs)

    @property
    def leftover_ones(self) -> int:
        """1s that found no success to cancel; each takes the sum one further down."""
        return self.ones - len(self.pairs)

    @property
    def total(self) -> int:
        """The signed sum: every success (a specialty 10 that stands counts twice) minus every 1."""
        return self.rolled + self.bonus - self.ones

    @property
    def outcome(self) -> str:
        """Above zero a success, zero a failure, below zero a botch."""
        if self.total > 0:
            return "success"
        return "botch" if self.total < 0 else "failure"

    @property
    def botch(self) -> bool:
        return self.total < 0

    @property
    def degree(self) -> str | None:
        return degree(self.total)

    @property
    def roles(self) -> tuple[Role, ...]:
        """How each die counted: a standing specialty 10 is critical, a cancelled pair is
        cancelled, and the 1s left over — there are some only on a botch — are the botch."""
        cancelled = {index for pair in self.pairs for index in pair}
        roles: list[Role] = []
        for index, face in enumerate(self.faces):
            if index in cancelled:
                roles.append(Role.CANCELLED)
            elif is_success(face, self.difficulty):
                special = self.specialty and face == 10
                roles.append(Role.CRITICAL if special else Role.SUCCESS)
            elif face == 1:
                roles.append(Role.BOTCH)
            else:
                roles.append(Role.FAILURE)
        return tuple(roles)


def throw(faces: Sequence[int], difficulty: int, *, specialty: bool = False) -> Throw:
    """Count a throw.

    * each die at or above the difficulty is a success;
    * with a specialty, each 10 is worth two successes — unless a 1 cancels it;
    * every 1 takes one off the sum; while successes remain, it cancels the next one from the left
      (the whole die, so a cancelled 10 keeps no bonus);
    * the sum is positive (success, with a degree), zero (failure) or negative (botch).
    """
    pairs = cancellations(faces, difficulty)
    cancelled = {success for _, success in pairs}
    bonus = 0
    if specialty:
        standing_tens = [i for i, face in enumerate(faces) if face == 10 and i not in cancelled]
        bonus = (SPECIALTY_TEN - 1) * len(standing_tens)
    return Throw(
        faces=tuple(faces),
        difficulty=difficulty,
        specialty=specialty,
        rolled=d10.count_successes(faces, difficulty),
        ones=d10.count_ones(faces),
        pairs=tuple(pairs),
        bonus=bonus,
    )


# --- the reply line of the community's bot --------------------------------------------------------


def expression(pool: int, difficulty: int) -> str:
    """The dice expression the old bot printed: ``POOLd10``, count the dice ``>=`` the
    difficulty, minus the count of dice ``=1``."""
    return f"{pool}d10c[>={difficulty}]-@c[=1]"


def details(pool: int, difficulty: int, faces: Sequence[int]) -> str:
    """``Details:[5d10c[>=8]-@c[=1] (9 1 1 8 1)]``: the expression and the faces in roll order."""
    return f"Details:[{expression(pool, difficulty)} ({' '.join(str(f) for f in faces)})]"


# --- difficulty 10 --------------------------------------------------------------------------------


def botch_chance_at_ten(pool: int) -> Fraction:
    """The exact chance that ``pool`` dice botch at difficulty 10.

    A throw botches exactly when its 1s outnumber its successes: 1s at least as many as the
    successes cancel them all, and a cancelled 10 keeps no specialty bonus, so the specialty never
    matters here. At 10 a die is a 1 or a 10 with the same chance (1 in 10), so "more 1s than 10s"
    and "more 10s than 1s" are equally likely, and the chance is half of what is left once the
    ties are taken out. A tie of ``k`` 1s and ``k`` 10s can be thrown in
    ``C(pool, k) * C(pool - k, k) * 8 ** (pool - 2k)`` ways out of ``10 ** pool``.
    """
    if pool < 0:
        raise ValueError("a pool cannot be negative")
    ties = sum(
        comb(pool, k) * comb(pool - k, k) * 8 ** (pool - 2 * k) for k in range(pool // 2 + 1)
    )
    return Fraction(10**pool - ties, 2 * 10**pool)


# --- trying again ---------------------------------------------------------------------------------


def retry_difficulty(difficulty: int, failures: int) -> int:
    """After ``failures`` failed attempts the next one is that much harder (+1, then +2, ...)."""
    return d10.retry_difficulty(difficulty, failures)


# --- extended, resisted, extended and resisted, teamwork ------------------------------------------


def extended_step(state: d10.Extended, roll: Throw, *, botch_wipes: bool = True) -> d10.Extended:
    """Add a throw to an extended action: a positive sum adds that many successes, a zero adds
    nothing, a botch adds nothing and (by default) throws away what was gathered."""
    return d10.extended_step(state, roll.total, roll.botch, botch_wipes=botch_wipes)


def standing(roll: Throw) -> int:
    """Successes a throw brings to a comparison or a team: its sum, and never less than none."""
    return max(0, roll.total)


def resisted(actor: Throw, opponent: Throw) -> d10.Resisted:
    """Both sides throw; the side with the higher sum wins and keeps only the difference."""
    return d10.Resisted(standing(actor), standing(opponent))


def extended_resisted_step(
    state: d10.ExtendedResisted, actor: Throw, opponent: Throw, *, botch_wipes: bool = True
) -> d10.ExtendedResisted:
    """One turn of a contest to a number of successes: the margin goes to the winner's tally."""
    return d10.extended_resisted_step(
        state,
        standing(actor),
        standing(opponent),
        actor_botched=actor.botch,
        opponent_botched=opponent.botch,
        botch_wipes=botch_wipes,
    )


def teamwork(rolls: Sequence[Throw]) -> d10.Teamwork:
    """Each character throws their own pool; the successes are added, and any botch is flagged
    because it can ruin the attempt for everyone."""
    return d10.Teamwork(tuple(standing(r) for r in rolls), tuple(r.botch for r in rolls))
