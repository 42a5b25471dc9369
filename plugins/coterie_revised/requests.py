"""What a ``revised`` roll asks for: the request each roll is built into (one side of it, and the
whole request), shared by the rule set (:mod:`coterie_revised.variant`) and its odds
(:mod:`coterie_revised.odds`)."""

from __future__ import annotations

from coterie.framework.grammar import Pool
from coterie.records import dataclass, once


@dataclass(frozen=True)
class Side:
    """One side of a roll as asked for."""

    written: Pool
    pool: int
    difficulty: int
    willpower: bool = False
    progress: int = 0


@dataclass(frozen=True)
class RevisedRequest:
    actor: Side
    base_difficulty: int
    automatic: bool = False
    actions: int = 1
    action: int = 1
    retry: int = 0
    target: int | None = None
    versus: Side | None = None
    willpower_cancellable: bool = False
    botch_wipes: bool = True

    @once
    def dice(self) -> int:
        own = 0 if self.automatic else self.actor.pool
        return own + (self.versus.pool if self.versus else 0)
