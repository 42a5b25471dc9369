"""``!roll ... for NAME`` and ``!roll ... retry NAME``: a roll toward an extended action or a
teamwork action, and trying a task again (the difficulty rises by the rule set's schedule after each
failure). Registered as a built-in plugin: it takes such rolls over through the
``coterie_roll_command`` hook, so every roll command (``!roll``, laia's ``?throw``) gets them."""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import replace
from typing import Any

from coterie.errors import UsageError
from coterie.framework.commands import CommandContext, parse_requests
from coterie.framework.grammar import Parsed
from coterie.hookimpl import hookimpl
from coterie.play.common import NAME, action_name, actions_state, check_owner
from coterie.play.extended import extended_after
from coterie.play.teamwork import team_after
from coterie.render.elements import BR, Reply, Text
from coterie.rulekit.pools import plural

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
            retry = action_name(following, "task", "!roll ... retry NAME")
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
    state = actions_state(ctx)
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
        await check_owner(ctx, action, "roll for")
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
            body += await extended_after(ctx, state, action, outcome)
        elif variant.team_mode == "sum":
            body += await team_after(ctx, state, action, rest, outcome)
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


@hookimpl
def coterie_roll_command(ctx: CommandContext, usage: str | None) -> Awaitable[Reply | None] | None:
    """Take over a roll that names an action (``for``) or a task (``retry NAME``)."""
    if not wants_actions(ctx.line.args):
        return None
    return roll_for(ctx, usage)
