"""The ``revised`` rule set: the document's worked examples (read from docs/rules/revised.md),
tricky cases, and properties over arbitrary faces."""

from __future__ import annotations

import asyncio
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coterie.dice import d10
from coterie.dice.sources import FixedDice
from coterie.errors import UsageError
from coterie.framework.grammar import Parsed, Pool, parse, parse_pool, tokens
from coterie.framework.variant import RollContext, RoomSettings
from coterie.render.elements import Role
from coterie.storage.state import MemoryStore, RoomState
from coterie_revised import rules
from coterie_revised.variant import GRAMMAR, RevisedOutcome, RevisedVariant
from doc_tables import ints, table

VARIANT = RevisedVariant()
ROOM = RoomSettings(variant="revised")


def request(text: str, settings: RoomSettings = ROOM):
    return VARIANT.build(parse(tokens(text), GRAMMAR), settings)


def evaluate(text: str, faces: list[int], settings: RoomSettings = ROOM) -> RevisedOutcome:
    return VARIANT.roll(request(text, settings), FixedDice(faces))


# --- the document's worked examples ------------------------------------------------------------


@pytest.mark.parametrize("row", table("revised", "Single rolls"), ids=lambda r: r["example"])
def test_single_roll_examples(row: dict[str, str]) -> None:
    faces = ints(row["faces"])
    willpower = row["willpower"] == "yes"
    roll = rules.roll_pool(faces, int(row["difficulty"]), willpower=willpower)
    assert roll.outcome == row["outcome"]
    assert roll.net == int(row["successes"]) or roll.outcome != "success"
    # the same through the variant (what chat and the CLI use)
    text = f"{len(faces)} {row['difficulty']}" + (" wp" if willpower else "")
    outcome = evaluate(text, faces)
    assert outcome.outcome == row["outcome"]
    assert outcome.successes == int(row["successes"])
    assert outcome.degree == (None if row["degree"] == "-" else row["degree"])
    assert outcome.faces == tuple(faces)


@pytest.mark.parametrize("row", table("revised", "Dice pools"), ids=lambda r: r["example"])
def test_dice_pool_examples(row: dict[str, str]) -> None:
    assert parse_pool(row["pool"]).total == int(row["dice"])
    built = request(f"{row['pool']} 6")
    assert VARIANT.dice_count(built) == int(row["dice"])


@pytest.mark.parametrize("row", table("revised", "Multiple actions"), ids=lambda r: r["example"])
def test_multiple_action_examples(row: dict[str, str]) -> None:
    pools, expected = ints(row["pools"]), ints(row["after penalties"])
    assert rules.multiple_action_pools(pools) == expected
    for action, (pool, final) in enumerate(zip(pools, expected, strict=True), start=1):
        built = request(f"{pool} 6 multi {len(pools)} action {action}")
        assert VARIANT.dice_count(built) == final


@pytest.mark.parametrize("row", table("revised", "Extended actions"), ids=lambda r: r["example"])
def test_extended_examples(row: dict[str, str]) -> None:
    state = rules.Extended(int(row["target"]))
    progress = []
    for step in row["rolls"].split():
        if step == "botch":
            roll = rules.roll_pool([3, 4, 1, 6, 4, 1, 6], 7)  # the document's botched night
            assert roll.botch
        else:
            roll = rules.roll_pool([10] * int(step), 7)
        state = rules.extended_step(state, roll)
        progress.append(state.progress)
    assert progress == ints(row["progress"])
    assert not state.done and state.botches == 1 and state.wiped


@pytest.mark.parametrize("row", table("revised", "Resisted actions"), ids=lambda r: r["example"])
def test_resisted_examples(row: dict[str, str]) -> None:
    actor = rules.roll_pool([7] * int(row["actor"]) + [2, 3], 7)
    opponent = rules.roll_pool([6] * int(row["opponent"]) + [2, 5, 4, 3], 6)
    result = rules.resisted(actor, opponent)
    assert result.winner == row["winner"]
    assert result.net == int(row["net"])
    assert rules.degree(result.net) == row["degree"]


