"""The ``d6`` rule set as a coterie variant: chat grammar, requests, outcomes and rendering.

The rules themselves are in :mod:`coterie_d6.rules`; this module turns chat (or CLI) arguments into
requests, plays them with those rules, and lays the results out as neutral reply elements.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from coterie.dice.odds import Distribution, require_rules
from coterie.dice.sources import DiceSource, ReplayDice
from coterie.errors import UsageError
from coterie.framework.grammar import Grammar, Option, Parsed, Positional
from coterie.framework.variant import (
    InitiativeEntry,
    Outcome,
    RoomSettings,
    SidePart,
    Standing,
    Variant,
)
from coterie.records import dataclass
from coterie.render.elements import BR, Die, Node, Role, Text, bold, code
from coterie.rulekit.pools import plural
from coterie_d6 import initiative, rules
from coterie_d6.initiative import extra_actions as celerity_actions
from coterie_d6.odds import odds as exact_odds
from coterie_d6.requests import (
    ContestRequest,
    D6Request,
    Difficulty,
    InitiativeRequest,
    RollRequest,
    TraitPool,
    difficulty_text,
)

#: the largest seesaw goal one message may play toward (see docs/rules/d6.md)
MAX_SEESAW_TARGET = 20


# --- chat grammar ---------------------------------------------------------------------------------

POOL = Positional(
    "pool",
    "the Trait rolled: its rating, e.g. 4, or its name too, e.g. social 4",
    kind="pool",
    required=True,
)


#: no range in the grammar: a difficulty above 6 is allowed (it counts as 6) and the check of
#: the low end lives in ``build``, so chat and ``coterie roll --difficulty`` say the same thing
DIFFICULTY = Positional("difficulty", "difficulty 2-6 (default 4); a higher number counts as 6")


DIFF = Option(
    "diff", "int", "the difficulty, as a keyword", key="difficulty", compact=True, metavar="D"
)


NEED = Option(
    "need",
    "int",
    "successes needed for the action to succeed (default 1)",
    aliases=("needs",),
    minimum=1,
    compact=True,
)


SEESAW = Option(
    "to",
    "int",
    "seesaw contest: the first side this many successes ahead wins",
    minimum=1,
    maximum=MAX_SEESAW_TARGET,
    compact=True,
)


#: ``need`` is known after ``vs`` too, so that misplacing it gets the contest's own explanation
VERSUS = Grammar(
    usage="vs POOL [DIFFICULTY] [to N]",
    positionals=(POOL, DIFFICULTY),
    options=(DIFF, SEESAW, NEED),
    named_traits=rules.TRAITS,
    named_trait_rule=rules.ONE_TRAIT_RULE,
)


#: where a seesaw contest across messages carries its balance into ``build`` (no chat word sets it)
CARRIED = "seesaw balance"


ROLL_USAGE = "!roll POOL [DIFFICULTY] [need N] [vs POOL [to N]] [# comment]"


#: two ``!roll`` calls written right, for help and for errors that teach
EXAMPLES = ("5 4", "4 5 need 2")

GRAMMAR = Grammar(
    example=EXAMPLES[0],
    usage=ROLL_USAGE,
    positionals=(POOL, DIFFICULTY),
    options=(DIFF, NEED, SEESAW),
    versus=VERSUS,
    named_traits=rules.TRAITS,
    named_trait_rule=rules.ONE_TRAIT_RULE,
)


# --- outcomes -------------------------------------------------------------------------------------


def _difficulty_json(difficulty: Difficulty) -> dict[str, Any]:
    return {"difficulty": difficulty.value, "asked_difficulty": difficulty.asked}


def _round_json(turn: rules.ContestRound) -> dict[str, Any]:
    return {
        "attacker": {"faces": list(turn.attacker.faces), "successes": turn.attacker.successes},
        "defender": {"faces": list(turn.defender.faces), "successes": turn.defender.successes},
    }


@dataclass(frozen=True)
class RollOutcome(Outcome):
    request: RollRequest
    roll: rules.PoolRoll
    variant: str = "d6"

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
        return self.roll.quality

    def extra_json(self) -> dict[str, Any]:
        pool = self.request.pool
        return {
            "pool": pool.dice,
            "trait": pool.trait,
            **_difficulty_json(self.request.difficulty),
            "required": self.request.required,
        }

    def render(self) -> list[Node]:
        return render_roll(self)


@dataclass(frozen=True)
class ContestOutcome(Outcome):
    """A contest, seen from the attacker: it succeeds when the attacker wins, with the
    successes the defender did not take away."""

    request: ContestRequest
    contest: rules.Contest
    variant: str = "d6"
    #: a contest between two chat users: the challenger's (attacker's) and the answerer's names
    names: tuple[str, str] | None = None

    @property
    def faces(self) -> tuple[int, ...]:  # type: ignore[override]
        return self.contest.faces

    @property
    def outcome(self) -> str:  # type: ignore[override]
        return "success" if self.contest.winner == "attacker" else "failure"

    @property
    def successes(self) -> int:  # type: ignore[override]
        return self.contest.net if self.contest.winner == "attacker" else 0

    @property
    def degree(self) -> str | None:  # type: ignore[override]
        return rules.quality(self.successes)

    def extra_json(self) -> dict[str, Any]:
        request = self.request
        return {
            **_difficulty_json(request.difficulty),
            "contest": {
                "attacker": request.attacker.dice,
                "defender": request.defender.dice,
                "rounds": [_round_json(turn) for turn in self.contest.rounds],
                "winner": self.contest.winner,
                "net": self.contest.net,
            },
        }

    def render(self) -> list[Node]:
        return render_contest(self)


@dataclass(frozen=True)
class SeesawOutcome(Outcome):
    """A seesaw contest played in one message; a success when the attacker got ahead enough."""

    request: ContestRequest
    seesaw: rules.SeesawContest
    variant: str = "d6"
    #: a contest between two chat users: the challenger's (attacker's) and the answerer's names
    names: tuple[str, str] | None = None

    @property
    def faces(self) -> tuple[int, ...]:  # type: ignore[override]
        return self.seesaw.faces

    @property
    def outcome(self) -> str:  # type: ignore[override]
        return "success" if self.seesaw.final.winner == "attacker" else "failure"

    @property
    def successes(self) -> int:  # type: ignore[override]
        """The attacker's stored successes at the end (none when the defender is ahead)."""
        return max(self.seesaw.final.balance, 0)

    @property
    def degree(self) -> str | None:  # type: ignore[override]
        return None

    def extra_json(self) -> dict[str, Any]:
        request = self.request
        final = self.seesaw.final
        return {
            **_difficulty_json(request.difficulty),
            "seesaw": {
                "attacker": request.attacker.dice,
                "defender": request.defender.dice,
                "target": final.target,
                "balance": final.balance,
                "winner": final.winner,
                "turns": [_round_json(turn) for turn in self.seesaw.rounds],
            },
        }

    def render(self) -> list[Node]:
        return render_seesaw(self)


