"""Concurrent read-modify-write transactions on one room lose no update: against SQLite (two
stores on one file, as two worker processes would have) and a real PostgreSQL (two engines).
Negative controls show that the counter check does catch lost updates."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import statistics
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from coterie.storage.migrate import upgrade
from coterie.storage.sql import SQLStore, atomically, is_retryable
from coterie.storage.state import MemoryStore, StateStore, Transaction

ROOM = "console:table"
TASKS = 20
EACH = 10  # 20 tasks x 10 increments = 200


async def _two_stores(url: str) -> tuple[SQLStore, SQLStore]:
    await upgrade(url)
    return SQLStore(url), SQLStore(url)


@pytest.fixture(params=["sqlite", "postgresql"])
async def workers(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[tuple[SQLStore, SQLStore]]:
    """Two stores (two engines, two connection pools) on one database."""
    if request.param == "sqlite":
        url = f"sqlite+aiosqlite:///{tmp_path / 'state.db'}"
    else:
        url = request.getfixturevalue("pg_url")
    pair = await _two_stores(url)
    yield pair
    for store in pair:
        await store.close()


async def _increment(store: StateStore, lock: str = ROOM) -> None:
    async with store.transaction(lock) as tx:
        value = await tx.get("counter", ROOM) or 0
        await asyncio.sleep(0.001)  # a wide window between the read and the write
        await tx.set("counter", ROOM, value + 1)


async def _run_all(jobs: list[Callable[[], Awaitable[None]]]) -> None:
    async def worker(job: Callable[[], Awaitable[None]]) -> None:
        for _ in range(EACH):
            await job()

    await asyncio.wait_for(asyncio.gather(*(worker(job) for job in jobs)), timeout=90)


async def test_transactions_lose_no_update(workers: tuple[SQLStore, SQLStore]) -> None:
    one, two = workers
    jobs: list[Callable[[], Awaitable[None]]] = [
        functools.partial(_increment, one if i % 2 else two) for i in range(TASKS)
    ]
    await _run_all(jobs)
    assert await one.get("counter", ROOM) == TASKS * EACH
    assert await two.get("counter", ROOM) == TASKS * EACH


async def test_transactions_lose_no_update_memory() -> None:
    store = MemoryStore()
    await _run_all([lambda: _increment(store) for _ in range(TASKS)])
    assert await store.get("counter", ROOM) == TASKS * EACH


async def _racy_rounds(stores: list[StateStore], in_transaction: bool) -> int:
    """``TASKS`` tasks each read the counter, wait until all have read it, then write it plus
    one — the interleaving that loses updates, forced by a barrier rather than left to chance."""
    barrier = asyncio.Barrier(TASKS)

    async def step(store: StateStore) -> None:
        if in_transaction:  # a transaction without a lock: nothing serialises it on PostgreSQL
            async with store.transaction() as tx:
                value = await tx.get("counter", ROOM) or 0
                await barrier.wait()
                await tx.set("counter", ROOM, value + 1)
        else:
            value = await store.get("counter", ROOM) or 0
            await barrier.wait()
            await store.set("counter", ROOM, value + 1)

    for _ in range(3):
        await asyncio.wait_for(
            asyncio.gather(*(step(stores[i % len(stores)]) for i in range(TASKS))), timeout=60
        )
    result = await stores[0].get("counter", ROOM)
    assert isinstance(result, int)
    return result


async def test_negative_control_get_then_set_loses_updates(
    workers: tuple[SQLStore, SQLStore],
) -> None:
    """The same increments as separate get and set calls, outside a transaction: 60 increments
    leave the counter at 3, and the check above would have said so."""
    assert await _racy_rounds(list(workers), in_transaction=False) == 3


async def test_negative_control_postgresql_without_lock(pg_url: str) -> None:
    """On PostgreSQL it is the room lock that makes the read-modify-write safe: the same
    transactions without a lock (READ COMMITTED) lose updates."""
    pair = await _two_stores(pg_url)
    try:
        assert await _racy_rounds(list(pair), in_transaction=True) == 3
    finally:
        for store in pair:
            await store.close()


async def test_postgresql_room_lock_spans_engines_not_rooms(pg_url: str) -> None:
    """A transaction on a room holds that room (and only that room) across engines, from its
    first read or write to its end."""
    one, two = await _two_stores(pg_url)
    try:
        holding = asyncio.Event()
        release = asyncio.Event()
        order: list[str] = []

        async def holder() -> None:
            async with one.transaction(ROOM) as tx:
                await tx.set("ns", "k", "holder")
                holding.set()
                await release.wait()
                order.append("holder done")

        async def same_room() -> None:
            await holding.wait()
            async with two.transaction(ROOM) as tx:
                # on PostgreSQL the room is taken by a transaction's first read or write
                assert await tx.get("ns", "k") == "holder"  # after the holder committed
                order.append("same room entered")

        async def other_room() -> None:
            await holding.wait()
            async with two.transaction("console:elsewhere") as tx:
                await tx.set("ns", "other", 1)
            order.append("other room done")
            release.set()

        await asyncio.wait_for(asyncio.gather(holder(), same_room(), other_room()), timeout=30)
        assert order == ["other room done", "holder done", "same room entered"]
    finally:
        await one.close()
        await two.close()


async def test_sqlite_refuses_a_nested_write(tmp_path: Path) -> None:
    """A write through the store inside one of its own transactions would wait for itself
    (SQLite has one writer): refused with a clear error instead of hanging."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'state.db'}"
    await upgrade(url)
    store = SQLStore(url)
    try:
        with pytest.raises(RuntimeError, match="inside another of its transactions"):
            async with store.transaction(ROOM):
                await store.set("ns", "k", 1)
        assert await store.get("ns", "k") is None
        await store.set("ns", "k", 2)  # and the store is usable afterwards
        assert await store.get("ns", "k") == 2
    finally:
        await store.close()


