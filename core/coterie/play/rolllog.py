"""The roll log in chat: ``!log [N | ID]`` and ``!stats [@USER]``. A built-in plugin.

Every roll is logged by :meth:`coterie.framework.commands.CommandContext.roll`; a room's log is read
only in that room (the query is always by the asking room's key) and by the bot's operator with
``coterie export``."""

from __future__ import annotations

import re
import time
from collections import defaultdict

from coterie.errors import UsageError
from coterie.framework.commands import Command, CommandContext, shown_id
from coterie.framework.grammar import shorten, tokens
from coterie.hookimpl import hookimpl
from coterie.play.changelog import change_line
from coterie.play.rooms import is_mention, is_storyteller, mention_key, names_person
from coterie.play.storyteller import revealed
from coterie.render.elements import BR, Node, Private, Reply, Text, bold, code
from coterie.rulekit.pools import plural
from coterie.storage.state import RollRecord, faces_text

LOG_USAGE = "!log [N | ROLL-ID]"
STATS_USAGE = "!stats [@USER]"
DEFAULT_LINES = 10
MAX_LINES = 25
_ID = re.compile(r"[a-z2-9]{6,13}(?:-[0-9]{1,3})?")


def _faces(record: RollRecord, limit: int = 20) -> str:
    return faces_text(record, limit)


def _result(record: RollRecord) -> str:
    outcome = record.outcome.replace("_", " ")
    return f"{outcome}, {plural(record.successes, 'success')}" if record.successes else outcome


def _line(record: RollRecord) -> list[Node]:
    stamp = time.strftime("%m-%d %H:%M", time.gmtime(record.time))
    if not record.is_roll:  # a tracker change: who changed what, no dice
        return [
            code(shown_id(record.id)),
            Text(f" {stamp} "),
            bold(record.display_name),
            Text(f" {shorten(change_line(record), 80)}"),
        ]
    return [
        code(shown_id(record.id)),
        Text(f" {stamp} "),
        bold(record.display_name),
        Text(f" {shorten(record.request, 60)} → {_result(record)} ({_faces(record)})"),
    ]


def _secret_line(record: RollRecord) -> list[Node]:
    stamp = time.strftime("%m-%d %H:%M", time.gmtime(record.time))
    return [
        code(shown_id(record.id)),
        Text(f" {stamp} "),
        bold(record.display_name),
        Text(" rolled in secret" if record.is_roll else " changed a tracker in secret"),
    ]


async def _hidden(ctx: CommandContext, records: list[RollRecord]) -> set[str]:
    """The ids of the secret rolls among ``records`` that are not revealed yet."""
    hidden: set[str] = set()
    for record in records:
        if not record.detail.get("secret"):
            continue
        # a tracker a secret roll moved is shown with that roll; a hidden NPC's change, never
        roll = record.id if record.is_roll else record.detail.get("roll")
        if not isinstance(roll, str) or not await revealed(ctx, roll):
            hidden.add(record.id)
    return hidden


async def _privately(ctx: CommandContext, body: list[Node], secret: list[Node]) -> Reply:
    """``body`` for the room; ``secret`` (the hidden rolls in full) for the asking Storyteller."""
    reply = Reply(body)
    if secret and await is_storyteller(ctx):
        reply.private = [Private(ctx.message.user, secret, ctx.message.display_name)]
    return reply


