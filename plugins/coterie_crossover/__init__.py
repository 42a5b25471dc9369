"""The ``crossover`` rule set: a home-brew crossover World of Darkness chronicle
(shared/seeds/004_2bcbd9c2ecee7c36.txt; see docs/rules/crossover.md)."""

from __future__ import annotations

from typing import Any

from coterie import hookimpl
from coterie.framework.characters import CharacterTemplate
from coterie.framework.commands import Command
from coterie.framework.variant import Variant
from coterie_crossover.requests import CrossoverRequest
from coterie_crossover.variant import CrossoverOutcome, CrossoverVariant

__all__ = ["CrossoverOutcome", "CrossoverRequest", "CrossoverVariant"]


@hookimpl
def coterie_variants() -> list[Variant[Any, Any]]:
    return [CrossoverVariant()]


@hookimpl
def coterie_character_templates() -> list[CharacterTemplate]:
    from coterie_crossover.sheet import TEMPLATE

    return [TEMPLATE]


@hookimpl
def coterie_commands() -> list[Command]:
    from coterie_crossover.commands import COMMANDS

    return list(COMMANDS)
