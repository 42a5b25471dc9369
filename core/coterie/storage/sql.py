"""The persistent state store: SQLAlchemy 2 (async) on SQLite (WAL, the default) or PostgreSQL.

:class:`SQLStore` implements :class:`coterie.storage.state.StateStore` over two tables, ``kv`` (JSON
values by namespace and key) and ``rolls`` (the roll log); the schema is kept by the Alembic
migrations in ``coterie/storage/migrations``, applied by :mod:`coterie.storage.migrate`
(``open_store`` does it on start, ``coterie db upgrade`` by hand). See ``docs/storage.md``.

Transactions and locking:

* **SQLite** (``sqlite+aiosqlite:///path``): every write transaction starts with ``BEGIN
  IMMEDIATE`` (the driver's own lazy BEGIN is switched off), so it holds SQLite's single write
  lock from its first statement: writers are serialised across tasks, stores and processes on the
  same file, and a read-modify-write never loses an update. Within one store, write transactions
  also queue on an asyncio lock, so tasks wait in the event loop rather than in SQLite's busy
  handler. WAL mode lets readers go on while one writer works.
* **PostgreSQL** (``postgresql+asyncpg://...``): a transaction with a ``lock`` first takes the
  transaction-scoped advisory lock of that key (``pg_advisory_xact_lock``), so two transactions on
  the same room never interleave, whichever worker process or engine runs them; transactions on
  different rooms run in parallel.

A transaction's writes land when its block ends normally; an exception rolls back every write and
every logged roll of the block.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import URL, Connection, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from coterie.errors import ConfigError
from coterie.retry import Backoff, retry
from coterie.storage.state import RollRecord, StateStore, Transaction, check_json

if TYPE_CHECKING:
    pass

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

_JSON_COLUMNS = ("faces", "detail")
_FIELDS = [f.name for f in dataclasses.fields(RollRecord)]

T = TypeVar("T")


def _dumps(value: Any) -> str:
    check_json(value)
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def normalize_url(url: str | URL) -> URL:
    """The async-driver URL of ``url``: ``sqlite://`` becomes ``sqlite+aiosqlite://`` and
    ``postgresql://`` ``postgresql+asyncpg://``; other databases are refused."""
    try:
        parsed = make_url(url) if isinstance(url, str) else url
    except ArgumentError:
        raise ConfigError(
            f"state.url: {str(url)!r} is not a database URL; use e.g. "
            "sqlite+aiosqlite:///data/coterie.db, postgresql+asyncpg://user@host/db or memory://"
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


def safe_url(url: URL) -> str:
    return url.render_as_string(hide_password=True)


def create_engine(url: str | URL) -> AsyncEngine:
    """An async engine for ``url`` set up for coterie's transactions (on SQLite: WAL, a busy
    timeout, ``BEGIN IMMEDIATE`` for writes, and the database's directory created)."""
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
        raise ConfigError(f"state.url: no driver for {safe_url(parsed)}: {error}") from None
    except OSError as error:
        raise ConfigError(
            f"state.url: cannot create the directory of {parsed.database}: {error.strerror}"
        ) from None
    return engine


def _sqlite_events(engine: AsyncEngine) -> None:
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


def is_retryable(error: BaseException) -> bool:
    """A failure that running the same transaction again may not meet: a PostgreSQL
    serialization failure or deadlock, or SQLite's lock wait running out."""
    if not isinstance(error, DBAPIError):
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

    async def once() -> T:
        async with store.transaction(lock) as tx:
            return await body(tx)

    # safe to retry: the database rolled the whole transaction back
    return await retry(
        once,
        what=f"transaction {lock!r}",
        safe=is_retryable,
        attempts=attempts,
        backoff=Backoff(initial=0.02, maximum=0.5),
        logger=log,
        level=logging.INFO,
    )


class _SQLTransaction:
    """The reads and writes of one database transaction (they go to the database at once and
    are committed or rolled back together)."""

    def __init__(self, connection: AsyncConnection) -> None:
        self._conn = connection

    async def get(self, namespace: str, key: str) -> Any | None:
        found = await self._conn.scalar(
            sa.select(kv.c.value).where(kv.c.namespace == namespace, kv.c.key == key)
        )
        return None if found is None else json.loads(found)

    async def set(self, namespace: str, key: str, value: Any) -> None:
        text = _dumps(value)
        now = time.time()
        if self._conn.dialect.name == "postgresql":
            from sqlalchemy.dialects.postgresql import insert as pg_insert

            pg_stmt = pg_insert(kv).values(namespace=namespace, key=key, value=text, updated_at=now)
            await self._conn.execute(
                pg_stmt.on_conflict_do_update(
                    index_elements=[kv.c.namespace, kv.c.key],
                    set_={"value": pg_stmt.excluded.value, "updated_at": now},
                )
            )
        else:
            from sqlalchemy.dialects.sqlite import insert as sqlite_insert

            lite_stmt = sqlite_insert(kv).values(
                namespace=namespace, key=key, value=text, updated_at=now
            )
            await self._conn.execute(
                lite_stmt.on_conflict_do_update(
                    index_elements=[kv.c.namespace, kv.c.key],
                    set_={"value": lite_stmt.excluded.value, "updated_at": now},
                )
            )

    async def delete(self, namespace: str, key: str) -> None:
        await self._conn.execute(sa.delete(kv).where(kv.c.namespace == namespace, kv.c.key == key))

    async def keys(self, namespace: str, prefix: str = "") -> list[str]:
        query = sa.select(kv.c.key).where(kv.c.namespace == namespace)
        if prefix:
            query = query.where(sa.func.substr(kv.c.key, 1, len(prefix)) == prefix)
        found = (await self._conn.scalars(query)).all()
        # sorted here, not by the database: a PostgreSQL collation may order text differently
        return sorted(k for k in found if k.startswith(prefix))

    async def log_roll(self, record: RollRecord) -> None:
        row = record.as_json()
        check_json(row)
        for name in _JSON_COLUMNS:
            row[name] = _dumps(row[name])
        await self._conn.execute(sa.insert(rolls).values(**row))

    async def rolls(
        self, room: str, *, limit: int | None, user: str | None, session: str | None
    ) -> list[RollRecord]:
        query = sa.select(*(rolls.c[name] for name in _FIELDS)).where(rolls.c.room == room)
        if user is not None:
            query = query.where(rolls.c.user == user)
        if session is not None:
            query = query.where(rolls.c.session == session)
        query = query.order_by(rolls.c.seq.desc())
        if limit is not None:
            query = query.limit(max(limit, 0))
        found = []
        for row in (await self._conn.execute(query)).mappings():
            data = dict(row)
            for name in _JSON_COLUMNS:
                data[name] = json.loads(data[name])
            data["botch"] = bool(data["botch"])
            found.append(RollRecord.from_json(data))
        return found


#: the SQLite stores whose write transaction the current task is inside (to refuse a nested
#: write, which would otherwise wait for itself)
_writing: contextvars.ContextVar[frozenset[int]] = contextvars.ContextVar(
    "coterie_sqlstore_writing", default=frozenset()
)


class SQLStore:
    """A :class:`~coterie.state.StateStore` in a SQL database (see the module's docstring).
    Build it on an engine from :func:`create_engine` (or a URL) whose schema is up to date
    (:func:`upgrade`); :func:`open_store` does both."""

    def __init__(self, engine: AsyncEngine | str | URL) -> None:
        self.engine: AsyncEngine = (
            engine if isinstance(engine, AsyncEngine) else create_engine(engine)
        )
        self.dialect: str = self.engine.dialect.name
        self._room_locks: dict[str, asyncio.Lock] = {}
        self._write_lock = asyncio.Lock()  # SQLite only: one writer at a time anyway

    @asynccontextmanager
    async def _local_lock(self, lock: str) -> AsyncIterator[None]:
        """Queue this process's transactions in the event loop: all writers on SQLite (the
        database takes one at a time), the same ``lock`` on PostgreSQL."""
        if self.dialect == "sqlite":
            if id(self) in _writing.get():
                raise RuntimeError(
                    "a SQLite store cannot open a transaction (or write with store.set/...) "
                    "inside another of its transactions: use the transaction's own methods"
                )
            async with self._write_lock:
                token = _writing.set(_writing.get() | {id(self)})
                try:
                    yield
                finally:
                    _writing.reset(token)
            return
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

    @asynccontextmanager
    async def transaction(self, lock: str = "") -> AsyncIterator[_SQLTransaction]:
        async with self._local_lock(lock), self.engine.connect() as conn, conn.begin():
            if lock and self.dialect == "postgresql":
                await conn.execute(
                    sa.select(sa.func.pg_advisory_xact_lock(ADVISORY_CLASS, sa.func.hashtext(lock)))
                )
            try:
                yield _SQLTransaction(conn)
            except BaseException as error:
                log.debug("transaction %r rolled back: %r", lock, error)
                raise

    @asynccontextmanager
    async def _reading(self) -> AsyncIterator[_SQLTransaction]:
        async with self.engine.connect() as conn:
            if self.dialect == "sqlite":  # a plain (deferred) BEGIN: no write lock for reads
                conn = await conn.execution_options(coterie_begin="DEFERRED")
            async with conn.begin():
                yield _SQLTransaction(conn)

    async def get(self, namespace: str, key: str) -> Any | None:
        async with self._reading() as tx:
            return await tx.get(namespace, key)

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
        async with self._reading() as tx:
            return await tx.keys(namespace, prefix)

    async def log_roll(self, record: RollRecord) -> None:
        check_json(record.as_json())

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
        async with self._reading() as tx:
            return await tx.rolls(room, limit=limit, user=user, session=session)

    async def rooms(self) -> list[str]:
        """The rooms with logged rolls, sorted (not part of the protocol)."""
        async with self._reading() as tx:
            found = await tx._conn.scalars(sa.select(rolls.c.room).distinct())
            return sorted(found.all())

    async def close(self) -> None:
        await self.engine.dispose()
