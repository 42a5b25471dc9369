"""The ``laia`` rule set: the LAIA community's V20 house rules (shared/seeds/003_612eda57cd93bf24.txt; see docs/rules/laia.md)."""

from __future__ import annotations

from typing import Any

from coterie import hookimpl
from coterie.rules import Variant


@hookimpl
def coterie_variants() -> list[Variant[Any, Any]]:
    return []
