"""The ``laia`` rule set: the document's worked examples (read from docs/rules/laia.md), tricky
cases, the machine interface, and properties over arbitrary faces."""

from __future__ import annotations

import itertools
import json
import random
import re
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coterie.dice import d10
from coterie.dice.sources import FixedDice
from coterie.errors import UsageError
from coterie.framework.app import Coterie
from coterie.framework.config import parse_config
from coterie.framework.grammar import Parsed, Pool, parse, parse_pool, tokens
from coterie.framework.variant import RoomSettings
from coterie.ops.cli import main
from coterie.render.elements import Die, Role, walk
from coterie.render.encode import to_plain
from coterie_laia import rules
from coterie_laia.variant import GRAMMAR, LaiaOutcome, LaiaVariant
from doc_tables import ints, table

VARIANT = LaiaVariant()
ROOM = RoomSettings(variant="laia")
#: both rule sets loaded through the plugin system, to compare them on the same faces
APP = Coterie(parse_config({"plugins": {"enable": ["revised", "laia"]}}, "test config"))
REVISED = APP.variants["revised"]


def request(text: str, settings: RoomSettings = ROOM) -> Any:
    return VARIANT.build(parse(tokens(text), GRAMMAR), settings)


def evaluate(text: str, faces: list[int], settings: RoomSettings = ROOM) -> LaiaOutcome:
    return VARIANT.roll(request(text, settings), FixedDice(faces))


def revised_outcome(difficulty: int, faces: list[int]) -> Any:
    built = REVISED.build(
        parse(tokens(f"{len(faces)} {difficulty}"), REVISED.grammar),
        RoomSettings(variant="revised"),
    )
    return REVISED.roll(built, FixedDice(faces))


def flag(cell: str) -> bool:
    assert cell in ("yes", "no"), cell
    return cell == "yes"


def label(cell: str) -> str | None:
    return None if cell == "-" else cell


def row_throw(row: dict[str, str]) -> tuple[list[int], int, bool]:
    """The faces, difficulty and specialty of a table row."""
    return ints(row["faces"]), int(row["difficulty"]), flag(row["specialty"])


def text_of(faces: list[int], difficulty: int, specialty: bool) -> str:
    return f"{len(faces)} {difficulty}" + (" spec" if specialty else "")


# --- the document's worked examples ------------------------------------------------------------


@pytest.mark.parametrize("row", table("laia", "Single throws"), ids=lambda r: r["example"])
def test_single_throw_examples(row: dict[str, str]) -> None:
    faces, difficulty, specialty = row_throw(row)
    roll = rules.throw(faces, difficulty, specialty=specialty)
    assert (roll.total, roll.outcome, roll.degree) == (
        int(row["sum"]),
        row["outcome"],
        label(row["degree"]),
    )
    outcome = evaluate(text_of(faces, difficulty, specialty), faces)
    assert outcome.successes == int(row["sum"])
    assert outcome.outcome == row["outcome"]
    assert outcome.degree == label(row["degree"])
    assert outcome.faces == tuple(faces)
    if row["revised"] != "-":
        assert revised_outcome(difficulty, faces).outcome == row["revised"]


def test_the_document_s_botch_differs_from_revised() -> None:
    """`9 1 1 8 1` at 8: a botch of -1 here, a plain failure under revised."""
    assert evaluate("5 8", [9, 1, 1, 8, 1]).as_json()["outcome"] == "botch"
    assert evaluate("5 8", [9, 1, 1, 8, 1]).successes == -1
    assert revised_outcome(8, [9, 1, 1, 8, 1]).outcome == "failure"


@pytest.mark.parametrize("row", table("laia", "Difficulty chart"), ids=lambda r: r["difficulty"])
def test_difficulty_chart(row: dict[str, str]) -> None:
    difficulty = int(row["difficulty"])
    assert rules.difficulty_label(difficulty) == row["label"]
    assert f"difficulty {difficulty} ({row['label']})" in to_plain(
        evaluate(f"1 {difficulty}", [5]).render()
    )


def test_the_chart_has_exactly_the_documented_rows() -> None:
    documented = {int(r["difficulty"]): r["label"] for r in table("laia", "Difficulty chart")}
    assert documented == rules.DIFFICULTY_LABELS
    assert rules.difficulty_label(2) == "easier than Trivial"
    assert rules.difficulty_label(10) == "beyond the chart"