@pytest.mark.parametrize("row", table("revised", "Trying again"), ids=lambda r: r["example"])
def test_trying_again_examples(row: dict[str, str]) -> None:
    new = rules.retry_difficulty(int(row["difficulty"]), int(row["failures"]))
    assert new == int(row["new difficulty"])
    built = request(f"5 {row['difficulty']} retry {row['failures']}")
    assert built.actor.difficulty == new


# --- tricky cases ---------------------------------------------------------------------------------


def test_ten_always_succeeds_even_at_difficulty_ten() -> None:
    roll = rules.roll_pool([10, 9, 9], 10)
    assert (roll.rolled, roll.net, roll.outcome) == (1, 1, "success")


def test_more_ones_than_successes_is_failure_not_botch() -> None:
    roll = rules.roll_pool([6, 1, 1, 1], 6)
    assert roll.outcome == "failure" and roll.net == 0 and not roll.botch
    assert roll.roles.count(Role.CANCELLED) == 2 and roll.roles.count(Role.ONE) == 2


def test_no_ones_and_no_successes_is_failure() -> None:
    assert rules.roll_pool([2, 3, 5], 6).outcome == "failure"


def test_botch_marks_the_ones() -> None:
    roll = rules.roll_pool([1, 3, 1], 6)
    assert roll.botch and roll.roles == (Role.BOTCH, Role.FAILURE, Role.BOTCH)


def test_cancellation_sets_aside_the_lowest_successes() -> None:
    roll = rules.roll_pool([10, 6, 1, 8], 6)
    assert roll.roles == (Role.SUCCESS, Role.CANCELLED, Role.CANCELLED, Role.SUCCESS)


@pytest.mark.parametrize(
    ("successes", "label"),
    [
        (0, None),
        (1, "Marginal"),
        (2, "Moderate"),
        (3, "Complete"),
        (4, "Exceptional"),
        (5, "Phenomenal"),
        (12, "Phenomenal"),
    ],
)
def test_degrees(successes: int, label: str | None) -> None:
    assert rules.degree(successes) == label


def test_willpower_cannot_be_cancelled_and_cannot_botch() -> None:
    roll = rules.roll_pool([1, 1, 3], 6, willpower=True)
    assert (roll.net, roll.botch, roll.outcome) == (1, False, "success")
    roll = rules.roll_pool([7, 1, 1], 6, willpower=True)
    assert roll.net == 1


def test_willpower_cancellable_house_rule() -> None:
    roll = rules.roll_pool([7, 1, 1], 6, willpower=True, willpower_cancellable=True)
    assert (roll.net, roll.outcome) == (0, "failure")
    settings = RoomSettings(variant="revised", house_rules={"willpower_cancellable": True})
    assert evaluate("3 6 wp", [7, 1, 1], settings).outcome == "failure"
    assert evaluate("3 6 wp", [7, 1, 1]).successes == 1


def test_automatic_success_is_one_marginal_success_without_dice() -> None:
    outcome = evaluate("7 6 auto", [])
    assert (outcome.outcome, outcome.successes, outcome.degree, outcome.faces) == (
        "success",
        1,
        "Marginal",
        (),
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("5 6 auto", "at least the difficulty"),
        ("7 6 auto wp", "Willpower adds nothing"),
        ("7 6 auto vs 5", "rolled, not automatic"),
        ("7 6 auto ext 5", "rolled, not automatic"),
        ("3+4+2 6", "at most two"),
        ("willpower 7+2 6", "rolled alone"),
        ("willpower 11 6", "from 0 to 10"),
        ("0 6", "can't be rolled"),
        ("3-3 6", "can't be rolled"),
        ("5 6 multi 3 action 3", "cannot be attempted"),
        ("6 6 action 2", "goes with `multi"),
        ("6 6 multi 2 action 3", "at most `multi`"),
        ("5 8 retry 3", "beyond this character"),
        ("5 6 progress 2", "goes with `ext"),
        ("5 6 ext 5 progress 5", "already reaches"),
        ("5 6 vs 5 progress 1", "goes with `ext"),
        ("5 6 spec", "the revised rules have no specialty rule"),
    ],
)
def test_errors(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=re.escape(message)):
        request(text)


