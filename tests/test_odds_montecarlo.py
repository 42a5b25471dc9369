"""The real roller against the exact odds: many rolls of each request through ``Variant.roll``
(the path every chat command takes), compared with the distribution by a chi-square test, so the
roller and the odds can never drift apart. Each test also shows the check has teeth: the same
rolls are rejected against the odds of a slightly different request."""

from __future__ import annotations

from collections import Counter
from math import exp, lgamma, log
from typing import Any

import pytest

from coterie.dice.odds import Distribution
from coterie.dice.sources import SeededDice
from coterie.framework.grammar import parse, tokens
from coterie.framework.variant import RoomSettings, Variant
from coterie_crossover.variant import CrossoverVariant
from coterie_d6.variant import D6Variant
from coterie_laia.variant import LaiaVariant
from coterie_revised.variant import RevisedVariant
from coterie_v5 import rules as v5_rules
from coterie_v5.variant import V5Outcome, V5Variant

ROLLS = 20_000
#: a correct roller fails once in a million runs (and the seeds are fixed)
ALPHA = 1e-6


def chi_square_tail(df: int, x: float) -> float:
    """P(a chi-square variable with ``df`` degrees of freedom exceeds ``x``): one minus the
    regularized lower incomplete gamma function, summed as its power series."""
    a, y = df / 2, x / 2
    term = total = 1 / a
    n = 0
    while term > 1e-17 * total:
        n += 1
        term *= y / (a + n)
        total += term
    return 1 - total * exp(-y + a * log(y) - lgamma(a))


def critical_value(df: int) -> float:
    """The chi-square value exceeded with probability :data:`ALPHA` (by bisection)."""
    low, high = 0.0, 10.0 * df + 100
    for _ in range(100):
        middle = (low + high) / 2
        low, high = (middle, high) if chi_square_tail(df, middle) > ALPHA else (low, middle)
    return low


def chi_square(observed: Counter[Any], dist: Distribution, rolls: int) -> tuple[float, int]:
    """The statistic and its degrees of freedom; results expected fewer than 5 times are pooled.
    A result the odds call impossible fails at once."""
    impossible = [key for key in observed if key not in dist.table]
    assert not impossible, f"rolled results the odds say cannot happen: {impossible}"
    bins: list[tuple[float, int]] = []
    rare_expected, rare_observed = 0.0, 0
    for key, chance in dist.table.items():
        expected = float(chance) * rolls
        if expected < 5:
            rare_expected += expected
            rare_observed += observed.get(key, 0)
        else:
            bins.append((expected, observed.get(key, 0)))
    if rare_expected > 0:
        bins.append((rare_expected, rare_observed))
    statistic = sum((seen - expected) ** 2 / expected for expected, seen in bins)
    return statistic, len(bins) - 1


def request(variant: Variant[Any, Any], text: str) -> Any:
    return variant.build(parse(tokens(text), variant.grammar), RoomSettings(variant.name))


def roll_many(variant: Variant[Any, Any], text: str, seed: int) -> Counter[tuple[str, int]]:
    built = request(variant, text)
    dice = SeededDice(seed)
    return Counter(
        (outcome.outcome, outcome.successes)
        for outcome in (variant.roll(built, dice) for _ in range(ROLLS))
    )


CASES = [
    pytest.param(variant, text, other, id=f"{variant.name} {text}")
    for variant, text, other in [
        (RevisedVariant(), "7 6", "7 7"),
        (RevisedVariant(), "5 8 wp", "5 8"),
        (CrossoverVariant(), "6 4", "6 5"),
        (LaiaVariant(), "6 7 spec", "6 7"),
        (LaiaVariant(), "8 10", "8 9"),
        (V5Variant(), "7 3 3", "7 2 3"),
        (V5Variant(), "5 2 vs 4", "5 2 2"),
        (D6Variant(), "5 5 need 2", "5 4 need 2"),
        (D6Variant(), "3 vs 3", "3 vs 2"),
        (D6Variant(), "2 vs 2 to 2", "2 vs 2 to 3"),
    ]
]


@pytest.mark.parametrize(("variant", "text", "other"), CASES)
def test_the_roller_follows_the_odds(variant: Variant[Any, Any], text: str, other: str) -> None:
    observed = roll_many(variant, text, seed=sum(map(ord, variant.name + text)))
    assert sum(observed.values()) == ROLLS
    statistic, df = chi_square(observed, variant.odds(request(variant, text)), ROLLS)
    assert statistic < critical_value(df), f"chi-square {statistic:.1f} with {df} df"
    # the same rolls against another request's odds: a real mismatch is caught
    wrong = variant.odds(request(variant, other))
    if any(key not in wrong.table for key in observed):
        return  # already impossible under the other odds: caught outright
    statistic, df = chi_square(observed, wrong, ROLLS)
    assert statistic > critical_value(df)


def test_a_planned_willpower_reroll_follows_its_odds() -> None:
    """Roll; when the roll does not win and failures can be re-rolled, re-roll them through
    ``!reroll``'s own request — the distribution of how it ends is the ``reroll`` odds."""
    v5 = V5Variant()
    first = request(v5, "6 2 3")
    dice = SeededDice(4242)
    observed: Counter[tuple[str, int]] = Counter()
    for _ in range(ROLLS):
        outcome = v5.roll(first, dice)
        assert isinstance(outcome, V5Outcome) and outcome.actor is not None
        strategy = v5_rules.Strategy.FAILURES
        problem = v5_rules.reroll_problem(outcome.actor, outcome.verdict.difficulty, strategy)
        if not outcome.verdict.win and problem is None:
            record = {
                "kind": "roll",
                "request": first.to_json(),
                "faces": list(outcome.all_faces),
                "rerolled": False,
            }
            outcome = v5.roll(v5.reroll_request(record, strategy), dice)
        observed[(outcome.outcome, outcome.successes)] += 1
    planned = v5.odds(first, frozenset({"reroll"}))
    statistic, df = chi_square(observed, planned, ROLLS)
    assert statistic < critical_value(df)
    assert float(planned.win) > float(v5.odds(first).win) + 0.05
    statistic, df = chi_square(observed, v5.odds(first), ROLLS)
    assert statistic > critical_value(df)  # without the re-rolls the odds are different


def test_critical_values() -> None:
    # tabulated upper 1e-6 points of chi-square: 1 df 23.93 (a normal's 4.8916 squared), 10 df 46.86
    assert abs(critical_value(1) - 23.93) < 0.01
    assert abs(critical_value(10) - 46.86) < 0.01
