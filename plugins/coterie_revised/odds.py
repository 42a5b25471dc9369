"""Exact odds of the ``revised`` rules (docs/rules/revised.md, "Odds").

A pool is counted with :func:`coterie.odds.rule_of_one`: the number of face tuples by *successes
rolled minus 1s*, split by whether any success was rolled at all — everything
:func:`coterie_revised.rules.roll_pool` looks at. Willpower (either reading), automatic success,
multiple actions and trying again (already in the request's pool and difficulty) are honoured;
``vs`` adds who prevails, ``ext`` the chance of reaching the target with this roll.
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
from coterie_revised import rules
from coterie_revised.requests import RevisedRequest, Side

if TYPE_CHECKING:
    from coterie_revised.variant import RevisedVariant

NAMES = ("success", "failure", "botch")


def result(net: int, any_rolled: bool, willpower: bool, cancellable: bool) -> Key:
    """``(outcome, successes)`` of a roll whose successes rolled minus 1s is ``net``, as
    :func:`~coterie_revised.rules.roll_pool` and the outcome read it."""
    if willpower and cancellable:
        value = max(0, net + 1)
    elif willpower:
        value = max(0, net) + 1
    else:
        value = max(0, net)
    if not willpower and not any_rolled and net < 0:
        return ("botch", 0)
    return ("success", value) if value > 0 else ("failure", 0)


@cached
def pool_odds(pool: int, difficulty: int, willpower: bool, cancellable: bool) -> Distribution:
    """One side's roll: ``pool`` dice at ``difficulty``, maybe with Willpower."""
    rolled, none = rule_of_one(pool, difficulty)
    counts: dict[Key, int] = {}
    for part, any_rolled in ((rolled, True), (none, False)):
        for net, ways in part.items():
            key = result(net, any_rolled, willpower, cancellable)
            counts[key] = counts.get(key, 0) + ways
    return Distribution("revised", describe(pool, difficulty, willpower), NAMES, counts, 10**pool)


def describe(pool: int, difficulty: int, willpower: bool) -> str:
    text = f"{plural(pool, 'dice')}, difficulty {difficulty}"
    return text + (", Willpower" if willpower else "")


def _side(side: Side, cancellable: bool) -> Distribution:
    return pool_odds(side.pool, side.difficulty, side.willpower, cancellable)


def odds(variant: RevisedVariant, request: RevisedRequest) -> Distribution:
    """The exact distribution of the actor's result (the ``outcome`` and ``successes`` of
    ``coterie roll --json``), with the verdict's chances for ``vs`` and ``ext``."""
    actor = request.actor
    if request.automatic:
        roll = f"automatic success ({plural(actor.pool, 'dice')}, difficulty {actor.difficulty})"
        return certain(variant.name, roll, NAMES, ("success", rules.AUTOMATIC_SUCCESSES))
    own = _side(actor, request.willpower_cancellable)
    roll = own.roll
    if request.actions > 1:
        roll += f" (action {request.action} of {request.actions})"
    if request.retry:
        roll += f" (+{request.retry} for trying again)"
    events: tuple[tuple[str, Fraction], ...] = ()
    target = request.target
    if request.versus is not None:
        other = _side(request.versus, request.willpower_cancellable)
        roll += f" vs {other.roll}"
        if target is None:
            events = joint_events(own, other, resisted, RESISTED)
        else:
            roll += f", extended to {target} ({actor.progress} vs {request.versus.progress})"
            events = joint_events(own, other, lambda a, b: contest(request, a, b), CONTEST)
    elif target is not None:
        roll += f", extended: {actor.progress}/{target}"
        reach = sum(
            (p for (_, value), p in own.table.items() if actor.progress + value >= target),
            Fraction(0),
        )
        events = (("reaches the target with this roll", reach),)
    return replace(own, variant=variant.name, roll=roll, events=events)


RESISTED = {"actor": "you prevail", "tie": "a standoff", "opponent": "the opposition prevails"}
CONTEST = {
    "actor": "you reach the goal",
    "none": "nobody reaches it yet",
    "opponent": "the opposition reaches it",
}


def resisted(actor: Key, opponent: Key) -> str:
    """Who prevails, as :class:`coterie.d10.Resisted` reads the two results (a botched side
    brings no successes)."""
    winner = d10.Resisted(actor[1], opponent[1]).winner
    return winner or "tie"


def contest(request: RevisedRequest, actor: Key, opponent: Key) -> str:
    """Who reaches the goal of an extended and resisted action with this turn."""
    assert request.target is not None and request.versus is not None
    state = d10.ExtendedResisted(
        request.target, actor=request.actor.progress, opponent=request.versus.progress
    )
    after = d10.extended_resisted_step(
        state,
        actor[1],
        opponent[1],
        actor_botched=actor[0] == "botch",
        opponent_botched=opponent[0] == "botch",
        botch_wipes=request.botch_wipes,
    )
    return after.winner or "none"
