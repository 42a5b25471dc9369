"""The ``d6`` rule set: the document's worked examples (read from docs/rules/d6.md), tricky cases,
and properties over arbitrary faces."""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coterie.dice.sources import FixedDice, SeededDice
from coterie.errors import UsageError
from coterie.framework.grammar import Parsed, Pool, parse, tokens
from coterie.framework.variant import RoomSettings
from coterie_d6 import rules
from coterie_d6.commands import combatant
from coterie_d6.requests import (
    ContestRequest,
    Difficulty,
    InitiativeRequest,
    RollRequest,
    TraitPool,
)
from coterie_d6.variant import (
    GRAMMAR,
    ContestOutcome,
    D6Variant,
    InitiativeOutcome,
    RollOutcome,
    SeesawOutcome,
)
from doc_tables import ints, table

VARIANT = D6Variant()
ROOM = RoomSettings(variant="d6")


def request(text: str, settings: RoomSettings = ROOM) -> RollRequest | ContestRequest:
    return VARIANT.build(parse(tokens(text), GRAMMAR), settings)


def roll(text: str, faces: Sequence[int], settings: RoomSettings = ROOM) -> RollOutcome:
    outcome = VARIANT.roll(request(text, settings), FixedDice(faces))
    assert isinstance(outcome, RollOutcome)
    return outcome


def contest(text: str, faces: Sequence[int]) -> ContestOutcome:
    outcome = VARIANT.roll(request(text), FixedDice(faces))
    assert isinstance(outcome, ContestOutcome)
    return outcome


def seesaw(text: str, faces: Sequence[int]) -> SeesawOutcome:
    outcome = VARIANT.roll(request(text), FixedDice(faces))
    assert isinstance(outcome, SeesawOutcome)
    return outcome


def sides(text: str) -> tuple[rules.Combatant, ...]:
    return tuple(combatant(part, n, 20) for n, part in enumerate(text.split(";"), start=1))


def initiative(text: str, faces: Sequence[int], max_rounds: int = 100) -> InitiativeOutcome:
    outcome = VARIANT.roll(InitiativeRequest(sides(text), max_rounds), FixedDice(faces))
    assert isinstance(outcome, InitiativeOutcome)
    return outcome


def cell(value: str) -> str | None:
    return None if value == "-" else value


# --- the document's worked examples ------------------------------------------------------------


@pytest.mark.parametrize("row", table("d6", "Single rolls"), ids=lambda r: r["example"])
def test_single_roll_examples(row: dict[str, str]) -> None:
    faces = ints(row["faces"])
    difficulty, need = int(row["difficulty"]), int(row["need"])
    counted = rules.roll_pool(faces, difficulty, required=need)
    assert counted.successes == int(row["successes"])
    assert counted.outcome == row["outcome"]
    assert counted.quality == cell(row["quality"])
    # the same through the variant (what chat and the CLI use)
    outcome = roll(f"{row['pool']} {difficulty} need {need}", faces)
    assert outcome.faces == tuple(faces)
    assert (outcome.successes, outcome.outcome, outcome.degree) == (
        int(row["successes"]),
        row["outcome"],
        cell(row["quality"]),
    )


@pytest.mark.parametrize("row", table("d6", "Quality"), ids=lambda r: r["successes"])
def test_quality_table(row: dict[str, str]) -> None:
    successes = int(row["successes"])
    assert rules.quality(successes) == cell(row["quality"])
    if successes:  # the same word for a roll with that many successes
        assert roll(f"{successes} 4", [6] * successes).degree == row["quality"]


@pytest.mark.parametrize("row", table("d6", "Difficulties"), ids=lambda r: r["asked"])
def test_difficulty_examples(row: dict[str, str]) -> None:
    asked, used = int(row["asked"]), int(row["rolled against"])
    assert rules.effective_difficulty(asked) == used
    assert rules.DIFFICULTY_LABELS[used] == row["label"]
    outcome = roll(f"6 {asked}", [1, 2, 3, 4, 5, 6])
    assert outcome.request.difficulty.value == used
    assert outcome.successes == 7 - used
    assert outcome.as_json()["asked_difficulty"] == asked
    assert (asked > used) == outcome.request.difficulty.capped


