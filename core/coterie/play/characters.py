"""Characters: ``!char`` (new, use, list, set, add, remove, spec, unspec, delete, export,
import), ``!sheet`` and ``!undo``. A built-in plugin; see ``docs/characters.md``.

Why this module is long: ``!char`` is one command with a dozen subcommands that share the
parsing of Trait names and the all-or-nothing change of a sheet; the import's validation of
every field of the schema lives beside the export that writes it.
"""

from __future__ import annotations

import json
import re
from typing import Any

from coterie.errors import UsageError
from coterie.framework.characters import CharacterTemplate, custom_group, fold
from coterie.framework.commands import Command, CommandContext
from coterie.framework.grammar import shorten, suggest, tokens
from coterie.hookimpl import hookimpl
from coterie.play import sheets
from coterie.play.changelog import log_moves
from coterie.play.roster import (
    NPC_OWNER,
    Found,
    chronicle_of,
    find,
    has_sheets,
    save,
    template_of,
)
from coterie.render.elements import BR, Node, Private, Reply, Text, bold, code

CHAR_USAGE = (
    "!char [new NAME [KIND] | use NAME | list | set TRAIT N … | add GROUP NAME N | "
    "remove TRAIT | spec TRAIT SPECIALTY | unspec TRAIT SPECIALTY | delete NAME | "
    "export [NAME] | import JSON] [for NAME|@user]"
)
SHEET_USAGE = "!sheet [NAME | @user] [all]"
UNDO_USAGE = "!undo"
_SEPARATORS = re.compile(r"[,;:=]")
_KEYS = {
    "schema",
    "variant",
    "name",
    "kind",
    "owner",
    "owner_name",
    "npc",
    "hidden",
    "traits",
    "custom",
    "specialties",
    "trackers",
    "macros",
    "version",
    "updated",
    "chronicle",
}


def _target(words: list[str]) -> tuple[list[str], str | None]:
    """``… for NAME`` / ``… for @user`` split off the words."""
    lowered = [w.lower() for w in words]
    if "for" in lowered:
        at = len(lowered) - 1 - lowered[::-1].index("for")
        who = " ".join(words[at + 1 :])
        if not who:
            raise UsageError("`for` needs a character's name or @user after it")
        return words[:at], who
    return words, None


def _pairs(template: CharacterTemplate, sheet: dict[str, Any], words: list[str]) -> list[Any]:
    """``Strength 3 Animal Ken 2`` as (name, value) pairs; names read up to their number."""
    out: list[tuple[str, int]] = []
    name: list[str] = []
    for word in words:
        if word.isdigit():
            if not name:
                raise UsageError(f"`{word}`: which Trait? Write `Strength {word}`")
            out.append((" ".join(name), int(word[:6])))
            name = []
        else:
            name.append(word)
    if name:
        raise UsageError(f"`{shorten(' '.join(name))}` needs its rating after it")
    if not out:
        raise UsageError("give Traits and ratings, e.g. `Strength 3 Brawl 2`")
    return out


def _set(template: CharacterTemplate, sheet: dict[str, Any], pairs: list[Any]) -> list[str]:
    changed: list[str] = []
    for written, value in pairs:
        try:
            name = template.find(written, sheet["custom"], rollable=False)
        except UsageError:
            tracker = template.tracker_for(sheet.get("kind", ""), written)
            if tracker is None:
                raise
        else:
            tracker = None
        if tracker is not None:
            before = sheets.tracker_text(template, sheet, tracker)
            extra = ""
            if tracker.kind == "level":  # the Stains rules (v5): overflow, Humanity clears
                _set_tracker(template, {"trackers": {}}, tracker, value)  # the range check
                extra = sheets.set_level(template, sheet, tracker, value)
            else:
                _set_tracker(template, sheet, tracker, value)
            changed.append(
                f"{tracker.name} {before} → {sheets.tracker_text(template, sheet, tracker)}{extra}"
            )
            continue
        old = sheets.rating(template, sheet, name)
        sheets.set_rating(template, sheet, name, value)
        changed.append(f"{name} {old} → {value}")
    return changed


