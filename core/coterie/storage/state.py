"""State storage: a small async key-value interface with transactions, and the roll log.

Core keeps room settings, roles, sessions, multi-message actions and rule state (e.g. a used
free botch) here; plugins get the same API through ``app.state`` and ``ctx.state(owner)``.

Two implementations share the :class:`StateStore` protocol and one test suite:

* :class:`MemoryStore` — process-local, for tests and throw-away bots;
* :class:`~coterie.storage.sql.SQLStore` — SQLite (WAL, the default) or PostgreSQL (asyncpg).

Every change that belongs together goes through one :meth:`StateStore.transaction`: its writes
land together or not at all, and two transactions on the same ``lock`` key (a room) never
interleave, across tasks and — with PostgreSQL — across worker processes.
"""

from __future__ import annotations

import asyncio
import copy
import json
import time
from dataclasses import field, fields
from math import isfinite
from operator import attrgetter
from typing import Any, Protocol, runtime_checkable

from coterie.records import dataclass
from coterie.storage.character_rows import (
    CharacterStore,
    CharacterWrites,
    MemoryCharacters,
    MemoryCharacterTx,
    ThroughTransactions,
)
from coterie.storage.jsontext import dumps_json
from coterie.storage.scope import LockedScope

#: the value a transaction's buffer holds for a key deleted in it
_DELETED = object()


#: the kinds of roll-log entries (:attr:`RollRecord.kind`): a roll of dice, and a tracker change
#: (``detail["kind"] == "tracker"``: a character's Hunger, Willpower, Health … moved, with
#: ``faces == []`` and ``outcome == TRACKER``; see ``docs/storage.md``)
ROLL = "roll"
TRACKER = "tracker"


@dataclass
class RollRecord:
    """One logged roll: what the roll log, ``!log``, ``!stats`` and ``coterie export`` read.

    The log also holds tracker changes (:attr:`kind` ``"tracker"``, see
    :mod:`coterie.play.changelog`): whatever counts rolls reads only :attr:`is_roll` entries."""

    id: str
    room: str
    user: str
    display_name: str
    variant: str
    #: the command as written, e.g. ``!roll 7 6 # the lock``
    request: str
    faces: list[int]
    #: the result name (``success``, ``failure``, ``botch``, ...)
    outcome: str
    successes: int
    #: a botch (V5 has none: its notable results are counted by name, see ``!stats``)
    botch: bool = False
    #: the expected ``successes`` of this request from the odds engine, when it can tell
    expected: float | None = None
    session: str | None = None
    #: seconds since the epoch
    time: float = field(default_factory=time.time)
    #: the outcome's JSON object (the ``coterie roll --json`` contract)
    detail: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        # a field-by-field copy: ``dataclasses.asdict`` deep-copies through ``copy.deepcopy``,
        # several times slower on the roll path (every roll is logged)
        return {
            name: value if type(value) in _ATOMS else json_copy(value)
            for name, value in vars(self).items()
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RollRecord:
        return cls(**data)

    @property
    def kind(self) -> str:
        """:data:`ROLL` (dice were rolled) or :data:`TRACKER` (a tracker changed)."""
        detail = self.detail
        return TRACKER if isinstance(detail, dict) and detail.get("kind") == TRACKER else ROLL

    @property
    def is_roll(self) -> bool:
        """Whether dice were rolled (what statistics count)."""
        return self.kind == ROLL

    @property
    def hunger(self) -> int:
        """How many of the last :attr:`faces` are Hunger dice (V5), as the log records it."""
        value = self.detail.get("hunger_dice", 0) if isinstance(self.detail, dict) else 0
        return value if isinstance(value, int) and 0 <= value <= len(self.faces) else 0


def faces_text(record: RollRecord, limit: int | None = None) -> str:
    """The logged faces as ``!log`` and the export show them: ``10 2 | Hunger 10`` when some
    are Hunger dice; at most ``limit`` faces, then ``…``."""
    shown = record.faces if limit is None else record.faces[:limit]
    hunger_from = len(record.faces) - record.hunger  # where the Hunger dice start
    words: list[str] = []
    for index, face in enumerate(shown):
        if index == hunger_from:
            words += ["|", "Hunger"] if index else ["Hunger"]
        words.append(str(face))
    more = limit is not None and len(record.faces) > limit
    return " ".join(words) + (" …" if more else "")


#: a roll record's fields in the order of its row (the ``rolls`` table's columns, the memory
#: store's tuples)
ROLL_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(RollRecord))
#: the fields a row keeps as JSON text
JSON_COLUMNS = ("faces", "detail")
_FACES_AT = ROLL_FIELDS.index("faces")
_DETAIL_AT = ROLL_FIELDS.index("detail")
_BOTCH_AT = ROLL_FIELDS.index("botch")
_ROOM_AT = ROLL_FIELDS.index("room")
_USER_AT = ROLL_FIELDS.index("user")
_SESSION_AT = ROLL_FIELDS.index("session")
#: every field's value, read in C
_read_record = attrgetter(*ROLL_FIELDS)
#: the types a row's other fields may hold
_ROW_TYPES = frozenset({str, int, bool, type(None), float})


