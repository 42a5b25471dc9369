"""A home-brew crossover World of Darkness chronicle: its rules
(shared/seeds/004_2bcbd9c2ecee7c36.txt).

Read top to bottom, this module follows the document: kinds of action, movement, ratings, dice
pools, difficulties, degrees of success, multiple actions, extended actions, resisted and
extended-resisted actions, botches (the count of one roll), automatic success, Willpower and
teamwork. Every function is pure: numbers or faces in, result out. Where the document leaves room
for more than one reading, the reading chosen is explained in docs/rules/crossover.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from enum import StrEnum

from coterie.dice import d10
from coterie.records import dataclass
from coterie.render.elements import Role

# --- kinds of action ----------------------------------------------------------------------------

#: what a character can do without a roll (unless something complicates it), in our words
AUTOMATIC_ACTIONS = (
    "getting up when nothing hinders you",
    "starting a vehicle",
    "moving up to half your running distance (you may still act without penalty)",
    "a few seconds of ordinary talk, a note, a text message",
    "picking up or drawing something close at hand",
)
#: what normally takes a roll
ROLLED_ACTIONS = (
    "an attack",
    "an active defence such as a dodge (soak is something else)",
    "working magick (an Effect)",
    "any other feat where the drama lies in the outcome",
)
#: instinctive, instant: no roll and no action spent
REFLEXIVE_ACTIONS = ("soak", "spending Rage", "spending Blood Pool points")

# --- movement -----------------------------------------------------------------------------------


class Mode(StrEnum):
    """A way of moving, named as a player types it."""

    WALK = "walk"
    JOG = "jog"
    RUN = "run"
    SWIM = "swim"
    FLY = "fly"
    CLIMB = "climb"


#: what each mode is called in a reply
MODE_NAMES = {
    Mode.WALK: "Walking",
    Mode.JOG: "Jogging",
    Mode.RUN: "Running",
    Mode.SWIM: "Swimming",
    Mode.FLY: "Flying",
    Mode.CLIMB: "Climbing",
}

WALK_YARDS = 7
JOG_BASE_YARDS = 12
RUN_BASE_YARDS = 20
RUN_YARDS_PER_DEXTERITY = 3
SWIM_BASE_YARDS = 8
SKILLED_SWIM_BASE_YARDS = 12
FLY_YARDS = (10, 20)


class Conditions(StrEnum):
    """How good the footing is for a climb."""

    POOR = "poor"
    NORMAL = "normal"
    IDEAL = "ideal"


#: feet climbed per success: (least, most)
CLIMB_FEET_PER_SUCCESS: dict[Conditions, tuple[int, int]] = {
    Conditions.POOR: (5, 5),
    Conditions.NORMAL: (10, 10),
    Conditions.IDEAL: (15, 20),
}

#: the modes that are "full speed" and so limited by Stamina
FULL_SPEED_MODES = frozenset({Mode.RUN, Mode.SWIM, Mode.CLIMB})
#: turns of full speed per dot of Stamina
TURNS_PER_STAMINA = 10
#: the roll to move at full rate while Injured: the greater of Stamina and Willpower, at 6
PUSH_DIFFICULTY = 6

#: the modes whose distance depends on Dexterity
DEXTERITY_MODES = frozenset({Mode.JOG, Mode.RUN, Mode.SWIM})


def running_yards(dexterity: int) -> int:
    """A run covers 20 yards plus three per dot of Dexterity."""
    return RUN_BASE_YARDS + RUN_YARDS_PER_DEXTERITY * dexterity


def yards_per_turn(mode: Mode, dexterity: int | None, *, skilled: bool = False) -> tuple[int, int]:
    """The (least, most) yards a mode covers in a turn; one number for all but flying.

    ``dexterity`` is needed for jogging, running and swimming (``ValueError`` without it);
    ``skilled`` is the trained swimmer's rate. Climbing is measured per success, see
    :func:`climb_feet`.
    """
    if mode is Mode.CLIMB:
        raise ValueError("climbing is measured in feet per success")
    if mode in DEXTERITY_MODES and dexterity is None:
        raise ValueError(f"{mode} needs Dexterity")
    dex = dexterity or 0
    if mode is Mode.WALK:
        yards = WALK_YARDS
    elif mode is Mode.JOG:
        yards = JOG_BASE_YARDS + dex
    elif mode is Mode.RUN:
        yards = running_yards(dex)
    elif mode is Mode.SWIM:
        yards = (SKILLED_SWIM_BASE_YARDS if skilled else SWIM_BASE_YARDS) + dex
    else:
        return FLY_YARDS
    return yards, yards


def climb_feet(successes: int, conditions: Conditions = Conditions.NORMAL) -> tuple[int, int]:
    """Feet climbed with ``successes``: (least, most), a range only in ideal conditions."""
    low, high = CLIMB_FEET_PER_SUCCESS[conditions]
    return successes * low, successes * high


def injured_rate(rate: int) -> int:
    """At Injured a character moves at most half the normal rate (whole yards or feet, rounded
    down: "at most" half)."""
    return rate // 2


def free_yards(dexterity: int) -> int:
    """How far a character may move and still act without penalty: half the running distance,
    in whole yards (rounded down, so any started yard beyond it counts)."""
    return running_yards(dexterity) // 2


#: half the running distance is never less than this (Dexterity 0)
LEAST_FREE_YARDS = free_yards(0)


def acting_penalty(yards: int, dexterity: int | None) -> int:
    """Dice lost by an action taken in a turn in which the character moved ``yards``: one per
    yard beyond half the running distance. Without Dexterity only moves that no Dexterity could
    penalise (at most :data:`LEAST_FREE_YARDS`) can be judged (``ValueError`` otherwise)."""
    if dexterity is None:
        if yards <= LEAST_FREE_YARDS:
            return 0
        raise ValueError("the penalty depends on Dexterity")
    return max(0, yards - free_yards(dexterity))


def full_speed_turns(stamina: int) -> int:
    """How many turns a character can keep up full speed: ten per dot of Stamina."""
    return TURNS_PER_STAMINA * stamina


def push_pool(stamina: int, willpower: int, health_penalty: int = 0) -> int:
    """Dice for the roll that lets an Injured character move at full rate this turn: the greater
    of Stamina and Willpower, less the dice penalty of the character's health level."""
    return max(stamina, willpower) - health_penalty


