"""``!multi``: the revised multiple-actions schedule for several rolls in one message."""

from __future__ import annotations

from coterie.errors import UsageError
from coterie.framework.commands import Command, CommandContext
from coterie.framework.grammar import Grammar, parse, tokens
from coterie.render.elements import BR, Node, Reply, Text, bold
from coterie.rulekit import pools
from coterie.rulekit.pools import POOL, WILLPOWER
from coterie_revised import rules
from coterie_revised.variant import DIFFICULTY, RevisedOutcome, RevisedVariant, render

SEGMENT = Grammar(
    usage="POOL [DIFFICULTY] [wp]",
    positionals=(POOL, DIFFICULTY),
    options=(WILLPOWER, pools.NO_SPECIALTY),
    named_traits=rules.TEN_POINT_TRAITS,
    named_trait_rule=pools.TEN_POINT_RULE,
)
MULTI_USAGE = "!multi POOL [DIFFICULTY] [wp]; POOL [DIFFICULTY] [wp]; ... [# comment]"


def _segments(ctx: CommandContext, usage: str, minimum: int) -> list[list[str]]:
    parts = [tokens(part) for part in ctx.args.split(";")]
    limit = ctx.app.config.limits.max_rolls_per_message
    if len(parts) < minimum or any(not part for part in parts):
        raise UsageError(f"give at least {minimum} rolls separated by `;`", usage=usage)
    if len(parts) > limit:
        raise UsageError(f"at most {limit} rolls in one message", usage=usage)
    return parts


def _header(ctx: CommandContext) -> list[Node]:
    body: list[Node] = [bold(ctx.message.display_name)]
    if ctx.line.comment:
        body += [Text(f" — {ctx.line.comment}")]
    return [*body, BR]


def _variant(ctx: CommandContext) -> RevisedVariant:
    variant = ctx.variant
    assert isinstance(variant, RevisedVariant)
    return variant


async def multi(ctx: CommandContext) -> Reply:
    """Multiple actions in one turn, each pool cut by the penalty schedule."""
    variant = _variant(ctx)
    limits = ctx.app.config.limits
    parsed_all = [
        parse(words, SEGMENT, max_options=limits.max_options)
        for words in _segments(ctx, MULTI_USAGE, 2)
    ]
    if sum(1 for parsed in parsed_all if parsed.flag("willpower")) > 1:
        raise UsageError(
            "Willpower can be spent only once per turn, and `!multi` is one turn: put `wp` on "
            "one action",
            usage=MULTI_USAGE,
        )
    requests = []
    actions = len(parsed_all)
    for action, parsed in enumerate(parsed_all, start=1):
        parsed.values["multi"] = actions
        parsed.values["action"] = action
        requests.append(variant.build(parsed, ctx.settings))
    total = sum(variant.dice_count(r) for r in requests)
    if total > limits.max_dice:
        raise UsageError(f"that is {total} dice; at most {limits.max_dice}", usage=MULTI_USAGE)
    body = _header(ctx)
    for request in requests:
        outcome = await ctx.roll(request)
        assert isinstance(outcome, RevisedOutcome)
        body += [*render(outcome), BR]
    return Reply(body[:-1], meta={"variant": variant.name})


COMMANDS = [
    Command(
        name="multi",
        summary="multiple actions in one turn: each pool loses dice by the schedule",
        usage=MULTI_USAGE,
        examples=("!multi 6 6; 6 7", "!multi 3+4 6 wp; 5 7"),
        handler=multi,
        variants=("revised",),
        details="With 3 actions the first loses 3 dice, the second 4, the third 5.",
    ),
]
