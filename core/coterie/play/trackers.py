"""Trackers moved by hand and by play: ``!hunger``, ``!wp``, ``!blood``, ``!rage``, ``!gnosis``,
``!humanity``, ``!stains``, ``!damage``, ``!heal``; and the changes a settled roll brings (the
template's ``effects``: a failed rouse check raises Hunger, a Willpower re-roll marks damage,
``wp`` spends a point), written in the roll's own transaction and shown under the roll. Every
change replies old → new and can be undone with ``!undo``."""

from __future__ import annotations

import re
from collections.abc import Awaitable
from functools import partial
from typing import Any

from coterie.errors import UsageError
from coterie.framework.characters import CharacterTemplate, Effect, TrackerSpec
from coterie.framework.commands import Command, CommandContext
from coterie.framework.grammar import number, shorten, tokens
from coterie.framework.variant import Outcome
from coterie.hookimpl import hookimpl
from coterie.play import sheets
from coterie.play.changelog import flush_after_roll, held_entries, last_roll, npc_rolled
from coterie.play.characters import _target
from coterie.play.roster import (
    NPC_OWNER,
    Found,
    find,
    find_npc,
    has_health,
    has_tracker,
    save,
    template_of,
    templates,
)
from coterie.render.elements import BR, Node, Text, bold

#: commands whose rolls are not the caller's character's (#20's NPC rolls)
NOT_THE_ROLLERS = frozenset({"npc"})
#: commands that roll the caller's last roll again (v5's Willpower re-roll): after an NPC's
#: roll, what they move is the NPC's
REROLLS = frozenset({"reroll"})
_CHANGE = re.compile(r"([+-]?)([0-9]+)")
#: the tracker command words and the tracker names they look for
TRACKER_COMMANDS = {
    "hunger": "Hunger",
    "wp": "Willpower",
    "blood": "Blood Pool",
    "rage": "Rage points",
    "gnosis": "Gnosis points",
    "humanity": "Humanity",
    "stains": "Stains",
}


def _tracker(template: CharacterTemplate, sheet: dict[str, Any], word: str) -> TrackerSpec:
    tracker = None
    for candidate in template.trackers:
        if candidate.command == word:
            tracker = candidate
    if tracker is None:
        tracker = template.tracker(TRACKER_COMMANDS.get(word, word))
    kind = sheet.get("kind", "")
    if tracker is None or template.tracker_for(kind, tracker.name) is None:
        shown = TRACKER_COMMANDS.get(word, word)
        who = f"a {kind} keeps" if tracker is not None else f"the {template.variant} rules keep"
        raise UsageError(f"{who} no {shown} track")
    return tracker


def move(
    template: CharacterTemplate,
    sheet: dict[str, Any],
    tracker: TrackerSpec,
    sign: str,
    n: int,
    ctx: CommandContext | None = None,
    *,
    clamp: bool = False,
) -> str:
    """Set (no sign) or change a tracker; returns ``Hunger 2 → 3``. Out of range is refused
    (or, with ``clamp``, stops at the bound)."""
    variant = ctx.variant if ctx else None
    settings = ctx.settings if ctx else None
    before = sheets.tracker_text(template, sheet, tracker, variant, settings)
    note = ""
    if tracker.kind == "boxes":
        if not sign:
            raise UsageError(f"{tracker.name} takes `+N` (heal) or `-N` (mark damage)")
        if sign == "-":
            note = sheets.damage(template, sheet, tracker, n, tracker.marks[0][0]) or ""
        else:
            sheets.heal(template, sheet, tracker, n, None)
    else:
        old = sheets.value(template, sheet, tracker)
        high = sheets.tracker_high(template, sheet, tracker, variant, settings)
        new = old + n if sign == "+" else old - n if sign == "-" else n
        if not 0 <= new <= high:
            if not clamp:
                raise UsageError(
                    f"{sheet['name']}'s {tracker.name} goes from 0 to {high}: "
                    f"{old} {sign or '→'} {n} would be {new}"
                )
            new = max(0, min(new, high))
            note = f"{tracker.name} stays at most {high}" if new == high else ""
        if tracker.kind == "level":
            # the Stains rules (v5) say what follows the line, or nothing
            if extra := sheets.set_level(template, sheet, tracker, new):
                after = sheets.tracker_text(template, sheet, tracker, variant, settings)
                return f"{tracker.name} {before} → {after}{extra}"
        else:
            sheets.set_value(sheet, tracker, new)
    after = sheets.tracker_text(template, sheet, tracker, variant, settings)
    return f"{tracker.name} {before} → {after}" + (f" ({note})" if note else "")


