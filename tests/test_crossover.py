"""The ``crossover`` rule set: the worked examples of docs/rules/crossover.md (charts, the chase,
constructed rolls), tricky cases, the JSON contract, and properties over arbitrary faces."""

from __future__ import annotations

import json
import random
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coterie.dice.sources import FixedDice
from coterie.errors import UsageError
from coterie.framework.grammar import Parsed, Pool, parse, tokens
from coterie.framework.variant import RoomSettings
from coterie.ops.cli import main
from coterie.render.elements import Role
from coterie.render.encode import to_plain
from coterie_crossover import rules
from coterie_crossover.commands import plan_multi
from coterie_crossover.movement import parse_movement
from coterie_crossover.requests import CrossoverRequest
from coterie_crossover.rules import Conditions, Mode
from coterie_crossover.variant import GRAMMAR, CrossoverOutcome, CrossoverVariant
from doc_tables import ints, table

VARIANT = CrossoverVariant()
ROOM = RoomSettings(variant="crossover")


def request(text: str, settings: RoomSettings = ROOM) -> CrossoverRequest:
    return VARIANT.build(parse(tokens(text), GRAMMAR), settings)


def evaluate(text: str, faces: list[int], settings: RoomSettings = ROOM) -> CrossoverOutcome:
    return VARIANT.roll(request(text, settings), FixedDice(faces))


def yes(cell: str) -> bool:
    assert cell in ("yes", "no"), cell
    return cell == "yes"


def optional(cell: str) -> str | None:
    return None if cell == "-" else cell


def roll_of(step: str) -> rules.PoolRoll:
    """A roll standing for one table step: ``botch``, or N successes (N tens, then a 2)."""
    if step == "botch":
        roll = rules.roll_pool([1, 2, 3], 6)
        assert roll.botch
        return roll
    return rules.roll_pool([10] * int(step) + [2], 6)


# --- the worked examples ----------------------------------------------------------------------


@pytest.mark.parametrize("row", table("crossover", "Single rolls"), ids=lambda r: r["example"])
def test_single_roll_examples(row: dict[str, str]) -> None:
    faces = ints(row["faces"])
    difficulty = int(row["difficulty"])
    willpower = yes(row["willpower"])
    roll = rules.roll_pool(faces, difficulty, willpower=willpower)
    assert roll.outcome == row["outcome"]
    # the same through the variant (what chat and the CLI use)
    text = f"{len(faces)} {difficulty}" + (" wp" if willpower else "")
    outcome = evaluate(text, faces)
    assert outcome.outcome == row["outcome"]
    assert outcome.successes == int(row["successes"])
    assert outcome.degree == optional(row["degree"])
    assert outcome.momentous is yes(row["momentous"])
    assert outcome.faces == tuple(faces)
    assert outcome.as_json()["momentous"] is yes(row["momentous"])


@pytest.mark.parametrize("row", table("crossover", "Difficulty chart"), ids=lambda r: r["label"])
def test_difficulty_chart(row: dict[str, str]) -> None:
    difficulty = int(row["difficulty"])
    assert rules.DIFFICULTY_LABELS[difficulty] == row["label"]
    shown = to_plain(evaluate(f"1 {difficulty}", [5]).render())
    assert f"difficulty {difficulty} ({row['label']})" in shown


def test_difficulty_chart_covers_the_whole_range() -> None:
    documented = [int(row["difficulty"]) for row in table("crossover", "Difficulty chart")]
    assert documented == list(range(rules.MIN_DIFFICULTY, rules.MAX_DIFFICULTY + 1))
    assert VARIANT.difficulty_range == (2, 10)
    assert rules.USUAL_DIFFICULTIES == (3, 9)


@pytest.mark.parametrize("row", table("crossover", "Degree chart"), ids=lambda r: r["successes"])
def test_degrees_of_success(row: dict[str, str]) -> None:
    successes = int(row["successes"])
    assert rules.degree(successes) == optional(row["degree"])
    assert rules.momentous(successes) is yes(row["momentous"])


@pytest.mark.parametrize("row", table("crossover", "Ratings"), ids=lambda r: r["rating"])
def test_ratings(row: dict[str, str]) -> None:
    assert rules.rating(int(row["rating"])) == row["label"]


def test_negative_rating_is_refused() -> None:
    with pytest.raises(ValueError):
        rules.rating(-1)


