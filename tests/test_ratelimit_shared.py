"""Rate limits shared by the workers on one PostgreSQL store (issue 19, item 8): two app
instances, each with its own engine (as two `coterie run` workers have), enforce one limit."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from coterie.dice.sources import SeededDice
from coterie.framework.app import Coterie
from coterie.framework.config import parse_config
from coterie.framework.message import Message
from coterie.framework.ratelimit import SHARED_NAMESPACE, RateLimiter, SharedRateLimiter
from coterie.storage.migrate import upgrade
from coterie.storage.shared import prune_rows
from coterie.storage.sql import SQLStore, create_engine


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


def worker(url: str, clock: Clock, **rate: object) -> Coterie:
    config = parse_config({"plugins": {"enable": ["revised"]}, "limits": {"rate": rate}})
    app = Coterie(config, dice=SeededDice(1), store=SQLStore(create_engine(url)))
    app.rate_limiter.clock = clock
    return app


@pytest.fixture
async def workers(pg_url: str) -> AsyncIterator[tuple[Coterie, Coterie, Clock]]:
    engine = create_engine(pg_url)
    await upgrade(engine)
    await engine.dispose()
    clock = Clock()
    first = worker(pg_url, clock, user_burst=10, user_per_minute=20)
    second = worker(pg_url, clock, user_burst=10, user_per_minute=20)
    try:
        yield first, second, clock
    finally:
        await first.stop()
        await second.stop()


def roll(user: str = "u", room: str = "r") -> Message:
    return Message(platform="slack", room=room, user=user, text="!roll 3 6")


async def test_two_workers_enforce_one_limit(workers) -> None:
    first, second, clock = workers
    assert isinstance(first.rate_limiter, SharedRateLimiter)
    # 40 concurrent commands from one user, spread over both workers
    replies = await asyncio.gather(*(app.handle(roll()) for _ in range(20) for app in workers[:2]))
    answered = [r for r in replies if r is not None and not r.is_error]
    notices = [r for r in replies if r is not None and r.is_error]
    assert len(answered) == 10  # one burst in all, not one per worker
    assert len(notices) == 1 and notices[0].meta["notice"] == "slow_down"
    # silence on both workers for the rest of the window; another user is not affected
    assert await second.handle(roll()) is None and await first.handle(roll()) is None
    reply = await second.handle(roll(user="other"))
    assert reply is not None and not reply.is_error
    # a token comes back after 3 s, whichever worker asks
    clock.now += 3.0
    reply = await second.handle(roll())
    assert reply is not None and not reply.is_error
    assert await first.handle(roll()) is None
    # the window ends when the bucket could be full again (30 s): one new notice
    clock.now += 30.0
    replies = [await app.handle(roll()) for _ in range(8) for app in (first, second)]
    assert sum(1 for r in replies if r is not None and r.is_error) == 1


async def test_old_buckets_are_pruned_and_come_back_full(workers) -> None:
    first, second, clock = workers
    for _ in range(12):
        await first.handle(roll())
    store = first.state.store
    assert sorted(await store.keys(SHARED_NAMESPACE)) == ["room:slack:r", "user:slack:u"]
    await prune_rows(store, SHARED_NAMESPACE, older_than=0)  # nothing is that old
    assert len(await store.keys(SHARED_NAMESPACE)) == 2
    await prune_rows(store, SHARED_NAMESPACE, older_than=clock.now + 10**10)
    assert await store.keys(SHARED_NAMESPACE) == []
    reply = await second.handle(roll())  # the user's bucket is full again
    assert reply is not None and not reply.is_error


async def test_a_store_that_is_not_shared_keeps_the_in_process_limiter(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite+aiosqlite:///{tmp_path / 'one.db'}")
    await upgrade(engine)
    config = parse_config({"plugins": {"enable": ["revised"]}})
    app = Coterie(config, dice=SeededDice(1), store=SQLStore(engine))
    try:
        assert type(app.rate_limiter) is RateLimiter
        await app.handle(roll())
        assert await app.state.store.keys(SHARED_NAMESPACE) == []  # no query, no row
    finally:
        await app.stop()


async def test_an_unreachable_store_falls_back_to_limiting_in_this_process() -> None:
    from coterie.framework.config import RateLimits

    store = SQLStore(create_engine("postgresql+asyncpg://coterie@127.0.0.1:1/nowhere"))
    limiter = SharedRateLimiter(RateLimits(user_burst=2, user_per_minute=0.1), store)
    try:
        verdicts = [await limiter.verdict("slack", "slack:r", "u", "roll") for _ in range(4)]
    finally:
        await store.close()
    assert [v.allowed for v in verdicts] == [True, True, False, False]
    assert [v.warn for v in verdicts[2:]] == [True, False]


async def test_shared_rows_take_two_round_trips_and_lose_no_update(
    pg_url: str, pg_trips: dict[str, int]
) -> None:
    """The rows locked and read in one round trip, written and unlocked in the next; many
    updates at once from two stores (each with its own connections) lose none."""
    from coterie.storage.shared import update_rows

    await upgrade(pg_url)
    first, second = SQLStore(pg_url), SQLStore(pg_url)
    trips = pg_trips

    def add(rows: dict[str, object]) -> tuple[dict[str, object], None]:
        return {k: int(rows.get(k, 0)) + 1 for k in ("a", "b")}, None  # type: ignore[call-overload]

    try:
        await update_rows(first, "counts", ["b", "a"], add)  # (connections opened)
        await update_rows(second, "counts", ["a", "b"], add)
        before = trips["n"]
        await update_rows(first, "counts", ["a", "b"], add)
        assert trips["n"] - before == 2
        await asyncio.gather(
            *(update_rows(store, "counts", ["a", "b"], add) for store in (first, second) * 20)
        )
        assert await first.get("counts", "a") == await first.get("counts", "b") == 43
    finally:
        await first.close()
        await second.close()
