"""Game sessions: ``!session [start [TITLE] | end]``. The roll log files rolls under the open
session and the free first botch counts per session (the framework reads the open session's id:
:func:`coterie.framework.sessions.current_play`). A built-in plugin."""

from __future__ import annotations

import time
from typing import Any

from coterie.errors import UsageError
from coterie.framework.commands import Command, CommandContext, new_roll_id
from coterie.framework.grammar import shorten, tokens
from coterie.framework.sessions import SESSIONS
from coterie.hookimpl import hookimpl
from coterie.play.rooms import require_storyteller
from coterie.render.elements import Node, Text, bold, code

#: sessions kept in a room's history
SESSION_HISTORY = 200


SESSION_USAGE = "!session [start [TITLE] | end]"


# --- sessions -------------------------------------------------------------------------------------


async def session_command(ctx: CommandContext) -> list[Node]:
    words = tokens(ctx.args)
    action = words[0].lower() if words else ""
    room = ctx.message.room_key
    sessions: dict[str, Any] = await ctx.store.get(SESSIONS, room) or {}
    current = sessions.get("current")
    history: list[dict[str, Any]] = list(sessions.get("history", []))
    prefix = ctx.settings.prefix
    if not action:
        if current is None:
            return [
                Text("No session is open. "),
                code(f"{prefix}session start"),
                Text(" opens one (the Storyteller)."),
            ]
        return [
            Text("Session "),
            code(current["id"]),
            Text(_title(current)),
            Text(f" open since {_when(current['started'])}, started by "),
            bold(current.get("started_by_name", current["started_by"])),
            Text("."),
        ]
    if action == "start":
        await require_storyteller(ctx, "start a session")
        if current is not None:
            raise UsageError(
                f"session {current['id']} is still open; end it with `{prefix}session end` first"
            )
        title = " ".join(words[1:])[:80] or None
        current = {
            "id": new_roll_id(),
            "started": time.time(),
            "started_by": ctx.message.user,
            "started_by_name": ctx.message.display_name,
            "title": title,
        }
        sessions["current"] = current
        await ctx.store.set(SESSIONS, room, {**sessions, "current": current, "history": history})
        return [
            Text("Session "),
            code(current["id"]),
            Text(_title(current)),
            Text(
                " starts. Rolls are logged under it; the first botch of each player is free "
                "where the room's rules say so."
            ),
        ]
    if action in ("end", "stop"):
        await require_storyteller(ctx, "end a session")
        if current is None:
            raise UsageError("no session is open", usage=SESSION_USAGE)
        if len(words) > 1:
            raise UsageError("`end` takes nothing after it", usage=SESSION_USAGE)
        ended = {**current, "ended": time.time()}
        history = [*history, ended][-SESSION_HISTORY:]
        await ctx.store.set(SESSIONS, room, {**sessions, "current": None, "history": history})
        return [
            Text("Session "),
            code(current["id"]),
            Text(_title(current)),
            Text(f" ends after {_duration(ended['ended'] - ended['started'])}."),
        ]
    raise UsageError(f"unknown `{shorten(action)}`", usage=SESSION_USAGE)


def _title(session: dict[str, Any]) -> str:
    return f" ({session['title']})" if session.get("title") else ""


def _when(stamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(stamp))


def _duration(seconds: float) -> str:
    minutes = int(seconds // 60)
    return f"{minutes // 60} h {minutes % 60} min" if minutes >= 60 else f"{minutes} min"


@hookimpl
def coterie_commands() -> list[Command]:
    return [
        Command(
            name="session",
            summary="start or end a game session (Storyteller)",
            usage=SESSION_USAGE,
            examples=("!session start The Long Night", "!session start\n!session end"),
            handler=session_command,
            details=(
                "Rolls are logged under the open session; the free first botch counts per "
                "session. `coterie export` writes a session log."
            ),
        ),
    ]
