"""The ``d6`` rule set: the six-sided Vampire variant (shared/seeds/001_6870bc963805db50.txt; see docs/rules/d6.md)."""

from __future__ import annotations

from typing import Any

from coterie import hookimpl
from coterie.rules import Variant


@hookimpl
def coterie_variants() -> list[Variant[Any, Any]]:
    return []
