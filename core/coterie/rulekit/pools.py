"""Chat building blocks shared by the d10 Storyteller rule sets (``revised``, ``laia``,
``crossover``): the pool and difficulty slots, the checks every written pool goes through, and
small rendering helpers. Rules themselves live in :mod:`coterie.d10` and in each rule set."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, ClassVar, Protocol

from coterie.dice import d10
from coterie.dice.sources import DiceSource
from coterie.errors import UsageError
from coterie.framework.grammar import Grammar, Option, Parsed, Pool, Positional, parse
from coterie.framework.variant import InitiativeEntry, Progress, SidePart, Standing
from coterie.render.elements import Die, Node, Role, Text, bold, dice

#: the error for a Trait rated up to 10 written anywhere but alone at the start of a pool
TEN_POINT_RULE = (
    "{Trait} is rated up to 10 and is rolled alone: write `{trait} N` at the start of the pool, "
    "with nothing added to it"
)

POOL = Positional("pool", "dice pool, e.g. 7 or 3+4", kind="pool", required=True)
WILLPOWER = Option("wp", "flag", "spend a Willpower point: one automatic success", key="willpower")

#: ``spec`` in a rule set whose document has no specialty rule: read, so that it is refused with
#: the reason instead of "unknown option" (see :func:`refuse_specialty`); left out of the help
NO_SPECIALTY = Option(
    "spec", "flag", "not in these rules: no specialty rule", aliases=("specialty",), key="specialty"
)


def refuse_specialty(parsed: Parsed, rules_name: str) -> None:
    """Refuse ``spec`` on either side of a roll of a rule set without a specialty rule."""
    if parsed.flag("specialty") or (parsed.versus is not None and parsed.versus.flag("specialty")):
        raise UsageError(
            f"the {rules_name} rules have no specialty rule, so `spec` changes nothing here: the "
            "Storyteller, who sets the difficulty, may make the roll easier instead"
        )


_NUMBERS = {1: "one", 2: "two", 3: "three", 4: "four"}


def difficulty_slot(low: int, high: int, default: int) -> Positional:
    """The positional DIFFICULTY after the pool."""
    return Positional(
        "difficulty", f"difficulty {low}-{high} (default {default})", minimum=low, maximum=high
    )


def difficulty_option(low: int, high: int) -> Option:
    """``diff D`` (also ``diff=D``, ``diffD``): the difficulty as a keyword."""
    return Option(
        "diff",
        "int",
        "difficulty, as a keyword",
        key="difficulty",
        minimum=low,
        maximum=high,
        compact=True,
    )


def checked_pool(
    written: Pool | None,
    *,
    max_traits: int | None = 2,
    ten_point_traits: Sequence[str] = (),
    penalty: int = 0,
    penalty_reason: str = "",
) -> int:
    """The number of dice a written pool rolls, or a friendly error.

    * at most ``max_traits`` Traits are added (penalties are subtracted with ``-N``; a modifier
      written beside Trait names, ``Dex+Firearms+2``, is not a Trait);
    * a Trait rated up to 10 (named in ``ten_point_traits``) is rolled alone, rated 0-10;
    * ``penalty`` dice come off (e.g. multiple actions); the pool must keep at least one die.
    """
    if written is None:
        raise UsageError("the dice pool is missing")
    traits = written.added
    if max_traits is not None and len(traits) > max_traits:
        raise UsageError(
            f"`{written}` adds {len(traits)} Traits; a dice pool adds at most "
            f"{_NUMBERS.get(max_traits, str(max_traits))} "
            "(an Attribute and an Ability). Subtract penalties with `-N`."
        )
    ten_point = [
        t.trait for t in traits if t.trait is not None and t.trait.lower() in ten_point_traits
    ]
    if ten_point and len(traits) > 1:
        raise UsageError(f"{ten_point[0].title()} is rated up to 10 and is rolled alone")
    if ten_point and traits[0].dice > 10:
        raise UsageError(f"{ten_point[0].title()} is rated from 0 to 10, not {traits[0].dice}")
    pool = written.total - penalty
    if pool <= 0:
        if penalty:
            raise UsageError(
                f"{penalty_reason or 'the penalty'} takes {penalty} dice, leaving {pool}: "
                "this action cannot be attempted"
            )
        raise UsageError(f"a pool of {written.total} dice can't be rolled; it needs at least 1")
    return pool


def plural(n: int, word: str) -> str:
    """``1 success``, ``2 successes``, ``1 die``, ``3 dice``, ``2 ones``."""
    if word == "dice":
        return f"{n} {'die' if n == 1 else 'dice'}"
    return f"{n} {word}{'' if n == 1 else 'es' if word.endswith('s') else 's'}"


#: the die elements made so far, by face, role and sides: immutable, so every reply shares them
#: (a roll then allocates no element per die; there are a few hundred kinds at most)
_DICE: dict[tuple[int, Role, int], Die] = {}
_DICE_MOST = 2048


def face_nodes(faces: Sequence[int], roles: Sequence[Role], sides: int = 10) -> list[Node]:
    """Die elements for faces with their roles, separated by spaces."""
    made = _DICE
    out: list[Die] = []
    for face, role in zip(faces, roles, strict=True):
        if type(face) is not int:  # (True == 1: never mixed up with a 1)
            out.append(Die(face, role, sides))
            continue
        die = made.get((face, role, sides))
        if die is None:
            die = Die(face, role, sides)
            if len(made) < _DICE_MOST:
                made[(face, role, sides)] = die
        out.append(die)
    return dice(out)


# --- resisted and extended actions: reply lines and JSON ------------------------------------------


class Tally(Protocol):
    """Running tallies of an extended and resisted action (``d10.ExtendedResisted`` or alike)."""

    @property
    def actor(self) -> int: ...
    @property
    def opponent(self) -> int: ...
    @property
    def target(self) -> int: ...
    @property
    def winner(self) -> str | None: ...


def resisted_verdict(
    resisted: d10.Resisted,
    tally: Tally | None,
    degree: Callable[[int], str | None],
    names: tuple[str, str] | None = None,
) -> list[Node]:
    """The last line of a resisted roll: who wins and by how much, or the tallies so far. With
    ``names`` (a contest between two chat users: the challenger's, the answerer's) it names
    them; without, it speaks to the one who rolled both sides ("you", "the opposition")."""
    if tally is not None:
        line: list[Node] = [
            Text("Extended and resisted: "),
            bold(f"{tally.actor}/{tally.target}"),
            Text(" vs "),
            bold(f"{tally.opponent}/{tally.target}"),
        ]
        if tally.winner == "actor":
            first = (
                f"{names[0]} reaches the goal first and wins"
                if names
                else "you reach the goal first and win"
            )
            line.append(Text(f" — {first}!"))
        elif tally.winner == "opponent":
            who = names[1] if names else "the opposition"
            line.append(Text(f" — {who} reaches the goal first."))
        return line
    if resisted.winner == "actor":
        return [
            Text("Resisted: "),
            bold(names[0]) if names else Text("you"),
            Text(" wins with " if names else " win with "),
            bold(plural(resisted.net, "success")),
            Text(f" ({degree(resisted.net)})"),
        ]
    if resisted.winner == "opponent":
        return [
            Text("Resisted: "),
            bold(names[1]) if names else Text("the opposition"),
            Text(" wins by "),
            bold(plural(resisted.net, "success")),
        ]
    between = f" between {names[0]} and {names[1]}" if names else ""
    return [Text(f"Resisted: a standoff{between} — neither side gets through")]


def extended_json(state: d10.Extended) -> dict[str, Any]:
    """The ``extended`` object of the JSON contract."""
    return {
        "progress": state.progress,
        "target": state.target,
        "done": state.done,
        "wiped": state.wiped,
    }


def tally_json(tally: Tally) -> dict[str, Any]:
    """The ``contest`` object of the JSON contract (extended and resisted actions)."""
    return {
        "actor": tally.actor,
        "opponent": tally.opponent,
        "target": tally.target,
        "winner": tally.winner,
    }


# --- actions over several messages ----------------------------------------------------------------


def _not_written(parsed: Parsed, key: str, why: str) -> None:
    if key in parsed.values:
        raise UsageError(why)


#: extra actions a combatant may declare for ``!init``, by option word
INITIATIVE_EXTRAS = {
    "celerity": "extra actions from Celerity this turn",
    "rage": "extra actions from Rage this turn",
}
#: the largest number of extra actions in one turn
MAX_EXTRA_ACTIONS = 10


def initiative_grammar(usage: str, extras: Sequence[str]) -> Grammar:
    """``!init add NAME`` for the d10 rule sets: Dexterity + Wits, and extra actions."""
    return Grammar(
        usage=usage,
        positionals=(
            Positional("rating", "Dexterity + Wits, e.g. 6 or 3+3", kind="pool", required=True),
        ),
        options=tuple(
            Option(word, "int", INITIATIVE_EXTRAS[word], minimum=1, maximum=MAX_EXTRA_ACTIONS)
            for word in extras
        ),
    )


class StorytellerActions:
    """The chat-spanning actions of the d10 Storyteller rule sets, mixed into their variants
    (``class RevisedVariant(StorytellerActions, Variant[...])``). They ride on the one-message
    options the grammars already have — ``ext TARGET progress P``, ``retry N`` and ``vs POOL
    progress P`` — so every rule of the single-message roll (a botch wiping progress, the
    difficulty schedule, the tallies of an extended contest) applies unchanged."""

    name: ClassVar[str]
    team_mode: ClassVar[str | None] = "sum"
    #: the option words of ``!init add`` naming extra actions (after everyone's first action)
    initiative_extras: ClassVar[tuple[str, ...]] = ("celerity",)

    def initiative_usage(self) -> str:
        extras = " ".join(f"[{word} N]" for word in self.initiative_extras)
        return f"!init add NAME DEX+WITS {extras}"

    def initiative(self, name: str, words: Sequence[str], dice: DiceSource) -> InitiativeEntry:
        """The editions' initiative (the d10 documents have none of their own): Dexterity +
        Wits plus one die, the higher first; equal totals go by the higher Dexterity + Wits,
        and a die roll-off after that (docs/rules/revised.md, "Initiative")."""
        grammar = initiative_grammar(self.initiative_usage(), self.initiative_extras)
        parsed = parse(list(words), grammar)
        written = parsed.pool("rating")
        assert written is not None  # required
        rating = written.total
        if not 0 <= rating <= 20:
            raise UsageError(
                f"Dexterity + Wits is 0 to 20, not {rating}", usage=self.initiative_usage()
            )
        [die] = dice.roll(1, 10)
        extra = sum(parsed.int(word) or 0 for word in self.initiative_extras)
        return InitiativeEntry(
            name=name,
            key=(rating + die, rating),
            shown=f"Dex+Wits {rating} + {die} = {rating + die}",
            extra=extra,
        )

    extended_contests: ClassVar[bool] = True

    def prepare_extended(self, parsed: Parsed, target: int, progress: int) -> None:
        for key in ("ext", "progress"):
            _not_written(
                parsed,
                key,
                f"`for NAME` brings the action's target and progress: leave out `{key}`",
            )
        if parsed.versus is not None:
            raise UsageError("a roll toward an extended action has no `vs`; use `!contest`")
        parsed.values["ext"] = target
        if progress:
            parsed.values["progress"] = progress

    def extended_progress(self, outcome: Any) -> Progress | None:
        step = getattr(outcome, "extended", None)
        if step is None:
            return None
        return Progress(progress=step.progress, target=step.target, wiped=step.wiped)

    def prepare_retry(self, parsed: Parsed, failures: int) -> None:
        grammar = getattr(self, "grammar", None)
        if grammar is None or not any(option.name == "retry" for option in grammar.options):
            raise UsageError(f"the {self.name} rules have no difficulty schedule for trying again")
        _not_written(
            parsed, "retry", "`retry NAME` counts the failed attempts itself: leave out `retry N`"
        )
        if failures:
            parsed.values["retry"] = failures

    def prepare_contest(
        self, actor: Parsed, opponent: Parsed, target: int | None, standing: Standing | None
    ) -> Parsed:
        for side in (actor, opponent):
            for key in ("ext", "progress"):
                _not_written(
                    side, key, f"the contest keeps its own goal and tallies: leave out `{key}`"
                )
        if actor.versus is not None or opponent.versus is not None:
            raise UsageError(
                "each side writes only its own pool; the bot sets them against each other"
            )
        actor.versus = opponent
        if target is not None:
            actor.values["ext"] = target
            if standing is not None and standing.actor:
                actor.values["progress"] = standing.actor
            if standing is not None and standing.opponent:
                opponent.values["progress"] = standing.opponent
        return actor

    def contest_standing(self, outcome: Any) -> Standing | None:
        tally = getattr(outcome, "contest", None) or getattr(outcome, "race", None)
        if tally is not None:
            winner = tally.winner
            return Standing(
                winner=winner,
                actor=tally.actor,
                opponent=tally.opponent,
                target=tally.target,
                open=winner is None,
            )
        resisted = getattr(outcome, "resisted", None)
        if resisted is None:
            return None
        return Standing(winner=resisted.winner)

    def name_sides(self, outcome: Any, actor: str, opponent: str) -> Any:
        """The outcome with both players' names, for the reply (its ``names`` field)."""
        return replace(outcome, names=(actor, opponent))

    def contest_sides(self, outcome: Any) -> tuple[SidePart, SidePart] | None:
        """The challenger's dice (the outcome's own) and the answerer's (its ``opponent``); a
        free botch (revised's house rule) is not a botch."""
        opponent = getattr(outcome, "opponent", None)
        if opponent is None:
            return None
        actor = SidePart(
            tuple(outcome.faces), outcome.successes, outcome.outcome, outcome.outcome == "botch"
        )
        botch = bool(opponent.botch) and not getattr(outcome, "opponent_free_botch", False)
        own = opponent.outcome if botch or opponent.outcome != "botch" else "failure"
        successes = opponent.net if hasattr(opponent, "net") else opponent.total
        return actor, SidePart(tuple(opponent.faces), successes, own, botch)
