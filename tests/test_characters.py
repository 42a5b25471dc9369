"""Characters (#17) through the chat path with fixed faces: sheets, rolls by Trait name with the
documents' pool rules, trackers moved by hand and by play, ``!undo``, macros, rights, import
and export, and every error case changing nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest

from conftest import without_roll_id
from coterie import hookimpl
from coterie.dice.sources import FixedDice
from coterie.errors import UsageError
from coterie.framework.app import Coterie
from coterie.framework.characters import CharacterTemplate, TraitGroup, TraitSpec
from coterie.framework.config import parse_config
from coterie.framework.message import Message
from coterie.framework.plugins import PluginHost
from coterie.play.roster import templates
from coterie.render.elements import Actions
from coterie.render.encode import to_plain
from coterie.storage import characters as store

VARIANTS = ["revised", "v5", "d6", "laia", "crossover"]


def app_with(variant: str, faces: list[int] | None = None, **config: Any) -> Coterie:
    config.setdefault("plugins", {"enable": [variant]})
    config.setdefault("defaults", {"variant": variant, "storytellers": ["st"]})
    config.setdefault("limits", {"rate": {"enabled": False}})
    return Coterie(parse_config(config, "test config"), dice=FixedDice(faces or []))


async def say(app: Coterie, text: str, user: str = "ana", room: str = "r") -> str:
    reply = await app.handle(
        Message(platform="test", room=room, user=user, text=text, user_name=user.title())
    )
    assert reply is not None
    body = [n for n in without_roll_id(reply).body if not isinstance(n, Actions)]
    return to_plain(body)


async def snapshot(app: Coterie, chronicles: tuple[str, ...] = ("test:r", "test:a")) -> Any:
    """Every character (with its active mark) and undo stack of the tests' chronicles."""
    found = {}
    for chronicle in chronicles:
        rows = await app.state.characters(chronicle)
        found[chronicle] = [(r.owner, r.key, r.active, r.sheet) for r in rows]
        for owner in {r.owner for r in rows} | {"ana", "st", "bo"}:
            found[f"{chronicle} changes {owner}"] = await app.state.changes(chronicle, owner)
    return found


# --- the templates ---------------------------------------------------------------------------


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_rule_set_declares_its_template_through_the_hook(variant: str) -> None:
    found = templates(app_with(variant))[variant]
    assert isinstance(found, CharacterTemplate)
    assert found.variant == variant
    assert found.readings, "each template states the readings it chose"


def test_template_limits_are_the_documents() -> None:
    found = templates(app_with("revised"))
    assert found["revised"].max_traits == 2
    ten = [t.name for t in found["revised"].traits.values() if t.ten_point]
    assert ten == ["Humanity", "Willpower"]
    assert templates(app_with("d6"))["d6"].max_traits == 1
    assert templates(app_with("laia"))["laia"].max_traits is None
    crossover = templates(app_with("crossover"))["crossover"]
    assert {t.name for t in crossover.traits.values() if t.ten_point} >= {
        "Rage",
        "Willpower",
        "Gnosis",
    }


def test_find_exact_alias_prefix_and_suggestion() -> None:
    template = templates(app_with("revised"))["revised"]
    assert template.find("strength") == "Strength"
    assert template.find("dex") == "Dexterity"
    assert template.find("animal_ken") == "Animal Ken"
    assert template.find("bra") == "Brawl"
    with pytest.raises(UsageError, match='no Trait "Strenght" — did you mean Strength'):
        template.find("Strenght")
    with pytest.raises(UsageError, match=r"could be .*Stamina.*Strength"):
        template.find("st")


# --- sheets and rolls by name ------------------------------------------------------------------


async def test_revised_document_examples_by_name() -> None:
    # 000 Try It Out: Dexterity 3 + Firearms 1 = 4 dice; the Botch example's faces
    app = app_with("revised", [9, 1, 1, 8, 1, 1, 3, 4, 3, 7, 6, 6, 6, 6, 6, 6])
    await say(app, "!char new Alexandra")
    assert await say(app, "!char set Dex 3 Firearms 1 Perception 2 Finance 4") == (
        "Alexandra: Dexterity 1 → 3, Firearms 0 → 1, Perception 1 → 2, Finance 0 → 4"
    )
    text = await say(app, "!roll Dex+Firearms 8")
    assert "4 dice, difficulty 8" in text and "Failure" in text
    assert "Alexandra: Dexterity 3 + Firearms 1 = 4 dice" in text
    text = await say(app, "!roll dex+fire 8")
    assert "Botch" in text
    # 000 Rolling Dice: Perception 2 + Finance 4 = 6 dice
    text = await say(app, "!roll Perception+Finance 6")
    assert "6 dice, difficulty 6" in text
    assert "Alexandra: Perception 2 + Finance 4 = 6 dice" in text


