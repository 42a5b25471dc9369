"""Play that spans messages: extended actions, teamwork, contests between two chat users, and
trying again. Registered as a built-in plugin (see :mod:`coterie.builtins`).

* ``!extended start NAME TARGET [DIFF]``, then ``!roll POOL ... for NAME`` (or ``for`` alone: your
  last open one) adds progress; ``!extended [status]``, ``!extended cancel NAME``.
* ``!team start NAME [TARGET]``: helpers ``!roll ... for NAME`` and their successes add up (rule
  sets whose :attr:`~coterie.rules.Variant.team_mode` is ``"sum"``), or ``!team join NAME`` and the
  leader's ``!roll ... for NAME`` gets one die per helper (``"dice"``, V5). ``!team end NAME``.
* ``!contest @USER POOL [DIFF] [TARGET]``, answered by that user's ``!resist POOL [DIFF]``; with a
  TARGET the contest is extended (or a d6 seesaw) and goes on over several turns.
* ``!roll ... retry NAME``: the difficulty rises by the rule set's schedule after each failed
  attempt at the task NAME (where the room's rules allow it).

Every rule comes from the room's rule set, through the ``prepare_*`` methods of
:class:`~coterie.rules.Variant`: core keeps the names, owners and tallies, the rule set rolls.
All state lives in the room's ``coterie.actions`` state and changes in the command's transaction.
"""

from __future__ import annotations

import re
import time
from dataclasses import replace
from typing import Any

from coterie.errors import UsageError
from coterie.framework.commands import Command, CommandContext, new_roll_id, parse_requests
from coterie.framework.grammar import Parsed, check_range, parse, shorten, tokens
from coterie.framework.variant import Standing
from coterie.play.rooms import is_mention, is_storyteller, mention_key, mentions, names_person
from coterie.render.elements import BR, Node, Reply, Text, bold, code
from coterie.rulekit.pools import plural
from coterie.storage.state import RoomState

OWNER = "coterie.actions"
NAME = re.compile(r"[a-z][a-z0-9_-]{0,23}")
#: a contest waits this long for the next ``!resist`` before it lapses
CONTEST_TIMEOUT = 6 * 3600
MAX_CONTESTS = 20
MAX_TEAM_MEMBERS = 30
DEFAULT_MAX_EXTENDED = 10

EXTENDED_USAGE = "!extended start NAME TARGET [DIFFICULTY] | status | cancel NAME"
TEAM_START_USAGE = "!team start NAME [TARGET] | join NAME | end NAME | cancel NAME | status"
CONTEST_USAGE = "!contest @USER POOL [DIFFICULTY] [TARGET] | cancel [@USER] | status"
RESIST_USAGE = "!resist POOL [DIFFICULTY]"


def _name(word: str | None, what: str, usage: str) -> str:
    if word is None:
        raise UsageError(f"give the {what} a name, e.g. `library`", usage=usage)
    name = word.lower()
    if not NAME.fullmatch(name):
        raise UsageError(
            f"`{shorten(word)}` can't name an action: use up to 24 letters, digits, `-` or `_`, "
            "starting with a letter",
            usage=usage,
        )
    return name


def _count(word: str, what: str, low: int, high: int, usage: str) -> int:
    if not re.fullmatch(r"[0-9]{1,6}", word):
        raise UsageError(f"{what} is a whole number, not `{shorten(word)}`", usage=usage)
    try:
        return check_range(int(word), low, high, what)
    except UsageError as error:
        error.usage = usage
        raise


def _team_total(members: list[dict[str, Any]]) -> int:
    """A teamwork action's running total: the members' successes added up."""
    return sum(max(0, member["successes"]) for member in members)


def bar(progress: int, target: int, width: int = 10) -> str:
    """``▰▰▰▱▱▱▱▱▱▱``: a progress bar for chat."""
    filled = min(width, max(0, round(width * progress / target))) if target else width
    return "▰" * filled + "▱" * (width - filled)


def _progress_line(action: dict[str, Any]) -> list[Node]:
    progress, target = action["progress"], action["target"]
    return [
        bold(f"{action['name']}"),
        Text(": "),
        bold(f"{progress}/{target}"),
        Text(f" {bar(progress, target)}"),
    ]


