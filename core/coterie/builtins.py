"""Built-in behaviour, registered as an ordinary plugin: ``!roll``, ``!help`` and ``!variant``."""

from __future__ import annotations

from typing import Any

from coterie.app import new_roll_id
from coterie.commands import Command, CommandContext
from coterie.elements import BR, Code, Node, Reply, Text, bold, code, italic
from coterie.errors import UsageError
from coterie.grammar import localise, parse, shorten, suggest, tokens
from coterie.hookimpl import hookimpl

ROLL_USAGE = "!roll POOL [DIFFICULTY] [options] [# comment]"


def parse_requests(ctx: CommandContext, *, minimum: int = 1) -> list[Any]:
    """Every ``;``-separated roll of the message, parsed and checked against the limits before
    anything is rolled: one bad roll means none is rolled."""
    variant = ctx.variant
    limits = ctx.app.config.limits
    usage = variant.grammar.usage  # written with "!"; the app localises usage lines
    segments = ctx.args.split(";")
    if not ctx.args.strip():
        raise UsageError("what should I roll? Give at least a dice pool.", usage=usage)
    if len(segments) < minimum:
        raise UsageError(f"give at least {minimum} rolls separated by `;`", usage=usage)
    if len(segments) > limits.max_rolls_per_message:
        raise UsageError(
            f"that is {len(segments)} rolls in one message; at most "
            f"{limits.max_rolls_per_message} are allowed",
            usage=usage,
        )
    requests: list[Any] = []
    for segment in segments:
        words = tokens(segment)
        if not words:
            raise UsageError("one of the rolls between `;` is empty", usage=usage)
        parsed = parse(words, variant.grammar, max_options=limits.max_options)
        parsed.comment = ctx.line.comment
        try:
            request = variant.build(parsed, ctx.settings)
        except UsageError as error:
            error.usage = error.usage or usage
            raise
        count = variant.dice_count(request)
        if count > limits.max_dice:
            raise UsageError(
                f"that is {count} dice; a roll may have at most {limits.max_dice}", usage=usage
            )
        requests.append(request)
    return requests


async def roll(ctx: CommandContext) -> Reply:
    requests = parse_requests(ctx)
    outcomes = [await ctx.roll(request) for request in requests]
    body = ctx.variant.compose(outcomes, ctx.message.display_name, ctx.line.comment)
    return Reply(body, meta={"roll_id": new_roll_id(), "variant": ctx.variant.name})


async def team(ctx: CommandContext) -> Reply:
    """Teamwork: each member rolls separately; the rule set adds up the result."""
    requests = parse_requests(ctx, minimum=2)
    ctx.variant.check_team(requests)
    outcomes = [await ctx.roll(request) for request in requests]
    body: list[Node] = [bold(ctx.message.display_name)]
    if ctx.line.comment:
        body += [Text(" — "), italic(ctx.line.comment)]
    for number, outcome in enumerate(outcomes, start=1):
        body += [BR, Text(f"Member {number}: "), *outcome.render()]
    body += [BR, *ctx.variant.team(outcomes)]
    return Reply(body, meta={"roll_id": new_roll_id(), "variant": ctx.variant.name})


def help_command(ctx: CommandContext) -> list[Node]:
    prefix = ctx.settings.prefix
    topic = ctx.args.strip().lower().removeprefix(prefix)
    if not topic:
        body: list[Node] = [
            bold("coterie"),
            Text(f" — rules: {ctx.variant.title} ({ctx.variant.name})"),
            BR,
        ]
        for command in ctx.app.room_commands(ctx.variant.name):
            body += [code(prefix + command.name), Text(f" — {command.summary}"), BR]
        body += [Text(f"{prefix}help COMMAND tells more, e.g. "), code(f"{prefix}help roll")]
        return body
    found = ctx.app.find_command(topic, ctx.variant.name)
    if found is None:
        names = [n for c in ctx.app.room_commands(ctx.variant.name) for n in c.names]
        close = suggest(topic, names)
        hint = f" Did you mean `{close}`?" if close else ""
        raise UsageError(f"there is no command `{shorten(topic)}`.{hint}", usage="!help [COMMAND]")
    if found.name == "roll":
        lines = [
            Code(localise(n.text, prefix)) if isinstance(n, Code) else n for n in ctx.variant.help()
        ]
        return [bold(f"{prefix}roll"), Text(f" ({ctx.variant.name})"), BR, *lines]
    body = [code(localise(found.usage, prefix)), BR, Text(found.summary)]
    if found.details:
        body += [BR, Text(found.details)]
    return body


async def variant_command(ctx: CommandContext) -> list[Node]:
    wanted = ctx.args.strip().lower()
    variants = ctx.app.variants
    if not wanted:
        body: list[Node] = [Text("This room plays "), bold(ctx.variant.title), Text(".")]
        for name, variant in sorted(variants.items()):
            marker = "• " if name == ctx.variant.name else "  "
            body += [BR, Text(marker), code(name), Text(f" — {variant.title}")]
        body += [BR, Text(f"Switch with {ctx.settings.prefix}variant NAME.")]
        return body
    if wanted not in variants:
        close = suggest(wanted, list(variants))
        hint = f" Did you mean `{close}`?" if close else ""
        raise UsageError(
            f"there is no rule set `{shorten(wanted)}`.{hint} "
            f"Installed: {', '.join(sorted(variants))}.",
            usage="!variant [NAME]",
        )
    await ctx.app.update_room(ctx.message.room_key, variant=wanted)
    return [Text("This room now plays "), bold(variants[wanted].title), Text(f" ({wanted}).")]


@hookimpl
def coterie_commands() -> list[Command]:
    return [
        Command(
            name="roll",
            aliases=("r",),
            summary="roll a dice pool under the room's rules",
            usage=ROLL_USAGE,
            handler=roll,
            details="Several rolls in one message are separated by `;`.",
        ),
        Command(
            name="team",
            summary="teamwork: several characters roll separately, per the room's rules",
            usage="!team POOL [DIFFICULTY] [options]; POOL [DIFFICULTY] [options]; ...",
            handler=team,
            details="Each roll between `;` is one member's own pool; pools are never merged.",
        ),
        Command(
            name="help",
            summary="list the commands, or explain one",
            usage="!help [COMMAND]",
            handler=help_command,
        ),
        Command(
            name="variant",
            summary="show the room's rule set, or switch it",
            usage="!variant [NAME]",
            handler=variant_command,
        ),
    ]
