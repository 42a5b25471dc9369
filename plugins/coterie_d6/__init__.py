"""The ``d6`` rule set: the six-sided Vampire variant (shared/seeds/001_6870bc963805db50.txt).

See docs/rules/d6.md for each rule, the readings chosen and the chat syntax.
"""

from __future__ import annotations

from typing import Any

from coterie import hookimpl
from coterie.framework.characters import CharacterTemplate
from coterie.framework.commands import Command
from coterie.framework.variant import Variant
from coterie_d6.requests import ContestRequest, InitiativeRequest, RollRequest
from coterie_d6.variant import (
    ContestOutcome,
    D6Variant,
    InitiativeOutcome,
    RollOutcome,
    SeesawOutcome,
)

__all__ = [
    "ContestOutcome",
    "ContestRequest",
    "D6Variant",
    "InitiativeOutcome",
    "InitiativeRequest",
    "RollOutcome",
    "RollRequest",
    "SeesawOutcome",
]


@hookimpl
def coterie_variants() -> list[Variant[Any, Any]]:
    return [D6Variant()]


@hookimpl
def coterie_character_templates() -> list[CharacterTemplate]:
    from coterie_d6.sheet import TEMPLATE

    return [TEMPLATE]


@hookimpl
def coterie_commands() -> list[Command]:
    from coterie_d6.commands import COMMANDS

    return list(COMMANDS)