@dataclass(frozen=True)
class InitiativeOutcome(Outcome):
    """Who acts first; the faces are the roll-off dice, if any tie needed them."""

    request: InitiativeRequest
    initiative: rules.Initiative
    variant: str = "d6"

    @property
    def faces(self) -> tuple[int, ...]:  # type: ignore[override]
        return self.initiative.faces

    @property
    def outcome(self) -> str:  # type: ignore[override]
        return "unresolved" if self.initiative.unresolved else "resolved"

    @property
    def successes(self) -> int:  # type: ignore[override]
        return 0

    @property
    def degree(self) -> str | None:  # type: ignore[override]
        return None

    def extra_json(self) -> dict[str, Any]:
        initiative = self.initiative
        return {
            "initiative": {
                "order": [c.name for c in initiative.order],
                "rolloffs": [
                    {"names": [c.name for c in r.combatants], "faces": list(r.faces)}
                    for r in initiative.rolloffs
                ],
                "extra_actions": [c.name for c in initiative.extra_actions],
                "unresolved": [[c.name for c in group] for group in initiative.unresolved],
            }
        }

    def render(self) -> list[Node]:
        return render_initiative(self)


D6Outcome = RollOutcome | ContestOutcome | SeesawOutcome | InitiativeOutcome


# --- the variant ----------------------------------------------------------------------------------