@pytest.mark.parametrize(
    "row", table("crossover", "Movement table"), ids=lambda r: f"{r['mode']}-{r['dexterity']}"
)
def test_movement_table(row: dict[str, str]) -> None:
    mode = Mode(row["mode"])
    dexterity = None if row["dexterity"] == "-" else int(row["dexterity"])
    skilled = yes(row["skilled"])
    expected = (int(row["least"]), int(row["most"]))
    assert rules.yards_per_turn(mode, dexterity, skilled=skilled) == expected
    text = f"{mode.value}" + (f" dex {dexterity}" if dexterity is not None else "")
    text += " skilled" if skilled else ""
    assert parse_movement(text).rate == expected


@pytest.mark.parametrize(
    "row", table("crossover", "Climbing"), ids=lambda r: f"{r['conditions']}-{r['successes']}"
)
def test_climbing(row: dict[str, str]) -> None:
    conditions = Conditions(row["conditions"])
    low, high = rules.climb_feet(int(row["successes"]), conditions)
    assert (low, high) == (int(row["least feet"]), int(row["most feet"]))
    injured = (rules.injured_rate(low), rules.injured_rate(high))
    assert injured == (int(row["injured least"]), int(row["injured most"]))


@pytest.mark.parametrize("row", table("crossover", "Injured movement"), ids=lambda r: r["mode"])
def test_injured_movement(row: dict[str, str]) -> None:
    mode = Mode(row["mode"])
    dexterity = None if row["dexterity"] == "-" else int(row["dexterity"])
    normal = rules.yards_per_turn(mode, dexterity)[1]
    assert normal == int(row["normal"])
    assert rules.injured_rate(normal) == int(row["injured"])
    text = f"{mode.value} injured" + (f" dex {dexterity}" if dexterity is not None else "")
    assert parse_movement(text).injured_rate[1] == int(row["injured"])


@pytest.mark.parametrize(
    "row",
    table("crossover", "Moving while acting"),
    ids=lambda r: f"dex{r['dexterity']}-{r['yards moved']}",
)
def test_moving_while_acting(row: dict[str, str]) -> None:
    dexterity, moved = int(row["dexterity"]), int(row["yards moved"])
    assert rules.free_yards(dexterity) == int(row["free yards"])
    assert rules.acting_penalty(moved, dexterity) == int(row["dice lost"])


@pytest.mark.parametrize("row", table("crossover", "Full speed"), ids=lambda r: r["stamina"])
def test_full_speed(row: dict[str, str]) -> None:
    assert rules.full_speed_turns(int(row["stamina"])) == int(row["turns"])


@pytest.mark.parametrize(
    "row", table("crossover", "Pushing past an injury"), ids=lambda r: r["dice"]
)
def test_pushing_past_an_injury(row: dict[str, str]) -> None:
    stamina, willpower, wound = (int(row[k]) for k in ("stamina", "willpower", "wound penalty"))
    assert rules.push_pool(stamina, willpower, wound) == int(row["dice"])
    text = f"run dex 2 injured push stamina {stamina} willpower {willpower} wound {wound}"
    assert parse_movement(text).push_pool == int(row["dice"])


@pytest.mark.parametrize("row", table("crossover", "Multiple actions"), ids=lambda r: r["example"])
def test_multiple_action_examples(row: dict[str, str]) -> None:
    pools = ints(row["pools"])
    split = None if row["split"] == "-" else ints(row["split"])
    text = " ".join(map(str, pools)) + ("" if split is None else " split " + row["split"])
    if row["error"] != "-":
        with pytest.raises(rules.AllocationError, match=re.escape(row["error"])):
            rules.split_pool(pools, split)
        with pytest.raises(UsageError, match=re.escape(row["error"])):
            plan_multi(tokens(text), 6, 10)
        return
    expected = ints(row["dice per action"])
    assert rules.split_pool(pools, split) == expected
    plan = plan_multi(tokens(text), 6, 10)
    assert list(plan.shares) == expected
    assert plan.smallest == min(pools)
    assert [VARIANT.dice_count(r) for r in plan.requests()] == expected


@pytest.mark.parametrize("row", table("crossover", "Extended actions"), ids=lambda r: r["example"])
def test_extended_examples(row: dict[str, str]) -> None:
    state = rules.Extended(int(row["target"]))
    progress = []
    for step in row["rolls"].split():
        state = rules.extended_step(state, roll_of(step))
        progress.append(state.progress)
    assert progress == ints(row["progress"])
    assert state.done == (state.progress >= int(row["target"]))