async def tracker_command(ctx: CommandContext) -> list[Node]:
    template = template_of(ctx)
    words, who = _target(tokens(ctx.args))
    found = await find(ctx, who, edit=bool(words))
    return await tracker_on(ctx, template, found, ctx.line.command, words)


async def tracker_on(
    ctx: CommandContext,
    template: CharacterTemplate,
    found: Found,
    word: str,
    words: list[str],
    *,
    secret: bool = False,
) -> list[Node]:
    """Show (no ``words``) or change (``N``, ``+N``, ``-N``) the tracker the command ``word``
    names on ``found`` (a player's character or an NPC; ``secret``: logged hidden)."""
    tracker = _tracker(template, found.sheet, word)
    if not words:
        text = sheets.tracker_text(template, found.sheet, tracker, ctx.variant, ctx.settings)
        return [bold(found.name), Text(f": {tracker.name} {text}")]
    if len(words) > 1:
        raise UsageError(f"give one change: `N`, `+N` or `-N`, not `{shorten(' '.join(words))}`")
    change = _CHANGE.fullmatch(words[0])
    if not change:
        raise UsageError(f"`{shorten(words[0])}` is not a change: write `N`, `+N` or `-N`")
    n = number(change.group(2), tracker.name)
    what = move(template, found.sheet, tracker, change.group(1), n, ctx)
    await save(ctx, found, f"{found.name}: {what}", secret=secret)
    return [bold(found.name), Text(f": {what}")]


async def damage_command(ctx: CommandContext) -> list[Node]:
    """``!damage N [KIND] [TRACK]`` / ``!heal N [KIND] [TRACK]`` on a track of boxes."""
    template = template_of(ctx)
    words, who = _target(tokens(ctx.args))
    _amount(ctx, ctx.line.command, words)
    found = await find(ctx, who, edit=True)
    return await damage_on(ctx, template, found, ctx.line.command, words)


def _amount(ctx: CommandContext, word: str, words: list[str]) -> int:
    if not words or not words[0].isdigit():
        raise UsageError(f"how much? `{ctx.settings.prefix}{word} N [kind]`")
    n = number(words[0], "the damage")
    if not 1 <= n <= 30:
        raise UsageError(f"give 1 to 30 boxes, not {n}")
    return n


async def damage_on(
    ctx: CommandContext,
    template: CharacterTemplate,
    found: Found,
    word: str,
    words: list[str],
    *,
    secret: bool = False,
) -> list[Node]:
    """``N [KIND] [health|wp]`` of damage marked (``word`` ``damage``) or healed (``heal``)
    on ``found`` (``secret``: logged hidden)."""
    healing = word == "heal"
    n = _amount(ctx, word, words)
    track = "Health"
    rest = words[1:]
    if rest and rest[-1].lower() in ("health", "wp", "willpower", "will"):
        track = "Health" if rest.pop().lower() == "health" else "Willpower"
    tracker = _tracker(template, found.sheet, "Health" if track == "Health" else "wp")
    if tracker.kind != "boxes":
        raise UsageError(f"{tracker.name} is not a track of damage boxes in {template.variant}")
    if len(rest) > 1:
        raise UsageError(f"one kind of damage: {', '.join(k for k, _ in tracker.marks)}")
    kind = tracker.mark_kind(rest[0])[0] if rest else None
    before = sheets.tracker_text(template, found.sheet, tracker)
    note = None
    if healing:
        sheets.heal(template, found.sheet, tracker, n, kind)
    else:
        note = sheets.damage(template, found.sheet, tracker, n, kind or tracker.marks[0][0])
    after = sheets.tracker_text(template, found.sheet, tracker)
    what = f"{tracker.name} {before} → {after}" + (f" ({note})" if note else "")
    await save(ctx, found, f"{found.name}: {what}", secret=secret)
    return [bold(found.name), Text(f": {what}")]


def apply(
    template: CharacterTemplate, sheet: dict[str, Any], effect: Effect, ctx: CommandContext
) -> str | None:
    """One effect of a roll on the sheet, as a ``Hunger 2 → 3`` line (``None``: not kept by
    this character)."""
    tracker = template.tracker_for(sheet.get("kind", ""), effect.tracker)
    if tracker is None:
        return None
    if effect.action == "damage":
        before = sheets.tracker_text(template, sheet, tracker)
        note = sheets.damage(template, sheet, tracker, effect.amount, effect.mark or "")
        after = sheets.tracker_text(template, sheet, tracker)
        return f"{tracker.name} {before} → {after}" + (f" ({note})" if note else "")
    sign = "+" if effect.amount >= 0 else "-"
    return move(template, sheet, tracker, sign, abs(effect.amount), ctx, clamp=not effect.strict)


