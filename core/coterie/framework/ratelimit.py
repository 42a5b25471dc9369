"""Rate limiting of commands: token buckets per user and per room.

Each user and each room has a bucket of ``burst`` tokens that refills at ``per_minute`` tokens a
minute. A command takes its cost (default 1) from both the user's and the room's bucket; when
either is short, the command is refused and nothing is queued. The first refusal in a window gets
a friendly "slow down" reply; later ones, until the user may send again, get silence — so a
spammer cannot make the bot spam the room back.

Bucket tables are bounded (least recently used dropped first): messages from a million made-up
ids cost at most ``max_tracked`` entries per table. A dropped bucket comes back full, which only
ever errs towards answering.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from coterie.framework.config import RateLimits

Clock = Callable[[], float]


@dataclass
class Bucket:
    tokens: float
    updated: float


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
            elapsed = max(0.0, now - bucket.updated)
            bucket.tokens = min(self.burst, bucket.tokens + elapsed * self.rate)
            bucket.updated = now
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
    #: refused, and this user has not been told yet in this window
    warn: bool = False
    #: seconds until the command would be allowed
    retry_after: float = 0.0
    #: ``"user"`` or ``"room"``: which bucket ran dry
    scope: str = ""


class RateLimiter:
    """Per-user and per-room token buckets for the commands of one app."""

    def __init__(self, limits: RateLimits, clock: Clock | None = None) -> None:
        self.limits = limits
        self.clock: Clock = clock or time.monotonic
        self.users = BucketTable(limits.user_burst, limits.user_per_minute, limits.max_tracked)
        self.rooms = BucketTable(limits.room_burst, limits.room_per_minute, limits.max_tracked)
        #: user key → until when they have been told to slow down (bounded like the buckets)
        self._warned: OrderedDict[str, float] = OrderedDict()

    def cost(self, command: str) -> int:
        return self.limits.command_cost.get(command, 1)

    def check(self, platform: str, room_key: str, user: str, command: str) -> Verdict:
        """Take a command's tokens if both buckets have them; otherwise a refusal."""
        if not self.limits.enabled or platform in self.limits.exempt_platforms:
            return Verdict(True)
        now = self.clock()
        cost = float(self.cost(command))
        user_key = f"{platform}\x00{user}"  # a user id names one person across the platform
        user_wait = self.users.wait(user_key, cost, now)
        room_wait = self.rooms.wait(room_key, cost, now)
        if user_wait <= 0 and room_wait <= 0:
            self.users.take(user_key, cost, now)
            self.rooms.take(room_key, cost, now)
            return Verdict(True)
        wait = max(user_wait, room_wait)
        scope = "user" if user_wait >= room_wait else "room"
        warned_until = self._warned.get(user_key)
        if warned_until is not None and now < warned_until:
            return Verdict(False, retry_after=wait, scope=scope)
        self._warned[user_key] = now + wait
        self._warned.move_to_end(user_key)
        while len(self._warned) > self.limits.max_tracked:
            self._warned.popitem(last=False)
        return Verdict(False, warn=True, retry_after=wait, scope=scope)


def describe_wait(seconds: float) -> str:
    """``a few seconds``, ``about 40 seconds``, ``about 3 minutes``."""
    if seconds < 5:
        return "a few seconds"
    if seconds < 90:
        return f"about {math.ceil(seconds / 5) * 5} seconds"
    return f"about {math.ceil(seconds / 60)} minutes"
