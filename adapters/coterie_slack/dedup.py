"""Each Slack delivery is answered once, however often Slack sends it, by however many workers.

Slack re-sends an event it believes was not acknowledged in time (HTTP: ``X-Slack-Retry-Num``;
Socket Mode: a new envelope with ``retry_attempt``), with the same ``event_id``; over HTTP behind a
load balancer the retry may reach another worker. Slash commands and button presses carry a
``trigger_id`` unique to the interaction. :func:`delivery_key` picks that id and
:class:`RecentDeliveries` keeps one entry per id in the app's state store (namespace
``slack.events``, key = the id) for an hour:

* :meth:`RecentDeliveries.claim` checks and records the id in one transaction locked on the id, so
  of two workers receiving the same delivery at the same instant exactly one gets :data:`NEW`
  (with PostgreSQL the lock is an advisory lock, shared by every process);
* the worker that claimed it answers, then marks it :meth:`~RecentDeliveries.done` (the bot uses
  :meth:`~RecentDeliveries.done_soon`: the mark is written with the next message's claim, or
  within :data:`~coterie.storage.deferred.DELAY` seconds, so a message costs one write
  transaction, not three; Slack is acknowledged as soon as the reply is out, without waiting
  for the mark);
* another delivery of the id gets :data:`DONE` (acknowledge, do not answer) or, while the claim is
  younger than ``lease`` seconds and not done, :data:`BUSY` (someone is answering it right now).
  A claim older than ``lease`` that was never marked done belongs to a worker that died before
  answering (or after posting, before marking it): the next delivery takes it over
  (:meth:`~RecentDeliveries.resumed` is then true) and answers, after checking that the reply
  is not in the channel already (:mod:`.posted`).

Until a mark lands, this worker answers a redelivery :data:`DONE` from memory, and another
worker sees the claim :data:`BUSY`. A worker killed before its marks landed leaves claims that
lapse after ``lease`` like any claim of a dead worker. Slack sends those deliveries again only if
their acknowledgement was lost as well, since they were acknowledged: a later delivery then takes
the claim over and first looks for the reply in the channel (:mod:`.posted`), so nothing is
posted twice.

Memory is bounded: at most every ``prune_interval`` seconds a worker removes the entries older than
the window and, beyond ``max_ids``, the oldest ones.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import Any, Literal

from coterie.framework.guard import CommandRefused
from coterie.render.elements import Reply, Text
from coterie.storage.deferred import DeferredWrites
from coterie.storage.joining import join_next_transaction
from coterie.storage.state import StateStore

NAMESPACE = "slack.events"
#: how long an id is remembered; Slack retries within minutes
WINDOW_SECONDS = 3600.0
MAX_IDS = 10_000
#: how long a claim not yet marked done keeps other workers off: a delivery is answered (and
#: acknowledged) within seconds, so an older unfinished claim is one whose worker died
LEASE_SECONDS = 10.0
#: how often (at most) one process prunes expired ids
PRUNE_SECONDS = 300.0

Claim = Literal["new", "done", "busy"]
NEW: Claim = "new"
DONE: Claim = "done"
BUSY: Claim = "busy"


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


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


class RecentDeliveries:
    """Ids seen in the last ``window`` seconds, one entry each in a :class:`StateStore`:
    ``{"at": first seen, "claimed": last claimed, "done": answered}``."""

    def __init__(
        self,
        store: StateStore,
        *,
        window: float = WINDOW_SECONDS,
        max_ids: int = MAX_IDS,
        lease: float = LEASE_SECONDS,
        prune_interval: float = PRUNE_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._window = window
        self._max_ids = max_ids
        self.lease = lease
        self._prune_interval = prune_interval
        self._clock = clock
        self._pruned_at: float | None = None
        self._pruning = asyncio.Lock()
        #: keys claimed here and not yet done: when each was first seen
        self._claimed: dict[str, float] = {}
        #: keys claimed here that a worker which died had claimed before
        self._resumed: set[str] = set()
        #: done marks not yet written (:meth:`done_soon`)
        self._marks = DeferredWrites(store, NAMESPACE)
        #: keys checked here (:meth:`check`) whose claim is not made yet: since when
        self._answering: dict[str, float] = {}

    def _live(self, entry: Any, now: float) -> dict[str, Any] | None:
        if not isinstance(entry, dict):
            return None
        at = _number(entry.get("at"))
        if at is None or now - at >= self._window:
            return None
        return entry

    async def claim(self, key: str) -> Claim:
        """Check and record ``key`` atomically: :data:`NEW` (answer it, then :meth:`done`),
        :data:`DONE` (answered already) or :data:`BUSY` (being answered elsewhere). The same
        transaction writes the done marks waiting from :meth:`done_soon`."""
        now = self._clock()
        if self._marks.pending(key) is not None:
            return DONE  # answered here; its mark is on its way to the store
        async with self._marks.riding_on(self._store.transaction(lock=f"{NAMESPACE}:{key}")) as tx:
            claim, at, entry = await self._claim_in(tx, key, now)  # (read first: see join)
        if claim != NEW:
            return claim
        self._took(key, at, entry)
        await self._maybe_prune(now)
        return NEW

    def _took(self, key: str, at: float, entry: dict[str, Any] | None) -> None:
        self._claimed[key] = at
        self._answering.pop(key, None)
        if entry is not None:  # a lapsed claim: its worker died, maybe after posting the reply
            self._resumed.add(key)

    async def check(self, key: str, *, first: bool = False) -> Claim:
        """What :meth:`claim` would answer, without writing: :data:`NEW` means the delivery
        may be answered and its claim is to be made by :meth:`claim_later` (in the command's
        own transaction), or by :meth:`settle` before replying. A ``first`` delivery (Slack's
        first attempt, not a retry) has nothing in the store yet: the store is not read (the
        claim, made in the transaction, is the check that counts; this one only saves work)."""
        now = self._clock()
        if self._marks.pending(key) is not None:
            return DONE
        started = self._answering.get(key)
        if key in self._claimed or (started is not None and now - started < self.lease):
            return BUSY  # being answered here
        entry = None if first else self._live(await self._store.get(NAMESPACE, key), now)
        if entry is not None:
            if entry.get("done") is True:
                return DONE
            claimed = _number(entry.get("claimed"))
            if claimed is not None and now - claimed < self.lease:
                return BUSY
        if len(self._answering) >= self._max_ids:  # bounded: drop what lapsed
            self._answering = {k: t for k, t in self._answering.items() if now - t < self.lease}
        self._answering[key] = now
        return NEW

    def claim_later(self, key: str) -> PendingClaim:
        """The claim on ``key`` (checked with :meth:`check`) as work for the command's
        transaction: pass it to :func:`coterie.storage.joining.join_next_transaction`."""
        return PendingClaim(self, key)

    async def settle(self, pending: PendingClaim) -> Claim:
        """Before replying: :data:`NEW` when the claim is this worker's (it landed with the
        command's transaction, or now in a transaction of its own), else :data:`DONE` or
        :data:`BUSY` (someone else has it: reply nothing)."""
        join_next_transaction(None)  # not joined by now: it is made here or not at all
        if pending.landed:
            await self._maybe_prune(self._clock())
            return NEW
        claim = await self.claim(pending.key)
        if claim != NEW:
            self._answering.pop(pending.key, None)
        return claim

    async def _claim_in(
        self, tx: Any, key: str, now: float
    ) -> tuple[Claim, float, dict[str, Any] | None]:
        entry = self._live(await tx.get(NAMESPACE, key), now)
        if entry is not None:
            if entry.get("done") is True:
                return DONE, now, entry
            claimed = _number(entry.get("claimed"))
            if claimed is not None and now - claimed < self.lease:
                return BUSY, now, entry
        at = now if entry is None else float(entry["at"])
        await tx.set(NAMESPACE, key, {"at": at, "claimed": now, "done": False})
        return NEW, at, entry

    async def done(self, key: str) -> None:
        """``key`` (claimed here) has been answered: later deliveries get :data:`DONE`. One
        write, no lock: only the claim's holder writes it until its lease is over."""
        now = self._clock()
        at = self._claimed.pop(key, now)
        self._resumed.discard(key)
        await self._store.set(NAMESPACE, key, {"at": at, "claimed": now, "done": True})

    def done_soon(self, key: str) -> None:
        """:meth:`done`, written with the next claim (or within a moment): :meth:`landed`
        waits for it, :meth:`flush` writes what is waiting."""
        now = self._clock()
        at = self._claimed.pop(key, now)
        self._resumed.discard(key)
        self._answering.pop(key, None)
        self._marks.put(key, {"at": at, "claimed": now, "done": True})

    async def flush(self) -> None:
        """Write the done marks still waiting (on shutdown)."""
        await self._marks.flush()

    async def release(self, key: str) -> None:
        """``key`` (claimed here) could not be answered: the claim is dropped, so the next
        delivery of it is :data:`NEW` at once (for any worker), not :data:`BUSY` or
        :data:`DONE`."""
        self._claimed.pop(key, None)
        self._resumed.discard(key)
        self._answering.pop(key, None)
        self._marks.discard(key)
        await self._store.delete(NAMESPACE, key)

    def resumed(self, key: str) -> bool:
        """Whether ``key`` (claimed here, not yet done) was taken over from a lapsed claim: the
        worker that held it may have answered before it died."""
        return key in self._resumed

    async def first_time(self, key: str) -> bool:
        """Claim ``key`` and mark it done at once; true unless it was seen within the window."""
        if await self.claim(key) != NEW:
            return False
        await self.done(key)
        return True

    async def _maybe_prune(self, now: float) -> None:
        if self._pruned_at is None:
            self._pruned_at = now  # the first prune waits one interval: starting stays cheap
            return
        if now - self._pruned_at < self._prune_interval or self._pruning.locked():
            return
        await self.prune()

    async def prune(self) -> int:
        """Remove the expired ids and the oldest beyond ``max_ids``; how many were removed."""
        async with self._pruning:
            now = self._clock()
            self._pruned_at = now
            removed = 0
            async with self._store.transaction() as tx:
                ages: list[tuple[float, str]] = []
                for key in await tx.keys(NAMESPACE):
                    entry = self._live(await tx.get(NAMESPACE, key), now)
                    if entry is None:
                        await tx.delete(NAMESPACE, key)
                        removed += 1
                    else:
                        ages.append((float(entry["at"]), key))
                ages.sort()
                for _, key in ages[: max(0, len(ages) - self._max_ids)]:
                    await tx.delete(NAMESPACE, key)
                    removed += 1
            return removed


