"""The ``v5`` rule set as a coterie variant: chat grammar, requests, outcomes, rendering.

The rules themselves are in :mod:`coterie_v5.rules`; this module turns chat into requests,
requests and faces into outcomes, and outcomes into replies and the JSON contract.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, ClassVar

from coterie.dice.odds import Distribution, require_rules
from coterie.dice.sources import DiceSource
from coterie.errors import UsageError
from coterie.framework.grammar import Grammar, Option, Parsed, Positional, shorten, suggest
from coterie.framework.variant import (
    HouseRule,
    InitiativeEntry,
    Outcome,
    OutcomeKind,
    RollContext,
    RoomSettings,
    SidePart,
    Standing,
    Variant,
)
from coterie.records import dataclass
from coterie.render.elements import BR, Actions, Button, Die, Node, Role, Text, bold, code, dice
from coterie.rulekit.pools import plural
from coterie_v5 import rules
from coterie_v5.odds import odds as exact_odds
from coterie_v5.requests import (
    Difficulty,
    RerollRequest,
    RouseRequest,
    Side,
    V5Request,
    difficulty_text,
    side_text,
)

NAME = "v5"


# --- chat grammar -------------------------------------------------------------------------------

POOL = Positional(
    "pool", "dice pool: Traits added, e.g. 3+4 (a penalty: 3+4-2)", kind="pool", required=True
)


HUNGER_SLOT = Positional(
    "hunger", f"Hunger 0-{rules.MAX_HUNGER} (default 0)", minimum=0, maximum=rules.MAX_HUNGER
)


DIFFICULTY_SLOT = Positional(
    "difficulty",
    f"Difficulty: successes needed, {rules.MIN_DIFFICULTY}-{rules.MAX_DIFFICULTY} "
    f"(default {rules.DEFAULT_DIFFICULTY})",
    minimum=rules.MIN_DIFFICULTY,
    maximum=rules.MAX_DIFFICULTY,
)


HUNGER = Option(
    "hunger",
    "int",
    "your Hunger: as many Hunger dice replace regular ones (also h2)",
    aliases=("h",),
    minimum=0,
    maximum=rules.MAX_HUNGER,
    compact=True,
    metavar="H",
)


DIFFICULTY = Option(
    "diff",
    "int",
    "Difficulty (the successes needed) as a keyword",
    aliases=("difficulty",),
    key="difficulty",
    minimum=rules.MIN_DIFFICULTY,
    maximum=rules.MAX_DIFFICULTY,
    compact=True,
    metavar="D",
)


SPECIALTY = Option(
    "spec", "flag", "a specialty applies: +1 die", aliases=("specialty",), key="specialty"
)


BONUS = Option("bonus", "int", "pool modifier: +N dice", minimum=1, maximum=50)


PENALTY = Option("penalty", "int", "pool modifier: -N dice", minimum=1, maximum=50)


AUTO = Option(
    "auto", "flag", "automatic win, no roll: the pool must be at least twice the Difficulty"
)


TEAM = Option(
    "team",
    "int",
    "teamwork: N helpers add one die each",
    aliases=("helpers",),
    minimum=1,
    maximum=20,
    compact=True,
)


HARDER = Option("harder", "int", "Difficulty modifier: +N", minimum=1, maximum=rules.MAX_DIFFICULTY)


EASIER = Option("easier", "int", "Difficulty modifier: -N", minimum=1, maximum=rules.MAX_DIFFICULTY)


EQUIP = Option(
    "equip",
    "word",
    "equipment: poor (also improvised, unreliable) is +1 Difficulty; none makes the task "
    "impossible",
    aliases=("equipment",),
    metavar="QUALITY",
)


HALF = Option(
    "half",
    "int",
    "taking half: Difficulty = half the opposing pool, rounded down (at least 1)",
    minimum=0,
    maximum=1000,
    metavar="POOL",
)


SKILL = Option(
    "skill",
    "int",
    "Difficulty = the opponent's Skill (at least 1)",
    minimum=0,
    maximum=10,
)


VERSUS = Grammar(
    usage="vs POOL [HUNGER] [spec] [bonus N] [penalty N]",
    positionals=(POOL, HUNGER_SLOT),
    options=(HUNGER, SPECIALTY, BONUS, PENALTY, DIFFICULTY),
    named_traits=rules.TRACKERS,
)


#: two ``!roll`` calls written right, for help and for errors that teach
EXAMPLES = ("7 2 3", "4+3 1 2 spec")

GRAMMAR = Grammar(
    example=EXAMPLES[0],
    usage="!roll POOL [HUNGER] [DIFFICULTY] [spec] [auto] [team N] [bonus N] [penalty N] "
    "[harder N] [easier N] [equip poor|none] [half POOL | skill N] [vs POOL [HUNGER]] "
    "[# comment]",
    positionals=(POOL, HUNGER_SLOT, DIFFICULTY_SLOT),
    options=(
        HUNGER,
        DIFFICULTY,
        SPECIALTY,
        AUTO,
        TEAM,
        BONUS,
        PENALTY,
        HARDER,
        EASIER,
        EQUIP,
        HALF,
        SKILL,
    ),
    versus=VERSUS,
    named_traits=rules.TRACKERS,
)


HOUSE_RULES = (
    HouseRule(
        "automatic_wins", True, "`auto` may take an automatic win when pool >= 2 x Difficulty"
    ),
    HouseRule(
        "max_hunger",
        rules.MAX_HUNGER,
        "the most Hunger a character can have in this chronicle",
        minimum=1,
        maximum=rules.MAX_HUNGER,
    ),
)


Request = V5Request | RouseRequest | RerollRequest


# --- outcomes -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class V5Outcome(Outcome):
    """A rolled (or automatic) pool, and what it comes to."""

    request: V5Request
    #: the actor's dice; ``None`` for an automatic win
    actor: rules.Dice | None
    opponent: rules.Dice | None = None
    #: indexes of the regular dice re-rolled with Willpower, and what they showed before
    rerolled: tuple[int, ...] = ()
    previous: tuple[int, ...] = ()
    strategy: rules.Strategy | None = None
    variant: str = NAME
    #: whose dice the Willpower re-roll took: ``"actor"`` or ``"opponent"`` (a contest)
    rerolled_side: str = "actor"
    #: a contest between two chat users: the challenger's and the answerer's names
    names: tuple[str, str] | None = None

    @property
    def faces(self) -> tuple[int, ...]:  # type: ignore[override]
        """The actor's regular dice (the Hunger dice are :attr:`hunger_faces`)."""
        return self.actor.regular if self.actor else ()

    @property
    def hunger_faces(self) -> tuple[int, ...]:
        return self.actor.hunger if self.actor else ()

    @property
    def rolled_faces(self) -> tuple[int, ...]:
        """The actor's regular dice, then their Hunger dice (for the roll log)."""
        return self.actor.faces if self.actor else ()

    @property
    def hunger_dice(self) -> int:
        return len(self.hunger_faces)

    @property
    def rerolled_dice(self) -> rules.Dice | None:
        """The dice of the side the Willpower re-roll took."""
        return self.opponent if self.rerolled_side == "opponent" else self.actor

    @property
    def all_faces(self) -> tuple[int, ...]:
        """Every face in the order rolled: actor regular, actor Hunger, then the opposition's."""
        own = self.actor.faces if self.actor else ()
        return own + (self.opponent.faces if self.opponent else ())

    @property
    def verdict(self) -> rules.Verdict:
        if self.actor is None:
            assert self.request.difficulty is not None
            value = self.request.difficulty.value  # margin 0 (at Difficulty 0: the one success)
            return rules.Verdict(rules.Result.SUCCESS, rules.automatic_successes(value), value)
        if self.opponent is not None:
            return rules.contest(self.actor, self.opponent)
        assert self.request.difficulty is not None
        return rules.judge(self.actor, self.request.difficulty.value)

    @property
    def outcome(self) -> str:  # type: ignore[override]
        return str(self.verdict.result)

    @property
    def successes(self) -> int:  # type: ignore[override]
        return self.verdict.successes

    @property
    def degree(self) -> str | None:  # type: ignore[override]
        """The notes give no degrees of success: the margin says how well a roll went."""
        return None

    def extra_json(self) -> dict[str, Any]:
        verdict = self.verdict
        actor = self.request.actor
        data: dict[str, Any] = {
            "hunger_faces": list(self.hunger_faces),
            "pool": actor.pool,
            "hunger": actor.hunger_dice if self.actor else 0,
            "difficulty": verdict.difficulty,
            "margin": verdict.margin,
            "criticals": self.actor.pairs if self.actor else 0,
            "win": verdict.win,
            "win_at_cost": verdict.win_at_cost,
            "specialty": actor.specialty,
            "helpers": actor.helpers,
            "automatic": self.request.automatic,
            "tracker": actor.tracker,
            "rerolled": list(self.rerolled),
            "rerolled_from": list(self.previous),
        }
        if self.opponent is not None and self.request.versus is not None:
            data["versus"] = {
                "faces": list(self.opponent.regular),
                "hunger_faces": list(self.opponent.hunger),
                "successes": self.opponent.successes,
                "pool": self.request.versus.pool,
                "hunger": self.request.versus.hunger_dice,
            }
        return data

    def render(self) -> list[Node]:
        return render(self)


