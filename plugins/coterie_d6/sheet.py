"""The ``d6`` character template (docs/characters.md): the four Traits of 001 (Physical,
Mental, Social, Psychic), one per roll (001, *Rules*), and the Disciplines 001 names for
initiative (Celerity, Potence, Hunter's Instinct) as levels. 001 keeps no Health or Willpower
track and no specialties."""

from __future__ import annotations

from coterie.framework.characters import CharacterTemplate, TraitGroup, TraitSpec

TEMPLATE = CharacterTemplate(
    variant="d6",
    groups=(
        TraitGroup(
            "Traits",
            tuple(
                TraitSpec(name, 0, 5, 1, (name[:3].lower(), name[:4].lower()), specialties=False)
                for name in ("Physical", "Mental", "Social", "Psychic")
            ),
            always_shown=True,
        ),
        TraitGroup(
            "Disciplines",
            (
                TraitSpec("Celerity", 0, 2, 0, specialties=False),
                TraitSpec("Potence", 0, 2, 0, specialties=False),
                TraitSpec("Hunter's Instinct", 0, 1, 0, ("hunter",), specialties=False),
            ),
            custom=True,
            custom_high=2,
        ),
    ),
    max_traits=1,
    readings=(
        "Traits are rated 0-5 (001's examples use 1-4); a roll is one Trait, never two (001).",
        "Celerity and Potence are levels 0-2 (none, basic, advanced), Hunter's Instinct 0-1; "
        "they are kept on the sheet and are not rolled (initiative takes them as written: "
        "`!init add NAME P4 M3 hunter celerity`).",
        "001 keeps no Health or Willpower track: the tracker commands say so.",
    ),
)
