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
from dataclasses import field
from typing import Any, Protocol, runtime_checkable

from coterie.records import dataclass
from coterie.storage.character_rows import (
    CharacterStore,
    MemoryCharacters,
    MemoryCharacterTx,
    ThroughTransactions,
)
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


def select_rolls(
    records: list[RollRecord],
    room: str,
    *,
    limit: int | None,
    user: str | None,
    session: str | None,
) -> list[RollRecord]:
    """The roll-log query of the protocol over records kept in order of logging."""
    chosen = [
        r
        for r in reversed(records)
        if r.room == room
        and (user is None or r.user == user)
        and (session is None or r.session == session)
    ]
    return chosen if limit is None else chosen[:limit]


def _record_copy(record: RollRecord) -> RollRecord:
    """A checked (JSON-compatible) independent copy of a roll record."""
    copied = object.__new__(RollRecord)  # the fields are all set below: no __init__ needed
    copied.__dict__.update(record.as_json())
    return copied


class _MemoryTransaction(MemoryCharacterTx):
    def __init__(self, store: MemoryStore) -> None:
        super().__init__(store._characters, json_copy)
        self._store = store
        self.writes: dict[tuple[str, str], Any] = {}
        self.logged: list[RollRecord] = []

    async def get(self, namespace: str, key: str) -> Any | None:
        value = self.writes.get((namespace, key), self._store._data.get((namespace, key)))
        return None if value is _DELETED else json_copy(value)

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
        self.logged.append(_record_copy(record))


class MemoryStore(ThroughTransactions):
    """A process-local store: state lasts as long as the process. Nothing here awaits between
    its reads and writes, so on one event loop each method is atomic without a lock."""

    def __init__(self) -> None:
        self._data: dict[tuple[str, str], Any] = {}
        self._characters = MemoryCharacters()
        self._log: list[RollRecord] = []
        self._locks: dict[str, asyncio.Lock] = {}

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
        if tx.character_writes or tx.stacks:
            self._characters.apply(tx.character_writes, tx.stacks)

    async def get(self, namespace: str, key: str) -> Any | None:
        return json_copy(self._data.get((namespace, key)))

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
        self._log.append(_record_copy(record))

    async def rolls(
        self,
        room: str,
        *,
        limit: int | None = 20,
        user: str | None = None,
        session: str | None = None,
    ) -> list[RollRecord]:
        found = select_rolls(self._log, room, limit=limit, user=user, session=session)
        return [_record_copy(record) for record in found]

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
