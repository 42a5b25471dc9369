"""The session open in a room and the scene being played, as commands and the roll log see them:
both live in one record of the room (namespace :data:`SESSIONS`), kept by ``!session`` and
``!scene`` (:mod:`coterie.play.sessions`, :mod:`coterie.play.scenes`) and read once per command
(:func:`current_play`)."""

from __future__ import annotations

from coterie.storage.state import StateStore, Transaction

#: state namespace of a room's sessions and scenes: ``{"current": {...} | None, "history":
#: [...], "scene": {...} | None, "scenes": [...]}``
SESSIONS = "coterie.sessions"


async def current_session(store: StateStore | Transaction, room_key: str) -> str | None:
    """The id of the session open in a room (``!session start``), if any."""
    return (await current_play(store, room_key))[0]


async def current_play(
    store: StateStore | Transaction, room_key: str
) -> tuple[str | None, str | None]:
    """The id of the session open in a room (``!session start``) and the name of the scene
    being played (``!scene start``), each if any: one read of the room's sessions record."""
    sessions = await store.get(SESSIONS, room_key) or {}
    current = sessions.get("current")
    scene = sessions.get("scene")
    return (
        str(current["id"]) if current else None,
        str(scene["name"]) if isinstance(scene, dict) and "name" in scene else None,
    )
