"""Teamwork: ``!team POOL DIFF; POOL DIFF; ...`` in one message, or over several:
``!team start NAME [TARGET]``, helpers ``!roll ... for NAME`` (their successes add up, rule sets
whose :attr:`~coterie.framework.variant.Variant.team_mode` is ``"sum"``) or ``!team join NAME``
(each helper adds a die to the leader's roll, ``"dice"``, V5), ``!team end NAME``. A built-in
plugin."""

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