def roll_row(record: RollRecord) -> tuple[Any, ...]:
    """A roll record as a row's values (in :data:`ROLL_FIELDS` order), checked as every store
    checks it: the JSON columns as JSON text, the other fields strings, numbers (finite),
    booleans or ``None`` (else a ``TypeError``, or json's ``ValueError``)."""
    values = list(_read_record(record))
    values[_FACES_AT] = dumps_json(values[_FACES_AT])
    values[_DETAIL_AT] = dumps_json(values[_DETAIL_AT])
    _check_fields(values)
    return tuple(values)


def _check_fields(values: list[Any]) -> None:
    """Refuse a row whose fields but the JSON columns (text by now) are not strings, finite
    numbers, booleans or ``None`` (see :func:`roll_row`)."""
    if not _ROW_TYPES.issuperset(map(type, values)):
        for name, value in zip(ROLL_FIELDS, values, strict=True):
            if type(value) not in _ROW_TYPES:
                raise TypeError(f"roll record field {name}: {value!r} is not JSON-compatible")
    if not all(map(isfinite, [value for value in values if type(value) is float])):
        check_json(values)  # NaN or an infinity: refused, as by every store (json's ValueError)


def _memory_row(record: RollRecord) -> tuple[Any, ...]:
    """A roll record as the memory store keeps it: :func:`roll_row`'s checks, the faces and the
    detail copied instead of written as JSON (:func:`json_copy`: the same rule, in half the
    time of encoding them)."""
    values = list(_read_record(record))
    faces, detail = values[_FACES_AT], values[_DETAIL_AT]
    values[_FACES_AT] = values[_DETAIL_AT] = ""  # (checked apart)
    _check_fields(values)
    values[_FACES_AT] = json_copy(faces)
    values[_DETAIL_AT] = json_copy(detail)
    return tuple(values)


def _memory_record(row: tuple[Any, ...]) -> RollRecord:
    """A new record from a row :func:`_memory_row` made, sharing nothing with it."""
    values = list(row)
    values[_FACES_AT] = json_copy(values[_FACES_AT])
    values[_DETAIL_AT] = json_copy(values[_DETAIL_AT])
    return _record_of(values)


def row_record(row: tuple[Any, ...] | list[Any]) -> RollRecord:
    """The roll record a row (:func:`roll_row`, or the ``rolls`` table's columns) was made from:
    a new object, sharing nothing with the row."""
    values = list(row)
    values[_FACES_AT] = json.loads(values[_FACES_AT])
    values[_DETAIL_AT] = json.loads(values[_DETAIL_AT])
    values[_BOTCH_AT] = bool(values[_BOTCH_AT])
    return _record_of(values)


def _record_of(values: list[Any]) -> RollRecord:
    """The record of a row's values, in :data:`ROLL_FIELDS` order, made as they are."""
    record = object.__new__(RollRecord)  # every field is set here: no __init__ needed
    record.__dict__.update(zip(ROLL_FIELDS, values, strict=True))
    return record


@runtime_checkable
class Transaction(CharacterStore, Protocol):
    """Reads and writes that commit together (see :meth:`StateStore.transaction`); the
    character methods are :class:`~coterie.storage.character_rows.CharacterStore`'s."""

    async def get(self, namespace: str, key: str) -> Any | None:
        """The stored value (as this transaction sees it), or ``None``."""
        ...

    async def set(self, namespace: str, key: str, value: Any) -> None:
        """Store ``value`` (JSON-compatible) under ``namespace``/``key``."""
        ...

    async def delete(self, namespace: str, key: str) -> None:
        """Remove the value, if any."""
        ...

    async def keys(self, namespace: str, prefix: str = "") -> list[str]:
        """The keys of ``namespace`` starting with ``prefix``, sorted."""
        ...

    async def log_roll(self, record: RollRecord) -> None:
        """Append a roll to the roll log."""
        ...


