"""Generic dice (issue 22): ``!dice``/``!r`` with a dice expression, read by the d20 library and
rolled from coterie's own dice source, within the limits; ``!r POOL`` still rolls a pool."""

from __future__ import annotations

import pytest

from coterie.framework.message import Message
from coterie.play.dice import is_expression
from coterie.render.elements import Strike, walk
from coterie.render.encode import to_plain


async def test_expression_uses_the_injected_dice(make_app, send, recording_dice):
    app = make_app(faces=[2, 6, 3])
    reply = await send(app, "!r 2d6+3 # damage")
    assert not reply.is_error
    assert to_plain(reply.body) == "alice — damage\n2d6 (2, 6) + 3 = 11"
    assert reply.meta["total"] == "11"


async def test_keep_highest_strikes_the_dropped_dice(make_app, send):
    app = make_app(faces=[4, 9, 1, 7])
    reply = await send(app, "!dice 4d10kh2")
    assert reply.meta["total"] == "16"
    struck = [to_plain([n]) for n in walk(reply.body) if isinstance(n, Strike)]
    assert struck == ["4", "1"]


async def test_r_with_a_pool_is_still_a_pool_roll(make_app, say):
    app = make_app(faces=[8, 8, 2, 9, 1])
    reply = await say(app, "!r 5 6")
    assert "5 dice, difficulty 6" in reply


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("!dice 101d6", "at most 100"),
        ("!r 3d6+", "can't read `3d6+` as dice"),
        ("!dice d5000", "at most 1000 sides"),
        ("!dice 2d6+1234567", "at most 6 digits"),
        ("!dice", "what should I roll?"),
        ("!r 260d10 + 1", "that is 260 dice; a roll may have at most 100"),
        ("!r 60d6 + 41d8", "that is 101 dice"),
    ],
)
async def test_limits_and_bad_expressions_are_friendly(make_app, recording_dice, say, text, error):
    app = make_app(dice=recording_dice)
    reply = await say(app, text)
    assert reply.startswith("⚠ ") and error in reply, reply
    assert "Usage: !dice EXPRESSION" in reply  # (`!r` too: the dice usage, not the pools')
    assert recording_dice.rolls == 0  # refused before a die is drawn
    assert "Traceback" not in reply


async def test_the_dice_written_out_may_reach_the_limit(make_app, recording_dice, say):
    app = make_app(dice=recording_dice)
    reply = await say(app, "!dice 60d6 + 40d8")
    assert not reply.startswith("⚠ "), reply
    assert recording_dice.rolls == 100


async def test_a_roll_that_explodes_past_the_limit_is_refused_as_it_does(
    make_app, recording_dice, say
):
    app = make_app(dice=recording_dice)
    reply = await say(app, "!r 1d1e1")  # a one-sided die that explodes on 1: for ever
    assert reply.startswith("⚠ that roll grew past 100 dice"), reply
    assert recording_dice.rolls == 100  # drawn up to the limit, then dropped
    room = Message(platform="test", room="r1", user="alice", text="").room_key
    assert await app.state.rolls(room, limit=None) == []


def test_what_counts_as_an_expression():
    for yes in ("2d6+3", "d20", "4d10kh2", "1d6 * 2", "d%", "2d6 # fire"):
        assert is_expression(yes), yes
    for no in ("5 6", "3+4 8 wp", "7 2 3 spec", "", "for library", "diff 6"):
        assert not is_expression(no), no
