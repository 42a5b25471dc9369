"""Outcome flags (issue 21): each rule set declares its outcome words with flags (critical,
messy, botch, exceptional), and charts, the roll log and export read them with no code per rule
set."""

from __future__ import annotations

import pytest

from coterie.framework.grammar import parse, tokens
from coterie.framework.variant import DEFAULT_OUTCOMES, OutcomeKind, RoomSettings
from coterie.ops.export import result_text
from coterie.rulekit.odds import FLAG_COLOURS, flagged, outcome_colour
from coterie.storage.state import RollRecord
from coterie.testing import make_table

ODDS_PROBES = {
    "revised": "5 6",
    "v5": "5 2",
    "d6": "3",
    "laia": "4 6",
    "crossover": "5 6",
    "cofd": "3",
}


@pytest.mark.parametrize("name", sorted(ODDS_PROBES))
def test_every_outcome_a_rule_set_can_return_is_declared(name: str) -> None:
    table = make_table([name])
    variant = table.app.variants[name]
    parsed = parse(tokens(ODDS_PROBES[name]), variant.grammar)
    dist = variant.odds(variant.build(parsed, RoomSettings(variant=name)))
    declared = {kind.name for kind in variant.outcome_kinds}
    assert set(dist.names) <= declared, set(dist.names) - declared
    wins = {kind.name for kind in variant.outcome_kinds if kind.win}
    assert set(dist.wins) <= wins
    table.close()


def test_unknown_flags_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown outcome flags"):
        OutcomeKind("great", flags=frozenset({"awesome"}))
    assert [k.name for k in DEFAULT_OUTCOMES] == ["success", "failure", "botch"]
    assert OutcomeKind("messy_critical").label == "messy critical"


def test_the_roll_log_carries_the_flags_and_the_botch_from_them() -> None:
    table = make_table(["cofd"], faces=[8, 8, 8, 9, 10, 2, 1])
    table.say("!roll 5")  # 8 8 8 9 10 and the 10's die 2: exceptional
    table.say("!roll 0")  # the chance die shows 1
    first, second = table.assert_rolled(
        {"outcome": "exceptional_success", "botch": False, "detail": {"flags": ["exceptional"]}},
        {"outcome": "dramatic_failure", "botch": True, "detail": {"flags": ["botch"]}},
    )
    assert (first.detail["faces"], second.detail["faces"]) == ([8, 8, 8, 9, 10, 2], [1])
    table.close()
    plain = make_table(["revised"], faces=[7, 1])
    plain.say("!roll 1")  # a success: no flag, so no "flags" key in the detail
    plain.say("!roll 1")  # a botch
    quiet, botched = plain.rolls()
    assert "flags" not in quiet.detail and botched.detail["flags"] == ["botch"] and botched.botch
    plain.close()


def test_v5_flags() -> None:
    table = make_table(["v5"], faces=[10, 10, 3])
    table.say("!roll 3")
    (record,) = table.assert_rolled({"outcome": "critical"})
    assert record.detail["flags"] == ["critical"]
    table.close()


def test_export_prints_flags_the_word_does_not_say() -> None:
    record = RollRecord(
        id="x",
        room="r",
        user="u",
        display_name="u",
        variant="house",
        request="!roll 3",
        faces=[10, 10, 1],
        outcome="success",
        successes=4,
        detail={"flags": ["critical"]},
    )
    assert result_text(record) == "4 successes (success), critical"
    record.outcome, record.detail = "messy_critical", {"flags": ["critical", "messy"]}
    assert result_text(record) == "4 successes (messy_critical)"


def test_chart_colours_come_from_the_flags() -> None:
    table = make_table(["cofd"])
    variant = table.app.variants["cofd"]
    dist = flagged(
        variant.odds(variant.build(parse(tokens("0"), variant.grammar), RoomSettings("cofd"))),
        variant,
    )
    colours = dict(FLAG_COLOURS)
    assert dist.flags["dramatic_failure"] == frozenset({"botch"})
    assert outcome_colour(dist, "dramatic_failure") == colours["botch"]
    assert outcome_colour(dist, "exceptional_success") == colours["exceptional"]
    assert outcome_colour(dist, "failure") == "#adb5bd"
    table.close()


def test_stats_counts_the_flagged_outcomes_with_no_code_per_rule_set() -> None:
    table = make_table(["cofd"], faces=[8, 8, 8, 9, 10, 2, 1, 3])
    table.say("!roll 5")  # exceptional
    table.say("!roll 0")  # dramatic failure
    table.say("!roll 1")  # failure
    line = table.say("!stats").lines[1]
    assert line.endswith(", 1 exceptional success, 1 dramatic failure")
    assert table.app.variants["cofd"].stats_tallies() == (
        ("exceptional_success", "exceptional success"),
        ("dramatic_failure", "dramatic failure"),
    )
    # rule sets that set their own tallies (v5) or declare nothing (revised) keep them
    v5 = make_table(["v5"]).app.variants["v5"]
    assert v5.stats_tallies() == v5.tallies
    assert make_table(["revised"]).app.variants["revised"].stats_tallies() == (("botch", "botch"),)
    table.close()
