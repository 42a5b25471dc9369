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

from coterie.storage.sql import SQLStore, _dumps, atomically, kv
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
        postgresql = store.dialect == "postgresql"
        query = sa.select(kv.c.key, kv.c.value).where(
            kv.c.namespace == namespace, kv.c.key.in_(ordered)
        )
        if postgresql:
            query = query.order_by(kv.c.key).with_for_update()
        found = (await conn.execute(query)).all()
        if postgresql and len(found) < len(ordered):  # first use: create them, then lock them
            from sqlalchemy.dialects.postgresql import insert

            placeholders = [
                {"namespace": namespace, "key": key, "value": "null", "updated_at": time.time()}
                for key in ordered
            ]
            await conn.execute(
                insert(kv)
                .values(placeholders)
                .on_conflict_do_nothing(index_elements=[kv.c.namespace, kv.c.key])
            )
            found = (await conn.execute(query)).all()
        rows = {key: json.loads(value) for key, value in found}
        writes, result = change({key: value for key, value in rows.items() if value is not None})
        if writes:
            await _upsert(conn, store.dialect, namespace, writes)
        return result

    return await atomically(store, body)


async def _upsert(conn: Any, dialect: str, namespace: str, writes: dict[str, Any]) -> None:
    """Write every value of ``writes`` in one statement."""
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert  # type: ignore[assignment]
    now = time.time()
    statement = insert(kv).values(
        [
            {"namespace": namespace, "key": key, "value": _dumps(value), "updated_at": now}
            for key, value in writes.items()
        ]
    )
    await conn.execute(
        statement.on_conflict_do_update(
            index_elements=[kv.c.namespace, kv.c.key],
            set_={"value": statement.excluded.value, "updated_at": now},
        )
    )


async def prune_rows(store: SQLStore, namespace: str, older_than: float) -> None:
    """Delete the rows of ``namespace`` last written before ``older_than`` (epoch seconds)."""

    async def body(tx: Transaction) -> None:
        conn = tx._conn  # type: ignore[attr-defined]
        await conn.execute(
            sa.delete(kv).where(kv.c.namespace == namespace, kv.c.updated_at < older_than)
        )

    await atomically(store, body)
