"""Crossover's ``!move`` reads the mover's sheet (#17; 004 *Movement*): Dexterity and Stamina,
the Injured state from the Health track, and for a push Willpower and the wound penalty, where
the words leave them out; words still win, and without a character nothing changes."""

from __future__ import annotations

from test_characters import app_with, say, snapshot


async def test_move_takes_what_the_words_leave_out_from_the_sheet() -> None:
    app = app_with("crossover", [6] * 20)
    assert "depends on Dexterity: add `dex N`" in await say(app, "!move run")
    await say(app, "!char new Kai")
    await say(app, "!char set Dexterity 3 Stamina 2 Willpower 6")
    text = await say(app, "!move run")
    assert "From Kai's sheet: Dexterity 3, Stamina 2\nRunning: 29 yards a turn" in text
    assert "Full speed for at most 20 turns (10 per dot of Stamina 2)" in text
    assert "Running: 35 yards" in await say(app, "!move run dex 5")
    await say(app, "!damage 2")  # Hurt: not yet held to half
    assert "Injured:" not in await say(app, "!move run")
    await say(app, "!damage 1")  # Injured
    text = await say(app, "!move run")
    assert "From Kai's sheet: Dexterity 3, Stamina 2, Injured" in text
    assert "Injured: at most 14 yards (half the normal rate)" in text
    text = await say(app, "!move run push")
    assert "Willpower 6, wound penalty -1" in text
    assert "with Willpower 6 (the greater of Stamina 2 and Willpower 6), −1 for wounds: 5 dice" in (
        text
    )


async def test_move_refuses_an_incapacitated_character_and_changes_nothing() -> None:
    app = app_with("crossover", [6] * 20)
    await say(app, "!char new Kai")
    await say(app, "!damage 7 lethal")
    before, logged = await snapshot(app), await app.state.rolls("test:r")
    assert [entry.kind for entry in logged] == ["tracker"]  # the damage itself
    text = await say(app, "!move walk")
    assert text.startswith("⚠ Kai is Incapacitated: no movement can be attempted")
    assert await snapshot(app) == before
    assert await app.state.rolls("test:r") == logged  # nothing rolled, nothing logged