def _set_tracker(template: CharacterTemplate, sheet: dict[str, Any], tracker: Any, n: int) -> None:
    state = sheet["trackers"].setdefault(tracker.name, {})
    if tracker.kind == "level":
        if not tracker.low <= n <= tracker.high:
            raise UsageError(f"{tracker.name} goes from {tracker.low} to {tracker.high}, not {n}")
        state["value"] = n
    elif tracker.kind == "points":
        if not 1 <= n <= 50:
            raise UsageError(f"{tracker.name} holds from 1 to 50 points, not {n}")
        state["max"] = n
        state["current"] = min(int(state.get("current", n)), n)
    else:
        if not 1 <= n <= 25:
            raise UsageError(f"{tracker.name} has from 1 to 25 boxes, not {n}")
        state["size"] = n


async def _found_for(ctx: CommandContext, who: str | None) -> Found:
    return await find(ctx, who, edit=True)


async def _new(ctx: CommandContext, template: CharacterTemplate, words: list[str]) -> list[Node]:
    if not words:
        raise UsageError("name your character: `!char new NAME`")
    kind = None
    if template.kinds and len(words) > 1 and words[-1].lower() in template.kinds:
        kind = words.pop().lower()
    name = " ".join(words)
    sheet = sheets.new_sheet(template, name, kind, ctx.message.user, ctx.message.display_name)
    chronicle = chronicle_of(ctx)
    mine = {row.key: row.sheet for row in await ctx.store.characters(chronicle, ctx.message.user)}
    key = fold(name)
    if key in mine:
        raise UsageError(f"you already have a character called {mine[key]['name']}")
    if len(mine) >= 20:
        raise UsageError("20 characters per player in a chronicle is the most")
    await ctx.store.save_character(chronicle, ctx.message.user, key, sheet)
    await ctx.store.set_active(chronicle, ctx.message.user, key)
    prefix = ctx.settings.prefix
    kind_text = f", {sheet['kind']}" if sheet["kind"] else ""
    return [
        Text("Created "),
        bold(name),
        Text(f" ({template.variant}{kind_text}); now your active character. Next: "),
        code(f"{prefix}char set Strength 3 Brawl 2 …"),
    ]


async def _use(ctx: CommandContext, words: list[str]) -> list[Node]:
    if not words:
        raise UsageError("which character? `!char use NAME`")
    chronicle = chronicle_of(ctx)
    mine = {row.key: row.sheet for row in await ctx.store.characters(chronicle, ctx.message.user)}
    wanted = fold(" ".join(words))
    keys = [k for k in mine if k == wanted] or [k for k in mine if k.startswith(wanted)]
    if len(keys) != 1:
        names = ", ".join(c["name"] for c in mine.values()) or "none yet"
        raise UsageError(f'you have no character "{shorten(" ".join(words))}" here ({names})')
    await ctx.store.set_active(chronicle, ctx.message.user, keys[0])
    return [bold(mine[keys[0]]["name"]), Text(" is now your active character here.")]


async def _list(ctx: CommandContext) -> list[Node]:
    from coterie.play.rooms import is_storyteller

    chronicle = chronicle_of(ctx)
    everyone = await is_storyteller(ctx)
    lines: list[Node] = []
    for row in await ctx.store.characters(chronicle, None if everyone else ctx.message.user):
        if row.owner == NPC_OWNER:
            continue  # (NPCs are listed by `!npc list`, privately)
        star = "★ " if row.active else ""
        lines += [BR, Text(f"{star}"), bold(row.sheet["name"])]
        lines.append(Text(f" ({row.sheet.get('owner_name', row.owner)})"))
    if not lines:
        return [Text("No characters here yet: `!char new NAME` makes one.")]
    return [bold("Characters"), *lines]


