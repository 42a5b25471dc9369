"""Exact odds: the distribution a rule set's :meth:`~coterie.rules.Variant.odds` returns, the exact
machinery the rule sets share, the cache and the off-loop helper, and the two ways a distribution is
shown: the compact chat answer (with a text histogram) and a PNG bar chart.

Exact means exact. Nothing here samples. A rule set counts **face tuples**: a pool of ``n`` dice
with ``s`` sides has ``s ** n`` equally likely tuples, and a distribution is "how many tuples give
each result" over that total, turned into :class:`~fractions.Fraction` probabilities at the end.

The counting is done with polynomials whose coefficients are numbers of tuples (``x ** k`` stands
for "the value is k"): one die is a small polynomial, a pool is its ``n``-th power, two independent
parts of a roll multiply. :class:`Poly` packs such a polynomial into a single Python integer, one
fixed-width slot per coefficient (Kronecker substitution), so a convolution is one big-integer
multiplication done in C: 100 dice take well under a millisecond, exactly. See docs/odds.md.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import field
from fractions import Fraction
from math import comb, factorial
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from coterie.errors import UsageError
from coterie.records import dataclass

if TYPE_CHECKING:
    from coterie.framework.variant import Variant

P = ParamSpec("P")
R = TypeVar("R")

# --- exact counting: polynomials packed into one integer ------------------------------------------

#: above this many bits a power is built one factor at a time (see :meth:`Poly.__pow__`)
POW_BITS_LIMIT = 1 << 20
#: a factor of at most this many slots is multiplied in by shifts (see :meth:`Poly.__mul__`)
SPARSE_SLOTS = 12


def bits_for(total: int) -> int:
    """Slot width (in bits, a whole number of bytes) that holds any count up to ``total``."""
    if total < 1:
        raise ValueError("a total number of face tuples is at least 1")
    return (total.bit_length() + 7) // 8 * 8


class Poly:
    """A polynomial with non-negative integer coefficients, ``{exponent: coefficient}``, packed into
    one integer: the coefficient of ``x ** (low + i)`` sits in bits ``[i * bits, (i + 1) * bits)``.

    Sums and products of packed polynomials are sums and products of the integers, as long as no
    coefficient of any result reaches ``2 ** bits`` (a slot would spill into the next). For counts
    of face tuples that is guaranteed by taking ``bits = bits_for(total)``, where ``total`` is the
    number of face tuples of the whole roll: no count can exceed it. All operands of one
    computation share the same ``bits``.
    """

    __slots__ = ("bits", "low", "value")

    def __init__(self, value: int, low: int, bits: int) -> None:
        if value < 0:
            raise ValueError("packed polynomials have non-negative coefficients")
        self.value = value
        self.low = low
        self.bits = bits

    @classmethod
    def of(cls, coefficients: Mapping[int, int], bits: int) -> Poly:
        """Pack ``{exponent: coefficient}`` (every coefficient ``0 <= c < 2 ** bits``)."""
        present = {k: c for k, c in coefficients.items() if c}
        if not present:
            return cls(0, 0, bits)
        low = min(present)
        value = 0
        for exponent in sorted(present, reverse=True):
            coefficient = present[exponent]
            if coefficient < 0 or coefficient.bit_length() > bits:
                raise ValueError(f"coefficient {coefficient} does not fit {bits} bits")
            value |= coefficient << ((exponent - low) * bits)
        return cls(value, low, bits)

    @classmethod
    def one(cls, bits: int) -> Poly:
        return cls(1, 0, bits)

    def _check(self, other: Poly) -> None:
        if other.bits != self.bits:
            raise ValueError("packed polynomials of one computation share one slot width")

    def __add__(self, other: Poly) -> Poly:
        self._check(other)
        if not other.value:
            return self
        if not self.value:
            return other
        low = min(self.low, other.low)
        a = self.value << ((self.low - low) * self.bits)
        b = other.value << ((other.low - low) * self.bits)
        return Poly(a + b, low, self.bits)

    def __sub__(self, other: Poly) -> Poly:
        """The difference; every coefficient of ``other`` must be at most that of ``self``
        (then no slot borrows from the next)."""
        self._check(other)
        if not other.value:
            return self
        low = min(self.low, other.low)
        a = self.value << ((self.low - low) * self.bits)
        b = other.value << ((other.low - low) * self.bits)
        return Poly(a - b, low, self.bits)

    def __mul__(self, other: Poly | int) -> Poly:
        if isinstance(other, int):
            return Poly(self.value * other, self.low, self.bits)
        self._check(other)
        small, big = sorted((self, other), key=lambda p: p.value.bit_length())
        if small.value.bit_length() <= SPARSE_SLOTS * self.bits:
            # a die or two times a pool: shifts and small products, linear in the pool's size
            value = sum(
                (big.value * c) << ((k - small.low) * self.bits)
                for k, c in small.coefficients().items()
            )
            return Poly(value, self.low + other.low, self.bits)
        return Poly(self.value * other.value, self.low + other.low, self.bits)

    def __pow__(self, n: int) -> Poly:
        """The ``n``-th power: ``n`` dice of this one."""
        if n < 0:
            raise ValueError("a negative number of dice")
        terms = {k - self.low: c for k, c in self.coefficients().items()}
        return Poly(_power(terms, n, self.bits), self.low * n, self.bits)

    def shift(self, k: int) -> Poly:
        """Times ``x ** k``: every value moves by ``k``."""
        return Poly(self.value, self.low + k, self.bits)

    def coefficients(self) -> dict[int, int]:
        """``{exponent: coefficient}`` of the non-zero coefficients."""
        if not self.value:
            return {}
        width = self.bits // 8
        slots = (self.value.bit_length() + self.bits - 1) // self.bits
        data = self.value.to_bytes(slots * width, "little")
        out: dict[int, int] = {}
        for index in range(slots):
            coefficient = int.from_bytes(data[index * width : (index + 1) * width], "little")
            if coefficient:
                out[self.low + index] = coefficient
        return out

    def __repr__(self) -> str:
        return f"Poly({self.coefficients()!r})"


def _power(terms: Mapping[int, int], n: int, bits: int) -> int:
    """The packed ``n``-th power of ``sum(c * x ** k)`` (``k >= 0``; ``c`` may be negative, and
    then so may the result be, as an integer). Small results use the built-in ``pow``; big ones
    (hundreds of dice) are built one factor at a time, so that no single C call holds the
    interpreter lock for long while a worker thread computes them."""
    value = sum(c << (k * bits) for k, c in terms.items())
    degree = max(terms, default=0)
    if degree * n * bits <= POW_BITS_LIMIT:
        small: int = value**n
        return small
    result = 1
    for _ in range(n):
        result = sum((result * c) << (k * bits) for k, c in terms.items())
    return result


def parity_split(
    others: Mapping[int, int], marked: Mapping[int, int], n: int, bits: int
) -> tuple[Poly, Poly]:
    """``n`` dice whose faces are ``others`` and ``marked`` (each ``{value: faces}``, values
    ``>= 0``): their count polynomial split by whether an even or an odd number of dice show a
    marked face. The two halves of ``(others + marked) ** n`` and ``(others - marked) ** n``
    (evaluated as integers: the second has negative coefficients, the sum and difference do not;
    ``bits`` must hold twice the largest count)."""
    plus = dict(others)
    minus = dict(others)
    for k, c in marked.items():
        plus[k] = plus.get(k, 0) + c
        minus[k] = minus.get(k, 0) - c
    a, b = _power(plus, n, bits), _power(minus, n, bits)
    even, odd = (a + b) // 2, (a - b) // 2
    return Poly(even, 0, bits), Poly(odd, 0, bits)


def power(kernel: Mapping[int, int], n: int, bits: int | None = None) -> dict[int, int]:
    """The ``n``-fold convolution of a count distribution: ``kernel`` maps a die's value to the
    number of its faces giving it; the result maps a pool's total to its number of face tuples."""
    if bits is None:
        bits = bits_for(sum(kernel.values()) ** n)
    return (Poly.of(kernel, bits) ** n).coefficients()


