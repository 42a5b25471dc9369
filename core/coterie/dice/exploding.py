"""Odds of exploding dice: pools whose dice add dice (a 10 that is rolled again, and again).

Such a roll has no largest number of dice, so its distribution has an unbounded tail. The engine
takes it exactly up to a depth and leaves out the rest, choosing the depth so that what is left
out is less likely than a bound (:data:`TAIL_BOUND`, 1e-12, by default), and says so:
:class:`Exploded` carries the depth and an upper bound of the probability left out, and the
distribution a rule set builds from it is the kept part, renormalised (every probability is off
by a relative error below the bound).

How it counts, without enumerating anything. Each die of the pool starts a *chain*: when it
explodes it adds a die, which may explode in turn. Across the whole pool every chain ends with
exactly one die that does not explode, so with ``h`` chains under way the number ``j`` of
further explosions follows a negative binomial law — ``C(h + j - 1, j) * e ** j`` cases out of
``sides ** j`` times the ``h`` ending dice — independently of what the ending dice show. The
values add up: ``gain`` per explosion plus the ending dice's values (a polynomial power). The
pool's own dice may behave differently from the dice they add (a *first* die: a failed die
re-rolled once, say), so they are counted apart, by how many of them explode. Every count is an
exact integer; :class:`~coterie.dice.odds.Poly` does the multiplications.
"""

from __future__ import annotations

from collections.abc import Mapping
from math import comb

from coterie.dice.odds import Poly, bits_for
from coterie.records import dataclass

#: the default bound of the probability an exploding roll's odds leave out
TAIL_BOUND = 1e-12


@dataclass(frozen=True)
class ExplodingDie:
    """One kind of die: ``sides`` equally likely cases, of which ``explode`` count ``gain`` and
    add a die (an ordinary one, see :func:`exploding_pool`), and ``stop[value]`` count ``value``
    and add nothing. ``explode + sum(stop.values())`` must be ``sides``."""

    sides: int
    explode: int
    stop: Mapping[int, int]
    gain: int = 1

    def __post_init__(self) -> None:
        if self.explode < 0 or any(c < 0 for c in self.stop.values()):
            raise ValueError("case counts are never negative")
        if self.explode + sum(self.stop.values()) != self.sides:
            raise ValueError(
                f"{self.explode} exploding and {sum(self.stop.values())} other cases "
                f"are not the {self.sides} sides"
            )
        if self.explode == self.sides:
            raise ValueError("a die that always explodes never stops")


@dataclass(frozen=True)
class Exploded:
    """An exploding pool's distribution: ``counts[value]`` cases out of ``total`` (the kept
    part), explosions beyond ``depth`` added dice left out, together less likely than
    ``left_out`` (at most the bound asked for)."""

    counts: dict[int, int]
    total: int
    depth: int
    left_out: float

    def note(self) -> str:
        """One line for people: what was left out."""
        if not self.left_out:
            return ""
        return (
            f"exploding dice counted up to {self.depth} added dice; the rest, "
            f"less likely than {self.left_out:.0e}, is left out"
        )


def _depth(chains: int, die: ExplodingDie, bound: float) -> tuple[int, float]:
    """The fewest further explosions ``J`` such that more than ``J`` of them, with ``chains``
    chains under way, is less likely than ``bound``; and that tail's probability."""
    if chains == 0 or die.explode == 0:
        return 0, 0.0
    p = die.explode / die.sides
    term = (1 - p) ** chains  # P(j = 0)
    kept = term
    j = 0
    while 1.0 - kept >= bound or j < 1:
        j += 1
        term *= (chains + j - 1) / j * p
        kept += term
        if j > 100_000:  # pragma: no cover - only for bounds below float precision
            raise ValueError(f"cannot reach a tail below {bound}")
    # the float sum can be a few ulps off: bound the tail by the next terms' geometric sum
    tail = max(1.0 - kept, 0.0)
    return j, tail


def exploding_pool(
    dice: int,
    die: ExplodingDie,
    *,
    first: ExplodingDie | None = None,
    bound: float = TAIL_BOUND,
) -> Exploded:
    """The distribution of the total value of a pool of ``dice`` dice of kind ``first`` (default
    ``die``), each explosion adding a die of kind ``die``, up to the depth where what is left
    out is less likely than ``bound``."""
    if dice < 0:
        raise ValueError("a pool has no fewer than 0 dice")
    if not 0 < bound < 1:
        raise ValueError("the bound is a probability between 0 and 1")
    head = first or die
    depth, tail = _depth(dice, die, bound)
    # every count over head.sides ** dice * die.sides ** (dice + depth): exact integers
    total = head.sides**dice * die.sides ** (dice + depth)
    bits = bits_for(total)
    ending = Poly.of(dict(die.stop), bits)
    if first is None:  # every die of the pool starts a chain: one negative binomial
        chain = {
            j * die.gain: comb(dice + j - 1, j) * die.explode**j * die.sides ** (depth - j)
            for j in range(depth + 1)
        }
        counts = Poly.of(chain, bits) * ending**dice
        found = counts.coefficients()
        return Exploded(found, sum(found.values()), depth, tail)
    # the pool's own dice by how many of them explode (h), each with its h chains
    stops = [Poly.of({0: 1}, bits)]
    head_stop = Poly.of(dict(head.stop), bits)
    for _ in range(dice):
        stops.append(stops[-1] * head_stop)
    endings = Poly.of({0: 1}, bits)
    counts = Poly(0, 0, bits)
    for h in range(dice + 1):
        if h:
            endings = endings * ending
        heads = Poly.of({h * head.gain: comb(dice, h) * head.explode**h}, bits) * stops[dice - h]
        if not heads.value:
            continue
        # the h chains: j more explosions (j <= depth), then h ending dice
        chain = {}
        for j in range(depth + 1 if h else 1):
            ways = comb(h + j - 1, j) * die.explode**j if h else 1
            if ways:
                chain[j * die.gain] = ways * die.sides ** (dice - h + depth - j)
        counts = counts + heads * (Poly.of(chain, bits) * endings)
    found = counts.coefficients()
    kept = sum(found.values())
    return Exploded(found, kept, depth, tail)


__all__ = ["TAIL_BOUND", "Exploded", "ExplodingDie", "exploding_pool"]
