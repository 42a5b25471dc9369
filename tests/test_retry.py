"""The one retry helper (coterie.retry): what it retries, how long it waits, when it gives up."""

from __future__ import annotations

import pytest

from coterie.retry import Backoff, retry


class Script:
    """Raises the scripted errors in turn, then answers ``"done"``."""

    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "done"


class Waits:
    def __init__(self) -> None:
        self.seconds: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.seconds.append(seconds)


class Throttled(Exception):
    def __init__(self, after: float) -> None:
        super().__init__(f"retry after {after}")
        self.after = after


def is_connection(error: BaseException) -> bool:
    return isinstance(error, ConnectionError | Throttled)


def asked(error: BaseException) -> float | None:
    return error.after if isinstance(error, Throttled) else None


async def test_safe_errors_are_retried_with_growing_waits() -> None:
    script, waits = Script(ConnectionError(), ConnectionError(), ConnectionError()), Waits()
    backoff = Backoff(1.0, 3.0, jitter=0)
    result = await retry(
        script, what="x", safe=is_connection, attempts=4, backoff=backoff, sleep=waits
    )
    assert result == "done" and script.calls == 4
    assert waits.seconds == [1.0, 2.0, 3.0]


async def test_an_unsafe_error_is_raised_at_once() -> None:
    script, waits = Script(ValueError("maybe done already")), Waits()
    with pytest.raises(ValueError):
        await retry(script, what="x", safe=is_connection, attempts=5, sleep=waits)
    assert script.calls == 1 and waits.seconds == []


async def test_attempts_are_bounded() -> None:
    script, waits = Script(*(ConnectionError() for _ in range(5))), Waits()
    with pytest.raises(ConnectionError):
        await retry(script, what="x", safe=is_connection, attempts=3, sleep=waits)
    assert script.calls == 3 and len(waits.seconds) == 2


async def test_the_servers_wait_replaces_the_backoff_unless_too_long() -> None:
    script, waits = Script(Throttled(7.0)), Waits()
    assert (
        await retry(
            script, what="x", safe=is_connection, attempts=2, server_wait=asked, sleep=waits
        )
        == "done"
    )
    assert waits.seconds == [7.0]
    script, waits = Script(Throttled(3600.0)), Waits()
    with pytest.raises(Throttled):
        await retry(
            script,
            what="x",
            safe=is_connection,
            attempts=5,
            server_wait=asked,
            max_server_wait=120,
            sleep=waits,
        )
    assert script.calls == 1 and waits.seconds == []


def test_jitter_only_lengthens_and_spreads_the_waits() -> None:
    nominal = [1.0, 2.0, 4.0, 8.0, 8.0]
    runs = []
    for _ in range(20):
        backoff = Backoff(1.0, 8.0)
        runs.append([backoff.next() for _ in nominal])
    for waits in runs:
        assert all(n <= w <= n * 1.2 for w, n in zip(waits, nominal, strict=True))
    assert len({waits[0] for waits in runs}) > 1  # clients that failed together spread out
    fixed = Backoff(1.0, 8.0, rng=lambda: 0.5)
    assert fixed.next() == 1.1 and fixed.failures == 1
    fixed.reset()
    assert fixed.next() == 1.1


def test_huge_failure_counts_stay_at_the_maximum() -> None:
    assert Backoff(1.0, 60.0, jitter=0).delay(10_000) == 60.0
    with pytest.raises(ValueError):
        Backoff(0.0, 1.0)
    assert Backoff(10.0, 5.0).maximum == 10.0
