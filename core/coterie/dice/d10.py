"""Pure d10 dice-pool logic shared by the Storyteller rule sets (revised, laia, crossover).

Everything here is a small pure function over the faces rolled (or over results already counted),
so a rule-set module can read like its rule document and tests can pass fixed faces in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from coterie.records import dataclass
from coterie.render.elements import Role


def is_success(face: int, difficulty: int) -> bool:
    """A face at or above the difficulty succeeds; a 10 always succeeds."""
    return face >= difficulty or face == 10


def count_successes(faces: Sequence[int], difficulty: int) -> int:
    # :func:`is_success` written out: this runs for every roll
    return len([face for face in faces if face >= difficulty or face == 10])


def count_ones(faces: Sequence[int]) -> int:
    return list(faces).count(1)


# the roles as module constants: ``Role.SUCCESS`` is looked up on the enum class on every use,
# ten times slower than a global (an enum's class attributes are not cached by the interpreter)
_SUCCESS, _ONE, _FAILURE, _CANCELLED = Role.SUCCESS, Role.ONE, Role.FAILURE, Role.CANCELLED
#: by difficulty: the role of each face 0-10 before 1s cancel (:func:`is_success`; a 1 that does
#: not succeed is a one)
_FIRST_ROLES: dict[int, tuple[Role, ...]] = {}


def _first_roles(faces: Sequence[int], difficulty: int) -> list[Role]:
    """Each face's role before the 1s cancel anything (looked up in a table, in C, for faces
    1-10; any other face written out)."""
    table = _FIRST_ROLES.get(difficulty)
    if table is None:
        table = tuple(_first_role(face, difficulty) for face in range(11))
        if len(_FIRST_ROLES) < 64:
            _FIRST_ROLES[difficulty] = table
    if faces and min(faces) >= 1 and max(faces) <= 10:
        return list(map(table.__getitem__, faces))
    return [_first_role(face, difficulty) for face in faces]


def _first_role(face: int, difficulty: int) -> Role:
    if face >= difficulty or face == 10:  # (:func:`is_success` written out)
        return _SUCCESS
    return _ONE if face == 1 else _FAILURE


def cancellation_roles(faces: Sequence[int], difficulty: int) -> list[Role]:
    """The role of each face when every 1 sets aside one success.

    Which success a 1 takes away does not change any count; for display the lowest successes are
    set aside first, so the dice that stand are the best ones. A 1 with no success left to take is
    :attr:`Role.ONE`; a 1 that took one, and the success it took, are :attr:`Role.CANCELLED`.
    """
    roles = _first_roles(faces, difficulty)
    if _ONE not in roles:  # nothing cancels (most rolls)
        return roles
    return _cancelled(faces, roles)


def _cancelled(faces: Sequence[int], roles: list[Role]) -> list[Role]:
    successes = sorted([(f, i) for i, f in enumerate(faces) if roles[i] is _SUCCESS])
    ones = [i for i, f in enumerate(faces) if roles[i] is _ONE]
    for one_index, (_, success_index) in zip(ones, successes, strict=False):
        roles[one_index] = _CANCELLED
        roles[success_index] = _CANCELLED
    return roles


def pool_counts(faces: Sequence[int], difficulty: int) -> tuple[int, int, list[Role]]:
    """:func:`count_successes`, :func:`count_ones` and :func:`cancellation_roles` of one roll,
    worked out together (every roll of revised and crossover asks for all three)."""
    roles = _first_roles(faces, difficulty)
    rolled = roles.count(_SUCCESS)
    ones = list(faces).count(1)
    if ones and _ONE in roles:
        roles = _cancelled(faces, roles)
    return rolled, ones, roles


def degree(successes: int, labels: Sequence[str]) -> str | None:
    """Label for ``successes`` from a table whose last entry covers "that many or more"."""
    if successes <= 0:
        return None
    return labels[min(successes, len(labels)) - 1]


# --- automatic success ---------------------------------------------------------------------


def automatic_success_allowed(pool: int, difficulty: int) -> bool:
    """Automatic success is possible when the pool is at least the difficulty."""
    return pool >= difficulty


# --- multiple actions ------------------------------------------------------------------------


def multiple_action_penalty(actions: int, action: int) -> int:
    """Dice lost by action number ``action`` (1-based) of ``actions`` declared.

    The first action loses as many dice as there are actions; each later one loses one more.
    """
    if actions < 1 or not 1 <= action <= actions:
        raise ValueError("action must be between 1 and the number of actions")
    return actions + action - 1


def multiple_action_pools(pools: Sequence[int]) -> list[int]:
    """Each declared action's pool after the penalty (a result of 0 or less cannot be attempted)."""
    return [pool - multiple_action_penalty(len(pools), i + 1) for i, pool in enumerate(pools)]