async def log_command(ctx: CommandContext) -> Reply:
    words = tokens(ctx.args)
    room = ctx.message.room_key
    store = ctx.app.state
    if len(words) > 1:
        raise UsageError("give a number of rolls or one roll id", usage=LOG_USAGE)
    if words and _ID.fullmatch(words[0].lower()) and not words[0].isdigit():
        wanted = words[0].lower()
        base, _, number = wanted.partition("-")
        found = [
            r
            for r in await store.rolls(room, limit=None)
            if r.id.partition("-")[0].startswith(base)
            and (not number or r.id.partition("-")[2] == number)
        ]
        if not found:
            raise UsageError(f"no roll `{wanted}` in this room's log", usage=LOG_USAGE)
        hidden = await _hidden(ctx, found)
        body: list[Node] = []
        secret: list[Node] = []
        rolls = {r.id.partition("-")[0] for r in found}
        if len(rolls) > 1:  # a shown id is a prefix: two rolls may share it, never confused
            body += [
                Text(f"{len(rolls)} different rolls have ids starting with "),
                code(base),
                Text(": each is shown with its whole id."),
            ]
        for record in reversed(found):
            if body:
                body.append(BR)
            if record.id in hidden:
                body += _secret_line(record)
                secret += [BR] if secret else []
                secret += _detail(record)
            else:
                body += _detail(record)
        return await _privately(ctx, body, secret)
    count = DEFAULT_LINES
    if words:
        if not words[0].isdigit() or len(words[0]) > 3:
            raise UsageError(
                f"`{shorten(words[0])}` is neither a number nor a roll id", usage=LOG_USAGE
            )
        count = int(words[0])
        if not 1 <= count <= MAX_LINES:
            raise UsageError(f"show between 1 and {MAX_LINES} rolls, not {count}", usage=LOG_USAGE)
    records = await store.rolls(room, limit=count)
    if not records:
        return Reply([Text("No rolls are logged in this room yet.")])
    hidden = await _hidden(ctx, records)
    entries = "rolls" if all(r.is_roll for r in records) else "entries"
    body = [bold(f"Last {len(records)} {entries}")]
    hidden_lines: list[Node] = [bold(f"Secret {entries} among them")] if hidden else []
    for record in reversed(records):
        body += [BR, *(_secret_line(record) if record.id in hidden else _line(record))]
        if record.id in hidden:
            hidden_lines += [BR, *_line(record)]
    return await _privately(ctx, body, hidden_lines)


def _detail(record: RollRecord) -> list[Node]:
    stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(record.time))
    if not record.is_roll:
        return _tracker_detail(record, stamp)
    body: list[Node] = [
        bold(f"Roll {record.id}"),
        Text(f" — {stamp}, {record.variant}"),
        BR,
        bold(record.display_name),
        Text(": "),
        code(shorten(record.request, 200)),
        BR,
        Text(f"Faces: {_faces(record, 100)}"),
        BR,
        Text(f"Result: {_result(record)}"),
    ]
    if record.expected is not None:
        body += [Text(f" (expected {record.expected:.2f} successes)")]
    return body + _where(record)


def _where(record: RollRecord) -> list[Node]:
    body: list[Node] = []
    scene = record.detail.get("scene")
    if isinstance(scene, str):
        body += [BR, Text(f"Scene: {scene}")]
    if record.session:
        body += [BR, Text("Session "), code(record.session)]
    return body


def _tracker_detail(record: RollRecord, stamp: str) -> list[Node]:
    body: list[Node] = [
        bold(f"Tracker change {record.id}"),
        Text(f" — {stamp}, {record.variant}"),
        BR,
        bold(record.display_name),
        Text(": "),
        code(shorten(record.request, 200)),
        BR,
        Text(change_line(record)),
    ]
    roll = record.detail.get("roll")
    if isinstance(roll, str):
        body += [BR, Text("By roll "), code(shown_id(roll))]
    return body + _where(record)


