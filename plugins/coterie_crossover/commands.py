"""The crossover chat commands: ``!multi`` (split the smallest pool) and ``!move`` (movement)."""

from __future__ import annotations

import re

from coterie.errors import UsageError
from coterie.framework.commands import Command, CommandContext
from coterie.framework.grammar import Pool, PoolTerm, number, parse_pool, shorten, suggest, tokens
from coterie.records import dataclass
from coterie.render.elements import BR, Node, Reply, Text, bold, code, italic
from coterie.rulekit.pools import checked_pool, plural
from coterie_crossover import rules
from coterie_crossover.movement import MOVE_USAGE, move
from coterie_crossover.requests import CrossoverRequest, Side
from coterie_crossover.variant import CrossoverOutcome

# --- !multi: the smallest pool, split among the actions -------------------------------------

MULTI_USAGE = "!multi POOL POOL [POOL ...] [split N N ...] [diff D [D ...]] [wp K] [# comment]"
_KEYWORDS = ("split", "diff", "wp")
_POOL_TOKEN = re.compile(r"[0-9][0-9+-]*", re.ASCII)
_NUMBER_TOKEN = re.compile(r"[0-9]+", re.ASCII)


@dataclass(frozen=True)
class MultiPlan:
    """A turn of multiple actions as declared: each action's pool, share and difficulty."""

    written: tuple[Pool, ...]
    pools: tuple[int, ...]
    shares: tuple[int, ...]
    difficulties: tuple[int, ...]
    #: the action (1-based) the Willpower point goes to, if any
    willpower: int | None = None
    #: the player chose the split (else it is the even one)
    chosen: bool = False

    @property
    def smallest(self) -> int:
        return rules.smallest_pool(self.pools)

    def requests(self) -> list[CrossoverRequest]:
        return [
            CrossoverRequest(
                actor=Side(Pool.of(share), share, difficulty, willpower=self.willpower == action)
            )
            for action, (share, difficulty) in enumerate(
                zip(self.shares, self.difficulties, strict=True), start=1
            )
        ]


def _numbers(words: list[str], index: int, what: str) -> tuple[list[int], int]:
    """The run of plain numbers from ``index``; where it ends."""
    values: list[int] = []
    while index < len(words) and _NUMBER_TOKEN.fullmatch(words[index]):
        values.append(number(words[index], what))
        index += 1
    return values, index


def _read_multi(words: list[str]) -> tuple[list[Pool], dict[str, list[int]]]:
    written: list[Pool] = []
    lists: dict[str, list[int]] = {}
    index = 0
    while index < len(words):
        word = words[index].lower()
        index += 1
        if word in ("split", "diff"):
            if word in lists:
                raise UsageError(f"`{word}` is given twice")
            values, index = _numbers(words, index, f"`{word}`")
            if not values:
                example = "split 3 2" if word == "split" else "diff 6 or diff 6 8"
                raise UsageError(f"`{word}` needs numbers after it, e.g. `{example}`")
            lists[word] = values
        elif word == "wp":
            if "wp" in lists:
                raise UsageError("Willpower can be spent only once per turn: one `wp K` at most")
            values, index = _numbers(words, index, "`wp`")
            if len(values) != 1:
                raise UsageError(
                    "`wp` needs the number of the one action it helps, e.g. `wp 2` "
                    "(Willpower is spent once per turn)"
                )
            lists["wp"] = values
        elif word in rules.TEN_POINT_TRAITS or _POOL_TOKEN.fullmatch(word):
            if lists:
                raise UsageError(
                    f"the pools come first, then `split`, `diff` and `wp`; "
                    f"`{shorten(words[index - 1])}` comes too late"
                )
            if word in rules.TEN_POINT_TRAITS:
                if index >= len(words) or not _POOL_TOKEN.fullmatch(words[index]):
                    raise UsageError(f"`{word}` needs its rating after it, e.g. `{word} 6`")
                first, *others = parse_pool(words[index]).terms
                index += 1
                written.append(Pool((PoolTerm(first.dice, 1, word), *others)))
            else:
                written.append(parse_pool(word))
        else:
            close = suggest(word, [*_KEYWORDS, *rules.TEN_POINT_TRAITS])
            hint = f" Did you mean `{close}`?" if close else ""
            raise UsageError(f"unknown word `{shorten(words[index - 1])}`.{hint}")
    return written, lists


