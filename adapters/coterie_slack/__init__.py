"""The Slack adapter (slack-bolt): Socket Mode and HTTP Events API (see docs/platforms/slack.md)."""

from __future__ import annotations

from coterie import hookimpl
from coterie.framework.adapter import Adapter
from coterie_slack.adapter import SlackAdapter

__all__ = ["SlackAdapter"]


@hookimpl
def coterie_adapters() -> list[type[Adapter]]:
    return [SlackAdapter]
