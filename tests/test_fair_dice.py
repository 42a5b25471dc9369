"""The dice are fair: a chi-square test over a million faces per die size, for the seeded source
(deterministic, so this test itself is reproducible) and once for the OS source that bots use."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from coterie.dice.sources import DiceSource, SeededDice, SystemDice
from coterie.framework.app import Coterie
from coterie.framework.config import Config

FACES = 1_000_000
#: chi-square critical values at p = 0.001 for sides - 1 degrees of freedom
CRITICAL = {6: 20.515, 10: 27.877}


def chi_square(source: DiceSource, sides: int, count: int = FACES) -> float:
    counts = Counter(source.roll(count, sides))
    assert set(counts) == set(range(1, sides + 1))
    expected = count / sides
    return sum((counts[face] - expected) ** 2 / expected for face in range(1, sides + 1))


@pytest.mark.parametrize("sides", [6, 10])
def test_seeded_dice_are_uniform(sides: int) -> None:
    assert chi_square(SeededDice(20261122), sides) < CRITICAL[sides]


@pytest.mark.parametrize("sides", [6, 10])
def test_os_dice_are_uniform(sides: int) -> None:
    # One run on the real source: a fair die fails this at p = 0.001, once in a thousand runs.
    assert chi_square(SystemDice(), sides) < CRITICAL[sides]


def test_the_test_catches_a_loaded_die() -> None:
    class Loaded:
        def __init__(self) -> None:
            self.rng = random.Random(1)

        def roll(self, count: int, sides: int) -> list[int]:
            # a 10 comes up 11% of the time instead of 10%
            return [
                sides if self.rng.random() < 0.11 else self.rng.randint(1, sides - 1)
                for _ in range(count)
            ]

    assert chi_square(Loaded(), 10) > CRITICAL[10]


def test_system_dice_are_the_default_and_use_the_os_csprng(monkeypatch: pytest.MonkeyPatch) -> None:
    app = Coterie(Config.model_validate({"plugins": {"enable": ["revised"]}}))
    assert isinstance(app.dice, SystemDice)
    calls: list[int] = []

    def token_bytes(n: int) -> bytes:
        calls.append(n)
        return bytes(range(n))

    monkeypatch.setattr("coterie.dice.sources.secrets.token_bytes", token_bytes)
    faces = app.dice.roll(7, 10)
    assert calls and faces == [byte % 10 + 1 for byte in range(7)]


def test_rejection_sampling_keeps_every_face_equally_likely() -> None:
    """Bytes at or above the largest multiple of the sides are thrown away, never folded in."""
    dice = SystemDice()
    for sides in (6, 10):
        limit = 256 - 256 % sides
        per_face = Counter(byte % sides + 1 for byte in range(limit))
        assert len(set(per_face.values())) == 1  # each face owns the same number of bytes
    assert all(1 <= face <= 20 for face in dice.roll(1000, 20))
    assert all(1 <= face <= 1000 for face in dice.roll(100, 1000))  # above 256 sides: randbelow
