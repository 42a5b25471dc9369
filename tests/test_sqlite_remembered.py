"""The SQLite store remembers the values it read (every message reads its room's settings) and
never answers a stale one: not after its own writes, not after a rolled-back write, not after
another connection's or another process's commit (``PRAGMA data_version``). Inside a write
transaction too, where the check is made once, as the transaction begins."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from coterie.storage import sqlite as lite
from coterie.storage.migrate import upgrade
from coterie.storage.sql import SQLStore
from test_store import record


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLStore]:
    url = f"sqlite:///{tmp_path / 'state.db'}"
    await upgrade(url)
    made = SQLStore(url)
    yield made
    await made.close()


def _selects(store: SQLStore) -> list[str]:
    """The ``SELECT``s the store's writing connection runs from now on."""
    seen: list[str] = []
    assert store._writer is not None
    store._writer.set_trace_callback(
        lambda statement: seen.append(statement) if statement.startswith("SELECT") else None
    )
    return seen


async def test_a_value_read_again_is_not_selected_again(store: SQLStore) -> None:
    await store.set("rooms", "r", {"prefix": "!"})
    assert await store.get("rooms", "r") == {"prefix": "!"}
    selects = _selects(store)
    first = await store.get("rooms", "r")
    assert first == {"prefix": "!"}
    assert selects == []
    first["prefix"] = "?"  # a caller's change to what it was given is its own
    assert await store.get("rooms", "r") == {"prefix": "!"}
    assert await store.get("rooms", "absent") is None
    assert await store.get("rooms", "absent") is None
    assert len(selects) == 1  # the absent value once; then remembered as absent


async def test_own_writes_are_seen_at_once(store: SQLStore) -> None:
    await store.set("rooms", "r", {"v": 1})
    assert await store.get("rooms", "r") == {"v": 1}
    await store.set("rooms", "r", {"v": 2})
    assert await store.get("rooms", "r") == {"v": 2}
    async with store.transaction() as tx:
        await tx.set("rooms", "r", {"v": 3})
        await tx.set("rooms", "other", {"v": 9})
    assert await store.get("rooms", "r") == {"v": 3}
    assert await store.get("rooms", "other") == {"v": 9}
    await store.delete("rooms", "r")
    assert await store.get("rooms", "r") is None


async def test_a_rolled_back_write_is_not_remembered(store: SQLStore) -> None:
    await store.set("rooms", "r", {"v": 1})
    assert await store.get("rooms", "r") == {"v": 1}
    with pytest.raises(RuntimeError):
        async with store.transaction() as tx:
            await tx.set("rooms", "r", {"v": 2})
            assert await tx.get("rooms", "r") == {"v": 2}
            raise RuntimeError("no")
    assert await store.get("rooms", "r") == {"v": 1}


async def test_housekeeping_statements_forget_everything(store: SQLStore) -> None:
    await store.set("answered", "e1", True)
    assert await store.get("answered", "e1") is True
    assert await store.expire("answered", before=2**40) == 1
    assert await store.get("answered", "e1") is None


async def test_another_connection_commit_is_seen(store: SQLStore, tmp_path: Path) -> None:
    await store.set("rooms", "r", {"v": 1})
    assert await store.get("rooms", "r") == {"v": 1}
    other = sqlite3.connect(tmp_path / "state.db", isolation_level=None)
    other.execute("UPDATE kv SET value = ? WHERE namespace = 'rooms' AND key = 'r'", ('{"v":2}',))
    other.close()
    assert await store.get("rooms", "r") == {"v": 2}
    # a second store on the same file (another worker of the same process) too
    second = SQLStore(f"sqlite:///{tmp_path / 'state.db'}")
    await second.set("rooms", "r", {"v": 3})
    await second.close()
    assert await store.get("rooms", "r") == {"v": 3}


