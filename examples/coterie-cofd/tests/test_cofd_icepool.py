"""cofd's odds against an independent model built with icepool (coterie's test extra), die by
die from the rules (docs/rules/cofd.md): equal within 1e-9.

The model shares nothing with coterie's engine: a die is an icepool mixture of its faces, a
face at or above the again number being "one success plus another such die" (nested to a depth
where what is cut off is below 1e-20), a rote pool die is a mixture that rolls a fresh die on a
failed face, and a pool is icepool's sum of dice.
"""

from __future__ import annotations

import functools
from fractions import Fraction
from typing import Any

import icepool
import pytest

from coterie.framework.grammar import parse, tokens
from coterie.framework.variant import RoomSettings
from coterie_cofd import CofdVariant

TOLERANCE = 1e-9
VARIANT = CofdVariant()
#: nesting depth of the model's exploding dice: 0.3 ** 45 is about 3e-24
DEPTH = 45


@functools.cache
def chain(again: int | None, depth: int = DEPTH) -> icepool.Die[Any]:
    """Successes of one die and of every die it adds."""
    faces: list[Any] = []
    for face in range(1, 11):
        if again is not None and face >= again and depth > 0:
            faces.append(chain(again, depth - 1) + 1)
        else:
            faces.append(int(face >= 8))
    return icepool.Die(faces)


@functools.cache
def rote_die(again: int | None) -> icepool.Die[Any]:
    """A pool die of a rote action: a failed face is rolled again, once."""
    faces: list[Any] = []
    for face in range(1, 11):
        if face < 8:
            faces.append(chain(again))
        elif again is not None and face >= again:
            faces.append(chain(again, DEPTH - 1) + 1)
        else:
            faces.append(1)
    return icepool.Die(faces)


def model(pool: int, again: int | None, rote: bool) -> dict[tuple[str, int], Fraction]:
    if pool <= 0:
        return {
            ("success", 1): Fraction(1, 10),
            ("failure", 0): Fraction(8, 10),
            ("dramatic_failure", 0): Fraction(1, 10),
        }
    die = rote_die(again) if rote else chain(again)
    total = pool @ die

    def judge(successes: int) -> tuple[str, int]:
        if successes >= 5:
            return ("exceptional_success", successes)
        return ("success" if successes else "failure", successes)

    judged = total.map(judge)
    denominator = judged.denominator()
    return {key: Fraction(q, denominator) for key, q in judged.items() if q}


AGAIN_WORDS = {10: "", 9: " 9again", 8: " 8again", None: " noagain"}
GRID = [
    (pool, again, rote)
    for pool in range(0, 13)
    for again in (10, 9, 8, None)
    for rote in (False, True)
] + [(pool, again, rote) for pool in (15, 20) for again in (10, 8) for rote in (False, True)]


@pytest.mark.parametrize(("pool", "again", "rote"), GRID)
def test_cofd_odds_match_the_icepool_model(pool: int, again: int | None, rote: bool) -> None:
    text = f"{pool}{AGAIN_WORDS[again]}{' rote' if rote else ''}"
    request = VARIANT.build(parse(tokens(text), VARIANT.grammar), RoomSettings(variant="cofd"))
    ours = VARIANT.odds(request).table
    theirs = model(pool, again, rote)
    for key in set(ours) | set(theirs):
        ours_p = float(ours.get(key, 0))
        theirs_p = float(theirs.get(key, 0))
        assert abs(ours_p - theirs_p) < TOLERANCE, (text, key, ours_p, theirs_p)


def test_willpower_is_three_more_dice() -> None:
    request = VARIANT.build(parse(tokens("1-3 wp"), VARIANT.grammar), RoomSettings("cofd"))
    ours = VARIANT.odds(request).table
    theirs = model(1, 10, False)
    assert max(abs(float(ours.get(k, 0) - theirs.get(k, 0))) for k in theirs) < TOLERANCE


def test_chance_again_matches_the_model() -> None:
    """The room option: a chance die's 10 is a success and adds a 10-again chain."""
    settings = RoomSettings("cofd", house_rules={"chance_again": True})
    request = VARIANT.build(parse(tokens("0"), VARIANT.grammar), settings)
    ours = VARIANT.odds(request).table
    chain10 = chain(10)
    die = icepool.Die([0] * 9 + [chain10 + 1])  # faces 1-9 fail, a 10 succeeds and adds a die
    theirs: dict[tuple[str, int], Fraction] = {
        ("dramatic_failure", 0): Fraction(1, 10),
        ("failure", 0): Fraction(8, 10),
    }
    denominator = die.denominator()
    for successes, quantity in die.items():
        if successes:
            key = ("exceptional_success" if successes >= 5 else "success", successes)
            theirs[key] = Fraction(quantity, denominator)
    for key in set(ours) | set(theirs):
        assert abs(float(ours.get(key, 0)) - float(theirs.get(key, 0))) < TOLERANCE, key
