"""The SQLite store's WAL stays bounded under a steady flow of commits (issue 18).

SQLite writes the WAL again from its start only when a write transaction begins with every frame
copied to the database file. The store's checkpoint runs in a thread while commits go on, so
without the second copy (see ``SQLStore._checkpoint_soon``) some frames were always left behind
and the WAL grew for ever: 275 MB after 30,000 rolls, each commit slower than the last."""

from __future__ import annotations

import sqlite3
from pathlib import Path

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


def _frames(path: Path) -> int:
    """Frames in the WAL now (a checkpoint on a connection of the test's own reports them)."""
    db = sqlite3.connect(path, isolation_level=None)
    try:
        _, frames, _ = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()[0]
    finally:
        db.close()
    return int(frames)


async def test_wal_restarts_under_a_steady_flow_of_commits(tmp_path: Path) -> None:
    path = tmp_path / "coterie.db"
    url = f"sqlite:///{path}"
    await upgrade(url)
    store = SQLStore(url)
    commits = CHECKPOINT_EVERY * 12
    try:
        # one coroutine that never waits for anything outside the store: a loop as busy with
        # commits as it can be (the checkpoint's thread is never waited for by a callback)
        for n in range(commits):
            async with store.transaction(lock="bench:r") as tx:
                await tx.log_roll(_record(n))
        wal = path.with_name(path.name + "-wal")
        # each commit writes two or three pages (~9 KB): all of them would be ~20 MB
        assert wal.stat().st_size <= WAL_SIZE_LIMIT + 64 * 1024
        assert _frames(path) < 3 * CHECKPOINT_EVERY
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