class D6Variant(Variant[D6Request, D6Outcome]):
    name = "d6"
    examples = EXAMPLES
    title = "Vampire on six-sided dice"
    sides = rules.SIDES
    default_difficulty = rules.DEFAULT_DIFFICULTY
    difficulty_range = (rules.MIN_DIFFICULTY, rules.MAX_DIFFICULTY)
    difficulty_capped = True  # more than 6 is rolled as 6 (001 Difficulties)
    tallies = ()  # 001 has no botch: `!stats` counts no notable results
    summary = (
        "one Trait's rating in d6 against a difficulty 2-6 (default 4; more counts as 6); "
        "each die at or above it is a success."
    )
    grammar = GRAMMAR
    pure_build = True
    extended_contests = True

    def initiative_usage(self) -> str:
        return initiative.INIT_USAGE

    def initiative(self, name: str, words: Sequence[str], dice: DiceSource) -> InitiativeEntry:
        """001's ordered comparisons (Hunter's Instinct, Advanced and Basic Celerity, Physical,
        Mental); the tracker rolls off ties with a die, as the document says."""
        return initiative.entry(name, words, dice)

    def build(self, parsed: Parsed, settings: RoomSettings) -> RollRequest | ContestRequest:
        versus = parsed.versus
        # a room's own default applies to every roll; otherwise the document's: 4 for a single
        # roll and 4 for a contest (two rules that happen to agree)
        low, high = self.difficulty_range
        room = settings.default_difficulty
        if room is not None and low <= room <= high:
            default = room
        else:
            default = rules.DEFAULT_DIFFICULTY if versus is None else rules.CONTEST_DIFFICULTY
        difficulty = _difficulty(_once(parsed, "difficulty", "the difficulty"), default)
        if versus is None:
            pool = trait_pool(parsed, None)
            if parsed.int("to") is not None:
                raise UsageError(
                    "`to N` sets the goal of a seesaw contest: give the other side too, "
                    "e.g. `4 vs 4 to 3`"
                )
            required = parsed.int("need") or 1
            if required > pool.dice:
                raise UsageError(
                    f"`need {required}` can never be met with {plural(pool.dice, 'dice')}: "
                    "each die gives at most one success"
                )
            return RollRequest(pool, difficulty, required)
        if parsed.int("need") is not None or versus.int("need") is not None:
            raise UsageError(
                "`need N` is for a single roll: in a contest the side with more successes wins"
            )
        attacker = trait_pool(parsed, "attacker")
        defender = trait_pool(versus, "defender")
        target = _once(parsed, "to", "the seesaw goal `to N`")
        if CARRIED in parsed.values:  # one turn of a seesaw contest across messages
            assert target is not None
            balance = parsed.int(CARRIED) or 0
            return ContestRequest(attacker, defender, difficulty, target, 1, balance)
        return ContestRequest(attacker, defender, difficulty, target)

    def dice_count(self, request: D6Request) -> int:
        """The dice of the first round; tied contests and initiatives draw more as they go."""
        if isinstance(request, RollRequest):
            return request.pool.dice
        if isinstance(request, ContestRequest):
            return request.attacker.dice + request.defender.dice
        tied = [g for g in rules.initiative_groups(request.combatants) if len(g) > 1]
        return len(tied[0]) if tied else 0

    def odds(self, request: D6Request, options: frozenset[str] = frozenset()) -> Distribution:
        require_rules(self, D6Variant, "play", "evaluate", "roll", "build")
        return exact_odds(self, request)

    def roll(self, request: D6Request, dice: DiceSource) -> D6Outcome:
        return self.play(request, lambda count: dice.roll(count, self.sides))

    def evaluate(self, request: D6Request, faces: Sequence[int]) -> D6Outcome:
        """Replay given faces: they must be exactly the dice the request rolls, tie re-rolls
        and roll-offs included, in the order rolled."""
        return ReplayDice.replay(faces, lambda dice: self.roll(request, dice))

    def play(self, request: D6Request, draw: rules.Draw) -> D6Outcome:
        """Carry a request out with dice from ``draw`` (the rules, one request type each)."""
        if isinstance(request, RollRequest):
            roll = rules.roll_pool(
                draw(request.pool.dice), request.difficulty.value, required=request.required
            )
            return RollOutcome(request, roll, variant=self.name)
        if isinstance(request, ContestRequest):
            attacker, defender = request.attacker.dice, request.defender.dice
            difficulty = request.difficulty.value
            if request.target is None:
                contest = rules.play_contest(
                    attacker, defender, difficulty, draw, max_rounds=request.max_rounds
                )
                return ContestOutcome(request, contest, variant=self.name)
            seesaw = rules.play_seesaw(
                attacker,
                defender,
                difficulty,
                request.target,
                draw,
                max_turns=request.max_rounds,
                balance=request.balance,
            )
            return SeesawOutcome(request, seesaw, variant=self.name)
        initiative = rules.play_initiative(request.combatants, draw, max_rounds=request.max_rounds)
        return InitiativeOutcome(request, initiative, variant=self.name)

    # --- contests between two chat users (core's !contest @user and !resist) -------------------

    def prepare_contest(
        self, actor: Parsed, opponent: Parsed, target: int | None, standing: Standing | None
    ) -> Parsed:
        """A simple contest, or one turn of a seesaw contest to ``target`` ahead, carried on from
        the standing of the turns before."""
        for side in (actor, opponent):
            if "to" in side.values:
                raise UsageError("the contest keeps its own goal: leave out `to N`")
        if "difficulty" in opponent.values and "difficulty" not in actor.values:
            # 001 Contests: both roll at the challenger's difficulty, which was left at its default
            raise UsageError(
                "both sides roll at the challenger's difficulty: answer with your Trait alone"
            )
        actor.versus = opponent
        if target is not None:
            actor.values["to"] = target
            lead = standing.actor - standing.opponent if standing is not None else 0
            actor.values[CARRIED] = lead
        return actor

    def contest_standing(self, outcome: D6Outcome) -> Standing | None:
        sides = {"attacker": "actor", "defender": "opponent", None: None}
        if isinstance(outcome, SeesawOutcome):
            final = outcome.seesaw.final
            return Standing(
                winner=sides[final.winner],
                actor=max(final.balance, 0),
                opponent=max(-final.balance, 0),
                target=final.target,
                open=final.winner is None,
            )
        if isinstance(outcome, ContestOutcome):
            return Standing(winner=sides[outcome.contest.winner])
        return None

    def name_sides(self, outcome: D6Outcome, actor: str, opponent: str) -> D6Outcome:
        if isinstance(outcome, ContestOutcome | SeesawOutcome):
            return replace(outcome, names=(actor, opponent))
        return outcome

    def contest_sides(self, outcome: D6Outcome) -> tuple[SidePart, SidePart] | None:
        """The attacker's dice over every round (a tie is rolled again), then the defender's;
        each side's successes are those of the last round rolled."""
        if isinstance(outcome, SeesawOutcome):
            rounds = outcome.seesaw.rounds
        elif isinstance(outcome, ContestOutcome):
            rounds = outcome.contest.rounds
        else:
            return None
        parts = []
        for side in ("attacker", "defender"):
            rolls = [getattr(one, side) for one in rounds]
            faces = tuple(face for roll in rolls for face in roll.faces)
            successes = rolls[-1].successes if rolls else 0
            won = bool(rounds) and rounds[-1].winner == side
            parts.append(SidePart(faces, successes, "success" if won else "failure"))
        return parts[0], parts[1]

    def help(self) -> list[Node]:
        body: list[Node] = [code(GRAMMAR.usage), BR, Text(self.summary), BR]
        body += [
            Text("POOL is one Trait (Physical, Mental, Social or Psychic): "),
            code("4"),
            Text(" or "),
            code("social 4"),
            Text(". Traits are never added together."),
            BR,
            Text("Difficulties: "),
            Text(", ".join(f"{k} {v}" for k, v in rules.DIFFICULTY_LABELS.items())),
            Text(f"; the default is {rules.DEFAULT_DIFFICULTY}, and more than 6 counts as 6."),
            BR,
        ]
        for option in GRAMMAR.options:
            body += [code(option.syntax()), Text(f" — {option.help}"), BR]
        body += [
            code("vs POOL"),
            Text(
                " — a contest: the other side rolls at the same difficulty; the most successes "
                "wins and ties roll again (also "
            ),
            code("!contest"),
            Text(")"),
            BR,
            Text("Quality: " + ", ".join(_quality_table())),
            BR,
            Text("Who acts first: "),
            code("!initiative"),
        ]
        return body