def _state(ctx: CommandContext) -> RoomState:
    return ctx.state(OWNER)


# --- !roll ... for NAME / retry NAME --------------------------------------------------------------


def take_clauses(args: str) -> tuple[str, str | None, bool, str | None]:
    """Split ``for NAME`` and ``retry NAME`` (a name, not a number) off a roll's arguments:
    ``(rest, for-name, for-given, retry-name)``."""
    words = args.split()
    rest: list[str] = []
    target: str | None = None
    given = False
    retry: str | None = None
    index = 0
    while index < len(words):
        word = words[index]
        low = word.lower()
        following = words[index + 1] if index + 1 < len(words) else None
        if low == "for":
            if given:
                raise UsageError("one `for NAME` per roll")
            given = True
            if (
                following is not None
                and NAME.fullmatch(following.lower())
                and following.lower() not in ("retry", "vs")
            ):
                target = following.lower()
                index += 2
                continue
            index += 1
            continue
        if low == "retry" and following is not None and not following.isdigit():
            if retry is not None:
                raise UsageError("one `retry NAME` per roll")
            retry = _name(following, "task", "!roll ... retry NAME")
            index += 2
            continue
        rest.append(word)
        index += 1
    return " ".join(rest), target, given, retry


def wants_actions(args: str) -> bool:
    """Cheap test: might the roll name an action (``for``) or a task (``retry NAME``)?"""
    low = args.lower()
    return "for" in low or "retry" in low


async def roll_for(ctx: CommandContext, usage: str | None = None) -> Reply | None:
    """``!roll`` with ``for NAME`` or ``retry NAME``; ``None`` when the roll names neither."""
    rest, name, given, retry = take_clauses(ctx.args)
    if not given and retry is None:
        return None
    if ";" in rest:
        raise UsageError("a roll toward an action or a task goes alone, without `;`")
    ctx.line = replace(ctx.line, args=rest)
    state = _state(ctx)
    user = ctx.message.user
    variant = ctx.variant
    action: dict[str, Any] | None = None
    kind = ""
    if given:
        if name is None:
            name = await state.get(f"last:{user}")
            if name is None:
                raise UsageError(
                    "you have no open action; name one with `for NAME`",
                    hint=f"`{ctx.settings.prefix}extended` lists the room's actions.",
                )
        for kind in ("extended", "team"):
            action = await state.get(f"{kind}:{name}")
            if action is not None:
                break
        if action is None:
            raise UsageError(
                f"there is no open action `{name}` in this room",
                hint=f"`{ctx.settings.prefix}extended` and `{ctx.settings.prefix}team status` "
                "list them.",
            )
        if action["variant"] != variant.name:
            raise UsageError(
                f"`{name}` was started under the {action['variant']} rules; this room now plays "
                f"{variant.name}"
            )
    failures = 0
    if retry is not None:
        if any(
            rule.name == "trying_again" for rule in variant.house_rules
        ) and not ctx.settings.rule(variant, "trying_again"):
            raise UsageError("this room does not raise the difficulty for trying again")
        failures = int(await state.get(f"retry:{user}:{retry}", 0))

    def prepare(parsed: Parsed) -> None:
        if retry is not None:
            variant.prepare_retry(parsed, failures)
        if action is None:
            return
        if kind == "extended":
            if action.get("difficulty") is not None and "difficulty" not in parsed.values:
                parsed.values["difficulty"] = action["difficulty"]
            variant.prepare_extended(parsed, action["target"], action["progress"])
        elif variant.team_mode == "dice":
            variant.prepare_helpers(parsed, len(action["helpers"]))
        elif action.get("difficulty") is not None and "difficulty" not in parsed.values:
            parsed.values["difficulty"] = action["difficulty"]

    if action is not None and kind == "extended":
        await _check_owner(ctx, action, "roll for")
    if (
        action is not None
        and kind == "team"
        and variant.team_mode == "dice"
        and action["leader"] != user
    ):
        raise UsageError(
            f"in {variant.name} only the leader ({action['leader_name']}) rolls for `{name}`; "
            f"helpers `{ctx.settings.prefix}team join {name}`"
        )
    [request] = parse_requests(ctx, usage=usage, prepare=prepare)
    if action is not None and kind == "team" and variant.team_mode == "sum":
        variant.check_team([request])
    outcome = await ctx.roll(request)
    body = variant.compose([outcome], ctx.message.display_name, ctx.line.comment)
    if retry is not None:
        key = f"retry:{user}:{retry}"
        if outcome.successes > 0:
            await state.delete(key)
            tries = f"after {plural(failures, 'failed attempt')}" if failures else "at once"
            body += [BR, Text(f"Task {retry}: done {tries}.")]
        else:
            await state.set(key, failures + 1)
            body += [
                BR,
                Text(
                    f"Task {retry}: {plural(failures + 1, 'failed attempt')}; the next try is "
                    "harder."
                ),
            ]
    if action is not None and name is not None:
        await state.set(f"last:{user}", name)
        if kind == "extended":
            body += await _extended_after(ctx, state, action, outcome)
        elif variant.team_mode == "sum":
            body += await _team_after(ctx, state, action, rest, outcome)
        else:
            await state.delete(f"team:{name}")
            body += [
                BR,
                Text(
                    f"Teamwork {name}: {plural(len(action['helpers']), 'helper')} added a die "
                    "each; the action is done."
                ),
            ]
    return Reply(body, meta={"variant": variant.name})


