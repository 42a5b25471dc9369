"""The Storyteller's NPCs with sheets: ``!npc new NAME``, ``!npc set NAME Trait N …``, ``!npc
sheet NAME``, ``!npc list``, and ``!npc roll NAME POOL …`` reading Trait names from the NPC's
sheet (the same templates, ranges and pool rules as players' characters, :mod:`coterie.play.
characters`). NPC sheets belong to the chronicle, kept as the characters of one pseudo-player
(:data:`NPC_OWNER`); only the Storyteller reads or changes them, and what the room could see of them
goes to the Storyteller privately. Quick rolls for NPCs without a sheet stay in
:mod:`coterie.play.storyteller`, which asks here first."""

from __future__ import annotations

from typing import Any

from coterie.errors import UsageError
from coterie.framework.characters import fold
from coterie.framework.commands import CommandContext
from coterie.play.byname import SheetPools
from coterie.play.characters import _edit as edit_sheet
from coterie.play.roster import chronicle_of, template_of
from coterie.play.sheets import new_sheet, render
from coterie.render.elements import Node, Private, Reply, Text, bold
from coterie.storage import characters as store

#: the pseudo-player whose characters are the chronicle's NPCs (no platform id looks like it)
NPC_OWNER = "~npcs"
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
    key = fold(words[0])
    found = [k for k in record["chars"] if k == key] or [
        k for k in record["chars"] if k.startswith(key)
    ]
    if len(found) != 1:
        raise UsageError(f'no NPC "{words[0][:40]}" in this chronicle (`!npc list` lists them)')
    sheet = record["chars"][found[0]]
    if action == "sheet":
        body = render(template, sheet, variant=ctx.variant, settings=ctx.settings)
        return _private(ctx, body, "The sheet of an NPC was sent privately.")
    what = edit_sheet(template, sheet, action, words[1:])
    await store.save_player(ctx.store, chronicle, NPC_OWNER, record)
    return _private(ctx, [bold(sheet["name"]), Text(f": {what}")], "An NPC's sheet changed.")


def read_from(ctx: CommandContext, sheet: dict[str, Any]) -> None:
    """Read the Trait names of this command's rolls from an NPC's sheet."""
    ctx.resolver = SheetPools(ctx, template_of(ctx), sheet)
