"""The characters of a chronicle as commands find and change them: the rule sets' templates, the
chronicle of a room, the character a command is about (yours, or — for the Storyteller —
anyone's), and saving a change so that ``!undo`` can take it back."""

from __future__ import annotations

import copy
import logging
import time
from typing import TYPE_CHECKING, Any

from coterie.errors import UsageError
from coterie.framework.characters import CharacterTemplate, fold
from coterie.framework.commands import CommandContext, shorten_request
from coterie.framework.variant import Variant
from coterie.play.changelog import NPC_OWNER as NPC_OWNER
from coterie.play.changelog import log_moves
from coterie.play.rooms import is_mention, is_storyteller, mention_key, names_person
from coterie.records import dataclass
from coterie.storage.character_rows import Character

#: the state namespace of :mod:`coterie.play.storyteller` (which imports this module), where
#: ``!npc secret on|off`` keeps whether the room's NPCs are secret
STORYTELLER_STATE = "coterie.storyteller"

if TYPE_CHECKING:
    from coterie.framework.app import Coterie

log = logging.getLogger("coterie")


def templates(app: Coterie) -> dict[str, CharacterTemplate]:
    """Every rule set's character template, by rule set (collected by the app:
    ``coterie_character_templates``; the first plugin to declare one for a rule set keeps it)."""
    return app.character_templates


def has_sheets(variant: Variant[Any, Any]) -> bool:
    """Whether characters can be made in rooms on ``variant`` (a rule set declared a template;
    known once :func:`templates` ran for the app: :mod:`coterie.play.characters` runs it at
    start)."""
    return getattr(variant, "character_template", None) is not None


def has_health(variant: Variant[Any, Any]) -> bool:
    """Whether characters of ``variant`` have a Health track."""
    template = getattr(variant, "character_template", None)
    return template is not None and template.health is not None


def has_tracker(variant: Variant[Any, Any], name: str) -> bool:
    """Whether characters of ``variant`` have the tracker ``name`` (Hunger, Rage, …)."""
    template = getattr(variant, "character_template", None)
    return template is not None and template.tracker(name) is not None


def template_of(ctx: CommandContext) -> CharacterTemplate:
    template = templates(ctx.app).get(ctx.variant.name)
    if template is None:
        raise UsageError(f"the {ctx.variant.name} rules have no character sheets")
    return template


def chronicle_of(ctx: CommandContext) -> str:
    """The chronicle of the command's room: the room itself unless linked to another's."""
    return ctx.settings.chronicle or ctx.message.room_key


@dataclass
class Found:
    """A character a command reads or changes: its owner, key, sheet (the command's own copy,
    changed in place) and the sheet as it was read (for ``!undo``)."""

    owner: str
    key: str
    sheet: dict[str, Any]
    before: dict[str, Any]

    @property
    def name(self) -> str:
        return str(self.sheet["name"])


def _found(row: Character) -> Found:
    return Found(row.owner, row.key, row.sheet, copy.deepcopy(row.sheet))


def _by_name(rows: list[Character], name: str) -> Character | None:
    """The character ``name`` names among one owner's (exact, else a unique prefix)."""
    key = fold(name)
    exact = [row for row in rows if row.key == key]
    starting = exact or [row for row in rows if row.key.startswith(key)]
    return starting[0] if len(starting) == 1 else None


def _owners(rows: list[Character]) -> dict[str, list[Character]]:
    by_owner: dict[str, list[Character]] = {}
    for row in rows:
        by_owner.setdefault(row.owner, []).append(row)
    return by_owner


async def find(ctx: CommandContext, who: str | None = None, *, edit: bool = False) -> Found:
    """The character a command is about: ``None`` your active one; ``@user`` their active one;
    ``NAME`` one of yours, else (the Storyteller) anyone's in the chronicle. A player may read
    and change only their own characters."""
    chronicle = chronicle_of(ctx)
    me = ctx.message.user
    if who is None:
        active = await ctx.store.active_character(chronicle, me)
        if active is None:
            prefix = ctx.settings.prefix
            raise UsageError(
                f"you have no character in this chronicle yet: `{prefix}char new NAME` makes one"
                if not await ctx.store.characters(chronicle, me)
                else f"you have no active character here: `{prefix}char use NAME` picks one"
            )
        return _found(active)
    if is_mention(who):
        wanted = mention_key(who)
        for owner, rows in _owners(await ctx.store.characters(chronicle)).items():
            if owner == NPC_OWNER:  # NPCs are the `!npc` commands' (shown privately), never here
                continue
            if names_person(wanted, owner, rows[0].sheet.get("owner_name")):
                if owner != me:
                    await _require_storyteller(ctx, edit)
                return _found(next((row for row in rows if row.active), rows[0]))
        raise UsageError(f"{shorten_request(who, 40)} has no character in this chronicle")
    everyone = _owners(await ctx.store.characters(chronicle))
    npcs = everyone.pop(NPC_OWNER, [])  # the `!npc` commands' (shown privately), never here
    mine = _by_name(everyone.pop(me, []), who)
    if mine is not None:
        return _found(mine)
    for rows in everyone.values():
        found = _by_name(rows, who)
        if found is not None:
            await _require_storyteller(ctx, edit)
            return _found(found)
    if _by_name(npcs, who) is not None and await is_storyteller(ctx):
        raise UsageError(
            f"{shorten_request(who, 40)} is an NPC: `!npc sheet NAME`, `!npc hunger NAME +1`, "
            "`!npc damage NAME 2` … keep it private"
        )
    raise UsageError(f'no character "{shorten_request(who, 40)}" in this chronicle')