def _quality_table() -> list[str]:
    last = len(rules.QUALITIES)
    return [f"{n}{' or more' if n == last else ''} {rules.quality(n)}" for n in range(1, last + 1)]


def _once(parsed: Parsed, key: str, what: str) -> int | None:
    """A value both sides of a contest share, given on either side (or on both, alike)."""
    mine = parsed.int(key)
    theirs = parsed.versus.int(key) if parsed.versus is not None else None
    if mine is not None and theirs is not None and mine != theirs:
        raise UsageError(f"both sides share {what}: give it once (I read {mine} and {theirs})")
    return mine if mine is not None else theirs


def _difficulty(asked: int | None, default: int) -> Difficulty:
    if asked is None:
        return Difficulty(default)
    if asked < rules.MIN_DIFFICULTY:
        raise UsageError(
            f"the difficulty must be at least {rules.MIN_DIFFICULTY} "
            f"({rules.DIFFICULTY_LABELS[rules.MIN_DIFFICULTY]}), not {asked}"
        )
    return Difficulty(asked)


def trait_pool(parsed: Parsed, side: str | None) -> TraitPool:
    """The one Trait a side rolls, or a friendly error."""
    written = parsed.pool()
    whose = f"the {side}'s " if side else "a "
    if written is None:
        raise UsageError(f"{whose}Trait to roll is missing")
    first, *others = written.terms
    if others:
        if any(term.sign < 0 for term in others):
            raise UsageError(
                f"`{written}`: the d6 rules take no dice away from a Trait; "
                "make the roll harder with the difficulty or `need N` instead"
            )
        raise UsageError(
            f"`{written}` adds {len(written.terms)} Traits; a d6 roll uses one Trait "
            "(Physical, Mental, Social or Psychic)"
        )
    if first.dice < 1:
        raise UsageError(f"{whose}Trait of {first.dice} rolls no dice; it needs at least 1")
    return TraitPool(first.dice, first.trait)


