"""Contests between two chat users: ``!contest @USER POOL [TARGET]``, answered by that user's
``!resist POOL``; with a TARGET the contest is extended (or a d6 seesaw) and goes on turn by turn.
The rules come from the room's rule set
(:meth:`~coterie.framework.variant.Variant.prepare_contest`), and so do the usage lines (a V5
pool takes Hunger, a revised one a difficulty). Each side's dice are settled and logged as its own
player's (:class:`~coterie.framework.commands.ContestSides`); a pool written by Trait name
(``!contest @bob Strength+Brawl``, ``!resist Dex+Athletics``) is read from that player's active
character when the answer is rolled. A built-in plugin."""

from __future__ import annotations

import re
import time
from typing import Any

from coterie.errors import UsageError
from coterie.framework.commands import (
    Command,
    CommandContext,
    ContestSides,
    new_roll_id,
    shorten_request,
)
from coterie.framework.grammar import Parsed, parse, shorten, tokens
from coterie.framework.variant import Standing, Variant
from coterie.hookimpl import hookimpl
from coterie.play.byname import SheetPools
from coterie.play.common import MAX_CONTESTS, actions_state, whole_number
from coterie.play.rooms import (
    is_mention,
    is_storyteller,
    mention_element,
    mention_key,
    mentions,
    names_person,
)
from coterie.play.roster import chronicle_of, templates
from coterie.render.elements import BR, Node, Reply, Text, bold, code
from coterie.storage import characters as store
from coterie.storage.state import RoomState

#: a contest waits this long for the next ``!resist`` before it lapses
CONTEST_TIMEOUT = 6 * 3600


CONTEST_USAGE = "!contest @USER POOL [DIFFICULTY] [TARGET] | cancel [@USER] | status"


RESIST_USAGE = "!resist POOL [DIFFICULTY]"

#: the parts of a rule set's ``vs`` usage a contest between chat users keeps for itself
_CONTEST_OWNED = re.compile(r"\s*\[(?:progress|to) [A-Z]+\]")


def _side_usage(variant: Variant[Any, Any]) -> str:
    """One side's pool as the rule set's ``vs`` grammar writes it (``POOL [HUNGER] ...``)."""
    versus = variant.grammar.versus
    if versus is None:
        return "POOL"
    return _CONTEST_OWNED.sub("", versus.usage.removeprefix("vs ")).strip()


def resist_usage(variant: Variant[Any, Any]) -> str:
    """``!resist``'s usage line in a room on ``variant``."""
    return f"!resist [@USER] {_side_usage(variant)}"


def contest_usage(variant: Variant[Any, Any]) -> str:
    """``!contest``'s usage line in a room on ``variant`` (TARGET only where contests may be
    extended)."""
    target = " [to TARGET]" if variant.extended_contests else ""
    return f"!contest @USER {_side_usage(variant)}{target} | cancel [@USER] | status"


# --- !contest @user / !resist ---------------------------------------------------------------------

_TARGET_WORDS = ("to", "target", "goal")


def _contest_target(words: list[str], usage: str) -> tuple[list[str], int | None]:
    """Take ``to N`` (or ``target N``, ``goal N``) out of a contest's words."""
    for index, word in enumerate(words[:-1]):
        if word.lower() in _TARGET_WORDS:
            target = whole_number(words[index + 1], "TARGET", 1, 100, usage)
            return words[:index] + words[index + 2 :], target
    return words, None


def _read_pool(
    ctx: CommandContext, words: list[str], versus: bool, reader: SheetPools | None = None
) -> Parsed:
    variant = ctx.variant
    grammar = variant.grammar.versus if versus else variant.grammar
    if grammar is None:
        raise UsageError(f"the {variant.name} rules have no contests between two characters")
    limit = ctx.app.config.limits.max_options
    if reader is None or not words:
        return parse(words, grammar, max_options=limit)
    named = any(c.isalpha() for c in words[0])
    parsed = parse(
        words, grammar, max_options=limit, pool=reader.read, preset=reader.preset if named else None
    )
    reader.check(parsed)
    return parsed


