"""The ``v5`` rule set: Vampire: the Masquerade 5th edition (shared/seeds/002_c21c8b91aa38e6d9.txt; see docs/rules/v5.md)."""

from __future__ import annotations

from typing import Any

from coterie import hookimpl
from coterie.rules import Variant


@hookimpl
def coterie_variants() -> list[Variant[Any, Any]]:
    return []