async def test_modifiers_aside_two_traits_and_numbers_still_work() -> None:
    app = app_with("revised", [6] * 20)
    await say(app, "!char new Al")
    await say(app, "!char set Dexterity 3 Firearms 1")
    text = await say(app, "!roll Dex+Firearms+2 7")
    assert "6 dice, difficulty 7" in text
    text = await say(app, "!roll 5 6")  # numbers read as they always did
    assert "5 dice, difficulty 6" in text and "Al:" not in text
    text = await say(app, "!roll willpower 7 6")  # today's grammar without a sheet name
    assert "⚠" in text  # with a sheet, Willpower is read from it: 7 is the difficulty, 6 extra


async def test_ten_point_traits_roll_their_rating_alone_and_skip_wound_penalties() -> None:
    app = app_with("revised", [6] * 20)
    await say(app, "!char new Al")
    await say(app, "!char set Willpower 7")
    await say(app, "!damage 2")  # Hurt, −1
    text = await say(app, "!roll Willpower 8")
    assert "7 dice, difficulty 8" in text  # reflexive: no wound penalty (000 Reflexives)
    text = await say(app, "!roll Willpower-2 8")  # a penalty taken away, as from `7-2`
    assert "5 dice, difficulty 8" in text
    await say(app, "!char set Strength 3 Brawl 2")
    text = await say(app, "!roll Strength+Brawl 6")
    assert "4 dice" in text and "Strength 3 + Brawl 2 − 1 (Hurt) = 4 dice" in text


@pytest.mark.parametrize(
    ("variant", "roll", "error"),
    [
        ("revised", "!roll Str+Brawl+Dodge 6", "adds 3 Traits; a pool adds at most two"),
        ("revised", "!roll Willpower+Brawl 6", "Willpower is rolled alone"),
        ("crossover", "!roll Rage+Brawl 6", "Rage is rolled alone"),
        # 004 Dice Pools / 000 Rolling Dice: the rating alone, nothing added (a penalty may go)
        ("crossover", "!roll Rage+2 6", "Rage is rolled alone: `Rage+2` adds 2 to it"),
        ("crossover", "!roll 2+rage 6", "Rage is rolled alone: `2+rage` adds 2 to it"),
        ("revised", "!roll Willpower+1 6", "Willpower is rolled alone"),
        ("d6", "!roll Physical+Mental 4", "adds 2 Traits; a pool adds at most one"),
        ("v5", "!roll Str+Brawl+Dex 3", "adds 3 Traits"),
        ("v5", "!roll Strenght 3", 'no Trait "Strenght" — did you mean Strength?'),
        ("revised", "!roll Dex.fast+Firearms 6", "give specialties no dice effect"),
        ("laia", "!roll Wits+Subterfuge.lies 6", "Subterfuge has no specialty `lies`"),
    ],
)
async def test_pool_rule_errors_change_nothing(variant: str, roll: str, error: str) -> None:
    app = app_with(variant, [6] * 20)
    await say(app, "!char new Al")
    before = await snapshot(app)
    text = await say(app, roll)
    assert text.startswith("⚠") and error in text, text
    assert await snapshot(app) == before
    assert await app.state.rolls("test:r") == []


async def test_crippled_refuses_a_pool_it_empties_and_incapacitated_refuses_all() -> None:
    app = app_with("revised", [6] * 20)
    await say(app, "!char new Al")
    await say(app, "!char set Strength 2 Brawl 2")
    await say(app, "!damage 6 lethal")
    text = await say(app, "!roll Strength+Brawl 6")
    assert "Crippled (-5 dice), leaving -1 of 4: this action cannot be attempted" in text
    await say(app, "!damage 1 aggravated")
    text = await say(app, "!roll Strength 6")
    assert "Al is Incapacitated: no action can be attempted" in text
    assert [r for r in await app.state.rolls("test:r") if r.is_roll] == []  # no dice rolled


