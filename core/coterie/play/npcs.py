"""The Storyteller's NPCs with sheets: ``!npc new NAME``, ``!npc set NAME Trait N …``, ``!npc
sheet NAME``, ``!npc list``, and ``!npc roll NAME POOL …`` reading Trait names from the NPC's
sheet (the same templates, ranges and pool rules as players' characters, :mod:`coterie.play.
characters`). NPC sheets belong to the chronicle, kept as the characters of one pseudo-player
(:data:`NPC_OWNER`); only the Storyteller reads or changes them, and what the room could see of them
goes to the Storyteller privately. Quick rolls for NPCs without a sheet stay in
:mod:`coterie.play.storyteller`, which asks here first.

NPCs keep trackers and macros as players' characters do (#20): ``!npc hunger|wp|… NAME [N|+N|-N]``
and ``!npc damage|heal NAME N …`` run the players' tracker code (:mod:`coterie.play.trackers`) on
the NPC, privately while NPCs are secret in the room, logged (secret) and undoable;
``!npc macro NAME add|list|del`` keeps saved rolls, rolled with ``!npc roll NAME MACRO``."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from coterie.errors import UsageError
from coterie.framework.characters import fold
from coterie.framework.commands import Command, CommandContext, parse_requests
from coterie.framework.grammar import shorten, tokens
from coterie.play.byname import SheetPools
from coterie.play.characters import _edit as edit_sheet
from coterie.play.macros import expand
from coterie.play.roster import NPC_OWNER, Found, chronicle_of, find_npc, save, template_of
from coterie.play.sheets import MACRO, new_sheet, render
from coterie.play.trackers import damage_on, tracker_on
from coterie.render.elements import BR, Node, Private, Reply, Text, bold, code
from coterie.storage import characters as store

#: NPC sheets one chronicle may hold
MAX_NPCS = 100


async def _record(ctx: CommandContext) -> dict[str, Any]:
    return await store.load_player(ctx.store, chronicle_of(ctx), NPC_OWNER)


async def sheet_of(ctx: CommandContext, name: str) -> dict[str, Any] | None:
    """The NPC sheet ``name`` names in the room's chronicle (exact, else a unique prefix)."""
    record = await _record(ctx)
    key = fold(name)
    if key in record["chars"]:
        return dict(record["chars"][key])
    starting = [k for k in record["chars"] if k.startswith(key)]
    return dict(record["chars"][starting[0]]) if len(starting) == 1 else None


def _private(ctx: CommandContext, body: list[Node], room: str) -> Reply:
    """``room`` for everyone, ``body`` for the Storyteller alone."""
    part = Private(ctx.message.user, body, ctx.message.display_name)
    return Reply([Text(room)], private=[part])


async def npc_sheet_command(ctx: CommandContext, action: str, words: list[str]) -> Reply:
    """``!npc new|set|add|remove|spec|sheet|list …`` (the caller is the Storyteller)."""
    template = template_of(ctx)
    chronicle = chronicle_of(ctx)
    record = await _record(ctx)
    if action == "list":
        names = [str(sheet["name"]) for sheet in record["chars"].values()]
        listing = ", ".join(sorted(names)) or "none yet"
        return _private(ctx, [bold("NPCs"), Text(f": {listing}")], "NPC list sent privately.")
    if not words:
        raise UsageError(f"which NPC? `!npc {action} NAME`")
    if action == "new":
        kind = None
        if template.kinds and len(words) > 1 and words[-1].lower() in template.kinds:
            kind = words.pop().lower()
        name = " ".join(words)
        key = fold(name)
        if key in record["chars"]:
            raise UsageError(f"there is an NPC called {record['chars'][key]['name']} already")
        if len(record["chars"]) >= MAX_NPCS:
            raise UsageError(f"{MAX_NPCS} NPCs per chronicle is the most")
        record["chars"][key] = new_sheet(template, name, kind, NPC_OWNER, "NPC")
        await store.save_player(ctx.store, chronicle, NPC_OWNER, record)
        return _private(
            ctx,
            [Text("NPC "), bold(name), Text(" made: `!npc set NAME Trait N …` fills the sheet.")],
            "An NPC was made (its sheet is the Storyteller's).",
        )
    confirm = action == "delete" and len(words) > 1 and words[-1].lower() == "confirm"
    found = await _npc(ctx, action, words[:-1] if confirm else words)
    sheet = found.sheet
    if action == "delete":
        if not confirm:
            body: list[Node] = [
                Text(f"Delete the NPC {found.name} for good? Send "),
                code(f"{ctx.settings.prefix}npc delete {found.name} confirm"),
            ]
            return _private(ctx, body, "Deleting an NPC waits for the Storyteller's confirmation.")
        await ctx.store.delete_character(chronicle, NPC_OWNER, found.key)
        return _private(ctx, [bold(found.name), Text(" is deleted.")], "An NPC was deleted.")
    if action == "sheet":
        body = render(template, sheet, variant=ctx.variant, settings=ctx.settings)
        return _private(ctx, body, "The sheet of an NPC was sent privately.")
    what = edit_sheet(template, sheet, action, words[1:])
    await save(ctx, found, f"{found.name}: {what}", secret=True)  # logged and undoable
    return _private(ctx, [bold(found.name), Text(f": {what}")], "An NPC's sheet changed.")


