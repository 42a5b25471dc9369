"""Example coterie plugin: Vampire Revised with the house rule "no botches"."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from coterie import hookimpl
from coterie.framework.characters import CharacterTemplate
from coterie.framework.variant import Variant
from coterie.render.elements import Role
from coterie_revised import RevisedOutcome, RevisedRequest, RevisedVariant
from coterie_revised.rules import PoolRoll


def no_botch(roll: PoolRoll | None) -> PoolRoll | None:
    """The house rule: a roll that would botch is a plain failure instead."""
    if roll is None or not roll.botch:
        return roll
    return replace(
        roll, botch=False, roles=tuple(Role.ONE if r is Role.BOTCH else r for r in roll.roles)
    )


class NoBotchVariant(RevisedVariant):
    name = "nobotch"
    title = "Vampire: the Masquerade, Revised — house rule: no botches"
    summary = "The Revised rules, except that a roll never botches: no success is a plain failure."

    def evaluate(self, request: RevisedRequest, faces: Sequence[int]) -> RevisedOutcome:
        outcome = super().evaluate(request, faces)
        return replace(outcome, actor=no_botch(outcome.actor), opponent=no_botch(outcome.opponent))


@hookimpl
def coterie_variants() -> list[Variant[Any, Any]]:
    return [NoBotchVariant()]


@hookimpl
def coterie_character_templates() -> list[CharacterTemplate]:
    """Characters in a nobotch room: the Revised sheet, declared for this rule set."""
    from coterie_revised.sheet import TEMPLATE

    return [replace(TEMPLATE, variant=NoBotchVariant.name)]