@dataclass(frozen=True)
class RouseOutcome(Outcome):
    """Rouse checks: one die each."""

    request: RouseRequest
    result: rules.RouseResult
    variant: str = NAME

    @property
    def faces(self) -> tuple[int, ...]:  # type: ignore[override]
        return self.result.faces

    @property
    def outcome(self) -> str:  # type: ignore[override]
        return "success" if self.result.failed == 0 else "failure"

    @property
    def successes(self) -> int:  # type: ignore[override]
        return self.result.passed

    @property
    def degree(self) -> str | None:  # type: ignore[override]
        return None

    def extra_json(self) -> dict[str, Any]:
        return {
            "check": "rouse",
            "failed": self.result.failed,
            "hunger_before": self.result.hunger_before,
            "hunger_after": self.result.hunger_after,
        }

    def render(self) -> list[Node]:
        return render_rouse(self)


AnyOutcome = V5Outcome | RouseOutcome


# --- the variant --------------------------------------------------------------------------------

#: state key of a player's last roll in a room (under the variant's namespace)
LAST_ROLL = "last:{user}"


#: the Willpower re-roll buttons offered under a roll, in this order
REROLL_BUTTONS = (
    (rules.Strategy.FAILURES, "Re-roll failures"),
    (rules.Strategy.CRITICALS, "Go for criticals"),
    (rules.Strategy.AVOID_MESSY, "Avoid the messy critical"),
    (rules.Strategy.RISKY, "Risky re-roll"),
)