@pytest.mark.parametrize("row", table("d6", "Contests"), ids=lambda r: r["example"])
def test_contest_examples(row: dict[str, str]) -> None:
    attacker, defender = ints(row["attacker"]), ints(row["defender"])
    one = rules.contest_round(attacker, defender, int(row["difficulty"]))
    assert one.attacker.successes == int(row["attacker successes"])
    assert one.defender.successes == int(row["defender successes"])
    assert (one.winner, one.net) == (row["winner"], int(row["net"]))
    outcome = contest(
        f"{len(attacker)} {row['difficulty']} vs {len(defender)}", attacker + defender
    )
    assert len(outcome.contest.rounds) == 1
    assert (outcome.contest.winner, outcome.contest.net) == (row["winner"], int(row["net"]))
    attacker_won = row["winner"] == "attacker"
    assert outcome.outcome == ("success" if attacker_won else "failure")
    assert outcome.successes == (int(row["net"]) if attacker_won else 0)


@pytest.mark.parametrize("row", table("d6", "Seesaw contests"), ids=lambda r: r["example"])
def test_seesaw_examples(row: dict[str, str]) -> None:
    state = rules.Seesaw(int(row["target"]))
    balances = []
    for turn in row["turns"].split():
        mine, theirs = (int(part) for part in turn.split("-"))
        state = rules.seesaw_step(state, mine, theirs)
        balances.append(state.balance)
    assert balances == ints(row["balance"])
    assert state.winner == cell(row["winner"])
    assert state.turns == len(balances)


@pytest.mark.parametrize("row", table("d6", "Initiative"), ids=lambda r: r["example"])
def test_initiative_examples(row: dict[str, str]) -> None:
    faces = [] if row["roll-off"] == "-" else ints(row["roll-off"])
    outcome = initiative(row["sides"], faces)
    order = outcome.initiative.order
    assert [c.name for c in order] == row["order"].split()
    decided = rules.deciding_trait(order[0], order[1]) or "roll-off"
    assert decided == row["decided by"]
    assert outcome.faces == tuple(faces)
    assert VARIANT.dice_count(outcome.request) == len(faces)


# --- tricky cases: single rolls -----------------------------------------------------------------


def test_a_die_equal_to_the_difficulty_succeeds_and_ones_do_nothing() -> None:
    assert rules.roll_pool([4, 3], 4).successes == 1
    ones = roll("3 4", [1, 1, 1])
    assert (ones.outcome, ones.successes, ones.degree) == ("failure", 0, None)
    assert roll("3 2", [1, 2, 1]).successes == 1


def test_difficulty_above_six_is_rolled_as_six() -> None:
    for asked in (7, 9, 999_999):
        outcome = roll(f"3 {asked}", [5, 6, 6])
        assert outcome.successes == 2 and outcome.request.difficulty == Difficulty(asked)
        data = outcome.as_json()
        assert (data["difficulty"], data["asked_difficulty"]) == (6, asked)
    assert not Difficulty(6).capped and Difficulty(7).capped


def test_default_difficulty_and_room_default() -> None:
    assert request("3").difficulty == Difficulty(4)
    room = RoomSettings(variant="d6", default_difficulty=5)
    assert request("3", room).difficulty == Difficulty(5)
    assert request("3 vs 2", room).difficulty == Difficulty(5)
    # a default meant for another rule set (a d10 room switched to d6) is not used
    stale = RoomSettings(variant="d6", default_difficulty=8)
    assert request("3", stale).difficulty == Difficulty(rules.DEFAULT_DIFFICULTY)
    assert request("3 vs 2", stale).difficulty == Difficulty(rules.CONTEST_DIFFICULTY)


def test_named_trait_and_keyword_difficulty() -> None:
    built = request("social 4 diff 5")
    assert built == RollRequest(TraitPool(4, "social"), Difficulty(5))
    assert isinstance(built, RollRequest) and str(built.pool) == "Social 4"
    assert request("psychic 2 diff=3") == RollRequest(TraitPool(2, "psychic"), Difficulty(3))
    assert request("2 diff6") == RollRequest(TraitPool(2), Difficulty(6))


