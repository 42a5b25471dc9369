"""The ``v5`` rule set through the chat path (``Coterie.handle``) with fixed faces: replies,
every error message, and the ``!reroll`` and ``!rouse`` flows (also in a real console process)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import RecordingDice, drop_roll_ids, without_roll_id
from coterie import hookimpl
from coterie.dice.sources import DiceSource, FixedDice
from coterie.errors import UsageError
from coterie.framework.app import Coterie
from coterie.framework.config import parse_config
from coterie.framework.message import Message
from coterie.framework.plugins import PluginHost
from coterie.render.elements import Actions, Die, Reply, Role, walk
from coterie.render.encode import to_markdown, to_plain
from coterie_v5 import V5Outcome


def app_with(
    faces: list[int] | None = None, *, dice: DiceSource | None = None, **config: Any
) -> Coterie:
    config.setdefault("plugins", {"enable": ["v5"]})
    config.setdefault("defaults", {"variant": "v5"})
    source = dice if dice is not None else FixedDice(faces or [])
    return Coterie(parse_config(config, "test config"), dice=source)


async def send(app: Coterie, text: str, user: str = "ana", room: str = "r") -> Reply:
    reply = await app.handle(Message(platform="test", room=room, user=user, text=text))
    assert reply is not None
    return without_roll_id(reply)


async def say(app: Coterie, text: str, user: str = "ana", room: str = "r") -> str:
    """The reply as plain text, without the re-roll buttons' line (tested on its own below)."""
    body = [
        node for node in (await send(app, text, user, room)).body if not isinstance(node, Actions)
    ]
    return to_plain(body)


def buttons(reply: Reply) -> list[tuple[str, str]]:
    return [(b.label, b.command) for n in reply.body if isinstance(n, Actions) for b in n.buttons]


async def test_a_roll_offers_the_reroll_strategies_that_apply_as_buttons() -> None:
    # regular 3 4 10 10, Hunger 10: a messy critical, so every strategy applies
    app = app_with([3, 4, 10, 10, 10])
    reply = await send(app, "!roll 5 1 3")
    assert buttons(reply) == [
        ("Re-roll failures", "!reroll failures"),
        ("Go for criticals", "!reroll crits"),
        ("Avoid the messy critical", "!reroll messy"),
        ("Risky re-roll", "!reroll risky"),
    ]
    # all successes, no messy critical: only "crits" has something to do
    assert buttons(await send(app_with([7, 8, 9]), "!roll 3 0 1")) == [
        ("Go for criticals", "!reroll crits")
    ]
    # after the re-roll (and on checks, trackers, automatic wins) there are none
    app = app_with([2, 3, 7, 8])
    await send(app, "!roll 2 0 1")
    assert buttons(await send(app, "!reroll")) == []
    assert buttons(await send(app_with([7]), "!rouse")) == []
    assert buttons(await send(app_with([]), "!roll 6 0 2 auto")) == []


async def test_buttons_follow_the_rooms_prefix() -> None:
    app = app_with([3, 4, 10], defaults={"variant": "v5", "prefix": "?"})
    assert ("Re-roll failures", "?reroll failures") in buttons(await send(app, "?roll 3 0 1"))


# --- !roll replies --------------------------------------------------------------------------------


async def test_messy_critical_reply() -> None:
    text = await say(app_with([7, 10, 2, 4, 10, 1]), "!roll 6 2 3 # leap the fence")
    assert text.splitlines() == [
        "ana — leap the fence",
        "6 dice, Hunger 2, Difficulty 3: 7 10 2 4 | Hunger 10 1",
        "Messy critical! 5 successes, margin 2 (a pair of 10s: +2, and a Hunger die shows 10)",
    ]