@pytest.mark.parametrize("row", table("laia", "Degrees of success"), ids=lambda r: r["sum"])
def test_degrees(row: dict[str, str]) -> None:
    successes = int(row["sum"])
    assert rules.degree(successes) == row["degree"]
    outcome = evaluate(f"{successes} 6", [7] * successes)
    assert outcome.degree == row["degree"]
    assert f"{row['degree']} success" in to_plain(outcome.render())


@pytest.mark.parametrize("successes", [0, -1, -5])
def test_no_degree_below_one(successes: int) -> None:
    assert rules.degree(successes) is None


@pytest.mark.parametrize("row", table("laia", "Dice pools"), ids=lambda r: r["example"])
def test_dice_pool_examples(row: dict[str, str]) -> None:
    assert parse_pool(row["pool"]).total == int(row["dice"])
    assert VARIANT.dice_count(request(f"{row['pool']} 6")) == int(row["dice"])


@pytest.mark.parametrize("row", table("laia", "Extended actions"), ids=lambda r: r["example"])
def test_extended_examples(row: dict[str, str]) -> None:
    target, difficulty = int(row["target"]), int(row["difficulty"])
    pool = 7  # Wits 3 + Finance 4
    progress = 0
    seen = []
    for step in row["rolls"].split():
        if step == "botch":
            faces = [3, 4, 1, 6, 4, 1, 6]  # the document's botched third night
        else:
            faces = [difficulty] * int(step) + [2] * (pool - int(step))
        text = f"{pool} {difficulty} ext {target}" + (f" progress {progress}" if progress else "")
        outcome = evaluate(text, faces)
        assert (outcome.outcome == "botch") == (step == "botch")
        last = outcome.extended
        assert last is not None
        progress = last.progress
        seen.append(progress)
    assert seen == ints(row["progress"])
    assert last is not None and last.wiped and not last.done


@pytest.mark.parametrize("row", table("laia", "Resisted actions"), ids=lambda r: r["example"])
def test_resisted_examples(row: dict[str, str]) -> None:
    a_pool, a_diff, a_sum = (int(row[f"actor {k}"]) for k in ("pool", "difficulty", "sum"))
    b_pool, b_diff, b_sum = (int(row[f"opponent {k}"]) for k in ("pool", "difficulty", "sum"))
    actor_faces = [a_diff] * a_sum + [2] * (a_pool - a_sum)
    opponent_faces = [b_diff] * b_sum + [2] * (b_pool - b_sum)
    outcome = evaluate(f"{a_pool} {a_diff} vs {b_pool} {b_diff}", actor_faces + opponent_faces)
    assert outcome.successes == a_sum
    assert outcome.opponent is not None and outcome.opponent.total == b_sum
    assert outcome.resisted is not None
    assert outcome.resisted.winner == row["winner"]
    assert outcome.resisted.net == int(row["net"])
    assert rules.degree(outcome.resisted.net) == row["degree"]


@pytest.mark.parametrize("row", table("laia", "Trying again"), ids=lambda r: r["example"])
def test_trying_again_examples(row: dict[str, str]) -> None:
    new = rules.retry_difficulty(int(row["difficulty"]), int(row["failures"]))
    assert new == int(row["new difficulty"])
    built = request(f"5 {row['difficulty']} retry {row['failures']}")
    assert built.actor.difficulty == new and built.base_difficulty == int(row["difficulty"])


@pytest.mark.parametrize("row", table("laia", "Tricky cases"), ids=lambda r: r["why"])
def test_tricky_cases(row: dict[str, str]) -> None:
    faces, difficulty, specialty = row_throw(row)
    outcome = evaluate(text_of(faces, difficulty, specialty), faces)
    assert outcome.successes == int(row["sum"])
    assert outcome.outcome == row["outcome"]
    assert outcome.degree == label(row["degree"])


@pytest.mark.parametrize("row", table("laia", "Difficulty 10"), ids=lambda r: r["pool"])
def test_botch_chance_at_ten_table(row: dict[str, str]) -> None:
    pool = int(row["pool"])
    assert rules.botch_chance_at_ten(pool) == Fraction(row["botch chance"])
    # every possible throw, by what each die does at 10: a 1, a 10, or one of the 8 others
    botches = 0
    for faces in itertools.product((1, 10, 5), repeat=pool):
        weight = 8 ** faces.count(5)
        for specialty in (False, True):
            roll = rules.throw(faces, 10, specialty=specialty)
            assert roll.botch == (faces.count(1) > faces.count(10))
        botches += weight * rules.throw(faces, 10).botch
    assert Fraction(botches, 10**pool) == rules.botch_chance_at_ten(pool)


