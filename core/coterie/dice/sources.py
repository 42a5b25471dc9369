"""Where die faces come from.

Rolling is two steps: draw faces from a :class:`DiceSource`, then evaluate them with a pure
function of the rule set. The default source is the operating system's CSPRNG (:mod:`secrets`);
tests and replays of a physical roll inject :class:`SeededDice` or :class:`FixedDice`.
"""

from __future__ import annotations

import random
import secrets
from collections.abc import Iterable
from typing import Protocol, runtime_checkable

from coterie.errors import UsageError


@runtime_checkable
class DiceSource(Protocol):
    """Anything that can draw ``count`` faces of a die with ``sides`` sides (1..sides)."""

    def roll(self, count: int, sides: int) -> list[int]:
        """Return ``count`` faces, each in ``1..sides``, in the order rolled."""
        ...


class SystemDice:
    """Faces from the operating system's cryptographic RNG (``secrets``). The default.

    One ``secrets.token_bytes`` call serves a whole roll: each byte below the largest multiple of
    ``sides`` under 256 gives a face (``byte % sides + 1``), the rest are rejected, so every face is
    exactly equally likely.
    """

    def roll(self, count: int, sides: int) -> list[int]:
        if sides > 256:
            return [secrets.randbelow(sides) + 1 for _ in range(count)]
        limit = 256 - 256 % sides
        faces: list[int] = []
        while len(faces) < count:
            missing = count - len(faces)
            for byte in secrets.token_bytes(missing + missing // 4 + 2):
                if byte < limit:
                    faces.append(byte % sides + 1)
                    if len(faces) == count:
                        break
        return faces

    def __repr__(self) -> str:
        return "SystemDice()"


class SeededDice:
    """Deterministic faces from a seeded PRNG: for tests and reproducible demos only."""

    def __init__(self, seed: int | str) -> None:
        self.seed = seed
        self._random = random.Random(seed)

    def roll(self, count: int, sides: int) -> list[int]:
        return [self._random.randint(1, sides) for _ in range(count)]

    def __repr__(self) -> str:
        return f"SeededDice({self.seed!r})"


class FixedDice:
    """Faces given in advance, e.g. a physical roll being replayed ("what does my roll count as?").

    Drawing more faces than were given, or a face outside ``1..sides``, is a :class:`UsageError`.
    """

    def __init__(self, faces: Iterable[int]) -> None:
        self._faces = list(faces)
        self._position = 0

    @property
    def remaining(self) -> int:
        """How many faces have not been drawn yet."""
        return len(self._faces) - self._position

    def roll(self, count: int, sides: int) -> list[int]:
        if count > self.remaining:
            raise UsageError(
                f"this roll needs {self._position + count} dice but "
                f"{len(self._faces)} face(s) were given"
            )
        drawn = self._faces[self._position : self._position + count]
        for face in drawn:
            if not 1 <= face <= sides:
                raise UsageError(f"a d{sides} cannot show {face}: faces go from 1 to {sides}")
        self._position += count
        return drawn

    def __repr__(self) -> str:
        return f"FixedDice({self._faces!r})"
