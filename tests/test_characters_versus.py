"""``vs`` by name (#17): the other side of a resisted roll or contest read from a character or
NPC named after ``vs`` (``!roll Strength+Brawl 6 vs Guard Wits+Alertness``, ``vs @bo …``), with
the same pool rules as one's own; who may name whom; every error changes nothing."""

from __future__ import annotations

from coterie.framework.app import Coterie
from coterie.play import npcs, roster
from coterie.storage import characters as store
from test_characters import app_with, say, snapshot


async def _table(variant: str = "revised", *, open_npcs: bool = True) -> Coterie:
    app = app_with(variant, [6] * 80)
    await say(app, "!char new Al")
    await say(app, "!char set Strength 3 Brawl 2")
    await say(app, "!char new Bea", user="bo")
    await say(app, "!char set Dexterity 4 Athletics 1", user="bo")
    await say(app, "!npc new Guard", user="st")
    awareness = "Awareness" if variant == "v5" else "Alertness"
    await say(app, f"!npc set Guard Wits 3 {awareness} 2", user="st")
    if open_npcs:  # NPCs are secret by default: players may not read their Traits
        await say(app, "!npc secret off", user="st")
    return app


async def test_in_a_room_of_secret_npcs_only_the_storyteller_opposes_them_by_name() -> None:
    app = await _table(open_npcs=False)
    before = await snapshot(app)
    text = await say(app, "!roll Strength+Brawl 6 vs Guard Wits+Alertness")
    assert text.startswith("⚠") and "Guard is the Storyteller's hidden NPC" in text, text
    assert "Wits 3" not in text
    assert await snapshot(app) == before
    assert "Guard: Wits 3 + Alertness 2 = 5 dice" in await say(
        app, "!roll 5 6 vs Guard Wits+Alertness", user="st"
    )
    await say(app, "!npc secret off", user="st")
    assert "Guard: Wits 3 + Alertness 2 = 5 dice" in await say(
        app, "!roll Strength+Brawl 6 vs Guard Wits+Alertness"
    )


async def test_the_other_side_reads_the_named_npcs_sheet() -> None:
    app = await _table()
    text = await say(app, "!roll Strength+Brawl 6 vs Guard Wits+Alertness")
    assert "Opposed: 5 dice, difficulty 6" in text
    assert text.endswith("Al: Strength 3 + Brawl 2 = 5 dice\nGuard: Wits 3 + Alertness 2 = 5 dice")
    # names are read like one's own: prefixes, aliases, modifiers, the difficulty after
    text = await say(app, "!roll Strength+Brawl 6 vs guard wits+alert+1 7")
    assert "Opposed: 6 dice, difficulty 7" in text
    assert "Guard: Wits 3 + Alertness 2 + 1 = 6 dice" in text
    # the roller needs no sheet for a pool in numbers
    text = await say(app, "!roll 4 6 vs Guard Wits+Alertness", user="zed")
    assert "Opposed: 5 dice" in text and "Guard: Wits 3 + Alertness 2 = 5 dice" in text


async def test_the_storyteller_names_any_character_and_its_wounds_count() -> None:
    app = await _table()
    await say(app, "!damage 2", user="bo")  # Hurt, −1
    text = await say(app, "!roll 5 6 vs Bea Dexterity+Athletics", user="st")
    assert "Opposed: 4 dice" in text
    assert "Bea: Dexterity 4 + Athletics 1 − 1 (Hurt) = 4 dice" in text
    text = await say(app, "!roll 5 6 vs @bo Dexterity+Athletics 7", user="st")
    assert "Opposed: 4 dice, difficulty 7" in text
    # one's own other character by name
    await say(app, "!char new Cid")
    await say(app, "!char set Wits 2")
    await say(app, "!char use Al")
    assert "Cid: Wits 2 = 2 dice" in await say(app, "!roll Strength+Brawl 6 vs Cid Wits")


async def test_v5_the_opponents_hunger_comes_from_its_sheet() -> None:
    app = await _table("v5")
    record = await store.load_player(app.state, "test:r", roster.NPC_OWNER)
    record["chars"]["guard"]["trackers"]["Hunger"] = {"value": 2}
    await store.save_player(app.state, "test:r", roster.NPC_OWNER, record)
    text = await say(app, "!roll Strength+Brawl vs Guard Wits+Awareness")
    assert "Opposition, 5 dice (wits 3+awareness 2), Hunger 2" in text
    assert "Guard: Wits 3 + Awareness 2 = 5 dice" in text
    assert "Hunger 3" in await say(app, "!roll Strength+Brawl vs Guard Wits+Awareness h3")


