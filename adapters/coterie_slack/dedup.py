"""Each Slack delivery is answered once, however often Slack sends it.

Slack re-sends an event it believes was not acknowledged in time (HTTP: ``X-Slack-Retry-Num``;
Socket Mode: a new envelope with ``retry_attempt``), with the same ``event_id``. Slash commands
and button presses carry a ``trigger_id`` unique to the interaction. :func:`delivery_key` picks
that id and :class:`RecentDeliveries` remembers it in the app's state store for an hour, so a
retry, or the same payload arriving twice, is acknowledged and not answered again (also across
restarts or several bot processes when the store is shared).

Memory is bounded: all ids live in one record that drops ids older than the window, and the
oldest ones beyond ``max_ids``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import Any

from coterie.state import StateStore

NAMESPACE = "slack.events"
KEY = "recent"
#: how long an id is remembered; Slack retries within minutes
WINDOW_SECONDS = 3600.0
MAX_IDS = 10_000


def delivery_key(body: Mapping[str, Any]) -> str | None:
    """The id that identifies one delivery from Slack, or ``None`` (nothing to de-duplicate,
    e.g. ``url_verification``)."""
    event_id = body.get("event_id")
    if isinstance(event_id, str) and event_id:
        return f"event:{event_id}"
    trigger_id = body.get("trigger_id")
    if isinstance(trigger_id, str) and trigger_id:
        return f"trigger:{trigger_id}"
    return None


class RecentDeliveries:
    """Ids seen in the last ``window`` seconds, kept in a :class:`StateStore`."""

    def __init__(
        self,
        store: StateStore,
        *,
        window: float = WINDOW_SECONDS,
        max_ids: int = MAX_IDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._window = window
        self._max_ids = max_ids
        self._clock = clock
        self._lock = asyncio.Lock()

    async def first_time(self, key: str) -> bool:
        """Remember ``key``; true unless it was already seen within the window."""
        async with self._lock:
            now = self._clock()
            stored = await self._store.get(NAMESPACE, KEY)
            recent: dict[str, float] = {
                k: float(t)
                for k, t in (stored or {}).items()
                if isinstance(t, int | float) and now - float(t) < self._window
            }
            if key in recent:
                return False
            recent[key] = now
            if len(recent) > self._max_ids:
                newest = sorted(recent.items(), key=lambda item: item[1])[-self._max_ids :]
                recent = dict(newest)
            await self._store.set(NAMESPACE, KEY, recent)
            return True
