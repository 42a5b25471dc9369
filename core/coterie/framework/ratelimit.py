"""Rate limiting of commands: token buckets per user and per room.

Each user and each room has a bucket of ``burst`` tokens that refills at ``per_minute`` tokens a
minute. A command takes its cost (default 1) from both the user's and the room's bucket; when
either is short, the command is refused and nothing is queued. The first refusal gets a friendly
"slow down" reply; later ones get silence for a whole **window** — the time the bucket that ran
dry needs to fill up again (30 s with the defaults) — so a flood, however long, gets one notice
per window (and one per room when the room's bucket is the dry one), and a spammer cannot make
the bot spam the room back.

Bucket tables are bounded (least recently used dropped first): messages from a million made-up
ids cost at most ``max_tracked`` entries per table. A dropped bucket comes back full, which only
ever errs towards answering.

With several worker processes on one PostgreSQL store, :class:`SharedRateLimiter` keeps the same
buckets in the store (``kv`` rows updated atomically), so N workers enforce one limit; on a store
that is not shared (memory, SQLite) the in-process :class:`RateLimiter` costs no query.
"""

from __future__ import annotations

import logging
import math
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from coterie.framework.replies import error_reply
from coterie.records import dataclass
from coterie.render.elements import Reply
from coterie.storage.readahead import expect_take, forget_take

if TYPE_CHECKING:
    from coterie.framework.config import RateLimits

Clock = Callable[[], float]
log = logging.getLogger("coterie")

#: the state namespace of the shared buckets (PostgreSQL)
SHARED_NAMESPACE = "coterie.rate"
#: how often (seconds) one process deletes shared buckets that are full again
PRUNE_EVERY = 60.0


@dataclass
class Bucket:
    tokens: float
    updated: float
    #: until when a refusal for this bucket stays silent (a notice was given before it)
    warned: float = 0.0

    def refill(self, burst: float, rate: float, now: float) -> None:
        elapsed = max(0.0, now - self.updated)
        self.tokens = min(burst, self.tokens + elapsed * rate)
        self.updated = max(self.updated, now)


class BucketTable:
    """Token buckets by key, at most ``max_size`` of them (least recently used dropped)."""

    def __init__(self, burst: int, per_minute: float, max_size: int) -> None:
        self.burst = float(burst)
        self.rate = per_minute / 60.0  # tokens per second
        self.max_size = max_size
        self._buckets: OrderedDict[str, Bucket] = OrderedDict()

    def __len__(self) -> int:
        return len(self._buckets)

    def _bucket(self, key: str, now: float) -> Bucket:
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = Bucket(self.burst, now)
            self._buckets[key] = bucket
            while len(self._buckets) > self.max_size:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(key)
            bucket.refill(self.burst, self.rate, now)
        return bucket

    def available(self, key: str, now: float) -> float:
        """Tokens in ``key``'s bucket now (refilled)."""
        return self._bucket(key, now).tokens

    def wait(self, key: str, cost: float, now: float) -> float:
        """Seconds until ``key``'s bucket holds ``cost`` tokens (0 when it does now)."""
        missing = cost - self._bucket(key, now).tokens
        return 0.0 if missing <= 0 else missing / self.rate

    def take(self, key: str, cost: float, now: float) -> None:
        bucket = self._bucket(key, now)
        bucket.tokens -= cost


@dataclass(frozen=True)
class Verdict:
    """What to do with one command: answer it, say "slow down" once, or stay silent."""

    allowed: bool
    #: refused, and nobody has been told yet in this window
    warn: bool = False
    #: seconds until the command would be allowed
    retry_after: float = 0.0
    #: ``"user"`` or ``"room"``: which bucket ran dry
    scope: str = ""


#: the verdict of every command that may go on (immutable, so one object serves them all)
ALLOWED = Verdict(True)


def decide(user: Bucket, room: Bucket, cost: float, now: float, limits: RateLimits) -> Verdict:
    """Take ``cost`` tokens from both (refilled) buckets, or refuse; a refusal is a notice only
    once per window of the bucket that ran dry (recorded in that bucket)."""
    user_rate = limits.user_per_minute / 60.0
    room_rate = limits.room_per_minute / 60.0
    user_wait = max(0.0, cost - user.tokens) / user_rate
    room_wait = max(0.0, cost - room.tokens) / room_rate
    if user_wait <= 0 and room_wait <= 0:
        user.tokens -= cost
        room.tokens -= cost
        return ALLOWED
    wait = max(user_wait, room_wait)
    scope = "user" if user_wait >= room_wait else "room"
    dry, burst, rate = (
        (user, limits.user_burst, user_rate)
        if scope == "user"
        else (room, limits.room_burst, room_rate)
    )
    if now < dry.warned:
        return Verdict(False, retry_after=wait, scope=scope)
    dry.warned = now + max(wait, (burst - dry.tokens) / rate)
    return Verdict(False, warn=True, retry_after=wait, scope=scope)


