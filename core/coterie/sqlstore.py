"""The persistent state store: SQLite (WAL, the default) or PostgreSQL.

:class:`SQLStore` implements :class:`coterie.state.StateStore` over two tables, ``kv`` (JSON values
by namespace and key) and ``rolls`` (the roll log); the schema is kept by the Alembic migrations
in ``coterie/migrations`` and applied by :func:`upgrade` (``open_store`` does it on start when
the database is behind, ``coterie db upgrade`` by hand). See ``docs/storage.md``.

Transactions and locking:

* **SQLite** (``sqlite:///path``, the default) is driven through the standard library's
  :mod:`sqlite3` directly on the event loop: a statement on a local file takes microseconds, far
  less than a hop to a database thread would. Each store keeps two connections, one that writes
  and one that reads what is committed. Every write transaction starts with ``BEGIN IMMEDIATE``,
  so it holds SQLite's single write lock from its first statement: writers are serialised across
  tasks, stores and processes on the same file, and a read-modify-write never loses an update.
  No call ever waits inside SQLite (the busy timeout is 0): when another process holds the lock,
  the transaction waits for it in the event loop (``asyncio.sleep``, up to
  :data:`SQLITE_BUSY_TIMEOUT_MS`), so other rooms and adapters go on meanwhile. Within one store,
  write transactions also queue on an asyncio lock. WAL mode lets readers go on while one writer
  works; ``synchronous = NORMAL``: a committed transaction is in the WAL file before the call
  returns, so it survives the process being killed (a power cut may lose the last commits).
  SQLAlchemy and Alembic are imported only when the schema has to be created or migrated.
* **PostgreSQL** (``postgresql+asyncpg://...``), through SQLAlchemy 2 (async) and asyncpg: a
  transaction with a ``lock`` first takes the transaction-scoped advisory lock of that key
  (``pg_advisory_xact_lock``), so two transactions on the same room never interleave, whichever
  worker process or engine runs them; transactions on different rooms run in parallel.

A transaction's writes land when its block ends normally; an exception rolls back every write and
every logged roll of the block.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import json
import logging
import sqlite3
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import unquote

from coterie.errors import ConfigError
from coterie.state import MemoryStore, RollRecord, StateStore, Transaction, check_json

if TYPE_CHECKING:
    from sqlalchemy.engine import URL, Connection
    from sqlalchemy.ext.asyncio import AsyncEngine

    from coterie.config import Config

log = logging.getLogger(__name__)

#: how long a SQLite writer waits for another process's write lock before failing
SQLITE_BUSY_TIMEOUT_MS = 30_000
#: the first key of coterie's PostgreSQL advisory locks (the second is ``hashtext(lock)``), so
#: they do not collide with another application's locks on the same database
ADVISORY_CLASS = 0x0C07E
#: the advisory lock taken while migrating, so that two workers starting together take turns
MIGRATION_LOCK = "coterie.migrations"
#: attempts of a transaction that failed on a serialization failure or a deadlock
RETRY_ATTEMPTS = 4
#: the newest migration in ``coterie/migrations/versions`` (a test checks it is Alembic's head):
#: start-up compares a SQLite database's ``alembic_version`` with it before importing Alembic
SCHEMA_HEAD = "0001"
#: commits of a SQLite store between two checkpoints of its WAL into the database file; the
#: checkpoint (which syncs the file to disk) runs in a thread, never on the event loop
CHECKPOINT_EVERY = 200

_FIELDS = [f.name for f in dataclasses.fields(RollRecord)]
_JSON_COLUMNS = ("faces", "detail")

T = TypeVar("T")


def _define_tables() -> SimpleNamespace:
    import sqlalchemy as sa

    metadata = sa.MetaData()
    #: JSON values by namespace and key
    kv = sa.Table(
        "kv",
        metadata,
        sa.Column("namespace", sa.Text, nullable=False),
        sa.Column("key", sa.Text, nullable=False),
        sa.Column("value", sa.Text, nullable=False),
        sa.Column("updated_at", sa.Double, nullable=False),
        sa.PrimaryKeyConstraint("namespace", "key", name="pk_kv"),
    )
    #: the roll log, one row per :class:`~coterie.state.RollRecord`, in order of logging (``seq``)
    rolls = sa.Table(
        "rolls",
        metadata,
        sa.Column(
            "seq",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            primary_key=True,
            autoincrement=True,
        ),
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("room", sa.Text, nullable=False),
        sa.Column("user", sa.Text, nullable=False),
        sa.Column("display_name", sa.Text, nullable=False),
        sa.Column("variant", sa.Text, nullable=False),
        sa.Column("request", sa.Text, nullable=False),
        sa.Column("faces", sa.Text, nullable=False),
        sa.Column("outcome", sa.Text, nullable=False),
        sa.Column("successes", sa.Integer, nullable=False),
        sa.Column("botch", sa.Boolean, nullable=False),
        sa.Column("expected", sa.Double, nullable=True),
        sa.Column("session", sa.Text, nullable=True),
        sa.Column("time", sa.Double, nullable=False),
        sa.Column("detail", sa.Text, nullable=False),
        sa.UniqueConstraint("id", name="uq_rolls_id"),
        sa.Index("ix_rolls_room_seq", "room", "seq"),
    )
    return SimpleNamespace(metadata=metadata, kv=kv, rolls=rolls)


_tables: SimpleNamespace | None = None


def tables() -> SimpleNamespace:
    """The SQLAlchemy ``metadata`` and the ``kv`` and ``rolls`` tables (SQLAlchemy is imported
    on first use: the SQLite hot path and start-up never need it)."""
    global _tables
    if _tables is None:
        _tables = _define_tables()
    return _tables


def __getattr__(name: str) -> Any:
    # ``from coterie.sqlstore import metadata`` (Alembic's env.py), ``kv``, ``rolls``
    if name in ("metadata", "kv", "rolls"):
        return getattr(tables(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _dumps(value: Any) -> str:
    """``value`` as compact JSON text; refuses what :func:`~coterie.state.check_json` refuses
    (``allow_nan=False``: NaN and infinities; anything JSON cannot hold)."""
    return _ENCODER.encode(value)


#: one encoder for every value (``json.dumps`` with options builds a new one per call)
_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def _sqlite_path(url: str) -> Path | None:
    """The file of a ``sqlite[+driver]:///path`` URL, without SQLAlchemy; ``None`` for any
    other URL. (Query parameters are ignored.)"""
    scheme, sep, rest = url.strip().partition("://")
    if not sep or scheme.split("+")[0].lower() != "sqlite":
        return None
    database = unquote(rest[1:].partition("?")[0]) if rest.startswith("/") else ""
    if database in ("", ":memory:"):
        raise ConfigError(
            "state.url: an in-memory SQLite database is not shared between connections; "
            "use memory:// for a store that lives as long as the process"
        )
    return Path(database).expanduser()


def normalize_url(url: str | URL) -> URL:
    """The async-driver URL of ``url``: ``sqlite://`` becomes ``sqlite+aiosqlite://`` and
    ``postgresql://`` ``postgresql+asyncpg://``; other databases are refused."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url) if isinstance(url, str) else url
    except ArgumentError:
        raise ConfigError(
            f"state.url: {str(url)!r} is not a database URL; use e.g. "
            "sqlite:///data/coterie.db, postgresql+asyncpg://user@host/db or memory://"
        ) from None
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        if parsed.database in (None, "", ":memory:"):
            raise ConfigError(
                "state.url: an in-memory SQLite database is not shared between connections; "
                "use memory:// for a store that lives as long as the process"
            )
        return parsed.set(drivername="sqlite+aiosqlite")
    if backend in ("postgresql", "postgres"):
        return parsed.set(drivername="postgresql+asyncpg")
    raise ConfigError(
        f"state.url: coterie keeps its state in SQLite or PostgreSQL, not {backend!r}"
    )