@runtime_checkable
class StateStore(CharacterStore, Protocol):
    """Async key-value storage of JSON-compatible values, by namespace and key, plus the roll
    log and the characters (:class:`~coterie.storage.character_rows.CharacterStore`). The
    single-call methods are each their own transaction."""

    def transaction(self, lock: str = "") -> Any:
        """An async context manager yielding a :class:`Transaction`. Writes are applied when the
        block ends normally and dropped when it raises. Transactions with the same non-empty
        ``lock`` (use the room key) run one at a time."""
        ...

    async def get(self, namespace: str, key: str) -> Any | None:
        """The stored value, or ``None``."""
        ...

    async def set(self, namespace: str, key: str, value: Any) -> None:
        """Store ``value`` (JSON-compatible) under ``namespace``/``key``."""
        ...

    async def delete(self, namespace: str, key: str) -> None:
        """Remove the value, if any."""
        ...

    async def keys(self, namespace: str, prefix: str = "") -> list[str]:
        """The keys of ``namespace`` starting with ``prefix``, sorted."""
        ...

    async def log_roll(self, record: RollRecord) -> None:
        """Append a roll to the roll log."""
        ...

    async def rolls(
        self,
        room: str,
        *,
        limit: int | None = 20,
        user: str | None = None,
        session: str | None = None,
    ) -> list[RollRecord]:
        """A room's logged rolls, newest first (at most ``limit``; ``None``: all), optionally
        only one user's or one session's."""
        ...

    async def close(self) -> None:
        """Release resources."""
        ...


def check_json(value: Any) -> None:
    """Refuse a value a persistent store could not keep (the same rule for every store)."""
    json.dumps(value, allow_nan=False)


_ATOMS = frozenset({str, int, bool, type(None)})
_STR = frozenset({str})


class _NotPlain(Exception):
    """Raised inside :func:`_plain_copy` for anything but plain JSON data."""


def _plain_copy(value: Any) -> Any:
    kind = type(value)
    if kind in _ATOMS:
        return value
    if kind is float:
        if value - value != 0.0:  # NaN or ±infinity: JSON cannot hold them
            raise _NotPlain
        return value
    # strings, ints, booleans and None inside a container are taken as they are, without a call
    # (the checks of a whole container's keys and items run in C: ``issuperset`` of a ``map``)
    if kind is dict:
        copied = dict(value)
        if not _STR.issuperset(map(type, copied)):
            raise _NotPlain
        if not _ATOMS.issuperset(map(type, copied.values())):
            for key, item in copied.items():  # (replacing values: the keys do not change)
                if type(item) not in _ATOMS:
                    copied[key] = _plain_copy(item)
        return copied
    if kind is list:
        if _ATOMS.issuperset(map(type, value)):
            return list(value)
        return [item if type(item) in _ATOMS else _plain_copy(item) for item in value]
    if kind is tuple:
        return tuple(item if type(item) in _ATOMS else _plain_copy(item) for item in value)
    raise _NotPlain


def json_copy(value: Any) -> Any:
    """A deep copy of a JSON-compatible ``value``; raises what :func:`check_json` raises for
    anything else. Plain data (str/int/bool/None, finite floats, str-keyed dicts, lists, tuples)
    is copied in one pass, several times faster than ``copy.deepcopy``; anything else is checked
    by :func:`check_json` and deep-copied as before."""
    try:
        return _plain_copy(value)
    except _NotPlain:
        check_json(value)
        return copy.deepcopy(value)


def select_rows(
    rows: list[tuple[Any, ...]],
    room: str,
    *,
    limit: int | None,
    user: str | None,
    session: str | None,
) -> list[tuple[Any, ...]]:
    """The roll-log query of the protocol over rows (:func:`_memory_row`) kept in order of
    logging, newest first."""
    chosen = [
        r
        for r in reversed(rows)
        if r[_ROOM_AT] == room
        and (user is None or r[_USER_AT] == user)
        and (session is None or r[_SESSION_AT] == session)
    ]
    return chosen if limit is None else chosen[:limit]


