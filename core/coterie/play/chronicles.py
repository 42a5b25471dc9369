"""Chronicles: the rooms that share characters. A room is its own chronicle until its
Storyteller links it to another's: ``!chronicle link`` in the first room gives a one-time code,
``!chronicle join CODE`` in the other (a thread, another channel, a private chat with the bot)
makes it use the first room's characters; ``!chronicle leave`` undoes that. Codes avoid needing
room ids, which differ between platforms. Rooms of one chronicle run their commands one at a time
(the chronicle's lock), so two changes to one sheet never interleave."""

from __future__ import annotations

import secrets
import time

from coterie.errors import UsageError
from coterie.framework.commands import Command, CommandContext
from coterie.framework.grammar import tokens
from coterie.hookimpl import hookimpl
from coterie.play.rooms import require_storyteller
from coterie.play.roster import chronicle_of, has_sheets
from coterie.render.elements import Node, Text, code
from coterie.storage.characters import LINKS

CHRONICLE_USAGE = "!chronicle [link | join CODE | leave]"
#: how long a link code can be used
LINK_SECONDS = 600
_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"


async def chronicle_command(ctx: CommandContext) -> list[Node]:
    words = tokens(ctx.args)
    action = words[0].lower() if words else ""
    prefix = ctx.settings.prefix
    chronicle = chronicle_of(ctx)
    if action == "":
        linked = ctx.settings.chronicle is not None
        where = "shares the characters of another room" if linked else "is its own chronicle"
        return [Text(f"This room {where} ({chronicle}).")]
    if action == "link":
        await require_storyteller(ctx, "link rooms to this chronicle")
        code_text = "".join(secrets.choice(_ALPHABET) for _ in range(6))
        await ctx.store.set(
            LINKS, code_text, {"chronicle": chronicle, "until": time.time() + LINK_SECONDS}
        )
        return [
            Text("Send "),
            code(f"{prefix}chronicle join {code_text}"),
            Text(f" in the other room within {LINK_SECONDS // 60} minutes: it will use the "),
            Text("characters of this one."),
        ]
    if action == "join":
        await require_storyteller(ctx, "link this room to a chronicle")
        if len(words) != 2:
            raise UsageError(f"give the code `{prefix}chronicle link` showed")
        wanted = words[1].upper()
        found = await ctx.store.get(LINKS, wanted)
        if not isinstance(found, dict) or found.get("until", 0) < time.time():
            raise UsageError(f"`{wanted[:8]}` is not a valid code (they last 10 minutes)")
        await ctx.store.delete(LINKS, wanted)
        target = str(found["chronicle"])
        own = ctx.message.room_key
        await ctx.app.update_room(own, store=ctx.store, chronicle=None if target == own else target)
        return [Text("This room now shares the characters of the linked chronicle.")]
    if action == "leave":
        await require_storyteller(ctx, "unlink this room")
        if ctx.settings.chronicle is None:
            raise UsageError("this room is already its own chronicle")
        await ctx.app.update_room(ctx.message.room_key, store=ctx.store, chronicle=None)
        return [Text("This room is its own chronicle again (its own characters).")]
    raise UsageError(f"`{prefix}chronicle` takes link, join CODE or leave")


@hookimpl
def coterie_commands() -> list[Command]:
    return [
        Command(
            name="chronicle",
            summary="rooms sharing characters: link this room's chronicle to another room",
            usage=CHRONICLE_USAGE,
            handler=chronicle_command,
            supports=has_sheets,
            examples=(
                "!storyteller claim\n!chronicle",
                "!storyteller claim\n!chronicle link",
            ),
        )
    ]
