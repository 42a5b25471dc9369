"""What a ``crossover`` roll asks for: the requests rolls are built into, shared by the rule set
(:mod:`coterie_crossover.variant`) and its odds (:mod:`coterie_crossover.odds`)."""

from __future__ import annotations

from coterie.framework.grammar import Parsed, Pool
from coterie.records import dataclass
from coterie.rulekit import pools
from coterie_crossover import rules


@dataclass(frozen=True)
class Side:
    """One side of a roll as asked for."""

    written: Pool
    pool: int
    difficulty: int
    willpower: bool = False
    progress: int = 0

    @property
    def trait(self) -> str | None:
        """The one Trait the pool is, if it was written by name (``rage 6``; from a sheet,
        ``Gnosis`` or ``Wits-1``): ``None`` for a pool that adds Traits (``Dexterity+Athletics``),
        which the line under the roll spells out."""
        named = [term for term in self.written.terms if term.trait and not term.modifier]
        return named[0].trait if len(named) == 1 and named[0] is self.written.terms[0] else None


@dataclass(frozen=True)
class CrossoverRequest:
    actor: Side
    automatic: bool = False
    target: int | None = None
    versus: Side | None = None

    @property
    def dice(self) -> int:
        own = 0 if self.automatic else self.actor.pool
        return own + (self.versus.pool if self.versus else 0)


def side(parsed: Parsed, default_difficulty: int) -> Side:
    """One side of a roll from parsed words: the checked pool, difficulty and Willpower."""
    written = parsed.pool()
    pool = pools.checked_pool(
        written,
        max_traits=rules.MAX_TRAITS_IN_POOL,
        ten_point_traits=rules.TEN_POINT_TRAITS,
    )
    assert written is not None  # checked_pool refuses a missing pool
    difficulty = parsed.int("difficulty") or default_difficulty
    return Side(
        written,
        pool,
        difficulty,
        willpower=parsed.flag("willpower"),
        progress=parsed.int("progress") or 0,
    )
