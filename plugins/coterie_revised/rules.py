"""Vampire: the Masquerade, Revised — the core dice rules (shared/seeds/000_5d7e56d4e6a1c4f8.txt).

Read top to bottom, this module follows the rule document: dice pools, difficulty, successes and
the rule of one, botches, degrees of success, automatic success, Willpower, multiple actions,
trying again, extended, resisted and extended-and-resisted actions, teamwork, and the optional
free first botch. Every function is pure: faces or counts in, result out.
"""

from __future__ import annotations

from collections.abc import Sequence

from coterie.dice import d10
from coterie.records import dataclass
from coterie.render.elements import Role

# --- dice pools ---------------------------------------------------------------------------------

#: a dice pool adds at most two Traits (an Attribute and an Ability)
MAX_TRAITS_IN_POOL = 2
#: Traits rated up to 10; a pool built on one of them takes no other Trait
TEN_POINT_TRAITS = ("willpower", "humanity")

# --- difficulty ---------------------------------------------------------------------------------

MIN_DIFFICULTY = 2
MAX_DIFFICULTY = 10
DEFAULT_DIFFICULTY = 6

#: the difficulty chart; 2 and 10 are outside the chart and labelled from the text around it
DIFFICULTY_LABELS: dict[int, str] = {
    2: "Trivial",
    3: "Easy",
    4: "Routine",
    5: "Straightforward",
    6: "Standard",
    7: "Challenging",
    8: "Difficult",
    9: "Extremely difficult",
    10: "Almost impossible",
}

# --- degrees of success -------------------------------------------------------------------------

DEGREES = ("Marginal", "Moderate", "Complete", "Exceptional", "Phenomenal")


def degree(successes: int) -> str | None:
    """1 Marginal, 2 Moderate, 3 Complete, 4 Exceptional, 5 or more Phenomenal."""
    return d10.degree(successes, DEGREES)


# --- one roll -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class PoolRoll:
    """One dice pool rolled against a difficulty, with the rule of one applied."""

    faces: tuple[int, ...]
    difficulty: int
    rolled: int  #: dice at or above the difficulty (10s always)
    ones: int
    willpower: bool
    net: int  #: successes left after 1s cancel, plus Willpower; never below 0
    botch: bool
    roles: tuple[Role, ...]

    @property
    def outcome(self) -> str:
        if self.botch:
            return "botch"
        return "success" if self.net > 0 else "failure"


_BOTCH = Role.BOTCH  # (a global: an enum's members are slow to look up on the class)


def roll_pool(
    faces: Sequence[int],
    difficulty: int,
    *,
    willpower: bool = False,
    willpower_cancellable: bool = False,
) -> PoolRoll:
    """Count a roll.

    * each die at or above the difficulty is a success, and a 10 always is;
    * each 1 cancels one success;
    * a botch is a roll with no success at all and at least one 1 — if any success was rolled,
      even one cancelled by 1s, the roll is only a failure;
    * Willpower adds one automatic success. Our reading: 1s do not cancel it (unless the room's
      ``willpower_cancellable`` house rule says so) and a roll with it cannot botch.
    """
    rolled, ones, roles = d10.pool_counts(faces, difficulty)
    if willpower and willpower_cancellable:
        net = max(0, rolled + 1 - ones)
    elif willpower:
        net = max(0, rolled - ones) + 1
    else:
        net = max(0, rolled - ones)
    botch = not willpower and rolled == 0 and ones > 0
    if botch:
        roles = [_BOTCH if face == 1 else role for face, role in zip(faces, roles, strict=True)]
    return PoolRoll(
        faces=tuple(faces),
        difficulty=difficulty,
        rolled=rolled,
        ones=ones,
        willpower=willpower,
        net=net,
        botch=botch,
        roles=tuple(roles),
    )


# --- automatic success --------------------------------------------------------------------------

#: an automatic success counts as one success: a marginal one
AUTOMATIC_SUCCESSES = 1


def automatic_success_allowed(pool: int, difficulty: int) -> bool:
    """No roll is needed when the pool is at least the difficulty (the player may still roll)."""
    return d10.automatic_success_allowed(pool, difficulty)


# --- multiple actions, trying again -------------------------------------------------------------

multiple_action_penalty = d10.multiple_action_penalty
multiple_action_pools = d10.multiple_action_pools
retry_difficulty = d10.retry_difficulty

# --- extended, resisted, extended and resisted, teamwork ----------------------------------------

Extended = d10.Extended
Resisted = d10.Resisted
ExtendedResisted = d10.ExtendedResisted
Teamwork = d10.Teamwork


def extended_step(state: d10.Extended, roll: PoolRoll, *, botch_wipes: bool = True) -> d10.Extended:
    """Add a roll to an extended action; by default a botch throws away all progress."""
    return d10.extended_step(state, roll.net, roll.botch, botch_wipes=botch_wipes)


def resisted(actor: PoolRoll, opponent: PoolRoll) -> d10.Resisted:
    """The opponent's successes cancel the actor's like 1s do; the side with more wins."""
    return d10.Resisted(actor.net, opponent.net)


def extended_resisted_step(
    state: d10.ExtendedResisted, actor: PoolRoll, opponent: PoolRoll, *, botch_wipes: bool = True
) -> d10.ExtendedResisted:
    """One turn of an extended and resisted action: the margin goes to the winner's tally."""
    return d10.extended_resisted_step(
        state,
        actor.net,
        opponent.net,
        actor_botched=actor.botch,
        opponent_botched=opponent.botch,
        botch_wipes=botch_wipes,
    )


def teamwork(rolls: Sequence[PoolRoll], free: Sequence[bool] | None = None) -> d10.Teamwork:
    """Rolled separately, successes added; one member's botch can spoil the whole attempt
    (``free``: for each member, whether their botch was their free first one, which counts as
    none)."""
    spared = free if free is not None else [False] * len(rolls)
    return d10.Teamwork(
        tuple(r.net for r in rolls),
        tuple(r.botch and not kept for r, kept in zip(rolls, spared, strict=True)),
    )


# --- the optional free first botch --------------------------------------------------------------

first_botch_free = d10.first_botch_free
