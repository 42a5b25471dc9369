"""A process-local transaction as an ``async with`` (a class, not a generator: the memory store
opens one for every command), with its room's lock."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class LockedScope(Generic[T]):
    """Waits for the ``lock`` key's lock (none for ``""``), opens a transaction with ``begin``;
    on a clean exit hands it to ``commit`` (which must not await: no other task then sees half
    of its writes), else drops it. A key's lock is forgotten when nobody holds or waits for it.

    The locks are a table kept by the store: a key is in it while someone holds its lock, with
    the futures of those waiting for it, first come first served (what :class:`asyncio.Lock`
    does, without making one for every transaction: an uncontended room costs a dict entry)."""

    __slots__ = ("_begin", "_commit", "_held", "_lock", "_locks", "_tx")

    def __init__(
        self,
        locks: dict[str, list[asyncio.Future[None]]],
        lock: str,
        begin: Callable[[], T],
        commit: Callable[[T], None],
    ) -> None:
        self._locks, self._lock, self._begin, self._commit = locks, lock, begin, commit
        self._held = False

    async def __aenter__(self) -> T:
        key = self._lock
        if key:
            waiting = self._locks.get(key)
            if waiting is None:
                self._locks[key] = []  # held, and nobody waits
            else:
                turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
                waiting.append(turn)
                try:
                    await turn  # the holder hands the lock over by setting its result
                except BaseException:
                    if turn.done() and not turn.cancelled():
                        self._hand_over()  # it came as this task was cancelled: pass it on
                    elif turn in waiting:
                        waiting.remove(turn)
                    raise
            self._held = True
        try:
            self._tx = self._begin()
        except BaseException:
            self._release()
            raise
        return self._tx

    async def __aexit__(self, kind: object, error: object, trace: object) -> None:
        try:
            if kind is None:
                self._commit(self._tx)
        finally:
            self._release()

    def _release(self) -> None:
        if self._held:
            self._held = False
            self._hand_over()

    def _hand_over(self) -> None:
        """Give the lock to the first task still waiting for it, else forget it."""
        waiting = self._locks[self._lock]
        while waiting:
            turn = waiting.pop(0)
            if not turn.done():  # (a cancelled waiter's turn is done: skipped)
                turn.set_result(None)
                return
        del self._locks[self._lock]
