"""The ``revised`` rule set: Vampire: the Masquerade, Revised (see docs/rules/revised.md)."""

from __future__ import annotations

from typing import Any

from coterie import hookimpl
from coterie.framework.characters import CharacterTemplate
from coterie.framework.commands import Command
from coterie.framework.variant import Variant
from coterie_revised.requests import RevisedRequest
from coterie_revised.variant import RevisedOutcome, RevisedVariant

__all__ = ["RevisedOutcome", "RevisedRequest", "RevisedVariant"]


@hookimpl
def coterie_variants() -> list[Variant[Any, Any]]:
    return [RevisedVariant()]


@hookimpl
def coterie_character_templates() -> list[CharacterTemplate]:
    from coterie_revised.sheet import TEMPLATE

    return [TEMPLATE]


@hookimpl
def coterie_commands() -> list[Command]:
    from coterie_revised.commands import COMMANDS

    return list(COMMANDS)