# --- ratings ------------------------------------------------------------------------------------

RATINGS: dict[int, str] = {
    0: "Abysmal",
    1: "Poor",
    2: "Average",
    3: "Good",
    4: "Exceptional",
    5: "Pinnacle of human achievement",
}
#: ratings above 5 exist (werewolf forms, for one); they are beyond the human scale
BEYOND_HUMAN = "Beyond the human scale"


def rating(value: int) -> str:
    """The word for a Trait rating: 0 Abysmal ... 5 Pinnacle of human achievement, and above."""
    if value < 0:
        raise ValueError("a rating is never negative")
    return RATINGS.get(value, BEYOND_HUMAN)


# --- dice pools ---------------------------------------------------------------------------------

#: Traits rated up to 10; a pool that uses one of them is that Trait alone
TEN_POINT_TRAITS = ("rage", "willpower", "gnosis")
#: a pool adds the Traits the action needs: we accept an Attribute and an Ability at most
MAX_TRAITS_IN_POOL = 2

# --- difficulties -------------------------------------------------------------------------------

MIN_DIFFICULTY = 2
MAX_DIFFICULTY = 10
#: most difficulties fall in this range
USUAL_DIFFICULTIES = (3, 9)
#: the difficulty when none is given: the chart's "Standard"
DEFAULT_DIFFICULTY = 6

#: the difficulty chart; 2 is allowed but below the chart, so it is labelled from the text
DIFFICULTY_LABELS: dict[int, str] = {
    2: "Below trivial",
    3: "Trivial",
    4: "Easy",
    5: "Straightforward",
    6: "Standard",
    7: "Challenging",
    8: "Difficult",
    9: "Extremely difficult",
    10: "Essentially impossible",
}

# --- degrees of success -------------------------------------------------------------------------

DEGREES = ("Marginal", "Moderate", "Complete", "Exceptional", "Phenomenal")
#: from this many successes on, the result is a momentous one
MOMENTOUS_SUCCESSES = 5


def degree(successes: int) -> str | None:
    """1 Marginal, 2 Moderate, 3 Complete, 4 Exceptional, 5 or more Phenomenal."""
    return d10.degree(successes, DEGREES)


def momentous(successes: int) -> bool:
    """Five successes or more make a momentous occasion."""
    return successes >= MOMENTOUS_SUCCESSES


# --- multiple actions ---------------------------------------------------------------------------


class AllocationError(ValueError):
    """A split of the smallest pool that the rules do not allow; the message says why."""


def smallest_pool(pools: Sequence[int]) -> int:
    """The dice shared by a turn's actions: the smallest of their pools."""
    if not pools:
        raise ValueError("no actions declared")
    return min(pools)


def even_split(dice: int, actions: int) -> list[int]:
    """``dice`` shared as evenly as possible, the earlier actions getting any spare die."""
    if actions < 1:
        raise ValueError("no actions declared")
    share, spare = divmod(dice, actions)
    return [share + (1 if index < spare else 0) for index in range(actions)]


def split_pool(pools: Sequence[int], allocation: Sequence[int] | None = None) -> list[int]:
    """The dice each declared action rolls.

    The smallest pool among the actions is shared among all of them as the player chooses
    (``allocation``; evenly by default). The shares must use exactly that many dice, and every
    action needs at least one die (:class:`AllocationError` otherwise).
    """
    if len(pools) < 2:
        raise AllocationError("multiple actions means at least two actions")
    dice = smallest_pool(pools)
    if allocation is None:
        if dice < len(pools):
            raise AllocationError(
                f"the smallest pool has {dice} dice: too few to give each of the "
                f"{len(pools)} actions one die"
            )
        return even_split(dice, len(pools))
    if len(allocation) != len(pools):
        raise AllocationError(
            f"`split` gives {len(allocation)} shares for {len(pools)} actions: "
            "give one number per action"
        )
    given = sum(allocation)
    if given != dice:
        shares = " + ".join(str(n) for n in allocation)
        raise AllocationError(
            f"the split {shares} = {given} dice, but the smallest pool has {dice}: "
            f"the shares must add up to exactly {dice}"
        )
    for action, share in enumerate(allocation, start=1):
        if share < 1:
            raise AllocationError(
                f"action {action} gets no dice; give every declared action at least one die "
                "(or declare fewer actions)"
            )
    return list(allocation)