async def test_reply_lines_for_each_result() -> None:
    cases = [
        ("!roll 3 diff 2", [10, 10, 2], "Critical win! 4 successes, margin 2 (a pair of 10s: +2)"),
        ("!roll 3 diff 2", [6, 7, 2], "Win — 2 successes, margin 0"),
        (
            "!roll 3 diff 3",
            [6, 7, 2],
            "Failure — 2 successes, 1 short. The Storyteller may offer a win at a cost.",
        ),
        (
            "!roll 3 1 3",
            [6, 7, 1],
            "Bestial failure! — 2 successes, 1 short, and a Hunger die shows 1. "
            "The Storyteller may offer a win at a cost.",
        ),
        ("!roll 2 1", [2, 1], "Bestial failure! — no successes, and a Hunger die shows 1."),
        ("!roll 2", [2, 3], "Total failure — no successes at all."),
        (
            "!roll 4 diff 5",
            [10, 10, 10, 10],
            "Critical win! 8 successes, margin 3 (2 pairs of 10s: +4)",
        ),
    ]
    for command, faces, line in cases:
        lines = (await say(app_with(faces), command)).splitlines()
        assert lines[-1] == line, command


async def test_setup_line_explains_the_pool_and_the_difficulty() -> None:
    cases = [
        (
            "!roll 3+4 spec team 2",
            "10 dice (3+4, +1 specialty, +2 for 2 helpers), Difficulty 1 (default)",
        ),
        ("!roll 5 bonus 1 penalty 2", "4 dice (5, +1 bonus, −2 penalty), Difficulty 1 (default)"),
        ("!roll 2-4", "1 die (2-4, a pool never falls below one die), Difficulty 1 (default)"),
        ("!roll willpower 2", "2 dice (willpower 2), Difficulty 1 (default)"),
        ("!roll 4 half 7", "4 dice, Difficulty 3 (half of 7)"),
        ("!roll 4 skill 0", "4 dice, Difficulty 1 (opponent's Skill 0, at least 1)"),
        (
            "!roll 4 half 7 equip poor harder 1 easier 2",
            "4 dice, Difficulty 3 (half of 7: 3, +1 poor equipment, +1 harder, −2 easier)",
        ),
        ("!roll 4 diff 2 harder 1", "4 dice, Difficulty 3 (2, +1 harder)"),
    ]
    for command, setup in cases:
        app = app_with([5] * 10)
        line = (await say(app, command)).splitlines()[1]
        assert line.startswith(setup + ": "), (command, line)


async def test_all_hunger_dice_line() -> None:
    text = await say(app_with([7, 3]), "!roll 2 h4")
    assert text.splitlines()[1] == "2 dice, Hunger 4, Difficulty 1 (default): Hunger 7 3"


async def test_contest_reply() -> None:
    text = await say(app_with([7, 8, 2, 10, 9, 6, 1]), "!roll 4 1 vs 3")
    assert text.splitlines()[1:] == [
        "4 dice, Hunger 1: 7 8 2 | Hunger 10",
        "Opposition, 3 dice: 9 6 1 — 2 successes",
        "Win — 3 successes against 2, margin 1",
    ]
    tie = await say(app_with([7, 8, 9, 6]), "!roll 2 vs 2")
    assert tie.splitlines()[-1] == "Win — 2 successes against 2, margin 0 (a tie goes to you)"


async def test_automatic_win_reply_rolls_nothing() -> None:
    dice = RecordingDice()
    text = await say(app_with(dice=dice), "!roll 6 diff 3 auto")
    assert text.splitlines()[1] == (
        "6 dice, Difficulty 3: Automatic win — no roll needed (6 dice is at least twice "
        "Difficulty 3); margin 0"
    )
    assert dice.calls == [(0, 10)]  # core asked for no faces


async def test_teamwork_in_one_message_rolls_the_helpers_dice() -> None:
    dice = RecordingDice()
    await say(app_with(dice=dice), "!roll 5 h1 diff 3 team 2")
    assert dice.calls == [(7, 10)]


