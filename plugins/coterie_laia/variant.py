"""The ``laia`` rule set as a coterie variant: chat grammar, requests, outcomes and the reply layout
the LAIA community already knows (see docs/rules/laia.md)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from coterie.dice import d10
from coterie.dice.odds import Distribution, require_rules
from coterie.errors import UsageError
from coterie.framework.grammar import Grammar, Option, Parsed
from coterie.framework.variant import HouseRule, Outcome, RoomSettings, Variant
from coterie.records import dataclass
from coterie.render.elements import BR, Node, Text, bold, code, italic
from coterie.rulekit import pools
from coterie.rulekit.pools import POOL, difficulty_option, difficulty_slot, plural
from coterie_laia import rules
from coterie_laia.odds import odds as exact_odds
from coterie_laia.requests import LaiaRequest, Side

DIFFICULTY = difficulty_slot(rules.MIN_DIFFICULTY, rules.MAX_DIFFICULTY, rules.DEFAULT_DIFFICULTY)


SPECIALTY = Option(
    "spec",
    "flag",
    "a specialty applies: each 10 counts as two successes unless a 1 cancels it",
    aliases=("specialty", "speciality"),
    key="specialty",
)


RETRY = Option(
    "retry",
    "int",
    "earlier failed attempts at this task: difficulty +N",
    minimum=0,
    maximum=20,
)


EXTENDED = Option(
    "ext",
    "int",
    "extended action needing TARGET successes",
    aliases=("extended",),
    minimum=1,
    maximum=1000,
    metavar="TARGET",
)


PROGRESS = Option(
    "progress",
    "int",
    "successes already gathered toward the target",
    minimum=0,
    maximum=1000,
    metavar="P",
)


OPPONENT_PROGRESS = replace(PROGRESS, help="the opposition's tally so far (extended and resisted)")


#: two ``!roll`` calls written right, for help and for errors that teach
EXAMPLES = ("7 6", "4+3 8 spec")

GRAMMAR = Grammar(
    example=EXAMPLES[0],
    usage="!roll POOL [DIFFICULTY] [spec] [retry N] [ext TARGET [progress P]] "
    "[vs POOL [DIFFICULTY] [spec] [progress P]] [# comment]",
    positionals=(POOL, DIFFICULTY),
    options=(
        difficulty_option(rules.MIN_DIFFICULTY, rules.MAX_DIFFICULTY),
        SPECIALTY,
        RETRY,
        EXTENDED,
        PROGRESS,
    ),
    versus=Grammar(
        usage="vs POOL [DIFFICULTY] [spec] [progress P]",
        positionals=(POOL, DIFFICULTY),
        options=(SPECIALTY, OPPONENT_PROGRESS),
    ),
)


HOUSE_RULES = (
    HouseRule("trying_again", True, "`retry N` raises the difficulty by N after failed attempts"),
    HouseRule("botch_wipes_extended", True, "a botch throws away an extended action's progress"),
)


@dataclass(frozen=True)
class LaiaOutcome(Outcome):
    request: LaiaRequest
    actor: rules.Throw
    opponent: rules.Throw | None = None
    variant: str = "laia"
    #: a contest between two chat users: the challenger's and the answerer's names
    names: tuple[str, str] | None = None

    @property
    def faces(self) -> tuple[int, ...]:  # type: ignore[override]
        return self.actor.faces

    @property
    def outcome(self) -> str:  # type: ignore[override]
        return self.actor.outcome

    @property
    def successes(self) -> int:  # type: ignore[override]
        """The signed sum, negative on a botch."""
        return self.actor.total

    @property
    def degree(self) -> str | None:  # type: ignore[override]
        return self.actor.degree

    @property
    def details(self) -> str:
        return rules.details(self.request.actor.pool, self.actor.difficulty, self.actor.faces)

    @property
    def resisted(self) -> d10.Resisted | None:
        if self.opponent is None:
            return None
        return rules.resisted(self.actor, self.opponent)

    @property
    def extended(self) -> d10.Extended | None:
        request = self.request
        if request.target is None or request.versus is not None:
            return None
        state = d10.Extended(request.target, progress=request.actor.progress)
        return rules.extended_step(state, self.actor, botch_wipes=request.botch_wipes)

    @property
    def contest(self) -> d10.ExtendedResisted | None:
        request = self.request
        if request.target is None or request.versus is None or self.opponent is None:
            return None
        state = d10.ExtendedResisted(
            request.target, actor=request.actor.progress, opponent=request.versus.progress
        )
        return rules.extended_resisted_step(
            state, self.actor, self.opponent, botch_wipes=request.botch_wipes
        )

    def extra_json(self) -> dict[str, Any]:
        request, actor = self.request, self.actor
        data: dict[str, Any] = {
            "pool": request.actor.pool,
            "difficulty": actor.difficulty,
            "difficulty_label": rules.difficulty_label(actor.difficulty),
            "specialty": actor.specialty,
            "rolled_successes": actor.rolled,
            "ones": actor.ones,
            "cancelled": len(actor.pairs),
            "specialty_bonus": actor.bonus,
            "retry": request.retry,
            "details": self.details,
        }
        if self.opponent is not None and request.versus is not None:
            resisted = self.resisted
            assert resisted is not None
            data["versus"] = {
                "faces": list(self.opponent.faces),
                "pool": request.versus.pool,
                "difficulty": self.opponent.difficulty,
                "specialty": self.opponent.specialty,
                "successes": self.opponent.total,
                "outcome": self.opponent.outcome,
                "details": rules.details(
                    request.versus.pool, self.opponent.difficulty, self.opponent.faces
                ),
                "winner": resisted.winner,
                "net": resisted.net,
            }
        extended = self.extended
        if extended is not None:
            data["extended"] = pools.extended_json(extended)
        contest = self.contest
        if contest is not None:
            data["contest"] = pools.tally_json(contest)
        return data

    def render(self) -> list[Node]:
        return [*head(self), BR, *body(self)]


class LaiaVariant(pools.StorytellerActions, Variant[LaiaRequest, LaiaOutcome]):
    name = "laia"
    examples = EXAMPLES
    title = "Vampire: the Masquerade V20 — LAIA house rules"
    sides = 10
    default_difficulty = rules.DEFAULT_DIFFICULTY
    difficulty_range = (rules.MIN_DIFFICULTY, rules.MAX_DIFFICULTY)
    summary = (
        "d10 pool against a difficulty (default 6): # SUM = successes minus 1s, the 1s cancelling "
        "from the left; spec makes 10s count twice; a negative sum is a botch."
    )
    grammar = GRAMMAR
    pure_build = True
    house_rules = HOUSE_RULES
    extra_prefixes = ("?",)

    def build(self, parsed: Parsed, settings: RoomSettings) -> LaiaRequest:
        default = self.room_difficulty(settings) or rules.DEFAULT_DIFFICULTY
        retry = parsed.int("retry") or 0
        if retry and not settings.rule(self, "trying_again"):
            raise UsageError("this room does not raise the difficulty for trying again")
        actor = _side(parsed, default, retry=retry)
        target = parsed.int("ext")
        progress = parsed.int("progress")
        if progress is not None and target is None:
            raise UsageError("`progress` goes with `ext TARGET` (an extended action)")
        if target is not None and (progress or 0) >= target:
            raise UsageError(
                f"progress {progress} already reaches the target {target}: the action is done"
            )
        actor = replace(actor, progress=progress or 0)
        versus = None
        if parsed.versus is not None:
            opponent_progress = parsed.versus.int("progress")
            if opponent_progress is not None and target is None:
                raise UsageError("`progress` goes with `ext TARGET` (an extended action)")
            if target is not None and (opponent_progress or 0) >= target:
                raise UsageError(
                    f"the opposition's progress {opponent_progress} already reaches the target "
                    f"{target}: the contest is over"
                )
            versus = replace(_side(parsed.versus, default), progress=opponent_progress or 0)
        return LaiaRequest(
            actor=actor,
            base_difficulty=parsed.int("difficulty") or default,
            retry=retry,
            target=target,
            versus=versus,
            botch_wipes=bool(settings.rule(self, "botch_wipes_extended")),
        )

    def dice_count(self, request: LaiaRequest) -> int:
        return request.dice

    def odds(self, request: LaiaRequest, options: frozenset[str] = frozenset()) -> Distribution:
        require_rules(self, LaiaVariant)
        return exact_odds(self, request)

    def evaluate(self, request: LaiaRequest, faces: Sequence[int]) -> LaiaOutcome:
        if len(faces) != request.dice:
            raise UsageError(f"this roll needs {request.dice} dice, but {len(faces)} were given")
        wrong = [face for face in faces if not 1 <= face <= self.sides]
        if wrong:
            raise UsageError(
                f"a d{self.sides} cannot show {wrong[0]}: faces go from 1 to {self.sides}"
            )
        own = request.actor.pool
        actor = rules.throw(
            faces[:own], request.actor.difficulty, specialty=request.actor.specialty
        )
        opponent = None
        if request.versus is not None:
            opponent = rules.throw(
                faces[own:], request.versus.difficulty, specialty=request.versus.specialty
            )
        return LaiaOutcome(request=request, actor=actor, opponent=opponent, variant=self.name)

    def compose(self, outcomes: Sequence[LaiaOutcome], who: str, comment: str | None) -> list[Node]:
        """Each throw opens with the two lines of the community's old bot, ``# SUM`` and
        ``Details:[...]``, then the result word; the roller and comment follow the first throw's
        result, and each throw ends with the detailed reading of its dice."""
        reply: list[Node] = []
        for index, outcome in enumerate(outcomes):
            if index:
                reply.append(BR)
            reply += [*head(outcome), BR]
            if index == 0:
                reply.append(bold(who))
                if comment:
                    reply += [Text(" — "), italic(comment)]
                reply.append(BR)
            reply += body(outcome)
        return reply

    def check_team(self, requests: Sequence[LaiaRequest]) -> None:
        """Teamwork members each throw a pool of their own (a specialty and `retry` are fine)."""
        for request in requests:
            if request.versus is not None or request.target is not None:
                raise UsageError(
                    "teamwork members throw their own plain pools (no `vs` or `ext`); "
                    "add the team's total to an extended action's `progress` yourself"
                )

    def degree_label(self, successes: int) -> str | None:
        label = rules.degree(successes)
        return f"{label} success" if label else "Failure"

    def team(self, outcomes: Sequence[LaiaOutcome]) -> list[Node]:
        result = rules.teamwork([outcome.actor for outcome in outcomes])
        parts = " + ".join(str(s) for s in result.successes)
        line: list[Node] = [Text("Teamwork: "), bold(plural(result.total, "success"))]
        if len(result.successes) > 1:
            line.append(Text(f" ({parts})"))
        label = rules.degree(result.total)
        line.append(Text(f" — {label} success" if label else " — Failure"))
        if result.botched:
            members = [str(i) for i, botched in enumerate(result.botches, start=1) if botched]
            who = "member" if len(members) == 1 else "members"
            line.append(
                Text(f"; but {who} {', '.join(members)} botched, which can ruin it for everyone")
            )
        return line

    def help(self) -> list[Node]:
        body_: list[Node] = [
            code(GRAMMAR.usage),
            BR,
            code("?throw POOL DIFFICULTY # comment"),
            Text(" — the same, written the way LAIA players are used to"),
            BR,
            Text(self.summary),
            BR,
            Text("The reply starts with "),
            code("# SUM"),
            Text(" and "),
            code(rules.details(5, 8, [9, 1, 1, 8, 1])),
            Text(" (the dice in the order thrown), then the result and how each die counted."),
            BR,
            Text("POOL is a number or a sum, like "),
            code("3+4"),
            Text("; a penalty is subtracted, like "),
            code("3+4-1"),
            Text("."),
            BR,
        ]
        for option in GRAMMAR.options:
            body_ += [code(option.syntax()), Text(f" — {option.help}"), BR]
        body_ += [
            code("vs POOL [DIFFICULTY] [spec]"),
            Text(" — resisted: the other side throws too; the higher sum wins by the difference"),
            BR,
            code("!team POOL DIFFICULTY; POOL DIFFICULTY; ..."),
            Text(" — teamwork: each character throws, the successes are added"),
            BR,
            Text("Difficulties: "),
            Text(", ".join(f"{k} {v}" for k, v in rules.DIFFICULTY_LABELS.items())),
            Text(" (2 and 10 are allowed; 10 comes with a warning)"),
            BR,
            Text(
                "Degrees: "
                + ", ".join(f"{i} {d}" for i, d in enumerate(rules.DEGREES, start=1))
                + " (or more); 0 is a failure, below 0 a botch"
            ),
        ]
        return body_


def _side(parsed: Parsed, default_difficulty: int, *, retry: int = 0) -> Side:
    written = parsed.pool()
    pool = pools.checked_pool(written, max_traits=None)
    assert written is not None
    base = parsed.int("difficulty") or default_difficulty
    difficulty = rules.retry_difficulty(base, retry)
    if difficulty > rules.MAX_DIFFICULTY:
        raise UsageError(
            f"after {retry} failed attempt{'' if retry == 1 else 's'} the difficulty would be "
            f"{difficulty}, above {rules.MAX_DIFFICULTY}: the task is now beyond this character"
        )
    return Side(written, pool, difficulty, specialty=parsed.flag("specialty"))


# --- rendering ----------------------------------------------------------------------------------


def result_word(roll: rules.Throw) -> Node:
    """``Complete success``, ``Failure`` or ``Botch!``."""
    if roll.outcome == "success":
        return bold(f"{roll.degree} success")
    return bold("Botch!" if roll.botch else "Failure")


def head(outcome: LaiaOutcome) -> list[Node]:
    """The community's familiar lines: ``# SUM``, ``Details:[...]``, then the result word."""
    return [
        Text("# "),
        bold(str(outcome.actor.total)),
        BR,
        Text(outcome.details),
        BR,
        result_word(outcome.actor),
    ]


