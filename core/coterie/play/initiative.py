"""The initiative tracker: ``!init add NAME ...``, ``!init next``, ``!init remove NAME``,
``!init end``, ``!init``. A built-in plugin.

How a combatant's place is worked out is the room's rule set's
(:meth:`~coterie.framework.variant.Variant.initiative`: d6's ordered comparisons, the d10 editions'
Dexterity + Wits + a die, V5's ranged/close/other); the tracker keeps the order of the fight,
breaks ties the same way for every rule set (each tied combatant rolls one die, the highest first,
again until the tie is broken), and walks the turn: everyone's first action in order, then the
extra actions (Celerity, Rage) in the same order, then the next round. The order is shown after
every change. On the d10 rule sets ``!init add NAME`` without a rating reads Dexterity + Wits from
NAME's sheet (your character, or for the Storyteller an NPC's or any player's)."""

from __future__ import annotations

from typing import Any

from coterie.errors import UsageError
from coterie.framework.characters import fold
from coterie.framework.commands import Command, CommandContext
from coterie.framework.grammar import shorten, tokens
from coterie.framework.variant import InitiativeEntry
from coterie.hookimpl import hookimpl
from coterie.play import npcs, roster
from coterie.play.rooms import is_storyteller, room_is_open
from coterie.play.sheets import rating
from coterie.render.elements import BR, Node, Text, bold, code, italic
from coterie.storage.state import RoomState

OWNER = "coterie.initiative"
INIT_USAGE = "!init [add NAME ... | next | remove NAME | end]"
#: combatants one fight may hold
MAX_COMBATANTS = 40
MAX_NAME = 32
#: tie-break roll-offs one change may need before the rest stay in the order they came
MAX_ROLLOFFS = 20


def _state(ctx: CommandContext) -> RoomState:
    return ctx.state(OWNER)


