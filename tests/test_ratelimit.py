"""Rate limiting: per-user and per-room token buckets in front of every command for the bot."""

from __future__ import annotations

import asyncio

import pytest

from conftest import RecordingDice
from coterie.errors import ConfigError
from coterie.framework.config import RateLimits, parse_config
from coterie.framework.ratelimit import BucketTable, RateLimiter, describe_wait


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def limited_app(make_app, clock: Clock, dice: RecordingDice | None = None, **rate):
    app = make_app(limits={"rate": rate}, dice=dice or RecordingDice())
    app.rate_limiter.clock = clock
    return app


async def test_a_burst_of_fifty_gets_the_burst_one_slow_down_then_silence(make_app, send):
    clock = Clock()
    dice = RecordingDice()
    app = limited_app(make_app, clock, dice, user_burst=10, user_per_minute=20)
    replies = [await send(app, "!roll 3 6") for _ in range(50)]
    answered = [r for r in replies if r is not None and not r.is_error]
    warned = [r for r in replies if r is not None and r.is_error]
    assert len(answered) == 10
    assert replies[:10] == answered  # the first ten, in order
    assert len(warned) == 1 and replies[10] is warned[0]
    assert replies[11:] == [None] * 39
    assert dice.rolls == 10  # nothing refused was rolled, nothing was queued
    [slow_down] = warned
    from coterie.render.encode import to_plain

    text = to_plain(slow_down.body)
    assert text.startswith("⚠ slow down") and "you" in text and "seconds" in text
    assert slow_down.ephemeral


async def test_the_bucket_refills_with_time(make_app, say):
    clock = Clock()
    app = limited_app(make_app, clock, user_burst=3, user_per_minute=20)  # one token per 3 s
    assert [await say(app, "!roll 2 6") is not None for _ in range(3)] == [True] * 3
    assert (await say(app, "!roll 2 6") or "").startswith("⚠ slow down")
    assert await say(app, "!roll 2 6") is None
    clock.now += 3.0
    assert "2 dice" in (await say(app, "!roll 2 6") or "")
    # the window of the notice is the time the bucket needs to fill up again (3 tokens: 9 s),
    # not the time until the next token: still silent
    assert await say(app, "!roll 2 6") is None
    clock.now += 6.0  # 9 s after the notice: a new window
    assert "2 dice" in (await say(app, "!roll 2 6") or "")
    assert "2 dice" in (await say(app, "!roll 2 6") or "")
    assert (await say(app, "!roll 2 6") or "").startswith("⚠ slow down")
    clock.now += 3600  # a long pause refills to the burst, not beyond
    answers = [await say(app, "!roll 2 6") for _ in range(5)]
    assert sum("2 dice" in (a or "") for a in answers) == 3
    assert answers[3] is not None and answers[3].startswith("⚠ slow down")  # a new window
    assert answers[4] is None


async def flood(app, clock: Clock, seconds: int, per_second: int = 10, users=("u",)):
    """``per_second`` concurrent `!roll`s a second (through ``Coterie.handle``, as adapters
    call it) from each of ``users`` in one room, for ``seconds``: (answered, notices)."""
    from coterie.framework.message import Message

    answered = notices = 0
    for _ in range(seconds):
        replies = await asyncio.gather(
            *(
                app.handle(Message(platform="slack", room="r", user=user, text="!roll 3 6"))
                for _ in range(per_second)
                for user in users
            )
        )
        answered += sum(1 for r in replies if r is not None and not r.is_error)
        notices += sum(1 for r in replies if r is not None and r.is_error)
        clock.now += 1.0
    return answered, notices


async def test_a_long_concurrent_flood_gets_one_notice_per_window(make_app):
    """Before: one notice each time a token came back (every 3 s): 7 in a 20-second flood."""
    clock = Clock()
    app = limited_app(make_app, clock, user_burst=10, user_per_minute=20)
    answered, notices = await flood(app, clock, 20)
    assert notices == 1
    assert answered == 10 + 6  # the burst, then one token every 3 s: nothing more
    # the window is the 30 s the bucket needs to fill up: a flood of 70 s gets three
    clock.now += 3600
    answered, notices = await flood(app, clock, 70)
    assert notices == 3


async def test_a_dry_room_gets_one_notice_not_one_per_user(make_app):
    clock = Clock()
    app = limited_app(make_app, clock, user_burst=100, room_burst=5, room_per_minute=6)
    answered, notices = await flood(app, clock, 5, per_second=3, users=("a", "b", "c", "d"))
    assert answered == 5 + 0 and notices == 1  # 6 a minute: no token back within 5 s