async def _reader(
    ctx: CommandContext, user: str, whose: str, words: list[str]
) -> SheetPools | None:
    """Reads a side's pool of Trait names (``!contest @bob Strength+Brawl``, ``!resist
    Dex+Athletics``) from ``user``'s active character; ``None`` for a pool in numbers."""
    template = templates(ctx.app).get(ctx.variant.name)
    grammar = ctx.variant.grammar
    first = words[0].lower() if words else ""
    if template is None or not any(c.isalpha() for c in first) or grammar.option(first):
        return None
    record = await store.load_player(ctx.store, chronicle_of(ctx), user)
    sheet = record["chars"].get(record.get("active") or "")
    if sheet is None:
        if first in grammar.named_traits:
            return None  # today's `willpower 7`, typed by hand
        raise UsageError(
            f"`{shorten(words[0])}` names Traits, and {whose} no active character here "
            f"(`{ctx.settings.prefix}char new NAME`; or give numbers, e.g. `3+2`)"
        )
    return SheetPools(ctx, template, sheet)


def _split_target(
    ctx: CommandContext, words: list[str], reader: SheetPools | None = None
) -> tuple[list[str], int | None]:
    """The challenger's pool and the contest's TARGET: ``to N``, or a last bare number the rule
    set's grammar has no room for."""
    usage = contest_usage(ctx.variant)
    words, target = _contest_target(words, usage)
    if target is not None:
        return words, target
    try:
        _read_pool(ctx, words, versus=False, reader=reader)
        return words, None
    except UsageError:
        if len(words) > 1 and words[-1].isdigit():
            # the error of the shorter pool, if any
            _read_pool(ctx, words[:-1], versus=False, reader=reader)
            return words[:-1], whole_number(words[-1], "TARGET", 1, 100, usage)
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


def _opponent(one: dict[str, Any], *, notify: bool = False) -> Node:
    """The challenged side as the reply shows it: the person mentioned, until they answer (then
    by the name they answered with)."""
    written = one.get("opponent_mention")
    if written and not one.get("opponent_user"):
        return mention_element(written, notify=notify)
    return bold(one["opponent_name"])


async def contest(ctx: CommandContext) -> list[Node]:
    words = tokens(ctx.args)
    state = actions_state(ctx)
    prefix = ctx.settings.prefix
    usage = contest_usage(ctx.variant)
    if not words or words[0].lower() == "status":
        open_ones = await _contests(state)
        if not open_ones:
            return [
                Text("No contest is waiting. "),
                code(f"{prefix}contest @USER {_side_usage(ctx.variant)}"),
                Text(" challenges someone."),
            ]
        body: list[Node] = [bold("Contests")]
        for one in open_ones:
            body += [
                BR,
                bold(one["challenger_name"]),
                Text(" vs "),
                _opponent(one),
                Text(f" — {_standing_text(one)}; waiting for "),
                _opponent(one),
                Text(" to "),
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
            raise UsageError("you have no contest waiting here", usage=usage)
        if len(mine) > 1:
            raise UsageError(
                "you have several contests waiting; name the other side, e.g. "
                "`!contest cancel @bob`",
                usage=usage,
            )
        await state.delete(f"contest:{mine[0]['id']}")
        return [
            Text("Contest "),
            bold(mine[0]["challenger_name"]),
            Text(" vs "),
            _opponent(mine[0]),
            Text(" cancelled."),
        ]
    if not is_mention(words[0]):
        raise UsageError(
            "whom do you challenge? Start with their @name, e.g. `!contest @bob 6 7`",
            usage=usage,
        )
    opponent = mention_key(words[0])
    if mentions(opponent, ctx.message):
        raise UsageError("you can't contest yourself")
    reader = await _reader(ctx, ctx.message.user, "you have", words[1:])
    shown = len(ctx.notes)
    pool_words, target = _split_target(ctx, words[1:], reader)
    if not pool_words:
        raise UsageError("give your dice pool, e.g. `!contest @bob 6 7`", usage=usage)
    _check_answerable(ctx, pool_words, target, reader)
    del ctx.notes[shown:]  # the pool by name is read from the sheet when the answer is rolled
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
        "opponent_mention": words[0],
        "pool": " ".join(pool_words),
        "target": target,
        "standing": same.get("standing") if same else None,
        "variant": ctx.variant.name,
        "touched": time.time(),
        "request": shorten_request(ctx.message.text),
    }
    await state.set(f"contest:{record['id']}", record)
    verb = "goes on" if same is not None and same.get("standing") else "is on"
    return [
        bold(ctx.message.display_name),
        Text(" challenges "),
        _opponent(record, notify=True),
        Text(f" ({_standing_text(record)}): the contest {verb}. The answer: "),
        code(resist_usage(ctx.variant).replace("!", prefix, 1)),
        Text("."),
    ]