def _how(strategy: rules.Strategy | None) -> str:
    """How the re-rolled dice were picked, as the reply says it."""
    return "your choice" if strategy is rules.Strategy.CHOSEN else str(strategy)


def reroll_options(outcome: V5Outcome) -> list[rules.Strategy]:
    """The Willpower re-roll strategies that would do something for this roll (none for an
    automatic win, a tracker roll or a roll already re-rolled)."""
    request = outcome.request
    if outcome.actor is None or outcome.rerolled or request.automatic:
        return []
    if request.actor.tracker is not None:
        return []
    difficulty = outcome.verdict.difficulty
    return [
        strategy
        for strategy, _ in REROLL_BUTTONS
        if rules.reroll_problem(outcome.actor, difficulty, strategy) is None
    ]


#: the most successes the Storyteller may ask for against a hidden Difficulty (``!ask``)
HIDDEN_MOST = 20


class V5Variant(Variant[Request, AnyOutcome]):
    name = NAME
    examples = EXAMPLES
    title = "Vampire: the Masquerade, 5th edition"
    sides = 10
    default_difficulty = rules.DEFAULT_DIFFICULTY
    difficulty_range = (rules.MIN_DIFFICULTY, rules.MAX_DIFFICULTY)
    summary = (
        "d10 pool, every 6+ a success; Difficulty is the successes needed (default 1). Each "
        "pair of 10s adds two more; Hunger dice replace regular ones (messy criticals, bestial "
        "failures)."
    )
    grammar = GRAMMAR
    pure_build = True
    house_rules = HOUSE_RULES

    def initiative_usage(self) -> str:
        return "!init add NAME ranged | close | other"

    def initiative(self, name: str, words: Sequence[str], dice: DiceSource) -> InitiativeEntry:
        """V5 rolls no initiative: a turn resolves ranged attacks first, then close combat,
        then everything else (our reading of the edition, docs/rules/v5.md "Initiative"); the
        tracker rolls off those who do the same kind of thing."""
        del dice
        kinds = [word.lower() for word in words]
        if len(kinds) != 1 or kinds[0] not in rules.TURN_ORDER:
            raise UsageError(
                "say what they do this turn: `ranged`, `close` or `other`",
                usage=self.initiative_usage(),
            )
        rank = len(rules.TURN_ORDER) - list(rules.TURN_ORDER).index(kinds[0])
        return InitiativeEntry(name=name, key=(rank,), shown=rules.TURN_ORDER[kinds[0]])

    odds_options: ClassVar[Mapping[str, str]] = {
        "reroll": "the odds if you spend Willpower to re-roll failures whenever the roll fails"
    }

    # --- requests ----------------------------------------------------------------------------

    def build(self, parsed: Parsed, settings: RoomSettings) -> V5Request:
        actor = build_side(parsed, opposing=False)
        most = int(settings.rule(self, "max_hunger"))
        _check_hunger(actor.hunger, most)
        automatic = parsed.flag("auto")
        if parsed.versus is not None:
            opponent = build_side(parsed.versus, opposing=True)
            _check_hunger(opponent.hunger, most)
            return self._contest(parsed, actor, opponent)
        difficulty = build_difficulty(parsed, self.room_difficulty(settings))
        if automatic:
            if not settings.rule(self, "automatic_wins"):
                raise UsageError("this room does not allow automatic wins")
            if not rules.automatic_win_allowed(actor.pool, difficulty.value):
                raise UsageError(
                    f"an automatic win needs a pool of at least twice the Difficulty "
                    f"({actor.pool} dice < 2 × {rules.automatic_successes(difficulty.value)}); "
                    "roll instead"
                )
        return V5Request(actor=actor, difficulty=difficulty, automatic=automatic)

    def _contest(self, parsed: Parsed, actor: Side, opponent: Side) -> V5Request:
        shown = {
            "difficulty": "a Difficulty",
            "half": "`half`",
            "skill": "`skill`",
            "harder": "`harder`",
            "easier": "`easier`",
            "equip": "`equip`",
        }
        given = [word for name, word in shown.items() if name in parsed.values]
        if given:
            raise UsageError(
                f"a contest has no Difficulty, so {given[0]} has no place in it: your successes "
                "only need to reach the opposition's. For poor equipment or circumstances, "
                "give a pool `penalty N` instead"
            )
        if parsed.flag("auto"):
            raise UsageError("a contest is always rolled: `auto` does not apply to `vs`")
        return V5Request(actor=actor, difficulty=None, versus=opponent)

    def hidden_difficulty(self, value: int) -> int:
        """The successes needed, kept secret: at least one (0 is for a roll whose Difficulty the
        player does not know, which a hidden one already is), at most 20."""
        if not 1 <= value <= HIDDEN_MOST:
            raise ValueError(f"a {self.name} Difficulty goes from 1 to {HIDDEN_MOST}, not {value}")
        return value

    def build_rouse(self, parsed: Parsed, settings: RoomSettings | None = None) -> RouseRequest:
        """``!rouse [N] [h H]``: ``N`` rouse checks; Hunger if the caller gave it."""
        if parsed.flag("auto") or "half" in parsed.values:
            raise UsageError(
                "a check is always rolled: neither an automatic win nor taking half is possible"
            )
        checks = parsed.int("checks")
        most = int(settings.rule(self, "max_hunger")) if settings else rules.MAX_HUNGER
        hunger = parsed.int("hunger")
        if hunger is not None:
            _check_hunger(hunger, most)
        return RouseRequest(checks=1 if checks is None else checks, hunger=hunger, max_hunger=most)

    def odds(self, request: Request, options: frozenset[str] = frozenset()) -> Distribution:
        require_rules(self, V5Variant)
        return exact_odds(self, request, plan="reroll" in options)

    def dice_count(self, request: Request) -> int:
        if isinstance(request, RouseRequest):
            return request.checks
        if isinstance(request, RerollRequest):
            return len(request.indexes)
        return request.dice

    # --- the pure rule -----------------------------------------------------------------------

    def evaluate(self, request: Request, faces: Sequence[int]) -> AnyOutcome:
        wanted = self.dice_count(request)
        if len(faces) != wanted:
            raise UsageError(f"this roll needs {wanted} dice, but {len(faces)} were given")
        if isinstance(request, RouseRequest):
            return RouseOutcome(
                request, rules.rouse(faces, request.hunger, request.max_hunger), variant=self.name
            )
        if isinstance(request, RerollRequest):
            return self._reroll(request, faces)
        return self._roll(request, faces)

    def _roll(self, request: V5Request, faces: Sequence[int]) -> V5Outcome:
        if request.automatic:
            return V5Outcome(request=request, actor=None, variant=self.name)
        actor = _dice(request.actor, faces[: request.actor.pool])
        opponent = None
        if request.versus is not None:
            opponent = _dice(request.versus, faces[request.actor.pool :])
        return V5Outcome(request=request, actor=actor, opponent=opponent, variant=self.name)

    def _reroll(self, request: RerollRequest, new: Sequence[int]) -> V5Outcome:
        base = request.base
        if len(request.faces) != base.dice:
            raise UsageError(f"the earlier roll had {base.dice} dice, not {len(request.faces)}")
        start, regular = 0, base.actor.regular_dice
        if request.side == "opponent":
            if base.versus is None:
                raise UsageError("the earlier roll had no opposing side")
            start, regular = base.actor.pool, base.versus.regular_dice
        if any(not 0 <= index < regular for index in request.indexes):
            raise UsageError("only the earlier roll's regular dice can be re-rolled")
        old = request.faces[start : start + regular]
        faces = (
            request.faces[:start]
            + rules.reroll(old, request.indexes, new)
            + request.faces[start + regular :]
        )
        outcome = self._roll(base, faces)
        return replace(
            outcome,
            rerolled=request.indexes,
            previous=tuple(old[i] for i in request.indexes),
            strategy=request.strategy,
            rerolled_side=request.side,
        )

    # --- room state: the last roll of each player, for !reroll -------------------------------

    async def settle(self, outcome: AnyOutcome, context: RollContext) -> AnyOutcome:
        """Remember each roller's last roll in the room, with when and in which session it was
        made, so ``!reroll`` can find it (and refuse it once it lapsed). A contest between two
        chat users is remembered for both players, each with their own side."""
        if context.state is None:
            return outcome
        stamp: dict[str, Any] = {"time": time.time(), "session": context.session}
        record: dict[str, Any]
        if isinstance(outcome, RouseOutcome):
            record = {"kind": "check", "check": "rouse", **stamp}
            await context.state.set(LAST_ROLL.format(user=context.user), record)
            return outcome
        roll: dict[str, Any] = {
            "kind": "roll",
            "request": outcome.request.to_json(),
            "faces": list(outcome.all_faces),
            **stamp,
        }
        if context.contest is None or context.opponent is None or outcome.opponent is None:
            record = {**roll, "rerolled": outcome.strategy is not None}
            await context.state.set(LAST_ROLL.format(user=context.user), record)
            return outcome
        contest = {k: v for k, v in context.contest.items() if k != "only"}
        users = {"actor": context.user, "opponent": context.opponent}
        rerolled = {"actor": False, "opponent": False}
        if outcome.strategy is not None:  # a re-roll by one side: keep what the other did
            mine = await context.state.get(LAST_ROLL.format(user=users[outcome.rerolled_side]))
            if isinstance(mine, dict) and isinstance(mine.get("rerolled"), dict):
                rerolled.update(mine["rerolled"])
            rerolled[outcome.rerolled_side] = True
        for side, user in users.items():
            key = LAST_ROLL.format(user=user)
            if outcome.strategy is not None and outcome.rerolled_side != side:
                theirs = await context.state.get(key)
                same = isinstance(theirs, dict) and (theirs.get("contest") or {}).get("contest")
                if same != contest["contest"]:
                    continue  # the other player has rolled since: their last roll is not this
                stamp_kept = {"time": theirs.get("time"), "session": theirs.get("session")}
                record = {**roll, **stamp_kept}
            else:
                record = dict(roll)
            record.update(side=side, contest=contest, rerolled=rerolled)
            await context.state.set(key, record)
        return outcome

    def reroll_request(
        self, record: Any, strategy: rules.Strategy, chosen: Sequence[int] = ()
    ) -> RerollRequest:
        """The Willpower re-roll of the last roll ``record`` (as :meth:`settle` stored it), or a
        friendly error saying why that roll cannot be re-rolled this way. In a contest between
        two chat users the record says whose side the caller rolled: only those dice. With
        :attr:`~rules.Strategy.CHOSEN`, ``chosen`` are the faces of the dice the player picked."""
        if record is None:
            raise UsageError("you have no roll in this room to re-roll yet: roll first")
        if not isinstance(record, dict) or record.get("kind") not in ("roll", "check"):
            raise UsageError("I cannot read your last roll any more; please roll again")
        if record["kind"] == "check":
            raise UsageError(
                "Willpower cannot re-roll a check, and your last roll was a rouse check"
            )
        side = record.get("side", "actor")
        rerolled = record.get("rerolled")
        done = rerolled.get(side) if isinstance(rerolled, dict) else side == "actor" and rerolled
        if done:
            raise UsageError(
                "your last roll was already re-rolled with Willpower; a roll is re-rolled only once"
            )
        try:
            base = V5Request.from_json(record["request"])
            faces = tuple(int(face) for face in record["faces"])
        except (KeyError, TypeError, ValueError):
            raise UsageError("I cannot read your last roll any more; please roll again") from None
        if len(faces) != base.dice or side not in ("actor", "opponent"):
            raise UsageError("I cannot read your last roll any more; please roll again")
        if side == "opponent" and base.versus is None:
            raise UsageError("I cannot read your last roll any more; please roll again")
        if base.automatic:
            raise UsageError(
                "your last roll was an automatic win: no dice were rolled, so none can be re-rolled"
            )
        mine = base.versus if side == "opponent" and base.versus is not None else base.actor
        if mine.tracker is not None:
            raise UsageError(
                "Willpower cannot re-roll a tracker roll, and your last roll was on "
                f"{mine.tracker.title()}"
            )
        outcome = self._roll(base, faces)
        assert outcome.actor is not None
        if side == "opponent":
            assert outcome.opponent is not None
            dice_, needed = outcome.opponent, outcome.actor.successes + 1  # ties go to the actor
        else:
            dice_, needed = outcome.actor, outcome.verdict.difficulty
        if strategy is rules.Strategy.CHOSEN:
            problem = rules.chosen_problem(dice_, chosen)
        else:
            problem = rules.reroll_problem(dice_, needed, strategy)
        if problem is not None:
            raise UsageError(problem)
        if strategy is rules.Strategy.CHOSEN:
            indexes = rules.chosen_indexes(dice_.regular, chosen)
        else:
            indexes = rules.reroll_indexes(dice_.regular, strategy)
        return RerollRequest(base=base, faces=faces, indexes=indexes, strategy=strategy, side=side)

    def compose(self, outcomes: Sequence[AnyOutcome], who: str, comment: str | None) -> list[Node]:
        """The usual reply, plus buttons for the Willpower re-rolls the last roll allows."""
        body = super().compose(outcomes, who, comment)
        last = outcomes[-1] if outcomes else None
        options = reroll_options(last) if isinstance(last, V5Outcome) else []
        if options:
            labels = dict(REROLL_BUTTONS)
            buttons = tuple(Button(labels[s], f"!reroll {s.value}") for s in options)
            body += [BR, Actions(buttons)]
        return body

    # --- actions over several messages -------------------------------------------------------

    team_mode = "dice"
    outcome_kinds = (
        OutcomeKind("critical", win=True, flags=frozenset({"critical"})),
        OutcomeKind("messy_critical", win=True, flags=frozenset({"critical", "messy"})),
        OutcomeKind("success", win=True),
        OutcomeKind("failure"),
        OutcomeKind("bestial_failure"),
        OutcomeKind("total_failure"),
    )

    #: V5 has no botch: ``!stats`` counts its own notable results instead
    tallies: ClassVar[tuple[tuple[str, str], ...]] = (
        (rules.Result.BESTIAL_FAILURE.value, "bestial failure"),
        (rules.Result.MESSY_CRITICAL.value, "messy critical"),
        (rules.Result.TOTAL_FAILURE.value, "total failure"),
    )

    def is_botch(self, outcome: AnyOutcome) -> bool:
        """V5 has no botch (a bestial failure is its own result, counted as such in ``!stats``)."""
        return False

    def name_sides(self, outcome: AnyOutcome, actor: str, opponent: str) -> AnyOutcome:
        if isinstance(outcome, V5Outcome):
            return replace(outcome, names=(actor, opponent))
        return outcome

    def contest_sides(self, outcome: AnyOutcome) -> tuple[SidePart, SidePart] | None:
        """Each side's regular then Hunger dice; the answerer's own result is judged as if they
        needed one success more than the challenger (ties go to the challenger)."""
        if not isinstance(outcome, V5Outcome) or outcome.actor is None or outcome.opponent is None:
            return None
        mine, theirs = outcome.actor, outcome.opponent
        own = rules.judge(theirs, mine.successes + 1).result
        return (
            SidePart(mine.faces, mine.successes, outcome.outcome, hunger=len(mine.hunger)),
            SidePart(theirs.faces, theirs.successes, str(own), hunger=len(theirs.hunger)),
        )

    def prepare_helpers(self, parsed: Parsed, helpers: int) -> None:
        if "team" in parsed.values:
            raise UsageError("`!team start` counts the helpers itself: leave out `team N`")
        if helpers:
            parsed.values["team"] = helpers

    def contest_standing(self, outcome: AnyOutcome) -> Standing | None:
        if not isinstance(outcome, V5Outcome) or outcome.opponent is None:
            return None
        return Standing(winner="actor" if outcome.verdict.win else "opponent")

    # --- teamwork and help -------------------------------------------------------------------

    def check_team(self, requests: Sequence[Request]) -> None:
        """V5 teamwork is one roll: the largest pool, one more die per helper."""
        raise UsageError(
            "in V5 teamwork is a single roll: the biggest pool of the group, plus one die per "
            "helper. Roll it once with `team N` added, e.g. `5 h1 diff 3 team 2` for two helpers",
            usage="!roll POOL [HUNGER] [DIFFICULTY] team N",
        )

    def help(self) -> list[Node]:
        body: list[Node] = [code(GRAMMAR.usage), BR, Text(self.summary), BR]
        body += [
            Text("POOL is Traits added, like "),
            code("3+4"),
            Text(", with penalties subtracted, like "),
            code("3+4-2"),
            Text("; a tracker is written "),
            code("willpower 4"),
            Text(". Positions read "),
            code("!roll POOL HUNGER DIFFICULTY"),
            Text("; keywords go in any order."),
            BR,
        ]
        for option in GRAMMAR.options:
            body += [code(option.syntax()), Text(f" — {option.help}"), BR]
        body += [
            code("vs POOL [HUNGER]"),
            Text(" — a contest: the opposition rolls too and you win ties"),
            BR,
            Text("After a roll: "),
            code("!reroll [failures|crits|messy|risky | FACE …]"),
            Text(
                " spends Willpower to re-roll as many as three regular dice (picked by a "
                "strategy, or the ones you name by their faces); "
            ),
            code("!rouse [N] [h H]"),
            Text(" makes rouse checks."),
        ]
        return body