async def test_a_crossover_roll_names_its_pool_only_when_one_trait_is_the_pool() -> None:
    app = app_with("crossover", [6] * 20)
    await say(app, "!char new Kai")
    await say(app, "!char set Rage 4 Dexterity 3 Athletics 2")
    assert "Rage: 4 dice, difficulty 6" in await say(app, "!roll Rage 6")
    text = await say(app, "!roll Dexterity+Athletics 6")
    assert "Dexterity:" not in text and "5 dice, difficulty 6" in text
    assert "Kai: Dexterity 3 + Athletics 2 = 5 dice" in text


async def test_willpower_point_is_spent_and_refused_at_zero() -> None:
    for variant in ("revised", "crossover"):
        app = app_with(variant, [6] * 20)
        await say(app, "!char new Al")
        await say(app, "!char set Willpower 1 Strength 2")
        text = await say(app, "!roll Strength 6 wp")
        assert "Al: Willpower points 1/1 → 0/1" in text
        before = await snapshot(app)
        text = await say(app, "!roll Strength 6 wp")
        assert "Al has no Willpower points left (0/1)" in text
        assert await snapshot(app) == before


async def test_v5_hunger_from_the_sheet_and_rouse_raises_it() -> None:
    # 002: Dex 3 + Firearms 2, Hunger 2: 3 regular + 2 Hunger dice, Difficulty 3
    app = app_with("v5", [6, 6, 6, 6, 6, 3, 2, 9])
    await say(app, "!char new Lise")
    await say(app, "!char set Dexterity 3 Firearms 2")
    await say(app, "!hunger 2")
    text = await say(app, "!roll Dex+Firearms 3")
    assert "5 dice (dexterity 3+firearms 2), Hunger 2, Difficulty 3: 6 6 6 | Hunger 6 6" in text
    text = await say(app, "!rouse")  # face 3 fails
    assert text.splitlines()[-1] == "Lise: Hunger 2/5 → 3/5"
    assert "Hunger 2 → 3." in text  # the roll's own line reads the sheet's Hunger too
    text = await say(app, "!rouse 2")  # 2 fails, 9 passes
    assert text.splitlines()[-1] == "Lise: Hunger 3/5 → 4/5"
    assert "Hunger 3 → 4." in text


async def test_v5_rouse_at_most_five_and_mortals_have_no_hunger() -> None:
    app = app_with("v5", [1, 1, 6, 6])
    await say(app, "!char new Lise")
    await say(app, "!hunger 5")
    text = await say(app, "!rouse")
    assert "Lise: Hunger 5/5 → 5/5 (Hunger stays at most 5)" in text
    assert "Hunger stays at 5 (it cannot rise above 5)." in text  # not "rises by 1"
    await say(app, "!char new Bob mortal")
    text = await say(app, "!rouse")
    assert "Bob:" not in text
    text = await say(app, "!roll Strength 2")
    assert "Hunger" not in text.splitlines()[1]  # no Hunger dice for a mortal


async def test_v5_reroll_marks_superficial_willpower_and_trackers_roll_current() -> None:
    app = app_with("v5", [1, 1, 1, 6, 6, 6, 6, 6, 6, 6, 6, 6])
    await say(app, "!char new Lise")
    await say(app, "!char set Strength 3 Composure 2 Resolve 3 Brawl 0")
    await say(app, "!hunger 0")
    await say(app, "!roll Strength 3")
    text = await say(app, "!reroll")
    assert "Lise: Willpower [.....] → [/....]" in text
    assert "It costs one Superficial damage to Willpower." in text and "Mark" not in text
    # 002 Trackers: Willpower 5 with 1 damaged box rolls 4 dice; never below one die
    text = await say(app, "!roll Willpower 2")
    assert text.splitlines()[1].startswith("4 dice")
    assert "Lise: Willpower 4 = 4 dice" in text  # (not raised: no note)
    assert "at least one die" not in text
    await say(app, "!wp -4")
    text = await say(app, "!roll Willpower 2")
    assert text.splitlines()[1].startswith("1 die")
    assert "Lise: Willpower 0 = 1 die (a tracker rolls at least one die)" in text


