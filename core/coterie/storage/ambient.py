"""The app's store as commands, rule sets and hooks see it (``app.state``,
:class:`AmbientStore`): inside a command's transaction every read and write joins that
transaction."""

from __future__ import annotations

import contextvars
from typing import Any

from coterie.storage.character_rows import UNDO_DEPTH, Character
from coterie.storage.joining import joined, landed, next_joiner, not_landed
from coterie.storage.state import RollRecord, StateStore

#: the transaction the current task's command runs in, with the store it belongs to
_active: contextvars.ContextVar[tuple[object, Any] | None] = contextvars.ContextVar(
    "coterie_active_transaction", default=None
)


class AmbientStore:
    """The app's store as commands, rule sets and hooks see it (``app.state``): inside a
    command's transaction, every read and write — a ``coterie_after_roll`` hook's included —
    joins that transaction, so a command's changes land together or not at all; elsewhere (an
    adapter's bookkeeping) each call is its own transaction. A transaction opened inside another
    one of the same task is the outer one."""

    def __init__(self, store: StateStore) -> None:
        self.store = store

    def _current(self) -> Any:
        active = _active.get()
        return active[1] if active is not None and active[0] is self.store else None

    def _target(self) -> Any:
        return self._current() or self.store

    def transaction(self, lock: str = "") -> Any:
        """The command's transaction (an ``async with``): the current one if this task is
        inside one already, else a new transaction of the store that this task's reads and
        writes join."""
        return _AmbientScope(self.store, lock)

    async def get(self, namespace: str, key: str) -> Any | None:
        return await self._target().get(namespace, key)

    async def peek(self, namespace: str, key: str) -> tuple[Any | None, bool]:
        """A value, and whether it is confirmed current: a store may answer a value it read
        before without asking whether another process changed it since (the SQLite store:
        :meth:`~coterie.storage.sql.SQLStore.peek`), for a caller that confirms it in a
        transaction before acting on it. Other stores (and reads in a transaction) answer as
        :meth:`get` does, confirmed."""
        active = _active.get()  # (:meth:`_target` written out: every message peeks)
        target = active[1] if active is not None and active[0] is self.store else self.store
        peek = getattr(target, "peek", None)
        if peek is None:
            return await target.get(namespace, key), True
        found: tuple[Any | None, bool] = await peek(namespace, key)
        return found

    async def set(self, namespace: str, key: str, value: Any) -> None:
        await self._target().set(namespace, key, value)

    async def delete(self, namespace: str, key: str) -> None:
        await self._target().delete(namespace, key)

    async def keys(self, namespace: str, prefix: str = "") -> list[str]:
        return list(await self._target().keys(namespace, prefix))

    async def log_roll(self, record: RollRecord) -> None:
        await self._target().log_roll(record)

    async def rolls(
        self,
        room: str,
        *,
        limit: int | None = 20,
        user: str | None = None,
        session: str | None = None,
    ) -> list[RollRecord]:
        return await self.store.rolls(room, limit=limit, user=user, session=session)

    async def close(self) -> None:
        await self.store.close()

    # characters (see CharacterStore): in the command's transaction when there is one

    async def active_character(
        self, chronicle: str, owner: str, *, readonly: bool = False
    ) -> Character | None:
        found: Character | None = await self._target().active_character(
            chronicle, owner, readonly=readonly
        )
        return found

    async def characters(self, chronicle: str, owner: str | None = None) -> list[Character]:
        return list(await self._target().characters(chronicle, owner))

    async def save_character(
        self, chronicle: str, owner: str, key: str, sheet: dict[str, Any]
    ) -> None:
        await self._target().save_character(chronicle, owner, key, sheet)

    async def delete_character(self, chronicle: str, owner: str, key: str) -> None:
        await self._target().delete_character(chronicle, owner, key)

    async def set_active(self, chronicle: str, owner: str, key: str | None) -> None:
        await self._target().set_active(chronicle, owner, key)

    async def push_change(
        self, chronicle: str, author: str, change: dict[str, Any], keep: int = UNDO_DEPTH
    ) -> None:
        await self._target().push_change(chronicle, author, change, keep)

    async def pop_change(self, chronicle: str, author: str) -> dict[str, Any] | None:
        found: dict[str, Any] | None = await self._target().pop_change(chronicle, author)
        return found

    async def changes(self, chronicle: str, author: str) -> list[dict[str, Any]]:
        return list(await self._target().changes(chronicle, author))


class _AmbientScope:
    """:meth:`AmbientStore.transaction` (a class, not a generator: every command opens one)."""

    __slots__ = ("_joiner", "_lock", "_scope", "_store", "_token")

    def __init__(self, store: StateStore, lock: str) -> None:
        self._store, self._lock = store, lock
        self._scope: Any = None

    async def __aenter__(self) -> Any:
        active = _active.get()
        if active is not None and active[0] is self._store:
            return active[1]  # the outer transaction (``_scope`` stays None)
        scope = self._store.transaction(self._lock)
        tx = await scope.__aenter__()
        self._scope = scope
        self._token = _active.set((self._store, tx))
        self._joiner = None
        try:
            if next_joiner.get() is not None:  # an adapter's claim (coterie.storage.joining)
                self._joiner = await joined(tx)
        except BaseException as error:
            _active.reset(self._token)
            self._scope = None
            await scope.__aexit__(type(error), error, error.__traceback__)
            raise
        return tx

    async def __aexit__(self, kind: Any, error: Any, trace: Any) -> bool:
        scope = self._scope
        if scope is None:
            return False
        _active.reset(self._token)
        joiner = self._joiner
        if joiner is None:
            return bool(await scope.__aexit__(kind, error, trace))
        try:
            suppressed = bool(await scope.__aexit__(kind, error, trace))
        except BaseException:
            not_landed(joiner)
            raise
        if kind is None or suppressed:  # committed
            landed(joiner)
        else:
            not_landed(joiner)
        return suppressed