def _dice(side: Side, faces: Sequence[int]) -> rules.Dice:
    regular = side.regular_dice
    return rules.Dice(tuple(faces[:regular]), tuple(faces[regular:]))


# --- building requests from parsed chat ---------------------------------------------------------


def _check_hunger(hunger: int, most: int) -> None:
    if hunger > most:
        raise UsageError(f"Hunger {hunger}? In this room Hunger goes up to {most} (`max_hunger`)")


def build_side(parsed: Parsed, *, opposing: bool) -> Side:
    """One side's pool: Traits, Hunger, specialty, helpers, pool modifiers."""
    written = parsed.pool()
    if written is None:
        raise UsageError("the dice pool is missing")
    if any(term.dice < 0 for term in written.terms):
        raise UsageError(f"a Trait has no negative dots: `{written}` is not a pool")
    first = written.terms[0].trait
    tracker = first if first in rules.TRACKERS else None
    if tracker is not None and parsed.flag("specialty"):
        raise UsageError(
            f"a specialty belongs to a Skill, and a {tracker.title()} roll uses none: leave out "
            "`spec`"
        )
    if opposing and "difficulty" in parsed.values:
        raise UsageError(
            "the opposition has no Difficulty in a contest: both sides count successes"
        )
    return Side(
        written=str(written),
        traits=written.total,
        hunger=parsed.int("hunger") or 0,
        specialty=parsed.flag("specialty"),
        helpers=parsed.int("team") or 0,
        bonus=parsed.int("bonus") or 0,
        penalty=parsed.int("penalty") or 0,
        tracker=tracker,
    )


