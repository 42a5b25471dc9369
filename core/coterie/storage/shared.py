"""State several worker processes update together on PostgreSQL: an atomic read-modify-write of a
few ``kv`` rows (what the shared rate limits of :mod:`coterie.framework.ratelimit` keep), and
pruning.

Two round trips: the first takes the session-level advisory lock of each row (in the order of
their names, so two workers updating the same rows take turns and never deadlock) and reads the
rows in the same query (``pg_temp.coterie_lock_rows``); the second writes them back and unlocks,
as one query. A call that fails or is cancelled between the two closes its connection, which
frees the locks. On the store's own asyncpg connections. Only a PostgreSQL store is shared by
several processes; nothing here is used on SQLite.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from coterie.storage.postgres import ADVISORY_CLASS, pg_literal
from coterie.storage.rows import dumps_json
from coterie.storage.sql import SQLStore

T = TypeVar("T")

_LOCK_READ = "SELECT key, value FROM pg_temp.coterie_lock_rows($1, $2, $3, $4)"


def lock_name(namespace: str, key: str) -> str:
    """The advisory lock of one shared row (apart from the rooms' locks: a prefix of its own)."""
    return f"coterie.shared\x1f{namespace}\x1f{key}"


async def update_rows(
    store: SQLStore,
    namespace: str,
    keys: Sequence[str],
    change: Callable[[dict[str, Any]], tuple[dict[str, Any], T]],
) -> T:
    """Read ``keys`` of ``namespace`` (missing ones absent from the dict ``change`` gets), let
    ``change`` decide the values to write and a result, write them and return the result — with
    the rows locked from the read to the write. PostgreSQL only."""
    if store.dialect != "postgresql":
        raise RuntimeError("shared rows need a PostgreSQL store")
    ordered = sorted(set(keys))
    locks = [lock_name(namespace, key) for key in ordered]
    # (the connection is closed, its locks freed, when anything below fails or is cancelled)
    async with store._connection() as conn:
        found = await conn.fetch(_LOCK_READ, ADVISORY_CLASS, locks, namespace, ordered)
        rows = {key: json.loads(value) for key, value in found}
        writes, result = change({key: value for key, value in rows.items() if value is not None})
        parts = []
        if writes:
            now = pg_literal(time.time())
            values = ", ".join(
                f"({pg_literal(namespace)}, {pg_literal(name)}, "
                f"{pg_literal(dumps_json(writes[name]))}, {now})"
                for name in sorted(writes)
            )
            # committed before the unlock (a query of several statements is otherwise one
            # transaction, committed at its end: after another worker got the lock)
            parts += [
                "BEGIN",
                f"INSERT INTO kv (namespace, key, value, updated_at) VALUES {values} "
                "ON CONFLICT (namespace, key) DO UPDATE SET value = EXCLUDED.value, "
                "updated_at = EXCLUDED.updated_at",
                "COMMIT",
            ]
        names = ", ".join(pg_literal(name) for name in locks)
        parts.append(
            f"SELECT pg_advisory_unlock({ADVISORY_CLASS}, hashtext(name)) "
            f"FROM unnest(ARRAY[{names}]::text[]) AS name"
        )
        await conn.execute(";\n".join(parts))
    return result


async def prune_rows(store: SQLStore, namespace: str, older_than: float) -> None:
    """Delete the rows of ``namespace`` last written before ``older_than`` (epoch seconds)."""
    await store.expire(namespace, older_than)