# --- rendering ------------------------------------------------------------------------------------


def _faces(roll: rules.PoolRoll) -> list[Node]:
    out: list[Node] = []
    for index, (face, role) in enumerate(zip(roll.faces, roll.roles, strict=True)):
        if index:
            out.append(Text(" "))
        out.append(Die(face, role, rules.SIDES))
    return out


def render_roll(outcome: RollOutcome) -> list[Node]:
    request, roll = outcome.request, outcome.roll
    pool = request.pool
    setup = [plural(pool.dice, "dice"), difficulty_text(request.difficulty)]
    if request.required > 1:
        setup.append(f"{plural(request.required, 'success')} needed")
    prefix = f"{pool}: " if pool.trait else ""
    body: list[Node] = [Text(prefix + ", ".join(setup) + ": "), *_faces(roll), BR]
    if roll.succeeded:
        body += [bold(plural(roll.successes, "success")), Text(f" — {roll.quality}")]
        if request.required > 1:
            body.append(Text(f" ({request.required} needed)"))
    elif roll.successes:
        body += [
            bold("Failure"),
            Text(f" — {plural(roll.successes, 'success')}, {request.required} needed"),
        ]
    else:
        body += [bold("Failure"), Text(" — no success")]
    return body


def _labels(outcome: ContestOutcome | SeesawOutcome) -> dict[str | None, str]:
    """What the reply calls each side: the players' names in a contest between two chat users,
    else "attacker" and "defender"."""
    attacker, defender = outcome.names or ("attacker", "defender")
    return {"attacker": attacker, "defender": defender, None: ""}


def _contest_setup(
    request: ContestRequest, title: str, labels: dict[str | None, str]
) -> list[Node]:
    return [
        Text(
            f"{title}, {difficulty_text(request.difficulty)}: "
            f"{labels['attacker']} {request.attacker} vs {labels['defender']} {request.defender}"
        )
    ]


def _round_line(label: str, turn: rules.ContestRound, labels: dict[str | None, str]) -> list[Node]:
    return [
        Text(f"{label}: {labels['attacker']} "),
        *_faces(turn.attacker),
        Text(f" ({turn.attacker.successes}) vs {labels['defender']} "),
        *_faces(turn.defender),
        Text(f" ({turn.defender.successes})"),
    ]


def _wins(side: str, labels: dict[str | None, str]) -> str:
    return f"{labels[side][:1].upper()}{labels[side][1:]} wins"


def render_contest(outcome: ContestOutcome) -> list[Node]:
    contest = outcome.contest
    labels = _labels(outcome)
    body = _contest_setup(outcome.request, "Contest", labels)
    for number, turn in enumerate(contest.rounds, start=1):
        body += [BR, *_round_line(f"Round {number}", turn, labels)]
        if turn.winner is None:
            body.append(
                Text(" — a tie, roll again" if turn is not contest.deciding else " — a tie")
            )
    deciding = contest.deciding
    a, d = deciding.attacker.successes, deciding.defender.successes
    body.append(BR)
    if contest.winner == "attacker":
        body += [
            bold(_wins("attacker", labels)),
            Text(f": {a} − {d} = "),
            bold(plural(contest.net, "success")),
            Text(f" left ({rules.quality(contest.net)})"),
        ]
    elif contest.winner == "defender":
        body += [
            bold(_wins("defender", labels)),
            Text(f": {d} − {a} = {plural(-contest.net, 'success')} to spare"),
        ]
    else:
        body += [
            bold("No winner"),
            Text(f": still tied after {len(contest.rounds)} rounds; the Storyteller decides"),
        ]
    return body


