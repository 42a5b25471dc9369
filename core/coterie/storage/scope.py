"""A process-local transaction as an ``async with`` (a class, not a generator: the memory store
opens one for every command)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class LockedScope(Generic[T]):
    """Waits for the ``lock`` key's lock (none for ``""``), opens a transaction with ``begin``;
    on a clean exit hands it to ``commit`` (which must not await: no other task then sees half
    of its writes), else drops it. A key's lock is forgotten when nobody holds or waits for it."""

    __slots__ = ("_begin", "_commit", "_held", "_lock", "_locks", "_tx")

    def __init__(
        self,
        locks: dict[str, asyncio.Lock],
        lock: str,
        begin: Callable[[], T],
        commit: Callable[[T], None],
    ) -> None:
        self._locks, self._lock, self._begin, self._commit = locks, lock, begin, commit
        self._held: asyncio.Lock | None = None

    async def __aenter__(self) -> T:
        if self._lock:
            held = self._locks.get(self._lock)
            if held is None:
                held = self._locks[self._lock] = asyncio.Lock()
            await held.acquire()
            self._held = held
        self._tx = self._begin()
        return self._tx

    async def __aexit__(self, kind: object, error: object, trace: object) -> None:
        try:
            if kind is None:
                self._commit(self._tx)
        finally:
            held = self._held
            if held is not None:
                held.release()
                if not held.locked() and not getattr(held, "_waiters", None):
                    self._locks.pop(self._lock, None)