def test_required_successes() -> None:
    outcome = roll("4 4 need 3", [4, 5, 6, 1])
    assert (outcome.outcome, outcome.successes, outcome.degree) == ("success", 3, "Great")
    short = roll("4 4 need 3", [4, 5, 1, 1])
    assert (short.outcome, short.successes, short.degree) == ("failure", 2, None)
    assert short.as_json()["required"] == 3
    with pytest.raises(ValueError):
        rules.roll_pool([6], 4, required=0)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("3 1", "at least 2 (Easy), not 1"),
        ("3 0", "at least 2 (Easy), not 0"),
        ("3 diff 1", "at least 2"),
        ("3+2", "`3+2` adds 2 Traits; a d6 roll uses one Trait"),
        ("social 3+1", "adds 2 Traits"),
        ("4-1", "take no dice away from a Trait"),
        ("0", "a Trait of 0 rolls no dice"),
        ("2-2", "take no dice away"),
        ("2 need 3", "`need 3` can never be met with 2 dice"),
        ("2 need 0", "`need` must be at least 1, not 0"),
        ("3 4 5", "I don't know what `5` is for"),
        ("3 4 diff 5", "`diff` is given twice"),
        ("physical 4 mental 3", "a d6 pool is one Trait: `mental` can't be added"),
        ("3 wp", "unknown option `wp`"),
        ("3 to 3", "`to N` sets the goal of a seesaw contest"),
        ("3 need 2 vs 2", "`need N` is for a single roll"),
        ("3 vs 2 need 2", "`need N` is for a single roll"),
        ("3 4 vs 2 5", "both sides share the difficulty: give it once (I read 4 and 5)"),
        ("3 diff 4 vs 2 diff 6", "I read 4 and 6"),
        ("3 to 2 vs 2 to 3", "both sides share the seesaw goal"),
        ("3 vs 2 to 21", "`to` must be between 1 and 20, not 21"),
        ("3 vs 2 to 0", "`to` must be between 1 and 20"),
        ("3 vs 0", "the defender's Trait of 0 rolls no dice"),
        ("0 vs 3", "the attacker's Trait of 0 rolls no dice"),
        ("3 vs 2+1", "adds 2 Traits"),
        ("3 vs", "`vs` needs the other side"),
        ("3 vs 1 1", "at least 2 (Easy), not 1"),
    ],
)
def test_errors(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=re.escape(message)):
        request(text)


def test_cli_parsed_values_build_the_same_request() -> None:
    parsed = Parsed(values={"pool": Pool.of(5), "difficulty": 8})
    assert VARIANT.build(parsed, ROOM) == request("5 8")
    with pytest.raises(UsageError, match="a Trait of -2 rolls no dice"):
        VARIANT.build(Parsed(values={"pool": Pool.of(-2)}), ROOM)
    with pytest.raises(UsageError, match="a Trait to roll is missing"):
        VARIANT.build(Parsed(values={}), ROOM)


def test_json_contract_keys() -> None:
    data = roll("social 2 4", [1, 5]).as_json()
    assert data == {
        "variant": "d6",
        "faces": [1, 5],
        "successes": 1,
        "outcome": "success",
        "degree": "It'll do",
        "pool": 2,
        "trait": "social",
        "difficulty": 4,
        "asked_difficulty": 4,
        "required": 1,
    }


def test_evaluate_checks_the_faces() -> None:
    built = request("3 4")
    assert VARIANT.evaluate(built, [4, 5, 6]).successes == 3
    with pytest.raises(UsageError, match="a d6 cannot show 7"):
        VARIANT.evaluate(built, [7, 1, 1])
    with pytest.raises(UsageError, match="cannot show 0"):
        VARIANT.evaluate(built, [0, 1, 1])
    with pytest.raises(UsageError, match="needs at least 3 dice, but 2 face"):
        VARIANT.evaluate(built, [4, 5])
    with pytest.raises(UsageError, match="used 3 dice, but 4 face"):
        VARIANT.evaluate(built, [4, 5, 6, 6])


# --- tricky cases: contests ---------------------------------------------------------------------


def test_a_tie_is_rolled_again_until_it_is_broken() -> None:
    # round 1: 1 each; round 2: none each (still a tie); round 3: the defender wins
    faces = [4, 1] + [5, 2] + [1, 2] + [3, 3] + [6, 1] + [4, 5]
    outcome = contest("2 vs 2", faces)
    assert [r.winner for r in outcome.contest.rounds] == [None, None, "defender"]
    assert outcome.faces == tuple(faces)
    assert (outcome.contest.winner, outcome.contest.net) == ("defender", -1)
    assert (outcome.outcome, outcome.successes, outcome.degree) == ("failure", 0, None)
    assert VARIANT.dice_count(outcome.request) == 4