#: the stand-in answer a challenge is checked against: one die, which every rule set's ``vs``
#: grammar reads
_STAND_IN = ["1"]


def _check_answerable(
    ctx: CommandContext, pool_words: list[str], target: int | None, reader: SheetPools | None
) -> None:
    """Refuse now a challenge nobody could answer: build the whole contest roll with a one-die
    stand-in for the other side, so the rule set's own checks (V5: a contest has no
    Difficulty) and the dice limit speak before the contest is stored."""
    variant = ctx.variant
    usage = contest_usage(variant)
    try:
        parsed = variant.prepare_contest(
            _read_pool(ctx, pool_words, versus=False, reader=reader),
            _read_pool(ctx, _STAND_IN, versus=True),
            target,
            None,
        )
        request = variant.build(parsed, ctx.settings)
    except UsageError as error:
        if error.usage is None or error.usage == variant.grammar.usage:
            error.usage = usage
        raise
    most = ctx.app.config.limits.max_dice
    if variant.dice_count(request) > most:
        raise UsageError(
            f"that pool leaves no room for the other side's dice: a roll may have at most "
            f"{most} dice, both sides together",
            usage=usage,
        )


async def resist(ctx: CommandContext) -> Reply:
    words = tokens(ctx.args)
    state = actions_state(ctx)
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
            usage=resist_usage(variant),
        )
    one = waiting[0]
    if one["variant"] != variant.name:
        raise UsageError(
            f"this contest began under the {one['variant']} rules; the room now "
            f"plays {variant.name}"
        )
    if not words:
        raise UsageError("give your dice pool, e.g. `!resist 5`", usage=resist_usage(variant))
    standing = Standing(**one["standing"]) if one.get("standing") else None
    # pools by name are read now, each from its own player's active character
    pool = tokens(one["pool"])
    whose = f"{one['challenger_name']} has"
    actor = _read_pool(ctx, pool, False, await _reader(ctx, one["challenger"], whose, pool))
    mine = await _reader(ctx, ctx.message.user, "you have", words)
    opponent = _read_pool(ctx, words, versus=True, reader=mine)
    parsed = variant.prepare_contest(actor, opponent, one.get("target"), standing)
    request = variant.build(parsed, ctx.settings)
    count = variant.dice_count(request)
    if count > ctx.app.config.limits.max_dice:
        raise UsageError(
            f"that is {count} dice; a roll may have at most {ctx.app.config.limits.max_dice}"
        )
    sides = ContestSides(
        contest=one["id"],
        actor=one["challenger"],
        actor_name=one["challenger_name"],
        actor_request=one.get("request", "!contest"),
        opponent=ctx.message.user,
        opponent_name=ctx.message.display_name,
    )
    outcome = await ctx.roll(request, sides)
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


def _has_contests(variant: Variant[Any, Any]) -> bool:
    """Whether two chat users can contest in this rule set (a ``vs`` grammar, or its own way)."""
    own = type(variant).prepare_contest is not Variant.prepare_contest
    return own or variant.grammar.versus is not None


@hookimpl
def coterie_commands() -> list[Command]:
    return [
        Command(
            name="contest",
            aliases=("challenge",),
            summary="challenge someone to a resisted (or extended) contest",
            usage=CONTEST_USAGE,
            supports=_has_contests,
            examples=(
                "alice: !contest @bob {pool}\nbob: !resist {pool}",
                "alice: !contest @bob {pool}\nalice: !contest status",
            ),
            usage_for=contest_usage,
            handler=contest,
            details=(
                "The other side answers with `!resist` and their own pool. Where the rules have "
                "extended contests, `to N` makes the contest go on turn by turn until "
                "someone gets there. Each side's dice are logged under its own player. A contest "
                f"lapses after {CONTEST_TIMEOUT // 3600} hours without a roll."
            ),
        ),
        Command(
            name="resist",
            summary="answer a contest someone challenged you to",
            usage=RESIST_USAGE,
            supports=_has_contests,
            examples=(
                "alice: !contest @bob {pool}\nbob: !resist {pool}",
                "alice: !contest @bob {pool}\nbob: !resist 3",
            ),
            usage_for=resist_usage,
            handler=resist,
        ),
    ]
