"""What the play commands share: action names and counts, progress bars, the room's
``coterie.actions`` state (the namespace keeps its old name: rooms' stored actions stay valid)
and who may act on an action."""

from __future__ import annotations

import re
from typing import Any

from coterie.errors import UsageError
from coterie.framework.commands import CommandContext
from coterie.framework.grammar import check_range, shorten
from coterie.play.rooms import is_storyteller
from coterie.render.elements import Node, Text, bold
from coterie.storage.state import RoomState

OWNER = "coterie.actions"
#: open contests (and, separately, open teamwork actions) a room may hold
MAX_CONTESTS = 20


NAME = re.compile(r"[a-z][a-z0-9_-]{0,23}")


def action_name(word: str | None, what: str, usage: str) -> str:
    if word is None:
        raise UsageError(f"give the {what} a name, e.g. `library`", usage=usage)
    name = word.lower()
    if not NAME.fullmatch(name):
        raise UsageError(
            f"`{shorten(word)}` can't name an action: use up to 24 letters, digits, `-` or `_`, "
            "starting with a letter",
            usage=usage,
        )
    return name


def whole_number(word: str, what: str, low: int, high: int, usage: str) -> int:
    if not re.fullmatch(r"[0-9]{1,6}", word):
        raise UsageError(f"{what} is a whole number, not `{shorten(word)}`", usage=usage)
    try:
        return check_range(int(word), low, high, what)
    except UsageError as error:
        error.usage = usage
        raise


def bar(progress: int, target: int, width: int = 10) -> str:
    """``▰▰▰▱▱▱▱▱▱▱``: a progress bar for chat."""
    filled = min(width, max(0, round(width * progress / target))) if target else width
    return "▰" * filled + "▱" * (width - filled)


def progress_line(action: dict[str, Any]) -> list[Node]:
    progress, target = action["progress"], action["target"]
    return [
        bold(f"{action['name']}"),
        Text(": "),
        bold(f"{progress}/{target}"),
        Text(f" {bar(progress, target)}"),
    ]


def actions_state(ctx: CommandContext) -> RoomState:
    return ctx.state(OWNER)


async def check_owner(ctx: CommandContext, action: dict[str, Any], what: str) -> None:
    if action["owner"] == ctx.message.user or await is_storyteller(ctx):
        return
    raise UsageError(
        f"`{action['name']}` belongs to {action['owner_name']}; only they or the Storyteller "
        f"can {what} it",
        hint=f"To work together, `{ctx.settings.prefix}team start NAME`.",
    )
