"""What the SQL store's parts share: the roll log's columns, the one JSON encoder for every
stored value, and running a transaction again when the database gives up on it
(:mod:`coterie.storage.sqlite`, :mod:`coterie.storage.postgres`, :mod:`coterie.storage.sql`)."""

from __future__ import annotations

import logging
import sqlite3
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

from coterie.retry import Backoff, retry
from coterie.storage.jsontext import dumps_json as dumps_json
from coterie.storage.state import JSON_COLUMNS as JSON_COLUMNS
from coterie.storage.state import ROLL_FIELDS as ROLL_FIELDS
from coterie.storage.state import StateStore, Transaction
from coterie.storage.state import roll_row as roll_row

if TYPE_CHECKING:
    pass


T = TypeVar("T")
#: attempts of a transaction that failed on a serialization failure or a deadlock
RETRY_ATTEMPTS = 4

log = logging.getLogger("coterie.storage.sql")


def is_busy(error: BaseException) -> bool:
    """SQLite's "database is locked" (another connection holds the lock it needs)."""
    return isinstance(error, sqlite3.OperationalError) and (
        getattr(error, "sqlite_errorcode", None) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
        or "database is locked" in str(error)
    )


def is_retryable(error: BaseException) -> bool:
    """A failure that running the same transaction again may not meet: a PostgreSQL
    serialization failure or deadlock, or SQLite's lock wait running out."""
    if is_busy(error) or getattr(error, "sqlstate", None) in ("40001", "40P01"):
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