# --- tricky cases -------------------------------------------------------------------------------


def test_details_line_is_the_old_bot_s() -> None:
    assert rules.expression(5, 8) == "5d10c[>=8]-@c[=1]"
    assert rules.details(5, 8, [9, 1, 1, 8, 1]) == "Details:[5d10c[>=8]-@c[=1] (9 1 1 8 1)]"
    outcome = evaluate("3+4-2 7 retry 1", [10, 1, 2, 6, 8])
    assert outcome.details == "Details:[5d10c[>=8]-@c[=1] (10 1 2 6 8)]"


def test_cancellation_pairs_run_left_to_right() -> None:
    assert rules.cancellations([9, 1, 1, 8, 1], 8) == [(1, 0), (2, 3)]
    assert rules.cancellations([1, 10, 6], 6) == [(0, 1)]
    assert rules.cancellations([1, 1, 2], 6) == []
    roll = rules.throw([9, 1, 1, 8, 1], 8)
    assert roll.cancelled == (0, 3) and roll.leftover_ones == 1


def test_roles() -> None:
    assert rules.throw([9, 1, 1, 8, 1], 8).roles == (
        Role.CANCELLED,
        Role.CANCELLED,
        Role.CANCELLED,
        Role.CANCELLED,
        Role.BOTCH,
    )
    assert rules.throw([6, 10, 1, 3], 6, specialty=True).roles == (
        Role.CANCELLED,
        Role.CRITICAL,
        Role.CANCELLED,
        Role.FAILURE,
    )
    assert rules.throw([10, 7], 6).roles == (Role.SUCCESS, Role.SUCCESS)


def test_specialty_bonus_goes_with_standing_tens_only() -> None:
    roll = rules.throw([10, 1, 2, 6], 6, specialty=True)
    assert (roll.rolled, roll.bonus, roll.ones, roll.total) == (2, 0, 1, 1)
    roll = rules.throw([6, 10, 1], 6, specialty=True)
    assert (roll.rolled, roll.bonus, roll.ones, roll.total) == (2, 1, 1, 2)
    assert rules.throw([6, 10, 1], 6).total == 1


def test_count_line_explains_the_sum() -> None:
    text = to_plain(evaluate("5 8", [9, 1, 1, 8, 1]).render())
    assert "2 successes - 3 ones = -1 (cancelled from the left: 9, 8)" in text
    text = to_plain(evaluate("4 6 spec", [10, 1, 2, 6]).render())
    assert "2 successes - 1 one = 1" in text
    assert "cancelled from the left: 10; a cancelled 10 keeps no specialty bonus" in text
    text = to_plain(evaluate("3 6 spec", [6, 10, 1]).render())
    assert "2 successes + 1 for the specialty - 1 one = 2 (cancelled from the left: 6)" in text


def test_difficulty_cautions() -> None:
    text = to_plain(evaluate("5 10", [2, 3, 4, 5, 6]).render())
    chance = rules.botch_chance_at_ten(5)
    assert f"5 dice: {float(chance):.0%} chance of a botch" in text
    assert "Difficulty 10 is off the chart" in text
    for difficulty in (2, 3):
        text = to_plain(evaluate(f"2 {difficulty}", [5, 6]).render())
        assert "may not need a roll" in text and "off the chart" not in text
    for difficulty in range(4, 10):
        text = to_plain(evaluate(f"2 {difficulty}", [5, 6]).render())
        assert "may not need a roll" not in text and "off the chart" not in text


