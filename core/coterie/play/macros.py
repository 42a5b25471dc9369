"""Macros: a character's saved rolls. ``!macro add hunt = Wits+Streetwise 4 # hunting``, then
``!hunt``, ``!hunt +2`` (a pool modifier), ``!hunt diff 5`` (an option given again replaces the
macro's); ``!macro list``, ``!macro del hunt``. A macro is rolled exactly as typing it out."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from coterie.errors import UsageError
from coterie.framework.commands import (
    Command,
    CommandContext,
    find_resolver,
    parse_requests,
    roll_reply,
)
from coterie.framework.grammar import CommandLine, shorten, tokens
from coterie.framework.message import Message
from coterie.hookimpl import hookimpl
from coterie.play import sheets
from coterie.play.roster import find, has_sheets, save
from coterie.render.elements import BR, Node, Reply, Text, bold, code

if TYPE_CHECKING:
    from coterie.framework.app import Coterie

MACRO_USAGE = "!macro [list | add NAME = ROLL [# comment] | del NAME]"
_MODIFIER = re.compile(r"[+-][0-9]{1,3}")


def expand(grammar: Any, macro: str, extra: list[str], presets: Any = ()) -> str:
    """The roll a macro call stands for: ``+N``/``-N`` join the pool; an option given again
    replaces the macro's (with its value), also where the macro gave it by position
    (``!hunt diff 5`` for a macro ending in difficulty 4)."""
    words = tokens(macro)
    modifiers = "".join(w for w in extra if _MODIFIER.fullmatch(w))
    others = [w for w in extra if not _MODIFIER.fullmatch(w)]
    given = set()
    for word in others:
        option = grammar.option(word.lower().partition("=")[0])
        if option is not None:
            given.add(option.dest)
    named = bool(words) and any(c.isalpha() for c in words[0])
    slots = [p.name for p in grammar.positionals if not (named and p.name in presets)]
    kept: list[str] = []
    skip = False
    position = 0
    for index, word in enumerate(words):
        if skip:
            skip = False
            continue
        name, eq, _ = word.lower().partition("=")
        option = grammar.option(name)
        if option is not None:
            if option.dest in given:
                skip = option.kind != "flag" and not eq
                continue
            skip = option.kind != "flag" and not eq
            kept.append(word)
            if skip:
                kept.append(words[index + 1] if index + 1 < len(words) else "")
            continue
        slot = slots[position] if position < len(slots) else None
        position += 1
        if slot is not None and slot in given and index:
            continue
        kept.append(word + modifiers if index == 0 else word)
    return " ".join([*kept, *others])


async def macro_command(ctx: CommandContext) -> list[Node]:
    words = tokens(ctx.args)
    action = words[0].lower() if words else "list"
    found = await find(ctx, edit=action != "list")
    sheet = found.sheet
    prefix = ctx.settings.prefix
    if action == "list":
        if not sheet["macros"]:
            return [
                Text(f"{found.name} has no macros: `{prefix}macro add hunt = Wits+Streetwise 4`")
            ]
        body: list[Node] = [bold(f"{found.name}'s macros")]
        for name, macro in sorted(sheet["macros"].items()):
            comment = f" # {macro['comment']}" if macro.get("comment") else ""
            body += [BR, code(f"{prefix}{name}"), Text(f" = {macro['args']}{comment}")]
        return body
    if action in ("del", "delete", "remove"):
        if len(words) != 2 or words[1].lower() not in sheet["macros"]:
            raise UsageError(f"which macro? {', '.join(sheet['macros']) or 'there are none'}")
        del sheet["macros"][words[1].lower()]
        what = f"macro {prefix}{words[1].lower()} deleted"
        await save(ctx, found, f"{found.name}: {what}")
        return [bold(found.name), Text(f": {what}")]
    if action != "add":
        raise UsageError(f"`{prefix}macro` takes list, add or del, not `{shorten(action)}`")
    text = ctx.args.split(None, 1)[1] if len(words) > 1 else ""
    name, eq, roll = text.partition("=")
    name = name.strip().lower()
    if not eq or not roll.strip():
        raise UsageError(f"write `{prefix}macro add hunt = Wits+Streetwise 4`")
    if not sheets.MACRO.fullmatch(name):
        raise UsageError(f"`{shorten(name)}` can't be a macro name: a-z, digits, - and _, 1-30")
    if ctx.app.find_command(name, ctx.variant.name) is not None:
        raise UsageError(f"`{prefix}{name}` is already a command: pick another name")
    if len(sheet["macros"]) >= 50 and name not in sheet["macros"]:
        raise UsageError("50 macros per character is the most")
    roll = " ".join(roll.split())
    # checked now, as it will be rolled: a macro obeys the same rules as typing it out
    trial = replace(ctx, line=replace(ctx.line, args=roll), resolver=None, notes=[])
    from coterie.play.byname import _wants_sheet, canonical_roll

    await find_resolver(trial)  # the sheet, and any character named after `vs`
    parse_requests(trial)
    by_name, _ = _wants_sheet(trial, _template(ctx))
    # kept by the names the sheets know (`wits+street` → `Wits+Streetwise`, also after `vs NAME`)
    opponents = getattr(trial.resolver, "opponents", None)
    grammar = ctx.variant.grammar
    roll = canonical_roll(grammar, _template(ctx), sheet if by_name else None, roll, opponents)
    sheet["macros"][name] = {"args": roll, "comment": ctx.line.comment}
    comment = f" # {ctx.line.comment}" if ctx.line.comment else ""
    what = f"macro {prefix}{name} = {roll}{comment}"
    await save(ctx, found, f"{found.name}: {what}")
    return [bold(found.name), Text(f": {what}")]


def _template(ctx: CommandContext) -> Any:
    from coterie.play.roster import template_of

    return template_of(ctx)


def _macro_runner(name: str, macro: dict[str, Any]) -> Any:
    async def run(ctx: CommandContext) -> Reply:
        from coterie.play.roster import templates

        template = templates(ctx.app).get(ctx.variant.name)
        presets = template.presets if template else {}
        args = expand(ctx.variant.grammar, macro["args"], tokens(ctx.args), presets)
        comment = ctx.line.comment or macro.get("comment")
        ctx.line = replace(ctx.line, args=args, comment=comment)
        reply = await roll_reply(ctx)
        reply.body = [bold(f"{name}:"), Text(" "), *reply.body]
        return reply

    return run


@hookimpl
async def coterie_command_fallback(
    app: Coterie, message: Message, line: CommandLine, variant: str
) -> Command | None:
    if not sheets.MACRO.fullmatch(line.command):
        return None
    settings = await app.room_settings(message.room_key)
    chronicle = settings.chronicle or message.room_key
    active = await app.state.active_character(chronicle, message.user, readonly=True)
    sheet = active.sheet if active is not None else None
    macro = sheet["macros"].get(line.command) if sheet else None
    if macro is None:
        return None
    return Command(
        name=line.command,
        summary=f"{sheet['name']}'s macro" if sheet else "",
        usage=f"!{line.command} [+N|-N] [options] [# comment]",
        handler=_macro_runner(line.command, macro),
        plugin="coterie.play.macros",
    )


@hookimpl
def coterie_commands() -> list[Command]:
    return [
        Command(
            name="macro",
            aliases=("macros",),
            summary="your character's saved rolls: add, list, delete; then `!NAME` rolls one",
            usage=MACRO_USAGE,
            handler=macro_command,
            supports=has_sheets,
            examples=(
                "!char new Alex\n!char set {trait} 3\n"
                "!macro add look = {trait} {difficulty}\n!look",
                "!char new Alex\n!macro add look = {trait} {difficulty}\n"
                "!macro list\n!macro del look",
            ),
            details=(
                "`!macro add hunt = Wits+Streetwise 4 # hunting`, then `!hunt`, `!hunt +2` "
                "(a pool modifier) or `!hunt diff 5` (replaces the macro's option)."
            ),
        )
    ]
