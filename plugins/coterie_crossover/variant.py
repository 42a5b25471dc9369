"""The ``crossover`` rule set as a coterie variant: chat grammar, requests, outcomes, rendering."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from coterie.dice import d10
from coterie.dice.odds import Distribution, require_rules
from coterie.errors import UsageError
from coterie.framework.grammar import Grammar, Option, Parsed
from coterie.framework.variant import HouseRule, Outcome, RoomSettings, Variant
from coterie.records import dataclass
from coterie.render.elements import BR, Node, Text, bold, code, italic
from coterie.rulekit import pools
from coterie.rulekit.pools import POOL, WILLPOWER, difficulty_option, difficulty_slot, plural
from coterie_crossover import rules
from coterie_crossover.odds import odds as exact_odds
from coterie_crossover.requests import CrossoverRequest, Side, side

DIFFICULTY = difficulty_slot(rules.MIN_DIFFICULTY, rules.MAX_DIFFICULTY, rules.DEFAULT_DIFFICULTY)


DIFF = difficulty_option(rules.MIN_DIFFICULTY, rules.MAX_DIFFICULTY)


PROGRESS = Option(
    "progress",
    "int",
    "successes already gathered toward the target",
    minimum=0,
    maximum=1000,
    metavar="P",
)


#: two ``!roll`` calls written right, for help and for errors that teach
EXAMPLES = ("7 6", "3+4 8 wp")

GRAMMAR = Grammar(
    example=EXAMPLES[0],
    usage="!roll POOL [DIFFICULTY] [wp] [auto] [ext TARGET [progress P]] "
    "[vs POOL [DIFFICULTY] [wp] [progress P]] [# comment]",
    positionals=(POOL, DIFFICULTY),
    options=(
        DIFF,
        WILLPOWER,
        pools.NO_SPECIALTY,
        Option("auto", "flag", "take an automatic (marginal) success instead of rolling"),
        Option(
            "ext",
            "int",
            "extended action needing TARGET successes in all",
            aliases=("extended",),
            minimum=1,
            maximum=1000,
            metavar="TARGET",
        ),
        PROGRESS,
    ),
    versus=Grammar(
        usage="vs POOL [DIFFICULTY] [wp] [progress P]",
        positionals=(POOL, DIFFICULTY),
        options=(
            DIFF,
            WILLPOWER,
            pools.NO_SPECIALTY,
            Option(
                "progress",
                "int",
                "the other side's tally so far (extended resisted)",
                minimum=0,
                maximum=1000,
                metavar="P",
            ),
        ),
        named_traits=rules.TEN_POINT_TRAITS,
        named_trait_rule=pools.TEN_POINT_RULE,
    ),
    named_traits=rules.TEN_POINT_TRAITS,
    named_trait_rule=pools.TEN_POINT_RULE,
)


HOUSE_RULES = (
    HouseRule("auto_success", True, "`auto` may take an automatic success when pool >= difficulty"),
)


@dataclass(frozen=True)
class CrossoverOutcome(Outcome):
    request: CrossoverRequest
    actor: rules.PoolRoll | None
    opponent: rules.PoolRoll | None = None
    variant: str = "crossover"
    #: a contest between two chat users: the challenger's and the answerer's names
    names: tuple[str, str] | None = None

    @property
    def faces(self) -> tuple[int, ...]:  # type: ignore[override]
        return self.actor.faces if self.actor else ()

    @property
    def botch(self) -> bool:
        return self.actor is not None and self.actor.botch

    @property
    def outcome(self) -> str:  # type: ignore[override]
        return "success" if self.actor is None else self.actor.outcome

    @property
    def successes(self) -> int:  # type: ignore[override]
        if self.actor is None:
            return rules.AUTOMATIC_SUCCESSES
        return self.actor.net if self.outcome == "success" else 0

    @property
    def degree(self) -> str | None:  # type: ignore[override]
        return rules.degree(self.successes)

    @property
    def momentous(self) -> bool:
        return rules.momentous(self.successes)

    @property
    def resisted(self) -> d10.Resisted | None:
        if self.actor is None or self.opponent is None:
            return None
        return rules.resisted(self.actor, self.opponent)

    @property
    def extended(self) -> d10.Extended | None:
        request = self.request
        if request.target is None or request.versus is not None or self.actor is None:
            return None
        state = rules.Extended(request.target, progress=request.actor.progress)
        return rules.extended_step(state, self.actor)

    @property
    def race(self) -> rules.Race | None:
        request = self.request
        if request.target is None or request.versus is None or not self.actor or not self.opponent:
            return None
        state = rules.Race(
            request.target, actor=request.actor.progress, opponent=request.versus.progress
        )
        return rules.race_step(state, self.actor, self.opponent)

    def extra_json(self) -> dict[str, Any]:
        request = self.request
        data: dict[str, Any] = {
            "pool": request.actor.pool,
            "difficulty": request.actor.difficulty,
            "ones": self.actor.ones if self.actor else 0,
            "rolled_successes": self.actor.rolled if self.actor else 0,
            "willpower": request.actor.willpower,
            "automatic": request.automatic,
            "momentous": self.momentous,
        }
        resisted = self.resisted
        if self.opponent is not None and request.versus is not None and resisted is not None:
            data["versus"] = {
                "faces": list(self.opponent.faces),
                "pool": request.versus.pool,
                "difficulty": request.versus.difficulty,
                "successes": self.opponent.net,
                "outcome": self.opponent.outcome,
                "winner": resisted.winner,
                "net": resisted.net,
            }
        extended = self.extended
        if extended is not None:
            data["extended"] = pools.extended_json(extended)
        race = self.race
        if race is not None:
            data["contest"] = pools.tally_json(race)
        return data

    def render(self) -> list[Node]:
        return render(self)


class CrossoverVariant(pools.StorytellerActions, Variant[CrossoverRequest, CrossoverOutcome]):
    name = "crossover"
    examples = EXAMPLES
    title = "Crossover World of Darkness (vampires, werewolves, mages)"
    sides = 10
    default_difficulty = rules.DEFAULT_DIFFICULTY
    difficulty_range = (rules.MIN_DIFFICULTY, rules.MAX_DIFFICULTY)
    #: werewolves act again with Rage (004, "Multiple Actions"), vampires with Celerity
    initiative_extras = ("celerity", "rage")
    summary = (
        "d10 pool against a difficulty 2-10 (usually 3-9, default 6); 10s always succeed, each 1 "
        "cancels a success; a 1 with no success rolled is a botch. Rage, Willpower and Gnosis "
        "are rolled alone."
    )
    grammar = GRAMMAR
    pure_build = True
    house_rules = HOUSE_RULES

    def build(self, parsed: Parsed, settings: RoomSettings) -> CrossoverRequest:
        pools.refuse_specialty(parsed, self.name)
        default = self.room_difficulty(settings) or rules.DEFAULT_DIFFICULTY
        actor = side(parsed, default)
        automatic = parsed.flag("auto")
        target = parsed.int("ext")
        progress = parsed.int("progress")
        if progress is not None and target is None:
            raise UsageError("`progress` goes with `ext TARGET` (an extended action)")
        if target is not None and (progress or 0) >= target:
            raise UsageError(
                f"progress {progress} already reaches the target {target}: the action is done"
            )
        versus = None
        if parsed.versus is not None:
            versus = side(parsed.versus, default)
            if parsed.versus.int("progress") is not None and target is None:
                raise UsageError("`progress` goes with `ext TARGET` (an extended action)")
            if target is not None and versus.progress >= target:
                raise UsageError(
                    f"the other side's progress {versus.progress} already reaches the target "
                    f"{target}: the contest is over"
                )
        if automatic:
            if not settings.rule(self, "auto_success"):
                raise UsageError("this room does not use automatic successes; roll instead")
            if actor.willpower:
                raise UsageError("`auto` rolls no dice, so Willpower adds nothing to it")
            if versus is not None or target is not None:
                raise UsageError("resisted and extended actions are always rolled, never `auto`")
            if not rules.automatic_success_allowed(actor.pool, actor.difficulty):
                raise UsageError(
                    f"an automatic success needs at least as many dice as the difficulty "
                    f"({plural(actor.pool, 'dice')} < difficulty {actor.difficulty}); roll instead"
                )
        return CrossoverRequest(actor=actor, automatic=automatic, target=target, versus=versus)

    def dice_count(self, request: CrossoverRequest) -> int:
        return request.dice

    def odds(
        self, request: CrossoverRequest, options: frozenset[str] = frozenset()
    ) -> Distribution:
        require_rules(self, CrossoverVariant)
        return exact_odds(self, request)

    def evaluate(self, request: CrossoverRequest, faces: Sequence[int]) -> CrossoverOutcome:
        if len(faces) != request.dice:
            raise UsageError(f"this roll needs {request.dice} dice, but {len(faces)} were given")
        own = 0 if request.automatic else request.actor.pool
        actor = None
        if not request.automatic:
            actor = rules.roll_pool(
                faces[:own], request.actor.difficulty, willpower=request.actor.willpower
            )
        opponent = None
        if request.versus is not None:
            opponent = rules.roll_pool(
                faces[own:], request.versus.difficulty, willpower=request.versus.willpower
            )
        return CrossoverOutcome(request=request, actor=actor, opponent=opponent, variant=self.name)

    def check_team(self, requests: Sequence[CrossoverRequest]) -> None:
        """Each teamwork member rolls a plain pool of their own."""
        for request in requests:
            if request.automatic or request.versus or request.target:
                raise UsageError(
                    "teamwork members each roll a plain pool (no `auto`, `vs` or `ext`)"
                )

    def degree_label(self, successes: int) -> str | None:
        if successes <= 0:
            return None
        label = rules.degree(successes)
        return f"{label}, a momentous result" if rules.momentous(successes) else label

    def team(self, outcomes: Sequence[CrossoverOutcome]) -> list[Node]:
        rolls = [outcome.actor for outcome in outcomes if outcome.actor is not None]
        result = rules.teamwork(rolls)
        line: list[Node] = [Text("Teamwork: "), bold(plural(result.total, "success"))]
        if result.total:
            line.append(Text(f" — {rules.degree(result.total)}"))
            if rules.momentous(result.total):
                line.append(Text(", a momentous result"))
        if result.botched:
            members = [str(i) for i, botched in enumerate(result.botches, start=1) if botched]
            who = "member" if len(members) == 1 else "members"
            line.append(
                Text(f" — but {who} {', '.join(members)} botched, and that can hurt everyone")
            )
        return line

    def help_notes(self) -> list[Node]:
        """The chronicle's ratings scale at the foot of the bare ``!help``."""
        scale = ", ".join(f"{value} {label}" for value, label in rules.RATINGS.items())
        return [Text(f"Ratings: {scale}.")]

    def help_topics(self) -> dict[str, list[Node]]:
        return {"ratings": ratings_help(), "actions": actions_help()}

    def help(self) -> list[Node]:
        low, high = rules.USUAL_DIFFICULTIES
        body: list[Node] = [code(GRAMMAR.usage), BR, Text(self.summary), BR]
        body += [
            Text("POOL is a number or two Traits added, like "),
            code("3+4"),
            Text("; a penalty is subtracted, like "),
            code("3+4-1"),
            Text(". A Trait rated up to 10 is the whole pool: "),
            code("rage 6"),
            Text(", "),
            code("willpower 7"),
            Text(", "),
            code("gnosis 4"),
            Text("."),
            BR,
        ]
        for option in GRAMMAR.options:
            if option is pools.NO_SPECIALTY:
                continue
            body += [code(option.syntax()), Text(f" — {option.help}"), BR]
        body += [
            code("vs POOL [DIFFICULTY]"),
            Text(" — resisted: the other side rolls too; more successes wins"),
            BR,
            code("ext TARGET … vs POOL … progress P"),
            Text(" — extended resisted: each side gathers its own successes; first to TARGET wins"),
            BR,
            Text(f"Difficulties (usually {low}-{high}): "),
            Text(", ".join(f"{k} {v}" for k, v in rules.DIFFICULTY_LABELS.items())),
            BR,
            Text(
                "Degrees: "
                + ", ".join(f"{i} {d}" for i, d in enumerate(rules.DEGREES, start=1))
                + f" ({rules.MOMENTOUS_SUCCESSES} or more: momentous)"
            ),
            BR,
            Text("Ratings: " + ", ".join(f"{k} {v}" for k, v in rules.RATINGS.items())),
            BR,
            Text("Also: "),
            code("!multi"),
            Text(" (split the smallest pool), "),
            code("!team"),
            Text(" (teamwork), "),
            code("!move"),
            Text(" (movement)."),
        ]
        return body