async def test_bad_opposition_by_name_is_refused_and_changes_nothing() -> None:
    app = await _table()
    await say(app, "!npc new Spy", user="st")
    record = await store.load_player(app.state, "test:r", roster.NPC_OWNER)
    record["chars"]["spy"]["hidden"] = True
    await store.save_player(app.state, "test:r", roster.NPC_OWNER, record)
    before = await snapshot(app)
    log = await say(app, "!log")
    cases = {
        "!roll Strength+Brawl 6 vs Nobody Wits+Alertness": (
            'no character or NPC "Nobody" in this chronicle'
        ),
        "!roll Strength+Brawl 6 vs Spy Wits+Alertness": (
            "Spy is the Storyteller's hidden NPC: only the Storyteller can roll against it"
        ),
        "!roll Strength+Brawl 6 vs Bea Dexterity+Athletics": (
            "Bea is Bo's character: only its player or the Storyteller can read its Traits"
        ),
        "!roll Strength+Brawl 6 vs @bo Dexterity+Athletics": (
            "only its player or the Storyteller can see someone else's character"
        ),
        "!roll Strength+Brawl 6 vs Dexterity+Athletics": (
            "whose `Dexterity+Athletics`? Name the other side: `vs NAME Dexterity+Athletics`"
        ),
        "!roll Strength+Brawl 6 vs Guard Wits+Alertness+Brawl": "adds 3 Traits",
        "!roll Strength+Brawl 6 vs Guard Witts+Alertness": 'no Trait "Witts" — did you mean Wits?',
        "!roll Strength+Brawl 6 vs Guard Willpower+Alertness": "Willpower is rolled alone",
    }
    for line, error in cases.items():
        text = await say(app, line)
        assert text.startswith("⚠") and error in text, (line, text)
    assert await snapshot(app) == before
    assert await say(app, "!log") == log
    # the Storyteller may roll against the hidden one
    assert "Opposed" in await say(app, "!roll 3 6 vs Spy Wits", user="st")


async def test_a_macro_may_oppose_by_name() -> None:
    app = await _table()
    assert await say(app, "!macro add grab = str+brawl 6 vs Guard wit+alert") == (
        "Al: macro !grab = Strength+Brawl 6 vs Guard Wits+Alertness"
    )
    assert await say(app, "!macro add dodge = 4 6 vs Guard wit+alert+1 7") == (
        "Al: macro !dodge = 4 6 vs Guard Wits+Alertness+1 7"
    )
    assert "Guard: Wits 3 + Alertness 2 = 5 dice" in await say(app, "!grab")
    assert "no character or NPC" in await say(app, "!macro add bad = Strength 6 vs Gard Wits")


def test_the_npc_owner_is_one() -> None:
    assert roster.NPC_OWNER == npcs.NPC_OWNER


async def test_contest_and_resist_read_each_side_from_its_own_players_sheet() -> None:
    app = await _table("v5")
    await say(app, "!char set Dexterity 4 Athletics 1", user="bo")
    await say(app, "!damage 4 superficial", user="bo")  # Bea's Health full: impaired Physical
    text = await say(app, "!contest @bo Strength+Brawl")
    assert text.startswith("Ana challenges bo") and "Strength" not in text
    text = await say(app, "!resist Dexterity+Athletics", user="bo")
    assert "Ana, 5 dice (strength 3+brawl 2), Hunger 1" in text
    assert "Bo, 3 dice" in text
    assert text.endswith(
        "Al: Strength 3 + Brawl 2 = 5 dice\nBea: Dexterity 4 + Athletics 1 − 2 (Impaired) = 3 dice"
    )
    # numbers still answer a challenge by name, without a sheet
    await say(app, "!contest @zed Str+Brawl")
    assert "Zed, 3 dice" in await say(app, "!resist 3", user="zed")


async def test_contests_by_name_without_a_sheet_are_refused_and_change_nothing() -> None:
    app = await _table()
    before = await snapshot(app)
    text = await say(app, "!contest @bo Strength+Brawl", user="cy")
    assert "`Strength+Brawl` names Traits, and you have no active character here" in text
    assert "No contest is waiting" in await say(app, "!contest status")
    await say(app, "!contest @zed Strength+Brawl")
    text = await say(app, "!resist Dexterity+Athletics", user="zed")
    assert "`Dexterity+Athletics` names Traits, and you have no active character here" in text
    assert "waiting for zed" in await say(app, "!contest status")
    text = await say(app, "!resist Dexterity+Brawl+Athletics", user="bo")
    assert "nobody has challenged you here" in text
    await say(app, "!contest @bo Strength+Brawl")
    assert "adds 3 Traits" in await say(app, "!resist Dexterity+Brawl+Athletics", user="bo")
    assert "waiting for bo" in await say(app, "!contest status")
    assert await snapshot(app) == before
    assert "Bea: Dexterity 4 + Athletics 1" in await say(app, "!resist Dex+Athletics", user="bo")


async def test_an_npc_roll_by_name_opposes_a_named_character() -> None:
    app = await _table()
    text = await say(app, "!npc roll Guard Wits+Alertness 6 public vs Bea Dex+Athletics", user="st")
    assert "Opposed: 5 dice" in text
    assert "Guard: Wits 3 + Alertness 2 = 5 dice" in text
    assert "Bea: Dexterity 4 + Athletics 1 = 5 dice" in text
