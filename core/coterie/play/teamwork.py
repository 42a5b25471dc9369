"""Teamwork: ``!team POOL DIFF; POOL DIFF; ...`` in one message, or over several:
``!team start NAME [TARGET]``, helpers ``!roll ... for NAME`` (their successes add up, rule sets
whose :attr:`~coterie.framework.variant.Variant.team_mode` is ``"sum"``) or ``!team join NAME``
(each helper adds a die to the leader's roll, ``"dice"``, V5), ``!team end NAME``. A player may
roll several times toward one action and is still one member; with a TARGET the verdict is
whether the team reached it. A built-in plugin."""

from __future__ import annotations

import time
from typing import Any

from coterie.errors import UsageError
from coterie.framework.commands import Command, CommandContext, parse_requests
from coterie.framework.grammar import parse, shorten, tokens
from coterie.hookimpl import hookimpl
from coterie.play.common import MAX_CONTESTS, action_name, actions_state, bar, whole_number
from coterie.play.rooms import is_storyteller
from coterie.render.elements import BR, Node, Reply, Text, bold, code, italic
from coterie.rulekit.pools import plural
from coterie.storage.state import RoomState

MAX_TEAM_MEMBERS = 30


TEAM_START_USAGE = "!team start NAME [TARGET] | join NAME | end NAME | cancel NAME | status"


def _team_total(members: list[dict[str, Any]]) -> int:
    """A teamwork action's running total: the members' successes added up."""
    return sum(max(0, member["successes"]) for member in members)


async def team_after(
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
            # as settled: a room's free first botch (revised) is no botch of the team's
            "botch": ctx.variant.is_botch(outcome),
        },
    ]
    action = {**action, "members": members}
    total = _team_total(members)
    body: list[Node] = [
        BR,
        bold(f"Teamwork {action['name']}"),
        Text(f" ({_rolls_by(members)}): "),
        *_team_verdict(ctx, action),
    ]
    if action.get("target") and total >= action["target"]:
        body += [Text("; the action is done.")]
        await state.delete(f"team:{action['name']}")
    else:
        await state.set(f"team:{action['name']}", action)
    return body


def _rolls_by(members: list[dict[str, Any]]) -> str:
    """``3 rolls by 2 members``: a member is a player, however often they rolled."""
    people = len({member["user"] for member in members})
    return f"{plural(len(members), 'roll')} by {plural(people, 'member')}"


def _team_verdict(ctx: CommandContext, action: dict[str, Any]) -> list[Node]:
    """The teamwork line: the total and each member's share by name; with a target, whether the
    team reached it (and by how much), else the rule set's word for the total; and who
    botched, since one botch may spoil it for all."""
    members = action["members"]
    total = _team_total(members)
    shares: dict[str, int] = {}
    names: dict[str, str] = {}
    for member in members:
        shares[member["user"]] = shares.get(member["user"], 0) + max(0, member["successes"])
        names[member["user"]] = member["name"]
    each = ", ".join(f"{names[user]} {share}" for user, share in shares.items())
    target = action.get("target")
    line: list[Node]
    if target:
        line = [bold(f"{total}/{target}"), Text(f" {bar(total, target)} ({each}) — ")]
        if total > target:
            line.append(Text(f"the target is reached, {total - target} over"))
        elif total == target:
            line.append(Text("the target is reached exactly"))
        else:
            line.append(Text(f"{target - total} short of the target"))
    else:
        line = [Text("Teamwork: "), bold(plural(total, "success")), Text(f" ({each})")]
        label = ctx.variant.degree_label(total)
        if label:
            line.append(Text(f" — {label}"))
    botched = [names[member["user"]] for member, outcome in _replay(ctx, members) if outcome]
    if botched:
        who = ", ".join(dict.fromkeys(botched))
        line.append(Text(f"; {who} botched, which may spoil it for all"))
    return line