def _balance_text(state: rules.Seesaw, labels: dict[str | None, str]) -> str:
    if state.leader is None:
        return "level"
    return f"{labels[state.leader]} {state.lead} ahead"


def render_seesaw(outcome: SeesawOutcome) -> list[Node]:
    seesaw = outcome.seesaw
    final = seesaw.final
    labels = _labels(outcome)
    body = _contest_setup(outcome.request, f"Seesaw contest to {final.target} ahead", labels)
    carried = outcome.request.max_rounds == 1  # one turn of a contest across messages
    for number, (turn, state) in enumerate(zip(seesaw.rounds, seesaw.states, strict=True), 1):
        label = "This turn" if carried else f"Turn {number}"
        body += [BR, *_round_line(label, turn, labels), Text(f" → {_balance_text(state, labels)}")]
    body.append(BR)
    turns = plural(final.turns, "turn")
    if carried:
        if final.winner is not None:
            return [*body, bold(_wins(final.winner, labels)), Text(f", {final.lead} ahead")]
        return [*body, Text(f"No winner yet: {_balance_text(final, labels)}")]
    if final.winner is not None:
        body += [
            bold(_wins(final.winner, labels)),
            Text(f" after {turns}, {final.lead} ahead"),
        ]
    else:
        body += [
            bold("No winner"),
            Text(f" after {turns} ({_balance_text(final, labels)}); the Storyteller decides"),
        ]
    return body


def describe(combatant: rules.Combatant) -> str:
    powers = []
    if combatant.hunters_instinct:
        powers.append("Hunter's Instinct")
    if combatant.advanced_celerity:
        powers.append("Advanced Celerity")
    elif combatant.basic_celerity:
        powers.append("Basic Celerity")
    return ", ".join([*powers, f"Physical {combatant.physical}", f"Mental {combatant.mental}"])


def _why(first: rules.Combatant, second: rules.Combatant) -> str:
    trait = rules.deciding_trait(first, second)
    if trait == "Physical":
        return f"Physical {first.physical} vs {second.physical}"
    if trait == "Mental":
        return f"Mental {first.mental} vs {second.mental}"
    return trait or "a roll-off"


def render_initiative(outcome: InitiativeOutcome) -> list[Node]:
    initiative = outcome.initiative
    tied = {c.name for group in initiative.unresolved for c in group}
    body: list[Node] = [bold("Initiative")]
    previous: rules.Combatant | None = None
    for place, combatant in enumerate(initiative.order, start=1):
        body += [BR, Text(f"{place}. "), bold(combatant.name), Text(f" ({describe(combatant)})")]
        if previous is not None:
            if combatant.name in tied and previous.name in tied:
                body.append(Text(f" — still tied with {previous.name}"))
            else:
                body.append(Text(f" — after {previous.name}, by {_why(previous, combatant)}"))
        previous = combatant
    for rolloff in initiative.rolloffs:
        top = max(rolloff.faces)
        body += [BR, Text("Roll-off: ")]
        for index, (combatant, face) in enumerate(
            zip(rolloff.combatants, rolloff.faces, strict=True)
        ):
            role = Role.SUCCESS if face == top else Role.FAILURE
            body += [
                Text(", " if index else ""),
                Text(f"{combatant.name} "),
                Die(face, role, rules.SIDES),
            ]
    if initiative.unresolved:
        groups = "; ".join(", ".join(c.name for c in g) for g in initiative.unresolved)
        body += [
            BR,
            Text(
                f"Still tied after {len(initiative.rolloffs)} roll-offs: {groups} "
                "— the Storyteller decides"
            ),
        ]
    if initiative.extra_actions:
        names = ", ".join(
            f"{side.name} ×{celerity_actions(side)}" for side in initiative.extra_actions
        )
        body += [BR, Text(f"Extra actions from Celerity, after everyone's first action: {names}")]
    return body