def _safe(url: URL) -> str:
    return url.render_as_string(hide_password=True)


def create_engine(url: str | URL) -> AsyncEngine:
    """An async SQLAlchemy engine for ``url`` set up for coterie's transactions (on SQLite: WAL,
    a busy timeout, ``BEGIN IMMEDIATE`` for writes, and the database's directory created). The
    migrations use it; :class:`SQLStore` on SQLite only takes the file's path from it."""
    from sqlalchemy.exc import NoSuchModuleError
    from sqlalchemy.ext.asyncio import create_async_engine

    parsed = normalize_url(url)
    try:
        if parsed.get_backend_name() == "sqlite":
            assert parsed.database is not None
            Path(parsed.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
            engine = create_async_engine(parsed)
            _sqlite_events(engine)
        else:
            engine = create_async_engine(parsed, pool_pre_ping=True)
    except (NoSuchModuleError, ImportError) as error:  # pragma: no cover - dependencies missing
        raise ConfigError(f"state.url: no driver for {_safe(parsed)}: {error}") from None
    except OSError as error:
        raise ConfigError(
            f"state.url: cannot create the directory of {parsed.database}: {error.strerror}"
        ) from None
    return engine


def _sqlite_events(engine: AsyncEngine) -> None:
    from sqlalchemy import event

    @event.listens_for(engine.sync_engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        # The driver's own transaction handling (a BEGIN before the first write only) is off;
        # the "begin" hook below emits the BEGIN coterie wants.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA journal_mode = WAL")
        cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _begin(connection: Connection) -> None:
        mode = connection.get_execution_options().get("coterie_begin", "IMMEDIATE")
        connection.exec_driver_sql(f"BEGIN {mode}")


def _is_busy(error: BaseException) -> bool:
    """SQLite's "database is locked" (another connection holds the lock it needs)."""
    return isinstance(error, sqlite3.OperationalError) and (
        getattr(error, "sqlite_errorcode", None) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
        or "database is locked" in str(error)
    )


def is_retryable(error: BaseException) -> bool:
    """A failure that running the same transaction again may not meet: a PostgreSQL
    serialization failure or deadlock, or SQLite's lock wait running out."""
    if _is_busy(error) or getattr(error, "sqlstate", None) in ("40001", "40P01"):
        return True
    exc = sys.modules.get("sqlalchemy.exc")  # not imported: no SQLAlchemy error to look at
    if exc is None or not isinstance(error, exc.DBAPIError):
        return False
    orig = error.orig
    for candidate in (orig, getattr(orig, "__cause__", None)):
        if getattr(candidate, "sqlstate", None) in ("40001", "40P01"):
            return True
    return "database is locked" in str(orig)


async def atomically(
    store: StateStore,
    body: Callable[[Transaction], Awaitable[T]],
    *,
    lock: str = "",
    attempts: int = RETRY_ATTEMPTS,
) -> T:
    """Run ``body(tx)`` in ``store.transaction(lock)`` and return its result; when the database
    gives up on it (a deadlock, a serialization failure, a lock wait running out), run it again
    (at most ``attempts`` times). ``body`` must do nothing but its reads and writes through
    ``tx``: it may run more than once."""
    for attempt in range(1, attempts + 1):
        try:
            async with store.transaction(lock) as tx:
                return await body(tx)
        except Exception as error:
            if attempt == attempts or not is_retryable(error):
                raise
            log.info(
                "transaction %r: %s; trying again (%d)",
                lock,
                getattr(error, "orig", error),
                attempt,
            )
            await asyncio.sleep(0.01 * 2**attempt)
    raise AssertionError("unreachable")  # pragma: no cover


# --- SQLite through sqlite3, on the event loop ---------------------------------------------

_UPSERT = (
    "INSERT INTO kv (namespace, key, value, updated_at) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value, "
    "updated_at = excluded.updated_at"
)
_INSERT_ROLL = (
    f"INSERT INTO rolls ({', '.join(f'{chr(34)}{name}{chr(34)}' for name in _FIELDS)}) "
    f"VALUES ({', '.join('?' for _ in _FIELDS)})"
)
_SELECT_ROLLS = f"SELECT {', '.join(f'{chr(34)}{name}{chr(34)}' for name in _FIELDS)} FROM rolls"
_FACES = _FIELDS.index("faces")
_DETAIL = _FIELDS.index("detail")
_BOTCH = _FIELDS.index("botch")


def _roll_row(record: RollRecord) -> tuple[Any, ...]:
    """A roll record as the ``rolls`` row's values (in ``_FIELDS`` order), checked: the JSON
    columns as JSON text, the other fields of the types they are declared with."""
    row = vars(record)
    values = []
    for name in _FIELDS:
        value = row[name]
        if name in _JSON_COLUMNS:
            value = _dumps(value)
        elif type(value) not in _ATOMS:
            if type(value) is not float:
                raise TypeError(f"roll record field {name}: {value!r} is not JSON-compatible")
            check_json(value)  # NaN and infinities are refused, as by every store
        values.append(value)
    return tuple(values)


_ATOMS = frozenset({str, int, bool, type(None)})


def _roll_record(row: tuple[Any, ...]) -> RollRecord:
    values = list(row)
    values[_FACES] = json.loads(values[_FACES])
    values[_DETAIL] = json.loads(values[_DETAIL])
    values[_BOTCH] = bool(values[_BOTCH])
    return RollRecord(**dict(zip(_FIELDS, values, strict=True)))


def _select_rolls(
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
    return [_roll_record(row) for row in db.execute(query, args)]


def _connect_sqlite(path: Path) -> sqlite3.Connection:
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


async def _when_free(work: Callable[[], T], what: str) -> T:
    """``work()``, again after a short wait each time SQLite says another connection holds
    the lock it needs, for at most :data:`SQLITE_BUSY_TIMEOUT_MS` (the wait is in the event
    loop: other tasks run meanwhile)."""
    try:
        return work()
    except sqlite3.OperationalError as error:
        if not _is_busy(error):
            raise
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_MS / 1000
    delay = 0.0005
    while True:
        await asyncio.sleep(delay)
        try:
            return work()
        except sqlite3.OperationalError as error:
            if not _is_busy(error) or time.monotonic() > deadline:
                raise
            log.debug("%s: database is locked; waiting", what)
        delay = min(delay * 2, 0.02)


class _LiteTransaction:
    """The reads and writes of one SQLite write transaction (on the store's writing
    connection, which holds the write lock from ``BEGIN IMMEDIATE`` to ``COMMIT``)."""

    __slots__ = ("_db",)

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    async def get(self, namespace: str, key: str) -> Any | None:
        found = self._db.execute(
            "SELECT value FROM kv WHERE namespace = ? AND key = ?", (namespace, key)
        ).fetchone()
        return None if found is None else json.loads(found[0])

    async def set(self, namespace: str, key: str, value: Any) -> None:
        self._db.execute(_UPSERT, (namespace, key, _dumps(value), time.time()))

    async def delete(self, namespace: str, key: str) -> None:
        self._db.execute("DELETE FROM kv WHERE namespace = ? AND key = ?", (namespace, key))

    async def keys(self, namespace: str, prefix: str = "") -> list[str]:
        return _keys(self._db, namespace, prefix)

    async def log_roll(self, record: RollRecord) -> None:
        self._db.execute(_INSERT_ROLL, _roll_row(record))


def _keys(db: sqlite3.Connection, namespace: str, prefix: str) -> list[str]:
    found = db.execute(
        "SELECT key FROM kv WHERE namespace = ? AND substr(key, 1, ?) = ?",
        (namespace, len(prefix), prefix),
    )
    return sorted(k for (k,) in found if k.startswith(prefix))


# --- PostgreSQL through asyncpg: two round trips per transaction ---------------------------

#: a function each connection creates for itself (in its temporary schema, so no migration is
#: involved): take the session-level advisory lock of ``lock_key`` (none for ``''``), then read
#: the given keys. A VOLATILE PL/pgSQL function takes a fresh snapshot for each query, so the
#: read sees everything committed before the lock was granted.
_PG_SETUP = """
CREATE OR REPLACE FUNCTION pg_temp.coterie_lock_read(
    lock_class integer, lock_key text, namespaces text[], keys text[]
) RETURNS TABLE (namespace text, key text, value text) LANGUAGE plpgsql VOLATILE AS $body$
BEGIN
    IF lock_key <> '' THEN
        PERFORM pg_advisory_lock(lock_class, hashtext(lock_key));
    END IF;
    RETURN QUERY SELECT kv.namespace, kv.key, kv.value
        FROM kv JOIN unnest(namespaces, keys) AS wanted (ns, k)
        ON kv.namespace = wanted.ns AND kv.key = wanted.k;
END
$body$
"""
_PG_LOCK_READ = "SELECT namespace, key, value FROM pg_temp.coterie_lock_read($1, $2, $3, $4)"
#: connections a PostgreSQL store opens at most
PG_POOL_SIZE = 15
#: keys remembered per lock to read ahead in a transaction's first round trip; locks remembered
PG_READ_AHEAD_KEYS = 32
PG_READ_AHEAD_LOCKS = 1024
#: the channel on which a commit names the keys it changed (``NAMESPACE<US>KEY``; ``*``: any)
PG_CHANNEL = "coterie_kv"
#: values a PostgreSQL store keeps from ``get`` outside transactions
PG_CACHE_SIZE = 4096
_ROLL_COLUMNS = ", ".join(f'"{name}"' for name in _FIELDS)


def _notice(namespace: str, key: str) -> str:
    payload = f"{namespace}\x1f{key}"
    return payload if len(payload.encode()) < 7000 else "*"  # NOTIFY takes < 8000 bytes


_SELECT_PG_ROLLS = f"SELECT {_ROLL_COLUMNS} FROM rolls"


def _literal(value: Any) -> str:
    """``value`` (a str, int, float, bool or None) as a PostgreSQL literal, for the one
    multi-statement query that commits a transaction (``standard_conforming_strings`` is on
    for coterie's connections: only quotes are doubled in a string)."""
    if value is None:
        return "NULL"
    if value is True or value is False:
        return "TRUE" if value else "FALSE"
    if type(value) is int:
        return str(value)
    if type(value) is float:
        check_json(value)
        return f"'{value!r}'::float8"
    if type(value) is str:
        if "\x00" in value:
            raise ValueError("PostgreSQL text cannot hold a NUL character")
        return "'" + value.replace("'", "''") + "'"
    raise TypeError(f"not a SQL literal: {value!r}")


class _PGTransaction:
    """One transaction on PostgreSQL, usually in two round trips: its first operation takes
    the lock's advisory lock (the room is the transaction's from then on) and reads, in the
    same round trip, the key asked for with every key the last transaction on the same lock
    read (:data:`PG_READ_AHEAD_KEYS`); writes and logged rolls are kept here and sent with
    ``BEGIN``/``COMMIT`` and the unlock as one query when the block ends. A key not read ahead
    costs one more round trip."""

    def __init__(self, store: SQLStore, conn: Any, lock: str) -> None:
        self._store = store
        self._conn = conn
        self._lock = lock
        self.started = False
        #: a database call is under way (an exception now leaves the connection in doubt)
        self.busy = False
        self._read: dict[tuple[str, str], str | None] = {}
        self._writes: dict[tuple[str, str], str | None] = {}  # None: deleted
        self._rolls: list[tuple[Any, ...]] = []
        self._touched: list[tuple[str, str]] = []

    async def _start(self, first: tuple[str, str] | None) -> None:
        wanted = list(self._store._read_ahead.get(self._lock, ()))
        if first is not None and first not in wanted:
            wanted.append(first)
        self.busy = True
        rows = await self._conn.fetch(
            _PG_LOCK_READ,
            ADVISORY_CLASS,
            self._lock,
            [ns for ns, _ in wanted],
            [key for _, key in wanted],
        )
        self.busy = False
        self.started = True
        self._read = dict.fromkeys(wanted)
        for namespace, key, value in rows:
            self._read[(namespace, key)] = value

    async def _value(self, namespace: str, key: str) -> str | None:
        wanted = (namespace, key)
        if wanted in self._writes:
            return self._writes[wanted]
        if wanted not in self._touched:
            self._touched.append(wanted)
        if not self.started:
            await self._start(wanted)
        if wanted not in self._read:
            self.busy = True
            self._read[wanted] = await self._conn.fetchval(
                "SELECT value FROM kv WHERE namespace = $1 AND key = $2", namespace, key
            )
            self.busy = False
        return self._read[wanted]

    async def get(self, namespace: str, key: str) -> Any | None:
        found = await self._value(namespace, key)
        return None if found is None else json.loads(found)

    async def set(self, namespace: str, key: str, value: Any) -> None:
        text = _dumps(value)
        if self._lock and not self.started:  # the room is this transaction's from now on
            await self._start(None)
        self._writes[(namespace, key)] = text

    async def delete(self, namespace: str, key: str) -> None:
        if self._lock and not self.started:
            await self._start(None)
        self._writes[(namespace, key)] = None

    async def keys(self, namespace: str, prefix: str = "") -> list[str]:
        if not self.started:
            await self._start(None)
        self.busy = True
        rows = await self._conn.fetch(
            "SELECT key, value FROM kv WHERE namespace = $1 AND substr(key, 1, $2) = $3",
            namespace,
            len(prefix),
            prefix,
        )
        self.busy = False
        found = set()
        for key, value in rows:  # read here, so that reading them next costs nothing
            self._read.setdefault((namespace, key), value)
            found.add(key)
        for (ns, key), value in self._writes.items():
            if ns == namespace:
                (found.add if value is not None else found.discard)(key)
        # sorted here, not by the database: a PostgreSQL collation may order text differently
        return sorted(k for k in found if k.startswith(prefix))

    async def log_roll(self, record: RollRecord) -> None:
        row = _roll_row(record)
        if self._lock and not self.started:
            await self._start(None)
        self._rolls.append(row)

    def commit_query(self) -> str:
        """The one query that ends the transaction: the writes in key order (two commits on
        the same keys never deadlock), the rolls, ``COMMIT``, then the unlock."""
        parts: list[str] = []
        lock = f"{ADVISORY_CLASS}, hashtext({_literal(self._lock)})"
        stored = sorted((k, v) for k, v in self._writes.items() if v is not None)
        deleted = sorted(k for k, v in self._writes.items() if v is None)
        if stored or deleted or self._rolls:
            parts.append("BEGIN")
            now = _literal(time.time())
            if stored:
                values = ", ".join(
                    f"({_literal(ns)}, {_literal(key)}, {_literal(value)}, {now})"
                    for (ns, key), value in stored
                )
                parts.append(
                    f"INSERT INTO kv (namespace, key, value, updated_at) VALUES {values} "
                    "ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value, "
                    "updated_at = excluded.updated_at"
                )
            if deleted:
                pairs = ", ".join(f"({_literal(ns)}, {_literal(key)})" for ns, key in deleted)
                parts.append(f"DELETE FROM kv WHERE (namespace, key) IN ({pairs})")
            if self._rolls:
                rows = ", ".join(
                    "(" + ", ".join(_literal(v) for v in row) + ")" for row in self._rolls
                )
                parts.append(f"INSERT INTO rolls ({_ROLL_COLUMNS}) VALUES {rows}")
            if self._writes:  # every store's read cache drops these keys (see SQLStore.get)
                payloads = [_notice(ns, key) for ns, key in sorted(self._writes)]
                parts.append(
                    f"SELECT pg_notify({_literal(PG_CHANNEL)}, payload) FROM unnest(ARRAY["
                    + ", ".join(_literal(p) for p in payloads)
                    + "]::text[]) AS payload"
                )
            parts.append("COMMIT")
        if self._lock:
            parts.append(f"SELECT pg_advisory_unlock({lock})")
        return ";\n".join(parts)

    def written(self) -> list[tuple[str, str]]:
        return list(self._writes)

    def learn(self) -> None:
        """Remember the keys this transaction read, to read them ahead next time."""
        if not self._lock or not self._touched:
            return
        ahead = self._store._read_ahead
        ahead.pop(self._lock, None)
        if len(ahead) >= PG_READ_AHEAD_LOCKS:
            ahead.pop(next(iter(ahead)))
        ahead[self._lock] = tuple(self._touched[:PG_READ_AHEAD_KEYS])


#: the SQLite stores whose write transaction the current task is inside (to refuse a nested
#: write, which would otherwise wait for itself)
_writing: contextvars.ContextVar[frozenset[int]] = contextvars.ContextVar(
    "coterie_sqlstore_writing", default=frozenset()
)


class SQLStore:
    """A :class:`~coterie.state.StateStore` in a SQL database (see the module's docstring):
    built on a URL (or an engine from :func:`create_engine`, of which a SQLite store only takes
    the file) whose schema is up to date (:func:`upgrade`); :func:`open_store` does both."""

    def __init__(self, engine: AsyncEngine | str | URL) -> None:
        self._engine: AsyncEngine | None = None
        path: Path | None = None
        if isinstance(engine, str):
            path = _sqlite_path(engine)
            url: Any = None if path is not None else normalize_url(engine)
        else:
            given: Any = engine  # an AsyncEngine, or a SQLAlchemy URL
            url = getattr(given, "url", given)
            self._engine = given if hasattr(given, "dispose") else None
            if url.get_backend_name() == "sqlite":
                path = _sqlite_path(url.render_as_string(hide_password=False))
                url = None
            else:
                url = normalize_url(url)
        #: the SQLite database file (``None`` on PostgreSQL)
        self.path: Path | None = path
        self.dialect: str = "sqlite" if path is not None else "postgresql"
        self._url = url
        self._idle: list[Any] = []  # PostgreSQL connections not in use
        self._open = 0  # PostgreSQL connections open
        self._freed = asyncio.Condition()
        self._read_ahead: dict[str, tuple[tuple[str, str], ...]] = {}
        #: PostgreSQL: values read by ``get``, kept while a listener hears every commit's keys
        self._cache: dict[tuple[str, str], str | None] = {}
        self._listener: Any = None
        self._heard = 0  # notices heard (a read that overlaps one is not kept)
        self._writer: sqlite3.Connection | None = None
        self._reader: sqlite3.Connection | None = None
        self._checkpointer: sqlite3.Connection | None = None
        self._checkpoint: asyncio.Future[None] | None = None
        self._commits = 0
        self._room_locks: dict[str, asyncio.Lock] = {}
        self._write_lock = asyncio.Lock()  # SQLite only: one writer at a time anyway

    # --- SQLite ---

    @property
    def engine(self) -> AsyncEngine:
        """A SQLAlchemy (async) engine on the store's database, for a plugin's own tables (see
        docs/storage.md): the one the store was built on, else made on first use (SQLAlchemy is
        imported then). The store itself talks to SQLite through :mod:`sqlite3` and to
        PostgreSQL through asyncpg; the engine is closed with the store."""
        if self._engine is None:
            self._engine = create_engine(
                f"sqlite:///{self.path}" if self.path is not None else self._url
            )
        return self._engine

    def _lite(self, reader: bool = False) -> sqlite3.Connection:
        """The store's writing (or reading) SQLite connection, opened on first use."""
        db = self._reader if reader else self._writer
        if db is None:
            assert self.path is not None
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = _connect_sqlite(self.path)
            if reader:
                self._reader = db
            else:
                db.execute("PRAGMA wal_autocheckpoint = 0")  # see _checkpoint_soon
                self._writer = db
        return db

    def _checkpoint_soon(self) -> None:
        """Every :data:`CHECKPOINT_EVERY` commits, copy the WAL into the database file in a
        thread (a checkpoint syncs the file: milliseconds the event loop should not wait)."""
        self._commits += 1
        if self._commits < CHECKPOINT_EVERY or self._checkpoint is not None:
            return
        self._commits = 0
        assert self.path is not None
        if self._checkpointer is None:
            self._checkpointer = _connect_sqlite(self.path)

        def checkpoint(db: sqlite3.Connection) -> None:
            try:
                db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            except sqlite3.Error as error:  # the next one will try again
                log.debug("WAL checkpoint: %s", error)

        future = asyncio.get_running_loop().run_in_executor(None, checkpoint, self._checkpointer)
        self._checkpoint = future
        future.add_done_callback(lambda _: setattr(self, "_checkpoint", None))

    @asynccontextmanager
    async def _lite_transaction(self) -> AsyncIterator[_LiteTransaction]:
        if id(self) in _writing.get():
            raise RuntimeError(
                "a SQLite store cannot open a transaction (or write with store.set/...) "
                "inside another of its transactions: use the transaction's own methods"
            )
        async with self._write_lock:
            db = self._lite()
            await _when_free(lambda: db.execute("BEGIN IMMEDIATE"), "BEGIN IMMEDIATE")
            token = _writing.set(_writing.get() | {id(self)})
            try:
                yield _LiteTransaction(db)
            except BaseException as error:
                log.debug("transaction rolled back: %r", error)
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
            else:
                try:
                    db.execute("COMMIT")
                except BaseException:
                    if db.in_transaction:
                        db.execute("ROLLBACK")
                    raise
                self._checkpoint_soon()
            finally:
                _writing.reset(token)

    async def _read(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """``work`` on a connection outside any transaction: the writing one while no
        transaction of this store is open (its page cache is current after its own commits:
        fewer system calls), else the reading one (which sees only what is committed)."""
        writer = self._writer
        if writer is not None and not self._write_lock.locked() and not writer.in_transaction:
            return await _when_free(lambda: work(writer), "read")
        db = self._lite(reader=True)
        return await _when_free(lambda: work(db), "read")

    # --- PostgreSQL ---

    @asynccontextmanager
    async def _local_lock(self, lock: str) -> AsyncIterator[None]:
        """Queue this process's transactions on the same ``lock`` in the event loop."""
        if not lock:
            yield
            return
        room_lock = self._room_locks.setdefault(lock, asyncio.Lock())
        try:
            async with room_lock:
                yield
        finally:
            if not room_lock.locked() and not getattr(room_lock, "_waiters", None):
                self._room_locks.pop(lock, None)

    async def _connect(self) -> Any:
        import asyncpg  # type: ignore[import-untyped]

        url = self._url
        connection = await asyncpg.connect(
            host=url.host,
            port=url.port,
            user=url.username,
            password=url.password,
            database=url.database,
            server_settings={"standard_conforming_strings": "on", "application_name": "coterie"},
            **{k: v for k, v in url.query.items() if k in ("ssl", "timeout")},
        )
        await connection.execute(_PG_SETUP)
        return connection

    async def _acquire(self) -> Any:
        async with self._freed:
            while not self._idle and self._open >= PG_POOL_SIZE:
                await self._freed.wait()
            if self._idle:
                return self._idle.pop()
            self._open += 1
        try:
            return await self._connect()
        except BaseException:
            await self._release(None)
            raise

    async def _release(self, conn: Any) -> None:
        """Give back a connection (``None``: one that was closed, or never opened)."""
        async with self._freed:
            if conn is None or conn.is_closed():
                self._open -= 1
            else:
                self._idle.append(conn)
            self._freed.notify()

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[Any]:
        """A connection of this store's own pool (no reset query on release: a connection in
        doubt — a failed or cancelled call — is closed instead of reused)."""
        conn = await self._acquire()
        try:
            yield conn
        except BaseException:
            conn.terminate()
            await self._release(None)
            raise
        await self._release(conn)

    async def _listen(self) -> None:
        """Open the connection that hears which keys commits change (``LISTEN``): while it
        is up, values read by ``get`` are kept and dropped when a commit names their key."""
        if self._listener is not None:
            return
        try:
            listener = await self._connect()
            await listener.add_listener(PG_CHANNEL, self._heard_notice)
        except Exception as error:  # reads go to the database each time, as without a cache
            log.warning("PostgreSQL: no LISTEN connection (%s): reads are not cached", error)
            return
        listener.add_termination_listener(self._lost_listener)
        self._listener = listener

    def _heard_notice(self, _conn: Any, _pid: int, _channel: str, payload: str) -> None:
        self._heard += 1
        if payload == "*":
            self._cache.clear()
        else:
            namespace, _, key = payload.partition("\x1f")
            self._cache.pop((namespace, key), None)

    def _lost_listener(self, _conn: Any) -> None:
        self._listener = None  # notices may be missed from now on: nothing cached is kept
        self._heard += 1
        self._cache.clear()

    @asynccontextmanager
    async def _pg_transaction(self, lock: str) -> AsyncIterator[_PGTransaction]:
        async with self._local_lock(lock):
            conn = await self._acquire()
            tx = _PGTransaction(self, conn, lock)
            clean = False
            try:
                try:
                    yield tx
                except BaseException as error:
                    log.debug("transaction %r rolled back: %r", lock, error)
                    # nothing was written: unless a database call was cut short, the
                    # connection holds no more than the lock
                    if not tx.busy and not isinstance(error, asyncio.CancelledError):
                        if tx.started and lock:
                            await conn.execute(
                                f"SELECT pg_advisory_unlock({ADVISORY_CLASS}, "
                                f"hashtext({_literal(lock)}))"
                            )
                        clean = True
                    raise
                query = tx.commit_query()
                if query:
                    await conn.execute(query)
                clean = True
                tx.learn()
                for key in tx.written():  # this process's own reads see its writes at once
                    self._cache.pop(key, None)
            finally:
                if not clean:
                    conn.terminate()  # a transaction in doubt is rolled back, its locks freed
                await self._release(conn if clean else None)

    # --- the protocol ---

    def transaction(self, lock: str = "") -> Any:
        """See :meth:`coterie.state.StateStore.transaction`."""
        if self.path is not None:
            return self._lite_transaction()
        return self._pg_transaction(lock)

    async def get(self, namespace: str, key: str) -> Any | None:
        if self.path is not None:
            found = await self._read(
                lambda db: db.execute(
                    "SELECT value FROM kv WHERE namespace = ? AND key = ?", (namespace, key)
                ).fetchone()
            )
            return None if found is None else json.loads(found[0])
        wanted = (namespace, key)
        if self._listener is not None and wanted in self._cache:
            value = self._cache[wanted]
        else:
            await self._listen()
            heard = self._heard
            async with self._connection() as conn:
                value = await conn.fetchval(
                    "SELECT value FROM kv WHERE namespace = $1 AND key = $2", namespace, key
                )
            if self._listener is not None and heard == self._heard:
                if len(self._cache) >= PG_CACHE_SIZE:
                    self._cache.pop(next(iter(self._cache)))
                self._cache[wanted] = value
        return None if value is None else json.loads(value)

    async def set(self, namespace: str, key: str, value: Any) -> None:
        check_json(value)  # before any retry or lock

        async def body(tx: Transaction) -> None:
            await tx.set(namespace, key, value)

        await atomically(self, body)

    async def delete(self, namespace: str, key: str) -> None:
        async def body(tx: Transaction) -> None:
            await tx.delete(namespace, key)

        await atomically(self, body)

    async def keys(self, namespace: str, prefix: str = "") -> list[str]:
        if self.path is not None:
            return await self._read(lambda db: _keys(db, namespace, prefix))
        async with self._connection() as conn:
            found = await conn.fetch(
                "SELECT key FROM kv WHERE namespace = $1 AND substr(key, 1, $2) = $3",
                namespace,
                len(prefix),
                prefix,
            )
        # sorted here, not by the database: a PostgreSQL collation may order text differently
        return sorted(k for (k,) in found if k.startswith(prefix))

    async def log_roll(self, record: RollRecord) -> None:
        _roll_row(record)  # refuse a record no store could keep before any retry or lock

        async def body(tx: Transaction) -> None:
            await tx.log_roll(record)

        await atomically(self, body)

    async def rolls(
        self,
        room: str,
        *,
        limit: int | None = 20,
        user: str | None = None,
        session: str | None = None,
    ) -> list[RollRecord]:
        if self.path is not None:
            return await self._read(lambda db: _select_rolls(db, room, limit, user, session))
        query = _SELECT_PG_ROLLS + " WHERE room = $1"
        args: list[Any] = [room]
        if user is not None:
            args.append(user)
            query += f' AND "user" = ${len(args)}'
        if session is not None:
            args.append(session)
            query += f" AND session = ${len(args)}"
        query += " ORDER BY seq DESC"
        if limit is not None:
            args.append(max(limit, 0))
            query += f" LIMIT ${len(args)}"
        async with self._connection() as conn:
            rows = await conn.fetch(query, *args)
        return [_roll_record(tuple(row)) for row in rows]

    async def rooms(self) -> list[str]:
        """The rooms with logged rolls, sorted (not part of the protocol)."""
        if self.path is not None:
            found = await self._read(
                lambda db: [room for (room,) in db.execute("SELECT DISTINCT room FROM rolls")]
            )
            return sorted(found)
        async with self._connection() as conn:
            rows = await conn.fetch("SELECT DISTINCT room FROM rolls")
        return sorted(room for (room,) in rows)

    async def close(self) -> None:
        if self._checkpoint is not None:
            await asyncio.wait([self._checkpoint])
        for db in (self._writer, self._reader, self._checkpointer):
            if db is not None:
                db.close()  # the last connection to the file checkpoints what is left
        self._writer = self._reader = self._checkpointer = None
        async with self._freed:
            idle, self._idle = self._idle, []
            self._open -= len(idle)
        listener, self._listener = self._listener, None
        self._cache.clear()
        for conn in [*idle, *([listener] if listener is not None else [])]:
            await conn.close()
        if self._engine is not None:
            await self._engine.dispose()


# --- migrations ----------------------------------------------------------------------------

#: Alembic's script location: the ``migrations`` package next to this module
SCRIPT_LOCATION = "coterie:migrations"


def alembic_config(connection: Connection | None = None) -> Any:
    """An Alembic ``Config`` for coterie's migrations (no ``alembic.ini``); with
    ``connection``, ``env.py`` migrates through it."""
    from alembic.config import Config as AlembicConfig

    config = AlembicConfig()
    config.set_main_option("script_location", SCRIPT_LOCATION)
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def head_revision() -> str:
    """The newest migration shipped with this version of coterie."""
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head


def _upgrade(connection: Connection) -> None:
    import sqlalchemy as sa
    from alembic import command

    if connection.dialect.name == "postgresql":  # two workers starting at once take turns
        connection.execute(
            sa.select(
                sa.func.pg_advisory_xact_lock(ADVISORY_CLASS, sa.func.hashtext(MIGRATION_LOCK))
            )
        )
    command.upgrade(alembic_config(connection), "head")


def _current(connection: Connection) -> str | None:
    from alembic.runtime.migration import MigrationContext

    return MigrationContext.configure(connection).get_current_revision()


async def _with_engine(
    target: str | URL | AsyncEngine, work: Callable[[AsyncEngine], Awaitable[T]]
) -> T:
    from sqlalchemy.exc import DBAPIError
    from sqlalchemy.ext.asyncio import AsyncEngine

    engine = target if isinstance(target, AsyncEngine) else create_engine(target)
    try:
        return await work(engine)
    except (OSError, DBAPIError) as error:
        url = _safe(engine.url)
        detail = error.orig if isinstance(error, DBAPIError) else error
        raise ConfigError(f"state: cannot use the database {url}: {detail}") from None
    finally:
        if engine is not target:
            await engine.dispose()


async def upgrade(target: str | URL | AsyncEngine) -> None:
    """Bring the database at ``target`` (a URL or an engine) to the newest schema; a database
    already there is left alone. The database (on SQLite: the file and its directory) is
    created if missing — on PostgreSQL the database itself must exist."""

    async def work(engine: AsyncEngine) -> None:
        async with engine.begin() as conn:
            await conn.run_sync(_upgrade)

    await _with_engine(target, work)


async def current(target: str | URL | AsyncEngine) -> str | None:
    """The schema revision of the database at ``target`` (``None``: not migrated yet)."""

    async def work(engine: AsyncEngine) -> str | None:
        async with engine.connect() as conn:
            if engine.dialect.name == "sqlite":
                conn = await conn.execution_options(coterie_begin="DEFERRED")
            return await conn.run_sync(_current)

    return await _with_engine(target, work)


def sqlite_revision(path: Path) -> str | None:
    """The schema revision of the SQLite database file at ``path`` read with plain
    :mod:`sqlite3` (``None``: no file, not migrated, or unreadable), without SQLAlchemy or
    Alembic: what start-up checks before deciding to migrate."""
    if not path.is_file():
        return None
    try:
        db = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return None
    try:
        db.execute("PRAGMA busy_timeout = 5000")  # a migration elsewhere ends in moments
        found = db.execute("SELECT version_num FROM alembic_version").fetchall()
    except sqlite3.Error:
        return None
    finally:
        db.close()
    return str(found[0][0]) if len(found) == 1 else None


def is_memory_url(url: str) -> bool:
    """``memory://``: the process-local :class:`~coterie.state.MemoryStore`."""
    return url.strip().lower().startswith("memory:")


def sqlite_file(url: str) -> Path | None:
    """The database file of a SQLite URL (``None`` for any other URL)."""
    if is_memory_url(url):
        return None
    path = _sqlite_path(url)
    if path is None:
        normalize_url(url)  # refuse what is no database URL at all
    return path


def display_url(url: str) -> str:
    """``url`` with any password hidden."""
    if is_memory_url(url) or _sqlite_path(url) is not None:
        return url  # no password in either
    return _safe(normalize_url(url))


async def open_store(config: Config) -> StateStore:
    """The state store the config names (``$COTERIE_DATABASE_URL``, ``[state] url``, else the
    SQLite file ``coterie.db`` under ``data_dir``), migrated to the newest schema. A SQLite
    database already at :data:`SCHEMA_HEAD` is opened without importing SQLAlchemy or
    Alembic; one behind it (or a new one) is migrated first."""
    url = config.database_url()
    if is_memory_url(url):
        return MemoryStore()
    path = _sqlite_path(url)
    if path is not None:
        if sqlite_revision(path) != SCHEMA_HEAD:
            await upgrade(url)
        return SQLStore(url)
    engine = create_engine(url)
    try:
        await upgrade(engine)
    except BaseException:
        await engine.dispose()
        raise
    return SQLStore(engine)
