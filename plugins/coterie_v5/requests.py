"""What a ``v5`` roll asks for: the requests rolls are built into, shared by the rule set
(:mod:`coterie_v5.variant`) and its odds (:mod:`coterie_v5.odds`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from coterie.records import dataclass
from coterie.rulekit.pools import plural
from coterie_v5 import rules

# --- requests -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Side:
    """One side's pool as asked for (the actor's, or the opposition's in a contest)."""

    written: str  #: the pool as written, e.g. ``3+4-1`` or ``willpower 3``
    traits: int  #: what the written pool adds up to
    hunger: int = 0
    specialty: bool = False
    helpers: int = 0
    bonus: int = 0
    penalty: int = 0
    #: the tracker rolled (``willpower``, ``humanity``, ``health``), if the pool is one
    tracker: str | None = None

    @property
    def total(self) -> int:
        """The pool before the one-die minimum."""
        extra = rules.SPECIALTY_DICE if self.specialty else 0
        return rules.teamwork_pool(self.traits, self.helpers) + extra + self.bonus - self.penalty

    @property
    def pool(self) -> int:
        return rules.pool_size(self.total)

    @property
    def regular_dice(self) -> int:
        return rules.hunger_split(self.pool, self.hunger)[0]

    @property
    def hunger_dice(self) -> int:
        return rules.hunger_split(self.pool, self.hunger)[1]


@dataclass(frozen=True)
class Difficulty:
    """How the Difficulty was set, and its modifiers."""

    base: int
    #: ``given``, ``default``, ``half`` (taking half) or ``skill`` (the opponent's Skill)
    source: str = "given"
    #: the opposing pool (``half``) or Skill (``skill``)
    opposing: int | None = None
    equipment: str | None = None
    harder: int = 0
    easier: int = 0

    @property
    def equipment_modifier(self) -> int:
        return rules.EQUIPMENT.get(self.equipment or "good") or 0

    @property
    def value(self) -> int:
        return self.base + self.equipment_modifier + self.harder - self.easier


@dataclass(frozen=True)
class V5Request:
    """A roll: the actor's side, and either a Difficulty or (a contest) the opposition's side."""

    actor: Side
    difficulty: Difficulty | None
    automatic: bool = False
    versus: Side | None = None

    @property
    def dice(self) -> int:
        own = 0 if self.automatic else self.actor.pool
        return own + (self.versus.pool if self.versus is not None else 0)

    def to_json(self) -> dict[str, Any]:
        """A JSON-compatible form (kept in room state for ``!reroll``)."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> V5Request:
        """The request :meth:`to_json` wrote; ``ValueError`` if ``data`` is not one."""
        try:
            difficulty = data["difficulty"]
            versus = data["versus"]
            request = cls(
                actor=Side(**data["actor"]),
                difficulty=None if difficulty is None else Difficulty(**difficulty),
                automatic=bool(data["automatic"]),
                versus=None if versus is None else Side(**versus),
            )
        except (KeyError, TypeError) as error:
            raise ValueError(f"not a stored v5 roll: {error}") from None
        if request.difficulty is None and request.versus is None:
            raise ValueError("not a stored v5 roll: neither a Difficulty nor an opponent")
        return request


@dataclass(frozen=True)
class RouseRequest:
    """``checks`` rouse checks; ``hunger`` is the caller's Hunger when they gave it."""

    checks: int = 1
    hunger: int | None = None
    #: the room's ``max_hunger``
    max_hunger: int = rules.MAX_HUNGER


@dataclass(frozen=True)
class RerollRequest:
    """A Willpower re-roll of some of one side's regular dice of an earlier roll."""

    base: V5Request
    #: every face of the earlier roll, in the order rolled
    faces: tuple[int, ...]
    #: which of the side's regular dice are re-rolled (indexes into them)
    indexes: tuple[int, ...]
    strategy: rules.Strategy
    #: whose dice: ``"actor"``, or ``"opponent"`` (the answerer's side of a contest between two
    #: chat users, each of whom may re-roll only their own dice)
    side: str = "actor"


def side_text(side: Side) -> str:
    """``7 dice (3+4, +1 specialty), Hunger 2``."""
    notes: list[str] = []
    if side.written != str(side.pool) or side.tracker:
        notes.append(side.written)
    if side.specialty:
        notes.append(f"+{rules.SPECIALTY_DICE} specialty")
    if side.helpers:
        notes.append(f"+{side.helpers} for {plural(side.helpers, 'helper')}")
    if side.bonus:
        notes.append(f"+{side.bonus} bonus")
    if side.penalty:
        notes.append(f"−{side.penalty} penalty")
    if side.total < rules.MIN_POOL:
        notes.append("a pool never falls below one die")
    text = plural(side.pool, "dice") + (f" ({', '.join(notes)})" if notes else "")
    if side.hunger:
        text += f", Hunger {side.hunger}"
    return text


def difficulty_text(difficulty: Difficulty) -> str:
    """``Difficulty 4 (half of 7: 3, +1 poor equipment)``."""
    opposing = difficulty.opposing
    origin = {
        "given": "",
        "default": "default",
        "half": f"half of {opposing}",
        "skill": f"opponent's Skill {opposing}"
        + (f", at least {rules.MIN_OPPOSITION}" if (opposing or 0) < rules.MIN_OPPOSITION else ""),
    }.get(difficulty.source, "")
    mods: list[str] = []
    if difficulty.equipment_modifier:
        mods.append(f"+{difficulty.equipment_modifier} {difficulty.equipment} equipment")
    if difficulty.harder:
        mods.append(f"+{difficulty.harder} harder")
    if difficulty.easier:
        mods.append(f"−{difficulty.easier} easier")
    if mods:
        start = f"{origin}: {difficulty.base}" if origin else str(difficulty.base)
        notes = ", ".join([start, *mods])
    else:
        notes = origin
    return f"Difficulty {difficulty.value}" + (f" ({notes})" if notes else "")