def convolve(a: Mapping[int, int], b: Mapping[int, int], bits: int | None = None) -> dict[int, int]:
    """The count distribution of the sum of two independent parts of a roll."""
    if bits is None:
        bits = bits_for(sum(a.values()) * sum(b.values()))
    return (Poly.of(a, bits) * Poly.of(b, bits)).coefficients()


def multinomials(n: int, weights: Sequence[int]) -> Iterable[tuple[tuple[int, ...], int]]:
    """Every way to split ``n`` dice among categories of faces: ``(counts, tuples)``, where
    ``weights[i]`` faces fall in category ``i`` and ``tuples`` is how many face tuples have exactly
    those counts. Meant for a handful of dice (Hunger dice, a re-roll), not for whole pools."""

    def split(left: int, index: int) -> Iterable[tuple[int, ...]]:
        if index == len(weights) - 1:
            yield (left,)
            return
        for count in range(left + 1):
            for rest in split(left - count, index + 1):
                yield (count, *rest)

    for counts in split(n, 0):
        ways = factorial(n)
        for count in counts:
            ways //= factorial(count)
        for count, weight in zip(counts, weights, strict=True):
            ways *= weight**count
        if ways:
            yield counts, ways


def rule_of_one(pool: int, difficulty: int) -> tuple[dict[int, int], dict[int, int]]:
    """A d10 pool where a face at or above the difficulty (a 10 always) is a success and each 1
    takes one away: the number of face tuples (out of ``10 ** pool``) by *successes rolled minus
    1s*, in two parts — tuples with at least one success rolled, and tuples with none (whose value
    is minus their number of 1s). What revised, laia and crossover need to count a pool."""
    success = 11 - difficulty  # faces difficulty..10
    other = difficulty - 2  # faces 2..difficulty-1 (a 1 is never a success: difficulty >= 2)
    if not 2 <= difficulty <= 10:
        raise ValueError(f"a d10 difficulty is 2-10, not {difficulty}")
    every = power({-1: 1, 0: other, 1: success}, pool)
    none = {-ones: comb(pool, ones) * other ** (pool - ones) for ones in range(pool + 1)}
    none = {net: ways for net, ways in none.items() if ways}
    rolled = {net: ways - none.get(net, 0) for net, ways in every.items()}
    return {net: ways for net, ways in rolled.items() if ways}, none