async def test_another_process_commit_is_seen(store: SQLStore, tmp_path: Path) -> None:
    await store.set("rooms", "r", {"v": 1})
    assert await store.get("rooms", "r") == {"v": 1}
    code = (
        "import asyncio, sys\n"
        "from coterie.storage.sql import SQLStore\n"
        "async def main():\n"
        "    store = SQLStore(sys.argv[1])\n"
        "    await store.set('rooms', 'r', {'v': 'from the other process'})\n"
        "    await store.close()\n"
        "asyncio.run(main())\n"
    )
    subprocess.run(
        [sys.executable, "-c", code, f"sqlite:///{tmp_path / 'state.db'}"], check=True, timeout=60
    )
    assert await store.get("rooms", "r") == {"v": "from the other process"}


async def test_the_memory_is_bounded(store: SQLStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lite, "REMEMBERED_VALUES", 3)
    for n in range(5):
        await store.set("rooms", f"r{n}", n)
    for n in range(5):
        assert await store.get("rooms", f"r{n}") == n
    assert len(store._values.values) <= 3
    for n in range(5):
        assert await store.get("rooms", f"r{n}") == n


async def test_a_store_reopened_forgets_what_it_read(store: SQLStore, tmp_path: Path) -> None:
    await store.set("rooms", "other", {"v": 1})
    assert await store.get("rooms", "other") == {"v": 1}  # remembered by the first writer
    await store.close()  # (its connections go; the next call opens new ones)
    other = sqlite3.connect(tmp_path / "state.db", isolation_level=None)
    other.execute("UPDATE kv SET value = '{\"v\":2}' WHERE namespace = 'rooms' AND key = 'other'")
    other.close()
    await store.set("rooms", "r", {"v": 0})  # a new writing connection
    assert await store.get("rooms", "other") == {"v": 2}


async def test_a_transaction_reads_remembered_values_without_a_select(store: SQLStore) -> None:
    """Inside a write transaction a remembered value is answered from memory (the file was
    checked unchanged when the transaction began); a value read there is remembered for the
    next read, in a transaction or not."""
    await store.set("rooms", "r", {"v": 1})
    await store.set("play", "r", {"session": "s1"})
    assert await store.get("rooms", "r") == {"v": 1}
    selects = _selects(store)
    async with store.transaction() as tx:
        assert await tx.get("rooms", "r") == {"v": 1}
        assert selects == []
        assert await tx.get("play", "r") == {"session": "s1"}  # read, and remembered
        assert len(selects) == 1
        first = await tx.get("play", "r")
        first["session"] = "changed by the caller"
        assert await tx.get("play", "r") == {"session": "s1"}
        await tx.log_roll(record(1))
    assert len(selects) == 1
    async with store.transaction() as tx:
        assert await tx.get("play", "r") == {"session": "s1"}
    assert await store.get("play", "r") == {"session": "s1"}
    assert len(selects) == 1


async def test_a_transaction_sees_another_connections_commit(
    store: SQLStore, tmp_path: Path
) -> None:
    await store.set("rooms", "r", {"v": 1})
    async with store.transaction() as tx:
        assert await tx.get("rooms", "r") == {"v": 1}  # remembered
    other = sqlite3.connect(tmp_path / "state.db", isolation_level=None)
    other.execute("UPDATE kv SET value = ? WHERE namespace = 'rooms' AND key = 'r'", ('{"v":2}',))
    other.close()
    async with store.transaction() as tx:
        assert await tx.get("rooms", "r") == {"v": 2}


async def test_a_value_this_transaction_did_not_write_is_remembered_after_its_writes(
    store: SQLStore,
) -> None:
    """A read after the transaction's first write is remembered when its key was not written
    (it is the committed value); the written key's read is not, and a rollback leaves no trace."""
    await store.set("rooms", "a", {"v": 1})
    await store.set("rooms", "b", {"v": 1})
    selects = _selects(store)
    with pytest.raises(RuntimeError):
        async with store.transaction() as tx:
            await tx.set("rooms", "a", {"v": 2})
            assert await tx.get("rooms", "a") == {"v": 2}
            assert await tx.get("rooms", "b") == {"v": 1}
            raise RuntimeError("no")
    assert len(selects) == 1  # a's read answered the value written here: only b was read
    assert await store.get("rooms", "b") == {"v": 1}
    assert len(selects) == 1  # b remembered
    assert await store.get("rooms", "a") == {"v": 1}
    assert len(selects) == 2  # a read afresh: what the transaction saw was never committed