# --- rendering ------------------------------------------------------------------------------------


def setup(side: Side, label: str | None = None) -> list[Node]:
    """``Rage: 6 dice, difficulty 7 (Challenging): `` — what is rolled, before the faces."""
    dice = plural(side.pool, "dice")
    if side.trait:
        dice = f"{side.trait.title()}: {dice}"
    prefix = f"{label}: " if label else ""
    label_text = rules.DIFFICULTY_LABELS[side.difficulty]
    return [Text(f"{prefix}{dice}, difficulty {side.difficulty} ({label_text}): ")]


def result_line(roll: rules.PoolRoll) -> list[Node]:
    """``3 successes — Complete (1 one cancelled 1 of 4; +1 guaranteed by Willpower)``."""
    if roll.botch:
        return [bold("Botch!"), Text(f" No success and {plural(roll.ones, 'one')}.")]
    parts: list[Node] = []
    if roll.net > 0:
        parts += [bold(plural(roll.net, "success")), Text(f" — {rules.degree(roll.net)}")]
        if rules.momentous(roll.net):
            parts.append(Text(", a momentous occasion"))
    else:
        parts.append(bold("Failure"))
    details: list[str] = []
    if roll.ones and roll.rolled:
        cancelled = min(roll.ones, roll.rolled)
        details.append(f"{plural(roll.ones, 'one')} cancelled {cancelled} of {roll.rolled}")
    if roll.willpower:
        details.append("+1 guaranteed by Willpower")
    if details:
        parts.append(Text(f" ({'; '.join(details)})"))
    return parts