@pytest.mark.parametrize("row", table("crossover", "Resisted actions"), ids=lambda r: r["example"])
def test_resisted_examples(row: dict[str, str]) -> None:
    actor = rules.roll_pool(ints(row["actor faces"]), int(row["actor difficulty"]))
    opponent = rules.roll_pool(ints(row["opponent faces"]), int(row["opponent difficulty"]))
    result = rules.resisted(actor, opponent)
    assert result.winner == optional(row["winner"])
    assert result.net == int(row["net"])
    # the same through one message
    a, b = ints(row["actor faces"]), ints(row["opponent faces"])
    text = f"{len(a)} {row['actor difficulty']} vs {len(b)} {row['opponent difficulty']}"
    outcome = evaluate(text, a + b)
    versus = outcome.as_json()["versus"]
    assert (versus["winner"], versus["net"]) == (optional(row["winner"]), int(row["net"]))


@pytest.mark.parametrize(
    "row", table("crossover", "Extended resisted actions"), ids=lambda r: r["example"]
)
def test_extended_resisted_examples(row: dict[str, str]) -> None:
    state = rules.Race(int(row["target"]))
    actor_tally, opponent_tally = [], []
    for mine, theirs in zip(row["actor"].split(), row["opponent"].split(), strict=True):
        state = rules.race_step(state, roll_of(mine), roll_of(theirs))
        actor_tally.append(state.actor)
        opponent_tally.append(state.opponent)
    assert actor_tally == ints(row["actor tally"])
    assert opponent_tally == ints(row["opponent tally"])
    assert state.winner == row["winner"]


@pytest.mark.parametrize("row", table("crossover", "Teamwork"), ids=lambda r: r["example"])
def test_teamwork_examples(row: dict[str, str]) -> None:
    result = rules.teamwork([roll_of(step) for step in row["members"].split()])
    assert result.total == int(row["total"])
    assert result.botched is yes(row["botched"])


@pytest.mark.parametrize("row", table("crossover", "Automatic success"), ids=lambda r: r["example"])
def test_automatic_success_examples(row: dict[str, str]) -> None:
    pool, difficulty = int(row["pool"]), int(row["difficulty"])
    allowed = yes(row["allowed"])
    assert rules.automatic_success_allowed(pool, difficulty) is allowed
    if allowed:
        outcome = evaluate(f"{pool} {difficulty} auto", [])
        assert (outcome.outcome, outcome.successes, outcome.degree) == ("success", 1, "Marginal")
        assert outcome.faces == () and outcome.as_json()["automatic"] is True
    else:
        with pytest.raises(UsageError, match="at least as many dice as the difficulty"):
            request(f"{pool} {difficulty} auto")


# --- tricky cases ---------------------------------------------------------------------------------


def test_a_ten_is_a_success_and_a_one_cancels_it_at_difficulty_ten() -> None:
    roll = rules.roll_pool([10, 1, 9], 10)
    assert (roll.rolled, roll.ones, roll.net, roll.outcome) == (1, 1, 0, "failure")
    assert roll.roles == (Role.CANCELLED, Role.CANCELLED, Role.FAILURE)


def test_botch_marks_the_ones() -> None:
    roll = rules.roll_pool([1, 3, 1], 6)
    assert roll.botch and roll.roles == (Role.BOTCH, Role.FAILURE, Role.BOTCH)


def test_the_lowest_successes_are_shown_cancelled() -> None:
    roll = rules.roll_pool([10, 6, 1, 8], 6)
    assert roll.roles == (Role.SUCCESS, Role.CANCELLED, Role.CANCELLED, Role.SUCCESS)


def test_willpower_cannot_be_cancelled_and_cannot_botch() -> None:
    roll = rules.roll_pool([1, 1, 1, 2], 6, willpower=True)
    assert (roll.net, roll.botch, roll.outcome) == (1, False, "success")
    roll = rules.roll_pool([7, 1, 1], 6, willpower=True)
    assert roll.net == 1


def test_default_difficulty_is_standard_and_rooms_may_change_it() -> None:
    assert request("5").actor.difficulty == 6 == rules.DEFAULT_DIFFICULTY
    assert (
        request("5", RoomSettings(variant="crossover", default_difficulty=8)).actor.difficulty == 8
    )
    # a default meant for another rule set that does not fit falls back to ours
    odd = RoomSettings(variant="crossover", default_difficulty=12)
    assert request("5", odd).actor.difficulty == 6