def _export(sheet: dict[str, Any]) -> str:
    data = {k: v for k, v in sheet.items() if k not in ("version", "updated")}
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


async def _import(ctx: CommandContext, template: CharacterTemplate, text: str) -> list[Node]:
    try:
        data = json.loads(text)
    except ValueError as error:
        raise UsageError(f"that is not a character's JSON: {error}") from None
    sheet = validate(template, data, ctx.message.user, ctx.message.display_name)
    chronicle = chronicle_of(ctx)
    mine = await ctx.store.characters(chronicle, ctx.message.user)
    key = fold(sheet["name"])
    if any(row.key == key for row in mine):
        raise UsageError(
            f"you already have a character called {sheet['name']}: rename or delete it first"
        )
    await ctx.store.save_character(chronicle, ctx.message.user, key, sheet)
    await ctx.store.set_active(chronicle, ctx.message.user, key)
    return [
        Text("Imported "),
        bold(sheet["name"]),
        Text(
            f" ({template.variant}): {len(sheet['traits'])} Traits, "
            f"{len(sheet['trackers'])} trackers, {len(sheet['macros'])} macros; now active."
        ),
    ]


def validate(template: CharacterTemplate, data: Any, owner: str, owner_name: str) -> dict[str, Any]:
    """A character of ``template`` from imported JSON (owner and chronicle are the importer's),
    or a :class:`UsageError` naming the first problem."""

    def bad(why: str) -> UsageError:
        return UsageError(f"can't import: {why}; nothing was changed")

    if not isinstance(data, dict):
        raise bad("the JSON is not an object")
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise bad(f"unknown key `{shorten(unknown[0])}`")
    if data.get("schema") != sheets.SCHEMA:
        raise bad(f'`schema` must be "{sheets.SCHEMA}"')
    if data.get("variant") != template.variant:
        raise bad(
            f"it is a {data.get('variant')!s:.20} character; this room plays {template.variant}"
        )
    name = data.get("name")
    if not isinstance(name, str):
        raise bad("`name` is missing")
    kind = data.get("kind") or None
    if template.kinds and kind not in (None, *template.kinds):
        raise bad(f"`kind` must be one of {', '.join(template.kinds)}")
    try:
        sheet = sheets.new_sheet(template, name, kind, owner, owner_name)
    except UsageError as error:
        raise bad(error.message) from None
    for field in ("custom", "traits", "specialties", "trackers", "macros"):
        if not isinstance(data.get(field, {}), dict):
            raise bad(f"`{field}` must be an object")
    try:
        for trait, group in data.get("custom", {}).items():
            if not isinstance(group, str) or not sheets.NAME.fullmatch(str(trait)):
                raise bad(f"custom Trait `{shorten(str(trait))}` is not valid")
            sheet["custom"][trait] = custom_group(template, group).name
        for trait, rating in data.get("traits", {}).items():
            if type(rating) is not int:
                raise bad(f"{shorten(trait)}'s rating must be a whole number")
            canonical = template.find(trait, sheet["custom"], rollable=False)
            if canonical != trait:
                raise bad(f"`{shorten(trait)}` is not a Trait name (did you mean {canonical}?)")
            sheets.set_rating(template, sheet, trait, rating)
        for trait, specs in data.get("specialties", {}).items():
            canonical = template.find(trait, sheet["custom"], rollable=False)
            if not isinstance(specs, list) or not all(
                isinstance(s, str) and 0 < len(s) <= 30 for s in specs
            ):
                raise bad(f"{canonical}'s specialties must be a list of short names")
            sheet["specialties"][canonical] = specs[:10]
        for tname, state in data.get("trackers", {}).items():
            _import_tracker(template, sheet, tname, state, bad)
        rule = template.degeneration
        if rule is not None and sheet["trackers"].get(rule.stains, {}).get("value", 0) > (
            room := sheets.stain_room(template, sheet)
        ):
            raise bad(f"{rule.stains} must fit the {room} boxes {rule.humanity} leaves free")
        for mname, macro in data.get("macros", {}).items():
            if (
                not sheets.MACRO.fullmatch(str(mname))
                or not isinstance(macro, dict)
                or not isinstance(macro.get("args"), str)
                or len(macro["args"]) > 200
                or not isinstance(macro.get("comment") or "", str)
            ):
                raise bad(f"macro `{shorten(str(mname))}` is not valid")
            sheet["macros"][mname] = {"args": macro["args"], "comment": macro.get("comment")}
    except UsageError as error:
        if error.message.startswith("can't import"):
            raise
        raise bad(error.message) from None
    return sheet


