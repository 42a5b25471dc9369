"""The ``d6`` rule set through the chat path (``Coterie.handle``), the console and the CLI."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import RecordingDice, without_roll_id
from coterie import hookimpl
from coterie.dice.sources import DiceSource, FixedDice
from coterie.framework.app import Coterie
from coterie.framework.config import Config
from coterie.framework.message import Message
from coterie.framework.plugins import PluginHost
from coterie.framework.variant import Outcome, Variant
from coterie.ops.cli import main
from coterie.render.elements import Die, Reply, Role, walk
from coterie.render.encode import to_markdown, to_plain
from coterie_d6.variant import ContestOutcome, InitiativeOutcome


def app_with(
    faces: list[int] | None = None, *, dice: DiceSource | None = None, **config: Any
) -> Coterie:
    config.setdefault("plugins", {"enable": ["revised", "d6"]})
    config.setdefault("defaults", {"variant": "d6"})
    return Coterie(Config.model_validate(config), dice=dice or FixedDice(faces or []))


async def send(app: Coterie, text: str, user: str = "maxine") -> Reply:
    reply = await app.handle(Message(platform="test", room="r", user=user, text=text))
    assert reply is not None
    return without_roll_id(reply)


async def say(app: Coterie, text: str) -> list[str]:
    return to_plain((await send(app, text)).body).splitlines()


# --- !roll ----------------------------------------------------------------------------------------


async def test_roll_reply_shows_trait_faces_and_quality() -> None:
    reply = await send(app_with([1, 5]), "!roll social 2 # my alibi")
    assert to_plain(reply.body).splitlines() == [
        "maxine — my alibi",
        "Social 2: 2 dice, difficulty 4 (Normal): 1 5",
        "1 success — It'll do",
    ]
    dice = [node for node in walk(reply.body) if isinstance(node, Die)]
    assert [(d.face, d.role, d.sides) for d in dice] == [(1, Role.FAILURE, 6), (5, Role.SUCCESS, 6)]
    assert reply.meta["variant"] == "d6"
    assert "**5**" in to_markdown(reply.body)


async def test_difficulty_above_six_is_lowered_and_the_reply_says_so() -> None:
    assert await say(app_with([6, 5, 6]), "!roll 3 9") == [
        "maxine",
        "3 dice, difficulty 6 (Really tough; 9 lowered to 6, the highest difficulty): 6 5 6",
        "2 successes — Good",
    ]
    lines = await say(app_with([6, 5, 6]), "!roll 3 diff 7")
    assert "7 lowered to 6" in lines[1]


async def test_required_successes_reply() -> None:
    assert await say(app_with([1, 5]), "!roll 2 need 2") == [
        "maxine",
        "2 dice, difficulty 4 (Normal), 2 successes needed: 1 5",
        "Failure — 1 success, 2 needed",
    ]
    lines = await say(app_with([4, 6, 4]), "!roll 3 need 2")
    assert lines[-1] == "3 successes — Great (2 needed)"
    assert (await say(app_with([1, 2, 3]), "!roll 3"))[-1] == "Failure — no success"


async def test_several_rolls_in_one_message() -> None:
    lines = await say(app_with([6, 6, 6, 6, 1]), "!roll 4; 1")
    assert lines == [
        "maxine",
        "4 dice, difficulty 4 (Normal): 6 6 6 6",
        "4 successes — Masterful",
        "1 die, difficulty 4 (Normal): 1",
        "Failure — no success",
    ]


# --- contests -------------------------------------------------------------------------------------


async def test_contest_rolls_ties_again_and_shows_every_round() -> None:
    faces = [4, 1] + [5, 2] + [1, 2] + [3, 3] + [6, 5] + [4, 1]
    assert await say(app_with(faces), "!contest 2 vs 2 # arm in arm") == [
        "maxine — arm in arm",
        "Contest, difficulty 4 (Normal): attacker 2 dice vs defender 2 dice",
        "Round 1: attacker 4 1 (1) vs defender 5 2 (1) — a tie, roll again",
        "Round 2: attacker 1 2 (0) vs defender 3 3 (0) — a tie, roll again",
        "Round 3: attacker 6 5 (2) vs defender 4 1 (1)",
        "Attacker wins: 2 − 1 = 1 success left (It'll do)",
    ]


async def test_contest_document_example_one_defender_wins() -> None:
    lines = await say(app_with([1, 3, 4, 6, 2, 5, 6, 6]), "!contest social 4 vs social 4")
    assert lines[1:] == [
        "Contest, difficulty 4 (Normal): attacker Social 4 vs defender Social 4",
        "Round 1: attacker 1 3 4 6 (2) vs defender 2 5 6 6 (3)",
        "Defender wins: 3 − 2 = 1 success to spare",
    ]


async def test_contest_difficulty_spellings_and_roll_vs() -> None:
    for text in ("!contest 1 vs 1 diff 9", "!contest 1 9 vs 1", "!roll 1 vs 1 9"):
        lines = await say(app_with([6, 5]), text)
        assert lines[1].startswith("Contest, difficulty 6 (Really tough; 9 lowered to 6"), text
        assert lines[-1] == "Attacker wins: 1 − 0 = 1 success left (It'll do)", text


async def test_several_contests_in_one_message() -> None:
    lines = await say(app_with([6, 1, 1, 6]), "!contest 1 vs 1; 1 vs 1")
    assert lines.count("Contest, difficulty 4 (Normal): attacker 1 die vs defender 1 die") == 2
    assert lines[-1] == "Defender wins: 1 − 0 = 1 success to spare"


async def test_seesaw_contest_in_one_message() -> None:
    faces = [5, 6, 1, 4, 2, 2] + [1, 2, 3, 5, 6, 3] + [4, 5, 6, 1, 1, 1]
    assert await say(app_with(faces), "!contest physical 3 vs physical 3 to 2") == [
        "maxine",
        "Seesaw contest to 2 ahead, difficulty 4 (Normal): "
        "attacker Physical 3 vs defender Physical 3",
        "Turn 1: attacker 5 6 1 (2) vs defender 4 2 2 (1) → attacker 1 ahead",
        "Turn 2: attacker 1 2 3 (0) vs defender 5 6 3 (2) → defender 1 ahead",
        "Turn 3: attacker 4 5 6 (3) vs defender 1 1 1 (0) → attacker 2 ahead",
        "Attacker wins after 3 turns, 2 ahead",
    ]
    lines = await say(app_with([4, 4, 6, 1]), "!roll 1 vs 1 to 1")
    assert lines[1:] == [
        "Seesaw contest to 1 ahead, difficulty 4 (Normal): attacker 1 die vs defender 1 die",
        "Turn 1: attacker 4 (1) vs defender 4 (1) → level",
        "Turn 2: attacker 6 (1) vs defender 1 (0) → attacker 1 ahead",
        "Attacker wins after 2 turns, 1 ahead",
    ]


async def test_contest_outcomes_reach_the_after_roll_hook() -> None:
    seen: list[Outcome] = []

    class Listener:
        @hookimpl
        async def coterie_after_roll(self, variant: Variant[Any, Any], outcome: Outcome) -> None:
            seen.append(outcome)

    host = PluginHost()
    host.load(["d6"])
    host.register(Listener(), "listener")
    config = Config.model_validate({"defaults": {"variant": "d6"}})
    app = Coterie(config, host=host, dice=FixedDice([3, 3, 6, 1, 2, 5]))
    await send(app, "!contest 1 vs 1")
    await send(app, "!initiative A: 1 1; B: 1 1")
    assert isinstance(seen[0], ContestOutcome) and seen[0].faces == (3, 3, 6, 1)
    assert isinstance(seen[1], InitiativeOutcome) and seen[1].faces == (2, 5)


# --- initiative -----------------------------------------------------------------------------------


async def test_initiative_document_example() -> None:
    lines = await say(app_with([]), "!initiative Jack: P4 M3 hunter; Sabbat: P4 M1 hunter")
    assert lines == [
        "maxine",
        "Initiative",
        "1. Jack (Hunter's Instinct, Physical 4, Mental 3)",
        "2. Sabbat (Hunter's Instinct, Physical 4, Mental 1) — after Jack, by Mental 3 vs 1",
    ]


async def test_initiative_roll_off_until_the_tie_is_broken() -> None:
    lines = await say(app_with([4, 4, 2, 5]), "!init Jack: P4 M3 hunter; Sabbat: 4 3 hunter")
    assert lines[1:] == [
        "Initiative",
        "1. Sabbat (Hunter's Instinct, Physical 4, Mental 3)",
        "2. Jack (Hunter's Instinct, Physical 4, Mental 3) — after Sabbat, by a roll-off",
        "Roll-off: Jack 4, Sabbat 4",
        "Roll-off: Jack 2, Sabbat 5",
    ]


async def test_initiative_with_celerity_and_unnamed_sides() -> None:
    lines = await say(app_with([]), "!initiative P2 M2 celerity; P1 M1 advanced; Ghoul: P5 M5")
    assert lines[1:] == [
        "Initiative",
        "1. #2 (Advanced Celerity, Physical 1, Mental 1)",
        "2. #1 (Basic Celerity, Physical 2, Mental 2) — after #2, by Advanced Celerity",
        "3. Ghoul (Physical 5, Mental 5) — after #1, by Basic Celerity",
        "Extra actions from Celerity, after everyone's first action: #2 ×2, #1 ×1",
    ]


# --- errors: every message, and nothing rolled ----------------------------------------------------

ROLL = "Usage: !roll POOL [DIFFICULTY] [need N] [vs POOL [to N]] [# comment]"
CONTEST = "Usage: !contest POOL [DIFFICULTY] vs POOL [to N] [# comment]"
INITIATIVE = (
    "Usage: !initiative NAME: P4 M3 [hunter] [celerity | advanced]; NAME: P4 M1 ... [# comment]"
)


@pytest.mark.parametrize(
    ("text", "message", "usage"),
    [
        ("!roll", "what should I roll? Give at least a dice pool.", ROLL),
        ("!roll 3 1", "the difficulty must be at least 2 (Easy), not 1", ROLL),
        ("!roll 3+2", "`3+2` adds 2 Traits; a d6 roll uses one Trait", ROLL),
        ("!roll 4-1", "`4-1`: the d6 rules take no dice away from a Trait", ROLL),
        ("!roll 0", "a Trait of 0 rolls no dice; it needs at least 1", ROLL),
        ("!roll 2 need 3", "`need 3` can never be met with 2 dice", ROLL),
        ("!roll 3 to 2", "`to N` sets the goal of a seesaw contest", ROLL),
        ("!roll 3 vs 2 need 2", "`need N` is for a single roll", ROLL),
        ("!roll 3 4 vs 2 5", "both sides share the difficulty: give it once", ROLL),
        ("!roll 101", "that is 101 dice; a roll may have at most 100", ROLL),
        ("!roll 3; 0", "a Trait of 0 rolls no dice", ROLL),
        ("!roll 3 wp", "unknown option `wp`", ROLL),
        ("!contest", "who contests whom? Give both sides, e.g. `!contest 4 vs 2`", CONTEST),
        ("!contest 4 2", "a contest needs the other side after `vs`", CONTEST),
        ("!contest 4 2", "(I read `2` as the difficulty)", CONTEST),
        (
            "!contest 4",
            "a contest needs the other side after `vs`, e.g. `!contest 4 vs 2`",
            CONTEST,
        ),
        ("!contest 4 vs 2; ", "one of the parts between `;` is empty", CONTEST),
        ("!contest 4 vs 2 need 2", "`need N` is for a single roll", CONTEST),
        ("!contest 4 need 2 vs 2", "`need N` is for a single roll", CONTEST),
        ("!contest 4 vs 2 to 21", "`to` must be between 1 and 20, not 21", "Usage: !contest"),
        ("!contest 60 vs 60", "that is 120 dice a round; a roll may have at most 100", CONTEST),
        ("!contest 4 vs 2; 3 vs 0", "the defender's Trait of 0 rolls no dice", CONTEST),
        ("!contest " + "; ".join(["1 vs 1"] * 11), "that is 11 parts; at most 10", CONTEST),
        ("!initiative Jack: P4 M3", "give at least 2 sides separated by `;`", INITIATIVE),
        ("!initiative Jack: P4 M3; Jack: P3 M3", "two sides are called Jack", INITIATIVE),
        ("!initiative Jack: P4 M3; jack: P3 M3", "two sides are called jack", INITIATIVE),
        ("!initiative Jack: P4 M3; Sabbat: P4", "Sabbat needs a Mental rating too", INITIATIVE),
        ("!initiative Jack: P4 M3; Sabbat:", "Sabbat needs Physical and Mental", INITIATIVE),
        ("!initiative Jack: P4 M3; : P4 M3", "side 2 has a `:` with no name", INITIATIVE),
        ("!initiative Jack: P4 M3 huntr; B: 1 1", "Did you mean `hunter`?", INITIATIVE),
        ("!initiative Jack P4 M3; B: 1 1", "Names go before a colon", INITIATIVE),
        ("!team 3; 3", "the d6 rules have no teamwork of separate rolls", "Usage: !team"),
    ],
)
async def test_errors_roll_nothing(text: str, message: str, usage: str) -> None:
    dice = RecordingDice()
    reply = await send(app_with(dice=dice), text)
    plain = to_plain(reply.body)
    assert reply.is_error, plain
    assert plain.startswith("⚠ ") and message in plain, plain
    assert plain.splitlines()[-1].startswith(usage), plain
    assert dice.rolls == 0


async def test_the_commands_exist_only_in_d6_rooms() -> None:
    app = app_with([6, 1], defaults={"variant": "revised"})
    for text in ("!initiative A: 1 1; B: 2 2", "!init A: 1 1; B: 2 2"):
        reply = await send(app, text)  # elsewhere `!init` is only the initiative tracker
        assert reply.is_error and "not something `!init` does" in to_plain(reply.body), text
    # elsewhere `!contest` is only core's contest between two chat users
    reply = await send(app, "!contest 1 vs 1")
    assert reply.is_error and "whom do you challenge?" in to_plain(reply.body)
    await send(app, "!variant d6")
    lines = to_plain((await send(app, "!contest 1 vs 1")).body).splitlines()
    assert lines[-1] == "Attacker wins: 1 − 0 = 1 success left (It'll do)"


async def test_help_texts() -> None:
    app = app_with([])
    listing = to_plain((await send(app, "!help")).body)
    assert "!contest — " in listing and "!initiative — " in listing
    roll_help = to_plain((await send(app, "!help roll")).body)
    for word in ("need N", "diff D", "to N", "vs POOL", "social 4", "5 Challenging", "4 or more"):
        assert word in roll_help, word
    assert "2 Easy, 3 Routine, 4 Normal, 5 Challenging, 6 Really tough" in roll_help
    contest_help = to_plain((await send(app, "!help contest")).body)
    assert (
        contest_help.startswith("!contest POOL [DIFFICULTY] vs POOL") and "seesaw" in contest_help
    )
    init_help = to_plain((await send(app, "!help initiative")).body).splitlines()
    assert init_help[0] == INITIATIVE.removeprefix("Usage: ")
    assert "Celerity's extra actions come after everyone's first action" in init_help[-2]
    assert init_help[-1].startswith("Examples: !initiative ")


async def test_every_round_limit_is_reported() -> None:
    lines = await say(app_with([3] * 200), "!contest 1 vs 1")
    assert len(lines) == 1 + 1 + 100 + 1
    assert lines[101].endswith("(0) vs defender 3 (0) — a tie")
    assert lines[-1] == "No winner: still tied after 100 rounds; the Storyteller decides"
    lines = await say(app_with([3] * 200), "!contest 1 vs 1 to 2")
    assert lines[-1] == "No winner after 100 turns (level); the Storyteller decides"
    lines = await say(app_with([3] * 200), "!initiative A: 1 1; B: 1 1")
    assert lines[2:4] == [
        "1. A (Physical 1, Mental 1)",
        "2. B (Physical 1, Mental 1) — still tied with A",
    ]
    assert lines.count("Roll-off: A 3, B 3") == 100
    assert lines[-1] == "Still tied after 100 roll-offs: A, B — the Storyteller decides"


# --- console and CLI ------------------------------------------------------------------------------


def test_console_session_in_a_real_process(
    coterie_cli: list[str], cli_env: dict[str, str], root: Path
) -> None:
    script = "\n".join(
        [
            "!roll social 3 8 # charm",
            "!contest 3 vs 2",
            "!initiative Jack: P4 M3 hunter; Sabbat: P4 M1 hunter",
            "!contest 3",
        ]
    )
    done = subprocess.run(
        [*coterie_cli, "chat", "--variant", "d6", "--seed", "1", "--user", "Cynthia"],
        input=script + "\n",
        capture_output=True,
        text=True,
        env=cli_env,
        cwd=root,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "Cynthia — charm"
    assert lines[1].startswith("Social 3: 3 dice, difficulty 6 (Really tough; 8 lowered to 6")
    contest_start = lines.index(
        "Contest, difficulty 4 (Normal): attacker 3 dice vs defender 2 dice"
    )
    assert lines[contest_start + 1].startswith("Round 1: attacker ")
    assert any(line.startswith(("Attacker wins", "Defender wins")) for line in lines)
    assert (
        "2. Sabbat (Hunter's Instinct, Physical 4, Mental 1) — after Jack, by Mental 3 vs 1"
        in lines
    )
    assert lines[-2].startswith("⚠ a contest needs the other side after `vs`")


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["roll", "--variant", "d6", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_json_contract(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "--pool", "2", "--difficulty", "4", "--faces", "1,5", "--json")
    assert code == 0
    assert json.loads(out) == {
        "variant": "d6",
        "faces": [1, 5],
        "successes": 1,
        "outcome": "success",
        "degree": "It'll do",
        "pool": 2,
        "trait": None,
        "difficulty": 4,
        "asked_difficulty": 4,
        "required": 1,
    }
    code, out, _ = run_cli(capsys, "--pool", "3", "--difficulty", "9", "--faces", "6,5,1", "--json")
    data = json.loads(out)
    assert (data["difficulty"], data["asked_difficulty"], data["successes"]) == (6, 9, 1)
    code, out, _ = run_cli(capsys, "--pool", "3", "--faces", "1,2,3", "--json")
    data = json.loads(out)
    assert (data["outcome"], data["successes"], data["degree"]) == ("failure", 0, None)
    code, out, _ = run_cli(capsys, "--pool", "3", "--difficulty", "7", "--faces", "6,5,1")
    assert out.splitlines() == [
        "3 dice, difficulty 6 (Really tough; 7 lowered to 6, the highest difficulty): 6 5 1",
        "1 success — It'll do",
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--pool", "3", "--difficulty", "1"], "the difficulty must be at least 2 (Easy), not 1"),
        (["--pool", "0"], "a Trait of 0 rolls no dice"),
        (["--pool", "3", "--willpower"], "the d6 rules have no willpower option"),
        (["--pool", "3", "--hunger", "1"], "the d6 rules have no hunger option"),
        (["--pool", "3", "--specialty"], "the d6 rules have no specialty option"),
        (["--pool", "3", "--faces", "7,1,1"], "a d6 cannot show 7"),
        (
            ["--pool", "3", "--faces", "1,1"],
            "--faces: the faces ran out: this roll needs at least 3 dice",
        ),
    ],
)
def test_cli_errors(capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    code, out, err = run_cli(capsys, *args, "--json")
    assert code == 2 and out == "" and message in err
