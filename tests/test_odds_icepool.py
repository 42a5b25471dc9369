"""Every rule set's odds against an independent model built with icepool (a test and benchmark
dependency only), over the grid documented in docs/odds.md: equal within 1e-9.

The models are written from the rule documents (docs/rules/*.md), die by die, with icepool's
own algebra: a die maps to what it counts (a success, a 1, a 10, a Hunger 1 ...), a pool is the
sum of its dice, and a small function of those counts names the result. They share nothing with
coterie's counting — no packed polynomials, no tens classes, no hypergeometric argument — and
bench/odds.py times them against coterie.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from fractions import Fraction
from math import comb
from typing import Any

import icepool
import pytest
from icepool import Vector

from coterie.framework.grammar import parse, tokens
from coterie.framework.variant import RoomSettings, Variant
from coterie_crossover.variant import CrossoverVariant
from coterie_d6.variant import D6Variant
from coterie_laia.variant import LaiaVariant
from coterie_revised.variant import RevisedVariant
from coterie_v5.variant import V5Variant

Table = dict[tuple[str, int], Fraction]
TOLERANCE = 1e-9


def table(die: icepool.Die[Any]) -> Table:
    """An icepool die of ``(outcome, successes)`` as exact probabilities."""
    total = die.denominator()
    return {outcome: Fraction(quantity, total) for outcome, quantity in die.items() if quantity}


# --- revised and crossover: successes and 1s ------------------------------------------------------


@functools.cache
def d10_counts(pool: int, difficulty: int) -> icepool.Die[Any]:
    """(successes rolled, 1s) of a d10 pool: a die succeeds at or above the difficulty, a 10
    always does, a 1 never."""
    die = icepool.d10.map(lambda f: Vector((int(f >= difficulty or f == 10), int(f == 1))))
    return pool @ die


def revised_model(
    pool: int, difficulty: int, willpower: bool = False, cancellable: bool = False
) -> Table:
    """docs/rules/revised.md: each 1 cancels a success; no success rolled and a 1 is a botch;
    Willpower adds one success that 1s cannot cancel (unless the house rule says they can) and
    prevents the botch."""

    def judge(counts: Vector[int]) -> tuple[str, int]:
        rolled, ones = counts
        if willpower:
            net = max(0, rolled + 1 - ones) if cancellable else max(0, rolled - ones) + 1
        elif rolled == 0 and ones > 0:
            return ("botch", 0)
        else:
            net = max(0, rolled - ones)
        return ("success", net) if net > 0 else ("failure", 0)

    return table(d10_counts(pool, difficulty).map(judge))


def crossover_model(pool: int, difficulty: int, willpower: bool = False) -> Table:
    """docs/rules/crossover.md: like revised; Willpower's success is added after the 1s."""
    return revised_model(pool, difficulty, willpower, cancellable=False)


# --- laia: 1s cancel successes from the left; a standing 10 counts twice with a specialty ---------


@functools.cache
def laia_model(pool: int, difficulty: int, specialty: bool) -> Table:
    """docs/rules/laia.md, dice in roll order: the k-th 1 cancels the k-th success from the left,
    wherever it lies. So given how many 1s were thrown, the other dice (faces 2-10, in order)
    lose their first that-many successes; the ones left stand, a 10 among them worth two with a
    specialty. The sum is the standing value, plus the cancelled successes, less every 1."""
    other = icepool.Die({"fail": difficulty - 2, "hit": 10 - difficulty, "ten": 1})
    parts, weights = [], []
    for ones in range(pool + 1):

        def step(state: tuple[int, int], face: str, ones: int = ones) -> tuple[int, int]:
            cancelled, standing = state
            if face == "fail":
                return state
            if cancelled < ones:
                return (cancelled + 1, standing)
            return (cancelled, standing + (2 if specialty and face == "ten" else 1))

        rest = pool - ones
        end = (
            icepool.reduce(step, [other] * rest, initial=(0, 0)) if rest else icepool.Die([(0, 0)])
        )
        parts.append(end.map(lambda c, s, ones=ones: s + c - ones, star=True))
        weights.append(comb(pool, ones) * 9**rest)  # P(ones 1s) = C(n, k) 9^(n-k) / 10^n
    sums = icepool.Die(parts, times=weights)

    def judge(total: int) -> tuple[str, int]:
        if total > 0:
            return ("success", total)
        return ("botch", total) if total < 0 else ("failure", 0)

    return table(sums.map(judge))


# --- v5: successes, pairs of 10s, Hunger dice -----------------------------------------------------

#: a regular die: (a 6-9, a 10, -, -); a Hunger die also says whether it shows a 10 or a 1
REGULAR = icepool.d10.map(lambda f: Vector((int(6 <= f <= 9), int(f == 10), 0, 0, int(f <= 5))))
HUNGER = icepool.d10.map(
    lambda f: Vector((int(6 <= f <= 9), int(f == 10), int(f == 10), int(f == 1), 0))
)