def test_botch_chance_at_ten_grows_with_every_die() -> None:
    chances = [rules.botch_chance_at_ten(n) for n in range(0, 201)]
    assert chances[0] == 0
    assert all(a < b for a, b in itertools.pairwise(chances))
    assert all(c < Fraction(1, 2) for c in chances)
    with pytest.raises(ValueError):
        rules.botch_chance_at_ten(-1)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("0 6", "can't be rolled"),
        ("3-3 6", "can't be rolled"),
        ("5 1", "between 2 and 10, not 1"),
        ("5 11", "between 2 and 10, not 11"),
        ("5 diff 12", "between 2 and 10, not 12"),
        ("5 6 spec spec", "`spec` is given twice"),
        ("5 6 spec specialty", "`spec` is given twice"),
        ("5 6 wp", "unknown option `wp`"),
        ("5 6 sepc", "Did you mean `spec`?"),
        ("5 6 auto", "unknown option `auto`"),
        ("5 6 7", "I don't know what `7` is for"),
        ("5 8 retry 3", "the difficulty would be 11, above 10: the task is now beyond"),
        ("5 10 retry 1", "after 1 failed attempt the difficulty would be 11"),
        ("5 6 retry 21", "between 0 and 20"),
        ("5 6 progress 2", "`progress` goes with `ext TARGET`"),
        ("5 6 ext 5 progress 5", "progress 5 already reaches the target 5"),
        ("5 6 ext 0", "between 1 and 1000"),
        ("5 6 vs 5 progress 1", "`progress` goes with `ext TARGET`"),
        ("5 6 ext 5 vs 5 progress 7", "the opposition's progress 7 already reaches the target 5"),
        ("5 6 vs", "`vs` needs the other side"),
        ("5 6 vs 0", "can't be rolled"),
        ("5 6 vs 4 retry 1", "unknown option `retry`"),
        ("spec", "the pool is missing"),
    ],
)
def test_errors(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=re.escape(message)):
        request(text)


def test_house_rule_trying_again_off() -> None:
    settings = RoomSettings(variant="laia", house_rules={"trying_again": False})
    with pytest.raises(UsageError, match="does not raise the difficulty for trying again"):
        request("5 6 retry 1", settings)
    assert request("5 6 retry 0", settings).actor.difficulty == 6


def test_room_default_difficulty() -> None:
    assert request("5").actor.difficulty == rules.DEFAULT_DIFFICULTY
    assert request("5", RoomSettings(variant="laia", default_difficulty=8)).actor.difficulty == 8
    # a default meant for another rule set, out of this one's range, is not used
    assert request("5", RoomSettings(variant="laia", default_difficulty=12)).actor.difficulty == 6


def test_a_pool_may_add_any_number_of_traits() -> None:
    assert VARIANT.dice_count(request("3+4+2-1 6")) == 8


def test_evaluate_refuses_faces_that_do_not_fit() -> None:
    built = request("3 6")
    with pytest.raises(UsageError, match="needs 3 dice, but 2"):
        VARIANT.evaluate(built, [5, 6])
    with pytest.raises(UsageError, match="cannot show 11"):
        VARIANT.evaluate(built, [5, 6, 11])
    with pytest.raises(UsageError, match="cannot show 0"):
        VARIANT.evaluate(built, [0, 6, 7])


def test_extended_in_one_message() -> None:
    outcome = evaluate("3 7 ext 18 progress 5", [7, 8, 2])
    assert outcome.extended == d10.Extended(18, progress=7, rolls=1)
    zero = evaluate("3 7 ext 18 progress 5", [7, 1, 2])
    assert zero.extended is not None and zero.extended.progress == 5
    specialty = evaluate("3 7 ext 18 progress 5 spec", [10, 10, 2])
    assert specialty.extended is not None and specialty.extended.progress == 9
    done = evaluate("3 6 ext 4 progress 2", [9, 9, 2])
    assert done.extended is not None and done.extended.done
    assert "— done!" in to_plain(done.render())


def test_a_botch_wipes_extended_progress_unless_the_room_keeps_it() -> None:
    wiped = evaluate("3 6 ext 10 progress 4", [9, 1, 1])
    assert wiped.extended is not None
    assert (wiped.extended.progress, wiped.extended.wiped) == (0, True)
    assert "the botch wipes out 4 successes" in to_plain(wiped.render())
    kept_room = RoomSettings(variant="laia", house_rules={"botch_wipes_extended": False})
    kept = evaluate("3 6 ext 10 progress 4", [9, 1, 1], kept_room)
    assert kept.extended is not None and kept.extended.progress == 4
    assert "the botch adds nothing — 4/10" in to_plain(kept.render())
    fresh = evaluate("3 6 ext 10", [2, 1, 1])
    assert fresh.extended is not None and not fresh.extended.wiped
    assert "the botch adds nothing — 0/10" in to_plain(fresh.render())