async def test_v5_impairment_and_overflow() -> None:
    app = app_with("v5", [6] * 20)
    await say(app, "!char new Lise")
    await say(app, "!char set Strength 3 Brawl 2 Stamina 1")  # Health: 4 boxes
    assert await say(app, "!damage 5") == (
        "Lise: Health [....] → [X///]"
    )  # the fifth point into a full track turns a Superficial box Aggravated
    text = await say(app, "!roll Strength+Brawl 3")
    assert "− 2 (Impaired) = 3 dice" in text
    await say(app, "!damage 9 aggravated")
    text = await say(app, "!damage 1 agg")
    assert "Health is full of aggravated damage" in text


async def test_v5_specialty_adds_one_die_however_many() -> None:
    app = app_with("v5", [6] * 20)
    await say(app, "!char new Lise")
    await say(app, "!char set Strength 2 Brawl 2")
    await say(app, "!char spec Brawl Grappling")
    await say(app, "!char spec Brawl Knives")
    text = await say(app, "!roll Strength+Brawl.grap 3")
    assert "+1 specialty" in text and text.splitlines()[1].startswith("5 dice")
    assert "Lise: Strength 2 + Brawl 2 + 1 (specialty) = 5 dice" in text  # the sheet line agrees


async def test_d6_document_example_by_name() -> None:
    app = app_with("d6", [1, 5])  # 001: Maxine, Social 2, difficulty 4
    await say(app, "!char new Maxine")
    await say(app, "!char set Social 2")
    text = await say(app, "!roll Social 4")
    assert "1 success — It'll do" in text


async def test_laia_specialty_by_name_counts_tens_double() -> None:
    app = app_with("laia", [10, 1, 2, 6, 10])  # 003: the 10 is cancelled, 1 success
    await say(app, "!char new Ana")
    await say(app, "!char set Stamina 2 Athletics 2")
    await say(app, "!char spec Athletics Running")
    text = await say(app, "!roll Stamina+Athletics.run 6")
    assert "specialty" in text and "= 1" in text


# --- trackers, undo --------------------------------------------------------------------------


async def test_tracker_commands_reply_old_to_new_and_undo_walks_back() -> None:
    app = app_with("v5")
    await say(app, "!char new Lise")
    assert await say(app, "!hunger +2") == "Lise: Hunger 1/5 → 3/5"
    assert await say(app, "!stains 2") == "Lise: Stains 0/3 → 2/3"
    # a change of Humanity clears the Stains (docs/rules/v5.md)
    assert await say(app, "!humanity -1") == "Lise: Humanity 7 → 6; Stains 2/3 → 0/4"
    assert await say(app, "!hunger") == "Lise: Hunger 3/5"
    assert (await say(app, "!undo")).startswith("Undone: Lise: Humanity 7 → 6")
    assert (await say(app, "!undo")).startswith("Undone: Lise: Stains 0/3 → 2/3")
    assert await say(app, "!hunger") == "Lise: Hunger 3/5"
    before = await snapshot(app)
    assert "goes from 0 to 5" in await say(app, "!hunger +3")
    assert "not a change" in await say(app, "!hunger lots")
    assert await snapshot(app) == before


async def test_undo_refuses_when_the_sheet_changed_since() -> None:
    app = app_with("v5")
    await say(app, "!char new Lise")
    await say(app, "!hunger 2", user="ana")
    await say(app, "!hunger 4 for Lise", user="st")  # the Storyteller changes it after
    text = await say(app, "!undo", user="ana")
    assert "can't undo" in text and "changed since" in text
    assert (await say(app, "!undo", user="st")).startswith("Undone: Lise: Hunger 2/5 → 4/5")


async def test_revised_trackers_and_damage_kinds() -> None:
    app = app_with("revised")
    await say(app, "!char new Al")
    assert await say(app, "!blood -3") == "Al: Blood Pool 10/10 → 7/10"
    assert await say(app, "!damage 2 lethal") == (
        "Al: Health [.......] Healthy → [XX.....] Hurt (-1)"
    )
    assert await say(app, "!damage 1") == "Al: Health [XX.....] Hurt (-1) → [XX/....] Injured (-1)"
    assert await say(app, "!heal 1") == "Al: Health [XX/....] Injured (-1) → [XX.....] Hurt (-1)"
    assert "the revised rules keep no Hunger track" in await say(app, "!hunger")
    assert "the d6 rules keep no Health track" in await _d6_damage()