async def test_dice_roles_and_tags_reach_the_reply() -> None:
    reply = await send(app_with([10, 3, 10, 1]), "!roll 4 2 2")
    dice = [node for node in walk(reply.body) if isinstance(node, Die)]
    assert [d.role for d in dice] == [Role.CRITICAL, Role.FAILURE, Role.CRITICAL, Role.FAILURE]
    assert ["hunger" in d.tags for d in dice] == [False, False, True, True]
    assert "***10***" in to_markdown(reply.body)


# --- the core !team and !help in a v5 room --------------------------------------------------------


async def test_core_team_points_to_team_n() -> None:
    dice = RecordingDice()
    reply = await send(app_with(dice=dice), "!team 5 2; 3 1")
    text = to_plain(reply.body)
    assert reply.is_error and "teamwork is a single roll" in text
    assert (
        "`5 h1 diff 3 team 2` for two helpers" in text
        and "Usage: !roll POOL [HUNGER] [DIFFICULTY] team N" in text
    )
    assert dice.rolls == 0


async def test_help_lists_the_v5_commands_and_options() -> None:
    app = app_with()
    listing = await say(app, "!help")
    assert "!reroll — spend Willpower" in listing and "!rouse — rouse checks" in listing
    help_roll = await say(app, "!help roll")
    for word in ("hunger H", "diff D", "spec", "auto", "team N", "bonus N", "penalty N"):
        assert word in help_roll
    for word in ("harder N", "easier N", "equip QUALITY", "half POOL", "skill N", "vs POOL"):
        assert word in help_roll
    assert "!reroll [failures|crits|messy|risky | FACE" in await say(app, "!help reroll")
    assert "!rouse [N] [h H]" in await say(app, "!help rouse")


async def test_reroll_and_rouse_exist_only_in_v5_rooms() -> None:
    app = app_with(plugins={"enable": ["v5", "revised"]}, defaults={"variant": "revised"})
    for command in ("!reroll", "!rouse"):
        reply = await send(app, command)
        assert reply.is_error and "unknown command" in to_plain(reply.body)


# --- every error message of the chat path ---------------------------------------------------------

ERRORS = [
    ("!roll", "what should I roll?"),
    ("!roll 5 diff 3 half 6", "give the Difficulty one way only, not a Difficulty and `half`"),
    ("!roll 5 half 6 skill 2", "not `half` and `skill`"),
    ("!roll 5 equip none", "without the equipment it needs, the task is impossible"),
    (
        "!roll 5 equip shiny",
        "`equip` takes good, poor, improvised, unreliable or none, not `shiny`",
    ),
    ("!roll 5 equip poo", "Did you mean `poor`?"),
    ("!roll 5 diff 0 easier 1", "`easier 1` would take the Difficulty to -1; it cannot go below 0"),
    ("!roll 5 diff 30 harder 2", "the modifiers take the Difficulty to 32; it can be at most 30"),
    ("!roll 5 diff 3 auto", "an automatic win needs a pool of at least twice the Difficulty"),
    ("!roll 5 diff 2 vs 4", "a contest has no Difficulty, so a Difficulty has no place in it"),
    ("!roll 5 skill 2 vs 4", "so `skill` has no place in it"),
    ("!roll 5 harder 1 vs 4", "so `harder` has no place in it"),
    ("!roll 5 vs 4 diff 2", "the opposition has no Difficulty in a contest"),
    ("!roll 5 auto vs 4", "a contest is always rolled: `auto` does not apply to `vs`"),
    ("!roll 5 h6", "`hunger` must be between 0 and 5, not 6"),
    ("!roll 5 6", "hunger must be between 0 and 5, not 6"),
    ("!roll 5 2 31", "difficulty must be between 0 and 30, not 31"),
    ("!roll 5 team 21", "`team` must be between 1 and 20, not 21"),
    ("!roll 5 bonus 0", "`bonus` must be between 1 and 50, not 0"),
    ("!roll 5 2 3 4", "I don't know what `4` is for (I read pool 5, hunger 2, difficulty 3)"),
    ("!roll 5 h2 hunger 3", "`hunger` is given twice"),
    ("!roll 5 wp", "unknown option `wp`"),
    ("!roll 5 hungr 2", "Did you mean `hunger`?"),
    ("!roll 5 x", "unknown option `x`"),
    ("!roll 3+x", "unknown option `3+x`"),
    ("!roll 101", "that is 101 dice; a roll may have at most 100"),
    ("!roll 5; ", "one of the rolls between `;` is empty"),
    ("!roll 5 h1 3 spec spec", "`spec` is given twice"),
    ("!rouse 0", "checks must be between 1 and 20, not 0"),
    ("!rouse 3 auto", "a check is always rolled: neither an automatic win nor taking half"),
    ("!rouse half 8", "a check is always rolled: neither an automatic win nor taking half"),
    ("!rouse h9", "`hunger` must be between 0 and 5, not 9"),
    ("!rouse 2 3", "I don't know what `3` is for (I read checks 2)"),
    ("!rouse wp", "unknown option `wp`"),
    ("!reroll bogus", "there is no re-roll strategy `bogus`. Choose failures (the default)"),
    ("!reroll faiures", "Did you mean `failures`?"),
    ("!reroll failures crits", "a re-roll takes one strategy (failures, crits, messy or risky)"),
    ("!reroll", "you have no roll in this room to re-roll yet"),
]