def test_contest_net_and_quality_for_the_attacker() -> None:
    outcome = contest("5 vs 2", [4, 5, 6, 6, 1, 4, 2])
    assert (outcome.contest.winner, outcome.contest.net) == ("attacker", 3)
    assert (outcome.outcome, outcome.successes, outcome.degree) == ("success", 3, "Great")


def test_contest_at_a_capped_difficulty_and_shared_difficulty_spellings() -> None:
    expected = ContestRequest(TraitPool(2), TraitPool(1), Difficulty(9))
    for text in ("2 9 vs 1", "2 vs 1 9", "2 vs 1 diff 9", "2 diff 9 vs 1 9", "2 9 vs 1 diff 9"):
        assert request(text) == expected, text
    outcome = contest("2 9 vs 1", [6, 5, 5])
    assert outcome.contest.net == 1
    assert outcome.as_json()["difficulty"] == 6


def test_contest_round_limit() -> None:
    built = ContestRequest(TraitPool(1), TraitPool(1), Difficulty(4), max_rounds=3)
    outcome = VARIANT.roll(built, FixedDice([4, 4, 1, 1, 6, 5]))
    assert isinstance(outcome, ContestOutcome)
    assert len(outcome.contest.rounds) == 3 and outcome.contest.winner is None
    assert outcome.outcome == "failure" and outcome.as_json()["contest"]["winner"] is None
    with pytest.raises(ValueError):
        rules.play_contest(1, 1, 4, lambda n: [6] * n, max_rounds=0)


def test_contest_replay_needs_every_round() -> None:
    built = request("1 vs 1")
    with pytest.raises(UsageError, match="needs at least 3 dice, but 2 face"):
        VARIANT.evaluate(built, [3, 3])  # a tie: the replay must go on
    with pytest.raises(UsageError, match="used 2 dice, but 4 face"):
        VARIANT.evaluate(built, [5, 3, 6, 6])  # decided in round 1


def test_contest_json() -> None:
    data = contest("social 2 vs 1", [4, 1, 3]).as_json()
    assert data["faces"] == [4, 1, 3]
    assert data["contest"] == {
        "attacker": 2,
        "defender": 1,
        "rounds": [
            {
                "attacker": {"faces": [4, 1], "successes": 1},
                "defender": {"faces": [3], "successes": 0},
            },
        ],
        "winner": "attacker",
        "net": 1,
    }
    assert data["successes"] == 1 and data["degree"] == "It'll do"
    tie = contest("1 vs 1", [3, 3, 6, 2]).as_json()
    assert len(tie["contest"]["rounds"]) == 2


# --- tricky cases: seesaw contests --------------------------------------------------------------


def test_seesaw_cancels_stored_successes_before_storing_new_ones() -> None:
    state = rules.seesaw_step(rules.Seesaw(3), 2, 1)
    assert (state.balance, state.leader, state.lead) == (1, "attacker", 1)
    state = rules.seesaw_step(state, 0, 2)
    assert (state.balance, state.leader, state.lead) == (-1, "defender", 1)
    state = rules.seesaw_step(state, 1, 1)  # a tied turn moves nothing
    assert (state.balance, state.turns, state.winner) == (-1, 3, None)
    state = rules.seesaw_step(state, 0, 3)
    assert (state.balance, state.winner) == (-4, "defender")
    with pytest.raises(ValueError, match="already won"):
        rules.seesaw_step(state, 1, 0)
    assert rules.Seesaw(2, balance=0).leader is None


def test_seesaw_played_in_one_message() -> None:
    # turn 1: 2-1 (balance 1); turn 2: 0-2 (balance -1); turn 3: 3-0 (balance 2): the attacker wins
    faces = [5, 6, 1] + [4, 2, 2] + [1, 2, 3] + [5, 6, 3] + [4, 5, 6] + [1, 1, 1]
    outcome = seesaw("3 vs 3 to 2", faces)
    assert [s.balance for s in outcome.seesaw.states] == [1, -1, 2]
    assert outcome.seesaw.final.winner == "attacker"
    assert (outcome.outcome, outcome.successes, outcome.degree) == ("success", 2, None)
    data = outcome.as_json()["seesaw"]
    assert (data["target"], data["balance"], data["winner"], len(data["turns"])) == (
        2,
        2,
        "attacker",
        3,
    )
    lost = seesaw("1 vs 1 to 1", [1, 6])
    assert (lost.outcome, lost.successes, lost.seesaw.final.winner) == ("failure", 0, "defender")