async def find_npc(ctx: CommandContext, name: str) -> Found | None:
    """The chronicle's NPC ``name`` names (exact, else a unique prefix), or ``None``. Only the
    Storyteller's commands may call this: it checks no rights."""
    found = _by_name(await ctx.store.characters(chronicle_of(ctx), NPC_OWNER), name)
    return None if found is None else _found(found)


async def opponent(ctx: CommandContext, who: str) -> dict[str, Any]:
    """The sheet a roll opposes by name (``vs Guard Wits+Awareness``, ``vs @bob …``): one of
    yours; else, for the Storyteller, any character or NPC of the chronicle; for a player, an
    NPC the Storyteller has not hidden. Someone else's character stays its player's (their
    ``!resist`` answers a ``!contest``)."""
    if is_mention(who):
        return (await find(ctx, who)).sheet
    chronicle = chronicle_of(ctx)
    me = ctx.message.user
    everyone = _owners(await ctx.store.characters(chronicle))
    mine = _by_name(everyone.pop(me, []), who)
    if mine is not None:
        return mine.sheet
    storyteller = await is_storyteller(ctx)
    for owner, rows in everyone.items():
        found = _by_name(rows, who)
        if found is None:
            continue
        sheet = found.sheet
        if storyteller or (owner == NPC_OWNER and not await _npc_hidden(ctx, sheet)):
            return sheet
        if owner == NPC_OWNER:
            raise UsageError(
                f"{sheet['name']} is the Storyteller's hidden NPC: only the Storyteller can "
                "roll against it by name (NPCs are secret in this room until the Storyteller "
                "says `!npc secret off`)"
            )
        raise UsageError(
            f"{sheet['name']} is {sheet.get('owner_name') or 'another player'}'s character: only "
            "its player or the Storyteller can read its Traits (`!contest @user` lets its player "
            "roll)"
        )
    raise UsageError(f'no character or NPC "{shorten_request(who, 40)}" in this chronicle')


async def _npc_hidden(ctx: CommandContext, sheet: dict[str, Any]) -> bool:
    """Whether players may not read an NPC's Traits: its own ``hidden`` mark, or the room's NPCs
    secret (``!npc secret on``, the default: the setting ``coterie.play.storyteller`` keeps)."""
    if sheet.get("hidden"):
        return True
    return bool(await ctx.state(STORYTELLER_STATE).get("npc_secret", True))


async def _require_storyteller(ctx: CommandContext, edit: bool) -> None:
    if not await is_storyteller(ctx):
        verb = "change" if edit else "see"
        raise UsageError(f"only its player or the Storyteller can {verb} someone else's character")


async def save(
    ctx: CommandContext,
    found: Found,
    what: str,
    *,
    undoable: bool = True,
    why: str | None = None,
    secret: bool = False,
    after_roll: bool = False,
) -> None:
    """Store a changed character (version +1), log each tracker it moved in the roll log
    (:mod:`coterie.play.changelog`; ``why``: the reason play gives, ``secret``: the room must
    not see it; ``after_roll``: a roll being settled made it, logged after that roll) and
    remember the change for ``!undo``."""
    sheet = found.sheet
    sheet["version"] = int(found.before.get("version", 0)) + 1
    sheet["updated"] = time.time()
    chronicle = chronicle_of(ctx)
    await ctx.store.save_character(chronicle, found.owner, found.key, sheet)
    template = templates(ctx.app).get(ctx.variant.name)
    if template is not None:
        await log_moves(
            ctx,
            template,
            found.owner,
            found.before,
            sheet,
            reason=why,
            secret=secret,
            after_roll=after_roll,
        )
    if undoable:
        await ctx.store.push_change(
            chronicle,
            ctx.message.user,
            {
                "owner": found.owner,
                "key": found.key,
                "what": what,
                "command": shorten_request(ctx.message.text, 120),
                "version": sheet["version"],
                "before": found.before,
                "time": sheet["updated"],
                "roll": ctx.roll_id,
                "scene": ctx.scene,
                "session": ctx.session,
                "secret": secret,
            },
        )
