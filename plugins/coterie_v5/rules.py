"""Vampire: the Masquerade 5th edition — the dice rules (shared/seeds/002_c21c8b91aa38e6d9.txt).

Read top to bottom, this module follows the rule document: dice pools (Traits, Hunger dice,
specialties, trackers), Difficulty and the ways to set it (opposition, taking half, equipment,
modifiers), automatic wins, counting successes and criticals, the margin, the result of a roll
(win, critical, messy critical, failure that may be won at a cost, bestial and total failure),
teamwork, Willpower re-rolls, checks (rouse checks) and contests. Every function is pure: faces or
counts in, result out. The readings chosen where the document is loose are explained in
docs/rules/v5.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from coterie.records import dataclass

# --- dice pools ---------------------------------------------------------------------------------

#: the smallest pool that is rolled: a pool brought to zero or below still rolls one die
MIN_POOL = 1
#: Traits that are trackers: a roll on one of them uses its current (undamaged) value
TRACKERS = ("willpower", "humanity", "health")
#: Hunger runs from 0 to 5
MAX_HUNGER = 5
#: a specialty that applies adds this many dice, however many specialties fit the action
SPECIALTY_DICE = 1
#: each helper with a dot in the Skill (anyone, when no Skill is involved) adds this many dice
DICE_PER_HELPER = 1


def pool_size(total: int) -> int:
    """The dice actually rolled for a pool that adds up to ``total`` (never fewer than one)."""
    return max(MIN_POOL, total)


def hunger_split(pool: int, hunger: int) -> tuple[int, int]:
    """``(regular, hunger)`` dice: Hunger dice take the place of regular ones, as many as the
    character's Hunger, but never more than the pool has."""
    hunger_dice = min(max(0, hunger), pool)
    return pool - hunger_dice, hunger_dice


def teamwork_pool(largest_pool: int, helpers: int) -> int:
    """Teamwork: the biggest pool of those taking part, one more die per qualified helper."""
    return largest_pool + DICE_PER_HELPER * helpers


# --- difficulty ---------------------------------------------------------------------------------

#: a Difficulty is the number of successes needed to win
DEFAULT_DIFFICULTY = 1
MIN_DIFFICULTY = 0
MAX_DIFFICULTY = 30
#: opposition never sets a Difficulty below 1, even for a foe with no dots
MIN_OPPOSITION = 1

#: equipment quality -> Difficulty modifier; ``None`` means the task cannot be attempted
EQUIPMENT: dict[str, int | None] = {
    "good": 0,
    "poor": 1,
    "improvised": 1,
    "unreliable": 1,
    "none": None,
}


