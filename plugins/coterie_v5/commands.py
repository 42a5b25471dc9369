"""The v5 commands besides ``!roll``: ``!reroll`` (a Willpower re-roll of the caller's last roll)
and ``!rouse`` (rouse checks)."""

from __future__ import annotations

from coterie.commands import Command, CommandContext, new_roll_id
from coterie.elements import Reply
from coterie.errors import UsageError
from coterie.grammar import Grammar, Option, Positional, parse, shorten, suggest, tokens
from coterie_v5 import rules
from coterie_v5.variant import HUNGER, LAST_ROLL, RouseOutcome, V5Outcome, V5Variant

REROLL_USAGE = "!reroll [failures|crits|messy|risky] [# comment]"
ROUSE_USAGE = "!rouse [N] [h H] [# comment]"
MAX_ROUSE_CHECKS = 20

#: the words ``!reroll`` understands for each strategy
STRATEGY_WORDS: dict[str, rules.Strategy] = {
    "failures": rules.Strategy.FAILURES,
    "failure": rules.Strategy.FAILURES,
    "fail": rules.Strategy.FAILURES,
    "crits": rules.Strategy.CRITICALS,
    "crit": rules.Strategy.CRITICALS,
    "criticals": rules.Strategy.CRITICALS,
    "maximise": rules.Strategy.CRITICALS,
    "maximize": rules.Strategy.CRITICALS,
    "max": rules.Strategy.CRITICALS,
    "messy": rules.Strategy.AVOID_MESSY,
    "avoid": rules.Strategy.AVOID_MESSY,
    "risky": rules.Strategy.RISKY,
}

ROUSE = Grammar(
    usage=ROUSE_USAGE,
    positionals=(
        Positional(
            "checks",
            f"how many rouse checks, 1-{MAX_ROUSE_CHECKS} (default 1)",
            minimum=1,
            maximum=MAX_ROUSE_CHECKS,
        ),
    ),
    options=(
        HUNGER,
        # neither applies to checks; they are here to say so instead of "unknown option"
        Option("auto", "flag", "not for checks"),
        Option("half", "int", "not for checks", metavar="POOL"),
    ),
)


def _variant(ctx: CommandContext) -> V5Variant:
    variant = ctx.variant
    if not isinstance(variant, V5Variant):  # the commands are declared for v5 rooms only
        raise UsageError(f"this command belongs to the v5 rules, not {variant.name}")
    return variant


def strategy(words: list[str]) -> rules.Strategy:
    """The re-roll strategy named by the command's words (default: re-roll failures)."""
    if not words:
        return rules.Strategy.FAILURES
    if len(words) > 1:
        raise UsageError("a re-roll takes one strategy: failures, crits, messy or risky")
    word = words[0].lower()
    if word in STRATEGY_WORDS:
        return STRATEGY_WORDS[word]
    close = suggest(word, list(STRATEGY_WORDS))
    hint = f" Did you mean `{close}`?" if close else ""
    raise UsageError(
        f"there is no re-roll strategy `{shorten(word)}`.{hint} Choose failures (the default), "
        "crits (maximise criticals), messy (avoid a messy critical) or risky"
    )


async def reroll(ctx: CommandContext) -> Reply:
    """Spend Willpower: throw again as many as three regular dice of the caller's last roll."""
    variant = _variant(ctx)
    chosen = strategy(tokens(ctx.args))
    state = ctx.state(f"variant.{variant.name}")
    record = await state.get(LAST_ROLL.format(user=ctx.message.user))
    request = variant.reroll_request(record, chosen)
    outcome = await ctx.roll(request)
    assert isinstance(outcome, V5Outcome | RouseOutcome)
    body = variant.compose([outcome], ctx.message.display_name, ctx.line.comment)
    return Reply(body, meta={"roll_id": new_roll_id(), "variant": variant.name})


async def rouse(ctx: CommandContext) -> Reply:
    """Rouse checks: one die each; every failure raises Hunger."""
    variant = _variant(ctx)
    limits = ctx.app.config.limits
    parsed = parse(tokens(ctx.args), ROUSE, max_options=limits.max_options)
    request = variant.build_rouse(parsed)
    if request.checks > limits.max_dice:
        raise UsageError(
            f"that is {request.checks} dice; a roll may have at most {limits.max_dice}"
        )
    outcome = await ctx.roll(request)
    assert isinstance(outcome, V5Outcome | RouseOutcome)
    body = variant.compose([outcome], ctx.message.display_name, ctx.line.comment)
    return Reply(body, meta={"roll_id": new_roll_id(), "variant": variant.name})


COMMANDS = [
    Command(
        name="reroll",
        summary="spend Willpower: re-roll as many as three regular dice of your last roll",
        usage=REROLL_USAGE,
        handler=reroll,
        variants=("v5",),
        details=(
            "failures (default): the failed dice; crits: dice that are not 10s, failures "
            "first; messy: the regular 10s of a messy critical; risky: those 10s, then "
            "failures. Never Hunger dice, checks, tracker rolls, or a roll already re-rolled."
        ),
    ),
    Command(
        name="rouse",
        summary="rouse checks: one die each, 6+ passes, otherwise Hunger rises",
        usage=ROUSE_USAGE,
        handler=rouse,
        variants=("v5",),
        details="Give your Hunger (`h2`) and the reply says what it becomes.",
    ),
]
