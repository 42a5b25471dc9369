"""The SQL store on PostgreSQL, through asyncpg: two round trips per transaction (the lock with
a read-ahead, then the writes with the commit), the notices that keep the read cache true, and the
transaction (:class:`coterie.storage.sql.SQLStore` drives them; see its module for the design)."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from coterie.storage.state import RollRecord, check_json

if TYPE_CHECKING:
    pass


from coterie.storage.rows import ROLL_FIELDS, dumps_json, roll_row

if TYPE_CHECKING:
    from coterie.storage.sql import SQLStore

#: the first key of coterie's PostgreSQL advisory locks (the second is ``hashtext(lock)``), so
#: they do not collide with another application's locks on the same database
ADVISORY_CLASS = 0x0C07E


#: a function each connection creates for itself (in its temporary schema, so no migration is
#: involved): take the session-level advisory lock of ``lock_key`` (none for ``''``), then read
#: the given keys. A VOLATILE PL/pgSQL function takes a fresh snapshot for each query, so the
#: read sees everything committed before the lock was granted.
PG_SETUP = """
CREATE OR REPLACE FUNCTION pg_temp.coterie_lock_read(
    lock_class integer, lock_key text, namespaces text[], keys text[]
) RETURNS TABLE (namespace text, key text, value text) LANGUAGE plpgsql VOLATILE AS $body$
BEGIN
    IF lock_key <> '' THEN
        PERFORM pg_advisory_lock(lock_class, hashtext(lock_key));
    END IF;
    RETURN QUERY SELECT kv.namespace, kv.key, kv.value
        FROM kv JOIN unnest(namespaces, keys) AS wanted (ns, k)
        ON kv.namespace = wanted.ns AND kv.key = wanted.k;