async def _d6_damage() -> str:
    app = app_with("d6")
    await say(app, "!char new X")
    return await say(app, "!damage 1")


# --- rights, chronicles ---------------------------------------------------------------------


async def test_players_edit_only_their_own_and_the_storyteller_all() -> None:
    app = app_with("v5")
    await say(app, "!char new Lise", user="ana")
    await say(app, "!char new Bram", user="bo")
    before = await snapshot(app)
    text = await say(app, "!hunger 3 for Lise", user="bo")
    assert "only its player or the Storyteller can change someone else's character" in text
    assert "only its player or the Storyteller can see" in await say(app, "!sheet Lise", user="bo")
    assert "only its player or the Storyteller" in await say(app, "!sheet @ana", user="bo")
    assert await snapshot(app) == before
    assert await say(app, "!hunger 3 for Lise", user="st") == "Lise: Hunger 1/5 → 3/5"
    assert (await say(app, "!sheet @ana", user="st")).startswith("Lise — vampire (Ana, v5)")


async def test_sheets_belong_to_the_chronicle_of_their_room() -> None:
    app = app_with("v5")
    await say(app, "!char new Lise", room="a")
    text = await say(app, "!sheet", room="b")
    assert "no character in this chronicle" in text


# --- char subcommands, import/export ---------------------------------------------------------


async def test_char_set_pasted_block_custom_traits_and_errors() -> None:
    app = app_with("revised")
    await say(app, "!char new Al")
    assert await say(app, "!char set Strength 3, Dexterity=2") == (
        "Al: Strength 1 → 3, Dexterity 1 → 2"
    )
    before = await snapshot(app)
    assert "Strength must be between 0 and 5, not 7" in await say(app, "!char set Strength 7")
    # all or nothing: the good first pair is not kept either
    assert "did you mean" in await say(app, "!char set Brawl 2 Strenght 3")
    assert await snapshot(app) == before
    assert await say(app, "!char add Disciplines Obeah 2") == ("Al: Disciplines Obeah 2 (your own)")
    assert "Obeah 2" in await say(app, "!sheet")
    assert await say(app, "!char remove Obeah") == "Al: Obeah removed (was 2)"
    assert "already have a character called Al" in await say(app, "!char new al")


async def test_export_import_round_trip_and_broken_imports_change_nothing() -> None:
    app = app_with("v5")
    await say(app, "!char new Lise")
    await say(app, "!char set Strength 3 Brawl 2")
    await say(app, "!char spec Brawl Grappling")
    await say(app, "!hunger 3")
    await say(app, "!damage 2")
    await say(app, "!macro add hunt = Wits+Streetwise 4 # hunting")
    exported = (await say(app, "!char export")).splitlines()[1]
    data = json.loads(exported)
    assert data["schema"] == "coterie.character/1" and data["traits"]["Brawl"] == 2
    other = app_with("v5")
    text = await say(other, f"!char import {exported}", user="bo")
    assert text.startswith("Imported Lise (v5)")
    sheet = await say(other, "!sheet", user="bo")
    assert "Brawl 2 (Grappling)" in sheet and "Hunger 3/5" in sheet and "[//" in sheet
    before = await snapshot(other)
    broken = [
        ("{not json", "not a character's JSON"),
        (json.dumps({**data, "name": "X", "traits": {"Strength": 9}}), "between 0 and 5"),
        (json.dumps({**data, "name": "X", "traits": {"Strenght": 2}}), "did you mean Strength"),
        (json.dumps({**data, "name": "X", "colour": 1}), "unknown key `colour`"),
        (json.dumps({**data, "name": "X", "variant": "revised"}), "this room plays v5"),
        (json.dumps({**data, "name": "X", "trackers": {"Hunger": {"value": 9}}}), "0 to 5"),
    ]
    for text, why in broken:
        reply = await say(other, f"!char import {text}", user="bo")
        assert reply.startswith("⚠") and why in reply, reply
    assert await snapshot(other) == before