@pytest.mark.parametrize(
    ("text", "pool", "trait"),
    [("rage 6 7", 6, "rage"), ("willpower 7", 7, "willpower"), ("gnosis 10 8", 10, "gnosis")],
)
def test_ten_point_traits_alone(text: str, pool: int, trait: str) -> None:
    built = request(text)
    assert built.actor.pool == pool and built.actor.trait == trait
    outcome = VARIANT.roll(built, FixedDice([7] * pool))
    assert to_plain(outcome.render()).startswith(f"{trait.title()}: {pool} dice")


def test_a_ten_point_trait_may_take_a_penalty() -> None:
    assert request("rage 6-2 6").actor.pool == 4


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("rage 6+2 6", "Rage is rated up to 10 and is rolled alone"),
        ("willpower 11 6", "Willpower is rated from 0 to 10, not 11"),
        ("3+4+2 6", "at most two"),
        ("0 6", "can't be rolled"),
        ("3-3 6", "can't be rolled"),
        ("5 6 auto", "at least as many dice as the difficulty"),
        ("7 6 auto wp", "Willpower adds nothing"),
        ("7 6 auto vs 5", "always rolled, never `auto`"),
        ("7 6 auto ext 5", "always rolled, never `auto`"),
        ("5 6 progress 2", "`progress` goes with `ext TARGET`"),
        ("5 6 ext 5 progress 5", "already reaches the target 5"),
        ("5 6 vs 5 progress 1", "`progress` goes with `ext TARGET`"),
        ("5 6 ext 5 vs 5 progress 6", "the other side's progress 6 already reaches"),
        ("5 11", "between 2 and 10"),
        ("5 1", "between 2 and 10"),
        ("5 6 spec", "the crossover rules have no specialty rule"),
        ("5 6 vs gnosis 12", "Gnosis is rated from 0 to 10"),
    ],
)
def test_errors(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=re.escape(message)):
        request(text)


def test_house_rule_can_switch_off_auto() -> None:
    settings = RoomSettings(variant="crossover", house_rules={"auto_success": False})
    with pytest.raises(UsageError, match="does not use automatic successes"):
        request("7 6 auto", settings)
    assert request("7 6", settings).actor.pool == 7


@pytest.mark.parametrize(
    "text",
    ["rage 6 gnosis 4", "3 rage 6", "3+4 rage 6", "2+rage 6", "3 + rage 6", "5 rage", "rage+2 6"],
)
def test_a_ten_point_trait_with_anything_else_is_refused(text: str) -> None:
    with pytest.raises(UsageError, match=r"is rated up to 10 and is rolled alone"):
        request(text)


@pytest.mark.parametrize(
    "text", ["rage 6 7", "willpower 5 wp", "rage 6 vs willpower 5", "3+4 6 vs gnosis 4", "5 6 wp"]
)
def test_ten_point_traits_in_their_place_pass_the_check(text: str) -> None:
    assert request(text).actor.pool > 0


def test_extended_in_one_message() -> None:
    outcome = evaluate("5 6 ext 15 progress 4", [7, 8, 9, 2, 3])
    assert outcome.extended == rules.Extended(15, progress=7, rolls=1)
    botched = evaluate("5 6 ext 15 progress 4", [1, 2, 3, 4, 5])
    assert botched.extended is not None
    assert botched.extended.progress == 0 and botched.extended.wiped
    assert botched.as_json()["extended"] == {
        "progress": 0,
        "target": 15,
        "wiped": True,
        "done": False,
    }
    done = evaluate("3 6 ext 5 progress 3", [9, 9, 2])
    assert done.extended is not None and done.extended.done


def test_extended_resisted_in_one_message_uses_own_successes() -> None:
    # actor 3 successes, opponent 2: under a margin rule the actor would gain 1; here each adds
    # its own, and the opponent, starting nearer, reaches the goal first
    outcome = evaluate("4 6 ext 10 progress 5 vs 3 6 progress 8", [7, 8, 9, 2] + [6, 6, 2])
    assert outcome.race == rules.Race(10, actor=8, opponent=10, turns=1)
    assert outcome.as_json()["contest"] == {
        "actor": 8,
        "opponent": 10,
        "target": 10,
        "winner": "opponent",
    }
    assert outcome.extended is None


