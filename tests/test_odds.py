"""Exact odds: the shared machinery against naive arithmetic, and every rule set's distribution
against an exhaustive enumeration of every face tuple through the rule set's own pure rule
(``Variant.evaluate``) — exactly, as fractions.

The icepool models are in test_odds_icepool.py, the Monte-Carlo check of the real roller in
test_odds_montecarlo.py, chat, charts and the CLI in test_odds_chat.py.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import replace
from fractions import Fraction
from math import comb
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coterie.dice import odds
from coterie.dice.odds import Distribution, Poly, bits_for
from coterie.errors import UsageError
from coterie.framework.grammar import Grammar, parse, tokens
from coterie.framework.variant import RoomSettings, Variant
from coterie_crossover import odds as crossover_odds
from coterie_crossover.variant import CrossoverVariant
from coterie_d6.variant import D6Variant
from coterie_laia import odds as laia_odds
from coterie_laia.variant import LaiaVariant
from coterie_revised import odds as revised_odds
from coterie_revised.variant import RevisedVariant
from coterie_v5 import rules as v5_rules
from coterie_v5.requests import RerollRequest, RouseRequest
from coterie_v5.variant import V5Variant
from doc_tables import table

REVISED, LAIA, CROSSOVER, V5, D6 = (
    RevisedVariant(),
    LaiaVariant(),
    CrossoverVariant(),
    V5Variant(),
    D6Variant(),
)


def build(variant: Variant[Any, Any], text: str, **house: bool | int) -> Any:
    """A request from chat words, as ``!roll`` would build it."""
    settings = RoomSettings(variant=variant.name, house_rules=house)
    return variant.build(parse(tokens(text), variant.grammar), settings)


def enumerate_faces(
    variant: Variant[Any, Any], request: Any, count: int | None = None
) -> dict[tuple[str, int], Fraction]:
    """Every face tuple of the request through ``variant.evaluate``: the exact distribution of
    ``(outcome, successes)``."""
    count = variant.dice_count(request) if count is None else count
    tally: dict[tuple[str, int], int] = {}
    for faces in itertools.product(range(1, variant.sides + 1), repeat=count):
        outcome = variant.evaluate(request, faces)
        key = (outcome.outcome, outcome.successes)
        tally[key] = tally.get(key, 0) + 1
    total = variant.sides**count
    return {key: Fraction(ways, total) for key, ways in sorted(tally.items())}


def assert_exact(variant: Variant[Any, Any], text: str, **house: bool | int) -> Distribution:
    request = build(variant, text, **house)
    dist = variant.odds(request)
    assert dist.table == enumerate_faces(variant, request), text
    assert sum(dist.table.values()) == 1
    assert set(dist.outcomes) == set(dist.names)
    return dist


# --- the packed polynomials -----------------------------------------------------------------------


def naive_convolve(a: dict[int, int], b: dict[int, int]) -> dict[int, int]:
    out: dict[int, int] = {}
    for i, x in a.items():
        for j, y in b.items():
            out[i + j] = out.get(i + j, 0) + x * y
    return {k: v for k, v in out.items() if v}


kernels = st.dictionaries(st.integers(-3, 4), st.integers(0, 9), min_size=1, max_size=5).filter(
    lambda k: any(k.values())
)


@given(kernels, st.integers(0, 12))
def test_power_is_repeated_convolution(kernel: dict[int, int], n: int) -> None:
    expected: dict[int, int] = {0: 1}
    for _ in range(n):
        expected = naive_convolve(expected, kernel)
    assert odds.power(kernel, n) == expected


@given(kernels, kernels)
def test_convolve_and_packed_sums(a: dict[int, int], b: dict[int, int]) -> None:
    assert odds.convolve(a, b) == naive_convolve(a, b)
    bits = bits_for(2 * max(*a.values(), *b.values()) * 10)
    total = Poly.of(a, bits) + Poly.of(b, bits).shift(3)
    expected = dict(a)
    for k, v in b.items():
        expected[k + 3] = expected.get(k + 3, 0) + v
    assert total.coefficients() == {k: v for k, v in expected.items() if v}
    assert (total - Poly.of(a, bits)).coefficients() == {k + 3: v for k, v in b.items() if v}


def test_big_powers_are_built_factor_by_factor_and_agree() -> None:
    kernel = {-1: 1, 0: 4, 1: 5}
    small = odds.power(kernel, 300)
    limit = odds.POW_BITS_LIMIT
    try:
        odds.POW_BITS_LIMIT = 0  # every power the slow, lock-friendly way
        assert odds.power(kernel, 300) == small
    finally:
        odds.POW_BITS_LIMIT = limit
    assert sum(small.values()) == 10**300


def test_a_slot_that_is_too_narrow_is_refused() -> None:
    with pytest.raises(ValueError, match="does not fit"):
        Poly.of({0: 256}, 8)
    with pytest.raises(ValueError, match="share one slot width"):
        _ = Poly.of({0: 1}, 8) * Poly.of({0: 1}, 16)


@pytest.mark.parametrize("n", [0, 1, 2, 5, 9])
def test_parity_split(n: int) -> None:
    bits = bits_for(2 * 10**n)
    even, odd = odds.parity_split({0: 5, 1: 4}, {2: 1}, n, bits)
    tens_even: dict[int, int] = {}
    tens_odd: dict[int, int] = {}
    for faces in itertools.product(((0, 5, False), (1, 4, False), (2, 1, True)), repeat=n):
        value = sum(f[0] for f in faces)
        ways = 1
        for f in faces:
            ways *= f[1]
        side = tens_odd if sum(f[2] for f in faces) % 2 else tens_even
        side[value] = side.get(value, 0) + ways
    assert even.coefficients() == tens_even and odd.coefficients() == tens_odd


@given(st.integers(0, 6), st.lists(st.integers(0, 5), min_size=1, max_size=4))
def test_multinomials_count_every_split(n: int, weights: list[int]) -> None:
    expected: dict[tuple[int, ...], int] = {}
    for picks in itertools.product(range(len(weights)), repeat=n):
        counts = tuple(picks.count(i) for i in range(len(weights)))
        ways = 1
        for pick in picks:
            ways *= weights[pick]
        if ways:
            expected[counts] = expected.get(counts, 0) + ways
    assert dict(odds.multinomials(n, weights)) == expected


@pytest.mark.parametrize("difficulty", range(2, 11))
@pytest.mark.parametrize("pool", [1, 3, 4])
def test_rule_of_one_against_every_face(pool: int, difficulty: int) -> None:
    rolled: dict[int, int] = {}
    none: dict[int, int] = {}
    for faces in itertools.product(range(1, 11), repeat=pool):
        hits = sum(1 for f in faces if f >= difficulty or f == 10)
        net = hits - faces.count(1)
        part = rolled if hits else none
        part[net] = part.get(net, 0) + 1
    assert odds.rule_of_one(pool, difficulty) == (rolled, none)


# --- the distribution type ------------------------------------------------------------------------


def test_distribution_checks_its_counts() -> None:
    with pytest.raises(ValueError, match="add up"):
        Distribution("x", "", ("success",), {("success", 1): 3}, 4)
    with pytest.raises(ValueError, match="not among"):
        Distribution("x", "", ("success",), {("botch", 0): 4}, 4)
    dist = Distribution(
        "x", "", ("success", "failure", "botch"), {("success", 2): 3, ("failure", 0): 1}, 4
    )
    assert dist.outcomes == {"success": Fraction(3, 4), "failure": Fraction(1, 4), "botch": 0}
    assert dist.successes == {0: Fraction(1, 4), 2: Fraction(3, 4)}
    assert dist.mean == Fraction(3, 2) and dist.win == Fraction(3, 4)
    assert dist.most_likely(1) == [(2, Fraction(3, 4))]
    data = dist.as_json()
    assert data == {
        "variant": "x",
        "outcomes": {"success": 0.75, "failure": 0.25, "botch": 0.0},
        "successes": {"0": 0.25, "2": 0.75},
        "mean": 1.5,
    }


@pytest.mark.parametrize(
    ("chance", "text"),
    [
        (Fraction(0), "0%"),
        (Fraction(1), "100%"),
        (Fraction(1, 10**6), "<0.1%"),
        (1 - Fraction(1, 10**6), ">99.9%"),
        (Fraction(2, 3), "66.7%"),
    ],
)
def test_percent_never_rounds_to_certainty(chance: Fraction, text: str) -> None:
    assert odds.percent(chance) == text


def test_a_rule_set_without_odds_says_so() -> None:
    class Plain(RevisedVariant):
        name = "plain"

    class NoOdds(Variant[Any, Any]):
        name = "noodds"
        title = "no odds"
        grammar = Grammar(usage="!roll POOL")

        def build(self, parsed: Any, settings: RoomSettings) -> Any:
            return None

        def dice_count(self, request: Any) -> int:
            return 0

        def evaluate(self, request: Any, faces: Sequence[int]) -> Any:
            return None

    with pytest.raises(UsageError, match="the noodds rules cannot work out odds yet"):
        NoOdds().odds(None)
    # a subclass that only renames keeps the odds; one that counts differently loses them
    assert Plain().odds(build(REVISED, "3 6")).variant == "plain"

    class NoBotch(RevisedVariant):
        name = "nobotch"

        def evaluate(self, request: Any, faces: Sequence[int]) -> Any:
            return super().evaluate(request, faces)

    with pytest.raises(UsageError, match="nobotch rules count rolls their own way"):
        NoBotch().odds(build(REVISED, "3 6"))


def test_results_are_cached_and_the_cache_can_be_cleared() -> None:
    odds.clear_cache()
    first = revised_odds.pool_odds(12, 7, False, False)
    assert revised_odds.pool_odds(12, 7, False, False) is first
    odds.clear_cache()
    assert revised_odds.pool_odds(12, 7, False, False) is not first


# --- revised --------------------------------------------------------------------------------------


#: (pool, difficulty) enumerated face by face: every difficulty up to 3 dice, some with 4
D10_GRID = [(p, d) for p in (1, 2, 3) for d in range(2, 11)] + [(4, d) for d in (2, 5, 8, 10)]


@pytest.mark.parametrize(("pool", "difficulty"), D10_GRID)
def test_revised_every_face(pool: int, difficulty: int) -> None:
    assert_exact(REVISED, f"{pool} {difficulty}")
    assert_exact(REVISED, f"{pool} {difficulty} wp")
    assert_exact(REVISED, f"{pool} {difficulty} wp", willpower_cancellable=True)


@pytest.mark.parametrize(
    "text",
    ["5 multi 2", "7 multi 2 action 2", "3 retry 2", "3 8 retry 2 wp", "4 diff 9"],
)
def test_revised_multiple_actions_and_trying_again(text: str) -> None:
    dist = assert_exact(REVISED, text)
    request = build(REVISED, text)
    assert dist == REVISED.odds(request)
    assert dist.roll.startswith(f"{request.actor.pool} dice, difficulty {request.actor.difficulty}")


def test_revised_automatic_success_is_certain() -> None:
    dist = REVISED.odds(build(REVISED, "6 5 auto"))
    assert dist.table == {("success", 1): 1}
    assert dist.outcomes == {"success": 1, "failure": 0, "botch": 0}
    assert dist.as_json()["successes"] == {"1": 1.0}


def joint_events(
    variant: Variant[Any, Any], text: str, verdict: Callable[[Any], str], **house: Any
):
    """The chances of the verdict words over every face tuple of both sides."""
    request = build(variant, text, **house)
    count = variant.dice_count(request)
    tally: dict[str, int] = {}
    for faces in itertools.product(range(1, 11), repeat=count):
        word = verdict(variant.evaluate(request, faces))
        tally[word] = tally.get(word, 0) + 1
    return request, {word: Fraction(ways, 10**count) for word, ways in tally.items()}


@pytest.mark.parametrize("text", ["2 6 vs 2 7", "1 4 wp vs 2 6", "2 9 vs 1 6 wp", "3 10 vs 1 2"])
def test_revised_resisted(text: str) -> None:
    def verdict(outcome: Any) -> str:
        return revised_odds.RESISTED[outcome.resisted.winner or "tie"]

    request, expected = joint_events(REVISED, text, verdict)
    dist = REVISED.odds(request)
    assert {label: p for label, p in dist.events if p} == expected
    # the actor's own result is what it is without the opposition
    assert dist.table == REVISED.odds(replace(request, versus=None)).table


@pytest.mark.parametrize(
    "text", ["2 6 ext 3 vs 2 6 progress 1", "2 5 ext 2 progress 1 vs 2 7", "3 6 ext 1 vs 1 6"]
)
@pytest.mark.parametrize("wipes", [True, False])
def test_revised_extended_and_resisted(text: str, wipes: bool) -> None:
    def verdict(outcome: Any) -> str:
        return revised_odds.CONTEST[outcome.contest.winner or "none"]

    request, expected = joint_events(REVISED, text, verdict, botch_wipes_extended=wipes)
    assert {label: p for label, p in REVISED.odds(request).events if p} == expected


@pytest.mark.parametrize("text", ["3 6 ext 2", "4 7 ext 5 progress 2", "2 6 ext 9 progress 8 wp"])
def test_revised_extended(text: str) -> None:
    request, expected = joint_events(REVISED, text, lambda o: str(o.extended.done))
    [(label, chance)] = REVISED.odds(request).events
    assert label == "reaches the target with this roll" and chance == expected.get("True", 0)


# --- crossover ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("pool", "difficulty"), D10_GRID)
def test_crossover_every_face(pool: int, difficulty: int) -> None:
    assert_exact(CROSSOVER, f"{pool} {difficulty}")
    assert_exact(CROSSOVER, f"{pool} {difficulty} wp")


def test_crossover_automatic_and_ten_point_traits() -> None:
    assert CROSSOVER.odds(build(CROSSOVER, "6 5 auto")).table == {("success", 1): 1}
    assert_exact(CROSSOVER, "rage 4 8")


@pytest.mark.parametrize("text", ["2 6 vs 2 6", "1 3 wp vs 3 8"])
def test_crossover_resisted(text: str) -> None:
    def verdict(outcome: Any) -> str:
        return crossover_odds.RESISTED[outcome.resisted.winner or "tie"]

    request, expected = joint_events(CROSSOVER, text, verdict)
    assert {label: p for label, p in CROSSOVER.odds(request).events if p} == expected


@pytest.mark.parametrize(
    "text", ["2 6 ext 2 vs 2 6", "2 4 ext 3 progress 2 vs 2 4 progress 2", "1 6 ext 1 vs 3 2"]
)
def test_crossover_race(text: str) -> None:
    def verdict(outcome: Any) -> str:
        return crossover_odds.RACE[outcome.race.winner or "none"]

    request, expected = joint_events(CROSSOVER, text, verdict)
    assert {label: p for label, p in CROSSOVER.odds(request).events if p} == expected


# --- laia: the specialty and the order of the dice ------------------------------------------------


@pytest.mark.parametrize(("pool", "difficulty"), D10_GRID)
def test_laia_every_face(pool: int, difficulty: int) -> None:
    assert_exact(LAIA, f"{pool} {difficulty}")
    assert_exact(LAIA, f"{pool} {difficulty} spec")


@pytest.mark.parametrize("difficulty", [2, 6, 9])
def test_laia_specialty_five_dice_every_order(difficulty: int) -> None:
    """Five dice: enough for 1s on both sides of successes, 10s cancelled and 10s standing."""
    assert_exact(LAIA, f"5 {difficulty} spec")


def test_laia_order_matters_and_the_odds_know_it() -> None:
    # 10 before the 8 is cancelled by the 1; after it, the 10 stands and counts twice
    first = LAIA.evaluate(build(LAIA, "3 6 spec"), [10, 8, 1])
    second = LAIA.evaluate(build(LAIA, "3 6 spec"), [8, 10, 1])
    assert (first.successes, second.successes) == (1, 2)


@pytest.mark.parametrize("text", ["2 6 retry 2 spec", "3 5 spec vs 1 7 spec", "2 6 ext 3 vs 2 6"])
def test_laia_options(text: str) -> None:
    request = build(LAIA, text)
    if request.versus is None:
        assert_exact(LAIA, text)
        return

    def verdict(outcome: Any) -> str:
        if request.target is None:
            return laia_odds.RESISTED[outcome.resisted.winner or "tie"]
        return laia_odds.CONTEST[outcome.contest.winner or "none"]

    _, expected = joint_events(LAIA, text, verdict)
    assert {label: p for label, p in LAIA.odds(request).events if p} == expected


def test_laia_big_pool_mean_is_linear_without_the_specialty() -> None:
    # without a specialty the sum is (successes - 1s): its mean is exactly pool * (11 - d - 1) / 10
    for pool, difficulty in ((100, 6), (57, 8), (100, 10)):
        dist = LAIA.odds(build(LAIA, f"{pool} {difficulty}"))
        assert dist.mean == Fraction(pool * (10 - difficulty), 10)
        assert sum(dist.table.values()) == 1


def test_laia_difficulty_ten_agrees_with_the_documented_botch_chance() -> None:
    from coterie_laia import rules as laia_rules

    for pool in (1, 5, 30, 100):
        dist = LAIA.odds(build(LAIA, f"{pool} 10 spec"))
        assert dist.outcomes["botch"] == laia_rules.botch_chance_at_ten(pool)


# --- v5 -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("pool", [1, 2, 3, 4])
def test_v5_every_face(pool: int) -> None:
    for hunger in range(pool + 1):
        for difficulty in range(5) if pool < 4 else (1, 3):
            assert_exact(V5, f"{pool} {hunger} {difficulty}")


@pytest.mark.parametrize(
    "text", ["3 2 spec", "2 0 3 team 2", "4 1 bonus 1 penalty 2", "3 5 0", "humanity 3 1 2"]
)
def test_v5_options(text: str) -> None:
    assert_exact(V5, text)


def test_v5_pool_never_below_one_die_and_automatic_wins() -> None:
    assert_exact(V5, "1 penalty 3")
    dist = V5.odds(build(V5, "6 0 2 auto"))
    assert dist.table == {("success", 2): 1} and dist.win == 1


@pytest.mark.parametrize("text", ["1 vs 1", "2 1 vs 1", "1 1 vs 2 1", "2 2 vs 2", "3 vs 1"])
def test_v5_contests(text: str) -> None:
    assert_exact(V5, text)


def planned_by_enumeration(request: Any) -> dict[tuple[str, int], Fraction]:
    """Every first roll; when it does not win and failures can be re-rolled, every re-roll."""
    count = request.dice
    tally: dict[tuple[str, int], Fraction] = {}
    for faces in itertools.product(range(1, 11), repeat=count):
        first = V5.evaluate(request, faces)
        strategy = v5_rules.Strategy.FAILURES
        problem = v5_rules.reroll_problem(first.actor, first.verdict.difficulty, strategy)
        if first.verdict.win or problem is not None:
            key = (first.outcome, first.successes)
            tally[key] = tally.get(key, 0) + Fraction(1, 10**count)
            continue
        indexes = v5_rules.reroll_indexes(first.actor.regular, strategy)
        again = RerollRequest(request, tuple(faces), indexes, strategy)
        for new in itertools.product(range(1, 11), repeat=len(indexes)):
            outcome = V5.evaluate(again, new)
            key = (outcome.outcome, outcome.successes)
            tally[key] = tally.get(key, 0) + Fraction(1, 10 ** (count + len(indexes)))
    return dict(sorted(tally.items()))


@pytest.mark.parametrize("text", ["1 0 1", "2 1 2", "2 0 3", "3 0 2", "3 1 3", "3 3 1"])
def test_v5_planned_reroll_of_failures(text: str) -> None:
    request = build(V5, text)
    dist = V5.odds(request, frozenset({"reroll"}))
    assert dist.table == planned_by_enumeration(request)
    assert dist.win >= V5.odds(request).win


def test_v5_planned_reroll_is_refused_where_willpower_cannot_reroll() -> None:
    with pytest.raises(UsageError, match="tracker"):
        V5.odds(build(V5, "willpower 3 0 1"), frozenset({"reroll"}))
    with pytest.raises(UsageError, match="contest"):
        V5.odds(build(V5, "3 vs 2"), frozenset({"reroll"}))


@pytest.mark.parametrize(
    ("text", "faces", "strategy"),
    [
        ("5 1 3", [3, 8, 2, 1, 10], v5_rules.Strategy.FAILURES),
        ("5 1 3", [3, 8, 2, 1, 10], v5_rules.Strategy.CRITICALS),
        ("4 1 2", [10, 1, 2, 10], v5_rules.Strategy.RISKY),
        ("3 1 2", [10, 7, 10], v5_rules.Strategy.AVOID_MESSY),
        ("2 vs 2", [2, 9, 8, 7], v5_rules.Strategy.FAILURES),
        ("5 1 3", [3, 8, 2, 1, 10], (8, 1)),  # the dice the player names: a success among them
    ],
)
def test_v5_reroll_odds_given_the_faces(text: str, faces: list[int], strategy: Any) -> None:
    request = build(V5, text)
    record = {
        "kind": "roll",
        "request": request.to_json(),
        "faces": faces,
        "rerolled": False,
    }
    if isinstance(strategy, tuple):
        again = V5.reroll_request(record, v5_rules.Strategy.CHOSEN, strategy)
        assert again.indexes == (1, 3)
    else:
        again = V5.reroll_request(record, strategy)
    dist = V5.odds(again)
    assert dist.table == enumerate_faces(V5, again, len(again.indexes))


@pytest.mark.parametrize("checks", [1, 2, 4])
def test_v5_rouse_checks(checks: int) -> None:
    dist = V5.odds(RouseRequest(checks=checks, hunger=2))
    assert dist.table == enumerate_faces(V5, RouseRequest(checks=checks, hunger=2), checks)
    assert dist.outcomes["success"] == Fraction(1, 2**checks)


# --- d6 -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("difficulty", [2, 3, 4, 5, 6, 7, 9])
@pytest.mark.parametrize("pool", [1, 2, 3, 4, 5])
def test_d6_every_face(pool: int, difficulty: int) -> None:
    for need in range(1, pool + 1):
        assert_exact(D6, f"{pool} {difficulty} need {need}")


def test_d6_difficulty_above_six_counts_as_six() -> None:
    assert D6.odds(build(D6, "4 9")).table == D6.odds(build(D6, "4 6")).table
    assert D6.odds(build(D6, "4 9")).roll.endswith("9 lowered to 6, the highest difficulty)")


def contest_by_enumeration(request: Any) -> dict[tuple[str, int], Fraction]:
    """Every sequence of rounds the contest can play (ties roll again), through evaluate."""
    per_round = request.attacker.dice + request.defender.dice
    tally: dict[tuple[str, int], Fraction] = {}

    def play(faces: list[int], weight: Fraction) -> None:
        try:
            outcome = D6.evaluate(request, faces)
        except UsageError as error:  # the faces ran out: the contest goes on
            assert "needs at least" in error.message
            for more in itertools.product(range(1, 7), repeat=per_round):
                play(faces + list(more), weight / 6**per_round)
            return
        key = (outcome.outcome, outcome.successes)
        tally[key] = tally.get(key, Fraction(0)) + weight

    play([], Fraction(1))
    return dict(sorted(tally.items()))


@pytest.mark.parametrize(
    ("text", "rounds"),
    [
        ("1 vs 1", 1),
        ("1 vs 1", 3),
        ("2 3 vs 1", 2),
        ("1 5 vs 2", 2),
        ("1 vs 1 to 1", 3),
        ("1 vs 1 to 2", 3),
        ("2 vs 1 to 1", 2),
        ("1 6 vs 1 to 2", 2),
    ],
)
def test_d6_contests_and_seesaws_every_round(text: str, rounds: int) -> None:
    request = replace(build(D6, text), max_rounds=rounds)
    assert D6.odds(request).table == contest_by_enumeration(request)


def test_d6_contest_at_the_real_round_limit() -> None:
    request = build(D6, "3 vs 3")
    dist = D6.odds(request)
    # symmetric: the attacker wins exactly when the defender would; ties up to 100 rounds remain
    nets = odds.convolve(
        {k: comb(3, k) * 3**3 for k in range(4)}, {-k: comb(3, k) * 3**3 for k in range(4)}
    )
    ties = Fraction(nets[0], 6**6)
    assert dist.outcomes["success"] == (1 - ties**100) / 2
    assert dist.outcomes["failure"] == (1 + ties**100) / 2


def test_d6_roll_mean_is_linear() -> None:
    for pool, difficulty in ((100, 4), (37, 6), (12, 2)):
        dist = D6.odds(build(D6, f"{pool} {difficulty}"))
        assert dist.mean == Fraction(pool * (7 - difficulty), 6)


# --- the documented examples ----------------------------------------------------------------------


@pytest.mark.parametrize("variant", [REVISED, CROSSOVER, LAIA, V5, D6], ids=lambda v: v.name)
def test_documented_odds_examples(variant: Variant[Any, Any]) -> None:
    """The "Odds examples" table of docs/rules/<variant>.md, every chance exactly."""
    for row in table(variant.name, "Odds examples"):
        house = {} if row["house rule"] == "-" else {row["house rule"]: True}
        dist = variant.odds(build(variant, row["roll"].strip("`"), **house))
        chance = Fraction(row["chance"])
        if row["successes"] == "any":
            assert dist.outcomes[row["outcome"]] == chance, row
        else:
            assert dist.table.get((row["outcome"], int(row["successes"])), 0) == chance, row
