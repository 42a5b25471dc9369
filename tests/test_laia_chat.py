"""The ``laia`` rule set through the chat path (``Coterie.handle``): ``?throw`` and ``!roll`` with
fixed faces, the reply layout, every error message (with nothing thrown), teamwork, help, and a
scripted console session in a real process."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import RecordingDice, drop_roll_ids
from coterie.dice.sources import FixedDice
from coterie.framework.app import Coterie
from coterie.render.elements import Die, Reply, Role, walk
from coterie.render.encode import to_markdown, to_plain
from coterie_laia import rules
from doc_tables import ints

Factory = Callable[..., Coterie]
MakeApp = Callable[..., Coterie]
Say = Callable[..., Awaitable[str | None]]
Send = Callable[..., Awaitable[Reply | None]]

THROW_USAGE = "Usage: ?throw POOL [DIFFICULTY] [spec]"
ROLL_USAGE = "Usage: !roll POOL [DIFFICULTY] [spec]"
#: the laia room is the default; room "old" still plays revised
ROOMS = {
    "plugins": {"enable": ["revised", "laia"]},
    "defaults": {"variant": "laia"},
    "rooms": {"test:old": {"variant": "revised"}},
}


@pytest.fixture
def laia(make_app: MakeApp) -> Factory:
    """``laia(faces)``: an app whose rooms play laia, throwing exactly ``faces``."""

    def factory(faces: list[int] | None = None, **tables: Any) -> Coterie:
        return make_app(faces=faces or [], **{**ROOMS, **tables})

    return factory


async def lines(say: Say, app: Coterie, text: str, **kwargs: Any) -> list[str]:
    reply = await say(app, text, user="lynn", **kwargs)
    assert reply is not None, text
    return reply.splitlines()


# --- the reply the community knows ----------------------------------------------------------------


async def test_throw_reply_layout(laia: Factory, say: Say) -> None:
    app = laia([9, 1, 1, 8, 1])
    assert await lines(say, app, "?throw 5 8 # fleeing to the elevator") == [
        "# -1",
        "Details:[5d10c[>=8]-@c[=1] (9 1 1 8 1)]",
        "Botch!",
        "lynn — fleeing to the elevator",
        "5 dice, difficulty 8 (Difficult): 9 1 1 8 1",
        "2 successes - 3 ones = -1 (cancelled from the left: 9, 8)",
    ]


async def test_roll_and_throw_give_the_same_reply(laia: Factory, send: Send) -> None:
    faces = [10, 1, 2, 6, 7, 3]
    app = laia(faces * 4)
    replies = []
    for text in (
        "?throw 6 6 spec # aim",
        "!roll 6 6 spec # aim",
        "!throw 6 6 spec # aim",
        "?roll 6 6 spec # aim",
    ):
        reply = await send(app, text)
        assert reply is not None and not reply.is_error
        assert reply.meta["variant"] == "laia" and len(reply.meta["roll_id"]) == 6
        replies.append(to_plain(reply.body))
    assert len(set(replies)) == 1
    assert replies[0].splitlines()[:3] == [
        "# 2",
        "Details:[6d10c[>=6]-@c[=1] (10 1 2 6 7 3)]",
        "Moderate success",
    ]


async def test_difficulty_defaults_to_six(laia: Factory, say: Say) -> None:
    text = await lines(say, laia([7, 2, 3]), "?throw 3")
    assert text[:3] == ["# 1", "Details:[3d10c[>=6]-@c[=1] (7 2 3)]", "Marginal success"]


async def test_room_default_difficulty(laia: Factory, say: Say) -> None:
    app = laia([7, 2, 3], defaults={"variant": "laia", "default_difficulty": 8})
    text = await lines(say, app, "?throw 3")
    assert text[:3] == ["# 0", "Details:[3d10c[>=8]-@c[=1] (7 2 3)]", "Failure"]


async def test_several_throws_in_one_message(laia: Factory, say: Say) -> None:
    text = await lines(say, laia([7, 8, 1, 2]), "?throw 2 6; 2 6 # two things")
    assert text == [
        "# 2",
        "Details:[2d10c[>=6]-@c[=1] (7 8)]",
        "Moderate success",
        "lynn — two things",
        "2 dice, difficulty 6 (Standard): 7 8",
        "2 successes",
        "# -1",
        "Details:[2d10c[>=6]-@c[=1] (1 2)]",
        "Botch!",
        "2 dice, difficulty 6 (Standard): 1 2",
        "0 successes - 1 one = -1",
    ]


async def test_markdown_keeps_the_hash_literal_and_styles_the_dice(
    laia: Factory, send: Send
) -> None:
    reply = await send(laia([6, 10, 1, 3]), "?throw 4 6 spec")
    assert reply is not None
    markdown = to_markdown(reply.body)
    first = markdown.splitlines()[0]
    assert first == "\\# **2**"  # not a Markdown heading; the sum in bold
    assert "***10***" in markdown and "~~6~~" in markdown and "~~1~~" in markdown
    roles = [node.role for node in walk(reply.body) if isinstance(node, Die)]
    assert roles == [Role.CANCELLED, Role.CRITICAL, Role.CANCELLED, Role.FAILURE]
    botch = await send(laia([1, 2]), "?throw 2 6")
    assert botch is not None and "__1__" in to_markdown(botch.body)


async def test_difficulty_ten_warns_with_the_botch_chance(laia: Factory, say: Say) -> None:
    text = await lines(say, laia([2, 3, 4, 5]), "?throw 4 10")
    chance = f"{float(rules.botch_chance_at_ten(4)):.0%}"
    assert text[4] == "4 dice, difficulty 10 (beyond the chart): 2 3 4 5"
    assert text[-1] == (
        "⚠ Difficulty 10 is off the chart: at 10 a bigger pool botches more often, not less "
        f"(4 dice: {chance} chance of a botch). Use it with care."
    )


async def test_trying_again_raises_the_difficulty_shown(laia: Factory, say: Say) -> None:
    text = await lines(say, laia([7, 6, 2]), "?throw 3 6 retry 1 # second try")
    assert text[1] == "Details:[3d10c[>=7]-@c[=1] (7 6 2)]"
    assert text[4] == "3 dice, difficulty 7 (Challenging), +1 for trying again: 7 6 2"


async def test_extended_and_resisted_replies(laia: Factory, say: Say) -> None:
    app = laia([7, 8, 2] + [3, 4, 1, 6, 4, 1, 6])
    assert (await lines(say, app, "?throw 3 7 ext 18 progress 5"))[-1] == "Extended: 7/18"
    assert (await lines(say, app, "?throw 7 7 ext 18 progress 5"))[-1] == (
        "Extended: the botch wipes out 5 successes (start again only if the Storyteller "
        "allows) — 0/18"
    )
    app = laia([7, 8, 9, 10, 2, 3] + [6, 7, 8, 2, 3, 4, 5])
    text = await lines(say, app, "?throw 6 7 vs 7 6 # charming Tony")
    assert text[0] == "# 4"
    assert text[-3:] == [
        "Opposed: 7 dice, difficulty 6 (Standard): 6 7 8 2 3 4 5",
        "Opposed: # 3 — Complete success: 3 successes",
        "Resisted: you win with 1 success (Marginal)",
    ]
    app = laia([7, 7, 2, 2, 2, 2])
    text = await lines(say, app, "?throw 3 6 ext 5 progress 4 vs 3 6 progress 1")
    assert text[-1] == "Extended and resisted: 6/5 vs 1/5 — you reach the goal first and win!"


# --- where the command exists ---------------------------------------------------------------------


async def test_question_mark_is_only_a_prefix_in_laia_rooms(laia: Factory, send: Send) -> None:
    app = laia([5])
    assert await send(app, "?throw 1 6", room="old") is None
    reply = await send(app, "!throw 1 6", room="old")
    assert reply is not None and reply.is_error
    assert "unknown command `!throw`" in to_plain(reply.body)
    assert isinstance(app.dice, FixedDice) and app.dice.remaining == 1  # nothing was thrown


async def test_help_in_a_laia_room(laia: Factory, say: Say) -> None:
    app = laia()
    listing = "\n".join(await lines(say, app, "?help"))
    assert "!throw — throw a dice pool the LAIA way" in listing
    assert "(laia)" in listing
    throw_help = await lines(say, app, "!help throw")
    assert throw_help[0].startswith("?throw POOL [DIFFICULTY] [spec]")
    assert "Details:[POOLd10c[>=DIFFICULTY]-@c[=1] (faces)]" in throw_help[2]
    roll_help = "\n".join(await lines(say, app, "?help roll"))
    for word in ("spec", "retry N", "ext TARGET", "progress P", "vs POOL", "!team", "?throw"):
        assert word in roll_help, word
    assert "3 Trivial" in roll_help and "9 Extremely difficult" in roll_help
    assert "5 Phenomenal (or more)" in roll_help
    assert "below 0 a botch" in roll_help
    revised_listing = "\n".join(await lines(say, app, "!help", room="old"))
    assert "!throw" not in revised_listing


# --- teamwork -------------------------------------------------------------------------------------


async def test_team_adds_successes_and_flags_a_botch(laia: Factory, say: Say) -> None:
    app = laia([7, 8, 10, 1, 2])
    text = await lines(say, app, "?team 3 6 spec; 2 6 # holding the door")
    assert text[0] == "lynn — holding the door"
    assert text[1] == "Member 1: # 4"
    assert "Member 2: # -1" in text
    assert text[-1] == (
        "Teamwork: 4 successes (4 + 0) — Exceptional success; "
        "but member 2 botched, which can ruin it for everyone"
    )


# --- every error, with nothing thrown -------------------------------------------------------------


@pytest.fixture
def quiet(make_app: MakeApp, recording_dice: RecordingDice) -> Coterie:
    return make_app(dice=recording_dice, **ROOMS)


async def expect_error(send: Send, app: Coterie, text: str, message: str, usage: str | None) -> str:
    reply = await send(app, text)
    assert reply is not None, text
    plain = to_plain(reply.body)
    assert reply.is_error, plain
    assert plain.startswith("⚠ ") and message in plain, plain
    if usage is not None:
        assert usage in plain, plain
    dice = app.dice
    assert isinstance(dice, RecordingDice)
    assert dice.rolls == 0, f"{text!r} threw dice: {dice.calls}"
    return plain


ERRORS = [
    ("", "what should I roll? Give at least a dice pool."),
    ("0 6", "a pool of 0 dice can't be rolled; it needs at least 1"),
    ("3-4 6", "a pool of -1 dice can't be rolled"),
    ("abc", "unknown option `abc`"),
    ("5 six", "numbers are written in digits, not `six`"),
    ("5 1", "difficulty must be between 2 and 10, not 1"),
    ("5 11", "difficulty must be between 2 and 10, not 11"),
    ("5 6 diff 7", "`diff` is given twice"),
    ("5 6 7", "I don't know what `7` is for (I read pool 5, difficulty 6)"),
    ("5 6 sepc", "unknown option `sepc`. Did you mean `spec`?"),
    ("5 6 spec speciality", "`spec` is given twice"),
    ("5 6 spec=1", "`spec` takes no value"),
    ("5 6 wp", "unknown option `wp`"),
    ("5 6 retry", "`retry` needs a value, e.g. `retry N`"),
    ("5 6 retry 21", "`retry` must be between 0 and 20, not 21"),
    ("5 9 retry 2", "after 2 failed attempts the difficulty would be 11, above 10"),
    ("5 6 progress 3", "`progress` goes with `ext TARGET` (an extended action)"),
    ("5 6 ext 4 progress 4", "progress 4 already reaches the target 4: the action is done"),
    ("5 6 ext 4 vs 3 progress 9", "the opposition's progress 9 already reaches the target 4"),
    ("5 6 vs 3 progress 1", "`progress` goes with `ext TARGET` (an extended action)"),
    ("101 6", "that is 101 dice; a roll may have at most 100"),
    ("60 6 vs 41 6", "that is 101 dice; a roll may have at most 100"),
    ("5 6; ", "one of the rolls between `;` is empty"),
    ("5 6; 0 6", "a pool of 0 dice can't be rolled"),
    ("1234567 6", "a pool `1234567` is far too large"),
]


@pytest.mark.parametrize(("args", "message"), ERRORS, ids=[a or "(nothing)" for a, _ in ERRORS])
async def test_throw_errors(quiet: Coterie, send: Send, args: str, message: str) -> None:
    await expect_error(send, quiet, f"?throw {args}", message, THROW_USAGE)


@pytest.mark.parametrize(("args", "message"), ERRORS, ids=[a or "(nothing)" for a, _ in ERRORS])
async def test_roll_errors(quiet: Coterie, send: Send, args: str, message: str) -> None:
    await expect_error(send, quiet, f"!roll {args}", message, ROLL_USAGE)


async def test_hints_write_the_command_as_it_was_typed(quiet: Coterie, send: Send) -> None:
    plain = await expect_error(send, quiet, "?throw 5 11", "between 2 and 10", THROW_USAGE)
    assert "`?throw` reads its numbers as POOL DIFFICULTY, e.g. `?throw 7 6`." in plain
    assert "!roll" not in plain and "!throw" not in plain
    plain = await expect_error(send, quiet, "?throw 5d10 6", "dice notation", THROW_USAGE)
    assert "`?throw 5 6`" in plain
    plain = await expect_error(send, quiet, "!roll 5 11", "between 2 and 10", ROLL_USAGE)
    assert "`!roll` reads its numbers as POOL DIFFICULTY, e.g. `!roll 7 6`." in plain


async def test_vs_without_the_other_side_shows_the_throw_usage(quiet: Coterie, send: Send) -> None:
    await expect_error(
        send, quiet, "?throw 5 6 vs", "`vs` needs the other side after it", THROW_USAGE
    )


async def test_too_many_throws_in_one_message(quiet: Coterie, send: Send) -> None:
    await expect_error(
        send, quiet, "?throw " + "; ".join(["1 6"] * 11), "at most 10 are allowed", THROW_USAGE
    )


async def test_trying_again_switched_off(
    make_app: MakeApp, recording_dice: RecordingDice, send: Send
) -> None:
    app = make_app(
        dice=recording_dice,
        plugins=ROOMS["plugins"],
        defaults={"variant": "laia", "house_rules": {"trying_again": False}},
    )
    await expect_error(
        send, app, "?throw 5 6 retry 1", "does not raise the difficulty for trying again", None
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("?team 5 6", "give at least 2 rolls separated by `;`"),
        ("?team 5 6 vs 3; 3 6", "teamwork members throw their own plain pools (no `vs` or `ext`)"),
        ("!team 5 6 ext 9; 3 6", "teamwork members throw their own plain pools"),
        ("!team 5 6; 0 6", "can't be rolled"),
    ],
)
async def test_team_errors(quiet: Coterie, send: Send, text: str, message: str) -> None:
    await expect_error(send, quiet, text, message, None)


# --- a console session in a real process ----------------------------------------------------------

HEAD = re.compile(r"^# (-?\d+)$")
DETAILS = re.compile(
    r"^Details:\[(\d+)d10c\[>=(\d+)\]-@c\[=1\] \(((?:10|[1-9])(?: (?:10|[1-9]))*)\)\]$"
)


def test_console_session(coterie_cli: list[str], cli_env: dict[str, str], root: Path) -> None:
    script = "?throw 5 8 # first\n!roll 4 6 spec\n?throw 0\n"
    done = subprocess.run(
        [*coterie_cli, "chat", "--variant", "laia", "--seed", "1", "--user", "Lynn"],
        input=script,
        capture_output=True,
        text=True,
        env=cli_env,
        cwd=root,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == ["coterie: state in memory (lost when the process ends)"]
    out = drop_roll_ids(done.stdout.splitlines())
    for start, pool, difficulty, specialty, caller in (
        (0, 5, 8, False, "Lynn — first"),
        (6, 4, 6, True, "Lynn"),
    ):
        head, details = HEAD.match(out[start]), DETAILS.match(out[start + 1])
        assert head is not None and details is not None, out[start : start + 2]
        assert (int(details[1]), int(details[2])) == (pool, difficulty)
        faces = ints(details[3])
        roll = rules.throw(faces, difficulty, specialty=specialty)
        assert int(head[1]) == roll.total
        expected_word = {"success": f"{roll.degree} success", "failure": "Failure"}
        assert out[start + 2] == expected_word.get(roll.outcome, "Botch!")
        assert out[start + 3] == caller
    assert out[-2] == "⚠ a pool of 0 dice can't be rolled; it needs at least 1"
    assert out[-1].startswith(THROW_USAGE)


async def test_unknown_words_after_the_extra_prefix_are_ordinary_talk(
    quiet: Coterie, send: Send
) -> None:
    assert await send(quiet, "?what time is it") is None
    reply = await send(quiet, "!what")
    assert reply is not None and reply.is_error  # the room's own prefix still answers