def _import_tracker(
    template: CharacterTemplate, sheet: dict[str, Any], name: str, state: Any, bad: Any
) -> None:
    tracker = template.tracker(name)
    if tracker is None or tracker.name != name or not isinstance(state, dict):
        raise bad(f"no tracker `{shorten(name)}` in {template.variant}")
    allowed = {
        "points": {"current", "max"},
        "level": {"value", "overlap"},
        "boxes": {"marks", "size"},
    }
    extra = set(state) - allowed[tracker.kind]
    if extra:
        raise bad(f"{name}: unknown key `{shorten(sorted(extra)[0])}`")
    if "max" in state or "size" in state:
        _set_tracker(template, sheet, tracker, _whole(state.get("max", state.get("size")), bad))
    target = sheet["trackers"].setdefault(tracker.name, {})
    if tracker.kind == "points" and "current" in state:
        current = _whole(state["current"], bad)
        high = sheets.tracker_high(template, sheet, tracker)
        if not 0 <= current <= high:
            raise bad(f"{name} current {current} is not within 0-{high}")
        target["current"] = current
    if tracker.kind == "level" and "value" in state:
        _set_tracker(template, sheet, tracker, _whole(state["value"], bad))
    if tracker.kind == "level" and state.get("overlap"):
        rule = template.degeneration
        if rule is None or tracker.name != rule.stains or state["overlap"] is not True:
            raise bad(f"{name}: `overlap` is only `true`, on Stains")
        target["overlap"] = True
    if tracker.kind == "boxes" and "marks" in state:
        given = state["marks"]
        kinds = [k for k, _ in tracker.marks]
        if not isinstance(given, dict) or any(k not in kinds for k in given):
            raise bad(f"{name} marks must be counts of {', '.join(kinds)}")
        counts = {k: _whole(v, bad) for k, v in given.items()}
        if sum(counts.values()) > sheets.tracker_high(template, sheet, tracker):
            raise bad(f"{name} has more marks than boxes")
        target["marks"] = {k: v for k, v in counts.items() if v}


def _whole(value: Any, bad: Any) -> int:
    if type(value) is not int or value < 0:
        raise bad(f"`{shorten(str(value))}` is not a whole number")
    return value


async def char_command(ctx: CommandContext) -> list[Node]:
    template = template_of(ctx)
    words = tokens(ctx.args)
    action = words[0].lower() if words else ""
    rest = words[1:]
    if action == "":
        found = await find(ctx)
        return sheets.render(template, found.sheet, variant=ctx.variant, settings=ctx.settings)
    if action == "new":
        return await _new(ctx, template, rest)
    if action == "use":
        return await _use(ctx, rest)
    if action == "list":
        return await _list(ctx)
    if action == "import":
        return await _import(ctx, template, ctx.args.split(None, 1)[1] if rest else "")
    if action == "export":
        found = await find(ctx, " ".join(rest) or None)
        return [Text(f"{found.name} ({template.variant}):"), BR, code(_export(found.sheet))]
    if action == "delete":
        return await _delete(ctx, rest)
    if action in ("set", "add", "remove", "spec", "unspec"):
        text = _SEPARATORS.sub(" ", " ".join(rest))
        body, who = _target(text.split())
        found = await _found_for(ctx, who)
        what = _edit(template, found.sheet, action, body)
        await save(ctx, found, f"{found.name}: {what}")
        return [bold(found.name), Text(f": {what}")]
    close = suggest(
        action,
        [
            "new",
            "use",
            "list",
            "set",
            "add",
            "remove",
            "spec",
            "unspec",
            "delete",
            "export",
            "import",
        ],
    )
    hint = f" Did you mean `{close}`?" if close else ""
    raise UsageError(f"`!char` has no `{shorten(action)}`.{hint}")


