"""One way to retry: exponential back-off with jitter, and the caller says what is safe.

Every place that tries something again (a Telegram or Matrix call, a database transaction, the
adapter supervisor, the reconnect loops) uses this module, so waits grow, cap and spread the same
way everywhere:

* :class:`Backoff` gives the waits: ``initial``, multiplied by ``factor`` after each failure, at
  most ``maximum``, each stretched by a random part of up to ``jitter`` (20 % by default) so that
  many clients that failed together do not all come back at the same instant. A wait is never
  *shorter* than its nominal value. :meth:`Backoff.next` and :meth:`Backoff.reset` serve loops
  that run for ever (reconnecting, restarting).
* :func:`retry` runs one action at most ``attempts`` times. The caller passes ``safe``: which
  errors prove that trying again cannot do the thing twice (a refused connection, a 429, a
  transaction the database rolled back, a send carrying an idempotency key). Anything else is
  raised at once, for the caller to report. ``server_wait`` reads a wait the server asked for
  (``Retry-After``), which then replaces the back-off; a wait longer than ``max_server_wait`` is
  not waited out.

Randomness here is only jitter (not dice), so it comes from :class:`random.SystemRandom`.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
from collections.abc import Awaitable, Callable
from dataclasses import field
from typing import TypeVar

from coterie.records import dataclass

T = TypeVar("T")

log = logging.getLogger("coterie.retry")

_SYSTEM_RANDOM = random.SystemRandom()


@dataclass
class Backoff:
    """Exponential waits with jitter (see the module docstring)."""

    initial: float = 1.0
    maximum: float = 60.0
    factor: float = 2.0
    #: each wait is stretched by up to this fraction (0: exact waits)
    jitter: float = 0.2
    #: a number in [0, 1); injectable for tests
    rng: Callable[[], float] = field(default=_SYSTEM_RANDOM.random, repr=False)
    _failures: int = field(default=0, repr=False)

    def __post_init__(self) -> None:
        if self.initial <= 0 or self.factor < 1:
            raise ValueError("a back-off needs initial > 0 and factor >= 1")
        self.maximum = max(self.maximum, self.initial)
        if not 0 <= self.jitter <= 1:
            raise ValueError("jitter is a fraction between 0 and 1")

    def nominal(self, failures: int) -> float:
        """The wait after ``failures`` failures in a row (1: the first), without jitter."""
        try:
            return min(self.maximum, self.initial * self.factor ** max(0, failures - 1))
        except OverflowError:
            return self.maximum

    def delay(self, failures: int) -> float:
        """:meth:`nominal` stretched by the jitter."""
        return self.nominal(failures) * (1.0 + self.jitter * self.rng())

    def next(self) -> float:
        """The wait after one more failure (for loops that keep their own count here)."""
        self._failures += 1
        return self.delay(self._failures)

    def reset(self) -> None:
        """A success: the next failure waits ``initial`` again."""
        self._failures = 0

    @property
    def failures(self) -> int:
        return self._failures


def never(error: BaseException) -> bool:
    """A ``safe`` that retries nothing."""
    return False


def no_server_wait(error: BaseException) -> float | None:
    return None


async def retry(
    action: Callable[[], Awaitable[T]],
    *,
    what: str,
    safe: Callable[[BaseException], bool],
    attempts: int,
    backoff: Backoff | None = None,
    server_wait: Callable[[BaseException], float | None] = no_server_wait,
    max_server_wait: float = math.inf,
    logger: logging.Logger | None = None,
    level: int = logging.WARNING,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> T:
    """``await action()``, tried at most ``attempts`` times. After an error for which ``safe``
    is true, wait (what ``server_wait`` says, else the next back-off) and try again; any other
    error, the last attempt's error, or a server wait above ``max_server_wait`` is raised."""
    if attempts < 1:
        raise ValueError("attempts must be at least 1")
    waits = backoff if backoff is not None else Backoff()
    waits.reset()
    out = logger or log
    for attempt in range(1, attempts + 1):
        try:
            return await action()
        except Exception as error:
            if attempt == attempts or not safe(error):
                raise
            asked = server_wait(error)
            if asked is not None and asked > max_server_wait:
                raise
            wait = max(0.0, asked) if asked is not None else waits.next()
            out.log(
                level,
                "%s failed (%s); trying again in %.1f s (%d/%d)",
                what,
                describe(error),
                wait,
                attempt + 1,
                attempts,
            )
            await sleep(wait)
    raise AssertionError("unreachable")  # pragma: no cover


def describe(error: BaseException) -> str:
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
