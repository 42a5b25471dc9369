"""The SQL store on SQLite, through the standard library's :mod:`sqlite3` on the event loop: the
statements, the connections, the transaction and the wait for another process's write lock
(:class:`coterie.storage.sql.SQLStore` drives them; see its module for the design)."""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coterie.storage.state import RollRecord

if TYPE_CHECKING:
    pass


from coterie.storage.rows import ROLL_FIELDS, T, dumps_json, is_busy, roll_row

log = logging.getLogger("coterie.storage.sql")

#: how long a SQLite writer waits for another process's write lock before failing
SQLITE_BUSY_TIMEOUT_MS = 30_000
#: commits of a SQLite store between two checkpoints of its WAL into the database file; the
#: checkpoint (which syncs the file to disk) runs in a thread, never on the event loop
CHECKPOINT_EVERY = 200


_UPSERT = (
    "INSERT INTO kv (namespace, key, value, updated_at) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value, "
    "updated_at = excluded.updated_at"
)
_INSERT_ROLL = (
    f"INSERT INTO rolls ({', '.join(f'{chr(34)}{name}{chr(34)}' for name in ROLL_FIELDS)}) "
    f"VALUES ({', '.join('?' for _ in ROLL_FIELDS)})"
)
_SELECT_ROLLS = (
    f"SELECT {', '.join(f'{chr(34)}{name}{chr(34)}' for name in ROLL_FIELDS)} FROM rolls"
)
_FACES = ROLL_FIELDS.index("faces")
_DETAIL = ROLL_FIELDS.index("detail")
_BOTCH = ROLL_FIELDS.index("botch")


def roll_record(row: tuple[Any, ...]) -> RollRecord:
    values = list(row)
    values[_FACES] = json.loads(values[_FACES])
    values[_DETAIL] = json.loads(values[_DETAIL])
    values[_BOTCH] = bool(values[_BOTCH])
    return RollRecord(**dict(zip(ROLL_FIELDS, values, strict=True)))


def select_lite_rolls(
    db: sqlite3.Connection, room: str, limit: int | None, user: str | None, session: str | None
) -> list[RollRecord]:
    query = _SELECT_ROLLS + " WHERE room = ?"
    args: list[Any] = [room]
    if user is not None:
        query += ' AND "user" = ?'
        args.append(user)
    if session is not None:
        query += " AND session = ?"
        args.append(session)
    query += " ORDER BY seq DESC"
    if limit is not None:
        query += " LIMIT ?"
        args.append(max(limit, 0))
    return [roll_record(row) for row in db.execute(query, args)]


def connect_sqlite(path: Path) -> sqlite3.Connection:
    """A connection to the database file at ``path`` in autocommit mode (coterie writes its own
    ``BEGIN``), in WAL mode, that never waits inside SQLite for a lock."""
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, cached_statements=256)
    try:
        db.execute("PRAGMA busy_timeout = 0")
        if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = NORMAL")
        db.execute("PRAGMA cache_size = -8192")  # 8 MiB: the roll log's indexes stay in memory
    except BaseException:
        db.close()
        raise
    return db


async def when_free(work: Callable[[], T], what: str) -> T:
    """``work()``, again after a short wait each time SQLite says another connection holds
    the lock it needs, for at most :data:`SQLITE_BUSY_TIMEOUT_MS` (the wait is in the event
    loop: other tasks run meanwhile)."""
    try:
        return work()
    except sqlite3.OperationalError as error:
        if not is_busy(error):
            raise
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_MS / 1000
    delay = 0.0005
    while True:
        await asyncio.sleep(delay)
        try:
            return work()
        except sqlite3.OperationalError as error:
            if not is_busy(error) or time.monotonic() > deadline:
                raise
            log.debug("%s: database is locked; waiting", what)
        delay = min(delay * 2, 0.02)


class LiteTransaction:
    """The reads and writes of one SQLite write transaction (on the store's writing
    connection, which holds the write lock from ``BEGIN IMMEDIATE`` to ``COMMIT``)."""

    __slots__ = ("_db",)

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def execute(self, statement: str, parameters: tuple[Any, ...] = ()) -> sqlite3.Cursor:
        """Run one statement in this transaction (the store's own housekeeping)."""
        return self._db.execute(statement, parameters)

    async def get(self, namespace: str, key: str) -> Any | None:
        found = self._db.execute(
            "SELECT value FROM kv WHERE namespace = ? AND key = ?", (namespace, key)
        ).fetchone()
        return None if found is None else json.loads(found[0])

    async def set(self, namespace: str, key: str, value: Any) -> None:
        self._db.execute(_UPSERT, (namespace, key, dumps_json(value), time.time()))

    async def delete(self, namespace: str, key: str) -> None:
        self._db.execute("DELETE FROM kv WHERE namespace = ? AND key = ?", (namespace, key))

    async def keys(self, namespace: str, prefix: str = "") -> list[str]:
        return lite_keys(self._db, namespace, prefix)

    async def log_roll(self, record: RollRecord) -> None:
        self._db.execute(_INSERT_ROLL, roll_row(record))


def lite_keys(db: sqlite3.Connection, namespace: str, prefix: str) -> list[str]:
    found = db.execute(
        "SELECT key FROM kv WHERE namespace = ? AND substr(key, 1, ?) = ?",
        (namespace, len(prefix), prefix),
    )
    return sorted(k for (k,) in found if k.startswith(prefix))
