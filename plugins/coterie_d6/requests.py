"""What a ``d6`` roll asks for: the requests rolls are built into, shared by the rule set
(:mod:`coterie_d6.variant`) and its odds (:mod:`coterie_d6.odds`)."""

from __future__ import annotations

from coterie.records import dataclass
from coterie.rulekit.pools import plural
from coterie_d6 import rules

# --- requests -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TraitPool:
    """The dice of one side: a Trait's rating, and its name when the roll gave one."""

    dice: int
    trait: str | None = None

    def __str__(self) -> str:
        return f"{self.trait.title()} {self.dice}" if self.trait else plural(self.dice, "dice")


@dataclass(frozen=True)
class Difficulty:
    """The difficulty as asked for and as rolled against (capped at 6)."""

    asked: int

    @property
    def value(self) -> int:
        return rules.effective_difficulty(self.asked)

    @property
    def capped(self) -> bool:
        return self.asked > self.value


@dataclass(frozen=True)
class RollRequest:
    pool: TraitPool
    difficulty: Difficulty
    required: int = 1


@dataclass(frozen=True)
class ContestRequest:
    """A contest; with a ``target`` it is a seesaw contest played to that many ahead."""

    attacker: TraitPool
    defender: TraitPool
    difficulty: Difficulty
    target: int | None = None
    max_rounds: int = rules.MAX_ROUNDS
    #: a seesaw contest across messages: the balance carried over from earlier turns
    balance: int = 0


@dataclass(frozen=True)
class InitiativeRequest:
    combatants: tuple[rules.Combatant, ...]
    max_rounds: int = rules.MAX_ROUNDS


D6Request = RollRequest | ContestRequest | InitiativeRequest


def difficulty_text(difficulty: Difficulty) -> str:
    text = f"difficulty {difficulty.value} ({rules.DIFFICULTY_LABELS[difficulty.value]}"
    if difficulty.capped:
        text += f"; {difficulty.asked} lowered to {rules.MAX_DIFFICULTY}, the highest difficulty"
    return text + ")"
