"""Group commit on the SQLite store: transactions that come for the writer while one ends are
made durable by one ``COMMIT``, each in a savepoint of its own, and none returns before that
commit (``coterie.storage.sqlite.LiteScope``, ``coterie.storage.groupcommit``)."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from coterie.storage import groupcommit
from coterie.storage.groupcommit import GROUP_LIMIT, PATIENCE
from coterie.storage.migrate import upgrade
from coterie.storage.sql import SQLStore


async def _store(tmp_path: Path) -> SQLStore:
    url = f"sqlite:///{tmp_path}/coterie.db"
    await upgrade(url)
    return SQLStore(url)


def _statements(store: SQLStore) -> list[str]:
    """Every statement the store's writing connection runs from now on."""
    seen: list[str] = []
    store._lite().set_trace_callback(seen.append)
    return seen


def _committed(path: Path, namespace: str) -> dict[str, str]:
    """The ``kv`` values of ``namespace`` that another connection sees: what is committed."""
    db = sqlite3.connect(path)
    try:
        rows = db.execute("SELECT key, value FROM kv WHERE namespace = ?", (namespace,))
        return dict(rows.fetchall())
    finally:
        db.close()


async def _write(store: SQLStore, n: int, fails: bool = False) -> None:
    """One transaction writing key ``kN`` (then raising, if it ``fails``)."""
    async with store.transaction() as tx:
        await tx.set("g", f"k{n}", n)
        if fails:
            raise ValueError(f"{n} fails")


async def test_transactions_that_queue_are_committed_together(tmp_path: Path) -> None:
    store = await _store(tmp_path)
    seen = _statements(store)
    on_disk: dict[int, bool] = {}

    async def write(n: int) -> None:
        await _write(store, n)
        # back from the transaction: its write is committed, as another connection sees it
        on_disk[n] = f"k{n}" in _committed(tmp_path / "coterie.db", "g")

    try:
        await asyncio.gather(*(write(n) for n in range(20)))
    finally:
        await store.close()
    assert on_disk == {n: True for n in range(20)}
    assert seen.count("COMMIT") == 1  # the twenty, in one commit
    assert seen.count("SAVEPOINT grouped") == 19
    assert _committed(tmp_path / "coterie.db", "g") == {f"k{n}": str(n) for n in range(20)}


async def test_a_transaction_alone_commits_at_once(tmp_path: Path) -> None:
    store = await _store(tmp_path)
    seen = _statements(store)
    try:
        for n in range(5):
            await _write(store, n)
    finally:
        await store.close()
    assert seen.count("COMMIT") == 5
    assert "SAVEPOINT grouped" not in seen


async def test_a_group_holds_at_most_its_limit(tmp_path: Path) -> None:
    store = await _store(tmp_path)
    seen = _statements(store)
    try:
        await asyncio.gather(*(_write(store, n) for n in range(GROUP_LIMIT + 8)))
    finally:
        await store.close()
    assert seen.count("COMMIT") == 2
    assert len(_committed(tmp_path / "coterie.db", "g")) == GROUP_LIMIT + 8


async def test_a_failing_transaction_in_a_group_is_rolled_back_alone(tmp_path: Path) -> None:
    store = await _store(tmp_path)
    seen = _statements(store)

    async def write(n: int) -> None:
        async with store.transaction() as tx:
            await tx.set("g", f"k{n}", n)
            await tx.set("g", "shared", n)
            if n == 5:
                await tx.keys("g")  # (its writes made in SQL, inside its savepoint)
                raise ValueError("five fails")

    try:
        results = await asyncio.gather(*(write(n) for n in range(10)), return_exceptions=True)
        after = await store.get("g", "shared")
    finally:
        await store.close()
    assert [type(r).__name__ for r in results] == ["NoneType"] * 5 + ["ValueError"] + [
        "NoneType"
    ] * 4
    committed = _committed(tmp_path / "coterie.db", "g")
    assert "k5" not in committed
    assert {f"k{n}" for n in range(10) if n != 5} <= set(committed)
    assert committed["shared"] == "9" and after == 9
    assert seen.count("COMMIT") == 1
    assert seen.count("ROLLBACK TO grouped") == 1


async def test_the_first_transaction_failing_leaves_the_others_theirs(tmp_path: Path) -> None:
    store = await _store(tmp_path)
    try:
        writes = (_write(store, n, fails=n == 0) for n in range(6))
        results = await asyncio.gather(*writes, return_exceptions=True)
    finally:
        await store.close()
    assert isinstance(results[0], ValueError)
    assert _committed(tmp_path / "coterie.db", "g") == {f"k{n}": str(n) for n in range(1, 6)}


async def test_a_member_cancelled_while_its_group_commits_is_committed(tmp_path: Path) -> None:
    store = await _store(tmp_path)
    tasks: list[asyncio.Task[None]] = []

    async def write(n: int) -> None:
        async with store.transaction() as tx:
            await tx.set("g", f"k{n}", n)
            if n == 1:  # the first transaction ended and waits for the group's commit
                tasks[0].cancel()

    try:
        tasks.extend(asyncio.ensure_future(write(n)) for n in range(3))
        results = await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        await store.close()
    assert isinstance(results[0], asyncio.CancelledError)
    # it was cancelled, not undone: what it wrote went in with the others
    assert _committed(tmp_path / "coterie.db", "g") == {f"k{n}": str(n) for n in range(3)}


