"""The Chronicles of Darkness dice rules, as small pure functions (docs/rules/cofd.md).

A roll draws its dice from ``draw(count)`` in this order, so that a replay of given faces (and
``coterie roll --faces``) reads them the same way: the pool; then, wave after wave, one die for
each die of the last wave showing the *again* number or more; then, for a rote action, the pool's
failed dice re-rolled once, together; then their waves of added dice.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

SIDES = 10
#: a die showing this or more is a success
TARGET = 8
#: this many successes make an exceptional success
EXCEPTIONAL = 5
#: the dice Willpower adds to a pool
WILLPOWER_DICE = 3
#: the again numbers: 10-again (the default), 9-again, 8-again; ``None`` is no again at all
AGAINS = (10, 9, 8)

EXCEPTIONAL_SUCCESS = "exceptional_success"
SUCCESS = "success"
FAILURE = "failure"
DRAMATIC_FAILURE = "dramatic_failure"
#: every outcome, best first
OUTCOMES = (EXCEPTIONAL_SUCCESS, SUCCESS, FAILURE, DRAMATIC_FAILURE)

#: where a die comes from
POOL, AGAIN, ROTE, CHANCE = "pool", "again", "rote", "chance"

Draw = Callable[[int], Sequence[int]]


@dataclass(frozen=True)
class Die:
    face: int
    #: ``pool``, ``again`` (added by an again rule), ``rote`` (a failed pool die re-rolled) or
    #: ``chance`` (the chance die)
    source: str
    success: bool
    #: this die added another (it showed the again number or more)
    explodes: bool = False
    #: a failed pool die that a rote action re-rolled
    rerolled: bool = False


@dataclass(frozen=True)
class Roll:
    dice: tuple[Die, ...]
    successes: int
    outcome: str

    @property
    def faces(self) -> tuple[int, ...]:
        return tuple(die.face for die in self.dice)

    @property
    def chance(self) -> bool:
        return bool(self.dice) and self.dice[0].source == CHANCE


def again_word(again: int | None) -> str:
    return f"{again}-again" if again is not None else "no again"


def outcome_of(successes: int) -> str:
    if successes >= EXCEPTIONAL:
        return EXCEPTIONAL_SUCCESS
    return SUCCESS if successes else FAILURE


def chance_die(face: int) -> Roll:
    """The chance die: only a 10 succeeds, a 1 is a dramatic failure (no again, no rote)."""
    if face == SIDES:
        return Roll((Die(face, CHANCE, True),), 1, SUCCESS)
    outcome = DRAMATIC_FAILURE if face == 1 else FAILURE
    return Roll((Die(face, CHANCE, False),), 0, outcome)


def _waves(first: Sequence[int], source: str, again: int | None, draw: Draw) -> list[Die]:
    """``first`` and every die the again rule adds to them, wave after wave."""
    dice: list[Die] = []
    wave = list(first)
    while wave:
        exploding = 0
        for face in wave:
            explodes = again is not None and face >= again
            exploding += explodes
            dice.append(Die(face, source, face >= TARGET, explodes))
        source = AGAIN
        wave = list(draw(exploding)) if exploding else []
    return dice


def roll(
    pool: int, again: int | None, rote: bool, draw: Draw, *, chance_again: bool = False
) -> Roll:
    """A roll of ``pool`` dice (the chance die when ``pool`` is 0 or less; with the house rule
    ``chance_again``, a chance die's 10 adds a die under 10-again, and those dice count from 8)."""
    if again is not None and again not in AGAINS:
        raise ValueError(f"no {again}-again rule")
    if pool <= 0:
        chance = chance_die(draw(1)[0])
        if not (chance_again and chance.successes):
            return chance
        first = Die(SIDES, CHANCE, True, explodes=True)
        added = _waves(draw(1), AGAIN, SIDES, draw)
        successes = 1 + sum(die.success for die in added)
        return Roll((first, *added), successes, outcome_of(successes))
    faces = list(draw(pool))
    dice = _waves(faces, POOL, again, draw)
    if rote:
        failed = [index for index, die in enumerate(dice[:pool]) if not die.success]
        for index in failed:
            old = dice[index]
            dice[index] = Die(old.face, old.source, old.success, old.explodes, rerolled=True)
        if failed:
            dice += _waves(draw(len(failed)), ROTE, again, draw)
    successes = sum(die.success for die in dice)
    return Roll(tuple(dice), successes, outcome_of(successes))
