"""Extended actions: ``!extended start NAME TARGET [DIFF]``, ``!extended [status]``,
``!extended cancel NAME``; rolls toward one come through ``!roll ... for NAME``
(:mod:`coterie.play.clauses`). The rules come from the room's rule set
(:meth:`~coterie.framework.variant.Variant.prepare_extended`). A built-in plugin."""

from __future__ import annotations

import time
from typing import Any

from coterie.errors import UsageError
from coterie.framework.commands import Command, CommandContext
from coterie.framework.grammar import Parsed, shorten, tokens
from coterie.framework.variant import Variant
from coterie.hookimpl import hookimpl
from coterie.play.common import action_name, actions_state, check_owner, progress_line, whole_number
from coterie.render.elements import BR, Node, Text, bold, code
from coterie.rulekit.pools import plural
from coterie.storage.state import RoomState

DEFAULT_MAX_EXTENDED = 10


EXTENDED_USAGE = "!extended start NAME TARGET [DIFFICULTY] | status | cancel NAME"


async def extended_after(
    ctx: CommandContext, state: RoomState, action: dict[str, Any], outcome: Any
) -> list[Node]:
    progress = ctx.variant.extended_progress(outcome)
    if progress is None:
        raise RuntimeError(f"{ctx.variant.name} gave no extended progress")
    action = {**action, "progress": progress.progress, "rolls": action["rolls"] + 1}
    body: list[Node] = [BR, *progress_line(action)]
    if progress.wiped:
        body += [Text(" — the botch threw the progress away")]
    if progress.done:
        body += [Text(f" — done in {action['rolls']} rolls!")]
        await state.delete(f"extended:{action['name']}")
        await state.delete(f"last:{ctx.message.user}")
    else:
        await state.set(f"extended:{action['name']}", action)
    return body


# --- !extended ------------------------------------------------------------------------------------


async def extended(ctx: CommandContext) -> list[Node]:
    words = tokens(ctx.args)
    action = words[0].lower() if words else "status"
    state = actions_state(ctx)
    prefix = ctx.settings.prefix
    variant = ctx.variant
    if action in ("status", "list"):
        names = await state.keys("extended:")
        if len(words) > 1:
            names = [f"extended:{action_name(words[1], 'action', EXTENDED_USAGE)}"]
        body: list[Node] = [bold("Extended actions")]
        found = False
        for key in names:
            one = await state.get(key)
            if one is None:
                continue
            found = True
            body += [
                BR,
                *progress_line(one),
                Text(f" — {one['owner_name']}, {plural(one['rolls'], 'roll')}, {one['variant']}"),
            ]
        if not found:
            return [
                Text("No extended action is open. "),
                code(f"{prefix}extended start NAME TARGET"),
                Text(" opens one."),
            ]
        return body
    if action == "start":
        if len(words) not in (3, 4):
            raise UsageError(
                "give a name and the successes needed, e.g. `!extended start library 15`",
                usage=EXTENDED_USAGE,
            )
        name = action_name(words[1], "action", EXTENDED_USAGE)
        target = whole_number(words[2], "TARGET", 1, 1000, EXTENDED_USAGE)
        difficulty = None
        if len(words) == 4:
            low, high = variant.difficulty_range
            difficulty = whole_number(words[3], "DIFFICULTY", low, high, EXTENDED_USAGE)
        variant.prepare_extended(Parsed(), target, 0)  # refuses rule sets without them
        if await state.get(f"extended:{name}") or await state.get(f"team:{name}"):
            raise UsageError(
                f"`{name}` is already open here; pick another name or "
                f"`{prefix}extended cancel {name}`"
            )
        limit = getattr(ctx.app.config.limits, "max_extended_per_room", DEFAULT_MAX_EXTENDED)
        if len(await state.keys("extended:")) >= limit:
            raise UsageError(
                f"this room has {limit} extended actions open, the most allowed; "
                f"finish or cancel one first"
            )
        record = {
            "name": name,
            "target": target,
            "progress": 0,
            "difficulty": difficulty,
            "owner": ctx.message.user,
            "owner_name": ctx.message.display_name,
            "variant": variant.name,
            "rolls": 0,
            "started": time.time(),
        }
        await state.set(f"extended:{name}", record)
        await state.set(f"last:{ctx.message.user}", name)
        diff = f" at difficulty {difficulty}" if difficulty is not None else ""
        return [
            Text("Extended action "),
            bold(name),
            Text(f" needs {target} successes{diff}. "),
            Text("Roll toward it with "),
            code(f"{prefix}roll POOL for {name}"),
            Text("."),
        ]
    if action in ("cancel", "stop", "end"):
        if len(words) != 2:
            raise UsageError("which one? e.g. `!extended cancel library`", usage=EXTENDED_USAGE)
        name = action_name(words[1], "action", EXTENDED_USAGE)
        record = await state.get(f"extended:{name}")
        if record is None:
            raise UsageError(f"there is no open extended action `{name}`")
        await check_owner(ctx, record, "cancel")
        await state.delete(f"extended:{name}")
        return [
            Text("Extended action "),
            bold(name),
            Text(f" cancelled at {record['progress']}/{record['target']}."),
        ]
    raise UsageError(f"unknown `{shorten(action)}`", usage=EXTENDED_USAGE)


@hookimpl
def coterie_commands() -> list[Command]:
    return [
        Command(
            name="extended",
            aliases=("ext",),
            summary="an extended action over several rolls: start, status, cancel",
            usage=EXTENDED_USAGE,
            supports=lambda v: type(v).prepare_extended is not Variant.prepare_extended,
            examples=(
                "!extended start library 10",
                "!extended start library 10\n!roll {pool} for library\n!extended status",
            ),
            handler=extended,
            details=(
                "Roll toward it with `!roll POOL for NAME` (or `for` alone: your last one). "
                "Botches follow the room's rules. Several can run in a room; each belongs to "
                "whoever started it (and the Storyteller)."
            ),
        ),
    ]