async def _median_transaction(store: StateStore, count: int = 300) -> float:
    times = []
    for i in range(count):
        began = time.perf_counter()
        async with store.transaction(ROOM) as tx:
            value = await tx.get("bench", "k") or 0
            await tx.set("bench", "k", value + i)
        times.append(time.perf_counter() - began)
    return statistics.median(times)


async def test_transaction_latency(
    workers: tuple[SQLStore, SQLStore], capsys: pytest.CaptureFixture[str]
) -> None:
    """A get+set transaction takes well under 50 ms (the median is printed with -s)."""
    one, _ = workers
    median = await _median_transaction(one)
    with capsys.disabled():
        print(f"\n{one.dialect}: median get+set transaction {median * 1000:.2f} ms")
    assert median < 0.05


async def test_opposite_write_orders_do_not_deadlock_on_postgresql(pg_url: str) -> None:
    """Two transactions writing two keys in opposite orders, both between their writes at once:
    the store sends a transaction's writes at its end, in key order, so neither waits for the
    other's rows and both land at the first attempt."""
    one, two = await _two_stores(pg_url)
    try:
        await one.set("ns", "a", "")
        await one.set("ns", "b", "")
        barrier = asyncio.Barrier(2)
        attempts = {"x": 0, "y": 0}

        async def body(name: str, first: str, second: str, tx: Transaction) -> str:
            attempts[name] += 1
            await tx.set("ns", first, name)
            await barrier.wait()  # both have written their first key now
            await tx.set("ns", second, name)
            return name

        done = await asyncio.wait_for(
            asyncio.gather(
                atomically(one, functools.partial(body, "x", "a", "b")),
                atomically(two, functools.partial(body, "y", "b", "a")),
            ),
            timeout=30,
        )
        assert done == ["x", "y"]
        assert attempts == {"x": 1, "y": 1}
        a, b = await one.get("ns", "a"), await one.get("ns", "b")
        assert a == b and a in ("x", "y")  # one transaction's writes, whole
    finally:
        await one.close()
        await two.close()


