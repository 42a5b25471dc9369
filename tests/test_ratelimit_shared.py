"""Rate limits shared by the workers on one PostgreSQL store (issue 19, item 8): two app
instances, each with its own engine (as two `coterie run` workers have), enforce one limit."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from coterie.dice.sources import SeededDice
from coterie.framework.app import Coterie
from coterie.framework.config import parse_config
from coterie.framework.message import Message
from coterie.framework.ratelimit import SHARED_NAMESPACE, RateLimiter, SharedRateLimiter
from coterie.render.encode import to_plain
from coterie.storage.migrate import upgrade
from coterie.storage.shared import prune_rows, take_request, take_tokens
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


async def test_a_take_alone_is_one_round_trip_and_loses_no_update(
    pg_url: str, pg_trips: dict[str, int]
) -> None:
    """A take on its own locks, reads, decides, writes and commits in one statement; many
    takes at once from two stores (each with its own connections) lose none."""
    await upgrade(pg_url)
    first, second = SQLStore(pg_url), SQLStore(pg_url)

    def request(user: str) -> str:
        return take_request("counts", f"user:{user}", "room:r", 1.0, 100.0, (1e6, 1e6), (1.0, 1.0))

    try:
        await take_tokens(first, request("a"))  # (connections opened)
        await take_tokens(second, request("b"))
        before = pg_trips["n"]
        assert await take_tokens(first, request("a")) == {"allowed": True}
        assert pg_trips["n"] - before == 1
        await asyncio.gather(
            *(take_tokens(store, request(user)) for store in (first, second) for user in "ab" * 10)
        )
        room = await first.get("counts", "room:r")
        assert room["t"] == 1e6 - 43  # every take landed
        assert (await first.get("counts", "user:a"))["t"] == 1e6 - 22
    finally:
        await first.close()
        await second.close()


async def test_the_sql_take_decides_as_the_in_process_limiter(pg_url: str) -> None:
    """The SQL function is `decide` written again: the same commands, at the same moments,
    through both, give the same verdicts (notices, silences, waits) and leave the same buckets."""
    from coterie.framework.config import RateLimits

    await upgrade(pg_url)
    store = SQLStore(pg_url)
    clock = Clock()
    limits = RateLimits(user_burst=4, user_per_minute=7.0, room_burst=5, room_per_minute=6.0)
    limits = limits.model_copy(update={"command_cost": {"odds": 2, "free": 0}})
    shared = SharedRateLimiter(limits, store, clock=clock)
    local = RateLimiter(limits, clock=clock)
    rng = random.Random(18)
    seen = set()
    try:
        for _ in range(400):
            clock.now += rng.choice([0.0, 0.0, 0.3, 1.7, 4.0, 11.0, 40.0])
            user, room = rng.choice("abcd"), rng.choice("xy")
            command = rng.choice(["roll", "roll", "odds", "free"])
            there = await shared.verdict("slack", f"slack:{room}", user, command)
            here = local.check("slack", f"slack:{room}", user, command)
            assert (there.allowed, there.warn, there.scope) == (here.allowed, here.warn, here.scope)
            assert there.retry_after == pytest.approx(here.retry_after, rel=1e-12, abs=1e-12)
            seen.add((here.allowed, here.warn, here.scope))
        for user in "abcd":
            row = await store.get(SHARED_NAMESPACE, f"user:slack:{user}")
            bucket = local.users._buckets[f"slack\x00{user}"]
            assert row["t"] == pytest.approx(bucket.tokens, abs=1e-9)
            assert row["w"] == pytest.approx(bucket.warned, abs=1e-9)
    finally:
        await store.close()
    # every kind of verdict was met on the way
    assert {(True, False, ""), (False, True, "user"), (False, False, "user")} <= seen
    assert {(False, True, "room"), (False, False, "room")} <= seen


async def test_a_command_in_a_transaction_is_limited_in_its_round_trips(
    workers, pg_trips: dict[str, int]
) -> None:
    """With the limits shared, a roll is still two round trips: its take rides on the first,
    with the room's lock; a command without a transaction (`!help`) takes in a round trip of
    its own."""
    first, _, clock = workers
    await first.handle(roll())  # (connections opened, the room's read-ahead learnt)
    clock.now += 60.0
    before = pg_trips["n"]
    for _ in range(5):
        reply = await first.handle(roll())
        assert reply is not None and not reply.is_error
    assert pg_trips["n"] - before == 10
    before = pg_trips["n"]
    reply = await first.handle(Message(platform="slack", room="r", user="u", text="!help"))
    assert reply is not None and not reply.is_error
    assert pg_trips["n"] - before == 1  # its own take
    store = first.state.store
    bucket = await store.get(SHARED_NAMESPACE, "user:slack:u")
    assert bucket["t"] == pytest.approx(10 - 6)  # full again, then five rolls and the help


async def test_one_users_commands_in_many_rooms_lose_no_update(workers) -> None:
    """Rooms do not wait for each other, but the user's bucket row is locked by each take from
    it: 40 rolls at once in eight rooms on two workers spend one burst."""
    first, second, _ = workers
    replies = await asyncio.gather(
        *(app.handle(roll(room=f"r{n % 8}")) for n in range(20) for app in (first, second))
    )
    answered = [r for r in replies if r is not None and not r.is_error]
    notices = [r for r in replies if r is not None and r.is_error]
    assert len(answered) == 10
    assert len(notices) == 1 and notices[0].meta["notice"] == "slow_down"


async def test_a_failing_or_too_long_command_still_takes_its_tokens(pg_url: str) -> None:
    """A roll refused by its own rules rolls its transaction back, but not its take, which
    its first round trip committed. A message too long to parse is limited before its
    answer."""
    engine = create_engine(pg_url)
    await upgrade(engine)
    await engine.dispose()
    app = worker(pg_url, Clock(), user_burst=3, user_per_minute=1)
    bad = Message(platform="slack", room="r", user="u", text="!roll seven")
    long = Message(platform="slack", room="r", user="w", text="!roll 7 6 " + "x" * 5000)
    try:
        for _ in range(3):
            reply = await app.handle(bad)
            assert reply is not None and reply.is_error and "slow down" not in to_plain(reply.body)
        notice = await app.handle(roll())
        assert notice is not None and notice.meta["notice"] == "slow_down"
        for _ in range(3):
            reply = await app.handle(long)
            assert reply is not None and "characters long" in to_plain(reply.body)
        notice = await app.handle(long)
        assert notice is not None and notice.meta["notice"] == "slow_down"
    finally:
        await app.stop()
