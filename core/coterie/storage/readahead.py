"""Keys the next transaction of a task is known to read, said before it opens.

A store that reads ahead reads them with its first round trip: a PostgreSQL transaction takes its
room's lock and reads, in the same query, the key it was first asked for, the keys the last
transaction on the same lock read, and these. Some keys are new with every message (the
delivery's event id, which the command's transaction reads to find a redelivery): the last
transaction cannot have read them, so without this they would cost a round trip of their own. A
SQLite write transaction reads them with its first ``kv`` read that is not remembered, in the same
statement (:class:`~coterie.storage.sqlite.LiteTransaction`); the memory store ignores them. Only
a hint: a key said here and not read costs a few bytes of the query, a key read and not said
costs its round trip (its statement, on SQLite).

A take from the shared rate limits' token buckets can be said the same way
(:func:`expect_take`, a request made by :func:`coterie.storage.shared.take_request`): a
PostgreSQL transaction then takes the tokens in its first round trip, after its room's lock, and
commits the take there and then (:meth:`~coterie.storage.postgres.PGTransaction.taken` gives the
verdict). A store without a read-ahead ignores it (its limits are kept in its process).
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterable

Key = tuple[str, str]

_expected: contextvars.ContextVar[tuple[Key, ...]] = contextvars.ContextVar(
    "coterie_expected_reads", default=()
)


_take: contextvars.ContextVar[str | None] = contextvars.ContextVar("coterie_take", default=None)


def expect_take(request: str) -> contextvars.Token[str | None]:
    """Say that the next transaction this task opens takes tokens with ``request``; pass the
    token to :func:`forget_take` once it has opened."""
    return _take.set(request)


def forget_take(token: contextvars.Token[str | None]) -> None:
    """Take back what :func:`expect_take` said."""
    _take.reset(token)


def take_expected() -> str | None:
    """The take the transaction opening now is said to make; it is this transaction's alone (a
    transaction opened after it in the same task, before :func:`forget_take`, makes none)."""
    request = _take.get()
    if request is not None:
        _take.set(None)
    return request


def expect_reads(keys: Iterable[Key]) -> contextvars.Token[tuple[Key, ...]]:
    """Say that the next transaction this task opens reads ``keys`` (``(namespace, key)``
    pairs), besides any said before; pass the token to :func:`forget` once it has opened."""
    return _expected.set((*_expected.get(), *keys))


def forget(token: contextvars.Token[tuple[Key, ...]]) -> None:
    """Take back what :func:`expect_reads` said."""
    _expected.reset(token)


def expected() -> tuple[Key, ...]:
    """The keys the transaction opening now is said to read."""
    return _expected.get()