def test_seesaw_turn_limit_and_bad_target() -> None:
    built = ContestRequest(TraitPool(1), TraitPool(1), Difficulty(4), target=2, max_rounds=2)
    outcome = VARIANT.roll(built, FixedDice([5, 1, 1, 1]))
    assert isinstance(outcome, SeesawOutcome)
    assert outcome.seesaw.final.winner is None and outcome.seesaw.final.balance == 1
    assert outcome.outcome == "failure" and outcome.successes == 1
    with pytest.raises(ValueError):
        rules.play_seesaw(1, 1, 4, 0, lambda n: [6] * n)


# --- tricky cases: initiative -------------------------------------------------------------------


def test_each_comparison_in_its_order() -> None:
    def first(text: str) -> tuple[str, str | None]:
        order = initiative(text, []).initiative.order
        return order[0].name, rules.deciding_trait(order[0], order[1])

    # Hunter's Instinct beats everything after it
    assert first("A: P1 M1 hunter; B: P9 M9 advanced") == ("A", "Hunter's Instinct")
    # then Advanced Celerity beats Basic Celerity
    assert first("A: P1 M1 celerity; B: P1 M1 advanced") == ("B", "Advanced Celerity")
    # Basic Celerity beats none, whatever the Traits
    assert first("A: P9 M9; B: P1 M1 cel") == ("B", "Basic Celerity")
    # then Physical beats Mental
    assert first("A: P3 M9; B: P4 M1") == ("B", "Physical")
    assert first("A: P4 M2; B: P4 M3") == ("B", "Mental")


def test_advanced_celerity_counts_as_basic_too() -> None:
    jack = rules.Combatant("Jack", 3, 3, advanced_celerity=True)
    assert jack.celerity and rules.initiative_key(jack) == (0, 1, 1, 3, 3)


def test_three_way_roll_off_with_a_second_tie() -> None:
    # all three tie on every comparison; A and C tie on the die (5) and roll again
    outcome = initiative("A: 2 2; B: 2 2; C: 2 2", [5, 3, 5, 2, 6])
    result = outcome.initiative
    assert [c.name for c in result.order] == ["C", "A", "B"]
    assert [[c.name for c in r.combatants] for r in result.rolloffs] == [
        ["A", "B", "C"],
        ["A", "C"],
    ]
    assert outcome.faces == (5, 3, 5, 2, 6)
    assert VARIANT.dice_count(outcome.request) == 3


def test_only_tied_groups_roll_and_the_order_keeps_the_groups() -> None:
    outcome = initiative("A: 2 2; B: 5 1; C: 2 2; D: 5 1 hunter", [1, 4])
    assert [c.name for c in outcome.initiative.order] == ["D", "B", "C", "A"]
    assert len(outcome.initiative.rolloffs) == 1


def test_no_tie_needs_no_dice() -> None:
    outcome = initiative("A: 3 3; B: 2 2", [])
    assert outcome.faces == () and outcome.outcome == "resolved"
    assert VARIANT.dice_count(outcome.request) == 0


def test_roll_off_limit() -> None:
    outcome = initiative("A: 1 1; B: 1 1; C: 4 4", [3, 3, 2, 2], max_rounds=2)
    result = outcome.initiative
    assert [c.name for c in result.order] == ["C", "A", "B"]
    assert [[c.name for c in group] for group in result.unresolved] == [["A", "B"]]
    assert outcome.outcome == "unresolved"
    assert outcome.as_json()["initiative"]["unresolved"] == [["A", "B"]]


def test_extra_actions_follow_the_same_order() -> None:
    outcome = initiative("A: 1 1 cel; B: 2 2; C: 3 3 advanced", [])
    assert [c.name for c in outcome.initiative.order] == ["C", "A", "B"]
    assert [c.name for c in outcome.initiative.extra_actions] == ["C", "A"]
    assert outcome.as_json()["initiative"]["extra_actions"] == ["C", "A"]