class RateLimiter:
    """Per-user and per-room token buckets for the commands of one app (this process)."""

    def __init__(self, limits: RateLimits, clock: Clock | None = None) -> None:
        self.limits = limits
        self.clock: Clock = clock or time.monotonic
        self.users = BucketTable(limits.user_burst, limits.user_per_minute, limits.max_tracked)
        self.rooms = BucketTable(limits.room_burst, limits.room_per_minute, limits.max_tracked)

    def cost(self, command: str) -> int:
        return self.limits.command_cost.get(command, 1)

    def exempt(self, platform: str) -> bool:
        return not self.limits.enabled or platform in self.limits.exempt_platforms

    def check(self, platform: str, room_key: str, user: str, command: str) -> Verdict:
        """Take a command's tokens if both buckets have them; otherwise a refusal."""
        limits = self.limits
        if not limits.enabled or platform in limits.exempt_platforms:  # (:meth:`exempt`)
            return ALLOWED
        now = self.clock()
        users, rooms = self.users, self.rooms
        user_key = f"{platform}\x00{user}"  # one person per platform
        cost = float(limits.command_cost.get(command, 1))  # (:meth:`cost`)
        user_bucket = users._buckets.get(user_key)
        room_bucket = rooms._buckets.get(room_key)
        if user_bucket is None or room_bucket is None:
            user_bucket = users._bucket(user_key, now)
            room_bucket = rooms._bucket(room_key, now)
        else:  # both known (most commands): :meth:`BucketTable._bucket` written out
            users._buckets.move_to_end(user_key)
            rooms._buckets.move_to_end(room_key)
            for bucket, table in ((user_bucket, users), (room_bucket, rooms)):
                if now > bucket.updated:  # (:meth:`Bucket.refill`)
                    bucket.tokens = min(
                        table.burst, bucket.tokens + (now - bucket.updated) * table.rate
                    )
                    bucket.updated = now
        if user_bucket.tokens >= cost and room_bucket.tokens >= cost:  # (:func:`decide`'s yes)
            user_bucket.tokens -= cost
            room_bucket.tokens -= cost
            return ALLOWED
        return decide(user_bucket, room_bucket, cost, now, limits)

    async def verdict(self, platform: str, room_key: str, user: str, command: str) -> Verdict:
        """:meth:`check`, as :meth:`Coterie.handle` asks it (a shared limiter asks the store)."""
        return self.check(platform, room_key, user, command)


class SharedRateLimiter(RateLimiter):
    """The same buckets, kept in a shared store's ``kv`` table (namespace ``coterie.rate``, one
    row per user and per room), taken from by one SQL statement that locks, reads, decides,
    writes and commits (:mod:`coterie.storage.shared`): any number of workers on the store
    enforce one limit. A command that runs in a transaction of its room takes in that
    transaction's first round trip (:meth:`expect`, :meth:`verdict_in`); any other in a round
    trip of its own (:meth:`verdict`). The clock is the wall clock (workers on several hosts need
    synchronised clocks). Rows of buckets that are full again are deleted once a minute."""

    def __init__(self, limits: RateLimits, store: Any, clock: Clock | None = None) -> None:
        super().__init__(limits, clock or time.time)
        self.store = store
        self._pruned = 0.0

    def _horizon(self) -> float:
        """Seconds after which an untouched bucket is full again and its window over."""
        limits = self.limits
        return (
            max(
                limits.user_burst / limits.user_per_minute,
                limits.room_burst / limits.room_per_minute,
            )
            * 60.0
            + 1.0
        )

    def joins(self, platform: str) -> bool:
        """Whether a command from ``platform`` is limited inside its own transaction (see
        :meth:`expect`): only commands of a limited platform."""
        return not self.exempt(platform)

    def _request(self, platform: str, room_key: str, user: str, command: str) -> str:
        from coterie.storage.shared import take_request

        limits = self.limits
        return take_request(
            SHARED_NAMESPACE,
            f"user:{platform}:{user}",
            f"room:{room_key}",
            float(self.cost(command)),
            self.clock(),
            (float(limits.user_burst), float(limits.room_burst)),
            (limits.user_per_minute / 60.0, limits.room_per_minute / 60.0),
        )

    def expect(self, platform: str, room_key: str, user: str, command: str) -> Callable[[], None]:
        """Say the command's take to the next transaction of this task, which makes it with its
        first round trip (:func:`coterie.storage.readahead.expect_take`); returns what takes it
        back once the transaction has opened."""
        token = expect_take(self._request(platform, room_key, user, command))
        return lambda: forget_take(token)

    async def verdict_in(
        self, tx: Any, platform: str, room_key: str, user: str, command: str
    ) -> Verdict:
        """The verdict of the take said with :meth:`expect`, made with the first round trip of
        ``tx`` (a transaction that cannot take: alone, as :meth:`verdict`)."""
        if self.exempt(platform):
            return ALLOWED
        found = await tx.taken()
        if found is None:  # (an outer transaction of this task, opened before the take was said)
            return await self.verdict(platform, room_key, user, command)
        await self._prune()
        return _verdict(found)

    async def verdict(self, platform: str, room_key: str, user: str, command: str) -> Verdict:
        from coterie.storage.shared import take_tokens

        if self.exempt(platform):
            return ALLOWED
        try:
            found = await take_tokens(self.store, self._request(platform, room_key, user, command))
            await self._prune()
        except Exception as error:  # the store is failing: limit in this process meanwhile
            log.warning("shared rate limits unavailable (%s); limiting in this process", error)
            return self.check(platform, room_key, user, command)
        return _verdict(found)

    async def _prune(self) -> None:
        """Once a minute, delete the rows of buckets that are full again (their own query)."""
        from coterie.storage.shared import prune_rows

        if time.monotonic() - self._pruned > PRUNE_EVERY:
            self._pruned = time.monotonic()
            await prune_rows(self.store, SHARED_NAMESPACE, time.time() - self._horizon())


