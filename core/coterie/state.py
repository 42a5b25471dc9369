"""State storage behind a small async key-value interface.

Core keeps room settings and rule state (e.g. a used free botch) here; plugins get the same API
through ``app.state``. The in-memory store is the default of this release; persistent stores
implement the same :class:`StateStore` protocol.
"""

from __future__ import annotations

import asyncio
import copy
import json
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class StateStore(Protocol):
    """Async key-value storage of JSON-compatible values, by namespace and key."""

    async def get(self, namespace: str, key: str) -> Any | None:
        """The stored value, or ``None``."""
        ...

    async def set(self, namespace: str, key: str, value: Any) -> None:
        """Store ``value`` (JSON-compatible) under ``namespace``/``key``."""
        ...

    async def delete(self, namespace: str, key: str) -> None:
        """Remove the value, if any."""
        ...

    async def close(self) -> None:
        """Release resources."""
        ...


class MemoryStore:
    """A process-local store: state lasts as long as the process."""

    def __init__(self) -> None:
        self._data: dict[tuple[str, str], Any] = {}
        self._lock = asyncio.Lock()

    async def get(self, namespace: str, key: str) -> Any | None:
        value = self._data.get((namespace, key))
        return copy.deepcopy(value)

    async def set(self, namespace: str, key: str, value: Any) -> None:
        json.dumps(value)  # the same values a persistent store can keep
        async with self._lock:
            self._data[(namespace, key)] = copy.deepcopy(value)

    async def delete(self, namespace: str, key: str) -> None:
        async with self._lock:
            self._data.pop((namespace, key), None)

    async def close(self) -> None:
        self._data.clear()


class RoomState:
    """A view of the store scoped to one room and one owner (a plugin or rule set)."""

    def __init__(self, store: StateStore, owner: str, room_key: str) -> None:
        self._store = store
        self._namespace = f"{owner}:{room_key}"

    async def get(self, key: str, default: Any = None) -> Any:
        value = await self._store.get(self._namespace, key)
        return default if value is None else value

    async def set(self, key: str, value: Any) -> None:
        await self._store.set(self._namespace, key, value)

    async def delete(self, key: str) -> None:
        await self._store.delete(self._namespace, key)