def plan_multi(
    words: list[str], default_difficulty: int, max_actions: int, prefix: str = "!"
) -> MultiPlan:
    """Read and check a ``!multi`` request; nothing is rolled when it fails."""
    if not words:
        raise UsageError(f"give each action's dice pool, e.g. `{prefix}multi 7 6 5 split 2 2 1`")
    written, lists = _read_multi(words)
    if len(written) < 2:
        raise UsageError(
            "multiple actions means at least two pools, one per action (a single action is a "
            f"plain `{prefix}roll`)"
        )
    if len(written) > max_actions:
        raise UsageError(f"that is {len(written)} actions; at most {max_actions} in one turn")
    pools: list[int] = []
    for action, pool in enumerate(written, start=1):
        try:
            pools.append(
                checked_pool(
                    pool,
                    max_traits=rules.MAX_TRAITS_IN_POOL,
                    ten_point_traits=rules.TEN_POINT_TRAITS,
                )
            )
        except UsageError as error:
            error.message = f"action {action}: {error.message}"
            raise
    try:
        shares = rules.split_pool(pools, lists.get("split"))
    except rules.AllocationError as error:
        raise UsageError(str(error)) from None
    difficulties = _difficulties(lists.get("diff"), len(pools), default_difficulty)
    willpower = None
    if "wp" in lists:
        willpower = lists["wp"][0]
        if not 1 <= willpower <= len(pools):
            raise UsageError(
                f"`wp {willpower}`: the Willpower point goes to one of the actions, "
                f"1 to {len(pools)}"
            )
    return MultiPlan(
        written=tuple(written),
        pools=tuple(pools),
        shares=tuple(shares),
        difficulties=tuple(difficulties),
        willpower=willpower,
        chosen="split" in lists,
    )


def _difficulties(given: list[int] | None, actions: int, default: int) -> list[int]:
    if given is None:
        return [default] * actions
    if len(given) not in (1, actions):
        raise UsageError(
            f"`diff` gives {len(given)} difficulties for {actions} actions: give one for all of "
            "them, or one per action"
        )
    low, high = rules.MIN_DIFFICULTY, rules.MAX_DIFFICULTY
    for value in given:
        if not low <= value <= high:
            raise UsageError(f"a difficulty must be between {low} and {high}, not {value}")
    return given * actions if len(given) == 1 else list(given)


async def multi(ctx: CommandContext) -> Reply:
    """Several actions in one turn: the smallest pool is shared among them."""
    variant = ctx.variant
    limits = ctx.app.config.limits
    default = variant.room_difficulty(ctx.settings) or rules.DEFAULT_DIFFICULTY
    plan = plan_multi(tokens(ctx.args), default, limits.max_rolls_per_message, ctx.settings.prefix)
    if plan.smallest > limits.max_dice:
        raise UsageError(f"that is {plan.smallest} dice; a turn may roll at most {limits.max_dice}")
    body: list[Node] = [bold(ctx.message.display_name)]
    if ctx.line.comment:
        body += [Text(" — "), italic(ctx.line.comment)]
    actions = len(plan.pools)
    pools_text = ", ".join(str(p) for p in plan.pools)
    body += [
        BR,
        Text(f"{actions} actions share the smallest pool, "),
        bold(plural(plan.smallest, "dice")),
        Text(f" (of {pools_text}): " + " + ".join(str(s) for s in plan.shares)),
    ]
    if not plan.chosen:
        body += [Text(" — an even split; choose your own with "), code("split")]
    for action, (written, request) in enumerate(
        zip(plan.written, plan.requests(), strict=True), start=1
    ):
        outcome = await ctx.roll(request)
        assert isinstance(outcome, CrossoverOutcome)
        body += [BR, Text(f"Action {action} (pool {written}): "), *outcome.render()]
    return Reply(body, meta={"variant": variant.name})


# --- the command list -------------------------------------------------------------------------

COMMANDS = [
    Command(
        name="multi",
        summary="multiple actions: the smallest pool is split among them as you choose",
        usage=MULTI_USAGE,
        examples=("!multi 7 6 5", "!multi 7 6 5 split 2 2 1 diff 6 8 8"),
        handler=multi,
        variants=("crossover",),
        details=(
            "List each action's pool, then how the smallest pool's dice are shared: "
            "`!multi 7 6 5 split 2 2 1` (the shares must add up to the smallest pool; "
            "an even split without `split`). `diff 6 8 8` sets each action's difficulty "
            "(one number: all of them); `wp 2` spends the turn's one Willpower point on "
            "action 2. Extra actions from Rage are not split: roll them with `!roll`."
        ),
    ),
    Command(
        name="move",
        summary="movement: distance per turn, Injured, Stamina, and moving while acting",
        usage=MOVE_USAGE,
        examples=("!move run dex 3", "!move walk injured"),
        handler=move,
        variants=("crossover",),
        details=(
            "walk 7 yards; jog 12 + Dexterity; run 20 + 3 × Dexterity; swim 8 + Dexterity "
            "(12 + Dexterity `skilled`); fly 10 to 20 (`speed N`); climb 10 feet per success "
            "(`ideal` 15-20, `poor` 5; `successes N`). `injured` halves the rate and `push` "
            "rolls the greater of Stamina and Willpower (difficulty 6, less `wound N`) to move "
            "freely; `stamina N` gives ten turns of full speed per dot; `yards N` is how far "
            "you move while also acting: each yard beyond half the running distance costs a die."
        ),
    ),
]