async def test_delete_asks_to_confirm() -> None:
    app = app_with("v5")
    await say(app, "!char new Lise")
    text = await say(app, "!char delete Lise")
    assert "Send !char delete Lise confirm" in text
    assert "Lise" in await say(app, "!sheet")
    assert await say(app, "!char delete Lise confirm") == "Lise is deleted."
    assert "no character in this chronicle" in await say(app, "!sheet")


async def test_char_use_switches_the_active_character() -> None:
    app = app_with("v5")
    await say(app, "!char new Lise")
    await say(app, "!char new Bram")
    assert (await say(app, "!sheet")).startswith("Bram")
    assert await say(app, "!char use li") == "Lise is now your active character here."
    assert (await say(app, "!sheet")).startswith("Lise")
    assert "★ Lise" in await say(app, "!char list")


# --- macros ----------------------------------------------------------------------------------


async def test_macros_roll_as_typed_with_modifiers_and_overrides() -> None:
    app = app_with("revised", [6] * 40)
    await say(app, "!char new Al")
    await say(app, "!char set Wits 3 Streetwise 2")
    assert await say(app, "!macro add hunt = Wits+Streetwise 4 # hunting") == (
        "Al: macro !hunt = Wits+Streetwise 4 # hunting"
    )
    text = await say(app, "!hunt")
    assert text.startswith("hunt: Ana — hunting") and "5 dice, difficulty 4" in text
    assert "7 dice, difficulty 4" in await say(app, "!hunt +2")
    assert "5 dice, difficulty 5" in await say(app, "!hunt diff 5")
    assert "!hunt = Wits+Streetwise 4 # hunting" in await say(app, "!macro list")
    assert "already a command" in await say(app, "!macro add roll = Wits 4")
    assert "did you mean" in await say(app, "!macro add bad = Witts 4")
    assert await say(app, "!macro del hunt") == "Al: macro !hunt deleted"
    assert "unknown command" in await say(app, "!hunt")
    assert "unknown command" in await say(app, "!hunt", user="bo")


async def test_macros_are_kept_by_canonical_names_and_old_ones_still_roll() -> None:
    app = app_with("v5", [6] * 40)
    await say(app, "!char new Al")
    await say(app, "!char set Wits 3 Streetwise 2")
    await say(app, "!char spec Streetwise Slums")
    assert await say(app, "!macro add hunt = wits+street 4") == (
        "Al: macro !hunt = Wits+Streetwise 4"
    )
    assert await say(app, "!macro add slum = WITS+streetwise.sl+1 2") == (
        "Al: macro !slum = Wits+Streetwise.Slums+1 2"
    )
    assert "!hunt = Wits+Streetwise 4" in await say(app, "!macro list")
    assert "Wits 3 + Streetwise 2 = 5 dice" in await say(app, "!hunt")
    # the same pool rules as typing it out: errors name the problem and store nothing
    before = await snapshot(app)
    assert 'no Trait "Witts" — did you mean Wits?' in await say(app, "!macro add a = Witts+Brawl 4")
    assert "could be" in await say(app, "!macro add a = Wits+S 4")
    assert "adds 3 Traits" in await say(app, "!macro add a = Wits+Brawl+Stealth 4")
    assert "rolled alone" in await say(app, "!macro add a = Wits+Humanity 4")
    assert await snapshot(app) == before
    # a macro stored as typed before names were made canonical still rolls
    record = await store.load_player(app.state, "test:r", "ana")
    record["chars"]["al"]["macros"]["old"] = {"args": "wits+street 4", "comment": None}
    await store.save_player(app.state, "test:r", "ana", record)
    assert "Wits 3 + Streetwise 2 = 5 dice" in await say(app, "!old")


async def test_revised_bashing_into_a_full_track_becomes_lethal_and_health_resizes() -> None:
    app = app_with("revised")
    await say(app, "!char new Al")
    await say(app, "!damage 7")
    assert await say(app, "!damage 1") == (
        "Al: Health [///////] Incapacitated → [X//////] Incapacitated"
    )
    v5 = app_with("v5")
    await say(v5, "!char new Lise")
    assert await say(v5, "!char set Health 8") == "Lise: Health [....] → [........]"
    assert "between 1 and 25" not in await say(v5, "!char set Health 8")
    assert "from 1 to 25 boxes, not 30" in await say(v5, "!char set Health 30")