# --- one roll: successes, the 1s, botches -------------------------------------------------------


@dataclass(frozen=True)
class PoolRoll:
    """A dice pool rolled against a difficulty, with the 1s and Willpower applied."""

    faces: tuple[int, ...]
    difficulty: int
    rolled: int  #: dice at or above the difficulty (a 10 always)
    ones: int
    willpower: bool
    net: int  #: rolled successes less one per 1 (never below 0), plus Willpower's
    botch: bool
    roles: tuple[Role, ...]

    @property
    def outcome(self) -> str:
        if self.botch:
            return "botch"
        return "success" if self.net > 0 else "failure"


#: Willpower adds this many successes (and 1s cannot take it away)
WILLPOWER_SUCCESSES = 1


_BOTCH = Role.BOTCH  # (a global: an enum's members are slow to look up on the class)


def roll_pool(faces: Sequence[int], difficulty: int, *, willpower: bool = False) -> PoolRoll:
    """Count one roll.

    * a die showing the difficulty or more succeeds, and a 10 always does;
    * each 1 takes away one success;
    * the roll botches when a 1 shows and no success was rolled — successes the 1s took away
      still count as rolled, so they prevent the botch;
    * a spent Willpower point guarantees one success: it is added after the 1s have cancelled,
      and a roll with it cannot botch.
    """
    rolled, ones, roles = d10.pool_counts(faces, difficulty)
    net = max(0, rolled - ones) + (WILLPOWER_SUCCESSES if willpower else 0)
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


# --- extended actions ---------------------------------------------------------------------------

Extended = d10.Extended


def extended_step(state: d10.Extended, roll: PoolRoll) -> d10.Extended:
    """Add one roll to an extended action; a botch throws away all the progress so far."""
    return d10.extended_step(state, roll.net, roll.botch, botch_wipes=True)


# --- resisted actions ---------------------------------------------------------------------------


def resisted(actor: PoolRoll, opponent: PoolRoll) -> d10.Resisted:
    """Both sides roll; the one with more successes wins (equal: neither prevails)."""
    return d10.Resisted(actor.net, opponent.net)


@dataclass(frozen=True)
class Race:
    """An extended resisted action: each side piles up its own successes toward ``target``;
    whoever gets there first wins."""

    target: int
    actor: int = 0
    opponent: int = 0
    turns: int = 0

    @property
    def winner(self) -> str | None:
        """``"actor"`` or ``"opponent"`` once one side reached the target first; ``"tie"`` when
        both reached it in the same turn with equal tallies; ``None`` while nobody has."""
        actor_done = self.actor >= self.target
        opponent_done = self.opponent >= self.target
        if actor_done and opponent_done:
            if self.actor == self.opponent:
                return "tie"
            return "actor" if self.actor > self.opponent else "opponent"
        if actor_done:
            return "actor"
        if opponent_done:
            return "opponent"
        return None


def race_step(state: Race, actor: PoolRoll, opponent: PoolRoll) -> Race:
    """One turn of an extended resisted action. Each side adds its own successes to its own
    tally; a side that botches loses everything it had gathered (it is an extended action).
    When both reach the target in the same turn, the higher tally got further and wins."""
    if state.winner is not None:
        raise ValueError("the contest is already decided")
    mine = extended_step(d10.Extended(state.target, state.actor), actor)
    theirs = extended_step(d10.Extended(state.target, state.opponent), opponent)
    return replace(state, actor=mine.progress, opponent=theirs.progress, turns=state.turns + 1)


# --- automatic success --------------------------------------------------------------------------

#: an automatic success counts as a single success: a marginal one
AUTOMATIC_SUCCESSES = 1


def automatic_success_allowed(pool: int, difficulty: int) -> bool:
    """A pool at least as large as the difficulty may take an automatic success instead of
    rolling (outside combat and stress; the player may always roll instead)."""
    return d10.automatic_success_allowed(pool, difficulty)


# --- Willpower ------------------------------------------------------------------------------------

#: Willpower may be spent this many times per turn (on one of the turn's rolls)
WILLPOWER_PER_TURN = 1

# --- teamwork -------------------------------------------------------------------------------------


def teamwork(rolls: Sequence[PoolRoll]) -> d10.Teamwork:
    """Each member rolls separately and the successes are added; a single member's botch is
    flagged for the whole team."""
    return d10.Teamwork(tuple(r.net for r in rolls), tuple(r.botch for r in rolls))