class ClaimLost(CommandRefused):
    """The delivery is claimed by another worker (or answered): nothing is to be replied. A
    refusal to the core (raised through the command's transaction, which is rolled back, and
    not logged as a failure); its reply is never posted."""

    def __init__(self, claim: Claim) -> None:
        super().__init__(Reply([Text(f"(answered by another worker: {claim})")]))
        self.claim = claim


class PendingClaim:
    """A claim on one delivery, made in the first transaction of the task that answers it
    (:mod:`coterie.storage.joining`): with a command that changes state, the claim, the
    command's writes and its answer record are one transaction. It raises :class:`ClaimLost`
    inside that transaction when the delivery is no longer free (the transaction is rolled
    back); :meth:`RecentDeliveries.settle` then says so."""

    def __init__(self, recent: RecentDeliveries, key: str) -> None:
        self.recent = recent
        self.key = key
        #: whether the claim committed (this worker answers the delivery)
        self.landed = False
        self._made: tuple[float, dict[str, Any] | None] | None = None
        self._marks: dict[str, Any] = {}

    async def join(self, tx: Any) -> None:
        recent = self.recent
        # the claim's read first: on PostgreSQL it is the transaction's first round trip, in
        # which the key asked first is read with the lock
        claim, at, entry = await recent._claim_in(tx, self.key, recent._clock())
        if claim != NEW:
            raise ClaimLost(claim)
        self._marks = await recent._marks.write_into(tx)
        self._made = (at, entry)

    def rolled_back(self) -> None:
        self.recent._marks.not_landed(self._marks)
        self._marks = {}

    def committed(self) -> None:
        self.recent._marks.landed(self._marks)
        if self._made is not None:
            self.recent._took(self.key, *self._made)
            self.landed = True
