"""Small bounded records in the app's state store: the update ids already seen (each update is
answered once) and the buttons of recent replies.

Each :class:`ExpiringRecord` is *one* value in the :class:`~coterie.state.StateStore` (a JSON
object of entries), so its size is bounded however long the bot runs, also in a persistent
store: entries expire after ``ttl`` seconds and the oldest go first beyond ``max_entries``.
Reads and writes of one record are serialised by a lock within one process, and a check-and-set
(:meth:`ExpiringRecord.add`, :meth:`ExpiringRecord.pop`) runs in one store transaction locked on
the record, so it is atomic across worker processes sharing a PostgreSQL store too.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from coterie.framework.guard import CommandRefused
from coterie.render.elements import Reply, Text
from coterie.storage.deferred import DeferredWrites
from coterie.storage.joining import join_next_transaction
from coterie.storage.state import StateStore


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
        self._lock_key = f"{namespace}:{key}"

    async def _load(self, now: float, source: Any = None) -> dict[str, list[Any]]:
        """The live entries, oldest first: ``{key: [expires_at, value]}``."""
        stored = await (source or self._store).get(self._namespace, self._key)
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

    async def _save(self, entries: dict[str, list[Any]], target: Any) -> None:
        while len(entries) > self._max:
            del entries[next(iter(entries))]
        if entries:
            await target.set(self._namespace, self._key, entries)
        else:
            await target.delete(self._namespace, self._key)

    async def add(self, key: str, value: Any = True) -> bool:
        """Store ``value`` under ``key`` unless a live entry is there; true if it was stored."""
        async with self._lock, self._store.transaction(lock=self._lock_key) as tx:
            now = self._clock()
            entries = await self._load(now, tx)
            if key in entries:
                return False
            entries[key] = [now + self._ttl, value]
            await self._save(entries, tx)
            return True

    async def get(self, key: str) -> Any | None:
        """The live value under ``key``, or ``None``."""
        async with self._lock:
            entry = (await self._load(self._clock())).get(key)
        return None if entry is None else entry[1]

    async def pop(self, key: str) -> Any | None:
        """Remove and return the live value under ``key`` (``None`` if there is none): only one
        of several callers racing for the same key gets it."""
        async with self._lock, self._store.transaction(lock=self._lock_key) as tx:
            entries = await self._load(self._clock(), tx)
            entry = entries.pop(key, None)
            if entry is not None:
                await self._save(entries, tx)
        return None if entry is None else entry[1]

    async def size(self) -> int:
        """How many live entries there are."""
        async with self._lock:
            return len(await self._load(self._clock()))


class SeenIds:
    """Ids seen in the last ``ttl`` seconds, one entry each in the store (namespace ``namespace``,
    key ``PREFIX:ID``), for checks made on every update: :meth:`add` touches one small row in a
    transaction locked on that id, so workers sharing a PostgreSQL store neither queue on one
    record nor lose each other's ids. At most every ``prune_interval`` seconds a process removes
    the expired ids and, beyond ``max_entries``, the oldest."""

    def __init__(
        self,
        store: StateStore,
        namespace: str,
        prefix: str,
        *,
        ttl: float,
        max_entries: int,
        prune_interval: float = 300.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if ttl <= 0 or max_entries < 1:
            raise ValueError("ttl and max_entries must be positive")
        self._store = store
        self._namespace = namespace
        self._prefix = f"{prefix}:"
        self._ttl = ttl
        self._max = max_entries
        self._prune_interval = prune_interval
        self._clock = clock
        self._pruned_at: float | None = None
        self._pruning = asyncio.Lock()
        #: claims made here and not marked done yet: when each was made
        self._claims: dict[str, float] = {}
        #: done marks not written yet (:meth:`done_soon`)
        self._marks = DeferredWrites(store, namespace)
        #: ids checked here (:meth:`check`) whose claim is not made yet: since when
        self._answering: dict[str, float] = {}

    def _seen_at(self, value: Any, now: float) -> float | None:
        at = value.get("at") if isinstance(value, dict) else None
        if isinstance(at, int | float) and not isinstance(at, bool) and now - at < self._ttl:
            return float(at)
        return None

    async def add(self, key: str, *, lease: float | None = None) -> bool:
        """Record ``key``; true unless it was seen within ``ttl`` (by any process).

        With a ``lease``, a record is a *claim* until :meth:`done` marks it answered: a claim
        older than ``lease`` seconds that was never marked done belonged to a process that died
        before answering, and is taken over (true) — the platform sent the update again because
        nobody answered it. (Taking over is safe: a command whose effect landed is answered
        from its stored reply, never run twice: :mod:`coterie.framework.events`.)"""
        now = self._clock()
        full = self._prefix + key
        if self._marks.pending(full) is not None:
            return False  # answered here; its mark is on its way to the store
        scope = self._store.transaction(lock=f"{self._namespace}:{full}")
        async with self._marks.riding_on(scope) as tx:
            taken = await self._add_in(tx, full, now, lease)  # (read first: see PendingId.join)
        if not taken:
            return False
        if lease is not None:
            self._took(full, now)
        if self._pruned_at is None:
            self._pruned_at = now
        elif now - self._pruned_at >= self._prune_interval and not self._pruning.locked():
            await self.prune()
        return True

    async def check(self, key: str, *, lease: float, look: bool = True) -> bool:
        """What :meth:`add` with ``lease`` would answer, without writing: true means the
        update may be answered here, its claim made by :meth:`claim_later` in the command's
        own transaction (or by :meth:`settle` before replying). Without ``look`` only this
        process's own records are asked, not the store: the claim, made in the transaction,
        is the check that counts (it raises :class:`ClaimLost`, saying whether the update was
        answered); this one only saves work."""
        now = self._clock()
        full = self._prefix + key
        if self._marks.pending(full) is not None or full in self._claims:
            return False
        started = self._answering.get(full)
        if started is not None and now - started < lease:
            return False
        found = await self._store.get(self._namespace, full) if look else None
        at = self._seen_at(found, now)
        if at is not None:
            claimed = isinstance(found, dict) and found.get("done") is False
            if not claimed or now - at < lease:
                return False
        if len(self._answering) >= self._max:  # bounded: drop what lapsed
            self._answering = {k: t for k, t in self._answering.items() if now - t < lease}
        self._answering[full] = now
        return True

    def claim_later(self, key: str, *, lease: float) -> PendingId:
        """The claim on ``key`` (checked with :meth:`check`) as work for the command's
        transaction: pass it to :func:`coterie.storage.joining.join_next_transaction`."""
        return PendingId(self, self._prefix + key, lease)

    async def settle(self, pending: PendingId) -> bool:
        """Before replying: true when the claim is this process's (it landed with the command's
        transaction, or now in a transaction of its own); false when another has it."""
        join_next_transaction(None)  # not joined by now: it is made here or not at all
        if pending.landed:
            return True
        key = pending.full.removeprefix(self._prefix)
        taken = await self.add(key, lease=pending.lease)
        self._answering.pop(pending.full, None)
        return taken

    def forget(self, key: str) -> None:
        """``key`` was checked but is answered elsewhere: no longer being answered here."""
        self._answering.pop(self._prefix + key, None)

    def _took(self, full: str, now: float) -> None:
        self._claims[full] = now
        self._answering.pop(full, None)

    async def _add_in(self, tx: Any, full: str, now: float, lease: float | None) -> bool:
        found = await tx.get(self._namespace, full)
        at = self._seen_at(found, now)
        if at is not None:
            claimed = isinstance(found, dict) and found.get("done") is False
            if lease is None or not claimed or now - at < lease:
                return False
        record: dict[str, Any] = {"at": now}
        if lease is not None:
            record["done"] = False
        await tx.set(self._namespace, full, record)
        return True

    async def is_done(self, key: str) -> bool:
        """Whether ``key`` was answered (a claim marked done, or an id recorded without one)."""
        full = self._prefix + key
        if self._marks.pending(full) is not None:
            return True
        found = await self._store.get(self._namespace, full)
        return isinstance(found, dict) and found.get("done", True) is not False

    def done_soon(self, key: str) -> None:
        """:meth:`done`, written with the next claim (in the next message's command transaction),
        within a moment, or by :meth:`flush`. Until then
        :meth:`add`, :meth:`check` and :meth:`is_done` of this process know it, and another
        process finds the claim still held."""
        full = self._prefix + key
        at = self._claims.pop(full, self._clock())
        self._answering.pop(full, None)
        self._marks.put(full, {"at": at, "done": True})

    async def flush(self) -> None:
        """Write the done marks still waiting (on shutdown)."""
        await self._marks.flush()

    async def done(self, key: str) -> None:
        """Mark ``key`` answered (a claim made with :meth:`add` and a ``lease``, or an id only
        checked with :meth:`check` whose update needed no claim: not a command): it is never
        taken over."""
        full = self._prefix + key
        at = self._claims.pop(full, None)
        self._answering.pop(full, None)
        async with self._store.transaction(lock=f"{self._namespace}:{full}") as tx:
            found = await tx.get(self._namespace, full)
            if isinstance(found, dict):
                await tx.set(self._namespace, full, {**found, "done": True})
            else:
                await tx.set(self._namespace, full, {"at": at or self._clock(), "done": True})

    async def prune(self) -> int:
        """Remove the expired ids and the oldest beyond ``max_entries``; how many went."""
        async with self._pruning:
            now = self._clock()
            self._pruned_at = now
            removed = 0
            async with self._store.transaction() as tx:
                ages: list[tuple[float, str]] = []
                for full in await tx.keys(self._namespace, self._prefix):
                    at = self._seen_at(await tx.get(self._namespace, full), now)
                    if at is None:
                        await tx.delete(self._namespace, full)
                        removed += 1
                    else:
                        ages.append((at, full))
                ages.sort()
                for _, full in ages[: max(0, len(ages) - self._max)]:
                    await tx.delete(self._namespace, full)
                    removed += 1
            return removed

    async def size(self) -> int:
        """How many ids are recorded (expired ones not yet pruned included)."""
        return len(await self._store.keys(self._namespace, self._prefix))


class ClaimLost(CommandRefused):
    """The update is claimed by another process (or answered): nothing is to be replied. A
    refusal to the core (raised through the command's transaction, which is rolled back, and
    not logged as a failure); its reply is never sent."""

    def __init__(self, full: str, *, answered: bool = False) -> None:
        super().__init__(Reply([Text("(answered by another process)")]))
        self.full = full
        #: the update was answered already (else: another process holds its claim)
        self.answered = answered


class PendingId:
    """A claim on one update id, made in the first transaction of the task that answers it
    (:mod:`coterie.storage.joining`): with a command that changes state, the claim, the
    command's writes and its answer record are one transaction. It raises :class:`ClaimLost`
    inside that transaction when the id is no longer free (the transaction is rolled back);
    :meth:`SeenIds.settle` then says so."""

    def __init__(self, seen: SeenIds, full: str, lease: float) -> None:
        self.seen = seen
        self.full = full
        self.lease = lease
        #: whether the claim committed (this process answers the update)
        self.landed = False
        self._at: float | None = None
        self._marks: dict[str, Any] = {}

    async def join(self, tx: Any) -> None:
        seen = self.seen
        now = seen._clock()
        # the claim's read first: on PostgreSQL it is the transaction's first round trip, in
        # which the key asked first is read with the lock
        if not await seen._add_in(tx, self.full, now, self.lease):
            raise ClaimLost(self.full)  # (the bot's settle then says whether it was answered)
        self._marks = await seen._marks.write_into(tx)
        self._at = now

    def rolled_back(self) -> None:
        self.seen._marks.not_landed(self._marks)
        self._marks = {}

    def committed(self) -> None:
        self.seen._marks.landed(self._marks)
        if self._at is not None:
            self.seen._took(self.full, self._at)
            self.landed = True