def test_a_decided_race_cannot_go_on() -> None:
    with pytest.raises(ValueError):
        rules.race_step(rules.Race(3, actor=3), roll_of("1"), roll_of("1"))


def test_resisted_botch_is_reported_and_counts_nothing() -> None:
    outcome = evaluate("2 6 vs 2 6", [7, 2, 1, 3])
    versus = outcome.as_json()["versus"]
    assert versus["outcome"] == "botch" and versus["successes"] == 0
    assert versus["winner"] == "actor" and versus["net"] == 1


def test_evaluate_refuses_the_wrong_number_of_faces() -> None:
    with pytest.raises(UsageError, match="needs 3 dice, but 2 were given"):
        VARIANT.evaluate(request("3 6"), [5, 5])


def test_team_refuses_members_that_are_not_plain_rolls() -> None:
    for text in ("7 6 auto", "5 6 vs 3", "5 6 ext 9"):
        with pytest.raises(UsageError, match="plain pool"):
            VARIANT.check_team([request("3 6"), request(text)])
    VARIANT.check_team([request("3 6"), request("4 7 wp")])


def test_team_line() -> None:
    good = [evaluate("2 6", [7, 8]), evaluate("3 6", [9, 9, 9])]
    assert to_plain(VARIANT.team(good)) == (
        "Teamwork: 5 successes — Phenomenal, a momentous result"
    )
    spoiled = [evaluate("2 6", [7, 8]), evaluate("2 6", [1, 2])]
    assert to_plain(VARIANT.team(spoiled)) == (
        "Teamwork: 2 successes — Moderate — but member 2 botched, and that can hurt everyone"
    )
    nothing = [evaluate("2 6", [1, 2]), evaluate("2 6", [1, 3])]
    assert to_plain(VARIANT.team(nothing)) == (
        "Teamwork: 0 successes — but members 1, 2 botched, and that can hurt everyone"
    )


def test_json_contract_keys() -> None:
    data = evaluate("5 8", [9, 1, 1, 8, 1]).as_json()
    assert data == {
        "variant": "crossover",
        "faces": [9, 1, 1, 8, 1],
        "successes": 0,
        "outcome": "failure",
        "degree": None,
        "pool": 5,
        "difficulty": 8,
        "ones": 3,
        "rolled_successes": 2,
        "willpower": False,
        "automatic": False,
        "momentous": False,
    }


def test_cli_parsed_values_build_the_same_request() -> None:
    parsed = Parsed(values={"pool": Pool.of(5), "difficulty": 8, "willpower": True})
    built = VARIANT.build(parsed, ROOM)
    assert built == request("5 8 wp")


def cli_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    assert main(["roll", "--variant", "crossover", *args, "--json"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    result: dict[str, object] = json.loads(out)
    return result


def test_cli_json_failure_botch_and_success(capsys: pytest.CaptureFixture[str]) -> None:
    data = cli_json(capsys, "--pool", "5", "--difficulty", "8", "--faces", "9,1,1,8,1")
    assert (data["outcome"], data["successes"], data["degree"]) == ("failure", 0, None)
    data = cli_json(capsys, "--pool", "4", "--faces", "1,3,5,2")
    assert (data["outcome"], data["successes"], data["difficulty"]) == ("botch", 0, 6)
    data = cli_json(capsys, "--pool", "7", "--difficulty", "5", "--faces", "5,6,7,8,9,10,2")
    assert (data["outcome"], data["successes"], data["degree"]) == ("success", 6, "Phenomenal")
    assert data["momentous"] is True
    data = cli_json(capsys, "--pool", "3", "--willpower", "--faces", "1,1,3")
    assert (data["outcome"], data["successes"], data["willpower"]) == ("success", 1, True)


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        (["--hunger", "2"], "the crossover rules have no hunger option"),
        (["--specialty"], "the crossover rules have no specialty rule"),
        (["--difficulty", "11"], "--difficulty must be between 2 and 10"),
    ],
)
def test_cli_refuses_what_crossover_lacks(
    capsys: pytest.CaptureFixture[str], flag: list[str], message: str
) -> None:
    assert main(["roll", "--variant", "crossover", "--pool", "5", *flag]) == 2
    out, err = capsys.readouterr()
    assert out == "" and message in err


# --- properties -----------------------------------------------------------------------------------

faces_strategy = st.lists(st.integers(min_value=1, max_value=10), min_size=1, max_size=60)
difficulty_strategy = st.integers(min_value=2, max_value=10)


