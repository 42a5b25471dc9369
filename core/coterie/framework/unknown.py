"""The reply to an unknown command: the rule sets that have it, or the room's closest command
names."""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING

from coterie.framework.grammar import CommandLine, shorten
from coterie.framework.replies import error_reply
from coterie.framework.variant import RoomSettings
from coterie.render.elements import Reply

if TYPE_CHECKING:
    from coterie.framework.app import Coterie


def unknown_command(app: Coterie, line: CommandLine, settings: RoomSettings) -> Reply:
    """An unknown command: the room's closest command names, or the rule sets that have it."""
    prefix, word = settings.prefix, line.command
    elsewhere = sorted(
        {v for c in app.commands if word in c.names for v in c.variants} & set(app.variants)
    )
    if elsewhere:
        owners = " or ".join(f"{app.variants[v].title} ({v})" for v in elsewhere)
        return error_reply(
            f"unknown command `{prefix}{shorten(word)}` here: it belongs to {owners}; "
            "this room plays "
            f"{app.variants[settings.variant].title}.",
            hint=f"A Storyteller switches the room with `{prefix}variant {elsewhere[0]}`.",
        )
    names = [name for c in app.room_commands(settings.variant) for name in c.names]
    close = difflib.get_close_matches(word, names, n=3, cutoff=0.6)
    hint = (
        "Did you mean " + " or ".join(f"`{prefix}{name}`" for name in close) + "?"
        if close
        else f"`{prefix}help` lists the commands."
    )
    return error_reply(f"unknown command `{prefix}{shorten(word)}`.", hint=hint)