def count_line(roll: rules.Throw) -> str:
    """How the sum came about: ``2 successes - 3 ones = -1 (cancelled from the left: 9, 8)``."""
    text = plural(roll.rolled, "success")
    if roll.bonus:
        text += f" + {roll.bonus} for the specialty"
    if roll.ones:
        text += f" - {plural(roll.ones, 'one')}"
    if roll.bonus or roll.ones:
        text += f" = {roll.total}"
    notes: list[str] = []
    if roll.pairs:
        faces = ", ".join(str(roll.faces[i]) for i in roll.cancelled)
        notes.append(f"cancelled from the left: {faces}")
    if roll.specialty and any(roll.faces[i] == 10 for i in roll.cancelled):
        notes.append("a cancelled 10 keeps no specialty bonus")
    if notes:
        text += f" ({'; '.join(notes)})"
    return text


def setup(side: Side, retry: int = 0, label: str = "") -> str:
    bits = [
        plural(side.pool, "dice"),
        f"difficulty {side.difficulty} ({rules.difficulty_label(side.difficulty)})",
    ]
    if side.specialty:
        bits.append("specialty")
    if retry:
        bits.append(f"+{retry} for trying again")
    prefix = f"{label}: " if label else ""
    return prefix + ", ".join(bits) + ": "


