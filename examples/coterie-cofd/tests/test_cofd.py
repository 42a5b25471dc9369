"""The cofd rule set, tested the way a plugin author would: through ``coterie.testing`` (the
fixtures come from coterie's pytest plugin, no conftest) and ``coterie roll --faces``."""

from __future__ import annotations

import json

import pytest

from coterie.dice import ReplayDice
from coterie.errors import UsageError
from coterie.framework.grammar import Parsed, Pool, parse, tokens
from coterie.framework.variant import RoomSettings
from coterie.ops.cli import main
from coterie_cofd import CofdVariant, rules
from coterie_cofd.odds import pool_odds

VARIANT = CofdVariant()
SETTINGS = RoomSettings(variant="cofd")


def request(text: str):
    return VARIANT.build(parse(tokens(text), VARIANT.grammar), SETTINGS)


def play(text: str, faces: list[int]):
    return VARIANT.evaluate(request(text), faces)


# --- the rules, face by face -----------------------------------------------------------------


def test_eight_or_more_succeeds() -> None:
    outcome = play("5", [8, 9, 7, 1, 2])
    assert (outcome.outcome, outcome.successes, outcome.degree) == ("success", 2, None)
    assert play("3", [7, 7, 1]).outcome == "failure"


def test_ten_again_chains() -> None:
    # the 10 adds a die; that die shows 10 and adds another; which shows 8
    outcome = play("2", [10, 3, 10, 8])
    assert outcome.successes == 3
    assert [d.source for d in outcome.roll.dice] == ["pool", "pool", "again", "again"]
    with pytest.raises(UsageError, match="needs at least 3 dice, but 2 face"):
        play("2", [10, 3])  # the added die is missing
    with pytest.raises(UsageError, match="1 face\\(s\\) left over"):
        play("2", [9, 3, 5])  # nothing exploded: 5 is one face too many


def test_nine_again_eight_again_and_no_again() -> None:
    assert play("2 9again", [9, 1, 8]).successes == 2  # the 9 adds a die, the 8 adds none
    assert play("2 8-again", [8, 1, 8, 2]).successes == 2
    assert play("2 noagain", [10, 10]).successes == 2
    with pytest.raises(UsageError, match="one again rule per roll"):
        request("2 9again 8again")


def test_rote_rerolls_the_failed_pool_dice_once() -> None:
    # pool 8 3 1: two failures re-rolled (10 and 4); the 10 explodes (2)
    outcome = play("3 rote", [8, 3, 1, 10, 4, 2])
    assert outcome.successes == 2
    assert [d.source for d in outcome.roll.dice] == ["pool"] * 3 + ["rote"] * 2 + ["again"]
    assert [d.rerolled for d in outcome.roll.dice[:3]] == [False, True, True]
    # a re-rolled die that fails again stays failed
    assert play("1 rote", [2, 3]).outcome == "failure"


def test_exceptional_success_at_five() -> None:
    outcome = play("5", [8, 8, 8, 8, 9])
    assert (outcome.outcome, outcome.degree) == ("exceptional_success", "exceptional")
    assert play("5", [8, 8, 8, 8, 1]).outcome == "success"


def test_chance_die() -> None:
    for text in ("0", "2-3", "1-4"):
        assert request(text).chance, text
    assert play("0", [10]).outcome == "success" and play("0", [10]).successes == 1
    assert play("0", [9]).outcome == "failure"  # 8 and 9 do not succeed on a chance die
    assert play("0", [1]).outcome == "dramatic_failure"
    assert play("0 rote 9again", [9]).outcome == "failure"  # no again and no rote on it


def test_willpower_adds_three_dice() -> None:
    built = request("1-2 wp")
    assert (built.pool, built.chance, built.willpower) == (2, False, True)
    assert VARIANT.dice_count(built) == 2
    assert request("2 wp").pool == 5


def test_json_contract() -> None:
    outcome = play("2 rote", [10, 1, 3, 9])
    assert outcome.as_json() == {
        "variant": "cofd",
        "faces": [10, 1, 3, 9],
        "successes": 2,
        "outcome": "success",
        "degree": None,
        "pool": 2,
        "written_pool": "2",
        "again": 10,
        "rote": True,
        "willpower": False,
        "chance": False,
        "chance_again": False,
        "sources": ["pool", "pool", "again", "rote"],
    }


def test_roll_draws_from_the_room_dice_as_it_goes() -> None:
    dice = ReplayDice([10, 10, 10, 2, 5])
    outcome = VARIANT.roll(request("2"), dice)
    dice.finish()
    assert outcome.successes == 3 and dice.draws == 3  # the pool, 2 added, 1 added