@pytest.mark.parametrize(("text", "message"), ERRORS, ids=[e[0] for e in ERRORS])
async def test_every_error_is_friendly_and_rolls_nothing(text: str, message: str) -> None:
    dice = RecordingDice()
    reply = await send(app_with(dice=dice), text)
    plain = to_plain(reply.body)
    assert reply.is_error, plain
    assert message in plain
    assert "Usage: !" in plain
    assert dice.rolls == 0


async def test_rouse_refuses_more_checks_than_the_dice_limit() -> None:
    dice = RecordingDice()
    app = app_with(dice=dice, limits={"max_dice": 5})
    reply = await send(app, "!rouse 6")
    assert reply.is_error and "that is 6 dice; a roll may have at most 5" in to_plain(reply.body)
    assert dice.rolls == 0


async def test_v5_commands_refuse_another_rule_set() -> None:
    from coterie.framework.commands import CommandContext
    from coterie.framework.grammar import split_command
    from coterie_revised import RevisedVariant
    from coterie_v5.commands import reroll, rouse

    app = app_with()
    message = Message(platform="test", room="r", user="ana", text="!rouse")
    line = split_command("!rouse", ["!"])
    assert line is not None
    settings = await app.room_settings(message.room_key)
    ctx = CommandContext(app, message, line, settings, RevisedVariant(), app.dice)
    for handler in (reroll, rouse):
        with pytest.raises(UsageError, match="belongs to the v5 rules, not revised"):
            await handler(ctx)


# --- !reroll flows --------------------------------------------------------------------------------


class AfterRoll:
    """A plugin that records every outcome the after-roll hook sees."""

    def __init__(self) -> None:
        self.outcomes: list[Any] = []

    @hookimpl
    def coterie_after_roll(self, app: Any, message: Any, variant: Any, outcome: Any) -> None:
        self.outcomes.append(outcome)


