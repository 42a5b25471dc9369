"""The Storyteller's tools: secret rolls and ``!reveal``, a roll asked against a hidden Difficulty
(``!ask``, answered with ``!answer``), and quick rolls for nameless NPCs (``!npc roll``). A built-in
plugin.

A secret roll's full result goes to its roller and the room's Storytellers as private parts of the
reply (:class:`~coterie.render.elements.Private`, delivered by every adapter through its platform's
private channel); the room sees only that someone rolled in secret, and the roll's id. The full
result is kept (as an element tree, :mod:`coterie.render.serialize`) until ``!reveal ID`` posts it.
Secret rolls are logged like any roll, marked ``secret`` in their detail: ``!log`` hides them from
everyone but the Storyteller until revealed, and ``!stats`` leaves them out."""

from __future__ import annotations

import time
from collections.abc import Awaitable
from dataclasses import replace
from typing import Any

from coterie.errors import UsageError
from coterie.framework.characters import fold
from coterie.framework.commands import (
    Command,
    CommandContext,
    find_resolver,
    parse_requests,
    roll_reply,
    shown_id,
)
from coterie.framework.grammar import Parsed, shorten, tokens
from coterie.hookimpl import hookimpl
from coterie.play.changelog import last_roll
from coterie.play.npcs import (
    macro_args,
    npc_command,
    npc_macro_command,
    npc_sheet_command,
    npc_tracker_command,
    read_from,
    refused_privately,
    run_for_npc,
    sheet_of,
    take_notes,
)
from coterie.play.rooms import (
    claimed_storytellers,
    configured_storytellers,
    is_mention,
    is_storyteller,
    mention_element,
    mention_key,
    mentions,
    require_storyteller,
)
from coterie.play.roster import STORYTELLER_STATE
from coterie.play.trackers import REROLLS, TRACKER_COMMANDS
from coterie.render.elements import BR, Node, Private, Reply, Text, bold, code, italic
from coterie.render.serialize import nodes_from_json, nodes_to_json
from coterie.storage.state import RoomState

#: state of the room's secret rolls (by roll id) and pending asks (by the asked player's mention)
OWNER = STORYTELLER_STATE
#: the word that makes a roll secret
SECRET_WORD = "secret"
#: results that count as a win when a hidden Difficulty is judged (every rule set's success
#: outcomes: ``success``, and V5's ``critical`` and ``messy_critical``)
WIN_OUTCOMES = frozenset({"success", "critical", "messy_critical"})
#: an ask waits this long for its answer
ASK_TIMEOUT = 6 * 3600
#: open asks a room may hold
MAX_ASKS = 20

REVEAL_USAGE = "!reveal ROLL-ID"
ASK_USAGE = "!ask @USER POOL DIFFICULTY secret [margin] | cancel @USER"
ANSWER_USAGE = "!answer [POOL]"
NPC_USAGE = (
    "!npc roll NAME POOL|MACRO [DIFFICULTY] [options] | new NAME | set NAME TRAIT N … | "
    "sheet NAME | list | hunger|wp|… NAME [N|+N|-N] | damage|heal NAME N [KIND] | "
    "macro NAME [list | add MACRO = ROLL | del MACRO] | rouse NAME [N] (v5) | delete NAME | "
    "secret on|off"
)
#: the ``!npc`` actions on NPCs' sheets (:mod:`coterie.play.npcs`)
NPC_SHEET_ACTIONS = ("new", "set", "add", "remove", "spec", "unspec", "sheet", "list", "delete")
#: the ``!npc`` actions moving an NPC's trackers: the players' tracker commands
NPC_TRACKER_ACTIONS = frozenset({*TRACKER_COMMANDS, "damage", "heal"})


def _state(ctx: CommandContext) -> RoomState:
    return ctx.state(OWNER)


async def storyteller_ids(ctx: CommandContext) -> dict[str, str]:
    """The room's Storytellers who can be written to privately: platform user id → name (those
    who claimed the room, and configured ids; a configured ``@handle`` is not an id)."""
    found = dict(await claimed_storytellers(ctx))
    for who in configured_storytellers(ctx):
        is_id = not who.startswith("@") or ":" in who  # Slack U…, Telegram digits, Matrix @a:b
        if is_id:
            found.setdefault(who, who)
    return found


