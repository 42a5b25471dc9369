"""The issue's bad input, in every rule set (#17): an unknown Trait, a rating out of range, a
third Trait, a 10-max Trait with another, someone else's sheet, a broken import — each answered
with a clear error that names the problem, and nothing changed (no sheet, no roll log entry)."""

from __future__ import annotations

import json

import pytest

from test_characters import app_with, say, snapshot

#: per rule set: (a pool of two Traits, a Trait and a rating past its range, the error, a
#: third Trait's error or None, a 10-max Trait with another and its error or None)
CASES = {
    "revised": (
        "Strength+Brawl",
        "Strength 6",
        "Strength must be between 0 and 5, not 6",
        "adds 3 Traits; a pool adds at most two",
        ("Willpower+Brawl", "Willpower is rolled alone"),
    ),
    "crossover": (
        "Strength+Brawl",
        "Strength 11",
        "Strength must be between 0 and 10, not 11",
        "adds 3 Traits; a pool adds at most two",
        ("Gnosis+Brawl", "Gnosis is rolled alone"),
    ),
    "v5": (
        "Strength+Brawl",
        "Strength 6",
        "Strength must be between 0 and 5, not 6",
        "adds 3 Traits; a pool adds at most two",
        ("Humanity+Brawl", "Humanity is rolled alone"),
    ),
    "laia": (
        "Strength+Brawl",
        "Strength 6",
        "Strength must be between 0 and 5, not 6",
        None,  # 003 states no limit
        None,  # nor a Trait rolled alone
    ),
    "d6": (
        "Physical",
        "Physical 6",
        "Physical must be between 0 and 5, not 6",
        "adds 2 Traits; a pool adds at most one",
        None,
    ),
}


@pytest.mark.parametrize("variant", sorted(CASES))
async def test_bad_input_is_refused_and_changes_nothing(variant: str) -> None:
    pool, out_of_range, range_error, third_error, ten_max = CASES[variant]
    app = app_with(variant, [6] * 40)
    roll = "?throw" if variant == "laia" else "!roll"
    difficulty = "4" if variant == "d6" else "6"
    await say(app, "!char new Al")
    await say(app, "!char new Bo", user="bo")
    exported = (await say(app, "!char export")).splitlines()[1]
    data = json.loads(exported)
    before = await snapshot(app)
    typo, meant = ("Phisical", "Physical") if variant == "d6" else ("Strenght", "Strength")
    unknown = f'no Trait "{typo}" — did you mean {meant}?'
    bad: list[tuple[str, str, str]] = [
        ("ana", f"{roll} {typo} {difficulty}", unknown),
        ("ana", f"!char set {typo} 2", unknown),
        ("ana", f"!char set {out_of_range}", range_error),
        ("ana", "!char set Bo Strength 2 for Bo", "only its player or the Storyteller can change"),
        ("ana", "!sheet Bo", "only its player or the Storyteller can see someone else's character"),
        ("ana", "!char delete Bo confirm", "only its player or the Storyteller can change"),
        ("ana", "!char import {broken", "not a character's JSON"),
        (
            "ana",
            "!char import " + json.dumps({**data, "name": "X", "traits": {typo: 2}}),
            f"did you mean {meant}",
        ),
        ("ana", "!char import " + json.dumps({**data, "name": "X", "pets": 1}), "unknown key"),
    ]
    if third_error is not None:
        third = pool + "+Dexterity" if "+" in pool else pool + "+Mental"
        bad.append(("ana", f"{roll} {third} {difficulty}", third_error))
    if ten_max is not None:
        bad.append(("ana", f"{roll} {ten_max[0]} {difficulty}", ten_max[1]))
    for user, line, error in bad:
        text = await say(app, line, user=user)
        assert text.startswith("⚠") and error in text, (line, text)
    assert await snapshot(app) == before
    assert await app.state.rolls("test:r") == []
