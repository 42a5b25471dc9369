"""Chat building blocks shared by the d10 Storyteller rule sets (``revised``, ``laia``,
``crossover``): the pool and difficulty slots, the checks every written pool goes through, and
small rendering helpers. Rules themselves live in :mod:`coterie.d10` and in each rule set."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from coterie import d10
from coterie.elements import Die, Node, Role, Text, bold, dice
from coterie.errors import UsageError
from coterie.grammar import Option, Pool, Positional

#: the error for a Trait rated up to 10 written anywhere but alone at the start of a pool
TEN_POINT_RULE = (
    "{Trait} is rated up to 10 and is rolled alone: write `{trait} N` at the start of the pool, "
    "with nothing added to it"
)

POOL = Positional("pool", "dice pool, e.g. 7 or 3+4", kind="pool", required=True)
WILLPOWER = Option("wp", "flag", "spend a Willpower point: one automatic success", key="willpower")


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

    * at most ``max_traits`` Traits are added (penalties are subtracted with ``-N``);
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
    ten_point = [t.trait for t in traits if t.trait is not None and t.trait in ten_point_traits]
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


def face_nodes(faces: Sequence[int], roles: Sequence[Role], sides: int = 10) -> list[Node]:
    """Die elements for faces with their roles, separated by spaces."""
    return dice([Die(face, role, sides) for face, role in zip(faces, roles, strict=True)])


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
    resisted: d10.Resisted, tally: Tally | None, degree: Callable[[int], str | None]
) -> list[Node]:
    """The last line of a resisted roll: who wins and by how much, or the tallies so far."""
    if tally is not None:
        line: list[Node] = [
            Text("Extended and resisted: "),
            bold(f"{tally.actor}/{tally.target}"),
            Text(" vs "),
            bold(f"{tally.opponent}/{tally.target}"),
        ]
        if tally.winner == "actor":
            line.append(Text(" — you reach the goal first and win!"))
        elif tally.winner == "opponent":
            line.append(Text(" — the opposition reaches the goal first."))
        return line
    if resisted.winner == "actor":
        return [
            Text("Resisted: you win with "),
            bold(plural(resisted.net, "success")),
            Text(f" ({degree(resisted.net)})"),
        ]
    if resisted.winner == "opponent":
        return [Text("Resisted: the opposition wins by "), bold(plural(resisted.net, "success"))]
    return [Text("Resisted: a standoff — neither side gets through")]


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
