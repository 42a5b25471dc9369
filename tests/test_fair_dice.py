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


def test_rejected_bytes_are_skipped_and_more_are_drawn(monkeypatch: pytest.MonkeyPatch) -> None:
    streams = {
        10: [bytes([255, 250, 3, 249, 252, 5]), bytes([251, 0, 9, 99, 17, 250, 253, 254])],
        6: [bytes([252, 253, 0, 5, 255, 6, 254, 254]), bytes([11, 100, 200, 10, 10, 1])],
    }
    expected = {
        10: [3 % 10 + 1, 249 % 10 + 1, 5 % 10 + 1, 0 + 1, 9 + 1, 99 % 10 + 1, 17 % 10 + 1],
        6: [0 + 1, 5 + 1, 6 % 6 + 1, 11 % 6 + 1, 100 % 6 + 1, 200 % 6 + 1, 10 % 6 + 1],
    }
    for sides, chunks in streams.items():  # 250+ rejected on a d10, 252+ on a d6
        left = list(chunks)
        asked: list[int] = []

        def token_bytes(n: int, left: list[bytes] = left, asked: list[int] = asked) -> bytes:
            asked.append(n)
            return left.pop(0)[:n]

        monkeypatch.setattr("coterie.dice.sources.secrets.token_bytes", token_bytes)
        assert SystemDice().roll(7, sides) == expected[sides], sides
        assert asked == [7 + 7 // 4 + 2, 4 + 4 // 4 + 2], sides  # then only what was missing
    monkeypatch.undo()
    assert set(SystemDice().roll(5000, 255)) == set(range(1, 256))
    assert max(SystemDice().roll(5000, 256)) <= 256  # above 255 sides: randbelow
