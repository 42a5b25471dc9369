"""Where characters are kept: per chronicle and player, through the state store's transactions.

A player's characters in a chronicle are one value (``{"active": KEY, "chars": {KEY: sheet}}``)
so that a roll by name reads the active sheet in one read. The change log behind ``!undo`` is a
bounded stack per chronicle and author. Both go through :class:`~coterie.storage.state.
StateStore` transactions (the command's own), so a change lands with the command's roll log
entry or not at all, on every store; rooms linked into one chronicle run their commands under
the chronicle's lock (``coterie.framework.app``), so two changes to one sheet never interleave.

Why the key-value store and not tables of their own: both SQL stores commit a transaction's
writes together (the PostgreSQL one in a single round trip) through the key-value API; sheets
are read and written whole, never queried by column. See ``docs/characters.md``.
"""

from __future__ import annotations

from typing import Any

from coterie.storage.state import StateStore, Transaction

#: a player's characters in a chronicle, by ``CHRONICLE|USER``
CHARACTERS = "coterie.characters"
#: the undo stack of an author in a chronicle, by ``CHRONICLE|USER``
CHANGES = "coterie.character_changes"
#: one-time codes linking a room into a chronicle, by code
LINKS = "coterie.chronicle_links"
#: changes kept per author for ``!undo``
UNDO_DEPTH = 20

Store = StateStore | Transaction


def player_key(chronicle: str, user: str) -> str:
    return f"{chronicle}|{user}"


async def load_player(store: Store, chronicle: str, user: str) -> dict[str, Any]:
    """A player's characters in a chronicle: ``{"active": KEY | None, "chars": {...}}``."""
    found = await store.get(CHARACTERS, player_key(chronicle, user))
    if not isinstance(found, dict):
        return {"active": None, "chars": {}}
    found.setdefault("chars", {})
    found.setdefault("active", None)
    return found


async def save_player(store: Store, chronicle: str, user: str, record: dict[str, Any]) -> None:
    if record.get("chars"):
        await store.set(CHARACTERS, player_key(chronicle, user), record)
    else:
        await store.delete(CHARACTERS, player_key(chronicle, user))


async def players(store: Store, chronicle: str) -> list[tuple[str, dict[str, Any]]]:
    """Every player with characters in a chronicle, by user id."""
    prefix = f"{chronicle}|"
    out = []
    for key in await store.keys(CHARACTERS, prefix):
        record = await load_player(store, chronicle, key[len(prefix) :])
        out.append((key[len(prefix) :], record))
    return out


async def push_change(store: Store, chronicle: str, author: str, change: dict[str, Any]) -> None:
    """Remember a change for ``!undo`` (the newest :data:`UNDO_DEPTH` are kept)."""
    key = player_key(chronicle, author)
    stack = await store.get(CHANGES, key) or []
    stack.append(change)
    await store.set(CHANGES, key, stack[-UNDO_DEPTH:])


async def changes(store: Store, chronicle: str, author: str) -> list[dict[str, Any]]:
    found = await store.get(CHANGES, player_key(chronicle, author))
    return found if isinstance(found, list) else []


async def set_changes(
    store: Store, chronicle: str, author: str, stack: list[dict[str, Any]]
) -> None:
    key = player_key(chronicle, author)
    if stack:
        await store.set(CHANGES, key, stack)
    else:
        await store.delete(CHANGES, key)