# --- trying again ----------------------------------------------------------------------------


def retry_difficulty(difficulty: int, failures: int) -> int:
    """Difficulty of a new attempt after ``failures`` failed ones: +1, then +2, and so on."""
    return difficulty + failures


# --- extended actions ------------------------------------------------------------------------


@dataclass(frozen=True)
class Extended:
    """Progress of an extended action toward ``target`` successes."""

    target: int
    progress: int = 0
    rolls: int = 0
    botches: int = 0
    #: the last roll botched and wiped the progress
    wiped: bool = False

    @property
    def done(self) -> bool:
        return self.progress >= self.target

    @property
    def remaining(self) -> int:
        return max(0, self.target - self.progress)


def extended_step(state: Extended, successes: int, botched: bool, *, botch_wipes: bool) -> Extended:
    """Add one roll to an extended action. A botch adds nothing and may wipe all progress."""
    if botched:
        return replace(
            state,
            progress=0 if botch_wipes else state.progress,
            rolls=state.rolls + 1,
            botches=state.botches + 1,
            wiped=botch_wipes and state.progress > 0,
        )
    return replace(
        state, progress=state.progress + max(0, successes), rolls=state.rolls + 1, wiped=False
    )


# --- resisted actions ------------------------------------------------------------------------


@dataclass(frozen=True)
class Resisted:
    """Both sides' successes; the winner keeps only what exceeds the other side."""

    actor: int
    opponent: int

    @property
    def net(self) -> int:
        return abs(self.actor - self.opponent)

    @property
    def winner(self) -> str | None:
        """``"actor"``, ``"opponent"``, or ``None`` on a tie (nobody prevails)."""
        if self.actor > self.opponent:
            return "actor"
        if self.opponent > self.actor:
            return "opponent"
        return None


@dataclass(frozen=True)
class ExtendedResisted:
    """Running tallies of an extended and resisted action; first to ``target`` wins."""

    target: int
    actor: int = 0
    opponent: int = 0
    turns: int = 0

    @property
    def winner(self) -> str | None:
        if self.actor >= self.target:
            return "actor"
        if self.opponent >= self.target:
            return "opponent"
        return None


def extended_resisted_step(
    state: ExtendedResisted,
    actor: int,
    opponent: int,
    *,
    actor_botched: bool = False,
    opponent_botched: bool = False,
    botch_wipes: bool = True,
) -> ExtendedResisted:
    """One turn: the side with more successes adds the difference to its tally.

    A side that botches adds nothing that turn and, when ``botch_wipes``, loses its tally.
    """
    if state.winner is not None:
        raise ValueError("the contest is already decided")
    a = 0 if actor_botched else max(0, actor)
    b = 0 if opponent_botched else max(0, opponent)
    actor_tally = 0 if (actor_botched and botch_wipes) else state.actor
    opponent_tally = 0 if (opponent_botched and botch_wipes) else state.opponent
    if a > b:
        actor_tally += a - b
    elif b > a:
        opponent_tally += b - a
    return replace(state, actor=actor_tally, opponent=opponent_tally, turns=state.turns + 1)


# --- teamwork --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Teamwork:
    """Separate rolls whose successes are added; any member's botch is flagged for all."""

    successes: tuple[int, ...]
    botches: tuple[bool, ...]

    @property
    def total(self) -> int:
        return sum(max(0, s) for s in self.successes)

    @property
    def botched(self) -> bool:
        return any(self.botches)


# --- the optional "first botch of the session is free" rule ----------------------------------


def first_botch_free(botched: bool, already_used: bool) -> tuple[bool, bool]:
    """Apply the optional rule to one roll.

    Returns ``(counts_as_botch, used_after)``: the first botch of the session is read as a plain
    failure and uses up the free botch; later botches count.
    """
    if botched and not already_used:
        return False, True
    return botched, already_used
