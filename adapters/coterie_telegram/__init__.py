"""The Telegram adapter (python-telegram-bot): long polling or a webhook (see
docs/platforms/telegram.md)."""

from __future__ import annotations

from coterie import hookimpl
from coterie.framework.adapter import Adapter
from coterie_telegram.adapter import TelegramAdapter

__all__ = ["TelegramAdapter"]


@hookimpl
def coterie_adapters() -> list[type[Adapter]]:
    return [TelegramAdapter]
