"""State several worker processes update together on PostgreSQL: the shared rate limits' token
buckets (:mod:`coterie.framework.ratelimit`), and pruning.

A take from the buckets is one statement, ``pg_temp.coterie_take_tokens`` (see
:data:`coterie.storage.pg_functions.PG_SETUP`): it locks the user's and the room's rows, reads them,
decides and writes them back, and commits before the locks are freed. A command that runs in a
transaction of its room says its take before the transaction opens
(:func:`coterie.storage.readahead.expect_take`), and the take rides on that transaction's first
round trip; any other command takes alone (:func:`take_tokens`), in one round trip. Either way the
take is committed at once, whatever becomes of the command: a failing command spends its tokens.
No lock is held past that statement, so one user's slow command never holds up their commands in
other rooms. On the store's own asyncpg connections. Only a PostgreSQL store is shared by several
processes; nothing here is used on SQLite.
"""

from __future__ import annotations

import json
import time
from typing import Any

from coterie.storage.postgres import ADVISORY_CLASS
from coterie.storage.sql import SQLStore

_TAKE = "SELECT pg_temp.coterie_take_tokens($1, $2)"


def take_request(
    namespace: str,
    user_key: str,
    room_key: str,
    cost: float,
    now: float,
    bursts: tuple[float, float],
    rates: tuple[float, float],
) -> str:
    """A take of ``cost`` tokens at ``now`` from the buckets kept in rows ``user_key`` and
    ``room_key`` of ``namespace``, with their bursts and refill rates (tokens a second), as the
    SQL function reads it."""
    return json.dumps(
        {
            "space": namespace,
            "user": user_key,
            "room": room_key,
            "cost": float(cost),
            "now": float(now),
            "user_burst": float(bursts[0]),
            "room_burst": float(bursts[1]),
            "user_rate": float(rates[0]),
            "room_rate": float(rates[1]),
            "stamp": time.time(),
        }
    )


async def take_tokens(store: SQLStore, request: str) -> dict[str, Any]:
    """Take tokens alone (one round trip); the verdict as the SQL function gives it."""
    if store.dialect != "postgresql":
        raise RuntimeError("shared rows need a PostgreSQL store")
    async with store._connection() as conn:
        verdict: str = await conn.fetchval(_TAKE, ADVISORY_CLASS, request)
    return dict(json.loads(verdict))


async def prune_rows(store: SQLStore, namespace: str, older_than: float) -> None:
    """Delete the rows of ``namespace`` last written before ``older_than`` (epoch seconds)."""
    await store.expire(namespace, older_than)
