"""The ``laia`` character template (docs/characters.md): V20's sheet. 003 has no two-Trait
limit and no "rolled alone" rule, so names add freely; a specialty makes 10s count double
(003, *How to Roll*). 003 has no Willpower rule: Willpower points are kept on the sheet and
moved by hand (``!wp``), never by a roll."""

from __future__ import annotations

from dataclasses import replace

from coterie.framework.characters import TraitGroup
from coterie.rulekit.sheets import vampire_template

TALENTS = (
    "Alertness Athletics Awareness Brawl Empathy Expression Intimidation Leadership Streetwise "
    "Subterfuge"
)
SKILLS = "Animal Ken|Crafts|Drive|Etiquette|Firearms|Larceny|Melee|Performance|Stealth|Survival"
KNOWLEDGES = (
    "Academics Computer Finance Investigation Law Medicine Occult Politics Science Technology"
)

_BASE = vampire_template("laia", TALENTS, SKILLS, KNOWLEDGES)


def _not_alone(group: TraitGroup) -> TraitGroup:
    return replace(group, traits=tuple(replace(t, ten_point=False) for t in group.traits))


TEMPLATE = replace(
    _BASE,
    groups=tuple(_not_alone(g) if g.name == "Morality" else g for g in _BASE.groups),
    max_traits=None,
    specialty="tens",
    spends=(),
    effects=None,
    readings=(
        "Abilities are V20's list (003 names only some of them); Traits of your own are allowed.",
        "003 sets no limit on the Traits of a pool and no rule of Traits rolled alone: names add.",
        "`Trait.Specialty` (or `spec`) makes each uncancelled 10 count two (003).",
        "003 has no Willpower rule: `!wp` moves the points by hand; no roll spends them.",
        "Health is V20's chart (Bruised 0 … Crippled −5, Incapacitated), as in revised.",
    ),
)