async def secret_reply(ctx: CommandContext, full: list[Node], *, who: str, what: str) -> Reply:
    """The reply of a secret roll: the room learns only that ``who`` rolled in secret; ``full``
    goes privately to the roller and every Storyteller, and is kept for ``!reveal``."""
    roll_id = ctx.roll_id or ""
    await _state(ctx).set(
        f"roll:{roll_id}",
        {
            "user": ctx.message.user,
            "name": who,
            "what": what,
            "body": nodes_to_json(full),
            "revealed": False,
            "time": time.time(),
        },
    )
    note: list[Node] = [
        BR,
        italic(
            f"secret: only you and the Storyteller see this; {ctx.settings.prefix}"
            f"reveal {roll_id} shows it to the room"
        ),
    ]
    parts = [Private(ctx.message.user, [*full, *note], ctx.message.display_name)]
    for user, name in (await storyteller_ids(ctx)).items():
        if user != ctx.message.user:
            head: list[Node] = [italic(f"{who}'s secret {what}"), BR]
            parts.append(Private(user, [*head, *full], name))
    body: list[Node] = [bold(who), Text(f" made a secret {what}.")]
    return Reply(body, meta={"variant": ctx.variant.name, "secret": "true"}, private=parts)


def _without_word(args: str, word: str) -> tuple[str, bool]:
    words = args.split()
    kept = [w for w in words if w.lower() != word]
    return " ".join(kept), len(kept) != len(words)


# --- !roll ... secret ---------------------------------------------------------------------------


@hookimpl(tryfirst=True)
def coterie_roll_command(ctx: CommandContext, usage: str | None) -> Awaitable[Reply] | None:
    """Take over a roll that says ``secret``: roll it as written (``for NAME`` and the rest
    still apply), then keep the result between the roller and the Storyteller."""
    if SECRET_WORD not in ctx.line.args.lower().split():
        return None
    return _secret_roll(ctx, usage)


async def _secret_roll(ctx: CommandContext, usage: str | None) -> Reply:
    args, _ = _without_word(ctx.args, SECRET_WORD)
    ctx.line = replace(ctx.line, args=args)
    ctx.secret = True
    shown = await roll_reply(ctx, usage=usage)
    if shown.is_error:  # pragma: no cover - roll_reply raises rather than answering errors
        return shown
    return await secret_reply(ctx, shown.body, who=ctx.message.display_name, what="roll")


@hookimpl
def coterie_roll_settled(ctx: CommandContext, outcome: Any) -> Awaitable[None] | None:
    """A re-roll (v5's ``!reroll``) of a secret roll would show it to the room: refused until
    the roll is revealed (nothing is rolled, nothing changes). Any other roll: nothing to await."""
    if ctx.line.command not in REROLLS:
        return None
    return _refuse_secret_reroll(ctx)


async def _refuse_secret_reroll(ctx: CommandContext) -> None:
    last = await last_roll(ctx)
    if last is not None and last.detail.get("secret") and not await revealed(ctx, last.id):
        raise UsageError(
            f"your last roll ({shown_id(last.id)}) is secret: a re-roll would show it to the "
            f"room. `{ctx.settings.prefix}reveal {shown_id(last.id)}` first, or roll again"
        )


# --- !reveal --------------------------------------------------------------------------------------


async def reveal(ctx: CommandContext) -> list[Node]:
    words = tokens(ctx.args)
    if len(words) != 1:
        raise UsageError("which roll? Give its id, e.g. `!reveal k3f9qz`", usage=REVEAL_USAGE)
    wanted = words[0].lower().partition("-")[0]
    state = _state(ctx)
    matches = await state.keys(f"roll:{wanted}") if wanted else []
    if len(matches) > 1:  # a shown id is a prefix; two secrets may share it
        raise UsageError(
            f"{len(matches)} secret rolls have ids starting with `{shorten(wanted)}`: give more "
            "of the id (`!log` shows them whole)",
            usage=REVEAL_USAGE,
        )
    kept = await state.get(matches[0]) if matches else None
    if kept is None:
        raise UsageError(
            f"there is no secret roll `{shorten(wanted)}` in this room",
            hint=f"`{ctx.settings.prefix}log` lists the room's rolls with their ids.",
            usage=REVEAL_USAGE,
        )
    roll_id = shown_id(matches[0].removeprefix("roll:"))
    if kept["user"] != ctx.message.user and not await is_storyteller(ctx):
        raise UsageError(
            f"only {kept['name']} or the Storyteller can reveal roll {roll_id}",
            usage=REVEAL_USAGE,
        )
    if kept["revealed"]:
        raise UsageError(f"roll {roll_id} was revealed already", usage=REVEAL_USAGE)
    await state.set(matches[0], {**kept, "revealed": True})
    body: list[Node] = [
        italic(f"{ctx.message.display_name} reveals {kept['name']}'s secret {kept['what']} "),
        code(roll_id),
        BR,
        *nodes_from_json(kept["body"]),
    ]
    return body


