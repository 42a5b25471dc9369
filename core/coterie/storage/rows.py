"""What the SQL store's parts share: the roll log's columns, the one JSON encoder for every
stored value, and running a transaction again when the database gives up on it
(:mod:`coterie.storage.sqlite`, :mod:`coterie.storage.postgres`, :mod:`coterie.storage.sql`)."""

from __future__ import annotations

import dataclasses
import json
import logging
import sqlite3
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from coterie.retry import Backoff, retry
from coterie.storage.state import RollRecord, StateStore, Transaction, check_json

if TYPE_CHECKING:
    pass


ROLL_FIELDS = [f.name for f in dataclasses.fields(RollRecord)]
JSON_COLUMNS = ("faces", "detail")

T = TypeVar("T")
#: attempts of a transaction that failed on a serialization failure or a deadlock
RETRY_ATTEMPTS = 4

log = logging.getLogger("coterie.storage.sql")
#: the types a roll record field may hold as they are
ATOMS = frozenset({str, int, bool, type(None)})


def dumps_json(value: Any) -> str:
    """``value`` as compact JSON text; refuses what :func:`~coterie.state.check_json` refuses
    (``allow_nan=False``: NaN and infinities; anything JSON cannot hold)."""
    if _C_ENCODE is not None:
        try:
            return "".join(_C_ENCODE(value, 0))
        except (TypeError, ValueError, RecursionError):
            pass  # the encoder below raises its own, well-worded error
    return _ENCODER.encode(value)


#: one encoder for every value (``json.dumps`` with options builds a new one per call)
_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))
#: the C encoder behind ``_ENCODER``, made once (``JSONEncoder.encode`` makes one per call). It
#: keeps no record of the containers it is inside (a reused record would be left dirty by a
#: failed call), so a circular value ends in RecursionError, and the call above then lets
#: ``_ENCODER`` word the error
_make_encoder: Any = getattr(json.encoder, "c_make_encoder", None)
_C_ENCODE: Any = (
    None
    if _make_encoder is None
    else _make_encoder(
        None, _ENCODER.default, json.encoder.encode_basestring, None, ":", ",", False, False, False
    )
)


def roll_row(record: RollRecord) -> tuple[Any, ...]:
    """A roll record as the ``rolls`` row's values (in ``ROLL_FIELDS`` order), checked: the JSON
    columns as JSON text, the other fields of the types they are declared with."""
    row = vars(record)
    values = []
    for name in ROLL_FIELDS:
        value = row[name]
        if name in JSON_COLUMNS:
            value = dumps_json(value)
        elif type(value) not in ATOMS:
            if type(value) is not float:
                raise TypeError(f"roll record field {name}: {value!r} is not JSON-compatible")
            if value - value != 0.0:  # NaN or ±infinity: refused, as by every store
                check_json(value)  # (raises json's own ValueError)
        values.append(value)
    return tuple(values)


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
