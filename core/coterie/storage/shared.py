"""State several worker processes update together: an atomic read-modify-write of a few ``kv``
rows (what the shared rate limits of :mod:`coterie.framework.ratelimit` keep), and pruning.

On PostgreSQL the rows are created if missing (``INSERT … ON CONFLICT DO NOTHING``), then locked
in key order (``SELECT … FOR UPDATE``), so two workers updating the same rows take turns and
never deadlock; on SQLite a write transaction already holds the database's only write lock.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import sqlalchemy as sa

from coterie.storage.sql import SQLStore, atomically, kv
from coterie.storage.state import Transaction

T = TypeVar("T")


async def update_rows(
    store: SQLStore,
    namespace: str,
    keys: Sequence[str],
    change: Callable[[dict[str, Any]], tuple[dict[str, Any], T]],
) -> T:
    """Read ``keys`` of ``namespace`` (missing ones absent from the dict ``change`` gets), let
    ``change`` decide the values to write and a result, write them and return the result — all
    in one transaction with the rows locked. ``change`` may run more than once (a retried
    deadlock): it must only compute."""
    ordered = sorted(set(keys))

    async def body(tx: Transaction) -> T:
        conn = tx._conn  # type: ignore[attr-defined]
        query = sa.select(kv.c.key, kv.c.value).where(
            kv.c.namespace == namespace, kv.c.key.in_(ordered)
        )
        if store.dialect == "postgresql":
            from sqlalchemy.dialects.postgresql import insert

            now = time.time()
            await conn.execute(
                insert(kv)
                .values(
                    [
                        {"namespace": namespace, "key": key, "value": "null", "updated_at": now}
                        for key in ordered
                    ]
                )
                .on_conflict_do_nothing(index_elements=[kv.c.namespace, kv.c.key])
            )
            query = query.order_by(kv.c.key).with_for_update()
        rows = {key: json.loads(value) for key, value in (await conn.execute(query)).all()}
        writes, result = change({key: value for key, value in rows.items() if value is not None})
        for key, value in writes.items():
            await tx.set(namespace, key, value)
        return result

    return await atomically(store, body)


async def prune_rows(store: SQLStore, namespace: str, older_than: float) -> None:
    """Delete the rows of ``namespace`` last written before ``older_than`` (epoch seconds)."""

    async def body(tx: Transaction) -> None:
        conn = tx._conn  # type: ignore[attr-defined]
        await conn.execute(
            sa.delete(kv).where(kv.c.namespace == namespace, kv.c.updated_at < older_than)
        )

    await atomically(store, body)
