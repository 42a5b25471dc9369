"""SQLAlchemy's side of the SQL store, imported only when needed: the schema's tables (for
Alembic and for plugins' own tables), database URLs, and async engines set up for coterie's
transactions. The store itself talks to SQLite through :mod:`sqlite3` and to PostgreSQL through
asyncpg (:mod:`coterie.storage.sql`)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from coterie.errors import ConfigError

if TYPE_CHECKING:
    from sqlalchemy.engine import URL, Connection
    from sqlalchemy.ext.asyncio import AsyncEngine


from coterie.storage.sqlite import SQLITE_BUSY_TIMEOUT_MS


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
        sa.Index("ix_rolls_room_seq", "room", "seq"),
    )
    #: characters (#17): one row per character of a player (or of a chronicle's NPCs, owner
    #: ``~npcs``) in a chronicle; ``key`` is the folded name, ``sheet`` the JSON sheet, ``active``
    #: marks the player's active character (at most one row per chronicle and owner)
    characters = sa.Table(
        "characters",
        metadata,
        sa.Column("chronicle", sa.Text, nullable=False),
        sa.Column("owner", sa.Text, nullable=False),
        sa.Column("key", sa.Text, nullable=False),
        sa.Column("sheet", sa.Text, nullable=False),
        sa.Column("active", sa.Boolean, nullable=False),
        sa.Column("updated_at", sa.Double, nullable=False),
        sa.PrimaryKeyConstraint("chronicle", "owner", "key", name="pk_characters"),
    )
    #: the ``!undo`` stack of each author in a chronicle, oldest first (``seq``), bounded
    character_changes = sa.Table(
        "character_changes",
        metadata,
        sa.Column(
            "seq",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            primary_key=True,
            autoincrement=True,
        ),
        sa.Column("chronicle", sa.Text, nullable=False),
        sa.Column("author", sa.Text, nullable=False),
        sa.Column("change", sa.Text, nullable=False),
        sa.Index("ix_character_changes_author", "chronicle", "author", "seq"),
    )
    return SimpleNamespace(
        metadata=metadata,
        kv=kv,
        rolls=rolls,
        characters=characters,
        character_changes=character_changes,
    )


_tables: SimpleNamespace | None = None


def tables() -> SimpleNamespace:
    """The SQLAlchemy ``metadata`` and the ``kv``, ``rolls``, ``characters`` and
    ``character_changes`` tables (SQLAlchemy is imported
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


def sqlite_path(url: str) -> Path | None:
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


def safe_url(url: URL) -> str:
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
        raise ConfigError(f"state.url: no driver for {safe_url(parsed)}: {error}") from None
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
