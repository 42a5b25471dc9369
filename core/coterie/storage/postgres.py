"""The SQL store on PostgreSQL, through asyncpg: two round trips per transaction (the lock with
a read-ahead, then the writes with the commit), the notices that keep the read cache true, and the
transaction (:class:`coterie.storage.sql.SQLStore` drives them; see its module for the design)."""

from __future__ import annotations

import json
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from coterie.storage.character_rows import UNDO_DEPTH, Character, CharacterWrites, parse_sheet
from coterie.storage.pg_functions import PG_SETUP as PG_SETUP
from coterie.storage.readahead import expected, take_expected
from coterie.storage.state import RollRecord, check_json

if TYPE_CHECKING:
    pass


from coterie.storage.rows import ROLL_FIELDS, dumps_json, roll_row

if TYPE_CHECKING:
    from coterie.storage.sql import SQLStore

#: the first key of coterie's PostgreSQL advisory locks (the second is ``hashtext(lock)``), so
#: they do not collide with another application's locks on the same database
ADVISORY_CLASS = 0x0C07E


#: the pseudo-namespace under which a transaction (and the read cache) keeps the active character
#: of a player, keyed ``CHRONICLE<US>OWNER``, valued ``KEY<US>SHEET``: it is read ahead, cached
#: and invalidated by notices like a ``kv`` value
ACTIVE_NS = "\x1dcharacter"
#: the active character of a player (one row at most)
SELECT_ACTIVE = (
    "SELECT key || chr(31) || sheet FROM characters WHERE chronicle = $1 AND owner = $2 AND active"
)
_PG_LOCK_READ = "SELECT namespace, key, value FROM pg_temp.coterie_lock_read($1, $2, $3, $4, $5)"
#: the pseudo-namespace of a take's verdict in the first round trip (see
#: :data:`coterie.storage.pg_functions.PG_SETUP`)
TOKENS_NS = "\x1dtokens"
#: connections a PostgreSQL store opens at most
PG_POOL_SIZE = 15
#: keys remembered per lock to read ahead in a transaction's first round trip; locks remembered
PG_READ_AHEAD_KEYS = 32
PG_READ_AHEAD_LOCKS = 1024
#: active sheets read ahead per lock: those of the last players who read theirs under it (so a
#: room's players rolling by name in turn find their sheet in the first round trip)
PG_READ_AHEAD_SHEETS = 6
#: the channel on which a commit names the keys it changed (``NAMESPACE<US>KEY``; ``*``: any)
PG_CHANNEL = "coterie_kv"
#: values a PostgreSQL store keeps from ``get`` outside transactions
PG_CACHE_SIZE = 4096
_ROLL_COLUMNS = ", ".join(f'"{name}"' for name in ROLL_FIELDS)


class ReadCache(dict[tuple[str, str], str | None]):
    """PostgreSQL: the values ``get`` read outside transactions, kept while the store's listener
    hears the keys every commit changes (:data:`PG_CHANNEL`). :meth:`notice` drops a key (or,
    for ``None``, every key); a value read while a notice for its own key, or for every key,
    arrived is not kept (:meth:`keep` with the count of notices heard when the read began).
    Notices for other keys do not matter: with messages in flight, some commit's notice
    overlaps almost every read, which kept nothing."""

    def __init__(self) -> None:
        super().__init__()
        #: notices heard so far
        self.heard = 0
        self._last: OrderedDict[tuple[str, str], int] = OrderedDict()
        self._everything = 0  # the last notice for every key
        self._forgotten = 0  # the last notice dropped from ``_last``

    def notice(self, key: tuple[str, str] | None) -> None:
        self.heard += 1
        if key is None:
            self._everything = self.heard
            self.clear()
            return
        self._last[key] = self.heard
        self._last.move_to_end(key)
        if len(self._last) > PG_CACHE_SIZE:
            self._forgotten = self._last.popitem(last=False)[1]
        self.pop(key, None)

    def keep(self, key: tuple[str, str], value: str | None, since: int) -> None:
        """Keep ``value`` of ``key``, read from when :attr:`heard` was ``since``, unless a
        notice that may concern it arrived meanwhile."""
        if max(self._everything, self._forgotten, self._last.get(key, 0)) > since:
            return
        if len(self) >= PG_CACHE_SIZE:
            self.pop(next(iter(self)))
        self[key] = value


def active_key(chronicle: str, owner: str) -> tuple[str, str]:
    """The pseudo-key of a player's active character (see :data:`ACTIVE_NS`)."""
    return ACTIVE_NS, f"{chronicle}\x1f{owner}"


