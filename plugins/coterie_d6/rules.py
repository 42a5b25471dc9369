"""The six-sided Vampire rules (shared/seeds/001_6870bc963805db50.txt), as pure functions.

Read top to bottom, this module follows the rule document: a pool of d6 from one Trait, the
difficulty scale and its cap, counting successes and the quality they buy, contests (with ties
rolled again), seesaw contests to a number of successes ahead, and initiative with its roll-offs.

Nothing here draws dice by itself. The procedures that may need more dice than they started with
(a tied contest, a tied initiative) take a ``draw`` callable that hands out the next faces, so the
same code counts a live roll and a replay of given faces.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Literal

from coterie.records import dataclass
from coterie.render.elements import Role

#: ``draw(n)`` returns the next ``n`` faces of six-sided dice, in the order rolled
Draw = Callable[[int], Sequence[int]]
Side = Literal["attacker", "defender"]

SIDES = 6

# --- the dice pool --------------------------------------------------------------------------------

#: the Traits a character has; one of them, alone, is the dice pool of an action
TRAITS = ("physical", "mental", "social", "psychic")
#: the error for a second Trait named in one pool
ONE_TRAIT_RULE = "a d6 pool is one Trait: `{trait}` can't be added to the pool already given"

# --- difficulties ---------------------------------------------------------------------------------

MIN_DIFFICULTY = 2
MAX_DIFFICULTY = 6
DEFAULT_DIFFICULTY = 4

DIFFICULTY_LABELS: dict[int, str] = {
    2: "Easy",
    3: "Routine",
    4: "Normal",
    5: "Challenging",
    6: "Really tough",
}


def effective_difficulty(asked: int) -> int:
    """The difficulty actually rolled against: never above 6, whatever the arithmetic gave."""
    if asked < MIN_DIFFICULTY:
        raise ValueError(f"a difficulty is at least {MIN_DIFFICULTY}, not {asked}")
    return min(asked, MAX_DIFFICULTY)


# --- successes and their quality ------------------------------------------------------------------


def is_success(face: int, difficulty: int) -> bool:
    """A die showing the difficulty or more is a success (there is no rule of one on d6)."""
    return face >= difficulty


def count_successes(faces: Sequence[int], difficulty: int) -> int:
    return sum(1 for face in faces if is_success(face, difficulty))


#: the quality of 1, 2, 3, and 4 or more successes
QUALITIES = ("It'll do", "Good", "Great", "Masterful")


def quality(successes: int) -> str | None:
    """The quality word for a number of successes; ``None`` for none."""
    if successes <= 0:
        return None
    return QUALITIES[min(successes, len(QUALITIES)) - 1]


@dataclass(frozen=True)
class PoolRoll:
    """One pool rolled against a difficulty, needing ``required`` successes (usually one)."""

    faces: tuple[int, ...]
    difficulty: int
    successes: int
    required: int = 1

    @property
    def succeeded(self) -> bool:
        return self.successes >= self.required

    @property
    def outcome(self) -> str:
        return "success" if self.succeeded else "failure"

    @property
    def quality(self) -> str | None:
        """How well it went; only a roll that succeeded has a quality."""
        return quality(self.successes) if self.succeeded else None

    @property
    def roles(self) -> tuple[Role, ...]:
        return tuple(
            Role.SUCCESS if is_success(face, self.difficulty) else Role.FAILURE
            for face in self.faces
        )


def roll_pool(faces: Sequence[int], difficulty: int, *, required: int = 1) -> PoolRoll:
    """Count a roll: each die at or above the difficulty is one success; the action succeeds
    with at least ``required`` of them (one, unless the Storyteller asks for more)."""
    if required < 1:
        raise ValueError("at least one success is always required")
    return PoolRoll(tuple(faces), difficulty, count_successes(faces, difficulty), required)


# --- contests -------------------------------------------------------------------------------------

#: the usual difficulty of a contest (the same as the general default)
CONTEST_DIFFICULTY = 4
#: how many rounds (tie re-rolls, seesaw turns, initiative roll-offs) one message may play
MAX_ROUNDS = 100


@dataclass(frozen=True)
class ContestRound:
    """Both sides rolled once against the same difficulty; the attacker rolls first."""

    attacker: PoolRoll
    defender: PoolRoll

    @property
    def net(self) -> int:
        """The attacker's successes left once the defender's have taken theirs away
        (negative: the defender has that many to spare)."""
        return self.attacker.successes - self.defender.successes

    @property
    def winner(self) -> Side | None:
        if self.net > 0:
            return "attacker"
        if self.net < 0:
            return "defender"
        return None

    @property
    def faces(self) -> tuple[int, ...]:
        return self.attacker.faces + self.defender.faces


def contest_round(
    attacker_faces: Sequence[int], defender_faces: Sequence[int], difficulty: int
) -> ContestRound:
    return ContestRound(
        roll_pool(attacker_faces, difficulty), roll_pool(defender_faces, difficulty)
    )


@dataclass(frozen=True)
class Contest:
    """A contest played until a round is not a tie (or the round limit is reached)."""

    rounds: tuple[ContestRound, ...]

    @property
    def deciding(self) -> ContestRound:
        return self.rounds[-1]

    @property
    def winner(self) -> Side | None:
        """``None`` only when every round allowed was a tie."""
        return self.deciding.winner

    @property
    def net(self) -> int:
        return self.deciding.net

    @property
    def faces(self) -> tuple[int, ...]:
        return tuple(face for one in self.rounds for face in one.faces)


def play_contest(
    attacker: int, defender: int, difficulty: int, draw: Draw, *, max_rounds: int = MAX_ROUNDS
) -> Contest:
    """Both sides roll; the one with more successes wins; a tie is simply rolled again."""
    if max_rounds < 1:
        raise ValueError("a contest has at least one round")
    rounds: list[ContestRound] = []
    while len(rounds) < max_rounds:
        rounds.append(contest_round(draw(attacker), draw(defender), difficulty))
        if rounds[-1].winner is not None:
            break
    return Contest(tuple(rounds))


# --- seesaw contests ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Seesaw:
    """A contest fought over several turns: one running balance that each turn's net moves
    toward one side or the other; whoever gets ``target`` successes ahead wins."""

    target: int
    #: positive: the attacker's stored successes; negative: the defender's
    balance: int = 0
    turns: int = 0

    @property
    def winner(self) -> Side | None:
        if self.balance >= self.target:
            return "attacker"
        if self.balance <= -self.target:
            return "defender"
        return None

    @property
    def leader(self) -> Side | None:
        if self.balance > 0:
            return "attacker"
        if self.balance < 0:
            return "defender"
        return None

    @property
    def lead(self) -> int:
        return abs(self.balance)


def seesaw_step(state: Seesaw, attacker_successes: int, defender_successes: int) -> Seesaw:
    """One turn: the side with more successes first cancels the other's stored ones, then
    stores the rest. A tied turn moves nothing."""
    if state.winner is not None:
        raise ValueError("this seesaw contest is already won")
    balance = state.balance + attacker_successes - defender_successes
    return replace(state, balance=balance, turns=state.turns + 1)


@dataclass(frozen=True)
class SeesawContest:
    """The turns played in one go and the balance after each of them."""

    start: Seesaw
    rounds: tuple[ContestRound, ...]
    states: tuple[Seesaw, ...]

    @property
    def final(self) -> Seesaw:
        return self.states[-1] if self.states else self.start

    @property
    def faces(self) -> tuple[int, ...]:
        return tuple(face for one in self.rounds for face in one.faces)


def play_seesaw(
    attacker: int,
    defender: int,
    difficulty: int,
    target: int,
    draw: Draw,
    *,
    max_turns: int = MAX_ROUNDS,
    balance: int = 0,
) -> SeesawContest:
    """Play turns until one side is ``target`` successes ahead (or the turn limit is reached),
    from a ``balance`` carried over from turns played before (a contest across messages)."""
    if target < 1:
        raise ValueError("a seesaw contest is won by at least one success ahead")
    start = state = Seesaw(target, balance=balance)
    rounds: list[ContestRound] = []
    states: list[Seesaw] = []
    while state.winner is None and len(rounds) < max_turns:
        turn = contest_round(draw(attacker), draw(defender), difficulty)
        state = seesaw_step(state, turn.attacker.successes, turn.defender.successes)
        rounds.append(turn)
        states.append(state)
    return SeesawContest(start, tuple(rounds), tuple(states))


# --- initiative -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Combatant:
    """What initiative looks at. The powers count only when activated this turn."""

    name: str
    physical: int
    mental: int
    hunters_instinct: bool = False
    advanced_celerity: bool = False
    basic_celerity: bool = False

    @property
    def celerity(self) -> bool:
        """Any Celerity: Advanced Celerity is learnt on top of Basic Celerity."""
        return self.basic_celerity or self.advanced_celerity


#: the comparisons, in the order they are made
INITIATIVE_TRAITS = (
    "Hunter's Instinct",
    "Advanced Celerity",
    "Basic Celerity",
    "Physical",
    "Mental",
)


def initiative_key(combatant: Combatant) -> tuple[int, int, int, int, int]:
    """The values compared, in order; a higher tuple acts first."""
    return (
        int(combatant.hunters_instinct),
        int(combatant.advanced_celerity),
        int(combatant.celerity),
        combatant.physical,
        combatant.mental,
    )


def deciding_trait(first: Combatant, second: Combatant) -> str | None:
    """The first comparison that tells the two apart, or ``None`` when they tie on all."""
    for label, a, b in zip(
        INITIATIVE_TRAITS, initiative_key(first), initiative_key(second), strict=True
    ):
        if a != b:
            return label
    return None


@dataclass(frozen=True)
class RollOff:
    """Combatants tied on every comparison each roll one die; the highest goes first."""

    combatants: tuple[Combatant, ...]
    faces: tuple[int, ...]


@dataclass(frozen=True)
class Initiative:
    order: tuple[Combatant, ...]
    rolloffs: tuple[RollOff, ...]
    #: groups still tied when the roll-off limit was reached (kept in the order given)
    unresolved: tuple[tuple[Combatant, ...], ...] = ()

    @property
    def faces(self) -> tuple[int, ...]:
        return tuple(face for rolloff in self.rolloffs for face in rolloff.faces)

    @property
    def extra_actions(self) -> tuple[Combatant, ...]:
        """Celerity's extra actions come after everyone's first action, in the same order."""
        return tuple(combatant for combatant in self.order if combatant.celerity)


def _grouped(
    combatants: Sequence[Combatant], key: Callable[[Combatant], tuple[int, ...]]
) -> list[list[Combatant]]:
    """Combatants in groups of equal ``key``, highest key first, each group in the given order."""
    groups: dict[tuple[int, ...], list[Combatant]] = {}
    for combatant in combatants:
        groups.setdefault(key(combatant), []).append(combatant)
    return [groups[k] for k in sorted(groups, reverse=True)]


def initiative_groups(combatants: Sequence[Combatant]) -> list[list[Combatant]]:
    """The combatants by the comparisons, first to act first; a group of more than one is tied
    on every comparison and needs a roll-off."""
    return _grouped(combatants, initiative_key)


def play_initiative(
    combatants: Sequence[Combatant], draw: Draw, *, max_rounds: int = MAX_ROUNDS
) -> Initiative:
    """Order the combatants by the comparisons; each group still tied rolls one die apiece, the
    highest first, and those who tie again keep rolling among themselves."""
    names = [combatant.name for combatant in combatants]
    if len(set(names)) != len(names):
        raise ValueError("every combatant needs a distinct name")
    pending = initiative_groups(combatants)
    order: list[Combatant] = []
    rolloffs: list[RollOff] = []
    unresolved: list[tuple[Combatant, ...]] = []
    while pending:
        group = pending.pop(0)
        if len(group) == 1:
            order.extend(group)
            continue
        if len(rolloffs) >= max_rounds:
            order.extend(group)
            unresolved.append(tuple(group))
            continue
        faces = tuple(draw(len(group)))
        rolloffs.append(RollOff(tuple(group), faces))
        rolled = {c: (face,) for c, face in zip(group, faces, strict=True)}
        pending[:0] = _grouped(group, rolled.__getitem__)
    return Initiative(tuple(order), tuple(rolloffs), tuple(unresolved))