async def revealed(ctx: CommandContext, roll_id: str) -> bool | None:
    """Whether a secret roll of the room was revealed (``None``: no such secret roll)."""
    kept = await _state(ctx).get(f"roll:{roll_id.split('-')[0]}")
    return None if kept is None else bool(kept["revealed"])


# --- !ask / !answer -------------------------------------------------------------------------------


def _difficulty(ctx: CommandContext, word: str) -> int:
    if not word.isdigit() or len(word) > 3:
        raise UsageError(f"the Difficulty is a number, not `{shorten(word)}`", usage=ASK_USAGE)
    try:
        return ctx.variant.hidden_difficulty(int(word))
    except ValueError as error:
        raise UsageError(str(error), usage=ASK_USAGE) from None


async def _check_pool(ctx: CommandContext, pool: list[str], difficulty: int) -> None:
    """Build the asked roll once (nothing is rolled): a bad pool is refused before asking. A
    pool of Trait names is read from the *asked* player's sheet, so it is checked when they
    answer (the Storyteller's own sheet, if any, says nothing about it)."""
    if any(c.isalpha() for c in pool[0]):
        return
    await _build(ctx, pool, difficulty)


async def _build(ctx: CommandContext, pool: list[str], difficulty: int) -> Any:
    def prepare(parsed: Parsed) -> None:
        if "difficulty" in parsed.values:
            raise UsageError(
                "the Difficulty is the Storyteller's secret: give only the pool",
                usage=ANSWER_USAGE,
            )
        parsed.values["difficulty"] = difficulty

    asked = replace(ctx, line=replace(ctx.line, args=" ".join(pool)), resolver=None)
    await find_resolver(asked)  # Trait names are read from the roller's sheet
    [request] = parse_requests(asked, usage=ANSWER_USAGE, prepare=prepare)
    return request


async def ask(ctx: CommandContext) -> list[Node]:
    words = tokens(ctx.args)
    state = _state(ctx)
    if words and words[0].lower() == "cancel":
        await require_storyteller(ctx, "cancel an ask")
        if len(words) != 2 or not is_mention(words[1]):
            raise UsageError("whose ask? `!ask cancel @USER`", usage=ASK_USAGE)
        key = f"ask:{mention_key(words[1])}"
        if await state.get(key) is None:
            raise UsageError(f"{words[1]} has no open ask", usage=ASK_USAGE)
        await state.delete(key)
        return [Text(f"The ask for {words[1]} is cancelled.")]
    if not await is_storyteller(ctx):
        raise UsageError(
            "only the room's Storyteller can ask for a roll against a hidden Difficulty",
            hint=f"`{ctx.settings.prefix}storyteller claim` makes you the Storyteller of a room "
            "that has none.",
            usage=ASK_USAGE,
        )
    if not words or not is_mention(words[0]):
        raise UsageError("whom do you ask? Start with their @name", usage=ASK_USAGE)
    rest = words[1:]
    lowered = [w.lower() for w in rest]
    if SECRET_WORD not in lowered:
        raise UsageError(
            "say `secret`: the Difficulty stays hidden (for an open roll, just tell them)",
            usage=ASK_USAGE,
        )
    margin = "margin" in lowered
    rest = [w for w in rest if w.lower() not in (SECRET_WORD, "margin")]
    if len(rest) < 2:
        raise UsageError("give the pool and the Difficulty", usage=ASK_USAGE)
    pool, difficulty = rest[:-1], _difficulty(ctx, rest[-1])
    await _check_pool(ctx, pool, difficulty)
    key = f"ask:{mention_key(words[0])}"
    if await state.get(key) is None and len(await state.keys("ask:")) >= MAX_ASKS:
        raise UsageError("too many asks are open in this room; cancel one first")
    await state.set(
        key,
        {
            "pool": pool,
            "difficulty": difficulty,
            "margin": margin,
            "by": ctx.message.user,
            "by_name": ctx.message.display_name,
            "asked": words[0],
            "variant": ctx.variant.name,
            "time": time.time(),
        },
    )
    prefix = ctx.settings.prefix
    return [
        bold(ctx.message.display_name),
        Text(" asks "),
        mention_element(words[0], notify=True),
        Text(" to roll "),
        code(" ".join(pool)),
        Text(" against a hidden Difficulty. "),
        Text("Answer with "),
        code(f"{prefix}answer"),
        Text("."),
    ]