def build_difficulty(parsed: Parsed, room_default: int | None) -> Difficulty:
    """The Difficulty: given, taken from opposition (half a pool, a Skill) or the default, then
    modified by equipment and ``harder``/``easier``."""
    given = parsed.int("difficulty")
    half = parsed.int("half")
    skill = parsed.int("skill")
    ways = [
        word
        for word, value in (("a Difficulty", given), ("`half`", half), ("`skill`", skill))
        if value is not None
    ]
    if len(ways) > 1:
        raise UsageError(
            f"give the Difficulty one way only, not {' and '.join(ways)}: a number, "
            "`half POOL` (taking half) or `skill N` (the opponent's Skill)"
        )
    if given is not None:
        difficulty = Difficulty(given)
    elif half is not None:
        difficulty = Difficulty(rules.taking_half(half), "half", half)
    elif skill is not None:
        difficulty = Difficulty(rules.skill_difficulty(skill), "skill", skill)
    else:
        default = rules.DEFAULT_DIFFICULTY if room_default is None else room_default
        difficulty = Difficulty(default, "default")
    equipment = parsed.word("equip")
    if equipment is not None:
        if equipment not in rules.EQUIPMENT:
            close = suggest(equipment, list(rules.EQUIPMENT))
            hint = f" Did you mean `{close}`?" if close else ""
            raise UsageError(
                f"`equip` takes {', '.join(list(rules.EQUIPMENT)[:-1])} or none, "
                f"not `{shorten(equipment)}`.{hint}"
            )
        if rules.EQUIPMENT[equipment] is None:
            raise UsageError(
                "without the equipment it needs, the task is impossible: there is nothing to roll"
            )
    difficulty = replace(
        difficulty,
        equipment=equipment,
        harder=parsed.int("harder") or 0,
        easier=parsed.int("easier") or 0,
    )
    value = difficulty.value
    if value < rules.MIN_DIFFICULTY:
        raise UsageError(
            f"`easier {difficulty.easier}` would take the Difficulty to {value}; "
            f"it cannot go below {rules.MIN_DIFFICULTY}"
        )
    if value > rules.MAX_DIFFICULTY:
        raise UsageError(
            f"the modifiers take the Difficulty to {value}; "
            f"it can be at most {rules.MAX_DIFFICULTY}"
        )
    return difficulty


