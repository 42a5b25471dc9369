"""Exact odds of the ``cofd`` rules, with the exploding tail (docs/rules/cofd.md, "Odds").

Every die of the pool starts a chain of dice added by the again rule; coterie's engine
(:func:`coterie.dice.exploding.exploding_pool`) counts such pools exactly up to the depth where
what it leaves out is less likely than 1e-12, and says so. A rote action changes only the pool's
own dice: each is a 100-case die (a failed first face is rolled again), whose added dice are
ordinary ones.
"""

from __future__ import annotations

from coterie.dice.exploding import TAIL_BOUND, ExplodingDie, exploding_pool
from coterie.dice.odds import Distribution, Key, cached
from coterie_cofd import rules
from coterie_cofd.requests import CofdRequest

WINS = frozenset({rules.EXCEPTIONAL_SUCCESS, rules.SUCCESS})


def die_kinds(again: int | None, rote: bool) -> tuple[ExplodingDie, ExplodingDie | None]:
    """The ordinary die of the again rule, and the pool's own die of a rote action."""
    explode = 0 if again is None else rules.SIDES + 1 - again
    succeed = rules.SIDES + 1 - rules.TARGET - explode  # successes that add nothing
    fail = rules.TARGET - 1
    die = ExplodingDie(rules.SIDES, explode, {1: succeed, 0: fail})
    if not rote:
        return die, None
    sides = rules.SIDES
    first = ExplodingDie(
        sides * sides,
        explode * sides + fail * explode,
        {1: succeed * sides + fail * succeed, 0: fail * fail},
    )
    return die, first


@cached
def pool_odds(
    pool: int,
    again: int | None,
    rote: bool,
    bound: float = TAIL_BOUND,
    chance_again: bool = False,
) -> Distribution:
    roll = CofdRequest(str(pool), pool, again, rote, chance_again=chance_again).describe()
    if pool <= 0 and chance_again:  # the 10 (1 case of 10) adds a 10-again chain
        chain = exploding_pool(1, die_kinds(10, False)[0], bound=bound)
        found: dict[Key, int] = {
            (rules.FAILURE, 0): (rules.SIDES - 2) * chain.total,
            (rules.DRAMATIC_FAILURE, 0): chain.total,
        }
        for successes, ways in chain.counts.items():
            found[(rules.outcome_of(1 + successes), 1 + successes)] = ways
        total = rules.SIDES * chain.total
        return Distribution(
            "cofd", roll, rules.OUTCOMES, found, total, wins=WINS, note=chain.note()
        )
    if pool <= 0:  # the chance die: 1 case of 10 succeeds, 1 is a dramatic failure
        counts: dict[Key, int] = {
            (rules.SUCCESS, 1): 1,
            (rules.FAILURE, 0): rules.SIDES - 2,
            (rules.DRAMATIC_FAILURE, 0): 1,
        }
        return Distribution("cofd", roll, rules.OUTCOMES, counts, rules.SIDES, wins=WINS)
    die, first = die_kinds(again, rote)
    exploded = exploding_pool(pool, die, first=first, bound=bound)
    counts = {}
    for successes, ways in exploded.counts.items():
        key = (rules.outcome_of(successes), successes)
        counts[key] = counts.get(key, 0) + ways
    return Distribution(
        "cofd", roll, rules.OUTCOMES, counts, exploded.total, wins=WINS, note=exploded.note()
    )


def odds(request: CofdRequest, bound: float = TAIL_BOUND) -> Distribution:
    """The distribution of ``request``'s outcome and successes (the tail below ``bound`` cut)."""
    chance_again = request.chance and request.chance_again
    dist = pool_odds(request.pool, request.again, request.rote, bound, chance_again)
    roll = request.describe()
    if dist.roll == roll:
        return dist
    return Distribution(
        dist.variant, roll, dist.names, dist.counts, dist.total, wins=dist.wins, note=dist.note
    )
