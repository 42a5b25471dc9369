"""Exact odds of the ``v5`` rules (docs/rules/v5.md, "Odds").

What :func:`coterie_v5.rules.judge` looks at is the number of successes — dice at 6 or more, two
more for every pair of 10s — whether there is a pair of 10s, whether a Hunger die shows 10, and
whether a Hunger die shows 1. So the pool is counted by:

* ``V`` = (successes that are not 10s) + 2 × (10s): the successes are then ``V`` less one when the
  number of 10s is odd (a 10 left without a partner counts once);
* the **tens class** — no 10, one 10, an even number of at least two, an odd number of at least
  three — which gives that parity and whether there is a pair;
* whether a Hunger die shows 10, and whether one shows 1;
* for a planned Willpower re-roll, how many regular dice failed (0, 1, 2, or 3 and more).

The regular dice are counted in closed form with packed polynomials: ``(5 + 4x + x²) ** r`` and
``(5 + 4x − x²) ** r`` (``x²`` a 10) give the pools with an even and an odd number of 10s; less
``(5 + 4x) ** r`` (no 10) and ``r x² (5 + 4x) ** (r − 1)`` (one 10), the four tens classes. The
Hunger dice (five at most) are counted by listing their multinomials; the two parts multiply. A
planned re-roll only concerns rolls that do not win — few successes — which are listed count by
count. A Willpower re-roll of the dice of a roll already made is counted over the re-rolled dice's
face categories, each evaluated by the rule itself (:meth:`V5Variant.evaluate`).
"""

from __future__ import annotations

from dataclasses import replace
from itertools import product
from math import comb
from typing import TYPE_CHECKING

from coterie.dice.odds import (
    Distribution,
    Key,
    Poly,
    bits_for,
    cached,
    certain,
    multinomials,
    parity_split,
)
from coterie.errors import UsageError
from coterie.rulekit.pools import plural
from coterie_v5 import rules
from coterie_v5.requests import (
    RerollRequest,
    RouseRequest,
    V5Request,
    difficulty_text,
    side_text,
)

if TYPE_CHECKING:
    from coterie_v5.variant import V5Variant

NAMES = tuple(str(result) for result in rules.Result)
WINS = frozenset({"critical", "messy_critical", "success"})

#: a regular die: 5 failing faces (1-5), 4 plain successes (6-9), one 10
REGULAR = (5, 4, 1)
#: a Hunger die: the 1, 4 other failing faces (2-5), 4 plain successes, one 10
HUNGER = (1, 4, 4, 1)
#: planned re-roll: at most this many failed regular dice are re-rolled
REROLL = rules.REROLL_LIMIT

# --- counting a pool ------------------------------------------------------------------------------

#: tens classes: no 10, one 10, an even number >= 2, an odd number >= 3
NO_TEN, ONE_TEN, EVEN_TENS, ODD_TENS = 0, 1, 2, 3


def tens_class(tens: int) -> int:
    if tens < 2:
        return tens
    return EVEN_TENS if tens % 2 == 0 else ODD_TENS


def combine(a: int, b: int) -> int:
    """The tens class of two parts of a pool together, from the class of each."""
    if a < 2 and b < 2:
        return tens_class(a + b)
    return EVEN_TENS if (a + b) % 2 == 0 else ODD_TENS


def judge(klass: int, hunger_ten: bool, hunger_one: bool, value: int, difficulty: int) -> Key:
    """``(outcome, successes)`` as :func:`rules.judge` reads a roll of this description."""
    successes = value - klass % 2  # a 10 without a partner counts once, not twice
    if rules.wins(successes, difficulty):
        return (win_name(klass, hunger_ten), successes)
    return (loss_name(hunger_one, successes), successes)


def win_name(klass: int, hunger_ten: bool) -> str:
    """A win with a pair of 10s is a critical, messy with a Hunger 10; else a plain success."""
    if klass >= EVEN_TENS:
        return str(rules.Result.MESSY_CRITICAL if hunger_ten else rules.Result.CRITICAL)
    return str(rules.Result.SUCCESS)