# --- rendering ----------------------------------------------------------------------------------


def _roles(dice_: rules.Dice, verdict: rules.Verdict) -> tuple[list[Role], list[Role]]:
    def role(face: int, hunger: bool) -> Role:
        if face == rules.CRITICAL_FACE and dice_.pairs:
            return Role.CRITICAL
        if rules.is_success(face):
            return Role.SUCCESS
        if hunger and face == 1 and verdict.result is rules.Result.BESTIAL_FAILURE:
            return Role.BOTCH
        return Role.FAILURE

    return [role(f, False) for f in dice_.regular], [role(f, True) for f in dice_.hunger]


def _face_nodes(
    dice_: rules.Dice, verdict: rules.Verdict, rerolled: Sequence[int] = ()
) -> list[Node]:
    regular_roles, hunger_roles = _roles(dice_, verdict)
    regular = [
        Die(face, role, 10, frozenset({"rerolled"}) if index in rerolled else frozenset())
        for index, (face, role) in enumerate(zip(dice_.regular, regular_roles, strict=True))
    ]
    hunger = [
        Die(face, role, 10, frozenset({"hunger"}))
        for face, role in zip(dice_.hunger, hunger_roles, strict=True)
    ]
    nodes: list[Node] = dice(regular)
    if hunger:
        nodes += [Text(" | Hunger " if regular else "Hunger "), *dice(hunger)]
    return nodes