async def test_reroll_failures_flow() -> None:
    recorder = AfterRoll()
    host = PluginHost()
    host.load(["v5"])
    host.register(recorder, "recorder")
    config = parse_config({"plugins": {"enable": ["v5"]}, "defaults": {"variant": "v5"}}, "t")
    dice = RecordingDice(FixedDice([3, 8, 2, 1, 10, 9, 10, 10]))
    app = Coterie(config, host=host, dice=dice)
    first = await say(app, "!roll 5 1 3 # the lock")
    assert first.splitlines()[1:] == [
        "5 dice, Hunger 1, Difficulty 3: 3 8 2 1 | Hunger 10",
        "Failure — 2 successes, 1 short. The Storyteller may offer a win at a cost.",
    ]
    reply = await send(app, "!reroll # Willpower!")
    again = to_plain(reply.body)
    assert dice.calls == [(5, 10), (3, 10)]  # three regular failures, never the Hunger die
    assert again.splitlines() == [
        "ana — Willpower!",
        "5 dice, Hunger 1, Difficulty 3: 9 8 10 10 | Hunger 10",
        "Messy critical! 7 successes, margin 4 (a pair of 10s: +2, and a Hunger die shows 10)",
        # the fresh roll's odds, then the re-roll's: kept 8 and Hunger 10 are two successes, so
        # any success among the three re-rolled dice wins: 1 - 0.5 ** 3 = 87.5%
        "Willpower re-roll (failures): 3 2 1 → 9 10 10. "
        "It costs one Superficial damage to Willpower. Chance of success was 51.2%, now 87.5%.",
    ]
    rerolled = [
        node for node in walk(reply.body) if isinstance(node, Die) and "rerolled" in node.tags
    ]
    assert [d.face for d in rerolled] == [9, 10, 10]
    assert len(recorder.outcomes) == 2  # the re-roll went through ctx.roll: the hook saw it
    last = recorder.outcomes[-1]
    assert isinstance(last, V5Outcome) and last.as_json()["rerolled"] == [0, 2, 3]
    refused = await send(app, "!reroll crits")
    assert refused.is_error and "already re-rolled with Willpower" in to_plain(refused.body)
    assert dice.rolls == 2


async def test_reroll_is_per_player_and_per_room() -> None:
    app = app_with([2, 2, 9, 9])
    await say(app, "!roll 2", user="ana")
    for user, room in (("bob", "r"), ("ana", "elsewhere")):
        reply = await send(app, "!reroll", user=user, room=room)
        assert reply.is_error and "no roll in this room" in to_plain(reply.body)
    text = await say(app, "!reroll", user="ana")
    assert text.splitlines()[1:] == [
        "2 dice, Difficulty 1 (default): 9 9",
        "Win — 2 successes, margin 1",
        "Willpower re-roll (failures): 2 2 → 9 9. It costs one Superficial damage to Willpower."
        " Chance of success was 75.0%, now 75.0%.",  # both dice re-rolled: 1 - 0.5 ** 2
    ]


async def test_reroll_uses_the_last_of_several_rolls_in_one_message() -> None:
    app = app_with([7, 7, 2, 3, 10, 10])
    await say(app, "!roll 2; 2")
    text = await say(app, "!reroll crits")
    assert text.splitlines()[1] == "2 dice, Difficulty 1 (default): 10 10"
    assert "Willpower re-roll (crits): 2 3 → 10 10" in text


async def test_reroll_strategies_through_chat() -> None:
    app = app_with([10, 7, 10] + [4])
    await say(app, "!roll 3 1 2")
    text = await say(app, "!reroll messy")
    assert "Willpower re-roll (messy): 10 → 4" in text
    assert text.splitlines()[2] == "Win — 2 successes, margin 0"
    app = app_with([10, 1, 2, 10] + [3, 4, 5])
    await say(app, "!roll 4 1 2")
    text = await say(app, "!reroll risky")
    assert "Willpower re-roll (risky): 10 1 2 → 3 4 5" in text
    assert text.splitlines()[2] == (
        "Failure — 1 success, 1 short. The Storyteller may offer a win at a cost."
    )


@pytest.mark.parametrize(
    ("first", "faces", "reroll", "message"),
    [
        ("!rouse", [3], "!reroll", "Willpower cannot re-roll a check"),
        (
            "!roll willpower 3",
            [1, 2, 3],
            "!reroll",
            "tracker roll, and your last roll was on Willpower",
        ),
        ("!roll humanity 3", [1, 2, 3], "!reroll", "your last roll was on Humanity"),
        ("!roll 6 diff 2 auto", [], "!reroll", "automatic win: no dice were rolled"),
        ("!roll 2 2", [3, 4], "!reroll", "all your dice are Hunger dice"),
        ("!roll 2", [7, 8], "!reroll", "none of your regular dice failed"),
        ("!roll 2", [10, 10], "!reroll crits", "every regular die already shows 10"),
        ("!roll 2", [10, 10], "!reroll messy", "the roll is not a messy critical"),
        ("!roll 3 2", [10, 10, 10], "!reroll risky", "2 Hunger dice show 10"),
    ],
)
async def test_reroll_refusals_through_chat(
    first: str, faces: list[int], reroll: str, message: str
) -> None:
    dice = RecordingDice(FixedDice(faces))
    app = app_with(dice=dice)
    assert not (await send(app, first)).is_error
    rolled = dice.rolls
    reply = await send(app, reroll)
    assert reply.is_error and message in to_plain(reply.body)
    assert "Usage: !reroll [failures|crits|messy|risky | FACE" in to_plain(reply.body)
    assert dice.rolls == rolled