END
$body$
"""
_PG_LOCK_READ = "SELECT namespace, key, value FROM pg_temp.coterie_lock_read($1, $2, $3, $4)"
#: connections a PostgreSQL store opens at most
PG_POOL_SIZE = 15
#: keys remembered per lock to read ahead in a transaction's first round trip; locks remembered
PG_READ_AHEAD_KEYS = 32
PG_READ_AHEAD_LOCKS = 1024
#: the channel on which a commit names the keys it changed (``NAMESPACE<US>KEY``; ``*``: any)
PG_CHANNEL = "coterie_kv"
#: values a PostgreSQL store keeps from ``get`` outside transactions
PG_CACHE_SIZE = 4096
_ROLL_COLUMNS = ", ".join(f'"{name}"' for name in ROLL_FIELDS)


def _notice(namespace: str, key: str) -> str:
    payload = f"{namespace}\x1f{key}"
    return payload if len(payload.encode()) < 7000 else "*"  # NOTIFY takes < 8000 bytes


SELECT_PG_ROLLS = f"SELECT {_ROLL_COLUMNS} FROM rolls"


def pg_literal(value: Any) -> str:
    """``value`` (a str, int, float, bool or None) as a PostgreSQL literal, for the one
    multi-statement query that commits a transaction (``standard_conforming_strings`` is on
    for coterie's connections: only quotes are doubled in a string)."""
    if value is None:
        return "NULL"
    if value is True or value is False:
        return "TRUE" if value else "FALSE"
    if type(value) is int:
        return str(value)
    if type(value) is float:
        check_json(value)
        return f"'{value!r}'::float8"
    if type(value) is str:
        if "\x00" in value:
            raise ValueError("PostgreSQL text cannot hold a NUL character")
        return "'" + value.replace("'", "''") + "'"
    raise TypeError(f"not a SQL literal: {value!r}")


class PGTransaction:
    """One transaction on PostgreSQL, usually in two round trips: its first operation takes
    the lock's advisory lock (the room is the transaction's from then on) and reads, in the
    same round trip, the key asked for with every key the last transaction on the same lock
    read (:data:`PG_READ_AHEAD_KEYS`); writes and logged rolls are kept here and sent with
    ``BEGIN``/``COMMIT`` and the unlock as one query when the block ends. A key not read ahead
    costs one more round trip."""

    def __init__(self, store: SQLStore, conn: Any, lock: str) -> None:
        self._store = store
        self._conn = conn
        self._lock = lock
        self.started = False
        #: a database call is under way (an exception now leaves the connection in doubt)
        self.busy = False
        self._read: dict[tuple[str, str], str | None] = {}
        self._writes: dict[tuple[str, str], str | None] = {}  # None: deleted
        self._rolls: list[tuple[Any, ...]] = []
        self._touched: list[tuple[str, str]] = []

    async def _start(self, first: tuple[str, str] | None) -> None:
        wanted = list(self._store._read_ahead.get(self._lock, ()))
        if first is not None and first not in wanted:
            wanted.append(first)
        self.busy = True
        rows = await self._conn.fetch(
            _PG_LOCK_READ,
            ADVISORY_CLASS,
            self._lock,
            [ns for ns, _ in wanted],
            [key for _, key in wanted],
        )
        self.busy = False
        self.started = True
        self._read = dict.fromkeys(wanted)
        for namespace, key, value in rows:
            self._read[(namespace, key)] = value

    async def _value(self, namespace: str, key: str) -> str | None:
        wanted = (namespace, key)
        if wanted in self._writes:
            return self._writes[wanted]
        if wanted not in self._touched:
            self._touched.append(wanted)
        if not self.started:
            await self._start(wanted)
        if wanted not in self._read:
            self.busy = True
            self._read[wanted] = await self._conn.fetchval(
                "SELECT value FROM kv WHERE namespace = $1 AND key = $2", namespace, key
            )
            self.busy = False
        return self._read[wanted]

    async def get(self, namespace: str, key: str) -> Any | None:
        found = await self._value(namespace, key)
        return None if found is None else json.loads(found)

    async def set(self, namespace: str, key: str, value: Any) -> None:
        text = dumps_json(value)
        if self._lock and not self.started:  # the room is this transaction's from now on
            await self._start(None)
        self._writes[(namespace, key)] = text

    async def delete(self, namespace: str, key: str) -> None:
        if self._lock and not self.started:
            await self._start(None)
        self._writes[(namespace, key)] = None

    async def keys(self, namespace: str, prefix: str = "") -> list[str]:
        if not self.started:
            await self._start(None)
        self.busy = True
        rows = await self._conn.fetch(
            "SELECT key, value FROM kv WHERE namespace = $1 AND substr(key, 1, $2) = $3",
            namespace,
            len(prefix),
            prefix,
        )
        self.busy = False
        found = set()
        for key, value in rows:  # read here, so that reading them next costs nothing
            self._read.setdefault((namespace, key), value)
            found.add(key)
        for (ns, key), value in self._writes.items():
            if ns == namespace:
                (found.add if value is not None else found.discard)(key)
        # sorted here, not by the database: a PostgreSQL collation may order text differently
        return sorted(k for k in found if k.startswith(prefix))

    async def log_roll(self, record: RollRecord) -> None:
        row = roll_row(record)
        if self._lock and not self.started:
            await self._start(None)
        self._rolls.append(row)

    def commit_query(self) -> str:
        """The one query that ends the transaction: the writes in key order (two commits on
        the same keys never deadlock), the rolls, ``COMMIT``, then the unlock."""
        parts: list[str] = []
        lock = f"{ADVISORY_CLASS}, hashtext({pg_literal(self._lock)})"
        stored = sorted((k, v) for k, v in self._writes.items() if v is not None)
        deleted = sorted(k for k, v in self._writes.items() if v is None)
        if stored or deleted or self._rolls:
            parts.append("BEGIN")
            now = pg_literal(time.time())
            if stored:
                values = ", ".join(
                    f"({pg_literal(ns)}, {pg_literal(key)}, {pg_literal(value)}, {now})"
                    for (ns, key), value in stored
                )
                parts.append(
                    f"INSERT INTO kv (namespace, key, value, updated_at) VALUES {values} "
                    "ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value, "
                    "updated_at = excluded.updated_at"
                )
            if deleted:
                pairs = ", ".join(f"({pg_literal(ns)}, {pg_literal(key)})" for ns, key in deleted)
                parts.append(f"DELETE FROM kv WHERE (namespace, key) IN ({pairs})")
            if self._rolls:
                rows = ", ".join(
                    "(" + ", ".join(pg_literal(v) for v in row) + ")" for row in self._rolls
                )
                parts.append(f"INSERT INTO rolls ({_ROLL_COLUMNS}) VALUES {rows}")
            if self._writes:  # every store's read cache drops these keys (see SQLStore.get)
                payloads = [_notice(ns, key) for ns, key in sorted(self._writes)]
                parts.append(
                    f"SELECT pg_notify({pg_literal(PG_CHANNEL)}, payload) FROM unnest(ARRAY["
                    + ", ".join(pg_literal(p) for p in payloads)
                    + "]::text[]) AS payload"
                )
            parts.append("COMMIT")
        if self._lock:
            parts.append(f"SELECT pg_advisory_unlock({lock})")
        return ";\n".join(parts)

    def written(self) -> list[tuple[str, str]]:
        return list(self._writes)

    def learn(self) -> None:
        """Remember the keys this transaction read, to read them ahead next time."""
        if not self._lock or not self._touched:
            return
        ahead = self._store._read_ahead
        ahead.pop(self._lock, None)
        if len(ahead) >= PG_READ_AHEAD_LOCKS:
            ahead.pop(next(iter(ahead)))
        ahead[self._lock] = tuple(self._touched[:PG_READ_AHEAD_KEYS])
