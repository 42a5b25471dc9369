"""The v5 commands besides ``!roll``: ``!reroll`` (a Willpower re-roll of the caller's last roll),
``!rouse`` (rouse checks) and v5's ``!odds`` (the core one, plus the odds of re-rolling the last
roll)."""

from __future__ import annotations

import time
from fractions import Fraction
from typing import Any

from coterie.dice.odds import Distribution, off_loop, percent
from coterie.errors import UsageError
from coterie.framework.commands import Command, CommandContext, ContestSides
from coterie.framework.grammar import Grammar, Option, Positional, parse, shorten, suggest, tokens
from coterie.render.elements import BR, Actions, Button, Node, Reply, Text, bold, italic
from coterie.rulekit.odds import odds_reply
from coterie.rulekit.pools import plural
from coterie_v5 import rules
from coterie_v5.requests import RerollRequest
from coterie_v5.variant import HUNGER, LAST_ROLL, REROLL_BUTTONS, RouseOutcome, V5Outcome, V5Variant

REROLL_USAGE = "!reroll [failures|crits|messy|risky | FACE [FACE [FACE]]] [# comment]"
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


def chosen_faces(words: list[str]) -> tuple[int, ...] | None:
    """The faces of the dice the player picked (``!reroll 3 4``), or ``None`` when the words are
    no faces (a strategy, or nothing)."""
    if not words or not all(word.isascii() and word.isdigit() for word in words):
        return None
    faces = tuple(int(word) for word in words)
    wrong = next((face for face in faces if not 1 <= face <= 10), None)
    if wrong is not None:
        raise UsageError(f"a die shows 1 to 10, not {shorten(str(wrong))}", usage=REROLL_USAGE)
    return faces


def strategy(words: list[str]) -> rules.Strategy:
    """The re-roll strategy named by the command's words (default: re-roll failures)."""
    if not words:
        return rules.Strategy.FAILURES
    if len(words) > 1:
        raise UsageError(
            "a re-roll takes one strategy (failures, crits, messy or risky) or the faces of up "
            f"to {rules.REROLL_LIMIT} of your regular dice, e.g. `!reroll 3 5`"
        )
    word = words[0].lower()
    if word in STRATEGY_WORDS:
        return STRATEGY_WORDS[word]
    close = suggest(word, list(STRATEGY_WORDS))
    hint = f" Did you mean `{close}`?" if close else ""
    raise UsageError(
        f"there is no re-roll strategy `{shorten(word)}`.{hint} Choose failures (the default), "
        "crits (maximise criticals), messy (avoid a messy critical) or risky"
    )


#: a Willpower re-roll follows the roll it changes: it lapses this long after the roll (or when
#: the session it was made in ends), see docs/rules/v5.md
REROLL_WINDOW = 15 * 60


def check_fresh(record: Any, session: str | None, now: float) -> None:
    """Refuse a re-roll of a roll made in another session, or longer ago than
    :data:`REROLL_WINDOW` (a record without a time, kept before times were, has lapsed)."""
    if not isinstance(record, dict) or record.get("kind") != "roll":
        return  # reroll_request says what is wrong with it
    if record.get("session") != session:
        raise UsageError(
            "your last roll was made in another session; a Willpower re-roll comes right after "
            "the roll it changes"
        )
    made = record.get("time")
    if not isinstance(made, int | float) or now - made > REROLL_WINDOW:
        raise UsageError(
            f"your last roll was too long ago (a re-roll lapses {REROLL_WINDOW // 60} minutes "
            "after the roll); roll again"
        )


async def _last_roll(ctx: CommandContext, variant: V5Variant) -> Any:
    state = ctx.state(f"variant.{variant.name}")
    record = await state.get(LAST_ROLL.format(user=ctx.message.user))
    check_fresh(record, ctx.session, time.time())
    return record


async def reroll(ctx: CommandContext) -> Reply:
    """Spend Willpower: throw again as many as three regular dice of the caller's last roll (in
    a contest between two chat users, of the caller's own side; the verdict is worked out
    again for both)."""
    variant = _variant(ctx)
    words = tokens(ctx.args)
    faces = chosen_faces(words)
    chosen = rules.Strategy.CHOSEN if faces is not None else strategy(words)
    record = await _last_roll(ctx, variant)
    request = variant.reroll_request(record, chosen, faces or ())
    chances = await _reroll_chances(variant, request)
    sides = None
    who = ctx.message.display_name
    if request.side == "opponent" or isinstance(record.get("contest"), dict):
        try:
            sides = ContestSides(**{**record["contest"], "only": request.side})
        except (KeyError, TypeError):
            raise UsageError("I cannot read your last roll any more; please roll again") from None
        who = f"{sides.actor_name} vs {sides.opponent_name}"
    outcome = await ctx.roll(request, sides)
    assert isinstance(outcome, V5Outcome | RouseOutcome)
    body = variant.compose([outcome], who, ctx.line.comment)
    if chances is not None:
        body.append(Text(f" Chance of success was {chances[0]}, now {chances[1]}."))
    if sides is not None and isinstance(outcome, V5Outcome):
        winner = sides.actor_name if outcome.verdict.win else sides.opponent_name
        body += [
            BR,
            Text(f"Contest (after {ctx.message.display_name}'s Willpower re-roll): "),
            bold(winner),
            Text(" wins."),
        ]
    return Reply(body, meta={"variant": variant.name})