def loss_name(hunger_one: bool, successes: int) -> str:
    """A loss with a Hunger 1 is bestial; else total without a success, or a plain failure."""
    if hunger_one:
        return str(rules.Result.BESTIAL_FAILURE)
    return str(rules.Result.TOTAL_FAILURE if successes == 0 else rules.Result.FAILURE)


#: a pool's description: (tens class, a Hunger 10, a Hunger 1)
State = tuple[int, bool, bool]


def regular_dice(count: int, bits: int) -> dict[int, Poly]:
    """Regular dice: ``tens class -> Poly`` over ``V``, in closed form: the halves of
    ``(5 + 4x ± x²) ** count`` by the parity of the 10s, less no 10 and exactly one 10."""
    plain = Poly.of({0: REGULAR[0], 1: REGULAR[1]}, bits)  # a die that is not a 10
    if not count:
        return {NO_TEN: Poly.one(bits)}
    even, odd = parity_split({0: REGULAR[0], 1: REGULAR[1]}, {2: REGULAR[2]}, count, bits)
    fewer = plain ** (count - 1)
    none, one = fewer * plain, fewer.shift(2) * (count * REGULAR[2])
    out = {NO_TEN: none, ONE_TEN: one}
    if count >= 2:
        out[EVEN_TENS] = even - none
        out[ODD_TENS] = odd - one
    return out


def hunger_dice(count: int, bits: int) -> dict[tuple[int, bool], Poly]:
    """Hunger dice: ``(tens class of their 10s, a 1 among them) -> Poly`` over ``V``."""
    groups: dict[tuple[int, bool], dict[int, int]] = {}
    for (one, _failed, plain, ten), ways in multinomials(count, HUNGER):
        group = groups.setdefault((tens_class(ten), one > 0), {})
        group[plain + 2 * ten] = group.get(plain + 2 * ten, 0) + ways
    return {key: Poly.of(counts, bits) for key, counts in groups.items()}


def pool_states(regular: int, hunger: int, total: int) -> dict[State, Poly]:
    """Face tuples of one side's pool by :data:`State`, as a Poly over ``V`` (``total`` fixes the
    slot width: at least every count that will be made of these, twice for the parity split)."""
    bits = bits_for(2 * total)
    own = regular_dice(regular, bits)
    combined: dict[State, Poly] = {}
    for (tens, one), theirs in hunger_dice(hunger, bits).items():
        # regular parts that land in the same state are added first: one product per state
        landing: dict[int, Poly] = {}
        for klass, poly in own.items():
            key = combine(klass, tens)
            landing[key] = landing[key] + poly if key in landing else poly
        for klass, poly in landing.items():
            state: State = (klass, tens > 0, one)
            term = poly * theirs
            combined[state] = combined[state] + term if state in combined else term
    return combined