async def test_values_read_in_a_group_are_remembered_only_once_committed(tmp_path: Path) -> None:
    """A transaction in a group reads what an earlier one wrote (not committed yet): that value
    is not remembered, so nothing uncommitted is ever answered from memory."""
    store = await _store(tmp_path)
    async with store.transaction() as tx:
        await tx.set("g", "x", 0)
        await tx.set("g", "y", 0)
    read: list[object] = []

    async def write(key: str) -> None:
        async with store.transaction() as tx:
            await tx.set("g", key, 1)

    async def third() -> None:
        async with store.transaction() as tx:
            read.extend([await tx.get("g", "x"), await tx.get("g", "y")])
            assert ("g", "x") not in store._values.values
            assert ("g", "y") not in store._values.values

    try:
        await asyncio.gather(write("x"), write("y"), third())
        assert read == [1, 1]
        assert await store.get("g", "x") == 1 and await store.get("g", "y") == 1
    finally:
        await store.close()


async def _timed_write(store: SQLStore, n: int) -> float:
    """Seconds :func:`_write` of ``n`` took."""
    start = time.monotonic()
    await _write(store, n)
    return time.monotonic() - start


async def test_with_company_a_group_waits_for_the_transactions_on_their_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once transactions have shared a commit, one that ends alone leaves its group open for
    ``LINGER`` seconds: a transaction that comes meanwhile (not queued when the first ended)
    joins it, and the first returns only with their commit."""
    monkeypatch.setattr(groupcommit, "LINGER", 0.3)
    store = await _store(tmp_path)
    try:
        await asyncio.gather(*(_write(store, n) for n in range(4)))  # company
        seen = _statements(store)
        first = asyncio.ensure_future(_timed_write(store, 10))
        await asyncio.sleep(0.1)  # the first has ended (its group waits), not returned
        assert not first.done() and store._group is not None
        assert "COMMIT" not in seen and "k10" not in _committed(tmp_path / "coterie.db", "g")
        second = await _timed_write(store, 11)
        took = await first
    finally:
        await store.close()
    assert seen.count("COMMIT") == 1 and seen.count("SAVEPOINT grouped") == 1
    assert took >= 0.3 and second < 0.3  # the second came 0.1 s into the first's wait
    assert {"k10", "k11"} <= set(_committed(tmp_path / "coterie.db", "g"))


async def test_without_company_a_transaction_never_waits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Transactions awaited one after another never shared a commit: each commits at once,
    however long a group would wait."""
    monkeypatch.setattr(groupcommit, "LINGER", 1.0)
    store = await _store(tmp_path)
    seen = _statements(store)
    try:
        took = [await _timed_write(store, n) for n in range(5)]
    finally:
        await store.close()
    assert max(took) < 0.5, took
    assert seen.count("COMMIT") == 5


async def test_company_ends_after_groups_that_nobody_joined(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After ``PATIENCE`` groups in a row that waited and that nobody joined, a transaction
    alone commits at once again; a group shared again brings the wait back."""
    monkeypatch.setattr(groupcommit, "LINGER", 0.25)
    store = await _store(tmp_path)
    try:
        await asyncio.gather(*(_write(store, n) for n in range(4)))
        took = [await _timed_write(store, 10 + n) for n in range(PATIENCE + 2)]
        await asyncio.gather(*(_write(store, 20 + n) for n in range(4)))
        again = await _timed_write(store, 30)
    finally:
        await store.close()
    assert all(t >= 0.25 for t in took[:PATIENCE]), took
    assert all(t < 0.2 for t in took[PATIENCE:]), took
    assert again >= 0.25
    assert len(_committed(tmp_path / "coterie.db", "g")) == 4 + PATIENCE + 2 + 4 + 1


async def test_closing_the_store_commits_a_group_that_waits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A shutdown while a group waits for company commits it: its members return, durable."""
    monkeypatch.setattr(groupcommit, "LINGER", 0.3)
    store = await _store(tmp_path)
    await asyncio.gather(*(_write(store, n) for n in range(4)))
    waiting = asyncio.ensure_future(_write(store, 10))
    await asyncio.sleep(0.05)
    assert not waiting.done()
    await store.close()
    await waiting
    assert "k10" in _committed(tmp_path / "coterie.db", "g")


CHILD = textwrap.dedent(
    """
    import asyncio, sys
    from coterie.storage.sql import SQLStore

    async def main(url):
        store = SQLStore(url)
        commits = []
        store._lite().set_trace_callback(lambda s: s == "COMMIT" and commits.append(s))
        k = 0
        while True:
            async def one(n):
                async with store.transaction() as tx:
                    await tx.set("a", str(n), n)
                    await tx.set("b", str(n), n)
                print("acked", n, flush=True)
            before = len(commits)
            await asyncio.gather(*(one(k + i) for i in range(8)))
            print("batch", len(commits) - before, flush=True)
            k += 8

    asyncio.run(main(sys.argv[1]))
    """
)


@pytest.mark.timeout(120)
def test_kill_9_keeps_every_acknowledged_transaction_of_a_group(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/coterie.db"
    asyncio.run(upgrade(url))
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, url],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        bufsize=1,
    )
    assert child.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + 60
    while sum(line.startswith("acked") for line in lines) < 400:
        line = child.stdout.readline()
        assert line and time.monotonic() < deadline, child.stderr and child.stderr.read()
        lines.append(line)
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=10)
    lines += child.stdout.read().splitlines()  # what it printed before it died
    acked = {int(m.group(1)) for line in lines if (m := re.match(r"acked (\d+)", line))}
    batches = [int(line.split()[1]) for line in lines if line.startswith("batch")]
    assert batches and min(batches) == 1  # eight transactions, one commit
    a = _committed(tmp_path / "coterie.db", "a")
    b = _committed(tmp_path / "coterie.db", "b")
    assert acked <= {int(k) for k in a}  # every acknowledged transaction survived
    assert a == b  # and each is whole: both of its writes, or neither
