"""coterie-cofd: the Chronicles of Darkness rule set (``cofd``) as a coterie plugin."""

from __future__ import annotations

from typing import Any

from coterie import hookimpl
from coterie.dice.exploding import TAIL_BOUND
from coterie.framework.settings import Setting
from coterie.framework.variant import Variant
from coterie_cofd.requests import CofdRequest
from coterie_cofd.variant import CofdOutcome, CofdVariant

__all__ = ["CofdOutcome", "CofdRequest", "CofdVariant"]


@hookimpl
def coterie_variants() -> list[Variant[Any, Any]]:
    return [CofdVariant()]


@hookimpl
def coterie_settings() -> list[Setting]:
    """``[plugins.settings.cofd]``, checked by coterie at start and by ``config check``."""
    return [
        Setting(
            "tail_bound",
            float,
            TAIL_BOUND,
            "the odds of exploding rolls leave out results less likely than this together",
            minimum=1e-15,
            maximum=1e-6,
        )
    ]


@hookimpl
def coterie_startup(app: Any) -> None:
    variant = app.variants.get("cofd")
    if isinstance(variant, CofdVariant):
        variant.tail_bound = float(app.plugin_settings.get("cofd", {}).get("tail_bound"))
