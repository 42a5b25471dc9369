"""Chat errors through ``app.handle``: friendly, specific, with a usage line, and nothing rolled."""

from __future__ import annotations

import pytest

from coterie import hookimpl
from coterie.errors import ConfigError
from coterie.framework.config import HARD_MAX_DICE, Limits
from coterie.render.encode import to_plain

ROLL_USAGE_START = "Usage: !roll POOL [DIFFICULTY]"


@pytest.fixture
def app(make_app, recording_dice):
    return make_app(dice=recording_dice)


async def expect_error(send, app, text, *, room="r1", usage: str | None = ROLL_USAGE_START):
    """Send ``text``; assert an error reply (with ``usage`` when given) and that no die was
    rolled. Returns the reply as plain text."""
    reply = await send(app, text, room=room)
    assert reply is not None, text
    assert reply.is_error, to_plain(reply.body)
    plain = to_plain(reply.body)
    assert plain.startswith("⚠ ")
    if usage is not None:
        assert usage in plain, plain
    assert "Traceback" not in plain
    assert app.dice.rolls == 0, f"{text!r} rolled dice: {app.dice.calls}"
    return plain


# --- the happy path, so the recorder is known to see rolls ---------------------------------------


async def test_a_good_roll_is_recorded(app, send):
    reply = await send(app, "!roll 5 6")
    assert reply is not None and not reply.is_error
    assert app.dice.calls == [(5, 10)]


async def test_non_command_is_ignored(app, send):
    assert await send(app, "hello there, roll 5 please") is None
    assert await send(app, "") is None
    assert await send(app, "   ") is None
    assert await send(app, "!") is None
    assert app.dice.rolls == 0


async def test_long_non_command_is_ignored_not_an_error(app, send):
    assert await send(app, "x" * 5000) is None


# --- unknown command or option ------------------------------------------------------------------


async def test_unknown_command_suggests_closest(app, send):
    plain = await expect_error(send, app, "!rol 5 6", usage=None)
    assert "unknown command `!rol`" in plain
    assert "Did you mean `!roll`?" in plain


async def test_unknown_command_without_close_match_points_to_help(app, send):
    plain = await expect_error(send, app, "!xyzzy", usage=None)
    assert "unknown command `!xyzzy`" in plain
    assert "!help" in plain


async def test_unknown_command_is_shortened(app, send):
    plain = await expect_error(send, app, "!" + "z" * 500, usage=None)
    assert "z" * 30 not in plain


async def test_unknown_option_suggests_closest(app, send):
    plain = await expect_error(send, app, "!roll 5 6 wpp")
    assert "unknown option `wpp`" in plain
    assert "Did you mean `wp`?" in plain


# --- pool and difficulty ------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["!roll 0", "!roll 0 6", "!roll 3-3", "!r 0"])
async def test_pool_of_zero(app, send, text):
    plain = await expect_error(send, app, text)
    assert "pool of 0" in plain


async def test_no_pool_at_all(app, send):
    plain = await expect_error(send, app, "!roll")
    assert "pool" in plain


@pytest.mark.parametrize(
    ("text", "count"),
    [("!roll 101", 101), ("!roll 60+41 6", 101), ("!roll 60 vs 50", 110), ("!roll 1000", 1000)],
)
async def test_pool_over_the_default_limit(app, send, text, count):
    plain = await expect_error(send, app, text)
    assert f"that is {count} dice" in plain
    assert "at most 100" in plain


async def test_pool_at_the_limit_rolls(app, send):
    reply = await send(app, "!roll 100")
    assert reply is not None and not reply.is_error
    assert app.dice.calls == [(100, 10)]


async def test_pool_with_too_many_digits(app, send):
    plain = await expect_error(send, app, "!roll 99999999999999999999")
    assert "far too large" in plain
    assert "99999999999999999999" not in plain


async def test_max_dice_is_configurable(make_app, recording_dice, send):
    app = make_app(dice=recording_dice, limits={"max_dice": 10})
    plain = await expect_error(send, app, "!roll 11")
    assert "at most 10" in plain
    reply = await send(app, "!roll 10")
    assert reply is not None and not reply.is_error
    assert app.dice.calls == [(10, 10)]


async def test_max_dice_up_to_the_hard_cap(make_app, recording_dice, send):
    app = make_app(dice=recording_dice, limits={"max_dice": HARD_MAX_DICE})
    plain = await expect_error(send, app, f"!roll {HARD_MAX_DICE + 1}")
    assert f"at most {HARD_MAX_DICE}" in plain
    reply = await send(app, f"!roll {HARD_MAX_DICE}")
    assert reply is not None and not reply.is_error


def test_hard_cap_enforced_by_config_validation(make_app):
    assert HARD_MAX_DICE == 1000
    with pytest.raises(ConfigError, match=r"limits\.max_dice") as caught:
        make_app(limits={"max_dice": HARD_MAX_DICE + 1})
    assert "1000" in str(caught.value)
    with pytest.raises(ValueError):
        Limits(max_dice=5000)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("!roll 5 11", "difficulty must be between 2 and 10, not 11"),
        ("!roll 5 1", "difficulty must be between 2 and 10, not 1"),
        ("!roll 5 0", "difficulty must be between 2 and 10, not 0"),
        ("!roll 5 diff 12", "`diff` must be between 2 and 10, not 12"),
        ("!roll 5 6 vs 4 11", "difficulty must be between 2 and 10, not 11"),
    ],
)
async def test_difficulty_out_of_range(app, send, text, expected):
    plain = await expect_error(send, app, text, usage="Usage: ")
    assert expected in plain