def read_from(ctx: CommandContext, sheet: dict[str, Any]) -> None:
    """Read the Trait names of this command's rolls from an NPC's sheet."""
    ctx.resolver = SheetPools(ctx, template_of(ctx), sheet)


async def _npc(ctx: CommandContext, action: str, words: list[str]) -> Found:
    if not words:
        raise UsageError(f"which NPC? `!npc {action} NAME …`")
    found = await find_npc(ctx, words[0])
    if found is None:
        raise UsageError(f'no NPC "{words[0][:40]}" in this chronicle (`!npc list` lists them)')
    return found


def npc_command(ctx: CommandContext, action: str) -> Command | None:
    """The room's command ``action`` names when the Storyteller may run it for an NPC
    (:attr:`Command.for_npcs`, e.g. v5's ``!rouse``), else ``None``."""
    command = ctx.app.find_command(action, ctx.variant.name, "")
    return command if command is not None and command.for_npcs else None


async def run_for_npc(
    ctx: CommandContext, command: Command, words: list[str], *, hidden: bool
) -> Reply:
    """``!npc rouse Guard 2``: ``command`` run as the NPC (its sheet the active character, the
    trackers its rolls move the NPC's, the reply under its name). A refusal shows the call as
    written for an NPC, and says why only to the Storyteller while the NPC is ``hidden``."""
    found = await _npc(ctx, command.name, words)
    read_from(ctx, found.sheet)
    ctx.line = replace(ctx.line, args=" ".join(words[1:]))
    ctx.speaker, ctx.character = found.name, fold(found.name)
    try:
        result = await ctx.app.guard.invoke(command, ctx)  # (as the room's own command runs)
    except UsageError as error:
        usage = error.usage or command.usage_in(ctx.variant)
        error.usage = usage.replace(f"!{command.name}", f"!npc {command.name} NAME", 1)
        if not hidden:
            raise
        return refused_privately(ctx, error)
    return result if isinstance(result, Reply) else Reply(list(result))


def take_notes(ctx: CommandContext) -> list[Node]:
    """The lines plugins added under a secret NPC roll (a tracker it moved): for its private
    parts, never the room."""
    notes, ctx.notes = ctx.notes, []
    return notes


async def npc_tracker_command(
    ctx: CommandContext, action: str, words: list[str], *, hidden: bool
) -> Reply | list[Node]:
    """``!npc hunger|wp|blood|rage|gnosis|humanity|stains NAME [N|+N|-N]`` and ``!npc
    damage|heal NAME N [KIND] [health|wp]``: the players' tracker commands on an NPC. A hidden
    NPC's (``!npc secret on``, the default, and no ``public``) tracker shows and changes only
    privately, and its log entries are secret."""
    template = template_of(ctx)
    found = await _npc(ctx, action, words)
    try:
        if action in ("damage", "heal"):
            body = await damage_on(ctx, template, found, action, words[1:], secret=hidden)
        else:
            body = await tracker_on(ctx, template, found, action, words[1:], secret=hidden)
    except UsageError as error:  # (raised before anything is written)
        if not hidden:
            raise
        return refused_privately(ctx, error)  # "Hunger 1 + 9 would be 10" tells its Hunger
    if not hidden:
        return body
    room = "An NPC's tracker changed." if len(words) > 1 else "An NPC's tracker was sent privately."
    return _private(ctx, body, room)


