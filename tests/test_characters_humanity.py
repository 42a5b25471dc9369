"""v5 Humanity and Stains on a sheet (#17): Stains past Humanity's boxes degenerate (Aggravated
Willpower damage, impaired pools), a change of Humanity clears the Stains, ``!remorse`` rolls
the empty boxes. Document 002 names Humanity only as a tracker roll; the rest is the V5 book's
reading, stated in docs/rules/v5.md. Fixed faces throughout; every error changes nothing."""

from __future__ import annotations

from test_characters import app_with, say, snapshot


async def test_stains_fill_the_boxes_humanity_leaves_and_overflow_degenerates() -> None:
    app = app_with("v5", [6] * 40)
    await say(app, "!char new Lise")
    await say(app, "!char set Strength 3 Brawl 2 Composure 2 Resolve 2")
    assert await say(app, "!stains") == "Lise: Stains 0/3"
    assert await say(app, "!stains +2") == "Lise: Stains 0/3 → 2/3"
    assert "Impaired" not in await say(app, "!roll Strength+Brawl 1")
    assert await say(app, "!stains +3") == (
        "Lise: Stains 2/3 → 3/3 overlapping Humanity (2 Stains past Humanity's boxes: impaired "
        "(−2 dice) until the Stains are cleared; Willpower [....] → [XX..])"
    )
    text = await say(app, "!roll Strength+Brawl 1")
    assert "Lise: Strength 3 + Brawl 2 − 2 (Impaired) = 3 dice" in text
    # a tracker roll takes no penalty
    assert "Lise: Humanity 7 = 7 dice" in await say(app, "!roll Humanity 1")
    sheet = await say(app, "!sheet")
    assert "Humanity 7 · Stains 3/3 overlapping Humanity" in sheet
    # one impairment, also with a full Willpower track
    await say(app, "!damage 2 wp")
    assert "− 2 (Impaired) = 3 dice" in await say(app, "!roll Strength+Brawl 1")


async def test_a_change_of_humanity_clears_the_stains_and_undo_brings_them_back() -> None:
    app = app_with("v5")
    await say(app, "!char new Lise")
    await say(app, "!stains 2")
    assert await say(app, "!humanity -1") == "Lise: Humanity 7 → 6; Stains 2/3 → 0/4"
    await say(app, "!stains 4")
    assert await say(app, "!char set Humanity 8") == "Lise: Humanity 6 → 8; Stains 4/4 → 0/2"
    assert await say(app, "!undo") == (
        "Undone: Lise: Humanity 6 → 8; Stains 4/4 → 0/2 (was !char set Humanity 8)"
    )
    assert "Humanity 6 · Stains 4/4" in await say(app, "!sheet")
    # setting it to what it is changes nothing else
    assert await say(app, "!humanity 6") == "Lise: Humanity 6 → 6"
    assert "Stains 4/4" in await say(app, "!sheet")
    # `!char set Stains` follows the same rule as `!stains`
    assert "1 Stain past Humanity's boxes" in await say(app, "!char set Stains 5")
    assert "Willpower [X.]" in await say(app, "!sheet")
    # taking a Stain away by hand ends the overlap
    assert await say(app, "!stains -1") == "Lise: Stains 4/4 overlapping Humanity → 3/4"


async def test_bad_stains_and_humanity_change_nothing() -> None:
    app = app_with("v5")
    await say(app, "!char new Lise")
    await say(app, "!stains 2")
    before = await snapshot(app)
    assert "goes from 0 to 10" in await say(app, "!stains 11")
    assert "goes from 0 to 10" in await say(app, "!humanity +4")
    assert "goes from 0 to 10" in await say(app, "!char set Humanity 11")
    assert "only its player or the Storyteller" in await say(app, "!stains +1 for Lise", user="bo")
    assert await snapshot(app) == before


async def test_remorse_rolls_the_empty_boxes_and_clears_the_stains() -> None:
    # Humanity 7, 1 Stain: 2 empty boxes, 2 dice; no success: Humanity 6, Stains cleared
    app = app_with("v5", [2, 5, 7])
    await say(app, "!char new Lise")
    await say(app, "!stains 1")
    text = await say(app, "!remorse")
    assert "2 dice (humanity 2), Difficulty 1: 2 5" in text
    assert text.endswith(
        "Lise loses a point of Humanity (remorse, 2 dice): Humanity 7 → 6; Stains 1/3 → 0/4"
    )
    # no Willpower re-roll of a remorse roll
    assert "cannot re-roll a tracker roll" in await say(app, "!reroll")
    # a success keeps Humanity; Stains that fill the track still roll one die
    await say(app, "!stains 5")
    text = await say(app, "!remorse")
    assert "1 die (humanity 1), Difficulty 1: 7" in text
    assert text.endswith(
        "Lise keeps Humanity (remorse, 1 die): Stains 4/4 overlapping Humanity → 0/4"
    )
    assert "Impaired" not in await say(app, "!roll Strength 1")
    assert "Humanity 6 · Stains 0/4" in await say(app, "!sheet")


async def test_remorse_errors_change_nothing_and_other_rule_sets_have_none() -> None:
    app = app_with("v5", [1] * 5)
    await say(app, "!char new Lise")
    before = await snapshot(app)
    assert "Lise has no Stains: no remorse roll is needed" in await say(app, "!remorse")
    await say(app, "!stains 1")
    before = await snapshot(app)
    assert "takes no number" in await say(app, "!remorse 3")
    assert "only its player or the Storyteller" in await say(app, "!remorse for Lise", user="bo")
    assert await snapshot(app) == before
    # the Storyteller may roll it for a player's character
    assert "Lise loses a point of Humanity" in await say(app, "!remorse for Lise", user="st")
    assert "the revised rules have no remorse roll" in await say(app_with("revised"), "!remorse")


async def test_an_overlap_survives_export_and_import_and_a_bad_one_is_refused() -> None:
    app = app_with("v5")
    await say(app, "!char new Lise")
    await say(app, "!stains 4")
    exported = (await say(app, "!char export")).splitlines()[1]
    assert '"Stains":{"value":3,"overlap":true}' in exported
    other = app_with("v5")
    assert "Lise" in await say(other, f"!char import {exported}", user="bo")
    assert "Stains 3/3 overlapping Humanity" in await say(other, "!sheet", user="bo")
    before = await snapshot(other)
    bad = exported.replace('"overlap":true', '"overlap":2').replace('"Lise"', '"Lou"')
    assert "`overlap` is only `true`, on Stains" in await say(other, f"!char import {bad}")
    hunger = '"Hunger":{"value":1,"overlap":true},"Stains":{'
    bad = exported.replace('"Stains":{', hunger).replace('"Lise"', '"Lou"')
    assert "`overlap` is only `true`, on Stains" in await say(other, f"!char import {bad}")
    bad = exported.replace('"value":3', '"value":5').replace('"Lise"', '"Lou"')
    assert "Stains must fit the 3 boxes Humanity leaves free" in await say(
        other, f"!char import {bad}"
    )
    assert await snapshot(other) == before


async def test_a_remorse_roll_that_takes_the_last_point_of_humanity_says_so() -> None:
    app = app_with("v5", [1] * 8)
    await say(app, "!char new Lise")
    await say(app, "!humanity 1")
    await say(app, "!stains 1")
    text = await say(app, "!remorse")  # 10 − 1 − 1 = 8 dice, no success
    assert "8 dice (humanity 8), Difficulty 1" in text
    assert "Humanity 1 → 0; Stains 1/9 → 0/10" in text
    assert text.endswith("Lise has no Humanity left: the Beast has won.")
