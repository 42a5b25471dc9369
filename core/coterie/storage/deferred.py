"""Writes that land a moment later, many in one transaction (a group commit).

An adapter marks each delivery it answered ("done") so that a redelivery is not answered again.
That mark is one small write per message, and on SQLite every write transaction of a process
queues on the one writer: a transaction of its own per mark costs about as much as the command.
So :class:`DeferredWrites` keeps a mark in memory and writes it

* inside the next transaction the adapter opens anyway (the next message's claim, in that
  command's transaction): :meth:`write_into`, then :meth:`landed` once it committed;
* or, when no such transaction comes within ``delay`` seconds, in one transaction of its own
  holding every mark made meanwhile: :meth:`flush` (also called on shutdown).

Until then :meth:`pending` answers for this process. The platform is acknowledged without
waiting for the mark (its reply is out): a process killed before its marks land leaves claims
that lapse, as any claim of a dead process (see the adapters' records).

A mark rides on one transaction at a time: while the transaction that took it is under way
(with SQLite's group commit, until the group's commit), the transactions that open meanwhile
leave it out. Each would otherwise write every mark not landed yet again — measured under
Slack load, 16 messages in flight: 5 writes of ``slack.events`` a message instead of 2, one
mark written up to 14 times. A transaction that fails hands its marks back
(:meth:`not_landed`); the next one writes them.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
from collections.abc import AsyncIterator
from typing import Any

from coterie.storage.state import StateStore, Transaction

log = logging.getLogger("coterie.storage")

#: seconds a mark waits for a transaction to ride on before it gets one of its own, from when
#: it was put. Nobody waits for a mark (the platform was acknowledged when the reply went out);
#: until it lands another worker finds the delivery's claim held, and a retry Slack or Telegram
#: sends there meanwhile gets 503 and comes again. With PostgreSQL and a loaded machine, 5 ms
#: left 1-23% of the marks of messages in a row to a round trip of their own; 50 ms, 0-11%
DELAY = 0.05
#: after a failed flush, the next try waits this many times ``delay``
RETRY_FACTOR = 20


class DeferredWrites:
    """Pending ``key → value`` writes to one namespace of ``store``."""

    def __init__(self, store: StateStore, namespace: str, *, delay: float | None = None) -> None:
        self._store = store
        self._namespace = namespace
        self._delay = DELAY if delay is None else delay
        self._pending: dict[str, Any] = {}
        #: the pending values a transaction under way has taken (key → value), left out by
        #: the others until it lands or fails
        self._taken: dict[str, Any] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._flushing: asyncio.Task[None] | None = None

    def __len__(self) -> int:
        return len(self._pending)

    def put(self, key: str, value: Any) -> None:
        """Write ``value`` under ``key`` soon (a later :meth:`put` of the key replaces it)."""
        self._pending.pop(key, None)
        self._pending[key] = value
        self._schedule(self._delay)

    def pending(self, key: str) -> Any | None:
        """The value waiting to be written under ``key``, if any."""
        return self._pending.get(key)

    def discard(self, key: str) -> None:
        """Do not write ``key`` after all."""
        self._pending.pop(key, None)

    def _free(self) -> dict[str, Any]:
        """The pending values no transaction under way has taken."""
        taken = self._taken
        if not taken:
            return dict(self._pending)
        return {k: v for k, v in self._pending.items() if taken.get(k, self) is not v}

    async def write_into(self, tx: Transaction) -> dict[str, Any]:
        """Write in ``tx`` (a transaction opened anyway) every pending value that no other
        transaction under way carries; pass what this returns to :meth:`landed` once ``tx``
        has committed, or to :meth:`not_landed` if it did not (or may not have)."""
        batch = self._free()
        self._taken.update(batch)
        try:
            for key, value in batch.items():
                await tx.set(self._namespace, key, value)
        except BaseException:
            self.not_landed(batch)
            raise
        return batch

    def landed(self, batch: dict[str, Any]) -> None:
        """The values of ``batch`` (from :meth:`write_into`) are committed: no longer pending
        (unless put again since)."""
        pending, taken = self._pending, self._taken
        for key, value in batch.items():
            if pending.get(key) is value:
                del pending[key]
            if taken.get(key) is value:
                del taken[key]
        if batch and self._timer is not None:  # what is left was put since: a delay of its own
            self._timer.cancel()
            self._timer = None
            if pending:
                self._schedule(self._delay)

    @contextlib.asynccontextmanager
    async def riding_on(self, scope: Any) -> AsyncIterator[Any]:
        """``scope`` (a store's transaction, not entered yet) entered, the free pending values
        written into it as its body ends (:meth:`write_into`), then :meth:`landed` once it
        committed or :meth:`not_landed` if it did not."""
        batch: dict[str, Any] = {}
        try:
            async with scope as tx:
                yield tx
                batch = await self.write_into(tx)
        except BaseException:
            self.not_landed(batch)
            raise
        self.landed(batch)

    def not_landed(self, batch: dict[str, Any]) -> None:
        """The transaction that took ``batch`` (from :meth:`write_into`) rolled back, or may
        have: its values are free for the next transaction (written twice at worst: the same
        value)."""
        taken = self._taken
        for key, value in batch.items():
            if taken.get(key) is value:
                del taken[key]
        if batch and self._pending:
            self._schedule(self._delay)

    async def flush(self) -> None:
        """Write every pending value that no transaction under way carries now, in one
        transaction (raises if the store fails; the values stay pending)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._free():  # (the rest rides on transactions under way)
            return
        async with self.riding_on(self._store.transaction()):
            pass

    def _schedule(self, delay: float) -> None:
        if self._timer is None:
            loop = asyncio.get_running_loop()
            # a context of its own: never inside the transaction of whoever made the mark
            self._timer = loop.call_later(delay, self._due, context=contextvars.Context())

    def _due(self) -> None:
        self._timer = None
        if self._pending and (self._flushing is None or self._flushing.done()):
            self._flushing = asyncio.get_running_loop().create_task(self._flush_in_background())

    async def _flush_in_background(self) -> None:
        try:
            await self.flush()
        except Exception as error:  # the store is failing: the marks wait for the next try
            log.warning("could not write %d marks (%s): trying again", len(self), error)
            self._schedule(self._delay * RETRY_FACTOR)
        else:
            if self._pending:  # put while the flush ran
                self._schedule(self._delay)
