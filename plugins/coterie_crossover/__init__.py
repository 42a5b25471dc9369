"""The ``crossover`` rule set: the crossover World of Darkness chronicle (shared/seeds/004_2bcbd9c2ecee7c36.txt; see docs/rules/crossover.md)."""

from __future__ import annotations

from typing import Any

from coterie import hookimpl
from coterie.rules import Variant


@hookimpl
def coterie_variants() -> list[Variant[Any, Any]]:
    return []