def test_resisted_in_one_message() -> None:
    tie = evaluate("2 6 vs 2 6", [7, 2, 7, 2])
    assert tie.resisted is not None and tie.resisted.winner is None
    assert "a standoff" in to_plain(tie.render())
    # a botching opponent brings no successes; its botch is shown
    opponent_botch = evaluate("2 6 vs 3 6", [7, 2, 1, 1, 2])
    assert opponent_botch.opponent is not None and opponent_botch.opponent.total == -2
    assert opponent_botch.resisted == d10.Resisted(1, 0)
    text = to_plain(opponent_botch.render())
    assert "Opposed: # -2 — Botch!" in text and "you win with 1 success (Marginal)" in text
    actor_botch = evaluate("2 6 vs 2 6", [1, 2, 7, 7])
    assert actor_botch.outcome == "botch"
    assert actor_botch.resisted == d10.Resisted(0, 2)
    assert "the opposition wins by 2 successes" in to_plain(actor_botch.render())
    specialty = evaluate("1 6 vs 1 6 spec", [9, 10])
    assert specialty.resisted == d10.Resisted(1, 2)


def test_extended_and_resisted() -> None:
    outcome = evaluate("3 6 ext 5 progress 4 vs 3 6 progress 1", [7, 7, 2, 2, 2, 2])
    assert outcome.contest is not None and outcome.contest.winner == "actor"
    assert "you reach the goal first" in to_plain(outcome.render())
    lost = evaluate("3 6 ext 5 progress 2 vs 3 6 progress 4", [1, 2, 2, 7, 7, 2])
    assert lost.contest is not None
    assert (lost.contest.actor, lost.contest.opponent, lost.contest.winner) == (0, 6, "opponent")
    assert lost.extended is None  # the contest replaces the plain extended tally


def test_teamwork() -> None:
    throws = [
        rules.throw([7, 8], 6),
        rules.throw([6, 1, 9], 6),
        rules.throw([1, 2], 6),
        rules.throw([10, 3], 6, specialty=True),
    ]
    team = rules.teamwork(throws)
    assert team.successes == (2, 1, 0, 2) and team.total == 5
    assert team.botched and team.botches == (False, False, True, False)
    outcomes = [evaluate("2 6", [7, 8]), evaluate("2 6", [1, 2])]
    text = to_plain(VARIANT.team(outcomes))
    assert text == (
        "Teamwork: 2 successes (2 + 0) — Moderate success; "
        "but member 2 botched, which can ruin it for everyone"
    )
    assert to_plain(VARIANT.team([evaluate("1 6", [2]), evaluate("1 6", [3])])) == (
        "Teamwork: 0 successes (0 + 0) — Failure"
    )


def test_check_team() -> None:
    VARIANT.check_team([request("5 6 spec"), request("3 7 retry 1")])
    for text in ("5 6 vs 3", "5 6 ext 9"):
        with pytest.raises(UsageError, match="teamwork members throw their own plain pools"):
            VARIANT.check_team([request(text), request("3 6")])


def test_compose_puts_the_old_bot_s_lines_first() -> None:
    first = evaluate("5 8", [9, 1, 1, 8, 1])
    second = evaluate("2 6 spec", [10, 7])
    lines = to_plain(VARIANT.compose([first, second], "Lynn", "the elevator")).splitlines()
    assert lines == [
        "# -1",
        "Details:[5d10c[>=8]-@c[=1] (9 1 1 8 1)]",
        "Botch!",
        "Lynn — the elevator",
        "5 dice, difficulty 8 (Difficult): 9 1 1 8 1",
        "2 successes - 3 ones = -1 (cancelled from the left: 9, 8)",
        "# 3",
        "Details:[2d10c[>=6]-@c[=1] (10 7)]",
        "Complete success",
        "2 dice, difficulty 6 (Standard), specialty: 10 7",
        "2 successes + 1 for the specialty = 3",
    ]
    without_comment = to_plain(VARIANT.compose([second], "Lynn", None)).splitlines()
    assert without_comment[3] == "Lynn"


def test_render_marks_each_die() -> None:
    outcome = evaluate("4 6 spec", [6, 10, 1, 3])
    dice = [node for node in walk(outcome.render()) if isinstance(node, Die)]
    assert [(d.face, d.role) for d in dice] == list(
        zip([6, 10, 1, 3], outcome.actor.roles, strict=True)
    )


# --- the machine interface ----------------------------------------------------------------------


