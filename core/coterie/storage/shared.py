"""State several worker processes update together on PostgreSQL: an atomic read-modify-write of a
few ``kv`` rows (what the shared rate limits of :mod:`coterie.framework.ratelimit` keep), and
pruning.

The rows are locked in key order (``SELECT … FOR UPDATE``; created first when missing, with
``INSERT … ON CONFLICT DO NOTHING``), so two workers updating the same rows take turns and never
deadlock, then written back in one statement — one connection, one transaction, on the store's
own asyncpg connections. Only a PostgreSQL store is shared by several processes; nothing here is
used on SQLite.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from coterie.storage.rows import dumps_json
from coterie.storage.sql import SQLStore

T = TypeVar("T")

_LOCK = (
    "SELECT key, value FROM kv WHERE namespace = $1 AND key = ANY($2::text[]) "
    "ORDER BY key FOR UPDATE"
)
_CREATE = (
    "INSERT INTO kv (namespace, key, value, updated_at) "
    "SELECT $1, k, 'null', $3 FROM unnest($2::text[]) AS k ORDER BY k "
    "ON CONFLICT (namespace, key) DO NOTHING"
)
_WRITE = (
    "INSERT INTO kv (namespace, key, value, updated_at) "
    "SELECT $1, k, v, $4 FROM unnest($2::text[], $3::text[]) AS t (k, v) "
    "ON CONFLICT (namespace, key) DO UPDATE SET value = EXCLUDED.value, "
    "updated_at = EXCLUDED.updated_at"
)


async def update_rows(
    store: SQLStore,
    namespace: str,
    keys: Sequence[str],
    change: Callable[[dict[str, Any]], tuple[dict[str, Any], T]],
) -> T:
    """Read ``keys`` of ``namespace`` (missing ones absent from the dict ``change`` gets), let
    ``change`` decide the values to write and a result, write them and return the result — in
    one transaction with the rows locked. PostgreSQL only."""
    if store.dialect != "postgresql":
        raise RuntimeError("shared rows need a PostgreSQL store")
    ordered = sorted(set(keys))
    async with store._connection() as conn, conn.transaction():
        found = await conn.fetch(_LOCK, namespace, ordered)
        if len(found) < len(ordered):  # first use: create them, then lock them
            await conn.execute(_CREATE, namespace, ordered, time.time())
            found = await conn.fetch(_LOCK, namespace, ordered)
        rows = {key: json.loads(value) for key, value in found}
        writes, result = change({key: value for key, value in rows.items() if value is not None})
        if writes:
            names = list(writes)
            values = [dumps_json(writes[name]) for name in names]
            await conn.execute(_WRITE, namespace, names, values, time.time())
    return result


async def prune_rows(store: SQLStore, namespace: str, older_than: float) -> None:
    """Delete the rows of ``namespace`` last written before ``older_than`` (epoch seconds)."""
    await store.expire(namespace, older_than)