async def test_reroll_the_dice_you_name_by_their_faces() -> None:
    # 002: up to three regular dice, the player's pick: here the 8 (a success) and the 1, not the
    # 3 or the 2 a strategy would take first
    dice = RecordingDice(FixedDice([3, 8, 2, 1, 10] + [9, 6]))
    app = app_with(dice=dice)
    await say(app, "!roll 5 1 3")
    text = await say(app, "!reroll 8 1")
    assert dice.calls == [(5, 10), (2, 10)]
    assert text.splitlines()[1:3] == [
        "5 dice, Hunger 1, Difficulty 3: 3 9 2 6 | Hunger 10",
        "Win — 3 successes, margin 0",
    ]
    assert "Willpower re-roll (your choice): 8 1 → 9 6. It costs one Superficial" in text
    # a face named twice is two dice; the first rolled of equal faces goes first
    app = app_with([4, 2, 4, 9] + [7, 6])
    await say(app, "!roll 4")
    assert "Willpower re-roll (your choice): 4 4 → 7 6" in await say(app, "!reroll 4 4")


@pytest.mark.parametrize(
    ("faces", "reroll", "message"),
    [
        ([3, 8, 2, 1, 10], "!reroll 4", "none of your regular dice shows 4 (3 8 2 1)"),
        ([3, 8, 2, 1, 10], "!reroll 10", "(a Hunger die does, and Willpower never re-rolls those)"),
        ([3, 8, 2, 1, 10], "!reroll 3 3", "only 1 of your regular dice shows 3 (3 8 2 1)"),
        ([3, 8, 2, 1, 10], "!reroll 3 8 2 1", "Willpower re-rolls one to 3 dice; you named 4"),
        ([3, 8, 2, 1, 10], "!reroll 11", "a die shows 1 to 10, not 11"),
        ([3, 8, 2, 1, 10], "!reroll 0", "a die shows 1 to 10, not 0"),
        ([3, 8, 2, 1, 10], "!reroll ²", "there is no re-roll strategy `²`"),
        ([3, 8, 2, 1, 10], "!reroll 3 crits", "or the faces of up to 3 of your regular dice"),
    ],
)
async def test_reroll_by_faces_refusals_roll_nothing(
    faces: list[int], reroll: str, message: str
) -> None:
    dice = RecordingDice(FixedDice([*faces, 5, 5, 5]))
    app = app_with(dice=dice)
    await say(app, "!roll 5 1 3")
    reply = await send(app, reroll)
    assert reply.is_error and message in to_plain(reply.body), to_plain(reply.body)
    assert dice.rolls == 1
    assert "Willpower re-roll (failures): 3 2 1 → 5 5 5" in await say(app, "!reroll")  # unspent


async def test_a_new_roll_can_be_rerolled_again() -> None:
    app = app_with([2, 9, 3, 8])
    await say(app, "!roll 1")
    await say(app, "!reroll")
    await say(app, "!roll 1")
    text = await say(app, "!reroll")
    assert "Willpower re-roll (failures): 3 → 8" in text


# --- !rouse flows ---------------------------------------------------------------------------------