async def _check_owner(ctx: CommandContext, action: dict[str, Any], what: str) -> None:
    if action["owner"] == ctx.message.user or await is_storyteller(ctx):
        return
    raise UsageError(
        f"`{action['name']}` belongs to {action['owner_name']}; only they or the Storyteller "
        f"can {what} it",
        hint=f"To work together, `{ctx.settings.prefix}team start NAME`.",
    )


async def _extended_after(
    ctx: CommandContext, state: RoomState, action: dict[str, Any], outcome: Any
) -> list[Node]:
    progress = ctx.variant.extended_progress(outcome)
    if progress is None:
        raise RuntimeError(f"{ctx.variant.name} gave no extended progress")
    action = {**action, "progress": progress.progress, "rolls": action["rolls"] + 1}
    body: list[Node] = [BR, *_progress_line(action)]
    if progress.wiped:
        body += [Text(" — the botch threw the progress away")]
    if progress.done:
        body += [Text(f" — done in {action['rolls']} rolls!")]
        await state.delete(f"extended:{action['name']}")
        await state.delete(f"last:{ctx.message.user}")
    else:
        await state.set(f"extended:{action['name']}", action)
    return body


async def _team_after(
    ctx: CommandContext, state: RoomState, action: dict[str, Any], args: str, outcome: Any
) -> list[Node]:
    members = [
        *action["members"],
        {
            "user": ctx.message.user,
            "name": ctx.message.display_name,
            "args": args,
            "faces": list(outcome.faces),
            "successes": outcome.successes,
        },
    ]
    action = {**action, "members": members}
    outcomes = _replay(ctx, members)
    total = _team_total(members)
    body: list[Node] = [
        BR,
        bold(f"Teamwork {action['name']}"),
        Text(f" ({plural(len(members), 'roll')}): "),
    ]
    if action.get("target"):
        body += [bold(f"{total}/{action['target']}"), Text(f" {bar(total, action['target'])} ")]
    body += ctx.variant.team(outcomes) if outcomes else []
    if action.get("target") and total >= action["target"]:
        body += [Text(" — the target is reached; the action is done.")]
        await state.delete(f"team:{action['name']}")
    else:
        await state.set(f"team:{action['name']}", action)
    return body


def _replay(ctx: CommandContext, members: list[dict[str, Any]]) -> list[Any]:
    """The members' outcomes again, from what each wrote and the faces each rolled (the rules are
    pure functions of both). A member whose roll no longer reads (the settings changed) is left
    out of the verdict."""
    variant = ctx.variant
    limits = ctx.app.config.limits
    outcomes = []
    for member in members:
        try:
            parsed = parse(tokens(member["args"]), variant.grammar, max_options=limits.max_options)
            request = variant.build(parsed, ctx.settings)
            outcomes.append(variant.evaluate(request, member["faces"]))
        except (UsageError, ValueError):
            continue
    return outcomes


# --- !extended ------------------------------------------------------------------------------------