def _pairs_text(pairs: int) -> str:
    return "a pair of 10s: +2" if pairs == 1 else f"{pairs} pairs of 10s: +{2 * pairs}"


def verdict_nodes(
    verdict: rules.Verdict, pairs: int, contest: bool, actor: str | None = None
) -> list[Node]:
    """The result line: win, critical, messy critical, failure, bestial or total failure."""
    counted = plural(verdict.successes, "success")
    if contest:
        counted += f" against {verdict.difficulty}"
    short = -verdict.margin
    cost = " The Storyteller may offer a win at a cost." if verdict.win_at_cost else ""
    tie = (
        f" (a tie goes to {actor or 'you'})"
        if contest and verdict.win and verdict.margin == 0
        else ""
    )
    result = verdict.result
    if result is rules.Result.MESSY_CRITICAL:
        return [
            bold("Messy critical!"),
            Text(
                f" {counted}, margin {verdict.margin}{tie} "
                f"({_pairs_text(pairs)}, and a Hunger die shows 10)"
            ),
        ]
    if result is rules.Result.CRITICAL:
        return [
            bold("Critical win!"),
            Text(f" {counted}, margin {verdict.margin}{tie} ({_pairs_text(pairs)})"),
        ]
    if result is rules.Result.SUCCESS:
        return [bold("Win"), Text(f" — {counted}, margin {verdict.margin}{tie}")]
    if result is rules.Result.BESTIAL_FAILURE:
        count = f"{counted}, {short} short" if verdict.successes else "no successes"
        return [bold("Bestial failure!"), Text(f" — {count}, and a Hunger die shows 1.{cost}")]
    if result is rules.Result.TOTAL_FAILURE:
        return [bold("Total failure"), Text(" — no successes at all.")]
    return [bold("Failure"), Text(f" — {counted}, {short} short.{cost}")]


