"""``!contest`` and ``!initiative``: the d6 commands besides ``!roll``."""

from __future__ import annotations

from coterie.errors import UsageError
from coterie.framework.commands import Command, CommandContext
from coterie.framework.grammar import Grammar, Parsed, parse, tokens
from coterie.render.elements import Reply
from coterie_d6 import rules
from coterie_d6.initiative import INITIATIVE_USAGE, combatant
from coterie_d6.requests import D6Request, InitiativeRequest
from coterie_d6.variant import DIFF, DIFFICULTY, NEED, POOL, SEESAW, VERSUS, D6Outcome, D6Variant

CONTEST_USAGE = "!contest POOL [DIFFICULTY] vs POOL [to N] [# comment]"
#: ``need`` is known here only to be refused with the contest's own explanation
CONTEST_GRAMMAR = Grammar(
    usage=CONTEST_USAGE,
    positionals=(POOL, DIFFICULTY),
    options=(DIFF, SEESAW, NEED),
    versus=VERSUS,
    named_traits=rules.TRAITS,
    named_trait_rule=rules.ONE_TRAIT_RULE,
)


def _variant(ctx: CommandContext) -> D6Variant:
    variant = ctx.variant
    assert isinstance(variant, D6Variant)  # the commands are restricted to d6 rooms
    return variant


def _segments(ctx: CommandContext, usage: str, what: str, minimum: int) -> list[str]:
    """The ``;``-separated parts of the arguments, checked against the room's limits."""
    limit = ctx.app.config.limits.max_rolls_per_message
    parts = ctx.args.split(";")
    if not ctx.args.strip():
        raise UsageError(what, usage=usage)
    if any(not part.strip() for part in parts):
        raise UsageError("one of the parts between `;` is empty", usage=usage)
    if len(parts) < minimum:
        raise UsageError(f"give at least {minimum} sides separated by `;`", usage=usage)
    if len(parts) > limit:
        raise UsageError(f"that is {len(parts)} parts; at most {limit} in one message", usage=usage)
    return parts


async def _reply(ctx: CommandContext, requests: list[D6Request]) -> Reply:
    """Roll every request through the room (settle, after-roll hook) and compose one reply."""
    variant = _variant(ctx)
    outcomes: list[D6Outcome] = []
    for request in requests:
        outcome = await ctx.roll(request)
        assert isinstance(outcome, D6Outcome)
        outcomes.append(outcome)
    body = variant.compose(outcomes, ctx.message.display_name, ctx.line.comment)
    return Reply(body, meta={"variant": variant.name})


# --- !contest -------------------------------------------------------------------------------------


def between_pools(args: str) -> bool:
    """Whether ``!contest ARGS`` is this rule set's contest of two pools; ``!contest @user ...``
    (and ``cancel``, ``status``) is left to coterie's contest between chat users."""
    words = tokens(args)
    return not (
        words and (words[0].startswith(("@", "<@")) or words[0].lower() in ("cancel", "status"))
    )


async def contest(ctx: CommandContext) -> Reply:
    """Both sides roll at the same difficulty; the most successes wins; ties roll again."""
    variant = _variant(ctx)
    limits = ctx.app.config.limits
    requests: list[D6Request] = []
    for part in _segments(
        ctx, CONTEST_USAGE, "who contests whom? Give both sides, e.g. `!contest 4 vs 2`", 1
    ):
        parsed = parse(tokens(part), CONTEST_GRAMMAR, max_options=limits.max_options)
        if parsed.versus is None:
            raise UsageError(
                f"a contest needs the other side after `vs`, e.g. `!contest 4 vs 2`{_read(parsed)}",
                usage=CONTEST_USAGE,
            )
        request = variant.build(parsed, ctx.settings)
        count = variant.dice_count(request)
        if count > limits.max_dice:
            raise UsageError(
                f"that is {count} dice a round; a roll may have at most {limits.max_dice}",
                usage=CONTEST_USAGE,
            )
        requests.append(request)
    return await _reply(ctx, requests)


def _read(parsed: Parsed) -> str:
    difficulty = parsed.int("difficulty")
    return f" (I read `{difficulty}` as the difficulty)" if difficulty is not None else ""


# --- !initiative ----------------------------------------------------------------------------------


#: the words of coterie's initiative tracker (``!init add``, ``next``…), left to it
TRACKER_WORDS = ("add", "next", "remove", "drop", "end")


def one_message(args: str) -> bool:
    """Whether ``!initiative ARGS`` is this one-message ordering of all sides at once; a bare
    ``!init`` and the tracker's words are left to coterie's initiative tracker."""
    words = tokens(args)
    return bool(words) and words[0].lower() not in TRACKER_WORDS


async def initiative(ctx: CommandContext) -> Reply:
    """Who acts first: the ordered comparisons, then roll-offs for those tied on all of them."""
    limits = ctx.app.config.limits
    parts = _segments(
        ctx,
        INITIATIVE_USAGE,
        "who takes part? Give two sides or more, e.g. `!initiative Jack: P4 M3; Sabbat: P4 M1`",
        2,
    )
    combatants = [
        combatant(part, number, limits.max_options) for number, part in enumerate(parts, 1)
    ]
    seen: dict[str, str] = {}
    for one in combatants:
        key = one.name.casefold()
        if key in seen:
            raise UsageError(f"two sides are called {one.name}; give each its own name")
        seen[key] = one.name
    return await _reply(ctx, [InitiativeRequest(tuple(combatants))])


COMMANDS = [
    Command(
        name="contest",
        summary="a contest: both sides roll at the same difficulty, the most successes wins",
        usage=CONTEST_USAGE,
        examples=("!contest 5 vs 4", "!contest 5 4 vs 4 to 2"),
        handler=contest,
        variants=("d6",),
        applies=between_pools,
        details=(
            "The difficulty (default 4) goes before `vs` or as `diff D`; ties are rolled again "
            "until one side wins, and the defender's successes take away the attacker's. "
            "`to N` plays a seesaw contest: the first side N successes ahead wins. "
            "Several contests go in one message separated by `;`."
        ),
    ),
    Command(
        name="initiative",
        summary="who acts first: Hunter's Instinct, Celerity, Physical, Mental, then a die",
        usage=INITIATIVE_USAGE,
        examples=("!initiative Ana: P4 M3; Ben: P3 M1", "!initiative Ana: 4 3 hunter; Ben: 3 1"),
        handler=initiative,
        aliases=("init",),
        variants=("d6",),
        applies=one_message,
        details=(
            "Each side is `NAME: P<Physical> M<Mental>` (or `NAME: 4 3`), plus `hunter`, "
            "`celerity` or `advanced` for powers activated this turn. Sides tied on every "
            "comparison roll one die each until the tie is broken. Celerity's extra actions "
            "come after everyone's first action."
        ),
    ),
]
