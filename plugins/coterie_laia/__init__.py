"""The ``laia`` rule set: the V20 house rules of the LAIA community and its ``?throw`` command
(shared/seeds/003_612eda57cd93bf24.txt; see docs/rules/laia.md)."""

from __future__ import annotations

from typing import Any

from coterie import hookimpl
from coterie.framework.characters import CharacterTemplate
from coterie.framework.commands import Command
from coterie.framework.variant import Variant
from coterie_laia.requests import LaiaRequest
from coterie_laia.variant import LaiaOutcome, LaiaVariant

__all__ = ["LaiaOutcome", "LaiaRequest", "LaiaVariant"]


@hookimpl
def coterie_variants() -> list[Variant[Any, Any]]:
    return [LaiaVariant()]


@hookimpl
def coterie_character_templates() -> list[CharacterTemplate]:
    from coterie_laia.sheet import TEMPLATE

    return [TEMPLATE]


@hookimpl
def coterie_commands() -> list[Command]:
    from coterie_laia.commands import COMMANDS

    return list(COMMANDS)