async def _pending_ask(ctx: CommandContext) -> tuple[str, dict[str, Any]] | None:
    state = _state(ctx)
    now = time.time()
    for key in await state.keys("ask:"):
        record = await state.get(key)
        if record is None:
            continue
        if now - record["time"] > ASK_TIMEOUT:
            await state.delete(key)
            continue
        if mentions(key.removeprefix("ask:"), ctx.message):
            return key, record
    return None


async def answer(ctx: CommandContext) -> Reply:
    found = await _pending_ask(ctx)
    if found is None:
        raise UsageError("nobody asked you for a roll here", usage=ANSWER_USAGE)
    key, record = found
    if record["variant"] != ctx.variant.name:
        raise UsageError(
            f"the ask was made under the {record['variant']} rules; this room now plays "
            f"{ctx.variant.name}: the Storyteller can ask again"
        )
    pool = tokens(ctx.args) or list(record["pool"])
    ctx.secret = True  # the hidden roll's makeup, like its dice, is for the Storyteller
    request = await _build(ctx, pool, record["difficulty"])
    outcome = await ctx.roll(request)
    await _state(ctx).delete(key)
    won = outcome.outcome in WIN_OUTCOMES
    name = ctx.message.display_name
    verdict = "succeeds" if won else "fails"
    body: list[Node] = [
        bold(name),
        Text(f" rolls {' '.join(pool)} against a hidden Difficulty and {verdict}"),
    ]
    margin = outcome.as_json().get("margin", outcome.successes)
    if record["margin"]:
        body += [Text(f" (margin {margin})")]
    body += [Text(".")]
    full = ctx.variant.compose([outcome], name, ctx.line.comment)
    full += [BR, italic(f"hidden Difficulty {record['difficulty']} (asked by {record['by_name']})")]
    await _state(ctx).set(
        f"roll:{ctx.roll_id}",
        {
            "user": ctx.message.user,
            "name": name,
            "what": "roll",
            "body": nodes_to_json(full),
            "revealed": False,
            "time": time.time(),
        },
    )
    parts = [Private(user, list(full), who) for user, who in (await storyteller_ids(ctx)).items()]
    if record["by"] not in {part.user for part in parts}:
        parts.append(Private(record["by"], list(full), record["by_name"]))
    return Reply(body, meta={"variant": ctx.variant.name}, private=parts)


# --- !npc roll ------------------------------------------------------------------------------------