async def test_difficulty_out_of_range_shows_roll_usage(app, send):
    await expect_error(send, app, "!roll 5 11")


# --- comment and message length -----------------------------------------------------------------


async def test_comment_over_300_characters(app, send):
    plain = await expect_error(send, app, "!roll 5 6 # " + "c" * 301, usage="Usage: !roll")
    assert "301 characters" in plain
    assert "at most 300" in plain


async def test_comment_of_300_characters_is_fine(app, send):
    reply = await send(app, "!roll 5 6 # " + "c" * 300)
    assert reply is not None and not reply.is_error
    assert "c" * 300 in to_plain(reply.body)
    assert app.dice.rolls == 1


async def test_comment_limit_is_configurable(make_app, recording_dice, send):
    app = make_app(dice=recording_dice, limits={"max_comment_length": 10})
    plain = await expect_error(send, app, "!roll 5 # eleven char", usage="Usage: !roll")
    assert "at most 10" in plain


async def test_message_over_2000_characters(app, send):
    text = "!roll 5 6 " + "wp " * 700
    assert len(text) > 2000
    plain = await expect_error(send, app, text, usage="Usage: !roll POOL")
    assert f"{len(text)} characters" in plain
    assert "at most 2000" in plain


async def test_over_long_unknown_command_has_no_usage_line(app, send):
    plain = await expect_error(send, app, "!frobnicate " + "x" * 2100, usage=None)
    assert "at most 2000" in plain and "Usage" not in plain


async def test_message_of_2000_characters_is_parsed(app, send):
    text = "!roll 5 6 #" + "c" * 289
    text += " " * (2000 - len(text))
    assert len(text) == 2000
    reply = await send(app, text)
    assert reply is not None and not reply.is_error


async def test_message_limit_counts_the_prefix_added_for_an_addressed_message(
    make_app, recording_dice, send
):
    app = make_app(dice=recording_dice, limits={"max_message_length": 20})
    reply = await send(app, "roll 5 " + "x" * 13, addressed=True)  # 20 chars + "!" = 21
    assert reply is not None and reply.is_error
    assert app.dice.rolls == 0


# --- several rolls in one message ---------------------------------------------------------------


async def test_semicolon_rolls_all_rolled(app, send):
    reply = await send(app, "!roll 5 6; 3 7; 2")
    assert reply is not None and not reply.is_error
    assert app.dice.calls == [(5, 10), (3, 10), (2, 10)]


async def test_too_many_rolls_in_one_message(app, send):
    text = "!roll " + "; ".join(["2"] * 11)
    plain = await expect_error(send, app, text)
    assert "11 rolls" in plain and "at most 10" in plain


async def test_max_rolls_per_message_is_configurable(make_app, recording_dice, send):
    app = make_app(dice=recording_dice, limits={"max_rolls_per_message": 2})
    plain = await expect_error(send, app, "!roll 2; 2; 2")
    assert "at most 2" in plain
    reply = await send(app, "!roll 2; 2")
    assert reply is not None and not reply.is_error
    assert app.dice.rolls == 2


@pytest.mark.parametrize(
    "text",
    [
        "!roll 5 6; 0",
        "!roll 5 6; 3 7; 4 wpp",
        "!roll 5 6; 3 11",
        "!roll 50; 101",
        "!roll 5 6;",
        "!roll 5 6;; 3",
        "!roll 0; 5 6",
    ],
)
async def test_one_bad_segment_means_nothing_is_rolled(app, send, text):
    await expect_error(send, app, text)


async def test_dice_limit_applies_to_each_roll(app, send):
    """The limit is per roll: two rolls of 60 dice are fine, one of 101 is not."""
    reply = await send(app, "!roll 60; 60")
    assert reply is not None and not reply.is_error
    assert app.dice.calls == [(60, 10), (60, 10)]


# --- usage lines follow the room's prefix -------------------------------------------------------


@pytest.fixture
def question_app(make_app, recording_dice):
    return make_app(dice=recording_dice, rooms={"test:q": {"prefix": "?"}})


@pytest.mark.parametrize(
    "text", ["?roll 0", "?roll 5 wpp", "?roll 5 6 7", "?roll 5 # " + "c" * 301, "?roll 5 11"]
)
async def test_usage_line_uses_the_room_prefix(question_app, send, text):
    plain = await expect_error(send, question_app, text, room="q", usage="Usage: ?roll POOL")
    assert "!roll" not in plain


async def test_help_roll_uses_the_room_prefix(question_app, send):
    reply = await send(question_app, "?help roll", room="q")
    plain = to_plain(reply.body)
    assert "?roll POOL [DIFFICULTY]" in plain and "!roll" not in plain


async def test_other_prefix_is_ignored_in_that_room(question_app, send):
    assert await send(question_app, "!roll 5", room="q") is None
    plain = await expect_error(send, question_app, "?rol 5", room="q", usage=None)
    assert "Did you mean `?roll`?" in plain


# --- the after-roll hook is not called when nothing is rolled -----------------------------------


class AfterRollRecorder:
    def __init__(self) -> None:
        self.outcomes: list[object] = []

    @hookimpl
    def coterie_after_roll(self, app, message, variant, outcome):
        self.outcomes.append(outcome)


async def test_after_roll_hook_only_for_real_rolls(app, send):
    recorder = AfterRollRecorder()
    app.host.register(recorder, "recorder")
    await expect_error(send, app, "!roll 5 6; 0")
    assert recorder.outcomes == []
    reply = await send(app, "!roll 5 6; 2")
    assert reply is not None and not reply.is_error
    assert len(recorder.outcomes) == 2
