"""Where die faces come from.

Rolling is two steps: draw faces from a :class:`DiceSource`, then evaluate them with a pure
function of the rule set. The default source is the operating system's CSPRNG (:mod:`secrets`);
tests and replays of a physical roll inject :class:`SeededDice`, :class:`FixedDice` or
:class:`ReplayDice`.
"""

from __future__ import annotations

import random
import secrets
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol, TypeVar, runtime_checkable

from coterie.errors import UsageError

T = TypeVar("T")


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
    exactly equally likely. The bytes become faces in C, through a translation table (a rejected
    byte becomes 0, then is dropped): no Python step per die.
    """

    def roll(self, count: int, sides: int) -> list[int]:
        if sides > 255:  # (a face of 256 would not fit in a byte)
            return [secrets.randbelow(sides) + 1 for _ in range(count)]
        table = _FACES.get(sides) or _faces_table(sides)
        faces: list[int] = []
        while len(faces) < count:
            missing = count - len(faces)
            drawn = secrets.token_bytes(missing + missing // 4 + 2).translate(table)
            faces += drawn.replace(b"\0", b"")[:missing]  # (a bytes object's items are ints)
        return faces

    def __repr__(self) -> str:
        return "SystemDice()"


#: sides → the translation table of :meth:`SystemDice.roll` (byte → face, 0 for rejected)
_FACES: dict[int, bytes] = {}


def _faces_table(sides: int) -> bytes:
    limit = 256 - 256 % sides
    table = bytes(byte % sides + 1 if byte < limit else 0 for byte in range(256))
    _FACES[sides] = table
    return table


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


class ReplayDice:
    """Replays a roll from given faces, whatever the rule draws: the public replay source.

    Faces are served in the order given, one :meth:`roll` call after another, so a rule that
    rolls more dice as it goes (exploding 10s, re-rolled failures, a tie rolled again) simply
    asks for more and gets the next faces. When the given faces run out, ``more`` (if any) is
    asked for the missing ones — ``more(count, sides)``, e.g. another :class:`DiceSource`'s
    ``roll`` — otherwise it is a :class:`UsageError` that says how many dice the roll needed.
    Call :meth:`finish` once the roll is evaluated: faces left over are an error too (the roll
    was not the one the faces came from). A face outside ``1..sides`` is refused when drawn.

    ``coterie roll --faces`` replays every rule set through it; a rule set replays given faces
    in ``Variant.evaluate`` with :meth:`replay`.
    """

    def __init__(
        self,
        faces: Iterable[int],
        *,
        more: Callable[[int, int], Sequence[int]] | None = None,
        what: str = "",
    ) -> None:
        self._faces = list(faces)
        self._position = 0
        self._more = more
        #: a prefix for the error messages, e.g. ``"--faces: "``
        self.what = what
        #: the faces drawn so far, given ones and ``more`` ones, in order
        self.drawn: list[int] = []
        #: how many :meth:`roll` calls there were
        self.draws = 0

    @property
    def given(self) -> int:
        """How many faces were given."""
        return len(self._faces)

    @property
    def remaining(self) -> int:
        """How many given faces have not been drawn yet."""
        return len(self._faces) - self._position

    def roll(self, count: int, sides: int) -> list[int]:
        if count < 0:
            raise ValueError(f"cannot draw {count} dice")
        take = self._faces[self._position : self._position + count]
        for face in take:
            if not 1 <= face <= sides:
                raise UsageError(
                    f"{self.what}a d{sides} cannot show {face}: faces go from 1 to {sides}"
                )
        missing = count - len(take)
        if missing:
            if self._more is None:
                needed = len(self.drawn) + count
                later = (
                    " (it rolled more dice as it went: give the faces of every die added or "
                    "re-rolled too, in the order rolled)"
                    if self.draws
                    else ""
                )
                raise UsageError(
                    f"{self.what}the faces ran out: this roll needs at least {needed} dice, "
                    f"but {self.given} face(s) were given{later}"
                )
            extra = list(self._more(missing, sides))
            if len(extra) != missing:
                raise ValueError(f"more() gave {len(extra)} faces, not {missing}")
            take = take + extra
        self._position += count - missing
        self.draws += 1
        self.drawn.extend(take)
        return take

    def finish(self) -> None:
        """Refuse faces left over: :class:`UsageError` unless every given face was drawn."""
        if self.remaining:
            raise UsageError(
                f"{self.what}{self.remaining} face(s) left over: this roll used "
                f"{self._position} dice, but {self.given} face(s) were given"
            )

    @classmethod
    def replay(cls, faces: Iterable[int], play: Callable[[ReplayDice], T]) -> T:
        """``play(source)`` with a source serving ``faces``, then :meth:`finish`: the whole
        replay of a roll whose number of dice depends on its faces, in one call."""
        source = cls(faces)
        result = play(source)
        source.finish()
        return result

    def __repr__(self) -> str:
        return f"ReplayDice({self._faces!r})"
