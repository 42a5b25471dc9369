"""The SQL store on SQLite, through the standard library's :mod:`sqlite3` on the event loop: the
statements, the connections, the transaction and the wait for another process's write lock
(:class:`coterie.storage.sql.SQLStore` drives them; see its module for the design)."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import json
import logging
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coterie.storage.character_rows import UNDO_DEPTH, Character, parse_sheet
from coterie.storage.groupcommit import join_group, open_group, wants_group
from coterie.storage.readahead import expected
from coterie.storage.state import RollRecord, row_record

if TYPE_CHECKING:
    from coterie.storage.sql import SQLStore


from coterie.storage.rows import ROLL_FIELDS, T, dumps_json, is_busy, roll_row

log = logging.getLogger("coterie.storage.sql")

#: the SQLite stores whose write transaction the current task is inside (to refuse a nested
#: write, which would otherwise wait for itself)
writing: contextvars.ContextVar[frozenset[int]] = contextvars.ContextVar(
    "coterie_sqlstore_writing", default=frozenset()
)

#: how long a SQLite writer waits for another process's write lock before failing
SQLITE_BUSY_TIMEOUT_MS = 30_000
#: commits of a SQLite store between two checkpoints of its WAL into the database file; the
#: checkpoint (which syncs the file to disk) runs in a thread, never on the event loop
CHECKPOINT_EVERY = 200
#: bytes the WAL file is cut back to when SQLite starts it again after a checkpoint (between two
#: checkpoints it holds :data:`CHECKPOINT_EVERY` commits, a few pages each: about 2 MB)
WAL_SIZE_LIMIT = 4 * 1024 * 1024


_UPSERT = (
    "INSERT INTO kv (namespace, key, value, updated_at) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value, "
    "updated_at = excluded.updated_at"
)
#: rows a transaction's kept ``kv`` writes are made in at most, per statement (4 variables a row,
#: far under SQLite's limit on variables)
_ROWS_AT_ONCE = 200


@functools.lru_cache(maxsize=32)
def _upsert(rows: int) -> str:
    """:data:`_UPSERT` for ``rows`` rows at once."""
    values = ", ".join(["(?, ?, ?, ?)"] * rows)
    return _UPSERT.replace("VALUES (?, ?, ?, ?)", f"VALUES {values}")


@functools.lru_cache(maxsize=32)
def _any_of(keys: int) -> str:
    """A ``WHERE`` condition matching any of ``keys`` ``kv`` keys: ``(namespace = ? AND key = ?)``
    terms joined by ``OR``, which SQLite looks up term by term in the primary key (a row-value
    ``IN (VALUES ...)`` would scan the table)."""
    return " OR ".join(["(namespace = ? AND key = ?)"] * keys)


SELECT_VALUE = "SELECT value FROM kv WHERE namespace = ? AND key = ?"
_INSERT_ROLL = (
    f"INSERT INTO rolls ({', '.join(f'{chr(34)}{name}{chr(34)}' for name in ROLL_FIELDS)}) "
    f"VALUES ({', '.join('?' for _ in ROLL_FIELDS)})"
)
_SELECT_ROLLS = (
    f"SELECT {', '.join(f'{chr(34)}{name}{chr(34)}' for name in ROLL_FIELDS)} FROM rolls"
)
#: a row of the ``rolls`` table (its columns in ``ROLL_FIELDS`` order) as a record
roll_record = row_record


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
        db.execute(f"PRAGMA journal_size_limit = {WAL_SIZE_LIMIT}")
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


#: values a SQLite store remembers at most (then it starts again from none)
REMEMBERED_VALUES = 4096


class RememberedValues:
    """The ``kv`` values a SQLite store read through its writing connection, as stored (JSON
    text, ``None`` for none), kept while nothing else wrote to the file: SQLite's
    ``PRAGMA data_version`` changes whenever *another* connection — another process, a plugin's
    SQLAlchemy engine — commits, and then every value is forgotten; this store's own writes forget
    their keys as they are made (:class:`LiteTransaction`; a write through the writing connection
    made any other way would not be seen: there is none). A look-up still asks the file whether it
    changed (the pragma costs about half the read it replaces), so nothing stale is ever
    answered."""

    __slots__ = ("values", "version")

    def __init__(self) -> None:
        self.values: dict[tuple[str, str], str | None] = {}
        self.version = -1

    def check(self, db: sqlite3.Connection) -> None:
        """Forget every value if another connection wrote to the file since they were read
        (``db``: the writing connection; inside its write transaction this costs no system
        call, outside one it takes SQLite's read lock)."""
        version = db.execute("PRAGMA data_version").fetchone()[0]
        if version != self.version:
            self.values.clear()
            self.version = version

    def read(self, db: sqlite3.Connection, namespace: str, key: str) -> str | None:
        """The stored text of one value (``None``: no value), from memory when the file has not
        changed since it was read, else from ``db`` (which must be outside a transaction)."""
        self.check(db)
        values = self.values
        wanted = (namespace, key)
        if wanted in values:
            return values[wanted]
        found = db.execute(SELECT_VALUE, wanted).fetchone()
        text: str | None = None if found is None else found[0]
        if len(values) >= REMEMBERED_VALUES:
            values.clear()
        values[wanted] = text
        return text


class LiteTransaction:
    """The reads and writes of one SQLite write transaction (on the store's writing
    connection, which holds the write lock from ``BEGIN IMMEDIATE`` to ``COMMIT``).

    A ``kv`` read is answered from the store's remembered values (:class:`RememberedValues`)
    when it holds the key: :class:`LiteScope` has checked, inside the transaction (where the
    pragma costs no system call), that no other connection wrote since they were read. A value
    read here joins them unless this transaction wrote it (or ran a statement of its own, which
    may have written anything): it is then the committed one, which a rollback leaves as it is.
    Every write forgets its key.

    Each statement is a call into SQLite that, between the other tasks of a busy event loop,
    costs tens of microseconds whatever it does, so a transaction makes few of them:

    * the first ``kv`` read that is not remembered also reads the keys the transaction was said
      to read (:mod:`coterie.storage.readahead`: a delivery's answered-event record), in one
      ``SELECT``;
    * ``kv`` writes are kept (encoded at once, so a value JSON cannot hold is refused where it is
      written) and made together, in one statement, before anything that could read them in SQL
      (:meth:`keys`, :meth:`execute`) and before ``COMMIT`` (:meth:`flush`); a read of a key
      written here answers the written value."""

    __slots__ = ("_db", "_pending", "_values", "_written")

    def __init__(
        self,
        db: sqlite3.Connection,
        values: dict[tuple[str, str], str | None],
        written: set[tuple[str, str]] | None,
    ) -> None:
        self._db = db
        #: the store's remembered values (:class:`RememberedValues`): a write forgets its key
        self._values = values
        #: the keys this transaction wrote, with those of the transactions before it in its
        #: commit group (:class:`LiteScope`); ``None``: any may have been written
        self._written = written
        #: ``kv`` writes not made yet: key → (JSON text, time), ``None`` for a delete
        self._pending: dict[tuple[str, str], tuple[str, float] | None] = {}

    def execute(self, statement: str, parameters: tuple[Any, ...] = ()) -> sqlite3.Cursor:
        """Run one statement in this transaction (the store's own housekeeping)."""
        self.flush()
        self._values.clear()  # it may change any value
        self._written = None
        return self._db.execute(statement, parameters)

    def flush(self) -> None:
        """Make the ``kv`` writes kept so far (one statement for the values, one for deletes)."""
        pending = self._pending
        if not pending:
            return
        stored = [(*key, *change) for key, change in pending.items() if change is not None]
        gone = [key for key, change in pending.items() if change is None]
        pending.clear()
        db = self._db
        for start in range(0, len(stored), _ROWS_AT_ONCE):
            rows = stored[start : start + _ROWS_AT_ONCE]
            db.execute(_upsert(len(rows)), [value for row in rows for value in row])
        for start in range(0, len(gone), _ROWS_AT_ONCE):
            keys = gone[start : start + _ROWS_AT_ONCE]
            db.execute("DELETE FROM kv WHERE " + _any_of(len(keys)), [p for k in keys for p in k])

    async def get(self, namespace: str, key: str) -> Any | None:
        wanted = (namespace, key)
        if wanted in self._pending:
            change = self._pending[wanted]
            return None if change is None else json.loads(change[0])
        values = self._values
        text = values[wanted] if wanted in values else self._read(wanted)
        return None if text is None else json.loads(text)

    def _read(self, wanted: tuple[str, str]) -> str | None:
        """The stored text of ``wanted``, read with the keys said to be read and not known yet
        (one statement), each remembered where this transaction did not write it."""
        values = self._values
        written = self._written
        keys = [wanted]
        for said in expected():
            if said not in values and said not in keys and (written is None or said not in written):
                keys.append(said)
        if len(keys) == 1:
            found = self._db.execute(SELECT_VALUE, wanted).fetchone()
            texts = {wanted: None if found is None else found[0]}
        else:
            query = "SELECT namespace, key, value FROM kv WHERE " + _any_of(len(keys))
            rows = self._db.execute(query, [part for pair in keys for part in pair]).fetchall()
            texts = dict.fromkeys(keys)
            texts.update(((namespace, key), text) for namespace, key, text in rows)
        if written is not None:
            for read, text in texts.items():
                if read not in written and len(values) < REMEMBERED_VALUES:
                    values[read] = text
        return texts[wanted]

    async def set(self, namespace: str, key: str, value: Any) -> None:
        self._wrote((namespace, key))
        self._pending[(namespace, key)] = (dumps_json(value), time.time())

    async def delete(self, namespace: str, key: str) -> None:
        self._wrote((namespace, key))
        self._pending[(namespace, key)] = None

    def _wrote(self, key: tuple[str, str]) -> None:
        self._values.pop(key, None)
        if self._written is not None:
            self._written.add(key)

    async def keys(self, namespace: str, prefix: str = "") -> list[str]:
        self.flush()
        return lite_keys(self._db, namespace, prefix)

    async def log_roll(self, record: RollRecord) -> None:
        self._db.execute(_INSERT_ROLL, roll_row(record))

    # characters (coterie.storage.character_rows.CharacterStore)

    async def active_character(
        self, chronicle: str, owner: str, *, readonly: bool = False
    ) -> Character | None:
        return lite_active(self._db, chronicle, owner, readonly)

    async def characters(self, chronicle: str, owner: str | None = None) -> list[Character]:
        return lite_characters(self._db, chronicle, owner)

    async def save_character(
        self, chronicle: str, owner: str, key: str, sheet: dict[str, Any]
    ) -> None:
        self._db.execute(_UPSERT_CHARACTER, (chronicle, owner, key, dumps_json(sheet), time.time()))

    async def delete_character(self, chronicle: str, owner: str, key: str) -> None:
        self._db.execute(
            "DELETE FROM characters WHERE chronicle = ? AND owner = ? AND key = ?",
            (chronicle, owner, key),
        )

    async def set_active(self, chronicle: str, owner: str, key: str | None) -> None:
        self._db.execute(
            "UPDATE characters SET active = COALESCE(key = ?, 0) WHERE chronicle = ? AND owner = ?",
            (key, chronicle, owner),
        )

    async def push_change(
        self, chronicle: str, author: str, change: dict[str, Any], keep: int = UNDO_DEPTH
    ) -> None:
        db = self._db
        db.execute(
            "INSERT INTO character_changes (chronicle, author, change) VALUES (?, ?, ?)",
            (chronicle, author, dumps_json(change)),
        )
        db.execute(_TRIM_CHANGES, (chronicle, author, chronicle, author, max(keep, 0)))

    async def pop_change(self, chronicle: str, author: str) -> dict[str, Any] | None:
        found = self._db.execute(
            "SELECT seq, change FROM character_changes WHERE chronicle = ? AND author = ? "
            "ORDER BY seq DESC LIMIT 1",
            (chronicle, author),
        ).fetchone()
        if found is None:
            return None
        self._db.execute("DELETE FROM character_changes WHERE seq = ?", (found[0],))
        change: dict[str, Any] = json.loads(found[1])
        return change

    async def changes(self, chronicle: str, author: str) -> list[dict[str, Any]]:
        return lite_changes(self._db, chronicle, author)


_UPSERT_CHARACTER = (
    "INSERT INTO characters (chronicle, owner, key, sheet, active, updated_at) "
    "VALUES (?, ?, ?, ?, 0, ?) ON CONFLICT (chronicle, owner, key) DO UPDATE SET "
    "sheet = excluded.sheet, updated_at = excluded.updated_at"
)
#: forget all but the newest ``keep`` changes of an author
_TRIM_CHANGES = (
    "DELETE FROM character_changes WHERE chronicle = ? AND author = ? AND seq NOT IN "
    "(SELECT seq FROM character_changes WHERE chronicle = ? AND author = ? "
    "ORDER BY seq DESC LIMIT ?)"
)


def lite_active(
    db: sqlite3.Connection, chronicle: str, owner: str, readonly: bool = False
) -> Character | None:
    """The active character: one SELECT (the roll by name's one read)."""
    found = db.execute(
        "SELECT key, sheet FROM characters WHERE chronicle = ? AND owner = ? AND active",
        (chronicle, owner),
    ).fetchone()
    if found is None:
        return None
    return Character(owner, found[0], parse_sheet(found[1], readonly), True)


def lite_characters(db: sqlite3.Connection, chronicle: str, owner: str | None) -> list[Character]:
    query = "SELECT owner, key, sheet, active FROM characters WHERE chronicle = ?"
    args: tuple[str, ...] = (chronicle,)
    if owner is not None:
        query += " AND owner = ?"
        args += (owner,)
    rows = db.execute(query + " ORDER BY owner, key", args).fetchall()
    found = [Character(o, key, json.loads(sheet), bool(active)) for o, key, sheet, active in rows]
    # ordered in Python as every store orders them (a collation could differ)
    return sorted(found, key=lambda c: (c.owner, c.key))


def lite_changes(db: sqlite3.Connection, chronicle: str, author: str) -> list[dict[str, Any]]:
    rows = db.execute(
        "SELECT change FROM character_changes WHERE chronicle = ? AND author = ? ORDER BY seq",
        (chronicle, author),
    )
    return [json.loads(change) for (change,) in rows]


def lite_keys(db: sqlite3.Connection, namespace: str, prefix: str) -> list[str]:
    found = db.execute(
        "SELECT key FROM kv WHERE namespace = ? AND substr(key, 1, ?) = ?",
        (namespace, len(prefix), prefix),
    )
    return sorted(k for (k,) in found if k.startswith(prefix))


class LiteScope:
    """One SQLite write transaction as an ``async with`` (a class, not a generator: every
    command opens one): the store's write lock, ``BEGIN IMMEDIATE`` (waiting in the event loop
    while another process holds SQLite's lock), then ``COMMIT`` on a clean exit, else
    ``ROLLBACK``. When other transactions wait for the writer as it ends, it commits with them
    instead (:class:`~coterie.storage.groupcommit.CommitGroup`) and returns once it is made."""

    __slots__ = ("_db", "_group", "_store", "_token", "_tx")

    def __init__(self, store: SQLStore) -> None:  # (its SQLite parts)
        self._store = store

    async def __aenter__(self) -> LiteTransaction:
        store = self._store
        lock = store._write_lock
        await lock.acquire()
        try:
            group = join_group(store)
            if group is not None:
                db, written = store._lite(), group.written
            else:
                written = set()
                checkpoints = store._checkpoints
                if checkpoints is not None and checkpoints.drain is not None:
                    await checkpoints.drained()
                db = store._lite()
                try:
                    db.execute("BEGIN IMMEDIATE")
                except sqlite3.OperationalError as error:
                    if not is_busy(error):
                        raise
                    await when_free(lambda: db.execute("BEGIN IMMEDIATE"), "BEGIN IMMEDIATE")
                try:
                    store._values.check(db)
                except BaseException:
                    db.execute("ROLLBACK")
                    raise
        except BaseException:
            lock.release()
            raise
        self._db = db
        self._group = group
        self._token = writing.set(writing.get() | {id(store)})
        self._tx = LiteTransaction(db, store._values.values, written)
        return self._tx

    async def __aexit__(self, kind: object, error: object, trace: object) -> None:
        db, group, store = self._db, self._group, self._store
        try:
            if kind is not None:
                log.debug("transaction rolled back: %r", error)
                self._roll_back()
                return
            try:
                self._tx.flush()  # the writes kept until now, then the commit
                if group is not None:
                    db.execute("RELEASE grouped")
                    group.written = self._tx._written
                elif wants_group(store):  # one commit for them all
                    group = self._group = open_group(store, self._tx._written)
                else:
                    db.execute("COMMIT")
            except BaseException:
                self._roll_back()
                raise
            if group is None:
                checkpoints = store._checkpoints
                if checkpoints is not None:
                    checkpoints.committed()
        finally:
            writing.reset(self._token)
            store._write_lock.release()
        if group is not None:
            # durable with the group's commit (made even if this task is cancelled meanwhile)
            await asyncio.shield(group.committed)

    def _roll_back(self) -> None:
        db = self._db
        if not db.in_transaction:
            return
        if self._group is None:
            db.execute("ROLLBACK")
        else:  # this transaction alone: the group's others stay
            db.execute("ROLLBACK TO grouped")
            db.execute("RELEASE grouped")