# --- chat, through coterie.testing ------------------------------------------------------------


def test_chat(coterie_table) -> None:
    table = coterie_table(["cofd"], faces=[10, 3, 8, 1, 1, 2, 9, 2, 2, 2])
    said = table.say("!roll 6 # the lock", user="ana")
    assert said.lines == [
        "ana — the lock",
        "6 dice: 10 3 8 1 1 2 · again 9",
        "3 successes",
    ]
    assert "~" not in said.encoded("slack").splitlines()[1].split("again")[1]
    said = table.say("!roll 1-2 rote", user="ben", room="crypt")
    assert said.lines[1:] == ["a chance die: 2", "Failure"]
    table.assert_rolled({"user": "ana", "outcome": "success", "successes": 3})
    table.assert_rolled({"user": "ben", "detail": {"chance": True}}, room="crypt")


def test_chat_errors_roll_nothing(coterie_table) -> None:
    table = coterie_table(["cofd"], faces=[])
    said = table.say("!roll 4 8again noagain")
    assert said.is_error and "one again rule per roll" in said.text
    said = table.say("!roll 4 9agian")
    assert "Did you mean `9again`?" in said.text
    assert table.rolls() == []


def test_odds_in_chat(coterie_table) -> None:
    table = coterie_table(["cofd"])
    lines = table.say("!odds 0").lines
    assert lines[1] == "Chance of success: 10.0%"
    assert lines[2] == "success 10.0% · failure 80.0% · dramatic failure 10.0%"
    lines = table.say("!odds 3 rote chart").lines
    assert lines[0] == "Odds — 3 dice, rote"
    assert lines[1] == "Chance of success: 88.2%"
    assert lines[5].startswith("exploding dice counted up to")
    assert table.say("!odds 3 rote chart").reply.body[-1].alt.startswith("Odds chart (cofd)")


