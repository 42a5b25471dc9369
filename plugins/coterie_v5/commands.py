"""The v5 commands besides ``!roll``: ``!reroll`` (a Willpower re-roll of the caller's last roll),
``!rouse`` (rouse checks) and v5's ``!odds`` (the core one, plus the odds of re-rolling the last
roll)."""

from __future__ import annotations

from fractions import Fraction

from coterie.dice.odds import Distribution, off_loop, percent
from coterie.errors import UsageError
from coterie.framework.commands import Command, CommandContext
from coterie.framework.grammar import Grammar, Option, Positional, parse, shorten, suggest, tokens
from coterie.render.elements import BR, Actions, Button, Node, Reply, Text, bold, italic
from coterie.rulekit.odds import odds_reply
from coterie.rulekit.pools import plural
from coterie_v5 import rules
from coterie_v5.requests import RerollRequest
from coterie_v5.variant import HUNGER, LAST_ROLL, REROLL_BUTTONS, RouseOutcome, V5Outcome, V5Variant

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
    chances = await _reroll_chances(variant, request)
    outcome = await ctx.roll(request)
    assert isinstance(outcome, V5Outcome | RouseOutcome)
    body = variant.compose([outcome], ctx.message.display_name, ctx.line.comment)
    if chances is not None:
        body.append(Text(f" Chance of success was {chances[0]}, now {chances[1]}."))
    return Reply(body, meta={"variant": variant.name})


async def _reroll_chances(variant: V5Variant, request: RerollRequest) -> tuple[str, str] | None:
    """The chance of success the roll had when it was made, and the chance this re-roll of it
    gives (exact), as percentages; ``None`` for a rule set built on v5 without odds of its own."""
    try:
        before = await off_loop(variant.odds, request.base)
        after = await off_loop(variant.odds, request)
    except UsageError:
        return None
    return percent(before.win), percent(after.win)


async def odds(ctx: CommandContext) -> Reply:
    """``!odds`` in v5 rooms: as everywhere, plus ``!odds reroll`` alone — the odds of each
    Willpower re-roll of the caller's last roll, before spending the point."""
    if [word.lower() for word in tokens(ctx.args)] != ["reroll"]:
        return await odds_reply(ctx)
    variant = _variant(ctx)
    state = ctx.state(f"variant.{variant.name}")
    record = await state.get(LAST_ROLL.format(user=ctx.message.user))
    lines: list[Node] = []
    buttons: list[Button] = []
    refusals: list[str] = []
    roll: V5Outcome | None = None
    for choice, label in REROLL_BUTTONS:
        try:
            request = variant.reroll_request(record, choice)
        except UsageError as error:
            refusals.append(error.message)
            continue
        if roll is None:
            first = variant.evaluate(request.base, request.faces)
            assert isinstance(first, V5Outcome)
            roll = first
        after = await off_loop(variant.odds, request)
        dice = " ".join(str(roll.faces[index]) for index in request.indexes)
        lines += [BR, bold(label), Text(f" ({dice}): chance of success {percent(after.win)}")]
        lines.append(Text(f", of a critical {percent(_criticals(after))}"))
        buttons.append(Button(label, f"!reroll {choice.value}"))
    if roll is None:  # no strategy applies: say why (the first reason is about the roll itself)
        raise UsageError(refusals[0], usage=REROLL_ODDS_USAGE)
    head: list[Node] = [bold("Willpower re-roll odds"), Text(" for your last roll, now a ")]
    head += [bold(roll.outcome.replace("_", " ")), Text(f" ({plural(roll.successes, 'success')})")]
    if ctx.line.comment:
        head += [Text(" — "), italic(ctx.line.comment)]
    body = [*head, *lines, BR, Actions(tuple(buttons))]
    return Reply(body, meta={"variant": variant.name})


def _criticals(dist: Distribution) -> Fraction:
    return dist.outcomes["critical"] + dist.outcomes["messy_critical"]


async def rouse(ctx: CommandContext) -> Reply:
    """Rouse checks: one die each; every failure raises Hunger."""
    variant = _variant(ctx)
    limits = ctx.app.config.limits
    parsed = parse(tokens(ctx.args), ROUSE, max_options=limits.max_options)
    request = variant.build_rouse(parsed, ctx.settings)
    if request.checks > limits.max_dice:
        raise UsageError(
            f"that is {request.checks} dice; a roll may have at most {limits.max_dice}"
        )
    outcome = await ctx.roll(request)
    assert isinstance(outcome, V5Outcome | RouseOutcome)
    body = variant.compose([outcome], ctx.message.display_name, ctx.line.comment)
    return Reply(body, meta={"variant": variant.name})


REROLL_ODDS_USAGE = "!odds reroll"

COMMANDS = [
    Command(
        name="reroll",
        summary="spend Willpower: re-roll as many as three regular dice of your last roll",
        usage=REROLL_USAGE,
        examples=("!roll 5 0 2\n!reroll", "!roll 5 0 2\n!reroll crits"),
        handler=reroll,
        variants=("v5",),
        details=(
            "failures (default): the failed dice; crits: dice that are not 10s, failures "
            "first; messy: the regular 10s of a messy critical; risky: those 10s, then "
            "failures. Never Hunger dice, checks, tracker rolls, or a roll already re-rolled."
        ),
    ),
    Command(
        name="odds",
        summary="the exact chances of a roll, before you roll it (or of re-rolling your last)",
        usage="!odds POOL [HUNGER] [DIFFICULTY] [options] [reroll] [chart] [# comment]",
        examples=("!odds {roll}", "!odds 5 1 2 reroll"),
        handler=odds,
        variants=("v5",),
        details=(
            "Written like !roll; nothing is rolled. Shows the chance of each result, the most "
            "likely numbers of successes and the average; add `chart` for a bar chart, `reroll` "
            "for the odds if you will re-roll failures with Willpower when the roll fails. "
            "`!odds reroll` alone: the odds of each Willpower re-roll of your last roll."
        ),
    ),
    Command(
        name="rouse",
        summary="rouse checks: one die each, 6+ passes, otherwise Hunger rises",
        usage=ROUSE_USAGE,
        examples=("!rouse", "!rouse 2 h2"),
        handler=rouse,
        variants=("v5",),
        details="Give your Hunger (`h2`) and the reply says what it becomes.",
    ),
]