def low_states(
    regular: int, hunger: int, below: int
) -> dict[tuple[int, bool, bool, int], dict[int, int]]:
    """The pool's face tuples with ``V`` below ``below`` — few successes, the rolls that may not
    win — by state and by failed regular dice (counted up to 3), listed one count at a time."""
    out: dict[tuple[int, bool, bool, int], dict[int, int]] = {}
    hungry: dict[tuple[int, bool, int], int] = {}
    for (one, _failed, plain, ten), ways in multinomials(hunger, HUNGER):
        key = (ten, one > 0, plain + 2 * ten)
        hungry[key] = hungry.get(key, 0) + ways
    for tens in range(min(regular, (below - 1) // 2) + 1):
        for plain in range(min(regular - tens, below - 1 - 2 * tens) + 1):
            failed = regular - tens - plain
            ways = comb(regular, tens) * comb(regular - tens, plain)
            ways *= REGULAR[0] ** failed * REGULAR[1] ** plain * REGULAR[2] ** tens
            for (their_tens, one, their_value), theirs in hungry.items():
                value = plain + 2 * tens + their_value
                if value >= below:
                    continue
                state = (tens_class(tens + their_tens), their_tens > 0, one, min(failed, REROLL))
                values = out.setdefault(state, {})
                values[value] = values.get(value, 0) + ways * theirs
    return out


def by_successes(states: dict[State, Poly]) -> dict[tuple[str, bool], Poly]:
    """The states regrouped by what decides their outcome — the name of a win, and a Hunger 1 —
    as Polys over the *successes* (``V`` less one for an unpaired 10)."""
    out: dict[tuple[str, bool], Poly] = {}
    for (klass, ten, one), poly in states.items():
        key = (win_name(klass, ten), one)
        term = poly.shift(-(klass % 2))
        out[key] = out[key] + term if key in out else term
    return out


def successes_of(pool: int) -> dict[int, int]:
    """Face tuples of ``pool`` dice by their successes (a contest's opposition: its Hunger dice
    count like any other)."""
    out: dict[int, int] = {}
    for poly in by_successes(pool_states(pool, 0, 10**pool)).values():
        for successes, ways in poly.coefficients().items():
            out[successes] = out.get(successes, 0) + ways
    return out


# --- the requests -------------------------------------------------------------------------------


@cached
def roll_odds(regular: int, hunger: int, difficulty: int, plan_reroll: bool) -> Distribution:
    """A roll against a Difficulty; with ``plan_reroll``, as it ends when the player re-rolls up
    to three failed regular dice with Willpower whenever the first roll does not win."""
    least = max(difficulty, 1)  # a win needs the Difficulty, and at least one success
    if plan_reroll:
        return planned_odds(regular, hunger, difficulty)
    total = 10 ** (regular + hunger)
    counts: dict[Key, int] = {}
    for (name, one), poly in by_successes(pool_states(regular, hunger, total)).items():
        for successes, ways in poly.coefficients().items():
            key = (
                (name, successes) if successes >= least else (loss_name(one, successes), successes)
            )
            counts[key] = counts.get(key, 0) + ways
    return Distribution("v5", "", NAMES, counts, total, wins=WINS)


def planned_odds(regular: int, hunger: int, difficulty: int) -> Distribution:
    """The roll's wins as they are; every other roll with failed regular dice re-rolls up to three
    of them. Every case is counted out of ``10 ** (pool + 3)``."""
    first = roll_odds(regular, hunger, difficulty, False)
    counts = {key: ways * 10**REROLL for key, ways in first.counts.items() if key[0] in WINS}
    # a roll that does not win has fewer successes than the Difficulty: V <= Difficulty
    for (klass, ten, one, failed), values in low_states(
        regular, hunger, max(difficulty, 1) + 1
    ).items():
        for value, ways in values.items():
            key = judge(klass, ten, one, value, difficulty)
            if key[0] in WINS:
                continue  # counted with the wins above
            if not failed:
                counts[key] = counts.get(key, 0) + ways * 10**REROLL
                continue
            for (_, plain, tens), again in multinomials(failed, REGULAR):
                after = judge(
                    combine(klass, tens_class(tens)), ten, one, value + plain + 2 * tens, difficulty
                )
                counts[after] = counts.get(after, 0) + ways * again * 10 ** (REROLL - failed)
    total = 10 ** (regular + hunger + REROLL)
    return Distribution("v5", "", NAMES, counts, total, wins=WINS)


@cached
def contest_odds(regular: int, hunger: int, opposing: int) -> Distribution:
    """A contest: the actor wins with at least as many successes as the opposition (and one)."""
    theirs = successes_of(opposing)
    at_most: dict[int, int] = {}  # opposition's tuples with at most s successes
    running = 0
    top = max(theirs)
    for s in range(top + 1):
        running += theirs.get(s, 0)
        at_most[s] = running
    every = 10**opposing
    counts: dict[Key, int] = {}
    states = pool_states(regular, hunger, 10 ** (regular + hunger))
    for (name, one), poly in by_successes(states).items():
        for successes, ways in poly.coefficients().items():
            beaten = at_most[min(successes, top)] if successes > 0 else 0
            for key, share in (
                ((name, successes), beaten),  # the opposition has no more: a win
                ((loss_name(one, successes), successes), every - beaten),
            ):
                if share:
                    counts[key] = counts.get(key, 0) + ways * share
    return Distribution("v5", "", NAMES, counts, 10 ** (regular + hunger + opposing), wins=WINS)


def reroll_odds(variant: V5Variant, request: RerollRequest) -> Distribution:
    """The result after a Willpower re-roll of the chosen dice of a roll already made: every face
    category of the re-rolled dice (failure, 6-9, 10) evaluated by the rule itself."""
    counts: dict[Key, int] = {}
    faces = (1, 6, 10)  # one face of each category, worth REGULAR[i] faces
    for categories in product(range(3), repeat=len(request.indexes)):
        ways = 1
        for category in categories:
            ways *= REGULAR[category]
        outcome = variant.evaluate(request, [faces[c] for c in categories])
        key = (outcome.outcome, outcome.successes)
        counts[key] = counts.get(key, 0) + ways
    dice = plural(len(request.indexes), "die")
    roll = f"re-rolling {dice} ({request.strategy}) of {side_text(request.base.actor)}"
    return Distribution(variant.name, roll, NAMES, counts, 10 ** len(request.indexes), wins=WINS)


def rouse_odds(variant: V5Variant, request: RouseRequest) -> Distribution:
    """Rouse checks: each passes on 6 or more (half the faces); all must pass."""
    counts = {
        ("success" if passed == request.checks else "failure", passed): comb(request.checks, passed)
        * 5**request.checks
        for passed in range(request.checks + 1)
    }
    roll = f"{plural(request.checks, 'rouse check')}"
    return Distribution(variant.name, roll, ("success", "failure"), counts, 10**request.checks)


def odds(
    variant: V5Variant, request: V5Request | RouseRequest | RerollRequest, plan: bool
) -> Distribution:
    """The exact distribution of a v5 request's result (``outcome`` and ``successes``); with
    ``plan``, as it ends if the player re-rolls failures with Willpower when it does not win."""
    if isinstance(request, RerollRequest):
        return reroll_odds(variant, request)
    if isinstance(request, RouseRequest):
        return rouse_odds(variant, request)
    actor = request.actor
    if request.automatic:
        assert request.difficulty is not None
        value = rules.automatic_successes(request.difficulty.value)
        roll = f"{side_text(actor)}, {difficulty_text(request.difficulty)}: an automatic win"
        return replace(certain(variant.name, roll, NAMES, ("success", value)), wins=WINS)
    if request.versus is not None:
        if plan:
            raise UsageError(
                "`reroll` odds are for a roll against a Difficulty: in a contest, whether a "
                "re-roll is worth it depends on the opposition's dice"
            )
        dist = contest_odds(actor.regular_dice, actor.hunger_dice, request.versus.pool)
        roll = f"{side_text(actor)} vs {side_text(request.versus)}"
        win = dist.win  # a win is a result the actor gets with at least the opposition's count
        events = (("you prevail", win), ("the opposition prevails", 1 - win))
        note = "Ties go to you (the actor); the opposition's Hunger does not change its successes."
        return replace(dist, variant=variant.name, roll=roll, events=events, note=note)
    assert request.difficulty is not None
    if plan and actor.tracker is not None:
        raise UsageError(f"Willpower cannot re-roll a tracker roll ({actor.tracker.title()})")
    dist = roll_odds(actor.regular_dice, actor.hunger_dice, request.difficulty.value, plan)
    roll = f"{side_text(actor)}, {difficulty_text(request.difficulty)}"
    note = ""
    if plan:
        roll += ", re-rolling failures with Willpower"
        note = (
            "If the roll does not win, Willpower re-rolls up to three failed regular dice "
            "(never Hunger dice)."
        )
    return replace(dist, variant=variant.name, roll=roll, note=note)
