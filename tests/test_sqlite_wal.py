"""The SQLite store's WAL stays bounded under a steady flow of commits (issue 18).

SQLite writes the WAL again from its start only when a write transaction begins with every frame
copied to the database file. The store's checkpoint runs in a thread while commits go on, so
without the second copy (see :mod:`coterie.storage.checkpoints`) some frames were always left behind
and the WAL grew for ever: 275 MB after 30,000 rolls, each commit slower than the last."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from coterie.storage import checkpoints
from coterie.storage.checkpoints import checkpoint_passive
from coterie.storage.migrate import upgrade
from coterie.storage.sql import SQLStore
from coterie.storage.sqlite import CHECKPOINT_EVERY, WAL_SIZE_LIMIT
from coterie.storage.state import RollRecord


def _record(n: int) -> RollRecord:
    return RollRecord(
        id=f"r{n:06d}",
        room="bench:r",
        user=f"u{n % 7}",
        display_name="U",
        variant="revised",
        request="!roll 7 6",
        faces=[n % 10 + 1] * 7,
        outcome="success",
        successes=1,
        detail={"pad": "x" * 300, "n": n},
    )


def _starts(wal: Path) -> int:
    """How many times SQLite has written the WAL again from its start: the checkpoint sequence
    number in the WAL's header, which it counts up each time."""
    with wal.open("rb") as file:
        header = file.read(16)
    return int.from_bytes(header[12:16], "big") if len(header) == 16 else 0


#: the WAL starts again this many times before the test ends ...
STARTS = 3
#: ... within this long (without the second copy it started again twice in 30 s here)
SECONDS = 30.0


async def test_wal_restarts_under_a_steady_flow_of_commits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "coterie.db"
    url = f"sqlite:///{path}"
    await upgrade(url)
    copies: list[None] = []

    def counted(db: sqlite3.Connection) -> None:
        checkpoint_passive(db)
        copies.append(None)

    monkeypatch.setattr(checkpoints, "checkpoint_passive", counted)
    store = SQLStore(url)
    wal = path.with_name(path.name + "-wal")
    commits, starts, sizes = 0, -1, []
    deadline = time.monotonic() + SECONDS
    try:
        # one coroutine that never waits for anything outside the store: a loop as busy with
        # commits as it can be (the checkpoint's thread is never waited for by a callback)
        while len(sizes) < STARTS:
            async with store.transaction(lock="bench:r") as tx:
                await tx.log_roll(_record(commits))
            commits += 1
            now = _starts(wal)
            if starts >= 0 and now != starts:  # this commit wrote the WAL from its start ...
                sizes.append(wal.stat().st_size)  # ... and cut it back
            starts = now
            assert time.monotonic() < deadline, f"WAL started again {len(sizes)} times"
        # How many commits one copy takes depends on the disk (it syncs the file): so the test
        # does not bound the WAL's size between two starts, but checks that every checkpoint
        # (two copies) was followed by a start, and that each start cut the file back. Each
        # commit writes two or three pages (~9 KB): without the cut the WAL would keep them all
        assert len(copies) <= 2 * STARTS + 1, (len(copies), commits)
        assert max(sizes) <= WAL_SIZE_LIMIT + 64 * 1024, sizes
        assert commits > CHECKPOINT_EVERY
        assert len(await store.rolls("bench:r", limit=None)) == commits
    finally:
        await store.close()
    # the file holds every roll once the store is closed
    reopened = SQLStore(url)
    try:
        rolls = await reopened.rolls("bench:r", limit=None)
        assert [r.id for r in rolls[:2]] == [f"r{commits - 1:06d}", f"r{commits - 2:06d}"]
        assert len(rolls) == commits
    finally:
        await reopened.close()
