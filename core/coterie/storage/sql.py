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
import json
import logging
import sqlite3
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coterie.storage.state import RollRecord, Transaction, check_json

if TYPE_CHECKING:
    from sqlalchemy.engine import URL
    from sqlalchemy.ext.asyncio import AsyncEngine


from coterie.storage.checkpoints import Checkpoints
from coterie.storage.engine import create_engine, normalize_url, sqlite_path, tables

# names this module had before the store was split in parts (tests and plugins import them)
from coterie.storage.engine import safe_url as safe_url
from coterie.storage.groupcommit import CommitGroup, WriteLock, end_group
from coterie.storage.postgres import (
    ADVISORY_CLASS,
    PG_CHANNEL,
    PG_POOL_SIZE,
    PG_SETUP,
    SELECT_PG_ROLLS,
    PGTransaction,
    ReadCache,
    pg_literal,
)
from coterie.storage.rows import RETRY_ATTEMPTS as RETRY_ATTEMPTS
from coterie.storage.rows import T, atomically, is_busy, roll_row
from coterie.storage.rows import is_retryable as is_retryable
from coterie.storage.sql_characters import SQLCharacterReads
from coterie.storage.sqlite import (
    SELECT_VALUE,
    LiteScope,
    RememberedValues,
    connect_sqlite,
    lite_keys,
    roll_record,
    select_lite_rolls,
    when_free,
    writing,
)

log = logging.getLogger(__name__)

#: the advisory lock taken while migrating, so that two workers starting together take turns
MIGRATION_LOCK = "coterie.migrations"
#: the newest migration in ``coterie/migrations/versions`` (a test checks it is Alembic's head):
#: start-up compares a SQLite database's ``alembic_version`` with it before importing Alembic
SCHEMA_HEAD = "0003"


