"""coterie-cofd: the Chronicles of Darkness rule set (``cofd``) as a coterie plugin."""

from __future__ import annotations

from typing import Any

from coterie import hookimpl
from coterie.framework.variant import Variant
from coterie_cofd.requests import CofdRequest
from coterie_cofd.variant import CofdOutcome, CofdVariant

__all__ = ["CofdOutcome", "CofdRequest", "CofdVariant"]


@hookimpl
def coterie_variants() -> list[Variant[Any, Any]]:
    return [CofdVariant()]