def render(outcome: CrossoverOutcome) -> list[Node]:
    request = outcome.request
    if outcome.actor is None:
        actor = request.actor
        return [
            bold("Automatic success"),
            Text(
                f" — Marginal ({plural(actor.pool, 'dice')} ≥ difficulty {actor.difficulty}; "
                "no dice rolled)"
            ),
        ]
    body: list[Node] = [
        *setup(request.actor),
        *pools.face_nodes(outcome.actor.faces, outcome.actor.roles),
    ]
    body += [BR, *result_line(outcome.actor)]
    extended = outcome.extended
    if extended is not None:
        body += [BR, Text("Extended: ")]
        if extended.wiped:
            body.append(Text(f"the botch wipes out all {request.actor.progress} successes — "))
        body.append(bold(f"{extended.progress}/{extended.target}"))
        if extended.done:
            body.append(Text(" — done!"))
    if outcome.opponent is not None and request.versus is not None:
        opposed = f"Opposed ({outcome.names[1]})" if outcome.names else "Opposed"
        body += [BR, *setup(request.versus, opposed)]
        body += pools.face_nodes(outcome.opponent.faces, outcome.opponent.roles)
        body += [BR, Text(f"{opposed}: "), *result_line(outcome.opponent)]
        body += [BR, *contest_line(outcome)]
    return body