def _edit(template: CharacterTemplate, sheet: dict[str, Any], action: str, words: list[str]) -> str:
    if action == "set":
        return ", ".join(_set(template, sheet, _pairs(template, sheet, words)))
    if action == "add":
        if len(words) < 3 or not words[-1].isdigit():
            raise UsageError(
                "write `!char add GROUP NAME N`, e.g. `!char add Disciplines Vicissitude 2`"
            )
        group = custom_group(template, words[0])
        name = " ".join(words[1:-1])
        if not sheets.NAME.fullmatch(name):
            raise UsageError(f"`{shorten(name)}` can't be a Trait's name")
        if fold(name) in template.traits or any(fold(name) == fold(c) for c in sheet["custom"]):
            raise UsageError(f"{name} is already on the sheet: `!char set {name} N`")
        sheet["custom"][name] = group.name
        sheets.set_rating(template, sheet, name, int(words[-1][:6]))
        return f"{group.name} {name} {words[-1]} (your own)"
    if not words:
        raise UsageError(f"`!char {action}` needs a Trait's name")
    if action == "remove":
        name = template.find(" ".join(words), sheet["custom"], rollable=False)
        old = sheets.rating(template, sheet, name)
        sheet["traits"].pop(name, None)
        sheet["specialties"].pop(name, None)
        if name in sheet["custom"]:
            del sheet["custom"][name]
            return f"{name} removed (was {old})"
        return f"{name} {old} → {sheets.rating(template, sheet, name)} (back to its default)"
    # spec / unspec: the Trait is the longest run of words that names one
    for cut in range(len(words) - 1, 0, -1):
        try:
            name = template.find(" ".join(words[:cut]), sheet["custom"], rollable=False)
        except UsageError:
            continue
        special = " ".join(words[cut:])
        break
    else:
        raise UsageError("write `!char spec TRAIT SPECIALTY`, e.g. `!char spec Brawl Grappling`")
    spec = template.traits.get(fold(name))
    if spec is not None and not spec.specialties:
        raise UsageError(f"{name} takes no specialties")
    known: list[str] = sheet["specialties"].setdefault(name, [])
    if action == "spec":
        if len(special) > 30 or any(fold(s) == fold(special) for s in known) or len(known) >= 10:
            raise UsageError(f"{name} already has {special} (or 10 specialties, the most)")
        known.append(special)
    else:
        matching = [s for s in known if fold(s) == fold(special)]
        if not matching:
            raise UsageError(f"{name} has no specialty {special}")
        known.remove(matching[0])
    if not known:
        del sheet["specialties"][name]
    return f"{name} {sheets.rating(template, sheet, name)} ({', '.join(known) or 'no specialty'})"


async def _delete(ctx: CommandContext, words: list[str]) -> list[Node]:
    confirm = bool(words) and words[-1].lower() == "confirm"
    if confirm:
        words = words[:-1]
    if not words:
        raise UsageError("which character? `!char delete NAME`")
    found = await find(ctx, " ".join(words), edit=True)
    prefix = ctx.settings.prefix
    if not confirm:
        macros = len(found.sheet["macros"])
        return [
            Text(f"Delete {found.name} and {macros} macro{'s' * (macros != 1)} for good? Send "),
            code(f"{prefix}char delete {found.name} confirm"),
            Text(" to do it."),
        ]
    await ctx.store.delete_character(chronicle_of(ctx), found.owner, found.key)
    return [bold(found.name), Text(" is deleted.")]


