"""The Telegram adapter (see docs/platforms/telegram.md)."""

from __future__ import annotations

from coterie import hookimpl
from coterie.adapters import Adapter


@hookimpl
def coterie_adapters() -> list[type[Adapter]]:
    return []
