"""The ``v5`` rule set: Vampire: the Masquerade 5th edition (shared/seeds/002_c21c8b91aa38e6d9.txt;
see docs/rules/v5.md)."""

from __future__ import annotations

from typing import Any

from coterie import hookimpl
from coterie.framework.characters import CharacterTemplate
from coterie.framework.commands import Command
from coterie.framework.variant import Variant
from coterie_v5.requests import V5Request
from coterie_v5.variant import RouseOutcome, V5Outcome, V5Variant

__all__ = ["RouseOutcome", "V5Outcome", "V5Request", "V5Variant"]


@hookimpl
def coterie_variants() -> list[Variant[Any, Any]]:
    return [V5Variant()]


@hookimpl
def coterie_character_templates() -> list[CharacterTemplate]:
    from coterie_v5.sheet import TEMPLATE

    return [TEMPLATE]


@hookimpl
def coterie_commands() -> list[Command]:
    from coterie_v5.commands import COMMANDS

    return list(COMMANDS)