async def sheet_command(ctx: CommandContext) -> list[Node]:
    template = template_of(ctx)
    words = tokens(ctx.args)
    full = bool(words) and words[-1].lower() == "all"
    if full:
        words = words[:-1]
    found = await find(ctx, " ".join(words) or None)
    return sheets.render(
        template, found.sheet, full=full, variant=ctx.variant, settings=ctx.settings
    )


async def undo_command(ctx: CommandContext) -> list[Node] | Reply:
    """Take back the author's latest change that is still the sheet's latest."""
    chronicle = chronicle_of(ctx)
    me = ctx.message.user
    change = await ctx.store.pop_change(chronicle, me)
    if change is None:
        raise UsageError("nothing of yours to undo in this chronicle")
    rows = await ctx.store.characters(chronicle, change["owner"])
    sheet = next((row.sheet for row in rows if row.key == change["key"]), None)
    if sheet is None:  # the change is dropped (popped), nothing else happens
        return [Text(f"Can't undo {change['what']}: that character is gone.")]
    if sheet.get("version") != change["version"]:
        raise UsageError(
            f"can't undo {change['what']}: {sheet['name']} changed since "
            "(the later change must be undone first, by whoever made it)"
        )
    # the sheet as it was, version and all: an earlier change (anyone's) whose result that
    # version was can then be undone in turn
    restored = change["before"]
    await ctx.store.save_character(chronicle, change["owner"], change["key"], restored)
    secret = bool(change.get("secret"))
    # the trackers it moves back are logged too, as their own entries (``undo``)
    await log_moves(
        ctx, template_of(ctx), change["owner"], sheet, restored, secret=secret, undo=True
    )
    body: list[Node] = [Text("Undone: "), bold(change["what"]), Text(f" (was {change['command']})")]
    if not secret:
        return body
    # a hidden NPC's change stays the Storyteller's
    return Reply(
        [Text("A secret change was undone (sent privately).")],
        private=[Private(me, body, ctx.message.display_name)],
    )


@hookimpl
def coterie_commands() -> list[Command]:
    return [
        Command(
            name="char",
            aliases=("character",),
            summary="your characters: make, pick, set Traits, specialties, export and import",
            usage=CHAR_USAGE,
            handler=char_command,
            supports=has_sheets,
            examples=(
                "!char new Alex\n!char set {trait} 3",
                "!char new Alex\n!char new Bea\n!char use Alex\n!char list",
            ),
            details=(
                "`!char new Lise`, `!char set Strength 3 Brawl 2` (a pasted `Strength 3, "
                "Dexterity 2` works too), `!char spec Brawl Grappling`, `!char add Disciplines "
                "Obtenebration 1`. Then roll by name: `!roll Strength+Brawl 6`. The Storyteller "
                "changes anyone's with `for NAME` or `for @user`. See docs/characters.md."
            ),
        ),
        Command(
            name="sheet",
            summary="show a character sheet (yours, or — for the Storyteller — anyone's)",
            usage=SHEET_USAGE,
            handler=sheet_command,
            supports=has_sheets,
            examples=(
                "!char new Alex\n!sheet",
                "!char new Alex\n!char set {trait} 2\n!sheet Alex",
            ),
            transaction=False,
        ),
        Command(
            name="undo",
            summary="take back your latest change to a character",
            usage=UNDO_USAGE,
            handler=undo_command,
            supports=has_sheets,
            examples=(
                "!char new Alex\n!char set {trait} 3\n!undo",
                "!char new Alex\n!char set {trait} 2\n!char set {trait} 3\n!undo\n!undo",
            ),
        ),
    ]