async def test_the_room_bucket_is_shared_by_everyone_in_it(make_app, say):
    clock = Clock()
    app = limited_app(make_app, clock, user_burst=10, room_burst=5, room_per_minute=6)
    got = [await say(app, "!roll 1 6", user=user) for user in ["a", "b", "c"] * 2]
    assert sum("1 die," in (g or "") for g in got) == 5
    assert got[5] is not None and "this room" in got[5]
    # another room is not affected, and neither is the same user there
    assert "1 die," in (await say(app, "!roll 1 6", user="a", room="other") or "")


async def test_ordinary_chatter_is_never_counted(make_app, say):
    clock = Clock()
    app = limited_app(make_app, clock, user_burst=2)
    for _ in range(100):
        assert await say(app, "hello there, anyone rolling tonight?") is None
    assert "2 dice" in (await say(app, "!roll 2 6") or "")
    assert "2 dice" in (await say(app, "!roll 2 6") or "")
    assert (await say(app, "!roll 2 6") or "").startswith("⚠ slow down")


async def test_unknown_commands_count_and_are_limited_too(make_app, say):
    app = limited_app(make_app, Clock(), user_burst=2)
    assert "unknown command" in (await say(app, "!nope") or "")
    assert "unknown command" in (await say(app, "!nope") or "")
    assert (await say(app, "!nope") or "").startswith("⚠ slow down")


async def test_command_cost(make_app, say):
    app = limited_app(make_app, Clock(), user_burst=10, command_cost={"help": 4})
    assert [await say(app, "!help") is not None for _ in range(2)] == [True, True]
    assert (await say(app, "!help") or "").startswith("⚠ slow down")  # 2 tokens left, needs 4


async def test_disabled_and_exempt_platforms_are_never_limited(make_app, say):
    off = limited_app(make_app, Clock(), enabled=False, user_burst=1)
    on = limited_app(make_app, Clock(), user_burst=1, exempt_platforms=["console"])
    for _ in range(30):
        assert "1 die," in (await say(off, "!roll 1 6") or "")
        assert "1 die," in (await say(on, "!roll 1 6", platform="console") or "")


async def test_a_flood_of_made_up_ids_cannot_grow_memory(make_app, say):
    app = limited_app(make_app, Clock(), user_burst=1, room_burst=1, max_tracked=10)
    for index in range(500):
        await say(app, "!roll 1 6", user=f"spammer{index}", room=f"room{index % 250}")
        await say(app, "!roll 1 6", user=f"spammer{index}", room=f"room{index % 250}")
    limiter = app.rate_limiter
    assert len(limiter.users) <= 10 and len(limiter.rooms) <= 10  # notices live in them too


def test_bucket_table_arithmetic() -> None:
    table = BucketTable(burst=4, per_minute=60, max_size=3)  # one token a second
    assert table.wait("a", 1, now=0) == 0
    for _ in range(4):
        table.take("a", 1, now=0)
    assert table.wait("a", 1, now=0) == pytest.approx(1.0)
    assert table.wait("a", 1, now=0.5) == pytest.approx(0.5)
    assert table.available("a", now=100) == 4  # capped at the burst
    for key in "bcd":
        table.available(key, now=100)
    assert len(table) == 3 and table.available("a", now=100) == 4  # "a" was dropped: full again


def test_limiter_verdicts_and_wait_wording() -> None:
    clock = Clock()
    limiter = RateLimiter(RateLimits(user_burst=1, user_per_minute=1), clock)
    assert limiter.check("slack", "slack:C1", "U1", "roll").allowed
    refused = limiter.check("slack", "slack:C1", "U1", "roll")
    assert not refused.allowed and refused.warn and refused.scope == "user"
    assert refused.retry_after == pytest.approx(60.0)
    assert not limiter.check("slack", "slack:C1", "U1", "roll").warn
    # the same user id on another platform is another person
    assert limiter.check("telegram", "telegram:C1", "U1", "roll").allowed
    assert describe_wait(2) == "a few seconds"
    assert describe_wait(41) == "about 45 seconds"
    assert describe_wait(150) == "about 3 minutes"


@pytest.mark.parametrize(
    ("table", "problem"),
    [
        ({"user_burst": 0}, "limits.rate.user_burst"),
        ({"room_per_minute": 0}, "limits.rate.room_per_minute"),
        ({"command_cost": {"roll": -1}}, "limits.rate.command_cost"),
        ({"user_brust": 3}, "did you mean 'user_burst'"),
    ],
)
def test_bad_rate_limit_config_is_refused(table, problem) -> None:
    with pytest.raises(ConfigError, match=problem):
        parse_config({"limits": {"rate": table}})
