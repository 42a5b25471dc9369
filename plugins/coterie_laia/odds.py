"""Exact odds of the ``laia`` rules (docs/rules/laia.md, "Odds").

The sum of a throw is *successes minus 1s*, counted with :func:`coterie.odds.rule_of_one`, except
for the specialty: a 10 that no 1 cancels counts twice, and the 1s cancel successes from the left.
Which successes survive depends on the order of the dice, yet the count does not need it:

* with ``o`` 1s and ``s > o`` successes, the 1s cancel the first ``o`` successes in roll order and
  the last ``j = s − o`` survive, wherever the 1s lie;
* whether a success is a 10 is independent of where it lies and of every other die: each of the
  ``11 − d`` success faces of difficulty ``d`` is equally likely, one of them the 10.

So among the ``W(j)`` face tuples whose successes minus 1s is ``j > 0``, each survivor is a 10 for
``1`` of its ``11 − d`` faces, independently: the sum is ``j + i`` in
``W(j) / (11 − d) ** j * C(j, i) * (10 − d) ** (j − i)`` of them (``i`` surviving 10s). As a
polynomial: ``sum_j c_j * (x * (10 − d) + x ** 2) ** j`` with ``c_j = W(j) / (11 − d) ** j`` —
an exact integer, since each of those tuples has at least ``j`` successes — evaluated by Horner's
rule on packed polynomials. With no success left standing (a sum of zero or below) the specialty
changes nothing.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from typing import TYPE_CHECKING

from coterie.dice import d10
from coterie.dice.odds import (
    Distribution,
    Key,
    Poly,
    bits_for,
    cached,
    joint_events,
    rule_of_one,
)
from coterie.rulekit.pools import plural
from coterie_laia import rules
from coterie_laia.requests import LaiaRequest, Side

if TYPE_CHECKING:
    from coterie_laia.variant import LaiaVariant

NAMES = ("success", "failure", "botch")


def outcome(total: int) -> Key:
    """``(outcome, successes)`` for a throw's signed sum: above zero a success, zero a failure,
    below zero a botch; the ``successes`` value is the sum itself."""
    if total > 0:
        return ("success", total)
    return ("botch", total) if total < 0 else ("failure", 0)


def sums(pool: int, difficulty: int, specialty: bool) -> dict[int, int]:
    """Face tuples (out of ``10 ** pool``) by the signed sum of the throw."""
    rolled, none = rule_of_one(pool, difficulty)
    counts = dict(none)
    for net, ways in rolled.items():
        if net <= 0 or not specialty:
            counts[net] = counts.get(net, 0) + ways
    if specialty:
        success_faces = 11 - difficulty
        bits = bits_for(10**pool)
        survivor = Poly.of({1: 10 - difficulty, rules.SPECIALTY_TEN: 1}, bits)
        top = max((net for net in rolled if net > 0), default=0)
        total = Poly.of({}, bits)
        for j in range(top, 0, -1):  # Horner: ((c_top * q + c_{top-1}) * q + ...) * q
            ways = rolled.get(j, 0)
            c_j, rest = divmod(ways, success_faces**j)
            assert not rest, "each tuple counted has at least j successes"
            total = (total + Poly.of({0: c_j}, bits)) * survivor
        for value, ways in total.coefficients().items():
            counts[value] = counts.get(value, 0) + ways
    return counts


@cached
def throw_odds(pool: int, difficulty: int, specialty: bool) -> Distribution:
    counts: dict[Key, int] = {}
    for total, ways in sums(pool, difficulty, specialty).items():
        key = outcome(total)
        counts[key] = counts.get(key, 0) + ways
    roll = f"{plural(pool, 'dice')}, difficulty {difficulty}" + (", specialty" if specialty else "")
    return Distribution("laia", roll, NAMES, counts, 10**pool)


def _side(side: Side) -> Distribution:
    return throw_odds(side.pool, side.difficulty, side.specialty)


RESISTED = {"actor": "you prevail", "tie": "a standoff", "opponent": "the opposition prevails"}
CONTEST = {
    "actor": "you reach the goal",
    "none": "nobody reaches it yet",
    "opponent": "the opposition reaches it",
}


def standing(key: Key) -> int:
    """What a throw brings to a comparison: its sum, never below zero (:func:`rules.standing`)."""
    return max(0, key[1])


def resisted(actor: Key, opponent: Key) -> str:
    return d10.Resisted(standing(actor), standing(opponent)).winner or "tie"


def odds(variant: LaiaVariant, request: LaiaRequest) -> Distribution:
    """The exact distribution of the actor's throw (``outcome`` and the signed sum as
    ``successes``), with who prevails for ``vs`` and the target's chance for ``ext``."""
    actor = request.actor
    own = _side(actor)
    roll = own.roll + (f" (+{request.retry} for trying again)" if request.retry else "")
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

            def contest(a: Key, b: Key) -> str:
                assert target is not None and versus is not None
                state = d10.ExtendedResisted(target, actor=actor.progress, opponent=versus.progress)
                after = d10.extended_resisted_step(
                    state,
                    standing(a),
                    standing(b),
                    actor_botched=a[1] < 0,
                    opponent_botched=b[1] < 0,
                    botch_wipes=request.botch_wipes,
                )
                return after.winner or "none"

            events = joint_events(own, other, contest, CONTEST)
    elif target is not None:
        roll += f", extended: {actor.progress}/{target}"
        reach = sum(
            (p for (_, value), p in own.table.items() if actor.progress + value >= target),
            Fraction(0),
        )
        events = (("reaches the target with this throw", reach),)
    note = ""
    if actor.difficulty >= rules.CAUTION_DIFFICULTY:
        note = "At difficulty 10 a bigger pool botches more often, not less."
    return replace(own, variant=variant.name, roll=roll, events=events, note=note)