def _statements(store: SQLStore) -> list[str]:
    """Every statement the store's writing connection runs from now on."""
    seen: list[str] = []
    assert store._writer is not None
    store._writer.set_trace_callback(seen.append)
    return seen


async def test_a_transactions_writes_are_made_together_before_its_commit(store: SQLStore) -> None:
    await store.set("rooms", "gone", {"v": 0})
    await store.set("rooms", "kept", {"v": 0})
    seen = _statements(store)
    async with store.transaction() as tx:
        for n in range(3):
            await tx.set("rooms", f"r{n}", {"v": n})
        await tx.set("rooms", "r0", {"v": 9})  # written again: the last value counts
        await tx.delete("rooms", "gone")
        assert await tx.get("rooms", "r0") == {"v": 9} and await tx.get("rooms", "gone") is None
        assert not [s for s in seen if s.startswith(("INSERT", "DELETE"))]  # nothing made yet
        assert await tx.keys("rooms") == ["kept", "r0", "r1", "r2"]  # keys(): made first
        await tx.set("rooms", "r3", {"v": 3})
    writes = [s for s in seen if s.startswith(("INSERT", "DELETE"))]
    assert len(writes) == 3 and writes[0].count("), (") == 2  # three rows in one statement
    assert seen[-1] == "COMMIT" and writes[-1].startswith("INSERT")  # r3, before the commit
    got = {k: await store.get("rooms", k) for k in ("r0", "r1", "r2", "r3", "gone", "kept")}
    assert got == {
        "r0": {"v": 9},
        "r1": {"v": 1},
        "r2": {"v": 2},
        "r3": {"v": 3},
        "gone": None,
        "kept": {"v": 0},
    }


async def test_kept_writes_of_a_transaction_rolled_back_are_never_made(store: SQLStore) -> None:
    await store.set("rooms", "other", {"v": 0})  # (opens the writing connection)
    seen = _statements(store)
    with pytest.raises(RuntimeError):
        async with store.transaction() as tx:
            await tx.set("rooms", "a", {"v": 1})
            raise RuntimeError("no")
    assert not [s for s in seen if s.startswith("INSERT")] and await store.get("rooms", "a") is None
    async with store.transaction() as tx:  # a value JSON cannot hold is refused where written
        with pytest.raises(ValueError):
            await tx.set("rooms", "b", {"v": float("nan")})
    assert await store.get("rooms", "b") is None


async def test_keys_said_to_be_read_are_read_with_the_first_read(store: SQLStore) -> None:
    from coterie.storage.readahead import expect_reads, forget

    await store.set("claims", "c1", {"claimed": True})
    await store.set("events", "e0", {"reply_text": "[]"})
    seen = _selects(store)
    said = expect_reads([("events", "e1"), ("events", "e0")])
    try:
        async with store.transaction() as tx:
            assert await tx.get("claims", "c1") == {"claimed": True}  # one SELECT: all three
            assert await tx.get("events", "e1") is None
            assert await tx.get("events", "e0") == {"reply_text": "[]"}
            await tx.set("events", "e1", {"reply_text": "[1]"})
    finally:
        forget(said)
    assert len(seen) == 1 and seen[0].count(" OR ") == 2, seen
    async with store.transaction() as tx:  # nothing said: one key per read, as before
        assert await tx.get("events", "e1") == {"reply_text": "[1]"}
        assert await tx.get("claims", "other") is None
    assert len(seen) == 3 and " OR " not in seen[1] + seen[2], seen