@functools.cache
def v5_counts(regular: int, hunger: int) -> icepool.Die[Any]:
    """(6-9s, 10s, Hunger 10s, Hunger 1s, failed regular dice), the Hunger counts and the
    failures capped (only "any" and "three or more" matter)."""

    def cap(v: Vector[int]) -> Vector[int]:
        return Vector((v[0], v[1], min(v[2], 1), min(v[3], 1), min(v[4], 3)))

    return (regular @ REGULAR + hunger @ HUNGER).map(cap)


def v5_successes(counts: Vector[int]) -> int:
    """Every 6+ is a success; each pair of 10s adds two more."""
    return counts[0] + counts[1] + 2 * (counts[1] // 2)


def v5_judge(counts: Vector[int], difficulty: int) -> tuple[str, int]:
    """docs/rules/v5.md, "The result of a roll"."""
    successes = v5_successes(counts)
    critical = counts[1] >= 2
    if successes > 0 and successes >= difficulty:
        if critical and counts[2]:
            return ("messy_critical", successes)
        return ("critical" if critical else "success", successes)
    if counts[3]:
        return ("bestial_failure", successes)
    return ("total_failure" if successes == 0 else "failure", successes)


def v5_model(regular: int, hunger: int, difficulty: int) -> Table:
    return table(v5_counts(regular, hunger).map(lambda v: v5_judge(v, difficulty)))


def v5_contest_model(regular: int, hunger: int, opposing: int) -> Table:
    """The opposition's successes are the Difficulty (the actor wins ties)."""
    theirs = v5_counts(opposing, 0).map(v5_successes)
    return table(icepool.map(v5_judge, v5_counts(regular, hunger), theirs))


def v5_planned_model(regular: int, hunger: int, difficulty: int) -> Table:
    """A roll that does not win re-rolls up to three of its failed regular dice with Willpower."""
    rerolled = REGULAR.map(lambda v: Vector((v[0], v[1], 0, 0, 0)))

    def play(counts: Vector[int]) -> Any:
        first = v5_judge(counts, difficulty)
        if first[0] in ("critical", "messy_critical", "success") or not counts[4]:
            return first
        kept = Vector((counts[0], counts[1], counts[2], counts[3], 0))
        return (counts[4] @ rerolled).map(lambda new: v5_judge(kept + new, difficulty))

    return table(v5_counts(regular, hunger).map(play))


# --- d6 -------------------------------------------------------------------------------------------


def d6_successes(pool: int, difficulty: int) -> icepool.Die[int]:
    return pool @ icepool.d6.map(lambda f: int(f >= min(difficulty, 6)))


def d6_model(pool: int, difficulty: int, need: int) -> Table:
    return table(
        d6_successes(pool, difficulty).map(lambda s: ("success" if s >= need else "failure", s))
    )


def d6_net(attacker: int, defender: int, difficulty: int) -> icepool.Die[int]:
    return d6_successes(attacker, difficulty) - d6_successes(defender, difficulty)


def d6_contest_model(attacker: int, defender: int, difficulty: int, rounds: int = 100) -> Table:
    """A tie is rolled again, up to ``rounds`` rounds in all."""
    net = d6_net(attacker, defender, difficulty).reroll([0], depth=rounds - 1)
    return table(net.map(lambda n: ("success", n) if n > 0 else ("failure", 0)))


def d6_seesaw_model(
    attacker: int, defender: int, difficulty: int, target: int, rounds: int = 100
) -> Table:
    """Each turn's net moves one balance; the first side ``target`` ahead wins."""
    net = d6_net(attacker, defender, difficulty)

    def turn(state: tuple[int, int], moved: int) -> tuple[int, int]:
        balance, over = state
        if over:
            return state
        balance += moved
        return (balance, int(abs(balance) >= target))

    end = icepool.map(turn, icepool.Die([(0, 0)]), net, repeat=rounds)
    return table(
        end.map(
            lambda balance, _: (
                ("success", balance) if balance >= target else ("failure", max(balance, 0))
            ),
            star=True,
        )
    )


# --- the comparison -------------------------------------------------------------------------------


def assert_close(ours: Mapping[tuple[str, int], Fraction], model: Table) -> None:
    keys = set(ours) | set(model)
    worst = max(abs(ours.get(k, Fraction(0)) - model.get(k, Fraction(0))) for k in keys)
    assert worst <= TOLERANCE, f"differs by {float(worst):.3g}"
    assert sum(model.values()) == 1


def odds_of(variant: Variant[Any, Any], text: str, **house: bool) -> Mapping[Any, Fraction]:
    settings = RoomSettings(variant=variant.name, house_rules=house)
    return variant.odds(variant.build(parse(tokens(text), variant.grammar), settings)).table


#: the grid (docs/odds.md): every pool up to 12 dice, then 15, 20, 25 and 30
SMALL = range(1, 13)
LARGE = (15, 20, 25, 30)
D10_GRID = [(p, d) for p in SMALL for d in range(2, 11)] + [
    (p, d) for p in LARGE for d in (3, 6, 8, 10)
]


@pytest.mark.parametrize(("pool", "difficulty"), D10_GRID)
def test_revised_and_crossover(pool: int, difficulty: int) -> None:
    revised, crossover = RevisedVariant(), CrossoverVariant()
    assert_close(odds_of(revised, f"{pool} {difficulty}"), revised_model(pool, difficulty))
    assert_close(odds_of(revised, f"{pool} {difficulty} wp"), revised_model(pool, difficulty, True))
    assert_close(
        odds_of(revised, f"{pool} {difficulty} wp", willpower_cancellable=True),
        revised_model(pool, difficulty, True, cancellable=True),
    )
    assert_close(odds_of(crossover, f"{pool} {difficulty}"), crossover_model(pool, difficulty))
    assert_close(
        odds_of(crossover, f"{pool} {difficulty} wp"), crossover_model(pool, difficulty, True)
    )


LAIA_GRID = [(p, d) for p in SMALL for d in (2, 4, 6, 8, 10)] + [
    (p, d) for p in LARGE for d in (3, 6, 10)
]


@pytest.mark.parametrize(("pool", "difficulty"), LAIA_GRID)
def test_laia(pool: int, difficulty: int) -> None:
    laia = LaiaVariant()
    assert_close(odds_of(laia, f"{pool} {difficulty}"), laia_model(pool, difficulty, False))
    assert_close(odds_of(laia, f"{pool} {difficulty} spec"), laia_model(pool, difficulty, True))


V5_GRID = [(p, h) for p in SMALL for h in range(min(p, 5) + 1)] + [
    (p, h) for p in LARGE for h in (0, 2, 5)
]


@pytest.mark.parametrize(("pool", "hunger"), V5_GRID)
def test_v5(pool: int, hunger: int) -> None:
    v5 = V5Variant()
    for difficulty in range(7) if pool in SMALL else (1, 3, 5, 8):
        assert_close(
            odds_of(v5, f"{pool} {hunger} {difficulty}"),
            v5_model(pool - hunger, hunger, difficulty),
        )


@pytest.mark.parametrize("pool", [1, 2, 4, 6, 8])
@pytest.mark.parametrize("hunger", [0, 2])
def test_v5_contests(pool: int, hunger: int) -> None:
    v5 = V5Variant()
    for opposing in (1, 4, 8):
        regular = pool - min(hunger, pool)
        assert_close(
            odds_of(v5, f"{pool} {hunger} vs {opposing}"),
            v5_contest_model(regular, pool - regular, opposing),
        )


@pytest.mark.parametrize("pool", [1, 2, 3, 5, 7, 10])
@pytest.mark.parametrize("hunger", [0, 1, 3])
def test_v5_planned_reroll(pool: int, hunger: int) -> None:
    v5 = V5Variant()
    regular = pool - min(hunger, pool)
    for difficulty in (1, 3, 5):
        request = v5.build(
            parse(tokens(f"{pool} {hunger} {difficulty}"), v5.grammar), RoomSettings("v5")
        )
        ours = v5.odds(request, frozenset({"reroll"})).table
        assert_close(ours, v5_planned_model(regular, pool - regular, difficulty))


@pytest.mark.parametrize("pool", range(1, 31))
def test_d6_rolls(pool: int) -> None:
    d6 = D6Variant()
    for difficulty in (2, 4, 6, 8):
        for need in {1, 2, min(pool, 5)}:
            if need <= pool:
                assert_close(
                    odds_of(d6, f"{pool} {difficulty} need {need}"),
                    d6_model(pool, difficulty, need),
                )


@pytest.mark.parametrize("attacker", [1, 2, 4, 6])
@pytest.mark.parametrize("defender", [1, 3, 6])
def test_d6_contests(attacker: int, defender: int) -> None:
    d6 = D6Variant()
    for difficulty in (3, 4, 6):
        assert_close(
            odds_of(d6, f"{attacker} {difficulty} vs {defender}"),
            d6_contest_model(attacker, defender, difficulty),
        )
    for target in (1, 3, 5):
        assert_close(
            odds_of(d6, f"{attacker} vs {defender} to {target}"),
            d6_seesaw_model(attacker, defender, 4, target),
        )


def test_the_models_are_models_of_these_rules() -> None:
    """A model that ignored a rule would be no check: each model tells the rules apart."""
    assert revised_model(3, 6) != revised_model(3, 6, True)
    assert revised_model(3, 6, True) != revised_model(3, 6, True, cancellable=True)
    assert laia_model(3, 6, True) != laia_model(3, 6, False)
    assert v5_model(3, 2, 2) != v5_model(5, 0, 2)
    assert d6_contest_model(2, 2, 4, rounds=1) != d6_contest_model(2, 2, 4, rounds=2)