def test_json_contract() -> None:
    data = evaluate("5 8", [9, 1, 1, 8, 1]).as_json()
    assert data == {
        "variant": "laia",
        "faces": [9, 1, 1, 8, 1],
        "successes": -1,
        "outcome": "botch",
        "degree": None,
        "pool": 5,
        "difficulty": 8,
        "difficulty_label": "Difficult",
        "specialty": False,
        "rolled_successes": 2,
        "ones": 3,
        "cancelled": 2,
        "specialty_bonus": 0,
        "retry": 0,
        "details": "Details:[5d10c[>=8]-@c[=1] (9 1 1 8 1)]",
    }
    json.dumps(data)


def test_json_of_resisted_and_extended() -> None:
    data = evaluate("2 6 vs 3 7 spec", [7, 2, 10, 1, 7]).as_json()
    assert data["versus"] == {
        "faces": [10, 1, 7],
        "pool": 3,
        "difficulty": 7,
        "specialty": True,
        "successes": 1,
        "outcome": "success",
        "details": "Details:[3d10c[>=7]-@c[=1] (10 1 7)]",
        "winner": None,
        "net": 0,
    }
    data = evaluate("2 6 ext 3 progress 1", [7, 7]).as_json()
    assert data["extended"] == {"progress": 3, "target": 3, "done": True, "wiped": False}
    data = evaluate("2 6 ext 3 vs 2 6", [7, 7, 2, 2]).as_json()
    assert data["contest"] == {"actor": 2, "opponent": 0, "target": 3, "winner": None}
    assert "extended" not in data