async def npc_macro_command(ctx: CommandContext, words: list[str]) -> Reply:
    """``!npc macro NAME [list | add MACRO = ROLL [# comment] | del MACRO]``; rolled with
    ``!npc roll NAME MACRO [+N] [options]`` (:func:`macro_args`). Always private."""
    template = template_of(ctx)
    found = await _npc(ctx, "macro", words)
    sheet = found.sheet
    action = words[1].lower() if len(words) > 1 else "list"
    name = found.name
    if action == "list":
        body: list[Node] = [bold(f"{name}'s macros")]
        for macro_name, macro in sorted(sheet["macros"].items()):
            comment = f" # {macro['comment']}" if macro.get("comment") else ""
            body += [BR, code(macro_name), Text(f" = {macro['args']}{comment}")]
        if not sheet["macros"]:
            body = [Text(f"{name} has no macros: `!npc macro {name} add spot = Wits+Alertness 6`")]
        return _private(ctx, body, "An NPC's macros were sent privately.")
    if action in ("del", "delete", "remove"):
        if len(words) != 3 or words[2].lower() not in sheet["macros"]:
            listed = ", ".join(sheet["macros"]) or "there are none"
            raise UsageError(f"which macro of {name}? {listed}")
        del sheet["macros"][words[2].lower()]
        what = f"macro {words[2].lower()} deleted"
    elif action == "add":
        text = " ".join(words[2:])
        macro_name, eq, roll = text.partition("=")
        macro_name = macro_name.strip().lower()
        roll = " ".join(roll.split())
        if not eq or not roll:
            raise UsageError(f"write `!npc macro {name} add spot = Wits+Alertness 6`")
        if not MACRO.fullmatch(macro_name):
            raise UsageError(
                f"`{shorten(macro_name)}` can't be a macro name: a-z, digits, - and _, 1-30"
            )
        if _names_trait(template, sheet, macro_name):
            raise UsageError(f"`{macro_name}` reads as a Trait in a pool: pick another name")
        if len(sheet["macros"]) >= 50 and macro_name not in sheet["macros"]:
            raise UsageError("50 macros per character is the most")
        # checked now, as it will be rolled: the same rules as typing it out
        trial = replace(ctx, line=replace(ctx.line, args=roll), resolver=None, notes=[])
        trial.resolver = SheetPools(trial, template, sheet)
        trial.secret = True  # a trial: nothing of the pool is shown
        try:
            parse_requests(trial)
        except UsageError as error:  # ("Guard is Hurt …" tells its wounds) nothing written yet
            return refused_privately(ctx, error)
        sheet["macros"][macro_name] = {"args": roll, "comment": ctx.line.comment}
        comment = f" # {ctx.line.comment}" if ctx.line.comment else ""
        what = f"macro {macro_name} = {roll}{comment}"
    else:
        raise UsageError(f"`!npc macro {name}` takes list, add or del, not `{shorten(action)}`")
    await save(ctx, found, f"{name}: {what}", secret=True)
    return _private(ctx, [bold(name), Text(f": {what}")], "An NPC's macros changed.")


def refused_privately(ctx: CommandContext, error: UsageError) -> Reply:
    """A refusal that would tell something of a hidden NPC's sheet (its Hunger out of range,
    its wounds emptying a pool): the room learns only that the command was refused, the
    Storyteller why. Used only where the error is raised before anything is written (the NPC
    commands check everything first), so nothing changed, as for any refusal."""
    why: list[Node] = [Text(f"⚠ {error.message}")]
    if error.hint:
        why += [BR, Text(error.hint)]
    if error.usage:
        why += [BR, Text("Usage: "), code(error.usage)]
    part = Private(ctx.message.user, why, ctx.message.display_name)
    room: list[Node] = [Text("⚠ That NPC command was refused: the reason was sent privately.")]
    return Reply(room, kind="error", private=[part])


def _names_trait(template: Any, sheet: dict[str, Any], word: str) -> bool:
    try:
        template.find(word, sheet["custom"])
    except UsageError:
        return False
    return True


def macro_args(ctx: CommandContext, sheet: dict[str, Any], args: str) -> tuple[str, str | None]:
    """``!npc roll NAME MACRO [+N] [options]``: the roll the NPC's macro stands for (and its
    comment), else ``args`` as written."""
    words = tokens(args)
    macro = sheet["macros"].get(words[0].lower()) if words else None
    if macro is None:
        return args, None
    presets = template_of(ctx).presets
    return expand(ctx.variant.grammar, macro["args"], words[1:], presets), macro.get("comment")
