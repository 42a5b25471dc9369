"""The ``cofd`` rule set as a coterie variant: chat grammar, requests, outcomes, rendering.

Written only against coterie's public modules (docs/writing_plugins.md, "Checklist").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from coterie.dice.exploding import TAIL_BOUND
from coterie.dice.odds import Distribution
from coterie.dice.sources import DiceSource, ReplayDice
from coterie.errors import UsageError
from coterie.framework.grammar import Grammar, Option, Parsed, Positional
from coterie.framework.variant import HouseRule, Outcome, OutcomeKind, RoomSettings, Variant
from coterie.render.elements import BR, Die, Node, Role, Text, bold, code
from coterie_cofd import rules
from coterie_cofd.odds import odds as exact_odds
from coterie_cofd.requests import CofdRequest

USAGE = "!roll POOL [9again|8again|noagain] [rote] [wp] [# comment]"

GRAMMAR = Grammar(
    usage=USAGE,
    positionals=(
        Positional(
            "pool",
            "dice pool: Attribute + Skill + modifiers, e.g. 6 or 3+2-1; 0 or less: a chance die",
            kind="pool",
            required=True,
        ),
    ),
    options=(
        Option("9again", "flag", "9-again: a 9 or 10 adds a die", aliases=("9-again",)),
        Option("8again", "flag", "8-again: an 8, 9 or 10 adds a die", aliases=("8-again",)),
        Option(
            "noagain",
            "flag",
            "no 10-again: no die adds a die",
            aliases=("no-again", "no10again", "no-10-again"),
        ),
        Option("rote", "flag", "a rote action: failed dice of the pool are rolled once more"),
        Option("wp", "flag", "spend Willpower: +3 dice", aliases=("willpower",), key="willpower"),
    ),
)

_AGAIN_FLAGS = {"9again": 9, "8again": 8, "noagain": None}


@dataclass(frozen=True)
class CofdOutcome(Outcome):
    request: CofdRequest
    roll: rules.Roll
    variant: str = "cofd"

    @property
    def faces(self) -> tuple[int, ...]:  # type: ignore[override]
        return self.roll.faces

    @property
    def outcome(self) -> str:  # type: ignore[override]
        return self.roll.outcome

    @property
    def successes(self) -> int:  # type: ignore[override]
        return self.roll.successes

    @property
    def degree(self) -> str | None:  # type: ignore[override]
        return "exceptional" if self.roll.outcome == rules.EXCEPTIONAL_SUCCESS else None

    def extra_json(self) -> dict[str, Any]:
        request = self.request
        return {
            "pool": request.pool,
            "written_pool": request.written,
            "again": request.again,
            "rote": request.rote,
            "willpower": request.willpower,
            "chance": request.chance,
            "chance_again": request.chance_again,
            "sources": [die.source for die in self.roll.dice],
        }

    def render(self) -> list[Node]:
        return render(self)


def _role(die: rules.Die, outcome: str) -> Role:
    if die.source == rules.CHANCE and outcome == rules.DRAMATIC_FAILURE:
        return Role.BOTCH
    if die.explodes:
        return Role.CRITICAL
    if die.success:
        return Role.SUCCESS
    return Role.CANCELLED if die.rerolled else Role.FAILURE


def render(outcome: CofdOutcome) -> list[Node]:
    roll = outcome.roll
    by_source: dict[str, list[Node]] = {}
    for die in roll.dice:
        by_source.setdefault(die.source, []).append(Die(die.face, _role(die, roll.outcome)))
    line: list[Node] = [Text(f"{outcome.request.describe()}: ")]
    for source, label in (
        (rules.CHANCE, ""),
        (rules.POOL, ""),
        (rules.ROTE, " · rote "),
        (rules.AGAIN, " · again "),
    ):
        dice = by_source.get(source)
        if not dice:
            continue
        line.append(Text(label))
        for index, shown in enumerate(dice):
            line += [Text(" ")] if index else []
            line.append(shown)
    n = roll.successes
    count = f"{n} success{'es' if n != 1 else ''}"
    if roll.outcome == rules.EXCEPTIONAL_SUCCESS:
        result: list[Node] = [bold("Exceptional success!"), Text(f" {count}")]
    elif roll.outcome == rules.SUCCESS:
        result = [bold(count.capitalize())]
    elif roll.outcome == rules.DRAMATIC_FAILURE:
        result = [bold("Dramatic failure!"), Text(" The chance die shows 1.")]
    else:
        result = [bold("Failure")]
    return [*line, BR, *result]


class CofdVariant(Variant[CofdRequest, CofdOutcome]):
    name = "cofd"
    title = "Chronicles of Darkness (2nd edition)"
    summary = (
        "d10 pool, each die at 8 or more is a success; 10-again (9again, 8again, noagain), "
        "rote, Willpower +3 dice; a pool of 0 or less rolls a chance die; 5 successes are "
        "exceptional."
    )
    default_difficulty = None
    difficulty_range = (8, 8)
    grammar = GRAMMAR
    #: ``!roll`` written right, for help and errors that teach
    examples = ("5", "3+2 9again")
    #: the odds leave out less than this (``[plugins.settings.cofd] tail_bound``, set at start)
    tail_bound = TAIL_BOUND
    house_rules = (
        HouseRule(
            "chance_again",
            False,
            "a chance die's 10 adds a die (10-again), which succeeds on 8 or more as usual",
        ),
    )
    outcome_kinds = (
        OutcomeKind(rules.EXCEPTIONAL_SUCCESS, win=True, flags=frozenset({"exceptional"})),
        OutcomeKind(rules.SUCCESS, win=True),
        OutcomeKind(rules.FAILURE),
        OutcomeKind(rules.DRAMATIC_FAILURE, flags=frozenset({"botch"})),
    )

    def build(self, parsed: Parsed, settings: RoomSettings) -> CofdRequest:
        pool = parsed.pool()
        if pool is None:
            raise UsageError("the pool is missing")
        chosen = [word for word in _AGAIN_FLAGS if parsed.flag(word)]
        if len(chosen) > 1:
            raise UsageError(f"one again rule per roll: `{chosen[0]}` or `{chosen[1]}`, not both")
        again = _AGAIN_FLAGS[chosen[0]] if chosen else 10
        willpower = parsed.flag("willpower")
        dice = pool.total + (rules.WILLPOWER_DICE if willpower else 0)
        chance_again = bool(settings.rule(self, "chance_again"))
        return CofdRequest(str(pool), dice, again, parsed.flag("rote"), willpower, chance_again)

    def dice_count(self, request: CofdRequest) -> int:
        """The pool's dice (the chance die is one); again and rote draw more as they go."""
        return max(request.pool, 1)

    def roll(self, request: CofdRequest, dice: DiceSource) -> CofdOutcome:
        played = rules.roll(
            request.pool,
            request.again,
            request.rote,
            lambda n: dice.roll(n, rules.SIDES),
            chance_again=request.chance_again,
        )
        return CofdOutcome(request, played, variant=self.name)

    def evaluate(self, request: CofdRequest, faces: Sequence[int]) -> CofdOutcome:
        """Replay given faces: every die in the order rolled (see :mod:`coterie_cofd.rules`)."""
        return ReplayDice.replay(faces, lambda source: self.roll(request, source))

    def odds(self, request: CofdRequest, options: frozenset[str] = frozenset()) -> Distribution:
        if type(self).evaluate is not CofdVariant.evaluate or type(self).roll is not (
            CofdVariant.roll
        ):
            raise UsageError(f"the {self.name} rules count rolls their own way")
        return exact_odds(request, self.tail_bound)

    def help(self) -> list[Node]:
        return [
            code(USAGE),
            BR,
            Text(self.summary),
            BR,
            Text("Dice shown: the pool, then rote re-rolls, then dice added by again rules."),
        ]