def render(outcome: V5Outcome) -> list[Node]:
    request = outcome.request
    actor = request.actor
    verdict = outcome.verdict
    if outcome.actor is None:
        assert request.difficulty is not None
        value = request.difficulty.value
        needed = rules.automatic_successes(value)
        counted = f"{needed}: {value} counts as {needed}" if needed != value else f"{value}"
        return [
            Text(f"{side_text(actor)}, {difficulty_text(request.difficulty)}: "),
            bold("Automatic win"),
            Text(
                f" — no roll needed ({plural(actor.pool, 'dice')} is at least twice "
                f"Difficulty {counted}); margin {verdict.margin}"
            ),
        ]
    body: list[Node] = []
    names = outcome.names
    mine = outcome.rerolled if outcome.rerolled_side == "actor" else ()
    if outcome.opponent is not None and request.versus is not None:
        theirs = outcome.rerolled if outcome.rerolled_side == "opponent" else ()
        label = f"{names[0]}, " if names else ""
        body += [Text(f"{label}{side_text(actor)}: ")]
        body += _face_nodes(outcome.actor, verdict, mine)
        opponent_verdict = rules.judge(outcome.opponent, 0)
        label = f"{names[1]}, " if names else "Opposition, "
        body += [BR, Text(f"{label}{side_text(request.versus)}: ")]
        body += _face_nodes(outcome.opponent, opponent_verdict, theirs)
        body += [Text(f" — {plural(outcome.opponent.successes, 'success')}")]
    else:
        assert request.difficulty is not None
        body += [Text(f"{side_text(actor)}, {difficulty_text(request.difficulty)}: ")]
        body += _face_nodes(outcome.actor, verdict, mine)
    contest = outcome.opponent is not None
    body += [
        BR,
        *verdict_nodes(verdict, outcome.actor.pairs, contest, names[0] if names else None),
    ]
    if outcome.strategy is not None:
        before = " ".join(str(face) for face in outcome.previous)
        rerolled = outcome.rerolled_dice
        regular = rerolled.regular if rerolled is not None else ()
        after = " ".join(str(regular[index]) for index in outcome.rerolled)
        body += [
            BR,
            Text(f"Willpower re-roll ({_how(outcome.strategy)}): {before} → {after}. "),
            Text("It costs one Superficial damage to Willpower."),
        ]
    return body


def render_rouse(outcome: RouseOutcome) -> list[Node]:
    result = outcome.result
    checks = len(result.faces)
    label = "Rouse check" if checks == 1 else f"{checks} rouse checks"
    roles = [Role.SUCCESS if rules.check_passes(f) else Role.FAILURE for f in result.faces]
    body: list[Node] = [Text(f"{label}: ")]
    body += dice([Die(face, role) for face, role in zip(result.faces, roles, strict=True)])
    if checks == 1:
        summary = "passed" if result.passed else "failed"
    else:
        summary = f"{result.passed} passed, {result.failed} failed"
    body += [Text(" — "), bold(summary), BR]
    before, after = result.hunger_before, result.hunger_after
    if before is None or after is None:
        if result.failed:
            body += [Text(f"Hunger rises by {result.failed}.")]
        else:
            body += [Text("Hunger does not rise.")]
    elif after == before:
        note = f" (it cannot rise above {result.most})" if result.capped else ""
        body += [Text("Hunger stays at "), bold(str(after)), Text(f"{note}.")]
    else:
        note = f" ({result.most} is the most it can be)" if result.capped else ""
        body += [Text(f"Hunger {before} → "), bold(str(after)), Text(f"{note}.")]
    return body