@given(faces_strategy, difficulty_strategy, st.booleans())
def test_counts_match_an_independent_model(
    faces: list[int], difficulty: int, willpower: bool
) -> None:
    successes = len([f for f in faces if f >= difficulty])  # 10 >= every difficulty 2-10
    ones = faces.count(1)
    roll = rules.roll_pool(faces, difficulty, willpower=willpower)
    assert roll.net == max(0, successes - ones) + (1 if willpower else 0)
    assert roll.botch == (not willpower and successes == 0 and ones > 0)
    assert roll.roles.count(Role.CANCELLED) == 2 * min(successes, ones)
    assert len(roll.roles) == len(faces)
    if willpower:
        assert roll.outcome == "success" and roll.net >= 1


@given(faces_strategy, difficulty_strategy, st.randoms(use_true_random=False))
def test_outcome_depends_on_the_faces_not_their_order(
    faces: list[int], difficulty: int, rnd: random.Random
) -> None:
    first = evaluate(f"{len(faces)} {difficulty}", faces)
    assert evaluate(f"{len(faces)} {difficulty}", list(faces)) == first
    shuffled = list(faces)
    rnd.shuffle(shuffled)
    other = evaluate(f"{len(faces)} {difficulty}", shuffled)
    assert (other.outcome, other.successes, other.degree) == (
        first.outcome,
        first.successes,
        first.degree,
    )
    assert first.successes == (first.actor.net if first.actor else 0)
    assert (first.outcome == "success") == (first.successes > 0)


@given(
    st.lists(st.integers(min_value=1, max_value=20), min_size=2, max_size=6),
    st.data(),
)
def test_a_split_is_accepted_exactly_when_it_adds_up(pools: list[int], data: st.DataObject) -> None:
    shares = data.draw(st.lists(st.integers(0, 20), min_size=len(pools), max_size=len(pools)))
    valid = sum(shares) == min(pools) and all(share >= 1 for share in shares)
    if valid:
        assert rules.split_pool(pools, shares) == shares
    else:
        with pytest.raises(rules.AllocationError):
            rules.split_pool(pools, shares)


@given(st.lists(st.integers(min_value=1, max_value=30), min_size=2, max_size=8))
def test_the_even_split_shares_the_smallest_pool(pools: list[int]) -> None:
    if min(pools) < len(pools):
        with pytest.raises(rules.AllocationError, match="too few"):
            rules.split_pool(pools)
        return
    shares = rules.split_pool(pools)
    assert sum(shares) == min(pools)
    assert max(shares) - min(shares) <= 1 and shares == sorted(shares, reverse=True)


@given(st.integers(0, 10), st.integers(0, 80))
def test_acting_penalty_is_a_die_per_yard_past_half_a_run(dexterity: int, yards: int) -> None:
    penalty = rules.acting_penalty(yards, dexterity)
    assert penalty == max(0, yards - (20 + 3 * dexterity) // 2)
    assert rules.acting_penalty(yards + 1, dexterity) - penalty in (0, 1)
    if yards <= rules.LEAST_FREE_YARDS:
        assert rules.acting_penalty(yards, None) == 0
    else:
        with pytest.raises(ValueError):
            rules.acting_penalty(yards, None)


@given(st.sampled_from([Mode.WALK, Mode.JOG, Mode.RUN, Mode.SWIM]), st.integers(0, 10))
def test_no_mode_is_faster_than_a_run_and_injury_halves(mode: Mode, dexterity: int) -> None:
    low, high = rules.yards_per_turn(mode, dexterity)
    assert low == high <= rules.running_yards(dexterity)
    assert 2 * rules.injured_rate(high) in (high, high - 1)


@given(
    st.integers(1, 30),
    st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), min_size=1, max_size=12),
)
def test_a_race_ends_with_the_first_to_the_goal(target: int, turns: list[tuple[int, int]]) -> None:
    state = rules.Race(target)
    for mine, theirs in turns:
        if state.winner is not None:
            break
        a = roll_of("botch") if mine == 0 else roll_of(str(mine))
        b = roll_of(str(theirs))
        before = state
        state = rules.race_step(state, a, b)
        assert state.actor == (0 if a.botch else before.actor + mine)
        assert state.opponent == before.opponent + theirs
    if state.winner in ("actor", "tie"):
        assert state.actor >= target
    if state.winner == "opponent":
        assert state.opponent >= target
    if state.winner is None:
        assert state.actor < target and state.opponent < target