def active_character(owner: str, value: str | None, readonly: bool = False) -> Character | None:
    """The active character from its pseudo-key's value."""
    if value is None:
        return None
    key, _, sheet = value.partition("\x1f")
    return Character(owner, key, parse_sheet(sheet, readonly), True)


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
        #: keys this transaction was said to read (:mod:`coterie.storage.readahead`): read with
        #: the lock, and not remembered for the next one (they are new with every message)
        self._expected = expected()
        #: tokens to take with the first round trip (said before it opened), and the verdict
        self._take = take_expected()
        self._taken: str | None = None
        self.started = False
        #: a database call is under way (an exception now leaves the connection in doubt)
        self.busy = False
        self._read: dict[tuple[str, str], str | None] = {}
        self._writes: dict[tuple[str, str], str | None] = {}  # None: deleted
        self._rolls: list[tuple[Any, ...]] = []
        self._touched: list[tuple[str, str]] = []
        #: characters written (sheets as JSON text), sent with the commit
        self._chars = CharacterWrites()
        #: ``!undo`` stacks read here, as (seq, JSON text) — seq ``None``: pushed here
        self._stacks: dict[tuple[str, str], list[tuple[int | None, str]]] = {}
        self._loaded: dict[tuple[str, str], list[int]] = {}
        #: changes pushed onto stacks not read here, and how many each stack keeps
        self._pushed: dict[tuple[str, str], list[str]] = {}
        self._keep: dict[tuple[str, str], int] = {}

    async def _start(self, first: tuple[str, str] | None) -> None:
        wanted = list(self._store._read_ahead.get(self._lock, ()))
        for key in (first, *self._expected):
            if key is not None and key not in wanted:
                wanted.append(key)
        self.busy = True
        rows = await self._conn.fetch(
            _PG_LOCK_READ,
            ADVISORY_CLASS,
            self._lock,
            [ns for ns, _ in wanted],
            [key for _, key in wanted],
            self._take,
        )
        self.busy = False
        self.started = True
        self._read = dict.fromkeys(wanted)
        for namespace, key, value in rows:
            if namespace == TOKENS_NS:
                self._taken = value
            else:
                self._read[(namespace, key)] = value

    async def taken(self) -> dict[str, Any] | None:
        """The verdict of the take said before this transaction opened
        (:func:`coterie.storage.readahead.expect_take`; ``None`` if none was), made and committed
        with its first round trip, whatever becomes of the rest of the transaction."""
        if not self.started:
            await self._start(None)
        return None if self._taken is None else dict(json.loads(self._taken))

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
            if namespace == ACTIVE_NS:
                chronicle, _, owner = key.partition("\x1f")
                self._read[wanted] = await self._conn.fetchval(SELECT_ACTIVE, chronicle, owner)
            else:
                self._read[wanted] = await self._conn.fetchval(
                    "SELECT value FROM kv WHERE namespace = $1 AND key = $2", namespace, key
                )
            self.busy = False
        return self._read[wanted]

    async def _fetch(self, query: str, *args: Any) -> list[Any]:
        if not self.started:
            await self._start(None)
        self.busy = True
        rows: list[Any] = await self._conn.fetch(query, *args)
        self.busy = False
        return rows

    async def _locked(self) -> None:
        if self._lock and not self.started:  # the room is this transaction's from now on
            await self._start(None)

    # characters (coterie.storage.character_rows.CharacterStore)

    async def active_character(
        self, chronicle: str, owner: str, *, readonly: bool = False
    ) -> Character | None:
        if self._chars.touches(chronicle, owner):
            rows = await self.characters(chronicle, owner)
            return next((row for row in rows if row.active), None)
        value = await self._value(*active_key(chronicle, owner))
        return active_character(owner, value, readonly)

    async def characters(self, chronicle: str, owner: str | None = None) -> list[Character]:
        query = "SELECT owner, key, sheet, active FROM characters WHERE chronicle = $1"
        args = [chronicle]
        if owner is not None:
            query += " AND owner = $2"
            args.append(owner)
        rows = await self._fetch(query, *args)
        stored = [Character(o, key, json.loads(sheet), active) for o, key, sheet, active in rows]
        return self._chars.merge(chronicle, owner, stored, json.loads)

    async def save_character(
        self, chronicle: str, owner: str, key: str, sheet: dict[str, Any]
    ) -> None:
        text = dumps_json(sheet)
        await self._locked()
        self._chars.sheets[(chronicle, owner, key)] = text

    async def delete_character(self, chronicle: str, owner: str, key: str) -> None:
        await self._locked()
        self._chars.sheets[(chronicle, owner, key)] = None

    async def set_active(self, chronicle: str, owner: str, key: str | None) -> None:
        await self._locked()
        self._chars.active[(chronicle, owner)] = key

    async def _stack(self, chronicle: str, author: str) -> list[tuple[int | None, str]]:
        player = (chronicle, author)
        if player not in self._stacks:
            rows = await self._fetch(
                "SELECT seq, change FROM character_changes WHERE chronicle = $1 "
                "AND author = $2 ORDER BY seq",
                chronicle,
                author,
            )
            self._loaded[player] = [seq for seq, _ in rows]
            stack: list[tuple[int | None, str]] = [(seq, text) for seq, text in rows]
            stack += [(None, text) for text in self._pushed.pop(player, [])]
            del stack[: max(len(stack) - self._keep.get(player, UNDO_DEPTH), 0)]
            self._stacks[player] = stack
        return self._stacks[player]

    async def push_change(
        self, chronicle: str, author: str, change: dict[str, Any], keep: int = UNDO_DEPTH
    ) -> None:
        text = dumps_json(change)
        await self._locked()
        player = (chronicle, author)
        self._keep[player] = keep
        if player in self._stacks:
            stack = self._stacks[player]
            stack.append((None, text))
            del stack[: max(len(stack) - keep, 0)]
        else:  # no read needed: the commit trims the stack
            self._pushed.setdefault(player, []).append(text)

    async def pop_change(self, chronicle: str, author: str) -> dict[str, Any] | None:
        stack = await self._stack(chronicle, author)
        if not stack:
            return None
        found: dict[str, Any] = json.loads(stack.pop()[1])
        return found

    async def changes(self, chronicle: str, author: str) -> list[dict[str, Any]]:
        return [json.loads(text) for _, text in await self._stack(chronicle, author)]

    def _character_statements(self, now: str) -> list[str]:
        """The commit's statements for the characters and stacks written here."""
        parts: list[str] = []
        sheets = self._chars.sheets
        deleted = sorted(k for k, v in sheets.items() if v is None)
        stored = sorted((k, v) for k, v in sheets.items() if v is not None)
        if deleted:
            rows = ", ".join("(" + ", ".join(pg_literal(v) for v in k) + ")" for k in deleted)
            parts.append(f"DELETE FROM characters WHERE (chronicle, owner, key) IN ({rows})")
        if stored:
            values = ", ".join(
                "(" + ", ".join(pg_literal(v) for v in (*k, sheet)) + f", FALSE, {now})"
                for k, sheet in stored
            )
            parts.append(
                "INSERT INTO characters (chronicle, owner, key, sheet, active, updated_at) "
                f"VALUES {values} ON CONFLICT (chronicle, owner, key) DO UPDATE SET "
                "sheet = excluded.sheet, updated_at = excluded.updated_at"
            )
        for (chronicle, owner), key in sorted(self._chars.active.items()):
            parts.append(
                f"UPDATE characters SET active = COALESCE(key = {pg_literal(key)}, FALSE) "
                f"WHERE chronicle = {pg_literal(chronicle)} AND owner = {pg_literal(owner)}"
            )
        new: list[tuple[tuple[str, str], str]] = []
        gone: list[int] = []
        for player, stack in sorted(self._stacks.items()):
            kept = {seq for seq, _ in stack}
            gone += [seq for seq in self._loaded.get(player, []) if seq not in kept]
            new += [(player, text) for seq, text in stack if seq is None]
        for player, texts in sorted(self._pushed.items()):
            new += [(player, text) for text in texts]
        if gone:
            parts.append(
                "DELETE FROM character_changes WHERE seq IN "
                f"({', '.join(str(int(seq)) for seq in gone)})"
            )
        if new:
            values = ", ".join(
                f"({pg_literal(c)}, {pg_literal(a)}, {pg_literal(text)})" for (c, a), text in new
            )
            parts.append(
                f"INSERT INTO character_changes (chronicle, author, change) VALUES {values}"
            )
        for (chronicle, author), keep in sorted(self._keep.items()):
            where = f"chronicle = {pg_literal(chronicle)} AND author = {pg_literal(author)}"
            parts.append(
                f"DELETE FROM character_changes WHERE {where} AND seq NOT IN (SELECT seq "
                f"FROM character_changes WHERE {where} ORDER BY seq DESC LIMIT {max(keep, 0)})"
            )
        return parts

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
        characters = self._character_statements(pg_literal(time.time()))
        if stored or deleted or self._rolls or characters:
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
            parts += characters
            written = self.written()
            if written:  # every store's read cache drops these keys (see SQLStore.get)
                payloads = [_notice(ns, key) for ns, key in sorted(written)]
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
        """The keys this transaction changes (a player's characters: the active one's key)."""
        return [*self._writes, *(active_key(c, o) for c, o in self._chars.players())]

    def learn(self) -> None:
        """Remember the keys this transaction read, to read them ahead next time."""
        if not self._lock or not self._touched:
            return
        ahead = self._store._read_ahead
        before = ahead.pop(self._lock, ())
        if len(ahead) >= PG_READ_AHEAD_LOCKS:
            ahead.pop(next(iter(ahead)))
        said = self._expected
        keys = [key for key in self._touched if key not in said][:PG_READ_AHEAD_KEYS]
        sheets = [key for key in keys if key[0] == ACTIVE_NS]
        for key in before:  # the other players' sheets read lately stay, the newest first
            if len(sheets) >= PG_READ_AHEAD_SHEETS:
                break
            if key[0] == ACTIVE_NS and key not in sheets:
                sheets.append(key)
        ahead[self._lock] = (*(key for key in keys if key[0] != ACTIVE_NS), *sheets)