def test_initiative_json() -> None:
    data = initiative("Jack: P4 M3 hunter; Sabbat: P4 M3 hunter", [2, 5]).as_json()
    assert data["faces"] == [2, 5]
    assert (data["outcome"], data["successes"], data["degree"]) == ("resolved", 0, None)
    assert data["initiative"]["order"] == ["Sabbat", "Jack"]
    assert data["initiative"]["rolloffs"] == [{"names": ["Jack", "Sabbat"], "faces": [2, 5]}]


def test_side_parsing() -> None:
    expected = rules.Combatant("Devil Jack", 4, 3, hunters_instinct=True)
    for text in (
        "Devil Jack: P4 M3 hunter",
        " Devil   Jack :physical 4 mental 3 instinct",
        "Devil Jack: p=4 m=3 hunters",
        "Devil Jack: 4 3 hunter",
        "Devil Jack: M3 P4 hunter",
        "Devil Jack: physical4 mental3 HUNTER",
    ):
        assert combatant(text, 1, 20) == expected, text
    assert combatant("P2 M1 adv", 2, 20) == rules.Combatant("#2", 2, 1, advanced_celerity=True)
    assert combatant("x: 0 0 basic", 1, 20) == rules.Combatant("x", 0, 0, basic_celerity=True)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (": P4 M3", "side 1 has a `:` with no name before it"),
        ("Jack:", "Jack needs Physical and Mental, e.g. `Jack: P4 M3`"),
        ("Jack: P4", "Jack needs a Mental rating too"),
        ("Jack: M4", "Jack needs a Physical rating too"),
        ("Jack: hunter", "Jack needs a Physical and Mental rating too"),
        ("Jack: P4 M3 5", "I don't know what `5` is for (I read physical 4, mental 3)"),
        ("Jack: P4 P3 M3", "`physical` is given twice"),
        ("Jack: 4 P3 M3", "`physical` is given twice"),
        ("Jack: P4 M3 hunter hunter", "`hunter` is given twice"),
        ("Jack: P4 M3 huntr", "unknown option `huntr`. Did you mean `hunter`?"),
        ("Jack P4 M3", "unknown option `Jack`"),
        ("Jack: P4 M-1", "unknown option `M-1`"),
        ("x" * 33 + ": P4 M3", "can't be a name: at most 32 plain characters"),
        ("Ja`ck: P4 M3", "can't be a name"),
    ],
)
def test_side_errors(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=re.escape(message)):
        combatant(text, 1, 20)


def test_a_name_without_colon_gets_a_hint() -> None:
    with pytest.raises(UsageError) as caught:
        combatant("Jack P4 M3", 1, 20)
    assert caught.value.hint is not None and "before a colon" in caught.value.hint
    with pytest.raises(UsageError) as caught:
        combatant("Jack: P4 M3 huntr", 1, 20)
    assert caught.value.hint is None


def test_duplicate_names_are_refused_by_the_rules() -> None:
    with pytest.raises(ValueError, match="distinct name"):
        rules.play_initiative(sides("A: 1 1; A: 2 2"), lambda n: [6] * n)


# --- properties -----------------------------------------------------------------------------------

faces_strategy = st.lists(st.integers(min_value=1, max_value=6), min_size=1, max_size=40)
difficulty_strategy = st.integers(min_value=2, max_value=12)


@given(faces_strategy, difficulty_strategy, st.integers(min_value=1, max_value=40))
def test_counts_match_an_independent_model(faces: list[int], asked: int, need: int) -> None:
    need = min(need, len(faces))
    used = min(asked, 6)
    outcome = roll(f"{len(faces)} {asked} need {need}", faces)
    successes = len([face for face in faces if face >= used])
    assert outcome.successes == successes
    assert outcome.outcome == ("success" if successes >= need else "failure")
    if outcome.outcome == "success":
        assert outcome.degree == rules.QUALITIES[min(successes, 4) - 1]
    else:
        assert outcome.degree is None


@given(faces_strategy, st.integers(min_value=7, max_value=999_999))
def test_any_difficulty_above_six_counts_as_six(faces: list[int], asked: int) -> None:
    high = roll(f"{len(faces)} {asked}", faces)
    six = roll(f"{len(faces)} 6", faces)
    assert (high.successes, high.outcome, high.degree) == (six.successes, six.outcome, six.degree)