# --- the distribution -----------------------------------------------------------------------------

Key = tuple[str, int]


@dataclass(frozen=True)
class Distribution:
    """The exact distribution of the result of one request.

    ``counts`` maps ``(outcome, successes)`` — the ``outcome`` word and the ``successes`` value
    exactly as ``coterie roll --json`` reports them — to the number of equally likely cases (face
    tuples) that give it, out of ``total``; :attr:`table` has the probabilities as fractions.
    ``names`` lists every outcome the rule set can return for the request, in display order;
    ``wins`` those of them that count as a success. ``events`` are further labelled chances a rule
    set adds (who prevails in a resisted roll, reaching an extended target).
    """

    variant: str
    #: what was asked, in words, e.g. ``7 dice, difficulty 6``
    roll: str
    names: tuple[str, ...]
    counts: Mapping[Key, int]
    total: int
    wins: frozenset[str] = frozenset({"success"})
    events: tuple[tuple[str, Fraction], ...] = ()
    #: a note shown under the answer (a reading the odds rest on)
    note: str = ""
    #: outcome name -> its flags (``critical``, ``messy``, ``botch``, ``exceptional``), as the
    #: rule set declares them (``Variant.outcome_kinds``); charts colour bars by them
    flags: Mapping[str, frozenset[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        counted = sum(self.counts.values())
        if counted != self.total or any(count < 0 for count in self.counts.values()):
            raise ValueError(f"{self.variant}: the counts add up to {counted}, not {self.total}")
        unknown = {name for name, _ in self.counts if name not in self.names}
        if unknown:
            raise ValueError(f"{self.variant}: outcomes {sorted(unknown)} not among {self.names}")
        if any(not count for count in self.counts.values()):
            object.__setattr__(self, "counts", {k: c for k, c in self.counts.items() if c})

    @functools.cached_property
    def table(self) -> dict[Key, Fraction]:
        """``(outcome, successes)`` -> exact probability, in key order (zeros left out)."""
        return {key: Fraction(count, self.total) for key, count in sorted(self.counts.items())}

    def chance(self, count: int) -> Fraction:
        """``count`` cases as an exact probability."""
        return Fraction(count, self.total)

    def share(self, count: int) -> float:
        """``count`` cases as the nearest float (no fraction is reduced: fast for huge totals)."""
        return count / self.total

    def outcome_counts(self) -> dict[str, int]:
        """Every outcome name (zeros included), in display order, with its number of cases."""
        out = dict.fromkeys(self.names, 0)
        for (name, _), count in self.counts.items():
            out[name] += count
        return out

    @property
    def outcomes(self) -> dict[str, Fraction]:
        """Every outcome name (zeros included), in display order, with its probability."""
        return {name: self.chance(count) for name, count in self.outcome_counts().items()}

    @property
    def successes(self) -> dict[int, Fraction]:
        """The ``successes`` value -> probability, lowest first (impossible values left out)."""
        return {value: self.chance(ways) for value, ways in self.success_counts().items()}

    def successes_sum(self) -> int:
        """The ``successes`` values summed over every case (the mean times :attr:`total`)."""
        return sum(value * count for (_, value), count in self.counts.items())

    @property
    def mean(self) -> Fraction:
        """The expected ``successes`` value."""
        return self.chance(self.successes_sum())

    @property
    def win(self) -> Fraction:
        """The chance of an outcome in :attr:`wins`."""
        return self.chance(self.win_count())

    def win_count(self) -> int:
        """The cases with an outcome in :attr:`wins`."""
        return sum(count for (name, _), count in self.counts.items() if name in self.wins)

    def success_counts(self) -> dict[int, int]:
        """The ``successes`` value -> number of cases (out of :attr:`total`), lowest first."""
        out: dict[int, int] = {}
        for (_, value), count in self.counts.items():
            out[value] = out.get(value, 0) + count
        return dict(sorted(out.items()))

    def most_likely(self, count: int = 3) -> list[tuple[int, Fraction]]:
        """The ``count`` most likely ``successes`` values, most likely first (ties: lower first)."""
        return [(value, self.chance(ways)) for value, ways in self.ranked(count)]

    def ranked(self, count: int) -> list[tuple[int, int]]:
        """The ``count`` most likely ``successes`` values with their numbers of cases."""
        ranked = sorted(self.success_counts().items(), key=lambda item: (-item[1], item[0]))
        return ranked[:count]

    def percent(self, count: int) -> str:
        """``count`` cases as a percentage for people (see :func:`percent`)."""
        return _percent(count == 0, count == self.total, self.share(count))

    def as_json(self) -> dict[str, Any]:
        """The machine interface object of ``coterie odds --json`` (see docs/odds.md)."""
        data: dict[str, Any] = {
            "variant": self.variant,
            "outcomes": {name: self.share(c) for name, c in self.outcome_counts().items()},
            "successes": {str(v): self.share(c) for v, c in self.success_counts().items()},
            "mean": self.share(self.successes_sum()),
        }
        if self.events:
            data["events"] = {label: float(p) for label, p in self.events}
        return data


def certain(variant: str, roll: str, names: Sequence[str], key: Key) -> Distribution:
    """A result with no dice rolled (an automatic success): one key with probability 1."""
    return Distribution(variant, roll, tuple(names), {key: 1}, 1)


def joint_events(
    actor: Distribution,
    opponent: Distribution,
    verdict: Callable[[Key, Key], str],
    labels: Mapping[str, str],
) -> tuple[tuple[str, Fraction], ...]:
    """Chances of the verdicts of two independent rolls (a resisted roll, a contest): ``verdict``
    names the result of one pair of ``(outcome, successes)`` keys; ``labels`` gives each verdict's
    words, in the order shown."""
    ways = dict.fromkeys(labels, 0)
    for a, ca in actor.counts.items():
        for b, cb in opponent.counts.items():
            ways[verdict(a, b)] += ca * cb
    total = actor.total * opponent.total
    return tuple((labels[name], Fraction(count, total)) for name, count in ways.items())


# --- rule sets that change the rules --------------------------------------------------------------


def require_rules(variant: Variant[Any, Any], owner: type, *methods: str) -> None:
    """Refuse odds for a rule set that inherits ``owner``'s odds but counts rolls differently (a
    house-rule subclass overriding ``evaluate``, say): the odds would describe the wrong rules."""
    for method in methods or ("evaluate", "roll", "build"):
        if getattr(type(variant), method) is not getattr(owner, method):
            raise UsageError(
                f"the {variant.name} rules count rolls their own way, and have no odds of their "
                "own yet"
            )


# --- the cache and the event loop -----------------------------------------------------------------

#: results kept per cached function (a 100-dice result is some kilobytes, 1000 dice a few MB)
CACHE_SIZE = 128
_CACHES: list[Any] = []


def cached(function: Callable[P, R]) -> Callable[P, R]:
    """A bounded LRU cache (``functools.lru_cache``) for a pure odds function of hashable
    arguments; :func:`clear_cache` empties every such cache (benchmarks measure cold runs)."""
    wrapper = functools.lru_cache(maxsize=CACHE_SIZE)(function)
    _CACHES.append(wrapper)
    return wrapper  # type: ignore[return-value]


def clear_cache() -> None:
    for cache in _CACHES:
        cache.cache_clear()


async def off_loop(function: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """Run an odds computation (or a chart) in a worker thread, so that a big pool never stalls
    the bot: the event loop keeps serving other rooms meanwhile. A cached answer comes back in
    microseconds either way; the thread hop costs far less than a millisecond."""
    return await asyncio.to_thread(function, *args, **kwargs)


# --- the chat answer ------------------------------------------------------------------------------


def percent(chance: Fraction | float) -> str:
    """``68.4%``; never rounds a possible result to 0% or a not-quite-certain one to 100%."""
    return _percent(chance == 0, chance == 1, float(chance))


def _percent(impossible: bool, certain: bool, chance: float) -> str:
    if impossible:
        return "0%"
    if certain:
        return "100%"
    value = chance * 100
    if value < 0.1:
        return "<0.1%"
    if value > 99.9:
        return ">99.9%"
    return f"{value:.1f}%"


__all__ = [
    "CACHE_SIZE",
    "Distribution",
    "Poly",
    "bits_for",
    "cached",
    "certain",
    "clear_cache",
    "convolve",
    "joint_events",
    "multinomials",
    "off_loop",
    "parity_split",
    "percent",
    "power",
    "require_rules",
    "rule_of_one",
]