class _MemoryTransaction(MemoryCharacterTx):
    def __init__(self, store: MemoryStore) -> None:
        # (``MemoryCharacterTx.__init__`` written out: a transaction for every command)
        self._tables, self._copy = store._characters, json_copy
        self.character_writes = CharacterWrites()
        self.stacks: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self._store = store
        self.writes: dict[tuple[str, str], Any] = {}
        self.logged: list[tuple[Any, ...]] = []

    async def get(self, namespace: str, key: str) -> Any | None:
        wanted = (namespace, key)
        value = self.writes[wanted] if wanted in self.writes else self._store._data.get(wanted)
        if value is None or value is _DELETED:  # (most reads find nothing: no copy to make)
            return None
        return json_copy(value)

    async def set(self, namespace: str, key: str, value: Any) -> None:
        self.writes[(namespace, key)] = json_copy(value)

    async def delete(self, namespace: str, key: str) -> None:
        self.writes[(namespace, key)] = _DELETED

    async def keys(self, namespace: str, prefix: str = "") -> list[str]:
        merged = {k: v for k, v in self._store._data.items() if k[0] == namespace}
        merged.update({k: v for k, v in self.writes.items() if k[0] == namespace})
        return sorted(
            k[1] for k, v in merged.items() if v is not _DELETED and k[1].startswith(prefix)
        )

    async def log_roll(self, record: RollRecord) -> None:
        self.logged.append(_memory_row(record))


class MemoryStore(ThroughTransactions):
    """A process-local store: state lasts as long as the process. Nothing here awaits between
    its reads and writes, so on one event loop each method is atomic without a lock.

    The roll log is kept as a database keeps it, one row per roll, checked as every store checks
    it (:func:`roll_row`), its faces and detail copied (:func:`json_copy`), and read back into new
    records: a logged record shares nothing with the caller's."""

    def __init__(self) -> None:
        self._data: dict[tuple[str, str], Any] = {}
        self._characters = MemoryCharacters()
        #: the roll log's rows (:func:`_memory_row`), oldest first
        self._log: list[tuple[Any, ...]] = []
        #: rooms whose lock is held → the tasks waiting for it (:class:`LockedScope`)
        self._locks: dict[str, list[asyncio.Future[None]]] = {}

    def transaction(self, lock: str = "") -> LockedScope[_MemoryTransaction]:
        return LockedScope(self._locks, lock, self._begin, self._apply)

    def _begin(self) -> _MemoryTransaction:
        return _MemoryTransaction(self)

    def _apply(self, tx: _MemoryTransaction) -> None:
        data = self._data
        for key, value in tx.writes.items():
            if value is _DELETED:
                data.pop(key, None)
            else:
                data[key] = value
        self._log.extend(tx.logged)
        writes = tx.character_writes
        if writes.sheets or writes.active or tx.stacks:  # (``bool(writes)`` written out)
            self._characters.apply(writes, tx.stacks)

    async def get(self, namespace: str, key: str) -> Any | None:
        value = self._data.get((namespace, key))
        return None if value is None else json_copy(value)

    async def expire(self, namespace: str, before: float) -> int:
        """Remove the values of ``namespace`` stamped (``"at"``) before ``before``; how many."""
        old = [
            k
            for k, v in self._data.items()
            if k[0] == namespace and isinstance(v, dict) and v.get("at", before) < before
        ]
        for k in old:
            self._data.pop(k, None)
        return len(old)

    async def set(self, namespace: str, key: str, value: Any) -> None:
        self._data[(namespace, key)] = json_copy(value)

    async def delete(self, namespace: str, key: str) -> None:
        self._data.pop((namespace, key), None)

    async def keys(self, namespace: str, prefix: str = "") -> list[str]:
        return sorted(k for ns, k in self._data if ns == namespace and k.startswith(prefix))

    async def log_roll(self, record: RollRecord) -> None:
        self._log.append(_memory_row(record))

    async def rolls(
        self,
        room: str,
        *,
        limit: int | None = 20,
        user: str | None = None,
        session: str | None = None,
    ) -> list[RollRecord]:
        found = select_rows(self._log, room, limit=limit, user=user, session=session)
        return [_memory_record(row) for row in found]

    def logged(self, start: int = 0) -> list[RollRecord]:
        """Every roll logged from the ``start``-th on, oldest first (for tests)."""
        return [_memory_record(row) for row in self._log[start:]]

    async def close(self) -> None:
        self._data.clear()
        self._characters = MemoryCharacters()


class RoomState:
    """A view of the store (or of one transaction) scoped to one room and one owner (a plugin or
    rule set)."""

    def __init__(self, store: StateStore | Transaction, owner: str, room_key: str) -> None:
        self._store = store
        self._namespace = f"{owner}:{room_key}"

    async def get(self, key: str, default: Any = None) -> Any:
        value = await self._store.get(self._namespace, key)
        return default if value is None else value

    async def set(self, key: str, value: Any) -> None:
        await self._store.set(self._namespace, key, value)

    async def delete(self, key: str) -> None:
        await self._store.delete(self._namespace, key)

    async def keys(self, prefix: str = "") -> list[str]:
        return await self._store.keys(self._namespace, prefix)