async def test_rouse_replies() -> None:
    app = app_with([3, 8, 7, 1, 2, 9, 4])
    assert (await say(app, "!rouse h1 # waking")).splitlines() == [
        "ana — waking",
        "Rouse check: 3 — failed",
        "Hunger 1 → 2.",
    ]
    assert (await say(app, "!rouse")).splitlines()[1:] == [
        "Rouse check: 8 — passed",
        "Hunger does not rise.",
    ]
    assert (await say(app, "!rouse 3 h4")).splitlines()[1:] == [
        "3 rouse checks: 7 1 2 — 1 passed, 2 failed",
        "Hunger 4 → 5 (5 is the most it can be).",
    ]
    assert (await say(app, "!rouse 2 h5")).splitlines()[1:] == [
        "2 rouse checks: 9 4 — 1 passed, 1 failed",
        "Hunger stays at 5 (it cannot rise above 5).",
    ]


async def test_rouse_without_hunger_says_how_much_it_rises() -> None:
    text = await say(app_with([1, 5]), "!rouse 2")
    assert text.splitlines()[-1] == "Hunger rises by 2."
    text = await say(app_with([6]), "!rouse h3")
    assert text.splitlines()[-1] == "Hunger stays at 3."


# --- the console, in a real process ---------------------------------------------------------------

DICE = r"(?:10|[1-9])"


def test_console_session_with_reroll_and_rouse(
    tmp_path: Path, coterie_cli: list[str], cli_env: dict[str, str], root: Path
) -> None:
    config = tmp_path / "v5.toml"
    config.write_text(
        '[plugins]\nenable = ["v5", "console"]\n\n[defaults]\nvariant = "v5"\n\n'
        "[adapters.console]\nenabled = true\n",
        encoding="utf-8",
    )
    script = "\n".join(
        [
            "!roll 6 2 3 # sneak",
            "!reroll crits",
            "!reroll",
            "!rouse 2 h4",
            "!reroll",
            "!roll 2 vs 2",
        ]
    )
    done = subprocess.run(
        [*coterie_cli, "chat", "--config", str(config), "--seed", "3", "--user", "Lynn"],
        input=script + "\n",
        capture_output=True,
        text=True,
        env=cli_env,
        cwd=root,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == ["coterie: state in memory (lost when the process ends)"]
    assert "Options: !reroll failures" in done.stdout  # the buttons, as the console shows them
    lines = [
        line for line in drop_roll_ids(done.stdout.splitlines()) if not line.startswith("Options: ")
    ]
    assert lines[0] == "Lynn — sneak"
    assert re.fullmatch(
        rf"6 dice, Hunger 2, Difficulty 3: {DICE}( {DICE}){{3}} \| Hunger {DICE} {DICE}", lines[1]
    )
    assert lines[3] == "Lynn"
    assert re.fullmatch(rf"6 dice, Hunger 2, Difficulty 3: .* \| Hunger {DICE} {DICE}", lines[4])
    # the Hunger dice were not re-rolled
    assert lines[1].split("| ")[1] == lines[4].split("| ")[1]
    assert re.fullmatch(rf"Willpower re-roll \(crits\): {DICE}( {DICE}){{0,2}} → .*", lines[6])
    assert lines[7].startswith("⚠ your last roll was already re-rolled")
    assert lines[8] == (
        "Usage: !reroll [failures|crits|messy|risky | FACE [FACE [FACE]]] [# comment]"
    )
    assert lines[9] == "Lynn"
    assert re.fullmatch(rf"2 rouse checks: {DICE} {DICE} — \d passed, \d failed", lines[10])
    assert re.fullmatch(r"Hunger (4 → [45]|stays at 4)( \(5 is the most it can be\))?\.", lines[11])
    assert lines[12] == "⚠ Willpower cannot re-roll a check, and your last roll was a rouse check"
    assert lines[14] == "Lynn"
    assert re.fullmatch(rf"2 dice: {DICE} {DICE}", lines[15])
    assert re.fullmatch(rf"Opposition, 2 dice: {DICE} {DICE} — \d success(es)?", lines[16])
    assert len(lines) == 18
