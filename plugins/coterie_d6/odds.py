"""Exact odds of the ``d6`` rules (docs/rules/d6.md, "Odds").

* A roll: each die at or above the difficulty (above 6 it counts as 6) is a success; the successes
  are binomial, counted as ``(faces that fail + faces that succeed · x) ** pool``; the roll succeeds
  with at least ``need`` of them.
* A contest: one round is the attacker's successes less the defender's (the two pools' count
  polynomials multiplied, one of them mirrored); a tie is rolled again, up to the round limit. With
  ``N(k)`` round outcomes of net ``k`` out of ``M`` and ``t = N(0)`` ties, ending with net ``k`` in
  round ``i`` happens in ``t ** (i − 1) · N(k) · M ** (R − i)`` of the ``M ** R`` equally likely
  ways to play ``R`` rounds; summed over ``i``, ``N(k) · (M ** R − t ** R) / (M − t)``.
* A seesaw contest: the running balance moves by each turn's net; a dynamic programme over the
  balance (between the two goals) turn by turn, up to the turn limit, in exact integers.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from coterie.dice.odds import Distribution, Key, cached, convolve, power
from coterie.errors import UsageError
from coterie.rulekit.pools import plural
from coterie_d6 import rules
from coterie_d6.requests import ContestRequest, D6Request, RollRequest, difficulty_text

if TYPE_CHECKING:
    from coterie_d6.variant import D6Variant

NAMES = ("success", "failure")


def successes(pool: int, difficulty: int) -> dict[int, int]:
    """Face tuples (out of ``6 ** pool``) by successes."""
    hits = rules.SIDES + 1 - difficulty
    return power({0: rules.SIDES - hits, 1: hits}, pool)


@cached
def roll_odds(pool: int, difficulty: int, required: int) -> Distribution:
    counts: dict[Key, int] = {}
    for hits, ways in successes(pool, difficulty).items():
        counts[("success" if hits >= required else "failure", hits)] = ways
    return Distribution("d6", "", NAMES, counts, rules.SIDES**pool)


def round_nets(attacker: int, defender: int, difficulty: int) -> dict[int, int]:
    """One round of a contest: face tuples (out of ``6 ** (attacker + defender)``) by the attacker's
    successes less the defender's."""
    mine = successes(attacker, difficulty)
    theirs = {-hits: ways for hits, ways in successes(defender, difficulty).items()}
    return convolve(mine, theirs)


@cached
def contest_odds(attacker: int, defender: int, difficulty: int, rounds: int) -> Distribution:
    nets = round_nets(attacker, defender, difficulty)
    every = rules.SIDES ** (attacker + defender)
    ties = nets.get(0, 0)
    # N(k) * sum_i ties ** (i - 1) * every ** (rounds - i): the ways to end with net k
    ending = (every**rounds - ties**rounds) // (every - ties)
    counts: dict[Key, int] = {("failure", 0): ties**rounds}  # tied in every round allowed
    for net, ways in nets.items():
        if net > 0:
            counts[("success", net)] = ways * ending
        elif net < 0:
            counts[("failure", 0)] += ways * ending
    return Distribution("d6", "", NAMES, counts, every**rounds)


@cached
def seesaw_odds(
    attacker: int, defender: int, difficulty: int, target: int, turns: int
) -> Distribution:
    nets = sorted(round_nets(attacker, defender, difficulty).items())
    every = rules.SIDES ** (attacker + defender)
    playing = {0: 1}  # balance (still between the goals) -> ways, over every ** played
    # Where a turn ends the contest depends only on the balance before it and the turn's net, not
    # on when it is played: so the balances before each turn are summed up (``before``, over
    # every ** (played - 1), like ``playing``) and the turns that end it are counted once, at the
    # end. Each turn then only moves the balances that stay between the goals.
    low_net = nets[0][0]
    ways_of = [more for _, more in nets]  # by net - low_net: every net in between can happen
    before: dict[int, int] = {}
    played = 0
    while playing and played < turns:
        played += 1
        before = {b: ways * every for b, ways in before.items()}
        for balance, ways in playing.items():
            before[balance] = before.get(balance, 0) + ways
        after: dict[int, int] = {}
        for balance, ways in playing.items():
            first = max(-target + 1, balance + low_net)
            last = min(target - 1, balance + low_net + len(ways_of) - 1)
            for moved in range(first, last + 1):
                after[moved] = after.get(moved, 0) + ways * ways_of[moved - balance - low_net]
        playing = after
    ended: dict[Key, int] = {}
    for balance, ways in before.items():  # the turns that took a side far enough ahead
        for net, more in nets:
            moved = balance + net
            if moved >= target:  # the attacker wins, with what it stored
                key: Key = ("success", moved)
            elif moved <= -target:
                key = ("failure", 0)
            else:
                continue
            ended[key] = ended.get(key, 0) + ways * more
    for balance, ways in playing.items():  # the turn limit: nobody far enough ahead
        key = ("failure", max(balance, 0))  # the attacker's stored successes still count
        ended[key] = ended.get(key, 0) + ways
    return Distribution("d6", "", NAMES, ended, every**played)


def odds(variant: D6Variant, request: D6Request) -> Distribution:
    """The exact distribution of a roll's or a contest's result, as the attacker sees it."""
    if isinstance(request, RollRequest):
        dist = roll_odds(request.pool.dice, request.difficulty.value, request.required)
        roll = f"{request.pool}, {difficulty_text(request.difficulty)}"
        if request.required > 1:
            roll += f", {plural(request.required, 'success')} needed"
        return _named(dist, variant, roll)
    if isinstance(request, ContestRequest):
        a, d, value = request.attacker.dice, request.defender.dice, request.difficulty.value
        roll = f"{request.attacker} vs {request.defender}, {difficulty_text(request.difficulty)}"
        if request.target is None:
            dist = contest_odds(a, d, value, request.max_rounds)
            return _named(dist, variant, f"contest: {roll}")
        dist = seesaw_odds(a, d, value, request.target, request.max_rounds)
        return _named(dist, variant, f"seesaw contest to {request.target} ahead: {roll}")
    raise UsageError("initiative has no odds to work out: it is decided by Traits, then a die")


def _named(dist: Distribution, variant: D6Variant, roll: str) -> Distribution:
    return replace(dist, variant=variant.name, roll=roll)