def difficulty_note(side: Side) -> list[Node]:
    """The document's cautions: at 10 bigger pools botch more often; at 3 or less a roll may not
    even be needed."""
    if side.difficulty >= rules.CAUTION_DIFFICULTY:
        chance = rules.botch_chance_at_ten(side.pool)
        return [
            BR,
            italic(
                f"⚠ Difficulty {side.difficulty} is off the chart: at 10 a bigger pool botches "
                f"more often, not less ({plural(side.pool, 'dice')}: {float(chance):.0%} "
                "chance of a botch). Use it with care."
            ),
        ]
    if side.difficulty <= rules.HARDLY_WORTH_A_ROLL:
        return [
            BR,
            italic("A task this easy may not need a roll at all (the Storyteller decides)."),
        ]
    return []


def body(outcome: LaiaOutcome) -> list[Node]:
    """The richer reading under the familiar lines: every die with its role, how the sum came
    about, the difficulty cautions, and extended or resisted progress."""
    request, actor = outcome.request, outcome.actor
    lines: list[Node] = [Text(setup(request.actor, request.retry))]
    lines += pools.face_nodes(actor.faces, actor.roles)
    lines += [BR, Text(count_line(actor)), *difficulty_note(request.actor)]
    extended = outcome.extended
    if extended is not None:
        lines += [BR, Text("Extended: ")]
        if actor.botch and extended.wiped:
            lines.append(
                Text(
                    f"the botch wipes out {request.actor.progress} "
                    f"{'success' if request.actor.progress == 1 else 'successes'} "
                    "(start again only if the Storyteller allows) — "
                )
            )
        elif actor.botch:
            lines.append(Text("the botch adds nothing — "))
        lines.append(bold(f"{extended.progress}/{extended.target}"))
        if extended.done:
            lines.append(Text(" — done!"))
    if outcome.opponent is not None and request.versus is not None:
        opposed = f"Opposed ({outcome.names[1]})" if outcome.names else "Opposed"
        opponent = outcome.opponent
        lines += [BR, Text(setup(request.versus, label=opposed))]
        lines += pools.face_nodes(opponent.faces, opponent.roles)
        lines += [BR, Text(f"{opposed}: # {opponent.total} — "), result_word(opponent)]
        lines += [Text(f": {count_line(opponent)}"), *difficulty_note(request.versus)]
        lines += [BR, *verdict(outcome)]
    return lines


def verdict(outcome: LaiaOutcome) -> list[Node]:
    assert outcome.resisted is not None
    return pools.resisted_verdict(outcome.resisted, outcome.contest, rules.degree, outcome.names)
