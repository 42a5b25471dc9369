"""Pieces of character templates the d10 Storyteller rule sets share (see
:mod:`coterie.framework.characters`): the nine Attributes, the published Health chart, the
Willpower spend of a roll with ``wp``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from coterie.framework.characters import (
    CharacterTemplate,
    Effect,
    HealthSpec,
    Spend,
    TrackerSpec,
    TraitGroup,
    TraitSpec,
)

_ALIASES = {
    "Strength": ("str",),
    "Dexterity": ("dex",),
    "Stamina": ("sta", "stam"),
    "Charisma": ("cha",),
    "Manipulation": ("man", "manip"),
    "Appearance": ("app",),
    "Composure": ("com", "comp"),
    "Perception": ("per", "perc"),
    "Intelligence": ("int",),
    "Wits": ("wit",),
    "Resolve": ("res",),
}


def attributes(
    social: Sequence[str] = ("Charisma", "Manipulation", "Appearance"),
    mental: Sequence[str] = ("Perception", "Intelligence", "Wits"),
    *,
    low: int = 0,
    high: int = 5,
) -> TraitGroup:
    """The nine Attributes (Physical, Social, Mental), rated ``low``..``high``, default 1."""
    physical = ("Strength", "Dexterity", "Stamina")
    traits = [
        TraitSpec(name, low, high, 1, _ALIASES.get(name, ()), category=category)
        for category, names in (("physical", physical), ("social", social), ("mental", mental))
        for name in names
    ]
    return TraitGroup("Attributes", tuple(traits), always_shown=True)


def group(name: str, names: Sequence[str], *, custom: bool = False) -> TraitGroup:
    """A group of Traits rated 0-5, default 0."""
    return TraitGroup(name, tuple(TraitSpec(n) for n in names), custom=custom)


#: the Health chart of the published editions (Revised, V20, W20, M20): the level and its dice
#: penalty by number of boxes marked; Incapacitated allows no action
HEALTH_LEVELS: tuple[tuple[str, int | None], ...] = (
    ("Healthy", 0),
    ("Bruised", 0),
    ("Hurt", -1),
    ("Injured", -1),
    ("Wounded", -2),
    ("Mauled", -2),
    ("Crippled", -5),
    ("Incapacitated", None),
)

D10_HEALTH = HealthSpec("Health", HEALTH_LEVELS)

#: seven boxes marked bashing ``/``, lethal ``X``, aggravated ``*``
HEALTH_TRACK = TrackerSpec(
    "Health",
    None,
    "boxes",
    size=7,
    marks=(("bashing", "/"), ("lethal", "X"), ("aggravated", "*")),
)


def willpower(*, command: str = "wp") -> tuple[TraitSpec, TrackerSpec]:
    """Willpower: a rating 0-10 rolled alone (reflexive) and its points, spent by ``wp``."""
    rating = TraitSpec(
        "Willpower", 0, 10, 5, ("will",), ten_point=True, reflexive=True, specialties=False
    )
    points = TrackerSpec("Willpower points", command, "points", trait="Willpower", aliases=("wp",))
    return rating, points


def blood_pool(high: int = 10) -> TrackerSpec:
    """Blood points, up to a maximum the player sets (the edition's generation chart)."""
    return TrackerSpec("Blood Pool", "blood", "points", high=high, default=high)


def willpower_spend(outcome: Any) -> Sequence[Effect]:
    """A roll with ``wp`` spends one Willpower point (both sides' requests keep the flag)."""
    request = getattr(outcome, "request", None)
    actor = getattr(request, "actor", None)
    if getattr(actor, "willpower", False):
        return [Effect("Willpower points", -1, why="wp", strict=True)]
    return []


# --- the V:tM template ------------------------------------------------------------------

TALENTS = (
    "Alertness Athletics Brawl Dodge Empathy Expression Intimidation Leadership Streetwise "
    "Subterfuge"
)
SKILLS = "Animal Ken|Crafts|Drive|Etiquette|Firearms|Melee|Performance|Security|Stealth|Survival"
KNOWLEDGES = (
    "Academics Computer Finance Investigation Law Linguistics Medicine Occult Politics Science"
)
DISCIPLINES = (
    "Animalism Auspex Celerity Chimerstry Dementation Dominate Fortitude Necromancy Obfuscate "
    "Obtenebration Potence Presence Protean Quietus Serpentis Thaumaturgy Vicissitude"
)
BACKGROUNDS = "Allies Contacts Fame Generation Herd Influence Mentor Resources Retainers Status"


def virtues() -> TraitGroup:
    return TraitGroup(
        "Virtues",
        tuple(
            TraitSpec(name, 1, 5, 1, reflexive=True, specialties=False)
            for name in ("Conscience", "Self-Control", "Courage")
        ),
        custom=True,
        custom_low=1,
        always_shown=True,
    )


def vampire_template(
    variant: str = "revised",
    talents: str = TALENTS,
    skills: str = SKILLS,
    knowledges: str = KNOWLEDGES,
    readings: tuple[str, ...] = (),
) -> CharacterTemplate:
    """The V:tM template of the d10 editions (``revised``; ``laia`` with the V20 Abilities)."""
    rating, points = willpower()
    humanity = TraitSpec(
        "Humanity", 0, 10, 7, ("hum",), ten_point=True, reflexive=True, specialties=False
    )
    return CharacterTemplate(
        variant=variant,
        groups=(
            attributes(),
            group("Talents", talents.split(), custom=True),
            group("Skills", skills.split("|"), custom=True),
            group("Knowledges", knowledges.split(), custom=True),
            group("Disciplines", DISCIPLINES.split(), custom=True),
            group("Backgrounds", BACKGROUNDS.split(), custom=True),
            virtues(),
            TraitGroup("Morality", (humanity, rating), always_shown=True),
        ),
        trackers=(points, blood_pool(), HEALTH_TRACK),
        health=D10_HEALTH,
        max_traits=2,
        spends=(Spend("willpower", "Willpower points"),),
        effects=willpower_spend,
        readings=readings
        or (
            "Willpower and Humanity roll their rating (the permanent dots), alone.",
            "Health is the edition's chart of seven levels (Bruised 0 … Crippled −5, "
            "Incapacitated); the penalty applies to every roll by name except Willpower, "
            "Humanity and the Virtues (reflexive).",
            "Specialties are kept on the sheet; these rules give them no dice effect.",
            "`wp` on a roll spends a Willpower point and is refused at 0.",
        ),
    )