def test_house_rules_can_switch_off_auto_and_retry() -> None:
    settings = RoomSettings(
        variant="revised", house_rules={"auto_success": False, "trying_again": False}
    )
    with pytest.raises(UsageError, match="automatic"):
        request("7 6 auto", settings)
    with pytest.raises(UsageError, match="trying again"):
        request("7 6 retry 1", settings)


def test_room_default_difficulty() -> None:
    settings = RoomSettings(variant="revised", default_difficulty=8)
    assert request("5", settings).actor.difficulty == 8
    assert request("5").actor.difficulty == rules.DEFAULT_DIFFICULTY


def test_ten_point_trait_alone() -> None:
    built = request("willpower 7 6")
    assert built.actor.pool == 7


def test_multiple_action_pools_and_penalties() -> None:
    assert [rules.multiple_action_penalty(3, k) for k in (1, 2, 3)] == [3, 4, 5]
    assert rules.multiple_action_pools([5, 5]) == [3, 2]


def test_extended_in_one_message() -> None:
    outcome = evaluate("7 7 ext 18 progress 5", [7, 8, 2, 3, 4, 5, 6])
    assert outcome.extended == rules.Extended(18, progress=7, rolls=1)
    botched = evaluate("7 7 ext 18 progress 5", [3, 4, 1, 6, 4, 1, 6])
    assert botched.extended is not None
    assert botched.extended.progress == 0 and botched.extended.wiped
    kept = evaluate(
        "7 7 ext 18 progress 5",
        [3, 4, 1, 6, 4, 1, 6],
        RoomSettings(variant="revised", house_rules={"botch_wipes_extended": False}),
    )
    assert kept.extended is not None and kept.extended.progress == 5
    done = evaluate("3 6 ext 4 progress 2", [9, 9, 2])
    assert done.extended is not None and done.extended.done


def test_resisted_in_one_message() -> None:
    # actor 6 dice at 7: four successes; opponent 7 dice at 6: three
    outcome = evaluate("6 7 vs 7 6", [7, 8, 9, 10, 2, 3] + [6, 7, 8, 2, 3, 4, 5])
    assert outcome.resisted == d10.Resisted(4, 3)
    assert outcome.resisted.winner == "actor" and outcome.resisted.net == 1
    assert outcome.as_json()["versus"]["winner"] == "actor"
    tie = evaluate("2 6 vs 2 6", [7, 2, 7, 2])
    assert tie.resisted is not None and tie.resisted.winner is None


def test_extended_resisted_tallies() -> None:
    state = rules.ExtendedResisted(5)
    a = rules.roll_pool([7, 7, 7], 6)
    b = rules.roll_pool([7, 2, 2], 6)
    state = rules.extended_resisted_step(state, a, b)
    assert (state.actor, state.opponent, state.winner) == (2, 0, None)
    state = rules.extended_resisted_step(state, b, a)
    assert (state.actor, state.opponent) == (2, 2)
    botch = rules.roll_pool([1, 2, 2], 6)
    state = rules.extended_resisted_step(state, botch, b)
    assert (state.actor, state.opponent) == (0, 3)  # the botch wiped the actor's tally
    state = rules.extended_resisted_step(state, b, a)
    assert state.winner == "opponent"
    with pytest.raises(ValueError):
        rules.extended_resisted_step(state, a, b)
    outcome = evaluate("3 6 ext 5 progress 4 vs 3 6 progress 1", [7, 7, 2, 2, 2, 2])
    assert outcome.contest is not None and outcome.contest.winner == "actor"


def test_teamwork_adds_successes_and_flags_botches() -> None:
    team = rules.teamwork(
        [rules.roll_pool([7, 8], 6), rules.roll_pool([6, 1, 9], 6), rules.roll_pool([1, 2], 6)]
    )
    assert team.total == 3 and team.botched and team.botches == (False, False, True)


def test_first_botch_free_pure_function() -> None:
    assert rules.first_botch_free(True, False) == (False, True)
    assert rules.first_botch_free(True, True) == (True, True)
    assert rules.first_botch_free(False, False) == (False, False)


