"""The ``revised`` character template (docs/characters.md): Attributes, Abilities, Disciplines,
Backgrounds, Virtues, Humanity and Willpower rated up to 10 and rolled alone (000, *Rolling
Dice*), Willpower points spent by ``wp`` (000, *Automatic Success*), the Blood Pool and the
edition's Health chart (000 names no chart: the book's is used)."""

from __future__ import annotations

from coterie.rulekit.sheets import vampire_template

TEMPLATE = vampire_template("revised")