def _replay(ctx: CommandContext, members: list[dict[str, Any]]) -> list[tuple[Any, bool]]:
    """Each member's roll with whether it botched, as recorded when it was settled; a record
    kept before that was recorded is rolled again from what the member wrote and the faces they
    rolled (the rules are pure functions of both; a roll that no longer reads, the settings
    having changed, counts as no botch)."""
    variant = ctx.variant
    limits = ctx.app.config.limits
    found = []
    for member in members:
        if isinstance(member.get("botch"), bool):
            found.append((member, member["botch"]))
            continue
        try:
            parsed = parse(tokens(member["args"]), variant.grammar, max_options=limits.max_options)
            request = variant.build(parsed, ctx.settings)
            botch = variant.is_botch(variant.evaluate(request, member["faces"]))
        except (UsageError, ValueError):
            botch = False
        found.append((member, botch))
    return found


# --- !team start ----------------------------------------------------------------------------------

TEAM_WORDS = ("start", "join", "end", "cancel", "status")


async def team_action(ctx: CommandContext) -> list[Node]:
    """``!team start|join|end|cancel|status``: teamwork over several messages."""
    words = tokens(ctx.args)
    action = words[0].lower()
    state = actions_state(ctx)
    variant = ctx.variant
    prefix = ctx.settings.prefix
    if action == "status":
        body: list[Node] = [bold("Teamwork")]
        keys = await state.keys("team:")
        for key in keys:
            one = await state.get(key)
            if one is None:
                continue
            count = (
                _rolls_by(one["members"])
                if variant.team_mode == "sum"
                else plural(len(one["helpers"]), "helper")
            )
            body += [BR, bold(one["name"]), Text(f" led by {one['leader_name']}: {count}")]
            if one.get("target"):
                total = _team_total(one["members"])
                body += [Text(" — "), bold(f"{total}/{one['target']}")]
        return body if keys else [Text("No teamwork is open.")]
    if variant.team_mode is None:
        raise UsageError(f"the {variant.name} rules have no teamwork")
    if len(words) < 2:
        raise UsageError("which action? e.g. `!team start library`", usage=TEAM_START_USAGE)
    name = action_name(words[1], "action", TEAM_START_USAGE)
    record = await state.get(f"team:{name}")
    if action == "start":
        if len(words) > 3:
            raise UsageError("too many words", usage=TEAM_START_USAGE)
        target = (
            whole_number(words[2], "TARGET", 1, 1000, TEAM_START_USAGE) if len(words) == 3 else None
        )
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
        if not record["members"]:
            return [Text("Teamwork "), bold(name), Text(" ends with no rolls.")]
        return [
            Text("Teamwork "),
            bold(name),
            Text(f" ends after {_rolls_by(record['members'])}: "),
            *_team_verdict(ctx, record),
        ]
    raise UsageError(f"unknown `{shorten(action)}`", usage=TEAM_START_USAGE)


TEAM_USAGE = (
    "!team POOL [DIFFICULTY] [options]; POOL [DIFFICULTY] [options]; ... [# comment] | "
    "!team start NAME [TARGET]"
)


async def team(ctx: CommandContext) -> Reply:
    """Teamwork: each member rolls separately; the rule set adds up the result."""
    words = ctx.args.split()
    if words and words[0].lower() in TEAM_WORDS:
        return Reply(await team_action(ctx))
    requests = parse_requests(ctx, minimum=2, usage=TEAM_USAGE)
    ctx.variant.check_team(requests)
    outcomes = [await ctx.roll(request) for request in requests]
    body: list[Node] = [bold(ctx.message.display_name)]
    if ctx.line.comment:
        body += [Text(" — "), italic(ctx.line.comment)]
    for number, outcome in enumerate(outcomes, start=1):
        body += [BR, Text(f"Member {number}: "), *outcome.render()]
    body += [BR, *ctx.variant.team(outcomes)]
    return Reply(body, meta={"variant": ctx.variant.name})


@hookimpl
def coterie_commands() -> list[Command]:
    return [
        Command(
            name="team",
            summary="teamwork: several characters roll separately, per the room's rules",
            usage=TEAM_USAGE,
            supports=lambda v: v.team_mode is not None,
            examples=("!team start library", "!team start library\n!team status"),
            handler=team,
            details="Each roll between `;` is one member's own pool; pools are never merged.",
        ),
    ]