def __getattr__(name: str) -> Any:
    # ``from coterie.storage.sql import metadata`` (Alembic's env.py), ``kv``, ``rolls``
    if name in ("metadata", "kv", "rolls"):
        return getattr(tables(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class SQLStore(SQLCharacterReads):
    """A :class:`~coterie.state.StateStore` in a SQL database (see the module's docstring):
    built on a URL (or an engine from :func:`create_engine`, of which a SQLite store only takes
    the file) whose schema is up to date (:func:`upgrade`); :func:`open_store` does both."""

    def __init__(self, engine: AsyncEngine | str | URL) -> None:
        self._engine: AsyncEngine | None = None
        path: Path | None = None
        if isinstance(engine, str):
            path = sqlite_path(engine)
            url: Any = None if path is not None else normalize_url(engine)
        else:
            given: Any = engine  # an AsyncEngine, or a SQLAlchemy URL
            url = getattr(given, "url", given)
            self._engine = given if hasattr(given, "dispose") else None
            if url.get_backend_name() == "sqlite":
                path = sqlite_path(url.render_as_string(hide_password=False))
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
        self._cache = ReadCache()
        self._listener: Any = None
        self._writer: sqlite3.Connection | None = None
        self._reader: sqlite3.Connection | None = None
        #: SQLite: the WAL's checkpoints (:mod:`coterie.storage.checkpoints`)
        self._checkpoints = Checkpoints(path) if path is not None else None
        self._values = RememberedValues()  # SQLite: values read, kept while the file is unchanged
        self._room_locks: dict[str, asyncio.Lock] = {}
        self._write_lock = WriteLock()  # SQLite only: one writer at a time anyway
        #: SQLite: the transaction left open for the ones that waited behind it, if any
        self._group: CommitGroup | None = None
        #: SQLite: groups that may still wait alone for company (groupcommit.PATIENCE)
        self._company = 0

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
            db = connect_sqlite(self.path)
            if reader:
                self._reader = db
            else:
                db.execute("PRAGMA wal_autocheckpoint = 0")  # see coterie.storage.checkpoints
                self._writer = db
                # data_version counts per connection: what an earlier one read is not vouched for
                self._values = RememberedValues()
        return db

    async def _commit_group(self, group: CommitGroup) -> None:
        """Commit ``group`` once the transactions that joined it are done: the task that does
        it waits for the write lock behind them (see :class:`~coterie.storage.sqlite.LiteScope`).
        If it is cancelled first (the event loop is torn down) the group is lost as in a crash:
        nothing it did was acknowledged."""
        if group.linger:
            await asyncio.sleep(group.linger)  # for company: the transactions on their way
        lock = self._write_lock
        await lock.acquire()
        try:
            if self._group is group:
                end_group(self, group, None)
        finally:
            lock.release()

    def _lite_transaction(self) -> LiteScope:
        if id(self) in writing.get():
            raise RuntimeError(
                "a SQLite store cannot open a transaction (or write with store.set/...) "
                "inside another of its transactions: use the transaction's own methods"
            )
        return LiteScope(self)

    async def _read_value(self, namespace: str, key: str) -> str | None:
        """The stored text of one value, read afresh (waiting while the file is locked)."""
        found = await self._read(lambda db: db.execute(SELECT_VALUE, (namespace, key)).fetchone())
        return None if found is None else str(found[0])

    async def _read(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """``work`` on a connection outside any transaction: the writing one while no
        transaction of this store is open (its page cache is current after its own commits:
        fewer system calls), else the reading one (which sees only what is committed)."""
        writer = self._idle_writer()
        if writer is not None:
            return await when_free(lambda: work(writer), "read")
        db = self._lite(reader=True)
        return await when_free(lambda: work(db), "read")

    def _idle_writer(self) -> sqlite3.Connection | None:
        """The writing connection when it is open and no transaction of this store is."""
        writer = self._writer
        if writer is not None and not self._write_lock.locked() and not writer.in_transaction:
            return writer
        return None

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
        await connection.execute(PG_SETUP)
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
        namespace, _, key = payload.partition("\x1f")
        self._cache.notice(None if payload == "*" else (namespace, key))

    def _lost_listener(self, _conn: Any) -> None:
        self._listener = None  # notices may be missed from now on: nothing cached is kept
        self._cache.notice(None)

    @asynccontextmanager
    async def _pg_transaction(self, lock: str) -> AsyncIterator[PGTransaction]:
        async with self._local_lock(lock):
            conn = await self._acquire()
            tx = PGTransaction(self, conn, lock)
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
                                f"hashtext({pg_literal(lock)}))"
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
            writer = self._idle_writer()
            if writer is not None:
                # through the writing connection, remembered while the file is unchanged (every
                # message reads its room's settings)
                try:
                    text = self._values.read(writer, namespace, key)
                except sqlite3.OperationalError as error:
                    if not is_busy(error):
                        raise
                    text = await self._read_value(namespace, key)
            else:
                text = await self._read_value(namespace, key)
            return None if text is None else json.loads(text)
        value = await self._cached(
            (namespace, key), "SELECT value FROM kv WHERE namespace = $1 AND key = $2"
        )
        return None if value is None else json.loads(value)

    async def peek(self, namespace: str, key: str) -> tuple[Any | None, bool]:
        """A value, and whether it is confirmed current. On SQLite a value this store remembers
        is answered as it was read, without asking the file whether another connection changed
        it since (that question takes SQLite's read lock: four ``fcntl`` calls), and marked
        unconfirmed: the caller confirms it in a write transaction, where the question costs no
        system call (:class:`~coterie.storage.sqlite.LiteScope`), before acting on it.
        Anything else is read as :meth:`get` reads it, confirmed."""
        if self.path is not None:
            remembered = self._values.values
            wanted = (namespace, key)
            if wanted in remembered:
                text = remembered[wanted]
                return (None if text is None else json.loads(text)), False
        return await self.get(namespace, key), True

    async def _cached(self, wanted: tuple[str, str], query: str, *args: Any) -> str | None:
        """PostgreSQL: the value of ``wanted`` from the read cache, else read by ``query``
        (with ``args``, else the two parts of ``wanted``) and kept while no notice overlapped
        the read."""
        if self._listener is not None and wanted in self._cache:
            return self._cache[wanted]
        await self._listen()
        heard = self._cache.heard
        async with self._connection() as conn:
            value: str | None = await conn.fetchval(query, *(args or wanted))
        if self._listener is not None:
            self._cache.keep(wanted, value, heard)
        return value

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
            return await self._read(lambda db: lite_keys(db, namespace, prefix))
        async with self._connection() as conn:
            found = await conn.fetch(
                "SELECT key FROM kv WHERE namespace = $1 AND substr(key, 1, $2) = $3",
                namespace,
                len(prefix),
                prefix,
            )
        # sorted here, not by the database: a PostgreSQL collation may order text differently
        return sorted(k for (k,) in found if k.startswith(prefix))

    async def expire(self, namespace: str, before: float) -> int:
        """Remove the values of ``namespace`` last written before ``before`` (seconds since the
        epoch); how many went. Used to forget old answered events."""
        query = "DELETE FROM kv WHERE namespace = {} AND updated_at < {}"
        if self.path is not None:
            async with self._lite_transaction() as tx:
                return int(tx.execute(query.format("?", "?"), (namespace, before)).rowcount)
        async with self._connection() as conn:
            status = await conn.execute(query.format("$1", "$2"), namespace, before)
        return int(str(status).rsplit(" ", 1)[-1] or 0)

    async def log_roll(self, record: RollRecord) -> None:
        roll_row(record)  # refuse a record no store could keep before any retry or lock

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
            return await self._read(lambda db: select_lite_rolls(db, room, limit, user, session))
        query = SELECT_PG_ROLLS + " WHERE room = $1"
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
        return [roll_record(tuple(row)) for row in rows]

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
        group = self._group
        if group is not None and group.committer is not None:
            await asyncio.wait([group.committer])  # its members' commit first
        if self._checkpoints is not None:
            await self._checkpoints.close()
        for db in (self._writer, self._reader):
            if db is not None:
                db.close()  # the last connection to the file checkpoints what is left
        self._writer = self._reader = None
        async with self._freed:
            idle, self._idle = self._idle, []
            self._open -= len(idle)
        listener, self._listener = self._listener, None
        self._cache.clear()
        for conn in [*idle, *([listener] if listener is not None else [])]:
            await conn.close()
        if self._engine is not None:
            await self._engine.dispose()