def taking_half(opposing_pool: int) -> int:
    """A static Difficulty for opposition: half the opposing pool, rounded down (at least 1)."""
    return max(MIN_OPPOSITION, opposing_pool // 2)


def skill_difficulty(skill: int) -> int:
    """A static Difficulty for opposition: the opponent's Skill, but never less than 1."""
    return max(MIN_OPPOSITION, skill)


# --- automatic wins -----------------------------------------------------------------------------


def automatic_successes(difficulty: int) -> int:
    """The successes an automatic win counts: the Difficulty (margin 0). Difficulty 0 decides
    like 1 (docs/rules/v5.md): a win never comes without a success, automatic or not (its
    margin is then the one success, as Difficulty 0's margins are)."""
    return max(1, difficulty)


def automatic_win_allowed(pool: int, difficulty: int) -> bool:
    """The Storyteller may skip the roll when the pool is at least twice the Difficulty (at
    Difficulty 0, as at 1: two dice)."""
    return pool >= 2 * automatic_successes(difficulty)


# --- successes and criticals --------------------------------------------------------------------

#: every die at or above this face is a success (a 10 included)
SUCCESS_FACE = 6
CRITICAL_FACE = 10
#: each pair of 10s adds this many successes to the two the 10s already count
CRITICAL_BONUS = 2


def is_success(face: int) -> bool:
    return face >= SUCCESS_FACE


def critical_pairs(faces: Sequence[int]) -> int:
    """How many pairs of 10s the faces hold; every pair is a critical of its own."""
    return sum(1 for face in faces if face == CRITICAL_FACE) // 2


def count_successes(faces: Sequence[int]) -> int:
    """Dice at 6 or more, plus two more for every pair of 10s (two 10s: 4, three: 5, four: 8)."""
    return sum(1 for face in faces if is_success(face)) + CRITICAL_BONUS * critical_pairs(faces)


@dataclass(frozen=True)
class Dice:
    """One side's dice: the regular ones and the Hunger ones, in the order rolled. The two kinds
    count together: a 10 on a regular die and a 10 on a Hunger die make a pair."""

    regular: tuple[int, ...]
    hunger: tuple[int, ...] = ()

    @property
    def faces(self) -> tuple[int, ...]:
        return self.regular + self.hunger

    @property
    def successes(self) -> int:
        return count_successes(self.faces)

    @property
    def tens(self) -> int:
        return self.faces.count(CRITICAL_FACE)

    @property
    def pairs(self) -> int:
        return critical_pairs(self.faces)

    @property
    def hunger_tens(self) -> int:
        return self.hunger.count(CRITICAL_FACE)

    @property
    def hunger_ones(self) -> int:
        return self.hunger.count(1)


# --- the result of a roll -----------------------------------------------------------------------


class Result(StrEnum):
    """What a roll comes to (the ``outcome`` word of the machine interface)."""

    CRITICAL = "critical"  #: a win with at least one pair of 10s
    MESSY_CRITICAL = "messy_critical"  #: a critical win with a 10 on a Hunger die
    SUCCESS = "success"  #: a plain win
    FAILURE = "failure"  #: a loss with some successes: may be won at a cost
    BESTIAL_FAILURE = "bestial_failure"  #: a loss with a 1 on a Hunger die
    TOTAL_FAILURE = "total_failure"  #: no success at all


@dataclass(frozen=True)
class Verdict:
    result: Result
    successes: int
    difficulty: int

    @property
    def win(self) -> bool:
        return self.result in (Result.CRITICAL, Result.MESSY_CRITICAL, Result.SUCCESS)

    @property
    def margin(self) -> int:
        """Successes beyond the Difficulty (negative: how many were missing)."""
        return self.successes - self.difficulty

    @property
    def win_at_cost(self) -> bool:
        """A loss that still had successes: the Storyteller may offer to win at a cost."""
        return not self.win and self.successes > 0


def wins(successes: int, difficulty: int) -> bool:
    """A win needs at least the Difficulty in successes — and a roll with none always fails."""
    return successes > 0 and successes >= difficulty


def judge(dice: Dice, difficulty: int) -> Verdict:
    """The result of a roll against a Difficulty.

    * a win with a pair of 10s is a critical; with a 10 on any Hunger die, a messy critical;
    * a loss with a 1 on a Hunger die is a bestial failure (with or without successes);
    * otherwise a roll with no success is a total failure, and one with some is a failure that
      the Storyteller may offer to win at a cost.
    """
    successes = dice.successes
    if wins(successes, difficulty):
        if dice.pairs and dice.hunger_tens:
            result = Result.MESSY_CRITICAL
        elif dice.pairs:
            result = Result.CRITICAL
        else:
            result = Result.SUCCESS
    elif dice.hunger_ones:
        result = Result.BESTIAL_FAILURE
    elif successes == 0:
        result = Result.TOTAL_FAILURE
    else:
        result = Result.FAILURE
    return Verdict(result, successes, difficulty)


# --- contests -----------------------------------------------------------------------------------


def contest(actor: Dice, opponent: Dice) -> Verdict:
    """Both sides roll; the actor wins with at least as many successes as the opponent (ties go
    to the actor). The opponent's successes are the Difficulty the actor's roll is judged by."""
    return judge(actor, opponent.successes)


# --- Willpower re-rolls -------------------------------------------------------------------------

#: one point of Willpower re-rolls up to this many regular dice (never Hunger dice)
REROLL_LIMIT = 3


class Strategy(StrEnum):
    """Which regular dice a Willpower re-roll takes."""

    FAILURES = "failures"  #: the dice that failed, lowest first
    CRITICALS = "crits"  #: dice that are not 10s, failures first, then the lowest successes
    AVOID_MESSY = "messy"  #: the regular 10s, so that only a lone Hunger 10 may remain
    RISKY = "risky"  #: the regular 10s, then failures to fill up to three dice
    CHOSEN = "chosen"  #: the regular dice the player names by their faces


def _lowest_first(regular: Sequence[int], keep: frozenset[int]) -> list[int]:
    """Indexes of the regular dice not in ``keep``, ordered lowest face first, then by position."""
    return sorted((i for i in range(len(regular)) if i not in keep), key=lambda i: (regular[i], i))


def reroll_indexes(regular: Sequence[int], strategy: Strategy) -> tuple[int, ...]:
    """Which regular dice (indexes into ``regular``) the strategy re-rolls, at most three.

    Whether a strategy makes sense for a roll at all (e.g. avoiding a messy critical when the
    roll is not one) is :func:`reroll_problem`'s question; this only picks the dice.
    """
    if strategy is Strategy.CHOSEN:
        raise ValueError("the player names these dice: see chosen_indexes")
    failures = [i for i in _lowest_first(regular, frozenset()) if not is_success(regular[i])]
    tens = [i for i, face in enumerate(regular) if face == CRITICAL_FACE]
    if strategy is Strategy.FAILURES:
        chosen = failures
    elif strategy is Strategy.CRITICALS:
        chosen = _lowest_first(regular, frozenset(tens))
    elif strategy is Strategy.AVOID_MESSY:
        chosen = tens
    else:
        chosen = tens + failures
    return tuple(sorted(chosen[:REROLL_LIMIT]))


def reroll_problem(dice: Dice, difficulty: int, strategy: Strategy) -> str | None:
    """Why the strategy has nothing to do for this roll, or ``None`` when it can go ahead."""
    if not dice.regular:
        return "all your dice are Hunger dice, and Willpower never re-rolls those"
    if strategy is Strategy.FAILURES and not any(not is_success(f) for f in dice.regular):
        return "none of your regular dice failed, so there is nothing to re-roll for `failures`"
    if strategy is Strategy.CRITICALS and all(f == CRITICAL_FACE for f in dice.regular):
        return "every regular die already shows 10, so `crits` has nothing to re-roll"
    if strategy in (Strategy.AVOID_MESSY, Strategy.RISKY):
        if judge(dice, difficulty).result is not Result.MESSY_CRITICAL:
            return f"the roll is not a messy critical, so `{strategy}` has nothing to avoid"
        if dice.hunger_tens >= 2:
            return (
                f"{dice.hunger_tens} Hunger dice show 10 and Willpower never re-rolls those: "
                "the messy critical stands"
            )
        regular_tens = dice.regular.count(CRITICAL_FACE)
        if regular_tens > REROLL_LIMIT:
            return (
                f"{regular_tens} regular dice show 10 but Willpower re-rolls at most "
                f"{REROLL_LIMIT}: the 10s left would still pair with the Hunger 10"
            )
    return None


def chosen_problem(dice: Dice, faces: Sequence[int]) -> str | None:
    """Why the player cannot re-roll the regular dice showing ``faces`` (one die per face named,
    so ``4 4`` is two 4s), or ``None``. Which dice to throw again is the player's choice: any
    one, two or three regular dice, whatever they show."""
    if not dice.regular:
        return "all your dice are Hunger dice, and Willpower never re-rolls those"
    if not 1 <= len(faces) <= REROLL_LIMIT:
        return f"Willpower re-rolls one to {REROLL_LIMIT} dice; you named {len(faces)}"
    shown = " ".join(str(face) for face in dice.regular)
    for face in sorted(set(faces)):
        wanted, there = faces.count(face), dice.regular.count(face)
        if wanted <= there:
            continue
        if there:
            verb = "shows" if there == 1 else "show"
            return f"only {there} of your regular dice {verb} {face} ({shown})"
        hunger = " (a Hunger die does, and Willpower never re-rolls those)"
        note = hunger if face in dice.hunger else ""
        return f"none of your regular dice shows {face} ({shown}){note}"
    return None


def chosen_indexes(regular: Sequence[int], faces: Sequence[int]) -> tuple[int, ...]:
    """The regular dice (indexes) showing ``faces``, the first rolled of each face first; the
    faces must be there (see :func:`chosen_problem`)."""
    taken: list[int] = []
    for face in faces:
        taken.append(next(i for i, f in enumerate(regular) if f == face and i not in taken))
    return tuple(sorted(taken))


def reroll(regular: Sequence[int], indexes: Sequence[int], new: Sequence[int]) -> tuple[int, ...]:
    """The regular dice after the dice at ``indexes`` were re-rolled to the faces ``new``."""
    if len(indexes) != len(new):
        raise ValueError("one new face is needed for each re-rolled die")
    faces = list(regular)
    for index, face in zip(indexes, new, strict=True):
        faces[index] = face
    return tuple(faces)


# --- checks -------------------------------------------------------------------------------------

#: a check is one die; it passes at this face or more
CHECK_PASSES = 6


def check_passes(face: int) -> bool:
    return face >= CHECK_PASSES


@dataclass(frozen=True)
class RouseResult:
    """Rouse checks: each one that fails raises Hunger by one (Hunger stops at 5)."""

    faces: tuple[int, ...]
    hunger_before: int | None
    #: the most Hunger can be (5, or less where the room's ``max_hunger`` says so)
    most: int = MAX_HUNGER

    @property
    def passed(self) -> int:
        return sum(1 for face in self.faces if check_passes(face))

    @property
    def failed(self) -> int:
        return len(self.faces) - self.passed

    @property
    def hunger_after(self) -> int | None:
        if self.hunger_before is None:
            return None
        return min(self.most, self.hunger_before + self.failed)

    @property
    def capped(self) -> bool:
        """Some failed check could not raise Hunger because it had reached 5."""
        if self.hunger_before is None:
            return False
        return self.hunger_before + self.failed > self.most


def rouse(faces: Sequence[int], hunger: int | None = None, most: int = MAX_HUNGER) -> RouseResult:
    return RouseResult(tuple(faces), hunger, most)


#: a turn of a conflict, in order (V5 rolls no initiative): what a combatant does, as shown
TURN_ORDER = {
    "ranged": "ranged attack",
    "close": "close combat",
    "other": "other action",
}
