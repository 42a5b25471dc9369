"""The SQLite store's WAL checkpoints: the WAL copied into the database file in a thread of the
store's own, never on the event loop (a checkpoint syncs the file: milliseconds), and in two
copies so that the WAL starts again from its beginning under a steady flow of commits.

SQLite writes the WAL again from its start only when a write transaction begins with every
frame in it copied to the database. The copy runs while commits go on, and under a steady flow
of them some always land meanwhile: the WAL would grow for ever (it did, to 275 MB after 30,000
rolls, each commit a little slower than the last). So once the first copy is done, a second one
copies the frames committed meanwhile (a few pages), and the next write transaction waits for it
(in the event loop: other tasks go on) before it begins; that transaction finds every frame
copied, SQLite starts the WAL again, and ``journal_size_limit`` cuts the file back
(:data:`~coterie.storage.sqlite.WAL_SIZE_LIMIT`)."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from coterie.storage.sqlite import CHECKPOINT_EVERY, connect_sqlite

log = logging.getLogger("coterie.storage.sql")


def checkpoint_passive(db: sqlite3.Connection) -> None:
    """Copy what the WAL holds into the database file without waiting for any lock (SQLite's
    ``PASSIVE`` checkpoint, on a connection of its own; a failure is left to the next one)."""
    try:
        db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
    except sqlite3.Error as error:
        log.debug("WAL checkpoint: %s", error)


class Checkpoints:
    """One SQLite file's checkpoints: :meth:`committed` after each commit (its write lock still
    held), :meth:`drained` before each write transaction begins (holding it), :meth:`close`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._commits = 0
        #: the first copy running in the thread, and the second (the next write waits for it)
        self._running: Future[None] | None = None
        self.drain: Future[None] | None = None
        self._thread: ThreadPoolExecutor | None = None
        self._db: sqlite3.Connection | None = None

    def committed(self) -> None:
        """Every :data:`CHECKPOINT_EVERY` commits, start a copy; once it is done, the second.
        The thread's work is looked at here, synchronously: a loop busy with commits need not
        come round to a callback for it."""
        self._commits += 1
        running = self._running
        if running is not None:
            if running.done():  # then the frames committed meanwhile, before the next write
                self._running = None
                self.drain = self._submit()
            return
        if self._commits >= CHECKPOINT_EVERY:
            self._commits = 0
            self._running = self._submit()

    def _submit(self) -> Future[None]:
        if self._thread is None:
            self._thread = ThreadPoolExecutor(1, thread_name_prefix="coterie-wal")
        if self._db is None:
            self._db = connect_sqlite(self.path)
        return self._thread.submit(checkpoint_passive, self._db)

    async def drained(self) -> None:
        """Wait for the second copy, if one runs (what a write transaction does first)."""
        drain, self.drain = self.drain, None
        if drain is not None and not drain.done():
            await asyncio.wrap_future(drain)

    async def close(self) -> None:
        """Wait for a copy under way, then stop the thread and close the connection."""
        for running in (self._running, self.drain):
            if running is not None:
                await asyncio.wait([asyncio.wrap_future(running)])
        self._running = self.drain = None
        if self._thread is not None:
            self._thread.shutdown(wait=True)
            self._thread = None
        if self._db is not None:
            self._db.close()
            self._db = None
