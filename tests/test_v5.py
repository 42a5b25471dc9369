"""The ``v5`` rule set: the notes' worked examples and the tricky cases (read from
docs/rules/v5.md), errors, the JSON contract, and properties over arbitrary faces."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coterie.dice.sources import FixedDice
from coterie.errors import UsageError
from coterie.framework.grammar import Parsed, Pool, parse, tokens
from coterie.framework.variant import RollContext, RoomSettings
from coterie.ops.cli import main
from coterie.render.elements import Die, Role, walk
from coterie.storage.state import MemoryStore, RoomState
from coterie_v5 import rules
from coterie_v5.commands import ROUSE
from coterie_v5.requests import RerollRequest, Side, V5Request
from coterie_v5.variant import GRAMMAR, LAST_ROLL, RouseOutcome, V5Outcome, V5Variant
from doc_tables import ints, table

VARIANT = V5Variant()
ROOM = RoomSettings(variant="v5")
STRATEGY = {strategy.value: strategy for strategy in rules.Strategy}


def request(text: str, settings: RoomSettings = ROOM) -> V5Request:
    return VARIANT.build(parse(tokens(text), GRAMMAR), settings)


def evaluate(text: str, faces: list[int], settings: RoomSettings = ROOM) -> V5Outcome:
    outcome = VARIANT.roll(request(text, settings), FixedDice(faces))
    assert isinstance(outcome, V5Outcome)
    return outcome


def cell_faces(cell: str) -> list[int]:
    return [] if cell.strip() == "-" else ints(cell)


def roll_text(regular: list[int], hunger: list[int], difficulty: int) -> str:
    """The chat words for a roll of exactly these regular and Hunger dice."""
    return f"{len(regular) + len(hunger)} {len(hunger)} {difficulty}"


def stored(outcome: V5Outcome | RouseOutcome, user: str = "ana") -> Any:
    """What settle() keeps for ``user`` after ``outcome`` (the record !reroll reads)."""
    store = MemoryStore()
    state = RoomState(store, "variant.v5", "test:r")
    context = RollContext(settings=ROOM, user=user, room="test:r", state=state)
    assert asyncio.run(VARIANT.settle(outcome, context)) is outcome
    return asyncio.run(state.get(LAST_ROLL.format(user=user)))


# --- the notes' worked examples ----------------------------------------------------------------


@pytest.mark.parametrize("row", table("v5", "Criticals"), ids=lambda r: r["example"])
def test_critical_examples(row: dict[str, str]) -> None:
    faces = ints(row["faces"])
    assert rules.count_successes(faces) == int(row["successes"])
    outcome = evaluate(f"{len(faces)} diff 1", faces)
    assert outcome.successes == int(row["successes"])
    assert outcome.outcome == "critical"
    assert outcome.as_json()["criticals"] == faces.count(10) // 2


@pytest.mark.parametrize("row", table("v5", "Margin"), ids=lambda r: r["example"])
def test_margin_examples(row: dict[str, str]) -> None:
    successes, difficulty = int(row["successes"]), int(row["difficulty"])
    faces = [7] * successes + [2]
    outcome = evaluate(f"{len(faces)} diff {difficulty}", faces)
    assert outcome.successes == successes
    assert outcome.verdict.margin == int(row["margin"])
    assert outcome.as_json()["margin"] == int(row["margin"])
    assert outcome.outcome == "success"


@pytest.mark.parametrize("row", table("v5", "Pool sizes"), ids=lambda r: r["example"])
def test_dice_pool_examples(row: dict[str, str]) -> None:
    built = request(row["chat"])
    assert VARIANT.dice_count(built) == int(row["dice"])
    assert built.actor.regular_dice == int(row["regular"])
    assert built.actor.hunger_dice == int(row["hunger"])
    assert rules.hunger_split(built.actor.pool, built.actor.hunger) == (
        int(row["regular"]),
        int(row["hunger"]),
    )


@pytest.mark.parametrize(
    "row", table("v5", "Difficulty from opposition"), ids=lambda r: r["example"]
)
def test_opposition_examples(row: dict[str, str]) -> None:
    built = request(f"5 {row['chat']}")
    assert built.difficulty is not None
    assert built.difficulty.value == int(row["difficulty"])


@pytest.mark.parametrize("row", table("v5", "Automatic wins"), ids=lambda r: r["example"])
def test_automatic_win_examples(row: dict[str, str]) -> None:
    pool, difficulty = int(row["pool"]), int(row["difficulty"])
    allowed = row["allowed"] == "yes"
    assert rules.automatic_win_allowed(pool, difficulty) is allowed
    if not allowed:
        with pytest.raises(UsageError, match="at least twice the Difficulty"):
            request(f"{pool} diff {difficulty} auto")
        return
    outcome = evaluate(f"{pool} diff {difficulty} auto", [])
    data = outcome.as_json()
    counted = max(1, difficulty)  # Difficulty 0 decides like 1: one success, margin 1
    expected = ("success", counted - difficulty, counted)
    assert (data["outcome"], data["margin"], data["successes"]) == expected
    assert data["automatic"] is True and data["faces"] == [] and data["hunger_faces"] == []


@pytest.mark.parametrize("row", table("v5", "Results"), ids=lambda r: r["case"])
def test_result_cases(row: dict[str, str]) -> None:
    regular, hunger = cell_faces(row["faces"]), cell_faces(row["hunger faces"])
    difficulty = int(row["difficulty"])
    verdict = rules.judge(rules.Dice(tuple(regular), tuple(hunger)), difficulty)
    assert verdict.result == row["outcome"]
    assert verdict.successes == int(row["successes"])
    outcome = evaluate(roll_text(regular, hunger, difficulty), regular + hunger)
    data = outcome.as_json()
    assert data["outcome"] == row["outcome"]
    assert data["successes"] == int(row["successes"])
    assert data["faces"] == regular and data["hunger_faces"] == hunger
    assert data["margin"] == int(row["successes"]) - difficulty
    assert data["win_at_cost"] == (not data["win"] and data["successes"] > 0)


@pytest.mark.parametrize("row", table("v5", "Contests"), ids=lambda r: r["case"])
def test_contest_cases(row: dict[str, str]) -> None:
    actor, hunger = cell_faces(row["actor faces"]), cell_faces(row["actor hunger faces"])
    opponent = cell_faces(row["opponent faces"])
    verdict = rules.contest(
        rules.Dice(tuple(actor), tuple(hunger)), rules.Dice(tuple(opponent), ())
    )
    assert verdict.result == row["outcome"] and verdict.margin == int(row["margin"])
    text = f"{len(actor) + len(hunger)} {len(hunger)} vs {len(opponent)}"
    outcome = evaluate(text, actor + hunger + opponent)
    data = outcome.as_json()
    assert data["outcome"] == row["outcome"]
    assert data["margin"] == int(row["margin"])
    assert data["versus"]["faces"] == opponent
    assert data["difficulty"] == data["versus"]["successes"]


def _reroll_row(row: dict[str, str]) -> tuple[rules.Dice, int, rules.Strategy, V5Outcome]:
    regular, hunger = cell_faces(row["faces"]), cell_faces(row["hunger faces"])
    difficulty = int(row["difficulty"])
    outcome = evaluate(roll_text(regular, hunger, difficulty), regular + hunger)
    return rules.Dice(tuple(regular), tuple(hunger)), difficulty, STRATEGY[row["strategy"]], outcome


@pytest.mark.parametrize("row", table("v5", "Willpower re-rolls"), ids=lambda r: r["case"])
def test_reroll_choices(row: dict[str, str]) -> None:
    dice, difficulty, strategy, outcome = _reroll_row(row)
    assert rules.reroll_problem(dice, difficulty, strategy) is None
    indexes = rules.reroll_indexes(dice.regular, strategy)
    chosen = sorted(dice.regular[i] for i in indexes)
    assert chosen == sorted(ints(row["re-rolled faces"]))
    # the same through the variant, from what settle() stored
    reroll = VARIANT.reroll_request(stored(outcome), strategy)
    assert reroll.indexes == indexes and reroll.strategy is strategy
    assert VARIANT.dice_count(reroll) == len(indexes)


@pytest.mark.parametrize("row", table("v5", "Re-rolls refused"), ids=lambda r: r["case"])
def test_reroll_refusals(row: dict[str, str]) -> None:
    dice, difficulty, strategy, outcome = _reroll_row(row)
    problem = rules.reroll_problem(dice, difficulty, strategy)
    assert problem is not None and row["reason"] in problem
    with pytest.raises(UsageError, match=re.escape(row["reason"])):
        VARIANT.reroll_request(stored(outcome), strategy)


@pytest.mark.parametrize("row", table("v5", "Rouse checks"), ids=lambda r: r["case"])
def test_rouse_examples(row: dict[str, str]) -> None:
    faces = ints(row["faces"])
    hunger = None if row["hunger"] == "-" else int(row["hunger"])
    after = None if row["hunger after"] == "-" else int(row["hunger after"])
    assert rules.rouse(faces, hunger).hunger_after == after
    words = f"{len(faces)}" + ("" if hunger is None else f" h{hunger}")
    built = VARIANT.build_rouse(parse(tokens(words), ROUSE))
    outcome = VARIANT.roll(built, FixedDice(faces))
    assert isinstance(outcome, RouseOutcome)
    data = outcome.as_json()
    assert data["hunger_after"] == after and data["hunger_before"] == hunger
    assert data["successes"] == sum(1 for face in faces if face >= 6)
    assert data["failed"] == len(faces) - data["successes"]


# --- tricky cases -------------------------------------------------------------------------------


def test_faces_split_regular_then_hunger() -> None:
    outcome = evaluate("5 2 1", [3, 4, 10, 1, 10])
    assert outcome.faces == (3, 4, 10) and outcome.hunger_faces == (1, 10)
    assert outcome.all_faces == (3, 4, 10, 1, 10)


def test_dice_roles_and_tags() -> None:
    outcome = evaluate("5 2 1", [10, 4, 7, 10, 1])
    dice = [node for node in walk(outcome.render()) if isinstance(node, Die)]
    assert [d.role for d in dice] == [
        Role.CRITICAL,
        Role.FAILURE,
        Role.SUCCESS,
        Role.CRITICAL,
        Role.FAILURE,
    ]
    assert [("hunger" in d.tags) for d in dice] == [False, False, False, True, True]
    bestial = evaluate("3 1 3", [7, 2, 1])
    roles = [node.role for node in walk(bestial.render()) if isinstance(node, Die)]
    assert roles == [Role.SUCCESS, Role.FAILURE, Role.BOTCH]
    lone = evaluate("2 0 1", [10, 3])
    assert next(n.role for n in walk(lone.render()) if isinstance(n, Die)) is Role.SUCCESS


def test_default_difficulty_is_one_and_zero_is_accepted() -> None:
    built = request("4")
    assert built.difficulty is not None and built.difficulty.value == rules.DEFAULT_DIFFICULTY == 1
    assert built.difficulty.source == "default"
    zero = evaluate("2 0 0", [7, 8])
    assert (zero.outcome, zero.verdict.margin) == ("success", 2)
    one = evaluate("2 0 1", [7, 8])
    assert (one.outcome, one.verdict.margin) == ("success", 1)
    room = RoomSettings(variant="v5", default_difficulty=3)
    built = request("4", room)
    assert built.difficulty is not None and built.difficulty.value == 3


def test_positions_and_keywords_mix() -> None:
    assert request("6 2 3") == request("6 h2 diff 3") == request("diff 3 6 h2")
    assert request("6 h2 3") == request("6 2 3")
    assert request("6 hunger=2 diff3") == request("6 2 3")
    assert request("6 spec") == request("6 specialty")
    assert request("5 team 2") == request("5 helpers=2") == request("5 team2")


def test_every_pool_keeps_at_least_one_die() -> None:
    assert VARIANT.dice_count(request("2-5")) == 1
    assert VARIANT.dice_count(request("2 penalty 4")) == 1
    assert VARIANT.dice_count(request("0")) == 1
    assert VARIANT.dice_count(request("humanity 0")) == 1
    assert request("health 2").actor.tracker == "health"
    assert request("2+3").actor.tracker is None


def test_hunger_dice_are_capped_by_the_pool_after_modifiers() -> None:
    built = request("2 h4 spec team 1")
    assert (built.actor.pool, built.actor.regular_dice, built.actor.hunger_dice) == (4, 0, 4)
    built = request("2 h4 spec team 3")
    assert (built.actor.regular_dice, built.actor.hunger_dice) == (2, 4)


def test_equipment_and_difficulty_modifiers_stack() -> None:
    built = request("5 half 9 equip improvised harder 2 easier 1")
    assert built.difficulty is not None
    assert (built.difficulty.base, built.difficulty.value) == (4, 6)
    assert request("5 diff 2 equip good").difficulty == request("5 diff 2 equip=good").difficulty
    lowest = request("5 half 1").difficulty
    assert lowest is not None and lowest.value == 1


def test_contest_faces_and_opposition_hunger() -> None:
    outcome = evaluate("3 1 vs 3 h1", [7, 7, 10, 8, 2, 10])
    assert outcome.hunger_faces == (10,)
    assert outcome.opponent == rules.Dice((8, 2), (10,))
    assert outcome.as_json()["versus"] == {
        "faces": [8, 2],
        "hunger_faces": [10],
        "successes": 2,
        "pool": 3,
        "hunger": 1,
    }
    assert outcome.outcome == "success" and outcome.verdict.margin == 1


def test_teamwork_in_one_message() -> None:
    built = request("5 h1 diff 3 team 2")
    assert (built.actor.pool, built.actor.helpers, built.actor.hunger_dice) == (7, 2, 1)
    assert rules.teamwork_pool(5, 2) == 7


def test_core_team_is_pointed_to_team_n() -> None:
    with pytest.raises(UsageError, match=re.escape("team N")):
        VARIANT.check_team([request("5"), request("3")])


def test_automatic_win_house_rule() -> None:
    settings = RoomSettings(variant="v5", house_rules={"automatic_wins": False})
    with pytest.raises(UsageError, match="does not allow automatic wins"):
        request("8 diff 2 auto", settings)
    assert request("8 diff 2 auto").automatic


def test_reroll_replaces_only_the_chosen_regular_dice() -> None:
    outcome = evaluate("5 2 3", [2, 9, 1, 1, 10])
    reroll = VARIANT.reroll_request(stored(outcome), rules.Strategy.FAILURES)
    assert reroll.indexes == (0, 2)
    again = VARIANT.roll(reroll, FixedDice([10, 10]))
    assert isinstance(again, V5Outcome)
    assert again.faces == (10, 9, 10) and again.hunger_faces == (1, 10)
    assert again.outcome == "messy_critical" and again.successes == 6  # 4 + one pair
    assert (again.rerolled, again.previous) == ((0, 2), (2, 1))
    data = again.as_json()
    assert data["rerolled"] == [0, 2] and data["rerolled_from"] == [2, 1]
    record = stored(again)
    assert record["rerolled"] is True and record["faces"] == [10, 9, 10, 1, 10]
    with pytest.raises(UsageError, match="already re-rolled"):
        VARIANT.reroll_request(record, rules.Strategy.FAILURES)


def test_reroll_in_a_contest_keeps_the_opposition() -> None:
    outcome = evaluate("2 vs 2", [3, 7, 8, 9])
    assert outcome.outcome == "failure"
    reroll = VARIANT.reroll_request(stored(outcome), rules.Strategy.FAILURES)
    again = VARIANT.roll(reroll, FixedDice([6]))
    assert isinstance(again, V5Outcome)
    assert again.opponent == rules.Dice((8, 9), ())
    assert again.outcome == "success" and again.verdict.margin == 0


@pytest.mark.parametrize(
    ("record", "message"),
    [
        (None, "no roll in this room"),
        ({"kind": "check", "check": "rouse"}, "cannot re-roll a check"),
        ({"kind": "something"}, "cannot read your last roll"),
        ("nonsense", "cannot read your last roll"),
        ({"kind": "roll", "request": {"actor": {}}, "faces": []}, "cannot read your last roll"),
    ],
)
def test_reroll_refusals_from_the_record(record: Any, message: str) -> None:
    with pytest.raises(UsageError, match=re.escape(message)):
        VARIANT.reroll_request(record, rules.Strategy.FAILURES)


def test_reroll_refused_for_trackers_and_automatic_wins() -> None:
    tracker = evaluate("willpower 3", [1, 2, 3])
    with pytest.raises(UsageError, match="tracker roll, and your last roll was on Willpower"):
        VARIANT.reroll_request(stored(tracker), rules.Strategy.FAILURES)
    automatic = evaluate("8 diff 3 auto", [])
    with pytest.raises(UsageError, match="automatic win"):
        VARIANT.reroll_request(stored(automatic), rules.Strategy.FAILURES)
    record = stored(evaluate("3", [1, 2, 3]))
    record["faces"] = [1, 2]
    with pytest.raises(UsageError, match="cannot read your last roll"):
        VARIANT.reroll_request(record, rules.Strategy.FAILURES)


def test_reroll_requests_must_match_the_earlier_roll() -> None:
    built = request("3 1")
    with pytest.raises(UsageError, match="the earlier roll had 3 dice, not 2"):
        VARIANT.evaluate(RerollRequest(built, (1, 2), (0,), rules.Strategy.FAILURES), [5])
    with pytest.raises(UsageError, match="only the earlier roll's regular dice"):
        VARIANT.evaluate(RerollRequest(built, (1, 2, 3), (2,), rules.Strategy.FAILURES), [5])


def test_a_pool_is_needed() -> None:
    with pytest.raises(UsageError, match="the dice pool is missing"):
        VARIANT.build(Parsed(values={"difficulty": 2}), ROOM)


def test_rouse_is_stored_as_a_check() -> None:
    built = VARIANT.build_rouse(parse(tokens(""), ROUSE))
    assert built.checks == 1 and built.hunger is None
    outcome = VARIANT.roll(built, FixedDice([4]))
    record = stored(outcome)
    # with when and in which session it was made, so that a re-roll can lapse (issue 16)
    assert {k: record.pop(k) for k in ("session", "time")}["session"] is None
    assert record == {"kind": "check", "check": "rouse"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("5 diff 3 half 6", "one way only"),
        ("5 half 6 skill 2", "not `half` and `skill`"),
        ("5 equip none", "the task is impossible"),
        ("5 equip shiny", "`equip` takes good, poor, improvised, unreliable or none"),
        ("5 equip poo", "Did you mean `poor`?"),
        ("5 diff 0 easier 1", "cannot go below 0"),
        ("5 diff 30 harder 1", "at most 30"),
        ("5 diff 3 auto", "(5 dice < 2 × 3)"),
        ("5 diff 2 vs 4", "a contest has no Difficulty, so a Difficulty has no place"),
        ("5 half 4 vs 4", "so `half` has no place"),
        ("5 equip poor vs 4", "so `equip` has no place"),
        ("5 vs 4 diff 2", "the opposition has no Difficulty"),
        ("5 auto vs 4", "a contest is always rolled"),
        ("5 h6", "`hunger` must be between 0 and 5, not 6"),
        ("5 2 31", "difficulty must be between 0 and 30, not 31"),
        ("5 team 0", "`team` must be between 1 and 20"),
        ("5 2 3 4", "I don't know what `4` is for"),
        ("5 h2 hunger 3", "`hunger` is given twice"),
        ("5 wp", "unknown option `wp`"),
        ("5 spce", "Did you mean `spec`?"),
        ("willpower", "`willpower` needs its rating"),
        ("5 vs", "`vs` needs the other side"),
    ],
)
def test_errors(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=re.escape(message)):
        request(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("0", "checks must be between 1 and 20, not 0"),
        ("21", "checks must be between 1 and 20"),
        ("auto", "a check is always rolled"),
        ("half 6", "a check is always rolled"),
        ("h6", "`hunger` must be between 0 and 5"),
        ("2 spec", "unknown option `spec`"),
    ],
)
def test_rouse_errors(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=re.escape(message)):
        VARIANT.build_rouse(parse(tokens(text), ROUSE))


def test_evaluate_refuses_the_wrong_number_of_faces() -> None:
    with pytest.raises(UsageError, match="needs 3 dice, but 2 were given"):
        VARIANT.evaluate(request("3"), [1, 2])


def test_negative_trait_from_the_command_line_is_refused() -> None:
    with pytest.raises(UsageError, match="no negative dots"):
        VARIANT.build(Parsed(values={"pool": Pool.of(-2)}), ROOM)


def test_cli_parsed_values_build_the_same_request() -> None:
    parsed = Parsed(values={"pool": Pool.of(5), "difficulty": 0, "hunger": 2, "specialty": True})
    assert VARIANT.build(parsed, ROOM) == request("5 2 0 spec")


def test_request_json_round_trip() -> None:
    for text in ("3+4-1 h2 half 7 equip poor team 1 spec", "5 1 vs willpower 3 h1", "8 2 auto"):
        built = request(text)
        data = json.loads(json.dumps(built.to_json()))
        assert V5Request.from_json(data) == built
    with pytest.raises(ValueError, match="neither a Difficulty nor an opponent"):
        V5Request.from_json(
            {
                "actor": built.to_json()["actor"],
                "difficulty": None,
                "versus": None,
                "automatic": False,
            }
        )


# --- the machine interface ----------------------------------------------------------------------


def roll_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    code = main(["roll", "--variant", "v5", *args, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


def test_cli_json_messy_critical(capsys: pytest.CaptureFixture[str]) -> None:
    data = roll_json(
        capsys, "--pool", "6", "--hunger", "2", "--difficulty", "3", "--faces", "7,10,2,4,10,1"
    )
    assert data == {
        "variant": "v5",
        "faces": [7, 10, 2, 4],
        "successes": 5,
        "outcome": "messy_critical",
        "degree": None,
        "hunger_faces": [10, 1],
        "pool": 6,
        "hunger": 2,
        "difficulty": 3,
        "margin": 2,
        "criticals": 1,
        "win": True,
        "win_at_cost": False,
        "specialty": False,
        "helpers": 0,
        "automatic": False,
        "tracker": None,
        "rerolled": [],
        "rerolled_from": [],
    }


def test_cli_json_bestial_failure_without_successes(capsys: pytest.CaptureFixture[str]) -> None:
    data = roll_json(capsys, "--pool", "3", "--hunger", "1", "--faces", "2,3,1")
    assert (data["outcome"], data["successes"], data["difficulty"], data["margin"]) == (
        "bestial_failure",
        0,
        1,
        -1,
    )


def test_cli_json_specialty_and_difficulty_zero(capsys: pytest.CaptureFixture[str]) -> None:
    data = roll_json(
        capsys, "--pool", "3", "--specialty", "--difficulty", "0", "--faces", "2,3,4,1"
    )
    assert (data["outcome"], data["pool"], data["margin"]) == ("total_failure", 4, 0)
    data = roll_json(capsys, "--pool", "2", "--hunger", "5", "--faces", "10,10")
    assert (data["faces"], data["hunger_faces"], data["outcome"]) == (
        [],
        [10, 10],
        "messy_critical",
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--pool", "3", "--willpower"], "the v5 rules have no willpower option"),
        (["--pool", "3", "--hunger", "6"], "--hunger must be between 0 and 5, not 6"),
        (["--pool", "3", "--difficulty", "31"], "--difficulty must be between 0 and 30"),
        (["--pool", "3", "--specialty", "--faces", "1,2,3"], "needs at least 4 dice, but 3 face"),
        (["--pool", "-1"], "no negative dots"),
    ],
)
def test_cli_errors(capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    assert main(["roll", "--variant", "v5", *args, "--json"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and message in err


# --- properties ---------------------------------------------------------------------------------

face = st.integers(min_value=1, max_value=10)
regular_faces = st.lists(face, max_size=25)
hunger_faces = st.lists(face, max_size=rules.MAX_HUNGER)
difficulty = st.integers(min_value=rules.MIN_DIFFICULTY, max_value=rules.MAX_DIFFICULTY)


@given(st.lists(face, max_size=40))
def test_successes_match_an_independent_model(faces: list[int]) -> None:
    tens = faces.count(10)
    below_ten = len([f for f in faces if 6 <= f <= 9])
    # a pair of 10s is worth four successes in all; a 10 left over is worth one
    assert rules.count_successes(faces) == below_ten + 4 * (tens // 2) + tens % 2


@given(regular_faces, hunger_faces, difficulty)
def test_results_follow_the_rules(regular: list[int], hunger: list[int], target: int) -> None:
    dice = rules.Dice(tuple(regular), tuple(hunger))
    verdict = rules.judge(dice, target)
    successes = dice.successes
    won = successes >= target and successes > 0
    assert verdict.win is won
    assert verdict.margin == successes - target
    result = verdict.result
    if result is rules.Result.MESSY_CRITICAL:
        assert won and dice.pairs and 10 in hunger
    elif result is rules.Result.CRITICAL:
        assert won and dice.pairs and 10 not in hunger
    elif result is rules.Result.SUCCESS:
        assert won and not dice.pairs
    elif result is rules.Result.BESTIAL_FAILURE:
        assert not won and 1 in hunger
    elif result is rules.Result.TOTAL_FAILURE:
        assert successes == 0 and 1 not in hunger
    else:
        assert not won and successes > 0 and 1 not in hunger
    assert verdict.win_at_cost is (not won and successes > 0)


@given(regular_faces, hunger_faces, difficulty, st.randoms(use_true_random=False))
def test_order_within_each_kind_does_not_matter(
    regular: list[int], hunger: list[int], target: int, rnd: Any
) -> None:
    first = rules.judge(rules.Dice(tuple(regular), tuple(hunger)), target)
    rnd.shuffle(regular)
    rnd.shuffle(hunger)
    assert rules.judge(rules.Dice(tuple(regular), tuple(hunger)), target) == first


@given(st.integers(min_value=-20, max_value=60), st.integers(min_value=0, max_value=5))
def test_pool_and_hunger_split(total: int, hunger: int) -> None:
    pool = rules.pool_size(total)
    assert pool >= 1 and pool == max(1, total)
    regular, hungry = rules.hunger_split(pool, hunger)
    assert regular + hungry == pool and hungry == min(hunger, pool)


@given(st.integers(min_value=1, max_value=60), difficulty)
def test_automatic_win_needs_twice_the_difficulty(pool: int, target: int) -> None:
    assert rules.automatic_win_allowed(pool, target) is (pool >= 2 * max(1, target))


#: the strategies that pick the dice themselves (CHOSEN is the player's own pick)
PICKING = [s for s in rules.Strategy if s is not rules.Strategy.CHOSEN]


@given(regular_faces, hunger_faces, difficulty, st.sampled_from(PICKING))
def test_rerolls_pick_at_most_three_regular_dice(
    regular: list[int], hunger: list[int], target: int, strategy: rules.Strategy
) -> None:
    dice = rules.Dice(tuple(regular), tuple(hunger))
    indexes = rules.reroll_indexes(regular, strategy)
    assert len(indexes) <= rules.REROLL_LIMIT
    assert list(indexes) == sorted(set(indexes))
    assert all(0 <= i < len(regular) for i in indexes)
    chosen = [regular[i] for i in indexes]
    if strategy is rules.Strategy.FAILURES:
        failures = sorted(f for f in regular if f < 6)
        assert sorted(chosen) == failures[: rules.REROLL_LIMIT]
    elif strategy is rules.Strategy.CRITICALS:
        others = sorted(f for f in regular if f != 10)
        assert sorted(chosen) == others[: rules.REROLL_LIMIT]
    elif strategy is rules.Strategy.AVOID_MESSY:
        assert chosen == [10] * min(regular.count(10), rules.REROLL_LIMIT)
    else:
        assert chosen.count(10) == min(regular.count(10), rules.REROLL_LIMIT)
    if rules.reroll_problem(dice, target, strategy) is None:
        assert indexes


@given(regular_faces, hunger_faces, st.lists(st.integers(1, 10), max_size=4))
def test_the_dice_a_player_names_are_taken_when_they_are_there(
    regular: list[int], hunger: list[int], named: list[int]
) -> None:
    dice = rules.Dice(tuple(regular), tuple(hunger))
    problem = rules.chosen_problem(dice, named)
    there = all(named.count(face) <= regular.count(face) for face in named)
    assert (problem is None) is (bool(regular) and 1 <= len(named) <= 3 and there), problem
    if problem is None:
        indexes = rules.chosen_indexes(regular, named)
        assert list(indexes) == sorted(set(indexes))
        assert sorted(regular[i] for i in indexes) == sorted(named)
    with pytest.raises(ValueError, match="the player names these dice"):
        rules.reroll_indexes(regular, rules.Strategy.CHOSEN)


@given(regular_faces.filter(bool), hunger_faces, st.data())
def test_reroll_keeps_hunger_dice(regular: list[int], hunger: list[int], data: Any) -> None:
    pool = len(regular) + len(hunger)
    built = request(f"{pool} {len(hunger)} 2")
    faces = tuple(regular + hunger)
    indexes = rules.reroll_indexes(regular, rules.Strategy.CRITICALS) or (0,)
    new = data.draw(st.lists(face, min_size=len(indexes), max_size=len(indexes)))
    reroll = RerollRequest(built, faces, indexes, rules.Strategy.CRITICALS)
    outcome = VARIANT.evaluate(reroll, new)
    assert isinstance(outcome, V5Outcome)
    assert outcome.hunger_faces == tuple(hunger)
    expected = rules.reroll(regular, indexes, new)
    assert outcome.faces == expected
    assert outcome.verdict == rules.judge(rules.Dice(expected, tuple(hunger)), 2)


@given(st.lists(face, min_size=1, max_size=20), st.none() | st.integers(0, rules.MAX_HUNGER))
def test_rouse_raises_hunger_once_per_failure(faces: list[int], hunger: int | None) -> None:
    result = rules.rouse(faces, hunger)
    failed = len([f for f in faces if f < 6])
    assert result.failed == failed and result.passed == len(faces) - failed
    if hunger is None:
        assert result.hunger_after is None
    else:
        assert result.hunger_after == min(5, hunger + failed)


@given(
    st.integers(0, 12),
    st.integers(0, 5),
    st.booleans(),
    st.integers(0, 3),
    st.sampled_from(["", " half 7", " skill 2", " diff 4 harder 1", " vs 4 h1"]),
)
def test_requests_survive_the_state_store(
    pool: int, hunger: int, specialty: bool, helpers: int, rest: str
) -> None:
    text = (
        f"{pool} {hunger}"
        + (" spec" if specialty else "")
        + (f" team {helpers}" if helpers else "")
    )
    built = request(text + rest)
    assert V5Request.from_json(json.loads(json.dumps(built.to_json()))) == built
    assert isinstance(built.actor, Side) and VARIANT.dice_count(built) >= 1