async def stats_command(ctx: CommandContext) -> list[Node]:
    words = tokens(ctx.args)
    if len(words) > 1 or (words and not is_mention(words[0])):
        raise UsageError("name at most one player, e.g. `!stats @alice`", usage=STATS_USAGE)
    # only rolls of dice count: a tracker change in the log is no roll
    records = [r for r in await ctx.app.state.rolls(ctx.message.room_key, limit=None) if r.is_roll]
    hidden = await _hidden(ctx, records)  # a secret roll's dice would tell its result
    records = [r for r in records if r.id not in hidden]
    if words:
        key = mention_key(words[0])
        records = [r for r in records if names_person(key, r.user, r.display_name)]
        if not records:
            raise UsageError(f"no rolls by {shorten(words[0])} in this room", usage=STATS_USAGE)
    if not records:
        return [Text("No rolls are logged in this room yet.")]
    per_user: dict[str, list[RollRecord]] = defaultdict(list)
    for record in records:
        per_user[record.user].append(record)
    body: list[Node] = [bold("Dice statistics"), Text(f" ({len(records)} rolls in this room)")]
    ranked = sorted(per_user.values(), key=len, reverse=True)
    tallies = {name: variant.stats_tallies() for name, variant in ctx.app.variants.items()}
    for rolls in ranked[:MAX_LINES]:
        body += [BR, *_user_line(rolls, tallies)]
    return body


#: what ``!stats`` counts for a roll of a rule set it does not know (any more)
_BOTCHES = (("botch", "botch"),)


def _own_result(record: RollRecord) -> str:
    """The roll's own result: a contest side's record is ``won``/``lost``/``standoff``, and its
    dice's own result is kept beside it."""
    contest = record.detail.get("contest") if isinstance(record.detail, dict) else None
    own = contest.get("own") if isinstance(contest, dict) else None
    return own if isinstance(own, str) else record.outcome


def _tally_text(
    rolls: list[RollRecord], tallies: dict[str, tuple[tuple[str, str], ...]]
) -> list[str]:
    """``2 botches`` (d10 rule sets), ``1 bestial failure, 0 messy criticals, ...`` (V5): the
    notable results of each rule set among the player's rolls, each counted once."""
    kinds: dict[str, str] = {}
    for record in rolls:
        for name, label in tallies.get(record.variant, _BOTCHES):
            kinds.setdefault(name, label)
    texts = []
    for name, label in kinds.items():
        if name == "botch":
            count = sum(1 for r in rolls if r.botch)
        else:
            count = sum(1 for r in rolls if _own_result(r) == name)
        plural_label = label + ("es" if label.endswith("ch") else "s")
        texts.append(f"{count} {label if count == 1 else plural_label}")
    return texts


def _user_line(
    rolls: list[RollRecord], tallies: dict[str, tuple[tuple[str, str], ...]]
) -> list[Node]:
    name = rolls[0].display_name
    successes = sum(max(0, r.successes) for r in rolls)
    known = [r for r in rolls if r.expected is not None]
    line: list[Node] = [
        bold(name),
        Text(f": {plural(len(rolls), 'roll')}, {plural(successes, 'success')}"),
    ]
    if known:
        got = sum(max(0, r.successes) for r in known)
        expected = sum(r.expected or 0.0 for r in known)
        ratio = f" ({got / expected:.0%} of expected)" if expected else ""
        line += [
            Text(f"; {got} vs {expected:.1f} expected over {plural(len(known), 'roll')}{ratio}")
        ]
    notable = _tally_text(rolls, tallies)
    if notable:  # (none for rolls of rule sets without notable results: d6)
        line += [Text(", " + ", ".join(notable))]
    return line


@hookimpl
def coterie_commands() -> list[Command]:
    return [
        Command(
            name="log",
            summary="the room's last rolls and tracker changes, or one by its id",
            usage=LOG_USAGE,
            examples=("!roll {roll}\n!log", "!log 5"),
            handler=log_command,
            transaction=False,
            details="Each roll's reply ends with its id. Tracker changes (`!hunger +1`, a "
            "failed rouse check) are listed among the rolls; `!stats` counts only rolls. A "
            "room's log is read only in that room.",
        ),
        Command(
            name="stats",
            summary="dice statistics per player: rolls, successes against expected, botches",
            usage=STATS_USAGE,
            examples=("!stats", "!roll {roll}\n!stats @alice"),
            handler=stats_command,
            transaction=False,
        ),
    ]