class _RawTransactions:
    """Transactions straight on asyncpg (what a plugin's own SQL would do): the way to a real
    deadlock now that the store's own writes cannot deadlock."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    @contextlib.asynccontextmanager
    async def transaction(self, lock: str = "") -> AsyncIterator[Any]:
        async with self.conn.transaction():
            yield self.conn


async def test_atomically_retries_a_real_deadlock(pg_url: str) -> None:
    """Two transactions updating two rows in opposite orders deadlock; PostgreSQL aborts one of
    them, ``is_retryable`` knows the error, and ``atomically`` runs that one again."""
    import asyncpg  # type: ignore[import-untyped]

    await upgrade(pg_url)
    dsn = pg_url.replace("postgresql+asyncpg://", "postgresql://")
    conns = [await asyncpg.connect(dsn) for _ in range(2)]
    try:
        await conns[0].execute(
            "INSERT INTO kv VALUES ('ns', 'a', '\"\"', 0), ('ns', 'b', '\"\"', 0)"
        )
        barrier = asyncio.Barrier(2)
        attempts = {"x": 0, "y": 0}
        errors: list[BaseException] = []

        async def body(name: str, first: str, second: str, conn: Any) -> str:
            attempts[name] += 1
            update = "UPDATE kv SET value = $1 WHERE namespace = 'ns' AND key = $2"
            await conn.execute(update, f'"{name}"', first)
            if attempts[name] == 1:
                await barrier.wait()  # both hold their first row now
            try:
                await conn.execute(update, f'"{name}"', second)
            except Exception as error:
                errors.append(error)
                raise
            return name

        done = await asyncio.wait_for(
            asyncio.gather(
                atomically(_RawTransactions(conns[0]), functools.partial(body, "x", "a", "b")),
                atomically(_RawTransactions(conns[1]), functools.partial(body, "y", "b", "a")),
            ),
            timeout=30,
        )
        assert done == ["x", "y"]
        assert sorted(attempts.values()) == [1, 2]  # exactly one ran again
        assert len(errors) == 1 and is_retryable(errors[0])
        assert type(errors[0]).__name__ == "DeadlockDetectedError"
        again = "x" if attempts["x"] == 2 else "y"
        store = SQLStore(pg_url)
        assert await store.get("ns", "a") == again and await store.get("ns", "b") == again
        await store.close()
    finally:
        for conn in conns:
            await conn.close()


async def test_sqlite_waits_for_another_process_in_the_event_loop(tmp_path: Path) -> None:
    """Another process holds SQLite's write lock: the store's transaction waits for it without
    blocking the event loop (another task keeps ticking), then runs once the lock is free; a
    read goes on meanwhile (WAL)."""
    import subprocess
    import sys

    path = tmp_path / "state.db"
    url = f"sqlite:///{path}"
    await upgrade(url)
    store = SQLStore(url)
    await store.set("ns", "k", 1)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys, time\n"
            f"db = sqlite3.connect({str(path)!r}, isolation_level=None)\n"
            "db.execute('BEGIN IMMEDIATE')\n"
            "db.execute(\"UPDATE kv SET value = '2' WHERE key = 'k'\")\n"
            "print('holding', flush=True)\n"
            "time.sleep(0.6)\n"
            "db.execute('COMMIT')\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "holding"
        ticks = 0
        done = asyncio.Event()

        async def ticker() -> None:
            nonlocal ticks
            while not done.is_set():
                ticks += 1
                await asyncio.sleep(0.01)

        async def increment() -> float:
            began = time.monotonic()
            async with store.transaction(ROOM) as tx:
                value = await tx.get("ns", "k")
                await tx.set("ns", "k", value + 1)
            done.set()
            return time.monotonic() - began

        tick = asyncio.create_task(ticker())
        assert await store.get("ns", "k") == 1  # the reader sees the last commit meanwhile
        waited = await asyncio.wait_for(increment(), timeout=30)
        await tick
        assert waited > 0.3  # it did wait for the other process ...
        assert ticks >= 10  # ... in the event loop, not inside SQLite
        assert await store.get("ns", "k") == 3  # after the other process's 2: nothing lost
    finally:
        holder.wait(timeout=10)
        await store.close()


async def test_postgresql_reads_are_cached_and_dropped_by_any_commit(pg_url: str) -> None:
    """Values ``get`` read are kept (no round trip for the next read) until a commit — of this
    store at once, of another (another worker) as soon as its notice arrives — changes them."""
    one, two = await _two_stores(pg_url)
    try:
        await one.set("ns", "k", 1)
        assert await one.get("ns", "k") == 1
        assert ("ns", "k") in one._cache  # kept
        await two.set("ns", "k", 2)  # another "worker"
        deadline = time.monotonic() + 5
        while await one.get("ns", "k") != 2:
            assert time.monotonic() < deadline, "the other store's commit was never heard"
            await asyncio.sleep(0.005)
        async with one.transaction(ROOM) as tx:  # its own writes: seen at once
            await tx.set("ns", "k", 3)
        assert await one.get("ns", "k") == 3
        await one.delete("ns", "k")
        assert await one.get("ns", "k") is None
        deadline = time.monotonic() + 5
        while await two.get("ns", "k") is not None:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.005)
    finally:
        await one.close()
        await two.close()


async def test_postgresql_room_is_freed_after_an_error_or_a_cancel(pg_url: str) -> None:
    """A transaction that raises (nothing written) or is cancelled while it holds the room lets
    the next transaction on that room in at once, and nothing of it lands."""
    one, two = await _two_stores(pg_url)
    try:
        with pytest.raises(ZeroDivisionError):
            async with one.transaction(ROOM) as tx:
                await tx.set("ns", "k", "raised")
                1 / 0  # noqa: B018
        inside = asyncio.Event()

        async def cancelled() -> None:
            async with one.transaction(ROOM) as tx:
                await tx.set("ns", "k", "cancelled")
                inside.set()
                await asyncio.sleep(60)

        task = asyncio.create_task(cancelled())
        await inside.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

        async def next_one() -> object:
            async with two.transaction(ROOM) as tx:
                return await tx.get("ns", "k")

        assert await asyncio.wait_for(next_one(), timeout=10) is None
        async with one.transaction(ROOM) as tx:  # the first store still works
            await tx.set("ns", "k", "kept")
        assert await two.get("ns", "k") == "kept"
    finally:
        await one.close()
        await two.close()


def test_a_read_is_kept_unless_a_notice_for_its_key_came_meanwhile() -> None:
    """With messages in flight some commit's notice overlaps almost every read: only a notice
    that may concern the key read (its own, every key's, or one forgotten meanwhile) keeps the
    value out of the cache."""
    from coterie.storage.postgres import PG_CACHE_SIZE, ReadCache

    cache = ReadCache()
    since = cache.heard
    cache.notice(("ns", "other"))  # another key's commit, during the read
    cache.keep(("ns", "k"), "1", since)
    assert cache[("ns", "k")] == "1"
    since = cache.heard
    cache.notice(("ns", "k"))  # its own key's: dropped, and the read is not kept
    assert ("ns", "k") not in cache
    cache.keep(("ns", "k"), "1", since - 1)
    assert ("ns", "k") not in cache
    cache.keep(("ns", "k"), "2", cache.heard)  # a read begun after it is
    assert cache[("ns", "k")] == "2"
    since = cache.heard
    cache.notice(None)  # every key's
    assert not cache
    cache.keep(("ns", "k"), "2", since)
    assert not cache
    since = cache.heard
    for n in range(PG_CACHE_SIZE + 1):  # so many that the oldest are forgotten
        cache.notice(("ns", f"x{n}"))
    cache.keep(("ns", "k"), "3", since)
    assert not cache
