"""Scenes: ``!scene start NAME``, ``!scene end``, ``!scene``. A built-in plugin.

While a scene is being played, every roll logged in the room carries its name (in the roll's
detail), so ``coterie export`` can recap the night scene by scene. The scene is kept in the room's
sessions record (:data:`coterie.framework.sessions.SESSIONS`), beside the open session, and read
with it in one go for every command (:func:`coterie.framework.sessions.current_play`). Starting a
scene ends the one before; ending a session does not end its scene (a scene may span a break)."""

from __future__ import annotations

import time
from typing import Any

from coterie.errors import UsageError
from coterie.framework.commands import Command, CommandContext
from coterie.framework.grammar import tokens
from coterie.framework.sessions import SESSIONS
from coterie.hookimpl import hookimpl
from coterie.play.rooms import require_storyteller
from coterie.render.elements import Node, Text, bold

SCENE_USAGE = "!scene [start NAME | end]"
#: scenes a room remembers (oldest dropped first)
SCENE_HISTORY = 200
MAX_NAME = 60


def _minutes(seconds: float) -> str:
    minutes = int(seconds // 60)
    return f"{minutes // 60} h {minutes % 60} min" if minutes >= 60 else f"{minutes} min"


async def scene_command(ctx: CommandContext) -> list[Node]:
    words = tokens(ctx.args)
    action = words[0].lower() if words else ""
    room = ctx.message.room_key
    record: dict[str, Any] = await ctx.store.get(SESSIONS, room) or {}
    current = record.get("scene")
    if not action:
        if current is None:
            return [
                Text(
                    f"No scene is being played. {ctx.settings.prefix}scene start NAME "
                    "begins one (the Storyteller)."
                )
            ]
        since = _minutes(time.time() - current["started"])
        return [Text("Scene: "), bold(current["name"]), Text(f" (for {since}).")]
    if action == "start":
        await require_storyteller(ctx, "start a scene")
        name = " ".join(words[1:]).strip()[:MAX_NAME]
        if not name:
            raise UsageError(
                "give the scene a name, e.g. `!scene start Elysium`", usage=SCENE_USAGE
            )
        body: list[Node] = []
        history = list(record.get("scenes", []))
        if current is not None:
            history = [*history, {**current, "ended": time.time()}][-SCENE_HISTORY:]
            body = [Text("Scene "), bold(current["name"]), Text(" ends. ")]
        record["scene"] = {"name": name, "started": time.time(), "by": ctx.message.user}
        record["scenes"] = history
        await ctx.store.set(SESSIONS, room, record)
        return [*body, Text("Scene "), bold(name), Text(" begins: rolls are logged under it.")]
    if action in ("end", "stop"):
        await require_storyteller(ctx, "end a scene")
        if current is None:
            raise UsageError("no scene is being played", usage=SCENE_USAGE)
        if len(words) > 1:
            raise UsageError("`end` takes nothing after it", usage=SCENE_USAGE)
        ended = {**current, "ended": time.time()}
        record["scene"] = None
        record["scenes"] = [*record.get("scenes", []), ended][-SCENE_HISTORY:]
        await ctx.store.set(SESSIONS, room, record)
        length = _minutes(ended["ended"] - ended["started"])
        return [Text("Scene "), bold(current["name"]), Text(f" ends after {length}.")]
    raise UsageError(f"`{action}` is not a scene action", usage=SCENE_USAGE)


@hookimpl
def coterie_commands() -> list[Command]:
    return [
        Command(
            name="scene",
            summary="start or end a scene: rolls are grouped by scene in the log (Storyteller)",
            usage=SCENE_USAGE,
            examples=("!scene start The Docks", "!scene start The Docks\n!scene end"),
            handler=scene_command,
            details="`coterie export` recaps the night scene by scene.",
        )
    ]
