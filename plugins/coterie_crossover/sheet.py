"""The ``crossover`` character template (docs/characters.md): vampires, werewolves and mages on
one sheet. Attributes 0-10 (004, *Ratings*: shapeshifting raises them past 5); Rage, Willpower
and Gnosis rated up to 10, rolled alone (004, *Dice Pools*), each with points spent in play;
``wp`` adds a success and spends a point (004, *Automatic Success*); the Health chart whose
levels 004 names (*Movement*: Injured) from the published editions."""

from __future__ import annotations

from dataclasses import replace

from coterie.framework.characters import TrackerSpec, TraitGroup, TraitSpec
from coterie.rulekit.sheets import attributes, group, vampire_template

_BASE = vampire_template("crossover")


def _ten(name: str, default: int, aliases: tuple[str, ...] = ()) -> TraitSpec:
    return TraitSpec(
        name, 0, 10, default, aliases, ten_point=True, reflexive=True, specialties=False
    )


def _groups() -> tuple[TraitGroup, ...]:
    out: list[TraitGroup] = [attributes(high=10)]
    for g in _BASE.groups[1:]:
        if g.name == "Talents":
            g = replace(g, traits=(*g.traits, *group("", ["Primal-Urge"]).traits))
        if g.name == "Knowledges":
            g = replace(
                g,
                traits=(
                    *g.traits,
                    *group("", ["Enigmas", "Rituals", "Cosmology", "Esoterica"]).traits,
                ),
            )
        if g.name == "Morality":
            g = replace(g, traits=(*g.traits, _ten("Rage", 0), _ten("Gnosis", 0)))
        out.append(g)
    out.insert(5, TraitGroup("Gifts", (), custom=True))
    out.insert(6, TraitGroup("Spheres", (), custom=True))
    return tuple(out)


TEMPLATE = replace(
    _BASE,
    groups=_groups(),
    trackers=(
        *_BASE.trackers,
        TrackerSpec("Rage points", "rage", "points", trait="Rage"),
        TrackerSpec("Gnosis points", "gnosis", "points", trait="Gnosis"),
    ),
    readings=(
        "Attributes are rated 0-10 (004 lets shapeshifting raise them above 5).",
        "Rage, Willpower, Gnosis (and Humanity) roll their rating, alone (004, Dice Pools).",
        "Health is the published chart (Bruised 0 … Crippled −5, Incapacitated); 004 names its "
        "levels but prints no chart. Not applied to the Traits rolled alone (reflexive).",
        "`wp` on a roll adds one success and spends a Willpower point; refused at 0.",
        "Specialties are kept on the sheet; 004 gives them no dice effect.",
    ),
)