def test_cli_parsed_values_build_the_same_request() -> None:
    parsed = Parsed(values={"pool": Pool.of(5), "difficulty": 8, "specialty": True})
    assert VARIANT.build(parsed, ROOM) == request("5 8 spec")


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["roll", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_json(capsys: pytest.CaptureFixture[str]) -> None:
    common = ["--pool", "5", "--difficulty", "8", "--faces", "9,1,1,8,1", "--json"]
    code, out, err = run_cli(capsys, "--variant", "laia", *common)
    assert code == 0 and err == ""
    data = json.loads(out)
    assert (data["successes"], data["outcome"], data["degree"]) == (-1, "botch", None)
    code, out, _ = run_cli(capsys, "--variant", "revised", *common)
    assert json.loads(out)["outcome"] == "failure"
    code, out, _ = run_cli(
        capsys, "--variant", "laia", "--pool", "4", "--specialty", "--faces", "10,1,2,6", "--json"
    )
    data = json.loads(out)
    assert (data["successes"], data["difficulty"], data["specialty"]) == (1, 6, True)
    assert data["degree"] == "Marginal"


def test_cli_text(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(
        capsys, "--variant", "laia", "--pool", "3", "--difficulty", "7", "--faces", "10,7,8"
    )
    assert code == 0
    assert out.splitlines()[:3] == [
        "# 3",
        "Details:[3d10c[>=7]-@c[=1] (10 7 8)]",
        "Complete success",
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--pool", "3", "--willpower"], "the laia rules have no willpower option"),
        (["--pool", "3", "--hunger", "1"], "the laia rules have no hunger option"),
        (["--pool", "3", "--difficulty", "11"], "--difficulty must be between 2 and 10, not 11"),
        (["--pool", "0"], "can't be rolled"),
        (
            ["--pool", "3", "--faces", "1,2"],
            "--faces: the faces ran out: this roll needs at least 3 dice",
        ),
    ],
)
def test_cli_errors(capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    code, out, err = run_cli(capsys, "--variant", "laia", *args, "--json")
    assert code == 2 and out == ""
    assert message in err


# --- properties -----------------------------------------------------------------------------------

faces_strategy = st.lists(st.integers(min_value=1, max_value=10), min_size=1, max_size=40)
difficulty_strategy = st.integers(min_value=2, max_value=10)


def model_sum(faces: list[int], difficulty: int, specialty: bool) -> int:
    """An independent model of the document: set each 1 aside with the leftmost success still on
    the table, then add up what is left (a specialty 10 as two) and subtract the lonely 1s."""
    table_: list[int | None] = list(faces)
    lonely = 0
    for _ in range(faces.count(1)):
        for position, face in enumerate(table_):
            if face is not None and face >= difficulty:
                table_[position] = None
                break
        else:
            lonely += 1
    standing = [f for f in table_ if f is not None and f >= difficulty]
    value = sum(2 if (specialty and f == 10) else 1 for f in standing)
    return value - lonely


@given(faces_strategy, difficulty_strategy, st.booleans())
def test_sum_matches_an_independent_model(
    faces: list[int], difficulty: int, specialty: bool
) -> None:
    roll = rules.throw(faces, difficulty, specialty=specialty)
    assert roll.total == model_sum(faces, difficulty, specialty)
    outcome = evaluate(text_of(faces, difficulty, specialty), faces)
    assert outcome.successes == roll.total


@given(faces_strategy, difficulty_strategy)
def test_without_specialty_the_sum_is_successes_minus_ones(
    faces: list[int], difficulty: int
) -> None:
    roll = rules.throw(faces, difficulty)
    successes = len([f for f in faces if f >= difficulty])
    assert roll.total == successes - faces.count(1)


@given(faces_strategy, difficulty_strategy, st.booleans(), st.randoms(use_true_random=False))
def test_a_botch_is_more_ones_than_successes_in_any_order(
    faces: list[int], difficulty: int, specialty: bool, rnd: random.Random
) -> None:
    roll = rules.throw(faces, difficulty, specialty=specialty)
    assert roll.botch == (faces.count(1) > roll.rolled)
    assert roll.botch == (roll.leftover_ones > 0)
    shuffled = list(faces)
    rnd.shuffle(shuffled)
    again = rules.throw(shuffled, difficulty, specialty=specialty)
    assert again.botch == roll.botch
    if not specialty:
        assert again.total == roll.total


@given(faces_strategy, difficulty_strategy)
def test_specialty_adds_one_per_standing_ten(faces: list[int], difficulty: int) -> None:
    plain = rules.throw(faces, difficulty)
    special = rules.throw(faces, difficulty, specialty=True)
    standing_tens = [i for i, f in enumerate(faces) if f == 10 and i not in plain.cancelled]
    assert special.total - plain.total == special.bonus == len(standing_tens) >= 0
    assert special.outcome == plain.outcome or (plain.outcome == "failure" and special.bonus)


@given(faces_strategy, difficulty_strategy, st.booleans())
def test_outcome_follows_the_sign(faces: list[int], difficulty: int, specialty: bool) -> None:
    outcome = evaluate(text_of(faces, difficulty, specialty), faces)
    total = outcome.successes
    expected = "success" if total > 0 else "botch" if total < 0 else "failure"
    assert outcome.outcome == expected
    assert (outcome.degree is None) == (total <= 0)
    assert -len(faces) <= total <= len(faces) + (faces.count(10) if specialty else 0)


@given(faces_strategy, difficulty_strategy, st.booleans())
def test_roles_account_for_every_die(faces: list[int], difficulty: int, specialty: bool) -> None:
    roll = rules.throw(faces, difficulty, specialty=specialty)
    roles = roll.roles
    assert len(roles) == len(faces)
    assert roles.count(Role.CANCELLED) == 2 * min(roll.ones, roll.rolled)
    assert roles.count(Role.BOTCH) == roll.leftover_ones
    assert roles.count(Role.CRITICAL) == roll.bonus
    assert Role.ONE not in roles


@given(faces_strategy, difficulty_strategy)
def test_agrees_with_revised_except_where_the_house_rule_differs(
    faces: list[int], difficulty: int
) -> None:
    laia = rules.throw(faces, difficulty)
    revised = revised_outcome(difficulty, faces)
    if laia.outcome == "success":
        assert (revised.outcome, revised.successes) == ("success", laia.total)
    if revised.outcome == "botch":
        assert laia.outcome == "botch"
    if laia.outcome == "botch" and revised.outcome != "botch":
        assert revised.outcome == "failure" and laia.rolled > 0  # 9 1 1 8 1 and its kind


@given(faces_strategy, difficulty_strategy, st.booleans())
def test_reply_starts_with_sum_and_details_in_roll_order(
    faces: list[int], difficulty: int, specialty: bool
) -> None:
    outcome = evaluate(text_of(faces, difficulty, specialty), faces)
    first, second, *_ = to_plain(VARIANT.compose([outcome], "Lynn", None)).splitlines()
    assert first == f"# {outcome.successes}"
    match = re.fullmatch(r"Details:\[(\d+)d10c\[>=(\d+)\]-@c\[=1\] \(([\d ]+)\)\]", second)
    assert match is not None, second
    assert int(match[1]) == len(faces) and int(match[2]) == difficulty
    assert ints(match[3]) == faces