async def _reroll_chances(variant: V5Variant, request: RerollRequest) -> tuple[str, str] | None:
    """The chance of success the roll had when it was made, and the chance this re-roll of it
    gives (exact), as percentages; ``None`` for a rule set built on v5 without odds of its own."""
    try:
        before = await off_loop(variant.odds, request.base)
        after = await off_loop(variant.odds, request)
    except UsageError:
        return None
    if request.side == "opponent":  # the answerer's chance is the challenger's to lose
        return percent(1 - before.win), percent(1 - after.win)
    return percent(before.win), percent(after.win)


async def odds(ctx: CommandContext) -> Reply:
    """``!odds`` in v5 rooms: as everywhere, plus ``!odds reroll`` alone — the odds of each
    Willpower re-roll of the caller's last roll, before spending the point."""
    if [word.lower() for word in tokens(ctx.args)] != ["reroll"]:
        return await odds_reply(ctx)
    variant = _variant(ctx)
    record = await _last_roll(ctx, variant)
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
        mine = roll.opponent if request.side == "opponent" else roll.actor
        regular = mine.regular if mine is not None else ()
        dice = " ".join(str(regular[index]) for index in request.indexes)
        if request.side == "opponent":  # the answerer wins when the challenger does not
            chance = f"chance of winning the contest {percent(1 - after.win)}"
            lines += [BR, bold(label), Text(f" ({dice}): {chance}")]
        else:
            lines += [BR, bold(label), Text(f" ({dice}): chance of success {percent(after.win)}")]
            lines.append(Text(f", of a critical {percent(_criticals(after))}"))
        buttons.append(Button(label, f"!reroll {choice.value}"))
    if roll is None:  # no strategy applies: say why (the first reason is about the roll itself)
        raise UsageError(refusals[0], usage=REROLL_ODDS_USAGE)
    head: list[Node] = [bold("Willpower re-roll odds"), Text(" for your last roll, now a ")]
    if isinstance(record, dict) and record.get("side") == "opponent" and roll.opponent:
        result = "lost" if roll.verdict.win else "won"
        head += [
            bold(f"{result} contest"),
            Text(f" ({plural(roll.opponent.successes, 'success')})"),
        ]
    else:
        result = roll.outcome.replace("_", " ")
        head += [bold(result), Text(f" ({plural(roll.successes, 'success')})")]
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
    if parsed.int("hunger") is None:  # the active character's Hunger, which the checks raise
        sheet = await ctx.app.host.first_result("coterie_active_character", ctx=ctx)
        if sheet is not None and "Hunger" in sheet.trackers:
            parsed.values["hunger"] = sheet.trackers["Hunger"]
    request = variant.build_rouse(parsed, ctx.settings)
    if request.checks > limits.max_dice:
        raise UsageError(
            f"that is {request.checks} dice; a roll may have at most {limits.max_dice}"
        )
    outcome = await ctx.roll(request)
    assert isinstance(outcome, V5Outcome | RouseOutcome)
    body = variant.compose([outcome], ctx.roller_name, ctx.line.comment)
    return Reply(body, meta={"variant": variant.name})


REROLL_ODDS_USAGE = "!odds reroll"

COMMANDS = [
    Command(
        name="reroll",
        summary="spend Willpower: re-roll as many as three regular dice of your last roll",
        usage=REROLL_USAGE,
        examples=("!roll 12 0 2\n!reroll", "!roll 12 0 2\n!reroll crits"),
        handler=reroll,
        variants=("v5",),
        details=(
            "Name the dice by their faces (`!reroll 8 1`: the regular 8 and the regular 1), "
            "or let a strategy pick them: failures (default): the failed dice; crits: dice "
            "that are not 10s, failures first; messy: the regular 10s of a messy critical; "
            "risky: those 10s, then failures. Never Hunger dice, checks, tracker rolls, or a "
            "roll already re-rolled."
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
        details="Give your Hunger (`h2`) and the reply says what it becomes. The Storyteller "
        "rouses an NPC's Blood with `!npc rouse NAME [N]` (its sheet's Hunger moves).",
        for_npcs=True,
    ),
]