def _verdict(found: dict[str, Any]) -> Verdict:
    """A verdict from the SQL function's JSON."""
    if found.get("allowed"):
        return ALLOWED
    return Verdict(
        False,
        warn=bool(found.get("warn")),
        retry_after=float(found.get("retry_after", 0.0)),
        scope=str(found.get("scope", "")),
    )


class RateCheck:
    """One command's rate limit, decided inside the command's own transaction when the limiter
    :meth:`~SharedRateLimiter.joins` it: its take is said before the transaction opens
    (:meth:`expect`) and made with its first round trip (:meth:`decide`). A command that ends
    before its transaction (an error found first) is limited :meth:`alone`."""

    __slots__ = ("command", "limiter", "platform", "room_key", "user", "verdict")

    def __init__(
        self, limiter: SharedRateLimiter, platform: str, room_key: str, user: str, command: str
    ) -> None:
        self.limiter = limiter
        self.platform, self.room_key, self.user, self.command = platform, room_key, user, command
        #: the verdict once decided
        self.verdict: Verdict | None = None

    def expect(self) -> Callable[[], None]:
        return self.limiter.expect(self.platform, self.room_key, self.user, self.command)

    async def decide(self, tx: Any) -> Verdict:
        """Decide in ``tx``, the command's transaction."""
        self.verdict = await self.limiter.verdict_in(
            tx, self.platform, self.room_key, self.user, self.command
        )
        return self.verdict

    async def alone(self) -> Verdict:
        """Decide in a transaction of its own."""
        self.verdict = await self.limiter.verdict(
            self.platform, self.room_key, self.user, self.command
        )
        return self.verdict

    async def allowed(self) -> bool:
        """Whether the command may go on, decided :meth:`alone` unless decided already."""
        verdict = self.verdict or await self.alone()
        return verdict.allowed

    def refusal(self) -> Reply | None:
        """What a refused command answers: the window's one notice, then nothing."""
        verdict = self.verdict
        return slow_down(verdict) if verdict is not None and verdict.warn else None


def limiter_for(limits: RateLimits, store: Any, current: RateLimiter | None = None) -> RateLimiter:
    """The limiter for an app on ``store``: shared through the store when several processes can
    share it (PostgreSQL), else ``current`` (or a new in-process one)."""
    if getattr(store, "dialect", None) == "postgresql":
        return SharedRateLimiter(limits, store)
    if current is not None and not isinstance(current, SharedRateLimiter):
        return current
    return RateLimiter(limits)


def slow_down(verdict: Verdict) -> Reply:
    """The one notice of a window: short, ephemeral (private where the platform can), marked
    ``meta["notice"] = "slow_down"`` so an adapter that cannot deliver it privately can say it
    in one short public line."""
    who = "you" if verdict.scope == "user" else "this room"
    reply = error_reply(
        f"slow down, please: too many commands from {who} just now. "
        f"Try again in {describe_wait(verdict.retry_after)}."
    )
    reply.ephemeral = True
    reply.meta["notice"] = "slow_down"
    return reply


def describe_wait(seconds: float) -> str:
    """``a few seconds``, ``about 40 seconds``, ``about 3 minutes``."""
    if seconds < 5:
        return "a few seconds"
    if seconds < 90:
        return f"about {math.ceil(seconds / 5) * 5} seconds"
    return f"about {math.ceil(seconds / 60)} minutes"
