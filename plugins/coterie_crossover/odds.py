"""Exact odds of the ``crossover`` rules (docs/rules/crossover.md, "Odds").

A pool is counted with :func:`coterie.odds.rule_of_one` — face tuples by *successes rolled minus
1s*, split by whether any success was rolled — which is all that
:func:`coterie_crossover.rules.roll_pool` looks at. Willpower adds its success after the 1s and
prevents the botch; an automatic success is certain. ``vs`` adds who prevails, ``ext`` the chance
of reaching the target with this roll, and ``ext`` with ``vs`` (the race) who gets there first with
this turn.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from typing import TYPE_CHECKING

from coterie.dice import d10
from coterie.dice.odds import (
    Distribution,
    Key,
    cached,
    certain,
    joint_events,
    rule_of_one,
)
from coterie.rulekit.pools import plural
from coterie_crossover import rules
from coterie_crossover.requests import CrossoverRequest, Side

if TYPE_CHECKING:
    from coterie_crossover.variant import CrossoverVariant

NAMES = ("success", "failure", "botch")


def result(net: int, any_rolled: bool, willpower: bool) -> Key:
    """``(outcome, successes)`` of a roll whose successes rolled minus 1s is ``net``."""
    value = max(0, net) + (rules.WILLPOWER_SUCCESSES if willpower else 0)
    if not willpower and not any_rolled and net < 0:
        return ("botch", 0)
    return ("success", value) if value > 0 else ("failure", 0)


@cached
def pool_odds(pool: int, difficulty: int, willpower: bool) -> Distribution:
    rolled, none = rule_of_one(pool, difficulty)
    counts: dict[Key, int] = {}
    for part, any_rolled in ((rolled, True), (none, False)):
        for net, ways in part.items():
            key = result(net, any_rolled, willpower)
            counts[key] = counts.get(key, 0) + ways
    roll = f"{plural(pool, 'dice')}, difficulty {difficulty}" + (", Willpower" if willpower else "")
    return Distribution("crossover", roll, NAMES, counts, 10**pool)


def _side(side: Side) -> Distribution:
    return pool_odds(side.pool, side.difficulty, side.willpower)


RESISTED = {"actor": "you prevail", "tie": "a tie", "opponent": "the other side prevails"}
RACE = {
    "actor": "you reach the goal first",
    "tie": "both reach it, dead level",
    "none": "nobody reaches it yet",
    "opponent": "the other side reaches it first",
}


def resisted(actor: Key, opponent: Key) -> str:
    """Who prevails, as :func:`rules.resisted` reads the two rolls (a botched or failed roll
    brings no successes)."""
    return d10.Resisted(actor[1], opponent[1]).winner or "tie"


def race(target: int, progress: tuple[int, int], actor: Key, opponent: Key) -> str:
    """Who reaches the goal of an extended resisted action with this turn (:func:`rules.race_step`:
    each side adds its own successes; a botch wipes that side's tally)."""
    mine = rules.Extended(target, progress[0])
    theirs = rules.Extended(target, progress[1])
    mine = d10.extended_step(mine, actor[1], actor[0] == "botch", botch_wipes=True)
    theirs = d10.extended_step(theirs, opponent[1], opponent[0] == "botch", botch_wipes=True)
    return rules.Race(target, mine.progress, theirs.progress).winner or "none"


def odds(variant: CrossoverVariant, request: CrossoverRequest) -> Distribution:
    """The exact distribution of the actor's roll, with the verdicts of ``vs`` and ``ext``."""
    actor = request.actor
    if request.automatic:
        roll = f"automatic success ({plural(actor.pool, 'dice')}, difficulty {actor.difficulty})"
        return certain(variant.name, roll, NAMES, ("success", rules.AUTOMATIC_SUCCESSES))
    own = _side(actor)
    roll = own.roll
    events: tuple[tuple[str, Fraction], ...] = ()
    target = request.target
    versus = request.versus
    if versus is not None:
        other = _side(versus)
        roll += f" vs {other.roll}"
        if target is None:
            events = joint_events(own, other, resisted, RESISTED)
        else:
            roll += f", extended to {target} ({actor.progress} vs {versus.progress})"
            progress = (actor.progress, versus.progress)
            events = joint_events(own, other, lambda a, b: race(target, progress, a, b), RACE)
    elif target is not None:
        roll += f", extended: {actor.progress}/{target}"
        reach = sum(
            (p for (_, value), p in own.table.items() if actor.progress + value >= target),
            Fraction(0),
        )
        events = (("reaches the target with this roll", reach),)
    return replace(own, variant=variant.name, roll=roll, events=events)