async def test_chronicle_link_needs_the_storyteller_and_a_valid_code() -> None:
    app = app_with("v5")
    assert "only the Storyteller" in await say(app, "!chronicle link")
    assert "not a valid code" in await say(app, "!chronicle join ABCDEF", user="st", room="b")
    code = (await say(app, "!chronicle link", user="st")).split("join ")[1][:6]
    await say(app, "!char new Lise")
    assert "now shares" in await say(app, f"!chronicle join {code}", user="st", room="b")
    assert (await say(app, "!sheet", room="b")).startswith("Lise")
    assert "not a valid code" in await say(app, f"!chronicle join {code}", user="st", room="c")
    assert "own chronicle again" in await say(app, "!chronicle leave", user="st", room="b")
    assert "no character in this chronicle" in await say(app, "!sheet", room="b")


async def test_v5_hunger_option_overrides_the_sheet_and_odds_read_names() -> None:
    app = app_with("v5", [6] * 10)
    await say(app, "!char new Lise")
    await say(app, "!char set Strength 3 Brawl 2")
    await say(app, "!hunger 2")
    assert "Hunger 4, Difficulty 3" in await say(app, "!roll Strength+Brawl 3 h4")
    odds = await say(app, "!odds Strength+Brawl 3")
    assert odds.startswith("Odds — 5 dice (strength 3+brawl 2), Hunger 2, Difficulty 3")


async def test_odds_with_wp_spend_nothing_and_are_not_refused() -> None:
    app = app_with("revised")
    await say(app, "!char new Al")
    await say(app, "!char set Willpower 1 Strength 3")
    await say(app, "!wp -1")
    before = await snapshot(app)
    assert (await say(app, "!odds Strength 6 wp")).startswith("Odds")
    assert await snapshot(app) == before


class HouseTemplate:
    """A community plugin declaring a character template through the hook."""

    @hookimpl
    def coterie_character_templates(self) -> list[CharacterTemplate]:
        traits = (TraitSpec("Might", 1, 5, 1), TraitSpec("Guile", 1, 5, 1))
        house = CharacterTemplate("revised", (TraitGroup("Traits", traits, always_shown=True),))
        return [house]


async def test_a_second_template_for_a_rule_set_is_ignored() -> None:
    host = PluginHost()
    host.load(["revised"])
    host.register(HouseTemplate(), "house")
    config = parse_config({"plugins": {"enable": ["revised"]}}, "t")
    app = Coterie(config, host=host)
    found = templates(app)["revised"]
    assert "Strength" in [t.name for t in found.traits.values()]
    assert "Might" not in [t.name for t in found.traits.values()]


async def test_a_community_rule_set_declares_its_template_through_the_hook() -> None:
    # examples/coterie-house-rules: the nobotch rule set with the Revised sheet
    app = app_with("nobotch", [1, 1, 1, 6], plugins={"enable": ["revised", "house-rules"]})
    assert "nobotch" in templates(app)
    await say(app, "!char new Hero")
    await say(app, "!char set Strength 2 Brawl 2")
    text = await say(app, "!roll Strength+Brawl 6")
    assert "Hero: Strength 2 + Brawl 2 = 4 dice" in text and "botch" not in text.lower()


async def test_a_secret_roll_by_name_keeps_the_pool_from_the_room() -> None:
    app = app_with("revised", [6] * 10)
    await say(app, "!char new Al")
    await say(app, "!char set Strength 3 Brawl 2 Willpower 2")
    text = await say(app, "!roll Strength+Brawl 6 wp secret")
    assert "secret roll" in text and "Strength 3" not in text
    assert "Al: Willpower points 2/2 → 1/2" in text  # the sheet is no secret


async def test_an_npc_roll_spends_nothing_of_the_storytellers_character() -> None:
    app = app_with("revised", [6] * 10)
    await say(app, "!char new Mentor", user="st")
    await say(app, "!char set Willpower 3", user="st")
    before = await snapshot(app)
    text = await say(app, "!npc roll Guard 5 6 wp public", user="st")
    assert "Guard" in text and "Mentor" not in text
    assert await snapshot(app) == before
