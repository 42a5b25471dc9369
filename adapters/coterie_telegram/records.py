"""Small bounded records in the app's state store: the update ids already seen (each update is
answered once) and the buttons of recent replies.

Each :class:`ExpiringRecord` is *one* value in the :class:`~coterie.state.StateStore` (a JSON
object of entries), so its size is bounded however long the bot runs, also in a persistent
store: entries expire after ``ttl`` seconds and the oldest go first beyond ``max_entries``.
Reads and writes of one record are serialised by a lock, so within one process a check-and-set
(:meth:`ExpiringRecord.add`, :meth:`ExpiringRecord.pop`) is atomic.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from coterie.state import StateStore


class ExpiringRecord:
    """Entries ``key → value`` kept ``ttl`` seconds, at most ``max_entries`` of them."""

    def __init__(
        self,
        store: StateStore,
        namespace: str,
        key: str,
        *,
        ttl: float,
        max_entries: int,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if ttl <= 0 or max_entries < 1:
            raise ValueError("ttl and max_entries must be positive")
        self._store = store
        self._namespace = namespace
        self._key = key
        self._ttl = ttl
        self._max = max_entries
        self._clock = clock
        self._lock = asyncio.Lock()

    async def _load(self, now: float) -> dict[str, list[Any]]:
        """The live entries, oldest first: ``{key: [expires_at, value]}``."""
        stored = await self._store.get(self._namespace, self._key)
        entries: dict[str, list[Any]] = {}
        if isinstance(stored, dict):
            for key, entry in stored.items():
                if (
                    isinstance(entry, list)
                    and len(entry) == 2
                    and isinstance(entry[0], int | float)
                    and entry[0] > now
                ):
                    entries[str(key)] = entry
        return entries

    async def _save(self, entries: dict[str, list[Any]]) -> None:
        while len(entries) > self._max:
            del entries[next(iter(entries))]
        if entries:
            await self._store.set(self._namespace, self._key, entries)
        else:
            await self._store.delete(self._namespace, self._key)

    async def add(self, key: str, value: Any = True) -> bool:
        """Store ``value`` under ``key`` unless a live entry is there; true if it was stored."""
        async with self._lock:
            now = self._clock()
            entries = await self._load(now)
            if key in entries:
                return False
            entries[key] = [now + self._ttl, value]
            await self._save(entries)
            return True

    async def get(self, key: str) -> Any | None:
        """The live value under ``key``, or ``None``."""
        async with self._lock:
            entry = (await self._load(self._clock())).get(key)
        return None if entry is None else entry[1]

    async def pop(self, key: str) -> Any | None:
        """Remove and return the live value under ``key`` (``None`` if there is none): only one
        of several callers racing for the same key gets it."""
        async with self._lock:
            entries = await self._load(self._clock())
            entry = entries.pop(key, None)
            if entry is not None:
                await self._save(entries)
        return None if entry is None else entry[1]

    async def size(self) -> int:
        """How many live entries there are."""
        async with self._lock:
            return len(await self._load(self._clock()))
