"""The character part of the state store's protocol (#17): characters and their ``!undo``
stacks, kept by every store (memory, SQLite, PostgreSQL) in rows of their own — the SQL stores in
the ``characters`` and ``character_changes`` tables (migration ``0002``).

:class:`CharacterStore` lists the methods; :class:`~coterie.storage.state.Transaction` and
:class:`~coterie.storage.state.StateStore` both have them. Inside a transaction they read what the
transaction sees (its own writes included) and their writes land with the transaction's other
writes and logged rolls, or not at all. :class:`CharacterWrites` is the buffer of a transaction
that applies its writes at commit (the memory and PostgreSQL stores).
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from coterie.records import dataclass

#: changes kept per author and chronicle for ``!undo`` (older ones are forgotten)
UNDO_DEPTH = 20


@dataclass
class Character:
    """One stored character: its owner (a user id, or a pseudo-owner such as the chronicle's
    NPCs), its key (the folded name, unique per owner in a chronicle), the sheet (a JSON object,
    the reader's own copy) and whether it is the owner's active character."""

    owner: str
    key: str
    sheet: dict[str, Any]
    active: bool = False


class CharacterStore(Protocol):
    """Characters by chronicle, owner and key; the ``!undo`` stack by chronicle and author."""

    async def active_character(
        self, chronicle: str, owner: str, *, readonly: bool = False
    ) -> Character | None:
        """The owner's active character in the chronicle (``None``: none active) — one read
        (what a roll by Trait name costs). ``readonly``: the caller only reads the sheet, which
        may then be shared with other readers instead of copied (a roll's pool)."""
        ...

    async def characters(self, chronicle: str, owner: str | None = None) -> list[Character]:
        """Every character of the chronicle (or of one owner in it), by owner then key."""
        ...

    async def save_character(
        self, chronicle: str, owner: str, key: str, sheet: dict[str, Any]
    ) -> None:
        """Store a character's sheet (new or changed); whether it is active is unchanged (a new
        one is not)."""
        ...

    async def delete_character(self, chronicle: str, owner: str, key: str) -> None:
        """Remove a character, if any (if it was active, the owner has none active)."""
        ...

    async def set_active(self, chronicle: str, owner: str, key: str | None) -> None:
        """Make ``key`` the owner's active character (``None``: none)."""
        ...

    async def push_change(
        self, chronicle: str, author: str, change: dict[str, Any], keep: int = UNDO_DEPTH
    ) -> None:
        """Put a change (a JSON object) on the author's ``!undo`` stack, keeping the newest
        ``keep``."""
        ...

    async def pop_change(self, chronicle: str, author: str) -> dict[str, Any] | None:
        """Take the author's newest change off the stack (``None``: the stack is empty)."""
        ...

    async def changes(self, chronicle: str, author: str) -> list[dict[str, Any]]:
        """The author's stack, oldest first."""
        ...


#: sheets parsed for read-only readers, by their JSON text (at most :data:`SHARED_SHEETS`)
_shared: dict[str, dict[str, Any]] = {}
SHARED_SHEETS = 512


def parse_sheet(text: str, readonly: bool) -> dict[str, Any]:
    """A stored sheet's JSON as an object: the reader's own, or (``readonly``) one parsed before
    from the same text and shared."""
    if not readonly:
        parsed: dict[str, Any] = json.loads(text)
        return parsed
    found = _shared.get(text)
    if found is None:
        if len(_shared) >= SHARED_SHEETS:
            _shared.pop(next(iter(_shared)))
        found = _shared[text] = json.loads(text)
    return found


def ordered(found: list[Character]) -> list[Character]:
    return sorted(found, key=lambda c: (c.owner, c.key))


class CharacterWrites:
    """A transaction's character writes until its commit, and the reads that merge them with
    what is stored."""

    __slots__ = ("active", "sheets")

    def __init__(self) -> None:
        #: (chronicle, owner, key) -> the sheet (JSON text or an object), ``None`` deleted
        self.sheets: dict[tuple[str, str, str], Any] = {}
        #: (chronicle, owner) -> the active key (``None``: none)
        self.active: dict[tuple[str, str], str | None] = {}

    def __bool__(self) -> bool:
        return bool(self.sheets or self.active)

    def touches(self, chronicle: str, owner: str) -> bool:
        """Whether the owner's characters in the chronicle were changed here."""
        if (chronicle, owner) in self.active:
            return True
        return any(c == chronicle and o == owner for c, o, _ in self.sheets)

    def players(self) -> list[tuple[str, str]]:
        """The (chronicle, owner) pairs changed here, sorted."""
        found = set(self.active) | {(c, o) for c, o, _ in self.sheets}
        return sorted(found)

    def merge(
        self,
        chronicle: str,
        owner: str | None,
        stored: list[Character],
        load: Any,
    ) -> list[Character]:
        """``stored`` (the chronicle's, or one owner's, characters as committed) with this
        transaction's writes applied; ``load`` turns a buffered sheet into the reader's copy."""
        rows = {(c.owner, c.key): c for c in stored}
        for (c, o, key), sheet in self.sheets.items():
            if c != chronicle or (owner is not None and o != owner):
                continue
            if sheet is None:
                rows.pop((o, key), None)
            else:
                old = rows.get((o, key))
                rows[(o, key)] = Character(o, key, load(sheet), old is not None and old.active)
        for (c, o), chosen in self.active.items():
            if c != chronicle or (owner is not None and o != owner):
                continue
            for (row_owner, row_key), row in rows.items():
                if row_owner == o:
                    row.active = row_key == chosen
        return ordered(list(rows.values()))


class ThroughTransactions:
    """The store-level character methods of a store, each its own transaction (a store mixes
    this in and overrides what it can do more cheaply)."""

    def transaction(self, lock: str = "") -> Any:
        raise NotImplementedError

    async def active_character(
        self, chronicle: str, owner: str, *, readonly: bool = False
    ) -> Character | None:
        async with self.transaction() as tx:
            found: Character | None = await tx.active_character(chronicle, owner, readonly=readonly)
            return found

    async def characters(self, chronicle: str, owner: str | None = None) -> list[Character]:
        async with self.transaction() as tx:
            found: list[Character] = await tx.characters(chronicle, owner)
            return found

    async def save_character(
        self, chronicle: str, owner: str, key: str, sheet: dict[str, Any]
    ) -> None:
        async with self.transaction() as tx:
            await tx.save_character(chronicle, owner, key, sheet)

    async def delete_character(self, chronicle: str, owner: str, key: str) -> None:
        async with self.transaction() as tx:
            await tx.delete_character(chronicle, owner, key)

    async def set_active(self, chronicle: str, owner: str, key: str | None) -> None:
        async with self.transaction() as tx:
            await tx.set_active(chronicle, owner, key)

    async def push_change(
        self, chronicle: str, author: str, change: dict[str, Any], keep: int = UNDO_DEPTH
    ) -> None:
        async with self.transaction() as tx:
            await tx.push_change(chronicle, author, change, keep)

    async def pop_change(self, chronicle: str, author: str) -> dict[str, Any] | None:
        async with self.transaction() as tx:
            found: dict[str, Any] | None = await tx.pop_change(chronicle, author)
            return found

    async def changes(self, chronicle: str, author: str) -> list[dict[str, Any]]:
        async with self.transaction() as tx:
            found: list[dict[str, Any]] = await tx.changes(chronicle, author)
            return found


class MemoryCharacters:
    """The memory store's characters: committed sheets, active keys and ``!undo`` stacks."""

    __slots__ = ("active", "sheets", "stacks")

    def __init__(self) -> None:
        self.sheets: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.active: dict[tuple[str, str], str] = {}
        self.stacks: dict[tuple[str, str], list[dict[str, Any]]] = {}

    def rows(self, chronicle: str, owner: str | None, copy: Any) -> list[Character]:
        return ordered(
            [
                Character(o, key, copy(sheet), self.active.get((c, o)) == key)
                for (c, o, key), sheet in self.sheets.items()
                if c == chronicle and (owner is None or o == owner)
            ]
        )

    def apply(
        self, writes: CharacterWrites, stacks: dict[tuple[str, str], list[dict[str, Any]]]
    ) -> None:
        """Commit a transaction's writes (sheets already copied)."""
        for (c, o, key), sheet in writes.sheets.items():
            if sheet is None:
                self.sheets.pop((c, o, key), None)
                if self.active.get((c, o)) == key:
                    del self.active[(c, o)]
            else:
                self.sheets[(c, o, key)] = sheet
        for player, chosen in writes.active.items():
            if chosen is not None and (*player, chosen) in self.sheets:
                self.active[player] = chosen
            else:
                self.active.pop(player, None)
        for player, stack in stacks.items():
            if stack:
                self.stacks[player] = stack
            else:
                self.stacks.pop(player, None)


class MemoryCharacterTx:
    """A memory transaction's character methods: writes buffered until the commit."""

    def __init__(self, tables: MemoryCharacters, copy: Any) -> None:
        self._tables = tables
        self._copy = copy
        self.character_writes = CharacterWrites()
        #: the stacks this transaction changed, whole
        self.stacks: dict[tuple[str, str], list[dict[str, Any]]] = {}

    async def active_character(
        self, chronicle: str, owner: str, *, readonly: bool = False
    ) -> Character | None:
        if self.character_writes.touches(chronicle, owner):
            rows = await self.characters(chronicle, owner)
            return next((row for row in rows if row.active), None)
        key = self._tables.active.get((chronicle, owner))
        sheet = None if key is None else self._tables.sheets.get((chronicle, owner, key))
        if sheet is None or key is None:
            return None
        # committed sheets are never changed in place (a commit replaces them): shared as is
        return Character(owner, key, sheet if readonly else self._copy(sheet), True)

    async def characters(self, chronicle: str, owner: str | None = None) -> list[Character]:
        stored = self._tables.rows(chronicle, owner, self._copy)
        if not self.character_writes:
            return stored
        return self.character_writes.merge(chronicle, owner, stored, self._copy)

    async def save_character(
        self, chronicle: str, owner: str, key: str, sheet: dict[str, Any]
    ) -> None:
        self.character_writes.sheets[(chronicle, owner, key)] = self._copy(sheet)

    async def delete_character(self, chronicle: str, owner: str, key: str) -> None:
        self.character_writes.sheets[(chronicle, owner, key)] = None

    async def set_active(self, chronicle: str, owner: str, key: str | None) -> None:
        self.character_writes.active[(chronicle, owner)] = key

    def _stack(self, chronicle: str, author: str) -> list[dict[str, Any]]:
        player = (chronicle, author)
        if player not in self.stacks:
            self.stacks[player] = list(self._tables.stacks.get(player, []))
        return self.stacks[player]

    async def push_change(
        self, chronicle: str, author: str, change: dict[str, Any], keep: int = UNDO_DEPTH
    ) -> None:
        stack = self._stack(chronicle, author)
        stack.append(self._copy(change))
        del stack[: max(len(stack) - keep, 0)]

    async def pop_change(self, chronicle: str, author: str) -> dict[str, Any] | None:
        stack = self._stack(chronicle, author)
        return self._copy(stack.pop()) if stack else None

    async def changes(self, chronicle: str, author: str) -> list[dict[str, Any]]:
        stack = self.stacks.get((chronicle, author))
        if stack is None:
            stack = self._tables.stacks.get((chronicle, author), [])
        return [self._copy(change) for change in stack]
