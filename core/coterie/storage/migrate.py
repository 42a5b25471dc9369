"""Opening the configured store, and its schema: the Alembic migrations in
``coterie/storage/migrations`` applied by :func:`upgrade` (``open_store`` on start when the
database is behind, ``coterie db upgrade`` by hand), :func:`current` and :func:`head_revision` to
compare, and the URL helpers the CLI shows (see ``docs/storage.md``). SQLAlchemy and Alembic are
imported only when a migration has to run or be looked at."""

from __future__ import annotations

import contextlib
import logging
import sqlite3
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from coterie.errors import ConfigError
from coterie.storage.engine import create_engine, normalize_url, safe_url, sqlite_path
from coterie.storage.postgres import ADVISORY_CLASS
from coterie.storage.sql import MIGRATION_LOCK, SCHEMA_HEAD, SQLStore
from coterie.storage.state import MemoryStore, StateStore

if TYPE_CHECKING:
    from sqlalchemy.engine import URL, Connection
    from sqlalchemy.ext.asyncio import AsyncEngine

    from coterie.framework.config import Config

T = TypeVar("T")


#: Alembic's script location: the ``migrations`` package next to this module
SCRIPT_LOCATION = "coterie.storage:migrations"


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


@contextlib.contextmanager
def _alembic_quiet(quiet: bool) -> Iterator[None]:
    """Alembic logs INFO lines ("Context impl SQLiteImpl.") on every look at a database: keep
    them for when something is migrated (or ``-v``)."""
    logger = logging.getLogger("alembic")
    saved = logger.level
    if quiet:
        logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(saved)


def _upgrade(connection: Connection, verbose: bool = False) -> None:
    import sqlalchemy as sa
    from alembic import command
    from alembic.runtime.migration import MigrationContext

    if connection.dialect.name == "postgresql":  # two workers starting at once take turns
        connection.execute(
            sa.select(
                sa.func.pg_advisory_xact_lock(ADVISORY_CLASS, sa.func.hashtext(MIGRATION_LOCK))
            )
        )
    with _alembic_quiet(not verbose):
        at = MigrationContext.configure(connection).get_current_revision()
    if at == head_revision() and not verbose:
        return  # nothing to migrate, nothing to say
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
        url = safe_url(engine.url)
        detail = error.orig if isinstance(error, DBAPIError) else error
        raise ConfigError(f"state: cannot use the database {url}: {detail}") from None
    finally:
        if engine is not target:
            await engine.dispose()


async def upgrade(target: str | URL | AsyncEngine, *, verbose: bool = False) -> None:
    """Bring the database at ``target`` (a URL or an engine) to the newest schema; a database
    already there is left alone. The database (on SQLite: the file and its directory) is
    created if missing — on PostgreSQL the database itself must exist."""

    async def work(engine: AsyncEngine) -> None:
        async with engine.begin() as conn:
            await conn.run_sync(_upgrade, verbose)

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
    path = sqlite_path(url)
    if path is None:
        normalize_url(url)  # refuse what is no database URL at all
    return path


def describe_store(url: str) -> str:
    """Which store ``url`` is, in a few words for the one start line (no password)."""
    if is_memory_url(url):
        return "state in memory (lost when the process ends)"
    path = sqlite_file(url)
    return f"state in SQLite {path}" if path is not None else f"state in {display_url(url)}"


def display_url(url: str) -> str:
    """``url`` with any password hidden."""
    if is_memory_url(url) or sqlite_path(url) is not None:
        return url  # no password in either
    return safe_url(normalize_url(url))


async def open_store(config: Config, *, verbose: bool = False) -> StateStore:
    """The state store the config names (``$COTERIE_DATABASE_URL``, ``[state] url``, else the
    SQLite file ``coterie.db`` under ``data_dir``), migrated to the newest schema. A SQLite
    database already at :data:`SCHEMA_HEAD` is opened without importing SQLAlchemy or
    Alembic; one behind it (or a new one) is migrated first."""
    url = config.database_url()
    if is_memory_url(url):
        return MemoryStore()
    path = sqlite_path(url)
    if path is not None:
        if sqlite_revision(path) != SCHEMA_HEAD or verbose:  # -v: Alembic's own lines
            await upgrade(url, verbose=verbose)
        return SQLStore(url)
    engine = create_engine(url)
    try:
        await upgrade(engine, verbose=verbose)
    except BaseException:
        await engine.dispose()
        raise
    return SQLStore(engine)