# --- the command line ---------------------------------------------------------------------------


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["roll", "--variant", "cofd", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_replays_exploding_rolls(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "--pool", "3", "--faces", "10,3,8,10,10,9", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["faces"] == [10, 3, 8, 10, 10, 9] and data["successes"] == 5
    assert data["outcome"] == "exceptional_success"
    code, _, err = cli(capsys, "--pool", "2", "--faces", "10,3")
    assert code == 2
    assert "--faces: the faces ran out: this roll needs at least 3 dice, but 2" in err
    assert "every die added or re-rolled" in err
    code, _, err = cli(capsys, "--pool", "2", "--faces", "9,3,5")
    assert code == 2 and "1 face(s) left over" in err
    code, out, _ = cli(capsys, "--pool", "0", "--willpower", "--faces", "1,8,8")
    assert code == 0 and out.splitlines() == ["3 dice, Willpower: 1 8 8", "2 successes"]


# --- odds -------------------------------------------------------------------------------------


def test_odds_of_one_die_by_hand() -> None:
    # one die, 10-again: P(0) = 7/10; P(k >= 1) = (1/10)^(k-1) * (2/10 + 1/10 * 7/10)
    dist = pool_odds(1, 10, False)
    table = {k: float(p) for k, p in dist.successes.items()}
    assert abs(table[0] - 0.7) < 1e-12
    assert abs(table[1] - 0.27) < 1e-12
    assert abs(table[2] - 0.027) < 1e-12
    # the left-out tail (< 1e-12) holds the longest chains, so the mean is off a little more
    assert 0 < 1 / 3 - float(dist.mean) < 1e-10
    assert "left out" in dist.note


def test_odds_agree_with_every_replay_of_small_pools() -> None:
    """Every sequence of faces a small pool can roll, through the rule set's own evaluate,
    against the odds. The sequences less likely than 1e-7 are not followed further; their
    mass (``pruned``) is the only slack allowed, besides the engine's 1e-12."""
    for pool, again, rote in [(1, 10, False), (2, 9, False), (1, 8, True), (2, None, True)]:
        text = f"{pool}" + {10: "", 9: " 9again", 8: " 8again", None: " noagain"}[again]
        built = request(text + (" rote" if rote else ""))
        found: dict[tuple[str, int], float] = {}
        pruned = [0.0]

        def walk(faces: list[int], weight: float, built=built, found=found, pruned=pruned) -> None:
            try:
                outcome = VARIANT.evaluate(built, faces)
            except UsageError as error:
                assert "ran out" in error.message
                if weight < 1e-7:
                    pruned[0] += weight
                    return
                for face in range(1, 11):
                    walk([*faces, face], weight / 10)
                return
            key = (outcome.outcome, outcome.successes)
            found[key] = found.get(key, 0.0) + weight

        walk([], 1.0)
        assert pruned[0] < 1e-3
        dist = pool_odds(pool, again, rote)
        for key in set(found) | set(dist.table):
            gap = abs(found.get(key, 0.0) - float(dist.table.get(key, 0)))
            assert gap <= pruned[0] + 1e-12, (pool, again, rote, key, gap)


def test_rules_constants() -> None:
    assert rules.TARGET == 8 and rules.EXCEPTIONAL == 5 and rules.WILLPOWER_DICE == 3
    assert Parsed(values={"pool": Pool.of(4)}).pool() == Pool.of(4)


# --- the room option chance_again, declared once (HouseRule) and read everywhere ---------------


def test_chance_again_is_a_room_option(coterie_table) -> None:
    table = coterie_table(
        ["cofd"], faces=[10, 10, 8, 10, 4], defaults={"house_rules": {"chance_again": True}}
    )
    said = table.say("!roll 0")
    assert said.lines[1:] == ["a chance die (10-again): 10 · again 10 8", "3 successes"]
    plain = coterie_table(["cofd"], faces=[10])
    assert plain.say("!roll 0").lines[1:] == ["a chance die: 10", "1 success"]
    odds = table.say("!odds 0").lines
    assert odds[0] == "Odds — a chance die (10-again)"
    assert odds[2].startswith("exceptional success <0.1% · success 10.0%")


def test_chance_again_from_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "--pool", "0", "--option", "chance_again=on", "--faces", "10,9")
    assert code == 0 and out.splitlines()[-1] == "2 successes"
    code, _, err = cli(capsys, "--pool", "0", "--option", "chance_again=5")
    assert code == 2 and "chance_again is on or off, not '5'" in err
    code, _, err = cli(capsys, "--pool", "3", "--option", "9agin")
    assert code == 2 and "no option '9agin'. Did you mean 9again?" in err
    assert "Options: 8again, 9again, chance_again, noagain, rote, wp" in err
    code, out, _ = cli(capsys, "--pool", "2", "--option", "rote", "--faces", "1,2,8,3", "--json")
    assert code == 0 and json.loads(out)["rote"] is True


def test_chance_again_in_the_config_is_checked(tmp_path) -> None:
    config = tmp_path / "c.toml"
    config.write_text(
        '[plugins]\nenable = ["cofd"]\n[defaults]\nvariant = "cofd"\n'
        "[defaults.house_rules]\nchance_agian = true\n"
    )
    assert main(["config", "check", str(config)]) == 3


# --- plugin settings: declared with coterie_settings, checked at start, all errors at once -----


def test_tail_bound_setting(coterie_table) -> None:
    table = coterie_table(["cofd"], settings={"cofd": {"tail_bound": 1e-6}})
    table.run(table.app.start())
    note = next(x for x in table.say("!odds 4").lines if x.startswith("exploding dice"))
    left_out = float(note.split("less likely than ")[1].split(",")[0])
    assert 1e-8 < left_out <= 1e-6, note  # a coarser cut than the default 1e-12
    default = coterie_table(["cofd"])
    default.run(default.app.start())
    assert default.app.plugin_settings["cofd"] == {"tail_bound": 1e-12}
    assert default.app.variants["cofd"].tail_bound == 1e-12


def test_bad_settings_are_all_reported_at_once(tmp_path, capsys) -> None:
    config = tmp_path / "c.toml"
    config.write_text(
        '[plugins]\nenable = ["cofd"]\n[defaults]\nvariant = "cofd"\n'
        "[plugins.settings.cofd]\ntail_bund = 1e-9\n"
    )
    assert main(["config", "check", str(config)]) == 3
    err = capsys.readouterr().err
    assert "plugins.settings.cofd.tail_bund: cofd has no such setting" in err
    assert "did you mean 'tail_bound'?" in err
    config.write_text(
        '[plugins]\nenable = ["cofd"]\n[defaults]\nvariant = "cofd"\n'
        '[plugins.settings.cofd]\ntail_bound = "small"\nextra = 1\n'
    )
    assert main(["config", "check", str(config)]) == 3
    err = capsys.readouterr().err
    assert "2 problem(s) in plugin settings" in err
    assert "tail_bound: is a number, not 'small'" in err and "cofd.extra:" in err