async def npc(ctx: CommandContext) -> Reply | list[Node]:
    words = tokens(ctx.args)
    action = words[0].lower() if words else ""
    await require_storyteller(ctx, "roll for or change NPCs")
    state = _state(ctx)
    if action == "secret":
        if len(words) != 2 or words[1].lower() not in ("on", "off"):
            raise UsageError("`!npc secret on` or `!npc secret off`", usage=NPC_USAGE)
        secret = words[1].lower() == "on"
        await state.set("npc_secret", secret)
        shown = "in secret" if secret else "openly"
        return [Text(f"NPC rolls are now made {shown} by default in this room.")]
    if action in NPC_SHEET_ACTIONS:
        return await npc_sheet_command(ctx, action, words[1:])
    if action == "macro":
        return await npc_macro_command(ctx, words[1:])
    runs = npc_command(ctx, action)
    if action in NPC_TRACKER_ACTIONS or runs is not None:
        rest, public = _without_word(" ".join(words[1:]), "public")
        rest, secret_asked = _without_word(rest, SECRET_WORD)
        hidden = secret_asked or (not public and bool(await state.get("npc_secret", True)))
        if runs is None:
            return await npc_tracker_command(ctx, action, rest.split(), hidden=hidden)
        ctx.secret = hidden
        done = await run_for_npc(ctx, runs, rest.split(), hidden=hidden)
        if not hidden or done.is_error:
            return done
        who, what = ctx.roller_name, f"NPC {runs.name}"
        return await secret_reply(ctx, done.body + take_notes(ctx), who=who, what=what)
    if action != "roll" or len(words) < 3:
        raise UsageError("roll for whom? `!npc roll Guard 5 6`", usage=NPC_USAGE)
    who = words[1][:40]
    sheet = await sheet_of(ctx, who)
    args, public = _without_word(" ".join(words[2:]), "public")
    args, secret_asked = _without_word(args, SECRET_WORD)
    comment = ctx.line.comment
    if sheet is not None:  # an NPC with a sheet: its Trait names and macros are read from it
        read_from(ctx, sheet)
        who = str(sheet["name"])
        args, macro_comment = macro_args(ctx, sheet, args)
        comment = comment or macro_comment
    secret = secret_asked or (not public and bool(await state.get("npc_secret", True)))
    ctx.line = replace(ctx.line, args=args, comment=comment)
    ctx.character = fold(who)  # rolled for this NPC (a free first botch is its own, revised)
    ctx.secret = secret  # before the pools are read: a secret pool's makeup stays private
    try:
        if ctx.resolver is not None:  # the NPC's sheet; the hook adds the sheets named after `vs`
            await find_resolver(ctx)
        requests = parse_requests(ctx, usage=NPC_USAGE)
    except UsageError as error:  # (nothing is rolled yet) what it tells of the sheet is secret
        if not secret or sheet is None:
            raise
        return refused_privately(ctx, error)
    outcomes = [await ctx.roll(request) for request in requests]
    full = ctx.variant.compose(outcomes, who, ctx.line.comment)
    if not secret:
        return Reply(full, meta={"variant": ctx.variant.name})
    # the trackers a secret NPC roll moved are as secret as the roll (a player's sheet is no
    # secret: under a player's secret roll they show in the room)
    full += take_notes(ctx)
    return await secret_reply(ctx, full, who=who, what="NPC roll")


@hookimpl
def coterie_commands() -> list[Command]:
    return [
        Command(
            name="reveal",
            summary="show a secret roll to the room (its roller or the Storyteller)",
            usage=REVEAL_USAGE,
            examples=("!roll {roll} secret\n!reveal {id}", "!roll {roll2} secret\n!reveal {id}"),
            handler=reveal,
            details="Roll with `secret` (e.g. `!roll 5 6 secret`) to keep a result between you "
            "and the Storyteller until it is revealed.",
        ),
        Command(
            name="ask",
            summary="ask a player to roll against a Difficulty only you know (Storyteller)",
            usage=ASK_USAGE,
            examples=(
                "!storyteller claim\n!ask @bob {pool} {difficulty} secret\nbob: !answer",
                "!storyteller claim\n!ask @bob {pool} {difficulty} secret margin\n"
                "bob: !answer {pool}",
            ),
            handler=ask,
            details="The room sees whether the roll succeeds (with `margin`: by how much); you "
            "see everything.",
        ),
        Command(
            name="answer",
            summary="roll what the Storyteller asked you for",
            usage=ANSWER_USAGE,
            examples=(
                "!storyteller claim\n!ask @bob {pool} {difficulty} secret\nbob: !answer",
                "!storyteller claim\n!ask @bob {pool} {difficulty} secret\nbob: !answer {pool}",
            ),
            handler=answer,
        ),
        Command(
            name="npc",
            summary="the Storyteller's NPCs: rolls (secret by default), sheets, trackers, macros",
            usage=NPC_USAGE,
            # (the NPC sheet actions are in the details: a rule set may have no sheets)
            examples=("!npc roll guard {roll}", "!npc secret off\n!npc roll guard {roll2}"),
            handler=npc,
            details="Add `public` to show one roll to the room, or `!npc secret off` to roll "
            "NPCs openly by default. NPCs with sheets (`!npc new Guard`) keep trackers and "
            "macros like players' characters: `!npc damage Guard 2 lethal`, `!npc wp Guard -1`, "
            "`!npc hunger Guard +1` (privately while NPCs are secret), `!npc macro Guard add "
            "spot = Wits+Alertness 6`, then `!npc roll Guard spot`.",
        ),
    ]