@hookimpl
def coterie_roll_settled(ctx: CommandContext, outcome: Outcome) -> Awaitable[None] | None:
    """The trackers a roll's effects move (a failed rouse check's Hunger); a roll with no
    effects (most of them) has nothing to await."""
    template = templates(ctx.app).get(ctx.variant.name)
    if template is None or template.effects is None:
        return None
    effects = list(template.effects(outcome))
    if not effects:
        return None
    return _apply_effects(ctx, template, effects)


async def _apply_effects(
    ctx: CommandContext, template: CharacterTemplate, effects: list[Effect]
) -> None:
    found: Found | None
    if ctx.line.command in NOT_THE_ROLLERS:
        # the Storyteller rolling for an NPC spends nothing of their own character: the NPC's
        # sheet it was rolled from (none for a quick NPC) is the one that moves
        sheet = getattr(ctx.resolver, "sheet", None)
        if not isinstance(sheet, dict) or sheet.get("owner") != NPC_OWNER:
            return
        found = await find_npc(ctx, str(sheet["name"]))
        if found is None:
            return
    elif ctx.line.command in REROLLS and (last := await last_roll(ctx)) and npc_rolled(last):
        # a re-roll of the Storyteller's last roll, made for an NPC: the NPC pays for it
        found = await find_npc(ctx, npc_rolled(last) or "")
        if found is None:
            return  # a quick NPC: nothing to mark
    else:
        try:
            found = await find(ctx)
        except UsageError:
            return  # no character here: the roll moves nothing
    lines = [text for e in effects if (text := apply(template, found.sheet, e, ctx))]
    if not lines:
        return
    why = ", ".join(dict.fromkeys(e.why for e in effects if e.why))
    what = f"{found.name}: " + "; ".join(lines) + (f" ({why})" if why else "")
    # a secret NPC roll's changes are the Storyteller's; a player's sheet is no secret
    secret = ctx.secret and found.owner == NPC_OWNER
    await save(ctx, found, what, why=why or None, secret=secret, after_roll=True)
    for text in lines:
        ctx.notes += [BR, Text(f"{found.name}: {text}")]


@hookimpl
def coterie_after_roll() -> Awaitable[None] | None:
    """The tracker entries a roll's effects made are logged after the roll itself (most rolls
    made none: nothing to await)."""
    return flush_after_roll() if held_entries() else None


#: examples that work on a new character of any rule set with the tracker (a werewolf for Rage
#: and Gnosis, whose trackers only some kinds of character have)
TRACKER_EXAMPLES = {
    "hunger": ("!char new Alex\n!hunger +1", "!char new Alex\n!hunger 2\n!hunger -1"),
    "wp": ("!char new Alex\n!wp -1", "!char new Alex\n!wp -1\n!wp +1"),
    "blood": ("!char new Alex\n!blood -1", "!char new Alex\n!blood -2\n!blood +1"),
    "humanity": ("!char new Alex\n!humanity -1", "!char new Alex\n!humanity -1\n!humanity +1"),
    "stains": ("!char new Alex\n!stains +1", "!char new Alex\n!stains +2\n!stains -1"),
    "rage": ("!char new Kesh werewolf\n!rage", "!char new Kesh werewolf\n!rage"),
    "gnosis": ("!char new Kesh werewolf\n!gnosis", "!char new Kesh werewolf\n!gnosis"),
}


@hookimpl
def coterie_commands() -> list[Command]:
    out = [
        Command(
            name=word,
            summary=f"your character's {name}: show it, set it (N) or move it (+N / -N)",
            usage=f"!{word} [N | +N | -N] [for NAME|@user]",
            handler=tracker_command,
            supports=partial(has_tracker, name=name),
            examples=TRACKER_EXAMPLES.get(word, (f"!char new Alex\n!{word}",) * 2),
        )
        for word, name in TRACKER_COMMANDS.items()
    ]
    out += [
        Command(
            name="damage",
            summary="mark damage on your character's Health (or Willpower) track",
            usage="!damage N [KIND] [health|wp] [for NAME|@user]",
            handler=damage_command,
            supports=has_health,
            examples=(
                "!char new Alex\n!damage 1",
                "!char new Alex\n!damage 2\n!heal 1",
            ),
            details="Marks what is typed: soak and halving are yours to do first.",
        ),
        Command(
            name="heal",
            summary="clear damage from your character's Health (or Willpower) track",
            usage="!heal N [KIND] [health|wp] [for NAME|@user]",
            handler=damage_command,
            supports=has_health,
            examples=(
                "!char new Alex\n!damage 1\n!heal 1",
                "!char new Alex\n!damage 2\n!heal 1",
            ),
        ),
    ]
    return out
