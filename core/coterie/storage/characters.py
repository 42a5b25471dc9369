"""Where characters are kept: per chronicle and owner, in rows of their own (the ``characters``
and ``character_changes`` tables on SQLite and PostgreSQL, migration ``0002``), through the
state store's character methods (:class:`~coterie.storage.character_rows.CharacterStore`, part of
:class:`~coterie.storage.state.StateStore` and :class:`~coterie.storage.state.Transaction`).

Commands call those methods on ``ctx.store`` — the command's own transaction — so a change lands
with the command's roll log entry or not at all, on every store; rooms linked into one chronicle
run their commands under the chronicle's lock (``coterie.framework.app``), so two changes to one
sheet never interleave. A roll by name reads the active sheet alone, in one read
(:meth:`~coterie.storage.character_rows.CharacterStore.active_character`).

The functions below keep the older whole-player shape (``{"active": KEY, "chars": {KEY:
sheet}}``) for code written against it (the NPC commands); they are built on the same methods.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from coterie.storage.character_rows import UNDO_DEPTH as UNDO_DEPTH
from coterie.storage.character_rows import Character as Character
from coterie.storage.state import StateStore, Transaction

#: one-time codes linking a room into a chronicle, by code (short-lived: kept in ``kv``)
LINKS = "coterie.chronicle_links"

Store = StateStore | Transaction


def record_of(rows: Iterable[Character]) -> dict[str, Any]:
    """One owner's characters as ``{"active": KEY | None, "chars": {KEY: sheet}}``."""
    rows = list(rows)
    chars = {row.key: row.sheet for row in rows}
    active = next((row.key for row in rows if row.active), None) if chars else None
    return {"active": active, "chars": chars}


async def load_player(store: Store, chronicle: str, user: str) -> dict[str, Any]:
    """A player's characters in a chronicle: ``{"active": KEY | None, "chars": {...}}``."""
    return record_of(await store.characters(chronicle, user))


async def save_player(store: Store, chronicle: str, user: str, record: dict[str, Any]) -> None:
    """Store ``record`` (the shape :func:`load_player` gives) as the player's characters: the
    sheets that differ from the stored ones are written, the missing ones deleted."""
    stored = {row.key: row for row in await store.characters(chronicle, user)}
    chars: dict[str, Any] = record.get("chars") or {}
    for key in stored.keys() - chars.keys():
        await store.delete_character(chronicle, user, key)
    for key, sheet in chars.items():
        if key not in stored or stored[key].sheet != sheet:
            await store.save_character(chronicle, user, key, sheet)
    active = record.get("active")
    active = active if active in chars else None
    was = next((key for key, row in stored.items() if row.active), None)
    if active != was:
        await store.set_active(chronicle, user, active)


async def players(store: Store, chronicle: str) -> list[tuple[str, dict[str, Any]]]:
    """Every owner with characters in a chronicle, by owner."""
    by_owner: dict[str, list[Character]] = {}
    for row in await store.characters(chronicle):
        by_owner.setdefault(row.owner, []).append(row)
    return [(owner, record_of(rows)) for owner, rows in sorted(by_owner.items())]


async def push_change(store: Store, chronicle: str, author: str, change: dict[str, Any]) -> None:
    """Remember a change for ``!undo`` (the newest :data:`UNDO_DEPTH` are kept)."""
    await store.push_change(chronicle, author, change, UNDO_DEPTH)


async def changes(store: Store, chronicle: str, author: str) -> list[dict[str, Any]]:
    """The author's ``!undo`` stack, oldest first."""
    return await store.changes(chronicle, author)
