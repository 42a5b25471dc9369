"""What a ``cofd`` roll asks for."""

from __future__ import annotations

from dataclasses import dataclass

from coterie_cofd import rules


@dataclass(frozen=True)
class CofdRequest:
    #: the pool as written (Attribute + Skill + modifiers), before Willpower
    written: str
    #: the dice rolled: the written total, +3 with Willpower; 0 or less rolls the chance die
    pool: int
    #: the again number (10, 9, 8), or ``None`` for no again
    again: int | None = 10
    rote: bool = False
    willpower: bool = False
    #: the room's house rule: a chance die's 10 adds a die (10-again)
    chance_again: bool = False

    @property
    def chance(self) -> bool:
        return self.pool <= 0

    def describe(self) -> str:
        """The roll in words: ``6 dice, 9-again, rote`` or ``a chance die (pool 2-3)``."""
        if self.chance:
            head = "a chance die" + (" (10-again)" if self.chance_again else "")
        else:
            head = f"{self.pool} {'die' if self.pool == 1 else 'dice'}"
        parts = [head]
        if self.willpower:
            parts.append("Willpower")
        if not self.chance:
            if self.again != 10:
                parts.append(rules.again_word(self.again))
            if self.rote:
                parts.append("rote")
        return ", ".join(parts)