@given(faces_strategy, difficulty_strategy, st.randoms(use_true_random=False))
def test_the_order_of_the_faces_does_not_matter(
    faces: list[int], asked: int, rnd: random.Random
) -> None:
    first = roll(f"{len(faces)} {asked}", faces)
    shuffled = list(faces)
    rnd.shuffle(shuffled)
    other = roll(f"{len(faces)} {asked}", shuffled)
    assert (other.outcome, other.successes, other.degree) == (
        first.outcome,
        first.successes,
        first.degree,
    )


@given(
    st.integers(min_value=1, max_value=6),
    st.integers(min_value=1, max_value=6),
    st.integers(min_value=2, max_value=8),
    st.integers(min_value=0, max_value=2**32),
)
def test_contest_rounds_are_ties_until_the_last(
    attacker: int, defender: int, asked: int, seed: int
) -> None:
    built = request(f"{attacker} {asked} vs {defender}")
    outcome = VARIANT.roll(built, SeededDice(seed))
    assert isinstance(outcome, ContestOutcome)
    rounds = outcome.contest.rounds
    assert all(r.winner is None for r in rounds[:-1])
    assert rounds[-1].winner is not None  # 100 ties in a row would take a miracle
    for r in rounds:
        assert len(r.attacker.faces) == attacker and len(r.defender.faces) == defender
        assert r.net == r.attacker.successes - r.defender.successes
    # the faces replay to the same outcome
    assert VARIANT.evaluate(built, outcome.faces) == outcome


@given(
    st.integers(min_value=1, max_value=4),
    st.integers(min_value=1, max_value=4),
    st.integers(min_value=1, max_value=5),
    st.integers(min_value=0, max_value=2**32),
)
def test_seesaw_balance_is_the_sum_of_the_nets(
    attacker: int, defender: int, target: int, seed: int
) -> None:
    built = request(f"{attacker} vs {defender} to {target}")
    outcome = VARIANT.roll(built, SeededDice(seed))
    assert isinstance(outcome, SeesawOutcome)
    played = outcome.seesaw
    running = 0
    assert played.final.winner is not None or len(played.rounds) == rules.MAX_ROUNDS
    for turn, state in zip(played.rounds, played.states, strict=True):
        running += turn.net
        assert state.balance == running
    # nobody had won before the last turn
    assert all(abs(state.balance) < target for state in played.states[:-1])
    if played.final.winner is not None:
        assert abs(played.final.balance) >= target
    assert VARIANT.evaluate(built, outcome.faces) == outcome


combatants_strategy = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=3),
        st.integers(min_value=0, max_value=3),
        st.booleans(),
        st.booleans(),
        st.booleans(),
    ),
    min_size=2,
    max_size=8,
)


@given(combatants_strategy, st.integers(min_value=0, max_value=2**32))
def test_initiative_order_respects_every_comparison(
    specs: list[tuple[int, int, bool, bool, bool]], seed: int
) -> None:
    people = tuple(
        rules.Combatant(f"c{i}", p, m, hunters_instinct=h, advanced_celerity=a, basic_celerity=b)
        for i, (p, m, h, a, b) in enumerate(specs)
    )
    built = InitiativeRequest(people)
    outcome = VARIANT.roll(built, SeededDice(seed))
    assert isinstance(outcome, InitiativeOutcome)
    order = outcome.initiative.order
    assert sorted(c.name for c in order) == sorted(c.name for c in people)
    keys = [rules.initiative_key(c) for c in order]
    assert keys == sorted(keys, reverse=True)
    assert not outcome.initiative.unresolved
    # every roll-off's highest face goes before everyone else in it
    position = {c.name: i for i, c in enumerate(order)}
    for rolloff in outcome.initiative.rolloffs:
        top = max(rolloff.faces)
        winners = [c for c, f in zip(rolloff.combatants, rolloff.faces, strict=True) if f == top]
        losers = [c for c, f in zip(rolloff.combatants, rolloff.faces, strict=True) if f < top]
        assert all(position[w.name] < position[lo.name] for w in winners for lo in losers)
    assert VARIANT.evaluate(built, outcome.faces) == outcome