def _ordered(ctx: CommandContext, entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``entries`` by key, highest first; combatants with equal keys roll one die apiece (kept as
    their ``rolloff``) until each is told apart from the others with that key.

    One who joins later, tied on the key with combatants whose tie was already rolled off, rolls
    as they did, one die at a time, and is compared with their dice at the same depth: ``A``
    (tie roll 2) and ``B`` (tie roll 5), then ``C`` rolls 3 and goes between them; had ``C`` rolled
    5, ``B`` and ``C`` would roll again. The order already settled between the others stands."""
    rounds = 0
    while rounds < MAX_ROLLOFFS:
        behind = _still_tied(entries)
        if not behind:
            break
        rounds += 1
        faces = ctx.dice.roll(len(behind), ctx.variant.sides)
        for entry, face in zip(behind, faces, strict=True):
            entry["rolloff"] = [*entry.get("rolloff", []), face]

    def rank(entry: dict[str, Any]) -> tuple[int, ...]:
        return (*entry["key"], *entry.get("rolloff", []))

    return sorted(entries, key=rank, reverse=True)  # (stable: still tied, in the order they came)


def _still_tied(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The combatants who must roll one more tie die, in the order they came: each whose key and
    tie rolls so far equal another's (a tie not yet broken), or are only the start of another's
    with the same key (it has not yet rolled as far as the others it is tied with)."""
    by_key: dict[tuple[int, ...], list[dict[str, Any]]] = {}
    for entry in entries:
        by_key.setdefault(tuple(entry["key"]), []).append(entry)
    behind: list[dict[str, Any]] = []
    for group in by_key.values():
        if len(group) < 2:
            continue
        rolls = [tuple(entry.get("rolloff", [])) for entry in group]
        for index, mine in enumerate(rolls):
            if any(
                other[: len(mine)] == mine and (other == mine or len(other) > len(mine))
                for at, other in enumerate(rolls)
                if at != index
            ):
                behind.append(group[index])
    return behind


def _lines(fight: dict[str, Any]) -> list[Node]:
    entries = fight["entries"]
    turn = fight["turn"]
    body: list[Node] = [bold(f"Round {fight['round']}"), Text(" — order:")]
    for index, entry in enumerate(entries):
        marker = "▶ " if fight["phase"] == "first" and index == turn else "  "
        rolloff = entry.get("rolloff")
        tie = f", tie roll {' '.join(map(str, rolloff))}" if rolloff else ""
        body += [BR, Text(f"{marker}{index + 1}. "), bold(entry["name"])]
        body += [Text(f" ({entry['shown']}{tie})")]
    extras = [e for e in entries if e["extra"]]
    if extras:
        body += [BR, italic("then extra actions:")]
        steps = _extra_steps(entries)
        for index, name in enumerate(steps):
            current = fight["phase"] == "extra" and index == turn
            body += [BR, Text(f"{'▶ ' if current else '  '}+ "), bold(name)]
    return body


def _extra_steps(entries: list[dict[str, Any]]) -> list[str]:
    """The extra actions of a round, after everyone's first action: in the order of the fight,
    one pass per extra action (a combatant with two acts in the first and the second pass)."""
    most = max((entry["extra"] for entry in entries), default=0)
    return [e["name"] for n in range(most) for e in entries if e["extra"] > n]


def _who_acts(fight: dict[str, Any]) -> str:
    if fight["phase"] == "first":
        return str(fight["entries"][fight["turn"]]["name"])
    return str(_extra_steps(fight["entries"])[fight["turn"]])


async def _may_manage(ctx: CommandContext, owner: str) -> bool:
    """``owner`` themselves, the Storyteller, or anyone in a room nobody runs."""
    return owner == ctx.message.user or await room_is_open(ctx) or await is_storyteller(ctx)


def _find(fight: dict[str, Any], name: str) -> int | None:
    wanted = name.casefold()
    for index, entry in enumerate(fight["entries"]):
        if entry["name"].casefold() == wanted:
            return index
    return None


async def init_command(ctx: CommandContext) -> list[Node]:
    words = tokens(ctx.args)
    action = words[0].lower() if words else ""
    state = _state(ctx)
    fight: dict[str, Any] | None = await state.get("fight")
    if fight is not None and fight["variant"] != ctx.variant.name:
        fight = None  # the room switched rule sets: that fight's order means nothing now
    if not action:
        if fight is None:
            return [
                Text("No fight is being tracked. "),
                code(f"{ctx.settings.prefix}init add NAME ..."),
                Text(" starts one."),
            ]
        return _lines(fight)
    if action not in ("add", "next", "remove", "drop", "end"):
        raise UsageError(f"`{shorten(action)}` is not something `!init` does", usage=INIT_USAGE)
    if action == "add":
        return await _add(ctx, state, fight, words[1:])
    if fight is None:
        raise UsageError(
            "no fight is being tracked here; `!init add NAME ...` starts one", usage=INIT_USAGE
        )
    if action == "next":
        return await _next(state, fight)
    if action in ("remove", "drop"):
        return await _remove(ctx, state, fight, " ".join(words[1:]))
    if not await _may_manage(ctx, fight["by"]):  # end
        raise UsageError("only the Storyteller or whoever started the fight can end it")
    await state.delete("fight")
    return [Text(f"The fight is over after {fight['round']} round(s).")]


async def _add(
    ctx: CommandContext, state: RoomState, fight: dict[str, Any] | None, words: list[str]
) -> list[Node]:
    usage = ctx.variant.initiative_usage() or INIT_USAGE
    if not words:
        raise UsageError("who joins the fight? Give a name first", usage=usage)
    name = words[0]
    if len(name) > MAX_NAME or not name.isprintable() or "`" in name:
        raise UsageError(
            f"`{shorten(name)}` can't be a name: at most {MAX_NAME} characters", usage=usage
        )
    if fight is not None and _find(fight, name) is not None:  # before any die is rolled
        raise UsageError(f"{name} is in the fight already; `!init remove {name}` first")
    if fight is not None and len(fight["entries"]) >= MAX_COMBATANTS:
        raise UsageError(f"a fight holds at most {MAX_COMBATANTS} combatants")
    entry: InitiativeEntry = ctx.variant.initiative(
        name, await _rating_from_sheet(ctx, name, words[1:]), ctx.dice
    )
    if fight is None:
        fight = {
            "variant": ctx.variant.name,
            "round": 1,
            "turn": 0,
            "phase": "first",
            "entries": [],
            "by": ctx.message.user,
        }
    acting = _who_acts(fight) if fight["entries"] else None
    record = {
        "name": entry.name,
        "key": list(entry.key),
        "shown": entry.shown,
        "extra": entry.extra,
        "user": ctx.message.user,
    }
    fight["entries"] = _ordered(ctx, [*fight["entries"], record])
    if acting is not None:  # the turn stays with whoever was acting
        fight["turn"] = _position(fight, acting)
    await state.set("fight", fight)
    return [bold(entry.name), Text(" joins the fight."), BR, *_lines(fight)]


#: the Traits the d10 editions' initiative adds up
SHEET_RATING = ("Dexterity", "Wits")


async def _rating_from_sheet(ctx: CommandContext, name: str, words: list[str]) -> list[str]:
    """``words`` with Dexterity + Wits from ``name``'s sheet put first, when the rule set's
    initiative wants that rating (its extra-action words are ``initiative_extras``), none is
    written and the sheet is found; otherwise ``words`` as written."""
    extras = getattr(ctx.variant, "initiative_extras", None)
    if extras is None or (words and words[0].lower() not in extras):
        return words
    template = getattr(ctx.variant, "character_template", None)
    if template is None or not all(fold(t) in template.traits for t in SHEET_RATING):
        return words
    sheet: dict[str, Any] | None = None
    try:
        sheet = (await roster.find(ctx, name)).sheet
    except UsageError:  # not one of yours, nor (for the Storyteller) anyone's: an NPC's?
        if await is_storyteller(ctx):
            sheet = await npcs.sheet_of(ctx, name)
    if sheet is None:
        return words
    total = sum(rating(template, sheet, trait) for trait in SHEET_RATING)
    return [str(total), *words]


def _position(fight: dict[str, Any], acting: str) -> int:
    if fight["phase"] == "first":
        return _find(fight, acting) or 0
    steps = _extra_steps(fight["entries"])
    return steps.index(acting) if acting in steps else 0


async def _next(state: RoomState, fight: dict[str, Any]) -> list[Node]:
    steps = (
        len(fight["entries"]) if fight["phase"] == "first" else len(_extra_steps(fight["entries"]))
    )
    fight["turn"] += 1
    if fight["turn"] >= steps:
        if fight["phase"] == "first" and _extra_steps(fight["entries"]):
            fight["phase"], fight["turn"] = "extra", 0
        else:
            fight["phase"], fight["turn"] = "first", 0
            fight["round"] += 1
    await state.set("fight", fight)
    extra = " (an extra action)" if fight["phase"] == "extra" else ""
    return [bold(_who_acts(fight)), Text(f" acts{extra}."), BR, *_lines(fight)]


async def _remove(
    ctx: CommandContext, state: RoomState, fight: dict[str, Any], name: str
) -> list[Node]:
    index = _find(fight, name)
    if index is None:
        raise UsageError(f"nobody called `{shorten(name)}` is in the fight", usage=INIT_USAGE)
    entry = fight["entries"][index]
    if not await _may_manage(ctx, entry["user"]):
        raise UsageError(f"only whoever added {entry['name']} or the Storyteller can remove them")
    acting = _who_acts(fight)
    fight["entries"].pop(index)
    if not fight["entries"]:
        await state.delete("fight")
        return [Text(f"{entry['name']} leaves; nobody is left in the fight.")]
    if acting == entry["name"]:  # the next one in line acts now
        steps = (
            len(fight["entries"])
            if fight["phase"] == "first"
            else len(_extra_steps(fight["entries"]))
        )
        if fight["turn"] >= steps:
            fight["phase"], fight["turn"] = "first", 0
            fight["round"] += 1
    else:
        fight["turn"] = _position(fight, acting)
    await state.set("fight", fight)
    return [bold(entry["name"]), Text(" leaves the fight."), BR, *_lines(fight)]


@hookimpl
def coterie_commands() -> list[Command]:
    return [
        Command(
            name="init",
            aliases=("initiative",),
            summary="track the order of a fight: add combatants, then walk the turns",
            usage=INIT_USAGE,
            examples=(
                "!init add Ana {init}\n!init add Ben {init}\n!init next",
                "!init add Ana {init}\n!init end",
            ),
            supports=lambda v: bool(v.initiative_usage()),
            handler=init_command,
            details="`!init add NAME ...` takes what the room's rule set needs (`!help init` in "
            "the room shows it); ties are rolled off with a die. `!init next` moves the turn; "
            "extra actions (Celerity, Rage) come after everyone's first action.",
        )
    ]
