"""Dice and odds: where faces come from (:mod:`coterie.dice.sources`), the exact-odds engine
(:mod:`coterie.dice.odds`) and pure d10 pool mechanics (:mod:`coterie.dice.d10`). No chat, no
state: small pure functions over faces and counts.

The dice sources are importable from here, as before: ``from coterie.dice import FixedDice``."""

from coterie.dice.sources import DiceSource, FixedDice, ReplayDice, SeededDice, SystemDice

__all__ = ["DiceSource", "FixedDice", "ReplayDice", "SeededDice", "SystemDice"]
