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
* the worker that claimed it answers, then marks it :meth:`~RecentDeliveries.done`;
* another delivery of the id gets :data:`DONE` (acknowledge, do not answer) or, while the claim is
  younger than ``lease`` seconds and not done, :data:`BUSY` (someone is answering it right now).
  A claim older than ``lease`` that was never marked done belongs to a worker that died before
  answering (or after posting, before marking it): the next delivery takes it over
  (:meth:`~RecentDeliveries.resumed` is then true) and answers, after checking that the reply
  is not in the channel already (:mod:`.posted`).

Memory is bounded: at most every ``prune_interval`` seconds a worker removes the entries older than
the window and, beyond ``max_ids``, the oldest ones.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import Any, Literal

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

    def _live(self, entry: Any, now: float) -> dict[str, Any] | None:
        if not isinstance(entry, dict):
            return None
        at = _number(entry.get("at"))
        if at is None or now - at >= self._window:
            return None
        return entry

    async def claim(self, key: str) -> Claim:
        """Check and record ``key`` atomically: :data:`NEW` (answer it, then :meth:`done`),
        :data:`DONE` (answered already) or :data:`BUSY` (being answered elsewhere)."""
        now = self._clock()
        async with self._store.transaction(lock=f"{NAMESPACE}:{key}") as tx:
            entry = self._live(await tx.get(NAMESPACE, key), now)
            if entry is not None:
                if entry.get("done") is True:
                    return DONE
                claimed = _number(entry.get("claimed"))
                if claimed is not None and now - claimed < self.lease:
                    return BUSY
            at = now if entry is None else float(entry["at"])
            await tx.set(NAMESPACE, key, {"at": at, "claimed": now, "done": False})
        self._claimed[key] = at
        if entry is not None:  # a lapsed claim: its worker died, maybe after posting the reply
            self._resumed.add(key)
        await self._maybe_prune(now)
        return NEW

    async def done(self, key: str) -> None:
        """``key`` (claimed here) has been answered: later deliveries get :data:`DONE`. One
        write, no lock: only the claim's holder writes it until its lease is over."""
        now = self._clock()
        at = self._claimed.pop(key, now)
        self._resumed.discard(key)
        await self._store.set(NAMESPACE, key, {"at": at, "claimed": now, "done": True})

    async def release(self, key: str) -> None:
        """``key`` (claimed here) could not be answered: the claim is dropped, so the next
        delivery of it is :data:`NEW` at once (for any worker), not :data:`BUSY` or
        :data:`DONE`."""
        self._claimed.pop(key, None)
        self._resumed.discard(key)
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