async def extended(ctx: CommandContext) -> list[Node]:
    words = tokens(ctx.args)
    action = words[0].lower() if words else "status"
    state = _state(ctx)
    prefix = ctx.settings.prefix
    variant = ctx.variant
    if action in ("status", "list"):
        names = await state.keys("extended:")
        if len(words) > 1:
            names = [f"extended:{_name(words[1], 'action', EXTENDED_USAGE)}"]
        body: list[Node] = [bold("Extended actions")]
        found = False
        for key in names:
            one = await state.get(key)
            if one is None:
                continue
            found = True
            body += [
                BR,
                *_progress_line(one),
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
        name = _name(words[1], "action", EXTENDED_USAGE)
        target = _count(words[2], "TARGET", 1, 1000, EXTENDED_USAGE)
        difficulty = None
        if len(words) == 4:
            low, high = variant.difficulty_range
            difficulty = _count(words[3], "DIFFICULTY", low, high, EXTENDED_USAGE)
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
        name = _name(words[1], "action", EXTENDED_USAGE)
        record = await state.get(f"extended:{name}")
        if record is None:
            raise UsageError(f"there is no open extended action `{name}`")
        await _check_owner(ctx, record, "cancel")
        await state.delete(f"extended:{name}")
        return [
            Text("Extended action "),
            bold(name),
            Text(f" cancelled at {record['progress']}/{record['target']}."),
        ]
    raise UsageError(f"unknown `{shorten(action)}`", usage=EXTENDED_USAGE)


# --- !team start ----------------------------------------------------------------------------------

TEAM_WORDS = ("start", "join", "end", "cancel", "status")


async def team_action(ctx: CommandContext) -> list[Node]:
    """``!team start|join|end|cancel|status``: teamwork over several messages."""
    words = tokens(ctx.args)
    action = words[0].lower()
    state = _state(ctx)
    variant = ctx.variant
    prefix = ctx.settings.prefix
    if action == "status":
        body: list[Node] = [bold("Teamwork")]
        keys = await state.keys("team:")
        for key in keys:
            one = await state.get(key)
            if one is None:
                continue
            members = one["members"] if variant.team_mode == "sum" else one["helpers"]
            body += [
                BR,
                bold(one["name"]),
                Text(
                    f" led by {one['leader_name']}: {len(members)} "
                    f"{'rolls' if variant.team_mode == 'sum' else 'helpers'}"
                ),
            ]
            if one.get("target"):
                total = _team_total(one["members"])
                body += [Text(" — "), bold(f"{total}/{one['target']}")]
        return body if keys else [Text("No teamwork is open.")]
    if variant.team_mode is None:
        raise UsageError(f"the {variant.name} rules have no teamwork")
    if len(words) < 2:
        raise UsageError("which action? e.g. `!team start library`", usage=TEAM_START_USAGE)
    name = _name(words[1], "action", TEAM_START_USAGE)
    record = await state.get(f"team:{name}")
    if action == "start":
        if len(words) > 3:
            raise UsageError("too many words", usage=TEAM_START_USAGE)
        target = _count(words[2], "TARGET", 1, 1000, TEAM_START_USAGE) if len(words) == 3 else None
        if target is not None and variant.team_mode == "dice":
            raise UsageError(
                f"in {variant.name} teamwork is one roll with a die per helper: leave out TARGET"
            )
        if record is not None or await state.get(f"extended:{name}"):
            raise UsageError(f"`{name}` is already open here; pick another name")
        if len(await state.keys("team:")) >= MAX_CONTESTS:
            raise UsageError("too many teamwork actions are open in this room")
        record = {
            "name": name,
            "target": target,
            "leader": ctx.message.user,
            "leader_name": ctx.message.display_name,
            "variant": variant.name,
            "members": [],
            "helpers": [],
            "started": time.time(),
        }
        await state.set(f"team:{name}", record)
        if variant.team_mode == "dice":
            return [
                Text("Teamwork "),
                bold(name),
                Text(": helpers say "),
                code(f"{prefix}team join {name}"),
                Text(", then the leader rolls "),
                code(f"{prefix}roll POOL ... for {name}"),
                Text(" with a die per helper."),
            ]
        goal = f" toward {target} successes" if target else ""
        return [
            Text("Teamwork "),
            bold(name),
            Text(f"{goal}: each member rolls their own pool with "),
            code(f"{prefix}roll POOL for {name}"),
            Text("; the successes add up."),
        ]
    if record is None:
        raise UsageError(
            f"there is no open teamwork `{name}`", hint=f"`{prefix}team status` lists them."
        )
    if action == "join":
        if variant.team_mode != "dice":
            raise UsageError(f"in {variant.name} each member rolls: `{prefix}roll POOL for {name}`")
        if ctx.message.user == record["leader"]:
            raise UsageError("the leader rolls; helpers join")
        if ctx.message.user in record["helpers"]:
            raise UsageError("you already help with this one")
        if len(record["helpers"]) >= MAX_TEAM_MEMBERS:
            raise UsageError("that is as many helpers as one action takes")
        record["helpers"].append(ctx.message.user)
        await state.set(f"team:{name}", record)
        return [
            Text(f"{ctx.message.display_name} helps with "),
            bold(name),
            Text(f": {plural(len(record['helpers']), 'helper')} so far."),
        ]
    if action in ("end", "cancel"):
        if record["leader"] != ctx.message.user and not await is_storyteller(ctx):
            raise UsageError(
                f"only the leader ({record['leader_name']}) or the Storyteller can {action} it"
            )
        await state.delete(f"team:{name}")
        if action == "cancel" or variant.team_mode == "dice":
            return [Text("Teamwork "), bold(name), Text(" cancelled.")]
        outcomes = _replay(ctx, record["members"])
        if not outcomes:
            return [Text("Teamwork "), bold(name), Text(" ends with no rolls.")]
        return [
            Text("Teamwork "),
            bold(name),
            Text(f" ends after {plural(len(outcomes), 'roll')}: "),
            *variant.team(outcomes),
        ]
    raise UsageError(f"unknown `{shorten(action)}`", usage=TEAM_START_USAGE)


# --- !contest @user / !resist ---------------------------------------------------------------------

_TARGET_WORDS = ("to", "target", "goal")


def _contest_target(words: list[str]) -> tuple[list[str], int | None]:
    """Take ``to N`` (or ``target N``, ``goal N``) out of a contest's words."""
    for index, word in enumerate(words[:-1]):
        if word.lower() in _TARGET_WORDS:
            target = _count(words[index + 1], "TARGET", 1, 100, CONTEST_USAGE)
            return words[:index] + words[index + 2 :], target
    return words, None


def _read_pool(ctx: CommandContext, words: list[str], versus: bool) -> Parsed:
    variant = ctx.variant
    grammar = variant.grammar.versus if versus else variant.grammar
    if grammar is None:
        raise UsageError(f"the {variant.name} rules have no contests between two characters")
    return parse(words, grammar, max_options=ctx.app.config.limits.max_options)


def _split_target(ctx: CommandContext, words: list[str]) -> tuple[list[str], int | None]:
    """The challenger's pool and the contest's TARGET: ``to N``, or a last bare number the rule
    set's grammar has no room for."""
    words, target = _contest_target(words)
    if target is not None:
        return words, target
    try:
        _read_pool(ctx, words, versus=False)
        return words, None
    except UsageError:
        if len(words) > 1 and words[-1].isdigit():
            _read_pool(ctx, words[:-1], versus=False)  # the error of the shorter pool, if any
            return words[:-1], _count(words[-1], "TARGET", 1, 100, CONTEST_USAGE)
        raise


async def _contests(state: RoomState) -> list[dict[str, Any]]:
    found = []
    now = time.time()
    for key in await state.keys("contest:"):
        one = await state.get(key)
        if one is None:
            continue
        if now - one["touched"] > CONTEST_TIMEOUT:
            await state.delete(key)
            continue
        found.append(one)
    return found


def _standing_text(one: dict[str, Any]) -> str:
    standing = one.get("standing")
    if not one.get("target"):
        return "a resisted roll"
    if standing is None:
        return f"extended to {one['target']}"
    return (
        f"extended to {one['target']}: {one['challenger_name']} {standing['actor']}, "
        f"{one['opponent_name']} {standing['opponent']}"
    )


async def contest(ctx: CommandContext) -> list[Node]:
    words = tokens(ctx.args)
    state = _state(ctx)
    prefix = ctx.settings.prefix
    if not words or words[0].lower() == "status":
        open_ones = await _contests(state)
        if not open_ones:
            return [
                Text("No contest is waiting. "),
                code(f"{prefix}contest @USER POOL DIFF"),
                Text(" challenges someone."),
            ]
        body: list[Node] = [bold("Contests")]
        for one in open_ones:
            body += [
                BR,
                bold(one["challenger_name"]),
                Text(" vs "),
                bold(one["opponent_name"]),
                Text(f" — {_standing_text(one)}; waiting for {one['opponent_name']} to "),
                code(f"{prefix}resist"),
            ]
        return body
    if words[0].lower() == "cancel":
        open_ones = await _contests(state)
        mine = [
            one
            for one in open_ones
            if ctx.message.user in (one["challenger"], one.get("opponent_user"))
            or mentions(one["opponent"], ctx.message)
        ]
        if len(words) > 1:
            key = mention_key(words[1])
            mine = [
                one
                for one in mine
                if one["opponent"] == key
                or names_person(key, one["challenger"], one["challenger_name"])
            ]
        if not mine and await is_storyteller(ctx):
            mine = open_ones
        if not mine:
            raise UsageError("you have no contest waiting here", usage=CONTEST_USAGE)
        if len(mine) > 1:
            raise UsageError(
                "you have several contests waiting; name the other side, e.g. "
                "`!contest cancel @bob`",
                usage=CONTEST_USAGE,
            )
        await state.delete(f"contest:{mine[0]['id']}")
        return [
            Text("Contest "),
            bold(mine[0]["challenger_name"]),
            Text(" vs "),
            bold(mine[0]["opponent_name"]),
            Text(" cancelled."),
        ]
    if not is_mention(words[0]):
        raise UsageError(
            "whom do you challenge? Start with their @name, e.g. `!contest @bob 6 7`",
            usage=CONTEST_USAGE,
        )
    opponent = mention_key(words[0])
    if mentions(opponent, ctx.message):
        raise UsageError("you can't contest yourself")
    pool_words, target = _split_target(ctx, words[1:])
    if not pool_words:
        raise UsageError("give your dice pool, e.g. `!contest @bob 6 7`", usage=CONTEST_USAGE)
    # check now that a contest of this kind exists in these rules, with a stand-in opponent
    ctx.variant.prepare_contest(
        _read_pool(ctx, pool_words, versus=False),
        _read_pool(ctx, pool_words[:1], versus=True),
        target,
        None,
    )
    open_ones = await _contests(state)
    same = next(
        (
            one
            for one in open_ones
            if one["challenger"] == ctx.message.user and one["opponent"] == opponent
        ),
        None,
    )
    if same is None and len(open_ones) >= MAX_CONTESTS:
        raise UsageError("too many contests are waiting in this room; finish or cancel some")
    if same is not None and same.get("target") != target and same.get("standing"):
        raise UsageError("this contest is under way with another goal; `!contest cancel` first")
    record: dict[str, Any] = {
        "id": same["id"] if same else new_roll_id(),
        "challenger": ctx.message.user,
        "challenger_name": ctx.message.display_name,
        "opponent": opponent,
        "opponent_name": words[0].removeprefix("@"),
        "pool": " ".join(pool_words),
        "target": target,
        "standing": same.get("standing") if same else None,
        "variant": ctx.variant.name,
        "touched": time.time(),
    }
    await state.set(f"contest:{record['id']}", record)
    verb = "goes on" if same is not None and same.get("standing") else "is on"
    return [
        bold(ctx.message.display_name),
        Text(" challenges "),
        bold(record["opponent_name"]),
        Text(
            f" ({_standing_text(record)}): the contest {verb}. {record['opponent_name']} "
            "answers with "
        ),
        code(f"{prefix}resist POOL [DIFFICULTY]"),
        Text("."),
    ]


async def resist(ctx: CommandContext) -> Reply:
    words = tokens(ctx.args)
    state = _state(ctx)
    variant = ctx.variant
    waiting = [one for one in await _contests(state) if mentions(one["opponent"], ctx.message)]
    if not waiting:
        raise UsageError(
            "nobody has challenged you here",
            hint=f"`{ctx.settings.prefix}contest` lists the waiting contests.",
        )
    if words and is_mention(words[0]):
        named, words = words[0], words[1:]
        key = mention_key(named)
        waiting = [
            one for one in waiting if names_person(key, one["challenger"], one["challenger_name"])
        ]
        if not waiting:
            raise UsageError(f"{shorten(named)} has not challenged you")
    if len(waiting) > 1:
        raise UsageError(
            "several people challenge you; name one first, e.g. `!resist @alice 5 6`",
            usage=RESIST_USAGE,
        )
    one = waiting[0]
    if one["variant"] != variant.name:
        raise UsageError(
            f"this contest began under the {one['variant']} rules; the room now "
            f"plays {variant.name}"
        )
    if not words:
        raise UsageError("give your dice pool, e.g. `!resist 5 6`", usage=RESIST_USAGE)
    standing = Standing(**one["standing"]) if one.get("standing") else None
    actor = _read_pool(ctx, tokens(one["pool"]), versus=False)
    opponent = _read_pool(ctx, words, versus=True)
    parsed = variant.prepare_contest(actor, opponent, one.get("target"), standing)
    request = variant.build(parsed, ctx.settings)
    count = variant.dice_count(request)
    if count > ctx.app.config.limits.max_dice:
        raise UsageError(
            f"that is {count} dice; a roll may have at most {ctx.app.config.limits.max_dice}"
        )
    outcome = await ctx.roll(request)
    who = f"{one['challenger_name']} vs {ctx.message.display_name}"
    body = variant.compose([outcome], who, ctx.line.comment)
    after = variant.contest_standing(outcome)
    if after is not None and after.open:
        one = {
            **one,
            "standing": {
                "winner": None,
                "actor": after.actor,
                "opponent": after.opponent,
                "target": after.target,
                "open": True,
            },
            "touched": time.time(),
            "opponent_user": ctx.message.user,
            "opponent_name": ctx.message.display_name,
        }
        await state.set(f"contest:{one['id']}", one)
        body += [
            BR,
            Text("The contest goes on: "),
            bold(f"{after.actor}/{after.target}"),
            Text(" vs "),
            bold(f"{after.opponent}/{after.target}"),
            Text(f". {ctx.message.display_name} answers the next turn with "),
            code(f"{ctx.settings.prefix}resist"),
            Text(f" (and {one['challenger_name']} may change pools with "),
            code(f"{ctx.settings.prefix}contest"),
            Text(")."),
        ]
    else:
        await state.delete(f"contest:{one['id']}")
        winner = None if after is None else after.winner
        names = {"actor": one["challenger_name"], "opponent": ctx.message.display_name}
        if winner in names:
            body += [BR, Text("Contest over: "), bold(names[winner]), Text(" wins.")]
        else:
            body += [BR, Text("Contest over: neither side wins.")]
    return Reply(body, meta={"variant": variant.name})


def commands() -> list[Command]:
    """The commands of this module (listed by :mod:`coterie.builtins`)."""
    return [
        Command(
            name="extended",
            aliases=("ext",),
            summary="an extended action over several rolls: start, status, cancel",
            usage=EXTENDED_USAGE,
            handler=extended,
            details=(
                "Roll toward it with `!roll POOL for NAME` (or `for` alone: your last one). "
                "Botches follow the room's rules. Several can run in a room; each belongs to "
                "whoever started it (and the Storyteller)."
            ),
        ),
        Command(
            name="contest",
            aliases=("challenge",),
            summary="challenge someone to a resisted (or extended) contest",
            usage=CONTEST_USAGE,
            handler=contest,
            details=(
                "The other side answers with `!resist POOL [DIFFICULTY]`. With a TARGET (or "
                "`to N`) the contest is extended and goes on turn by turn until someone gets "
                f"there. A contest lapses after {CONTEST_TIMEOUT // 3600} hours without a roll."
            ),
        ),
        Command(
            name="resist",
            summary="answer a contest someone challenged you to",
            usage=RESIST_USAGE,
            handler=resist,
        ),
    ]
