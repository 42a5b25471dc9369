"""What a ``laia`` roll asks for: the requests rolls are built into, shared by the rule set
(:mod:`coterie_laia.variant`) and its odds (:mod:`coterie_laia.odds`)."""

from __future__ import annotations

from coterie.framework.grammar import Pool
from coterie.records import dataclass


@dataclass(frozen=True)
class Side:
    """One side of a throw as asked for."""

    written: Pool
    pool: int
    difficulty: int
    specialty: bool = False
    progress: int = 0


@dataclass(frozen=True)
class LaiaRequest:
    actor: Side
    #: the difficulty before trying again raised it
    base_difficulty: int
    retry: int = 0
    target: int | None = None
    versus: Side | None = None
    botch_wipes: bool = True

    @property
    def dice(self) -> int:
        return self.actor.pool + (self.versus.pool if self.versus else 0)