def test_first_botch_free_per_player_through_settle() -> None:
    settings = RoomSettings(variant="revised", house_rules={"first_botch_free": True})
    store = MemoryStore()

    def settle(user: str) -> RevisedOutcome:
        outcome = evaluate("5 8", [1, 3, 4, 3, 7], settings)
        state = RoomState(store, "variant.revised", "test:r")
        context = RollContext(settings=settings, user=user, room="test:r", state=state)
        return asyncio.run(VARIANT.settle(outcome, context))

    first = settle("alice")
    assert first.outcome == "failure" and first.free_botch
    assert settle("alice").outcome == "botch"
    assert settle("bob").outcome == "failure"  # everyone gets one


def test_json_contract_keys() -> None:
    data = evaluate("5 8", [9, 1, 1, 8, 1]).as_json()
    assert data["variant"] == "revised"
    assert data["faces"] == [9, 1, 1, 8, 1]
    assert (data["successes"], data["outcome"], data["degree"]) == (0, "failure", None)
    assert (data["ones"], data["rolled_successes"]) == (3, 2)


def test_cli_parsed_values_build_the_same_request() -> None:
    parsed = Parsed(values={"pool": Pool.of(5), "difficulty": 8, "willpower": True})
    assert VARIANT.build(parsed, ROOM) == request("5 8 wp")


# --- properties -----------------------------------------------------------------------------------

faces_strategy = st.lists(st.integers(min_value=1, max_value=10), min_size=1, max_size=60)
difficulty_strategy = st.integers(min_value=2, max_value=10)


@given(faces_strategy, difficulty_strategy, st.booleans())
def test_net_successes_never_exceed_the_pool(faces, difficulty, willpower) -> None:
    roll = rules.roll_pool(faces, difficulty, willpower=willpower)
    assert 0 <= roll.net <= len(faces) + (1 if willpower else 0)
    if not willpower:
        assert roll.net <= len(faces)


@given(faces_strategy, difficulty_strategy)
def test_a_botch_has_no_success_die(faces, difficulty) -> None:
    roll = rules.roll_pool(faces, difficulty)
    if roll.botch:
        assert all(face < difficulty and face != 10 for face in faces)
        assert 1 in faces


@given(faces_strategy, difficulty_strategy, st.randoms(use_true_random=False))
def test_outcome_is_a_function_of_the_faces(faces, difficulty, rnd) -> None:
    first = evaluate(f"{len(faces)} {difficulty}", faces)
    again = evaluate(f"{len(faces)} {difficulty}", list(faces))
    assert first == again
    shuffled = list(faces)
    rnd.shuffle(shuffled)
    other = evaluate(f"{len(faces)} {difficulty}", shuffled)
    assert (other.outcome, other.successes) == (first.outcome, first.successes)


@given(faces_strategy, difficulty_strategy)
def test_counts_match_an_independent_model(faces, difficulty) -> None:
    successes = len([f for f in faces if f >= difficulty])  # 10 >= any difficulty in 2..10
    ones = faces.count(1) if difficulty > 1 else 0
    roll = rules.roll_pool(faces, difficulty)
    assert roll.net == max(0, successes - ones)
    assert roll.botch == (successes == 0 and ones > 0)
    assert len(roll.roles) == len(faces)
    assert roll.roles.count(Role.CANCELLED) == 2 * min(successes, ones)


def test_the_json_degree_is_a_simple_actions_or_a_resisted_winners_margin() -> None:
    assert evaluate("3 6", [7, 8, 9]).as_json()["degree"] == "Complete"
    giselle = evaluate("6 7 vs 7 6", [7, 8, 9, 10, 2, 3, 6, 7, 8, 2, 3, 4, 5]).as_json()
    assert giselle["degree"] == "Marginal"  # 4 against 3: only the 1 beyond counts (000)
    lost = evaluate("2 6 vs 7 6", [7, 8, 6, 7, 8, 9, 2, 3, 4]).as_json()
    assert lost["degree"] is None
    assert evaluate("3 6 ext 10", [7, 8, 9]).as_json()["degree"] is None
