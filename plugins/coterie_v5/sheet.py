"""The ``v5`` character template (docs/characters.md): Attributes, Skills, Disciplines; Health
and Willpower as tracks of boxes marked Superficial ``/`` or Aggravated ``X`` (002, *Trackers
and Pools*, *Willpower*), Hunger, Humanity and Stains. A failed rouse check raises Hunger; a
Willpower re-roll marks one Superficial Willpower damage (002, *Willpower*)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from coterie.framework.characters import (
    CharacterTemplate,
    Degeneration,
    Effect,
    HealthSpec,
    TrackerSpec,
    TraitGroup,
    TraitSpec,
)
from coterie.rulekit.sheets import attributes, group
from coterie_v5 import rules

SKILLS = (
    "Athletics|Brawl|Craft|Drive|Firearms|Larceny|Melee|Stealth|Survival|"
    "Animal Ken|Etiquette|Insight|Intimidation|Leadership|Performance|Persuasion|Streetwise|"
    "Subterfuge|Academics|Awareness|Finance|Investigation|Medicine|Occult|Politics|Science|"
    "Technology"
)
DISCIPLINES = (
    "Animalism|Auspex|Blood Sorcery|Celerity|Dominate|Fortitude|Obfuscate|Oblivion|Potence|"
    "Presence|Protean|Thin-Blood Alchemy"
)
BACKGROUNDS = "Allies|Contacts|Fame|Haven|Herd|Influence|Mask|Resources|Retainers|Status"

DAMAGE = (("superficial", "/"), ("aggravated", "X"))


def effects(outcome: Any) -> Sequence[Effect]:
    """A failed rouse check raises Hunger by one; a Willpower re-roll marks one Superficial
    Willpower damage."""
    result = getattr(outcome, "result", None)
    if isinstance(result, rules.RouseResult):
        return [Effect("Hunger", result.failed, why="rouse")] if result.failed else []
    if getattr(outcome, "rerolled", ()):
        return [Effect("Willpower", 1, "damage", "superficial", why="Willpower re-roll")]
    return []


TEMPLATE = CharacterTemplate(
    variant="v5",
    groups=(
        attributes(("Charisma", "Manipulation", "Composure"), ("Intelligence", "Wits", "Resolve")),
        group("Skills", SKILLS.split("|"), custom=True),
        group("Disciplines", DISCIPLINES.split("|"), custom=True),
        group("Backgrounds", BACKGROUNDS.split("|"), custom=True),
        TraitGroup("Blood", (TraitSpec("Blood Potency", 0, 10, 1, ("bp",), specialties=False),)),
    ),
    trackers=(
        TrackerSpec(
            "Health", None, "boxes", size=("Stamina",), size_offset=3, marks=DAMAGE, rolls="current"
        ),
        TrackerSpec(
            "Willpower",
            "wp",
            "boxes",
            size=("Composure", "Resolve"),
            marks=DAMAGE,
            rolls="current",
            aliases=("will",),
        ),
        TrackerSpec("Hunger", "hunger", "level", 0, rules.MAX_HUNGER, 1, high_rule="max_hunger"),
        TrackerSpec("Humanity", "humanity", "level", 0, 10, 7, rolls="rating", aliases=("hum",)),
        TrackerSpec("Stains", "stains", "level", 0, 10, 0),
    ),
    health=HealthSpec(
        "Health",
        impairment=2,
        impairment_tracks={"Health": ("physical",), "Willpower": ("social", "mental")},
    ),
    max_traits=2,
    specialty="die",
    kinds=("vampire", "mortal", "ghoul"),
    kind_trackers={"Hunger": ("vampire",)},
    presets={"hunger": "Hunger"},
    effects=effects,
    readings=(
        "A roll by name takes Hunger from the sheet: `!roll Strength+Brawl 3` is Difficulty 3; "
        "`h N` still overrides. A roll in numbers only reads as before (POOL HUNGER DIFFICULTY).",
        "Health has Stamina+3 boxes and Willpower Composure+Resolve (the V5 book; 002 gives no "
        "sizes); a tracker rolls its undamaged boxes, never fewer than one die (002).",
        "Impairment (the V5 book): Health all marked, −2 dice on pools with a Physical "
        "Attribute; Willpower all marked, −2 on Social and Mental ones; never below one die.",
        "Damage into a full track turns one Superficial box Aggravated (the V5 book); soak and "
        "halving Superficial damage are the player's arithmetic: `!damage` marks what is typed.",
        "A failed rouse check raises Hunger by one, up to the room's `max_hunger` (002 says "
        "checks decide Hunger gain); a Willpower re-roll marks one Superficial Willpower "
        "damage (002), also when the track is full (it then turns one box Aggravated).",
        "A specialty (`Skill.Specialty` or `spec`) adds one die, however many apply (002).",
        "Mortals and ghouls have no Hunger: their rolls have no Hunger dice.",
        "Humanity and Stains share ten boxes (the V5 book; 002 only names Humanity as a tracker "
        "roll): a Stain with no empty box left marks one Aggravated Willpower damage instead and "
        "impairs every pool by 2 dice until the Stains are cleared; any change of Humanity "
        "clears them; `!remorse` rolls one die per box neither Humanity nor a Stain fills "
        "(at least one): no success costs a point of Humanity, and the Stains are cleared "
        "either way.",
        "Ghouls have no rouse checks of their own: no rule document covers a ghoul's blood.",
    ),
    degeneration=Degeneration(remorse_roll="humanity {dice} 0 1"),
)