def contest_line(outcome: CrossoverOutcome) -> list[Node]:
    race = outcome.race
    if race is not None:
        line: list[Node] = [
            Text("Extended resisted: "),
            bold(f"{race.actor}/{race.target}"),
            Text(" vs "),
            bold(f"{race.opponent}/{race.target}"),
        ]
        names = outcome.names
        if race.winner == "actor":
            first = f"{names[0]} reaches" if names else "you reach"
            line.append(Text(f" — {first} the goal first and win{'s' if names else ''}!"))
        elif race.winner == "opponent":
            other = names[1] if names else "the other side"
            line.append(Text(f" — {other} reaches the goal first and wins."))
        elif race.winner == "tie":
            line.append(Text(" — both reach the goal together, dead level: a tie."))
        return line
    resisted = outcome.resisted
    assert resisted is not None
    by = Text(f" by {plural(resisted.net, 'success')}")
    if resisted.winner == "actor":
        winner = f"{outcome.names[0]} wins" if outcome.names else "you win"
        return [Text("Resisted: "), bold(winner), by]
    if resisted.winner == "opponent":
        winner = f"{outcome.names[1]} wins" if outcome.names else "the other side wins"
        return [Text("Resisted: "), bold(winner), by]
    if outcome.names:
        between = f"a tie between {outcome.names[0]} and {outcome.names[1]}"
        return [Text("Resisted: "), italic(between), Text(" — neither side gets the better")]
    return [Text("Resisted: "), italic("a tie"), Text(" — neither side gets the better")]


def ratings_help() -> list[Node]:
    body: list[Node] = [bold("Ratings"), Text(" (dots in a Trait)")]
    for value, label in rules.RATINGS.items():
        body += [BR, Text(f"{value} — {label}")]
    body += [BR, Text(f"Above 5 ({rules.BEYOND_HUMAN.lower()}): e.g. werewolf forms.")]
    return body


def actions_help() -> list[Node]:
    body: list[Node] = [bold("Actions")]
    groups = (
        ("No roll needed (unless something complicates it)", rules.AUTOMATIC_ACTIONS),
        ("Rolled", rules.ROLLED_ACTIONS),
        ("Reflexive (no roll, no action spent)", rules.REFLEXIVE_ACTIONS),
    )
    for title, items in groups:
        body += [BR, Text(f"{title}: {'; '.join(items)}.")]
    return body
