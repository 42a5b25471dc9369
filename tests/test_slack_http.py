"""The Slack adapter in HTTP mode, end to end: the real Bolt app behind aiohttp on 127.0.0.1 gets
exactly what Slack sends (signed Events API callbacks, form-encoded slash commands, block_actions
payloads) and answers through a recording fake of the Web API (tests/slack_fake.py)."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import pytest

from adapter_harness import LookUps
from character_script import v5_character_session
from coterie_slack import SlackAdapter
from coterie_slack.bot import MAX_LOG_CHARS
from slack_fake import (
    BOT_ID,
    BOT_TOKEN,
    BOT_USER,
    CHANNEL,
    ENV,
    LYNN,
    MARK,
    PNG,
    FakeSlack,
    SlackTestCommands,
    block_action,
    make_core,
    message_event,
    post,
    post_action,
    post_command,
    post_event,
    section_text,
    serving,
    settings_for,
    settle,
    signed_headers,
    slash_command,
)


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as slack:
        yield slack


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as client:
        yield client


def adapter_for(
    fake: FakeSlack,
    faces: list[int] | None = None,
    plugin: SlackTestCommands | None = None,
    **settings: Any,
) -> SlackAdapter:
    return SlackAdapter(make_core(faces, plugin), settings_for(fake, **settings), environ=ENV)


def channel_say(
    fake: FakeSlack, session: Any, adapter: SlackAdapter
) -> Callable[[str], Awaitable[dict[str, Any]]]:
    """``say(text)``: the player's message as a signed event, then the bot's post it brought."""

    async def say(text: str) -> dict[str, Any]:
        status, _ = await post_event(session, adapter, message_event(text))
        assert status == 200
        await settle(adapter)
        return fake.ok_calls("chat.postMessage")[-1].params

    return say


def with_slack_id(fake: FakeSlack, user: str) -> str:
    """``user`` again under an id as long as Slack's (the fake's are shorter than any real one, and
    a reply points at a person only by an id that looks like Slack's: see coterie_slack.mrkdwn)."""
    slack_id = user.ljust(11, "0")
    fake.users[slack_id] = {**fake.users[user], "id": slack_id}
    return slack_id


def message_of(call: Any) -> dict[str, Any]:
    """A posted message as a later block_actions payload shows it (with its ts)."""
    return {**call.params, "ts": call.result["ts"]}


# --- Events API -----------------------------------------------------------------------------------


async def test_url_verification_is_answered(fake, session):
    async with serving(adapter_for(fake)) as adapter:
        body = {
            "token": "legacy",
            "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P",
        }
        status, text = await post_event(session, adapter, {**body, "type": "url_verification"})
    assert status == 200
    assert json.loads(text) == {"challenge": body["challenge"]}
    assert fake.replies() == []


async def test_a_channel_message_gets_a_block_kit_reply(fake, session):
    async with serving(adapter_for(fake, faces=[10, 7, 1, 3, 6])) as adapter:
        event = message_event("!roll 5 6 # &lt;b&gt; &amp; @here <!channel> <https://x.io|x>")
        status, text = await post_event(session, adapter, event)
        assert (status, text) == (200, "")
        await settle(adapter)
    [call] = fake.ok_calls("chat.postMessage")
    assert call.token == BOT_TOKEN
    params = call.params
    assert params["channel"] == CHANNEL and "thread_ts" not in params
    assert params["unfurl_links"] is False and params["unfurl_media"] is False
    blocks = params["blocks"]
    assert [b["type"] for b in blocks] == ["section", "context"]
    assert blocks[0]["text"]["type"] == "mrkdwn" and blocks[0]["text"]["verbatim"] is True
    mrkdwn = section_text(blocks)
    # the display name from users.info, the comment escaped: no tag, no ping, no link
    assert mrkdwn.startswith("*Lynn* — _&lt;b&gt; &amp; @\u2060here @\u2060channel x_\n")
    assert "<" not in mrkdwn and ">" not in mrkdwn
    # die faces styled by role: successes bold, the cancelling 1 and the cancelled 6 struck
    assert "(Standard): *10* *7* ~1~ 3 ~6~\n" in mrkdwn
    assert "*2 successes*" in mrkdwn
    context = blocks[1]["elements"][0]["text"]
    assert context.startswith("roll `") and context.endswith("` · revised")
    # the plain fallback: same words, no formatting, still escaped
    assert params["text"].splitlines()[0] == "Lynn — &lt;b&gt; &amp; @\u2060here @\u2060channel x"
    assert "*" not in params["text"] and "~" not in params["text"]
    assert [c.params["user"] for c in fake.ok_calls("users.info")] == [LYNN]


@pytest.mark.parametrize(
    ("policy", "in_thread", "expected"),
    [
        ("follow", False, None),
        ("follow", True, "parent"),
        ("always", False, "own"),
        ("always", True, "parent"),
        ("never", True, None),
    ],
)
async def test_the_thread_setting(fake, session, policy, in_thread, expected):
    parent = "1690000000.000001"
    event = message_event("!roll 2", thread_ts=parent if in_thread else None)
    async with serving(adapter_for(fake, thread=policy)) as adapter:
        await post_event(session, adapter, event)
        await settle(adapter)
    [call] = fake.ok_calls("chat.postMessage")
    wanted = {"parent": parent, "own": event["event"]["ts"], None: None}[expected]
    assert call.params.get("thread_ts") == wanted


async def test_an_app_mention_runs_a_command_without_prefix(fake, session):
    text = f"<@{BOT_USER}> roll 3 6"
    async with serving(adapter_for(fake, faces=[8, 2, 6])) as adapter:
        # Slack sends both events for a mention in a channel: only the app_mention answers
        await post_event(session, adapter, message_event(text))
        await post_event(session, adapter, message_event(text, event_type="app_mention"))
        # a bare mention asks for help
        await post_event(
            session, adapter, message_event(f"<@{BOT_USER}>", event_type="app_mention")
        )
        await settle(adapter)
    first, second = fake.ok_calls("chat.postMessage")
    assert "3 dice, difficulty 6 (Standard): *8* 2 *6*" in section_text(first.params["blocks"])
    assert section_text(second.params["blocks"]).startswith("*coterie* — rules:")


async def test_a_direct_message_is_addressed(fake, session):
    async with serving(adapter_for(fake, faces=[9])) as adapter:
        event = message_event("roll 1 6", channel="D0LYNN", channel_type="im")
        await post_event(session, adapter, event)
        await settle(adapter)
    [call] = fake.ok_calls("chat.postMessage")
    assert call.params["channel"] == "D0LYNN"
    assert "1 die, difficulty 6" in section_text(call.params["blocks"])


IGNORED = [
    pytest.param({"bot_id": "B0OTHER", "subtype": "bot_message", "user": None}, id="bot-message"),
    pytest.param({"bot_id": "B0OTHER"}, id="other-bot-with-user"),
    pytest.param({"user": BOT_USER, "bot_id": BOT_ID}, id="own-message"),
    pytest.param({"user": BOT_USER}, id="own-user-without-bot-id"),
    pytest.param({"subtype": "message_changed"}, id="edit"),
    pytest.param({"edited": {"user": LYNN, "ts": "1690000000.1"}}, id="edited-flag"),
    pytest.param({"subtype": "message_deleted"}, id="deletion"),
    pytest.param({"subtype": "channel_join"}, id="join"),
    pytest.param({"hidden": True}, id="hidden"),
]


@pytest.mark.parametrize("fields", IGNORED)
async def test_messages_that_are_not_a_persons_are_ignored(fake, session, fields):
    async with serving(adapter_for(fake, faces=[5])) as adapter:
        ignored = message_event("!roll 1", **fields)
        status, _ = await post_event(session, adapter, ignored)
        assert status == 200  # acknowledged all the same
        await settle(adapter)
        assert fake.replies() == []
        # nothing answered, nothing to remember: no claim, no "answered" mark
        assert await adapter.app.state.get("slack.events", f"event:{ignored['event_id']}") is None
        # the same words from a person are answered
        await post_event(session, adapter, message_event("!roll 1"))
        await settle(adapter)
    assert len(fake.ok_calls("chat.postMessage")) == 1


async def test_chatter_and_mentions_elsewhere_are_left_alone(fake, session):
    async with serving(adapter_for(fake, faces=[4, 9])) as adapter:
        await post_event(session, adapter, message_event("just talking about the roll"))
        # a mention that does not start the message addresses nobody: the prefix is needed
        await post_event(
            session, adapter, message_event(f"thanks <@{BOT_USER}>", event_type="app_mention")
        )
        await post_event(
            session,
            adapter,
            message_event(f"!roll 2 # for <@{BOT_USER}>", event_type="app_mention"),
        )
        await settle(adapter)
    [call] = fake.ok_calls("chat.postMessage")
    assert section_text(call.params["blocks"]).startswith("*Lynn* — _for_\n2 dice")


async def test_an_ephemeral_reply_goes_to_the_caller_only(fake, session):
    parent = "1690000000.000002"
    async with serving(adapter_for(fake)) as adapter:
        await post_event(session, adapter, message_event("!secret", thread_ts=parent))
        await settle(adapter)
    assert fake.ok_calls("chat.postMessage") == []
    [call] = fake.ok_calls("chat.postEphemeral")
    assert call.params["user"] == LYNN and call.params["channel"] == CHANNEL
    assert call.params["thread_ts"] == parent
    assert section_text(call.params["blocks"]) == "for your eyes only"


async def test_an_image_is_uploaded_into_the_thread(fake, session):
    parent = "1690000000.000003"
    async with serving(adapter_for(fake)) as adapter:
        await post_event(session, adapter, message_event("!chart", thread_ts=parent))
        await settle(adapter)
    [message] = fake.ok_calls("chat.postMessage")
    assert section_text(message.params["blocks"]) == "Odds of 5 dice:"
    assert message.params["thread_ts"] == parent
    [url] = fake.ok_calls("files.getUploadURLExternal")
    assert url.params["filename"] == "odds.png" and url.params["length"] == str(len(PNG))
    assert url.params["alt_txt"] == "odds of 5 dice"
    assert fake.uploads == {url.result["file_id"]: PNG}
    [done] = fake.ok_calls("files.completeUploadExternal")
    assert done.params["channel_id"] == CHANNEL and done.params["thread_ts"] == parent
    files = json.loads(done.params["files"])
    assert files == [{"id": url.result["file_id"], "title": "odds of 5 dice"}]


async def test_a_failed_upload_is_explained_to_the_caller(fake, session):
    fake.fail_next("files.completeUploadExternal", 200, "not_in_channel")
    async with serving(adapter_for(fake)) as adapter:
        await post_event(session, adapter, message_event("!chart"))
        await settle(adapter)
    [notice] = fake.ok_calls("chat.postEphemeral")
    assert notice.params["user"] == LYNN
    assert "could not post the image here (not_in_channel)" in notice.params["text"]


# --- slash commands -------------------------------------------------------------------------------


async def test_slash_commands_are_answered_in_the_channel(fake, session):
    async with serving(adapter_for(fake, faces=[10, 3, 7, 7, 1, 2, 8])) as adapter:
        fields = slash_command("/roll", "7 6 # ambush", response_url=fake.response_url("roll"))
        assert await post_command(session, adapter, fields) == (200, "")
        help_fields = slash_command("/coterie", "help", response_url=fake.response_url("help"))
        await post_command(session, adapter, help_fields)
        await settle(adapter)
    [roll] = fake.posted_to("roll")
    assert roll["response_type"] == "in_channel" and roll["replace_original"] is False
    assert section_text(roll["blocks"]).startswith(
        "*Lynn* — _ambush_\n7 dice, difficulty 6 (Standard): *10* 3 ~7~ *7* ~1~ 2 *8*"
    )
    assert roll["blocks"][-1]["type"] == "context"
    [help_reply] = fake.posted_to("help")
    assert help_reply["response_type"] == "in_channel"
    assert "`!roll` — roll a dice pool" in section_text(help_reply["blocks"])
    assert fake.replies() == []  # nothing through chat.postMessage


@pytest.mark.parametrize(
    ("command", "text", "expected"),
    [
        ("/roll", "0", "a pool of 0 dice"),
        ("/odds", "0", "a pool of 0 dice"),
        ("/coterie", "rol 5", "Did you mean `!roll`?"),
    ],
)
async def test_slash_command_errors_are_ephemeral(fake, session, command, text, expected):
    async with serving(adapter_for(fake)) as adapter:
        fields = slash_command(command, text, response_url=fake.response_url("err"))
        await post_command(session, adapter, fields)
        await settle(adapter)
    [reply] = fake.posted_to("err")
    assert reply["response_type"] == "ephemeral"
    assert expected in reply["text"]


async def test_a_secret_slash_command_reply_is_ephemeral(fake, session):
    async with serving(adapter_for(fake)) as adapter:
        fields = slash_command("/coterie", "secret", response_url=fake.response_url("s"))
        await post_command(session, adapter, fields)
        await settle(adapter)
    [reply] = fake.posted_to("s")
    assert reply["response_type"] == "ephemeral" and reply["text"] == "for your eyes only"


async def test_a_slash_command_is_acknowledged_before_it_is_answered(fake, session):
    plugin = SlackTestCommands()
    async with serving(adapter_for(fake, plugin=plugin)) as adapter:
        fields = slash_command("/coterie", "slow", response_url=fake.response_url("slow"))
        started = time.monotonic()
        status, _ = await post_command(session, adapter, fields)
        assert status == 200 and time.monotonic() - started < 3
        assert fake.posted == []  # the answer is still being computed
        plugin.gate.set()
        await settle(adapter)
    [reply] = fake.posted_to("slow")
    assert reply["text"] == "done waiting"


async def test_slash_command_names_are_configurable(fake, session):
    commands = {"/wod": "", "/wod-roll": "roll"}
    async with serving(adapter_for(fake, faces=[6], slash_commands=commands)) as adapter:
        await post_command(
            session, adapter, slash_command("/wod-roll", "1", response_url=fake.response_url("a"))
        )
        status, _ = await post_command(
            session, adapter, slash_command("/roll", "1", response_url=fake.response_url("b"))
        )
        await settle(adapter)
    assert "1 die, difficulty 6" in fake.posted_to("a")[0]["text"]
    assert status == 404  # no listener: Bolt reports the unknown command, nothing answers
    assert fake.posted_to("b") == []


# --- buttons --------------------------------------------------------------------------------------


async def test_only_the_roller_may_press_a_button(fake, session):
    async with serving(adapter_for(fake)) as adapter:
        await post_event(session, adapter, message_event("!offer"))
        await settle(adapter)
        [offer] = fake.ok_calls("chat.postMessage")
        [row] = [b for b in offer.params["blocks"] if b["type"] == "actions"]
        reroll, keep = row["elements"]
        assert [reroll["text"]["text"], keep["text"]["text"]] == ["Re-roll 3 failures", "Keep"]
        assert json.loads(reroll["value"]) == {"c": "!echo rerolled", "u": LYNN}
        message = message_of(offer)

        # someone else: a notice only they see; nothing runs, the buttons stay
        payload = block_action(message, reroll, user=MARK, response_url=fake.response_url("m"))
        assert await post_action(session, adapter, payload) == (200, "")
        await settle(adapter)
        [notice] = fake.posted_to("m")
        assert notice["response_type"] == "ephemeral" and notice["replace_original"] is False
        assert f"Only <@{LYNN}> can use these buttons" in notice["text"]

        # the roller: the buttons go from the original, the command's reply is posted
        payload = block_action(message, reroll, user=LYNN, response_url=fake.response_url("l"))
        await post_action(session, adapter, payload)
        await settle(adapter)
    replaced, answer = fake.posted_to("l")
    assert replaced["replace_original"] is True
    assert [b["type"] for b in replaced["blocks"]] == ["section", "context"]
    assert answer["response_type"] == "in_channel" and answer["replace_original"] is False
    assert section_text(answer["blocks"]) == "*Lynn*: rerolled"
    assert len(fake.ok_calls("chat.postMessage")) == 1


async def test_a_button_in_a_thread_answers_in_that_thread(fake, session):
    parent = "1690000000.000004"
    async with serving(adapter_for(fake)) as adapter:
        await post_event(session, adapter, message_event("!offer", thread_ts=parent))
        await settle(adapter)
        [offer] = fake.ok_calls("chat.postMessage")
        assert offer.params["thread_ts"] == parent
        keep = next(b for b in offer.params["blocks"] if b["type"] == "actions")["elements"][1]
        payload = block_action(
            message_of(offer), keep, user=LYNN, response_url=fake.response_url("k")
        )
        await post_action(session, adapter, payload)
        await settle(adapter)
    _, answer = fake.posted_to("k")
    assert answer["thread_ts"] == parent
    assert section_text(answer["blocks"]) == "*Lynn*: kept"


# --- signatures and retries -----------------------------------------------------------------------


def forged(how: str, body: str) -> tuple[str, dict[str, str]]:
    """A request body and headers that Slack did not sign, or signed too long ago."""
    now = int(time.time())
    if how == "forged":
        return body, {"X-Slack-Request-Timestamp": str(now), "X-Slack-Signature": "v0=" + "0" * 64}
    if how == "wrong-secret":
        return body, signed_headers(body, secret="not-the-signing-secret")
    # outside Bolt's 5-minute window by a minute: the clock moves on while the server starts
    if how == "stale":
        return body, signed_headers(body, timestamp=now - 360)
    if how == "future":
        return body, signed_headers(body, timestamp=now + 360)
    if how == "no-headers":
        return body, {}
    if how == "no-signature":
        return body, {"X-Slack-Request-Timestamp": str(now)}
    assert how == "tampered-body"
    return body.replace("!roll 3", "!roll 9"), signed_headers(body)


@pytest.mark.parametrize(
    "how",
    ["forged", "wrong-secret", "stale", "future", "no-headers", "no-signature", "tampered-body"],
)
async def test_unsigned_or_replayed_requests_are_refused(fake, session, how):
    event = message_event("!roll 3")
    body, headers = forged(how, json.dumps(event))
    async with serving(adapter_for(fake)) as adapter:
        status, _ = await post(
            session, adapter, body, content_type="application/json", sign=False, headers=headers
        )
        assert status == 401
        await settle(adapter)
        assert fake.calls == [c for c in fake.calls if c.method == "auth.test"]
        # the same event, correctly signed and in time, is accepted
        assert await post_event(session, adapter, event) == (200, "")
        await settle(adapter)
    assert len(fake.ok_calls("chat.postMessage")) == 1


async def test_a_retried_event_is_answered_once(fake, session):
    event = message_event("!roll 2")
    async with serving(adapter_for(fake)) as adapter:
        assert await post_event(session, adapter, event) == (200, "")
        # Slack did not see our ack in time and sends it again (twice, at once)
        retries = [
            post_event(
                session,
                adapter,
                event,
                headers={"X-Slack-Retry-Num": str(n), "X-Slack-Retry-Reason": "http_timeout"},
            )
            for n in (1, 2)
        ]
        assert await asyncio.gather(*retries) == [(200, ""), (200, "")]
        await settle(adapter)
        # a new event with the same text is a new roll
        await post_event(session, adapter, message_event("!roll 2"))
        await settle(adapter)
    assert len(fake.ok_calls("chat.postMessage")) == 2


async def test_a_first_attempt_is_not_looked_up_and_a_replay_is_answered_once(fake, session):
    """Slack's first attempt at an event (no X-Slack-Retry-Num) cannot have been stored by
    anyone: the store is not read for it before answering (a round trip less on PostgreSQL);
    the claim, made in the command's transaction, still finds a replayed one."""
    adapter = adapter_for(fake)
    counting = LookUps(adapter.app.state.store, "slack.events")
    adapter.app.state = counting
    event = message_event("!roll 2")
    async with serving(adapter) as running:
        assert await post_event(session, running, event) == (200, "")
        await settle(running)
        assert counting.reads == 0
        # the same first attempt again (a replay, not a retry): acknowledged, not answered
        assert await post_event(session, running, event) == (200, "")
        await settle(running)
        retry = {"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"}
        assert await post_event(session, running, event, headers=retry) == (200, "")
        await settle(running)
        assert counting.reads == 1  # a retry is looked up first, as before
    assert len(fake.ok_calls("chat.postMessage")) == 1


class CountingStore:
    """A store that counts its write transactions (``transaction`` and single-call writes)."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.writes = 0

    def transaction(self, lock: str = "") -> Any:
        self.writes += 1
        return self.store.transaction(lock)

    async def set(self, namespace: str, key: str, value: Any) -> None:
        self.writes += 1
        await self.store.set(namespace, key, value)

    async def delete(self, namespace: str, key: str) -> None:
        self.writes += 1
        await self.store.delete(namespace, key)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


async def test_a_message_is_one_write_transaction_on_sqlite(fake, session, tmp_path, monkeypatch):
    """Issue 18: the delivery's claim, the roll and its answer record are one transaction, and
    the "answered" mark rides on the next message's (or, with nothing to ride on, gets one of
    its own a moment later). Slack is acknowledged once the reply is out, not waiting for the
    mark: with one message at a time, each mark rides on the next message. Before, each message
    was three transactions: the claim, the command, the mark."""
    from coterie.storage import deferred
    from coterie.storage.migrate import upgrade
    from coterie.storage.sql import SQLStore

    monkeypatch.setattr(deferred, "DELAY", 60.0)  # no mark lands on its own during the test
    url = f"sqlite+aiosqlite:///{tmp_path / 'state.db'}"
    await upgrade(url)
    counting = CountingStore(SQLStore(url))
    adapter = adapter_for(fake)
    adapter.app.state = counting
    events = [message_event(f"!roll 3 # {n}") for n in range(4)]
    keys = ["event:" + event["event_id"] for event in events]
    async with serving(adapter) as adapter:
        for n, event in enumerate(events):  # one after the other
            before, began = counting.writes, time.monotonic()
            assert await post_event(session, adapter, event) == (200, "")
            # (waiting for the mark, as before, held the 200 for a whole second here)
            assert time.monotonic() - began < 0.9
            assert counting.writes - before == 1
            # acknowledged before its own mark is in the store; the one before it rode along
            entry = await counting.store.get("slack.events", keys[n])
            assert entry is not None and entry["done"] is False
            if n:
                entry = await counting.store.get("slack.events", keys[n - 1])
                assert entry is not None and entry["done"] is True
        # a delivery again of the last one, before its mark landed: known here, not answered
        retry = {"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"}
        assert await post_event(session, adapter, events[-1], headers=retry) == (200, "")
        await settle(adapter)
        assert len(fake.ok_calls("chat.postMessage")) == len(events)
        # sixteen at once: the marks ride on the other messages' transactions
        crowd = [
            message_event(f"!roll 3 # crowd {n}", channel=f"C0CROWD{n}", user=f"U0CROWD{n}")
            for n in range(16)
        ]
        before = counting.writes
        statuses = await asyncio.gather(*(post_event(session, adapter, e) for e in crowd))
        assert statuses == [(200, "")] * len(crowd)
        await settle(adapter)
        assert counting.writes - before < 1.5 * len(crowd), counting.writes - before
        assert len(await counting.rolls("slack:" + CHANNEL)) == len(events)
        # and each is still answered once when Slack sends it again
        retry = {"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"}
        assert await post_event(session, adapter, events[0], headers=retry) == (200, "")
        await settle(adapter)
    assert len(fake.ok_calls("chat.postMessage")) == len(events) + len(crowd)
    await counting.close()


async def test_a_message_is_two_round_trips_on_postgresql(
    fake, session, pg_url, pg_trips, monkeypatch
):
    """Issue 18 through the adapter a worker runs, the shared rate limits on: the command's
    transaction reads the claim, the event's record and the room's keys and takes the rate
    limit's tokens with the lock (one round trip), then commits the claim, the roll, its answer
    record and the last message's "answered" mark (the second). Nothing else."""
    from coterie.storage import deferred
    from coterie.storage.migrate import upgrade
    from coterie.storage.sql import SQLStore

    monkeypatch.setattr(deferred, "DELAY", 60.0)  # every mark rides on the next message
    await upgrade(pg_url)
    adapter = adapter_for(fake)
    adapter.app.state = SQLStore(pg_url)
    assert type(adapter.app.rate_limiter).__name__ == "SharedRateLimiter"
    events = [message_event(f"!roll 3 # {n}") for n in range(8)]
    async with serving(adapter) as adapter:
        for event in events[:3]:  # connections opened, the room's read-ahead learnt
            assert await post_event(session, adapter, event) == (200, "")
        before = pg_trips["n"]
        for event in events[3:]:
            assert await post_event(session, adapter, event) == (200, "")
        assert pg_trips["n"] - before == 2 * len(events[3:])
        await settle(adapter)
    assert len(fake.ok_calls("chat.postMessage")) == len(events)
    await adapter.app.state.close()


async def test_a_repeated_slash_command_delivery_is_answered_once(fake, session):
    fields = slash_command("/roll", "1", response_url=fake.response_url("once"))
    async with serving(adapter_for(fake)) as adapter:
        await post_command(session, adapter, fields)
        await post_command(session, adapter, fields)
        await settle(adapter)
    assert len(fake.posted_to("once")) == 1


async def test_a_rate_limited_call_is_retried_and_arrives_once(fake, session):
    fake.fail_next("chat.postMessage", 429, "ratelimited", {"Retry-After": "0"})
    async with serving(adapter_for(fake)) as adapter:
        await post_event(session, adapter, message_event("!roll 2"))
        await settle(adapter)
    attempts = fake.attempts("chat.postMessage")
    assert [a.status for a in attempts] == [429, 200]
    assert attempts[0].params == attempts[1].params
    assert len(fake.ok_calls("chat.postMessage")) == 1


async def test_a_post_failing_with_5xx_is_retried_and_arrives_once(fake, session):
    # rate_limit_retries = 2 (tests/slack_fake.py): two retries, where only one was made before
    fake.fail_next("chat.postMessage", 503, "service_unavailable", {"Retry-After": "0"})
    fake.fail_next("chat.postMessage", 502, "bad_gateway")  # no Retry-After: the back-off
    async with serving(adapter_for(fake)) as adapter:
        await post_event(session, adapter, message_event("!roll 2"))
        await settle(adapter)
    attempts = fake.attempts("chat.postMessage")
    assert [a.status for a in attempts] == [503, 502, 200]
    assert len({json.dumps(a.params, sort_keys=True) for a in attempts}) == 1
    assert len(fake.ok_calls("chat.postMessage")) == 1


async def test_a_reply_that_cannot_be_posted_is_not_marked_answered(fake, session):
    """Slack keeps failing (5xx beyond the retries): the event must not count as answered, so
    Slack's next delivery of it is answered (before, it was acknowledged and the reply lost)."""
    for _ in range(3):  # the first post and rate_limit_retries = 2 retries
        fake.fail_next("chat.postMessage", 503, "service_unavailable", {"Retry-After": "0"})
    event = message_event("!roll 2")
    async with serving(adapter_for(fake)) as adapter:
        status, _ = await post_event(session, adapter, event)
        assert status == 503  # not acknowledged: Slack will deliver it again
        await settle(adapter)
        assert fake.ok_calls("chat.postMessage") == []
        retry = {"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_error"}
        assert await post_event(session, adapter, event, headers=retry) == (200, "")
        await settle(adapter)
        # and a further delivery of the answered event is not answered twice
        retry = {"X-Slack-Retry-Num": "2", "X-Slack-Retry-Reason": "http_error"}
        assert await post_event(session, adapter, event, headers=retry) == (200, "")
        await settle(adapter)
    assert len(fake.ok_calls("chat.postMessage")) == 1
    assert [a.status for a in fake.attempts("chat.postMessage")] == [503] * 3 + [200]


async def died_after_posting(adapter: SlackAdapter, event: dict[str, Any]) -> None:
    """Leave ``event``'s delivery as a worker killed right after Slack accepted its reply
    leaves it: claimed long ago, never marked answered."""
    assert adapter.bot is not None
    then = time.time() - 60
    key = f"event:{event['event_id']}"
    entry = {"at": then, "claimed": then, "done": False}
    await adapter.bot.core.state.set("slack.events", key, entry)


@pytest.mark.parametrize("thread", ["follow", "always"])
async def test_a_redelivery_after_a_crash_does_not_post_the_reply_again(fake, session, thread):
    """The kill -9 window: Slack accepted the reply, the worker died before marking the event
    answered, Slack delivers the event again. The reply carries the delivery in its metadata;
    the redelivery finds it in the channel (or thread) and posts nothing."""
    event = message_event("!roll 2 # once")
    fake.user_posted(event)
    async with serving(adapter_for(fake, thread=thread)) as adapter:
        assert await post_event(session, adapter, event) == (200, "")
        await settle(adapter)
        [first] = fake.ok_calls("chat.postMessage")
        metadata = {
            "event_type": "coterie_reply",
            "event_payload": {"delivery": "event:" + event["event_id"]},
        }
        assert first.params["metadata"] == metadata
        assert first.result["message"]["metadata"] == metadata  # Slack echoes it
        await died_after_posting(adapter, event)
        retry = {"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"}
        assert await post_event(session, adapter, event, headers=retry) == (200, "")
        await settle(adapter)
        # answered now: a later delivery is acknowledged without a look
        retry = {"X-Slack-Retry-Num": "2", "X-Slack-Retry-Reason": "http_timeout"}
        assert await post_event(session, adapter, event, headers=retry) == (200, "")
        await settle(adapter)
    assert len(fake.ok_calls("chat.postMessage")) == 1
    assert len(fake.bot_messages(CHANNEL)) == 1
    read = "conversations.replies" if thread == "always" else "conversations.history"
    [look] = fake.ok_calls(read)
    assert look.params["include_all_metadata"] in ("1", "true", True)
    assert look.params["oldest"] == event["event"]["ts"]


async def test_the_look_for_an_earlier_reply_follows_the_pages(fake, session, monkeypatch):
    """Many messages came after the reply (newest first, two a page here): the look reads on
    through ``next_cursor`` until it finds it."""
    import coterie_slack.posted

    monkeypatch.setattr(coterie_slack.posted, "PAGE", 2)
    event = message_event("!roll 2 # first")
    fake.user_posted(event)
    async with serving(adapter_for(fake)) as adapter:
        assert await post_event(session, adapter, event) == (200, "")
        await settle(adapter)
        for n in range(5):  # later chatter and replies push it back
            later = message_event(f"!roll 1 # later-{n}")
            fake.user_posted(later)
            assert await post_event(session, adapter, later) == (200, "")
            await settle(adapter)
        await died_after_posting(adapter, event)
        retry = {"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"}
        assert await post_event(session, adapter, event, headers=retry) == (200, "")
        await settle(adapter)
    assert len(fake.ok_calls("chat.postMessage")) == 6
    looks = fake.ok_calls("conversations.history")
    assert len(looks) > 2 and not looks[0].params.get("cursor") and looks[-1].params["cursor"]
    assert all(len(look.result["messages"]) <= 2 for look in looks)


async def test_a_redelivery_whose_reply_was_never_posted_is_answered(fake, session):
    """The same redelivery when the worker died before its post reached Slack: the look finds
    nothing (other replies in the channel do not count) and the stored reply is posted."""
    other = message_event("!roll 1 # other")
    event = message_event("!roll 2 # late")
    async with serving(adapter_for(fake)) as adapter:
        assert await post_event(session, adapter, other) == (200, "")
        await settle(adapter)
        fake.fail_next("chat.postMessage", 400, "fatal_error")  # lost for good: no retry
        assert await post_event(session, adapter, event) == (200, "")
        await settle(adapter)
        await died_after_posting(adapter, event)
        retry = {"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"}
        assert await post_event(session, adapter, event, headers=retry) == (200, "")
        await settle(adapter)
    texts = [c.params["text"] for c in fake.ok_calls("chat.postMessage")]
    assert len(texts) == 2 and "late" in texts[1]
    assert len(fake.ok_calls("conversations.history")) == 1


async def test_without_the_history_scope_a_redelivery_posts_anyway_and_says_so_once(
    fake, session, caplog
):
    fake.scopes.discard("channels:history")
    events = [message_event(f"!roll 2 # twice-{n}") for n in range(2)]
    caplog.set_level(logging.INFO, logger="coterie.slack")
    async with serving(adapter_for(fake)) as adapter:
        for event in events:
            assert await post_event(session, adapter, event) == (200, "")
            await settle(adapter)
            await died_after_posting(adapter, event)
            retry = {"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"}
            assert await post_event(session, adapter, event, headers=retry) == (200, "")
            await settle(adapter)
    # no reply lost: each posted again (the doubled reply the scope would have prevented)
    assert len(fake.ok_calls("chat.postMessage")) == 4
    [refused] = fake.attempts("conversations.history")  # asked once, then not again
    assert refused.error == "missing_scope"
    warnings = [r for r in caplog.records if "missing_scope" in r.getMessage()]
    assert len(warnings) == 1 and "channels:history" in warnings[0].getMessage()


async def test_a_flood_of_unsigned_requests_logs_no_bodies(fake, session, caplog):
    """slack-bolt logged the whole body of every unsigned request at INFO (100 posts made a
    90 MB log): now one short line each, without the body or any token in it."""
    caplog.set_level(logging.DEBUG)
    filler = "player text that must stay private " * 1500  # about 50 KB
    event = message_event(f"!roll 3 {filler} {BOT_TOKEN}")
    body = json.dumps(event)
    async with serving(adapter_for(fake)) as adapter:
        caplog.clear()
        for _ in range(100):
            status, _ = await post(
                session, adapter, body, content_type="application/json", sign=False
            )
            assert status == 401
        await settle(adapter)
    text = "\n".join(record.getMessage() for record in caplog.records)
    assert "player text" not in text and BOT_TOKEN not in text
    assert len(text) < 100 * MAX_LOG_CHARS
    assert fake.ok_calls("chat.postMessage") == []


@pytest.mark.parametrize("level", [logging.INFO, logging.DEBUG])
async def test_the_slack_libraries_build_debug_lines_only_when_they_are_logged(
    fake, session, caplog, level
):
    """slack-sdk formats a whole request and response for a debug line when its logger's own
    level (not the effective one) allows DEBUG: the adapter's loggers carry the process's level,
    so at INFO no Web API call asks for one, and at DEBUG they are still logged."""
    caplog.set_level(level)
    web = logging.getLogger("coterie.slack.web")
    asked: list[str] = []
    debug = web.debug

    def counting(msg: object, *args: Any, **kwargs: Any) -> None:
        asked.append(str(msg))
        debug(msg, *args, **kwargs)

    web.debug = counting  # type: ignore[method-assign]
    try:
        async with serving(adapter_for(fake)) as adapter:
            assert await post_event(session, adapter, message_event("!roll 2")) == (200, "")
            await settle(adapter)
    finally:
        del web.debug
    assert len(fake.ok_calls("chat.postMessage")) == 1
    logged = [r.getMessage() for r in caplog.records if r.name == "coterie.slack.web"]
    if level == logging.INFO:
        assert asked == [] and logged == []
    else:
        assert any(line.startswith("Sending a request") for line in asked)
        assert any(line.startswith("Sending a request") for line in logged)


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        ("{not json", "application/json"),
        ("[1, 2, 3]", "application/json"),
        ('"just a string"', "application/json"),
        ("payload=%7Bbroken", "application/x-www-form-urlencoded"),
    ],
)
async def test_a_malformed_body_gets_400_not_500(fake, session, caplog, body, content_type):
    async with serving(adapter_for(fake)) as adapter:
        status, _ = await post(session, adapter, body, content_type=content_type)
        assert status == 400
        # the server is fine: the next (good) event is answered
        assert await post_event(session, adapter, message_event("!roll 2")) == (200, "")
        await settle(adapter)
    assert len(fake.ok_calls("chat.postMessage")) == 1
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert "Traceback" not in caplog.text


# --- names and shutdown ---------------------------------------------------------------------------


async def test_without_users_read_names_fall_back(fake, session):
    fake.fail_next("users.info", 200, "missing_scope")
    async with serving(adapter_for(fake, faces=[6, 6])) as adapter:
        await post_event(session, adapter, message_event("!roll 1", user=MARK))
        await settle(adapter)
        fields = slash_command(
            "/roll", "1", user=MARK, user_name="mark", response_url=fake.response_url("r")
        )
        await post_command(session, adapter, fields)
        await settle(adapter)
    [call] = fake.ok_calls("chat.postMessage")
    assert section_text(call.params["blocks"]).startswith(f"*{MARK}*\n")
    assert section_text(fake.posted_to("r")[0]["blocks"]).startswith("*mark*\n")
    assert len(fake.attempts("users.info")) == 1  # not asked again once refused


async def test_names_are_cached(fake, session):
    async with serving(adapter_for(fake, faces=[6, 6, 6])) as adapter:
        for _ in range(3):
            await post_event(session, adapter, message_event("!roll 1", user=MARK))
            await settle(adapter)
    calls = fake.ok_calls("chat.postMessage")
    # Mark has no display name: his real name is shown
    assert [section_text(c.params["blocks"]).split("\n")[0] for c in calls] == ["*Mark Roe*"] * 3
    assert [c.params["user"] for c in fake.attempts("users.info")] == [MARK]


async def test_stopping_finishes_the_replies_in_flight(fake, session):
    plugin = SlackTestCommands()
    async with serving(adapter_for(fake, plugin=plugin)) as adapter:
        await post_event(session, adapter, message_event("!slow"))
        assert adapter.bot is not None and adapter.bot.busy == 1
        asyncio.get_running_loop().call_later(0.05, plugin.gate.set)
    # the block has ended: the adapter stopped, after answering
    [call] = fake.ok_calls("chat.postMessage")
    assert call.params["text"] == "done waiting"
    assert not adapter.ready.is_set()


# --- private parts (secret rolls) -----------------------------------------------------------------


async def test_a_secret_roll_reaches_the_roller_and_the_storyteller_privately(fake, session):
    async with serving(adapter_for(fake, faces=[10, 7, 1, 3, 6])) as adapter:
        await post_event(session, adapter, message_event("!storyteller claim", user=MARK))
        await settle(adapter)
        await post_event(session, adapter, message_event("!roll 5 6 secret # ambush"))
        await settle(adapter)
        public = fake.ok_calls("chat.postMessage")[-1].params
        roll_id = public["blocks"][-1]["elements"][0]["text"].split("`")[1]
        await post_event(session, adapter, message_event(f"!reveal {roll_id}", user=MARK))
        await settle(adapter)
    revealed = fake.ok_calls("chat.postMessage")[-1].params
    assert revealed["channel"] == CHANNEL and "ambush" in revealed["text"]
    assert "(Standard): *10* *7* ~1~ 3 ~6~" in section_text(revealed["blocks"])
    assert public["channel"] == CHANNEL
    assert public["text"].startswith("Lynn made a secret roll.")
    assert "10" not in json.dumps(public["blocks"]) and "ambush" not in public["text"]
    private = {c.params["user"]: c.params for c in fake.ok_calls("chat.postEphemeral")}
    assert set(private) == {LYNN, MARK}
    for params in private.values():
        assert params["channel"] == CHANNEL
        assert "(Standard): *10* *7* ~1~ 3 ~6~" in section_text(params["blocks"])
        assert "ambush" in params["text"]
    assert "reveal" in private[LYNN]["text"] and "Lynn's secret roll" in private[MARK]["text"]


async def test_a_private_part_goes_to_a_direct_message_where_ephemeral_cannot(fake, session):
    fake.fail_next("chat.postEphemeral", 200, "user_not_in_channel")
    async with serving(adapter_for(fake, faces=[9, 9])) as adapter:
        await post_event(session, adapter, message_event("!roll 2 6 secret"))
        await settle(adapter)
    [failed] = fake.attempts("chat.postEphemeral")
    assert failed.error == "user_not_in_channel"
    [opened] = fake.ok_calls("conversations.open")
    assert opened.params["users"] == LYNN
    direct = [c.params for c in fake.ok_calls("chat.postMessage") if c.params["channel"] != CHANNEL]
    assert [d["channel"] for d in direct] == [f"D{LYNN}"]
    assert "*9* *9*" in section_text(direct[0]["blocks"])
    room = [c.params for c in fake.ok_calls("chat.postMessage") if c.params["channel"] == CHANNEL]
    assert [r["text"].splitlines()[0] for r in room] == ["Lynn made a secret roll."]


async def test_an_ask_tells_the_player_by_a_slack_mention(fake, session):
    """The Storyteller's `!ask <@U…> … secret` names the player by Slack's own mention, so Slack
    shows their name and notifies them; a name typed after "@" stays text."""
    asked = "U0OTHER123"
    async with serving(adapter_for(fake)) as adapter:
        for text in ("!storyteller claim", f"!ask <@{asked}> 5 6 secret", "!ask @bob 3 7 secret"):
            await post_event(session, adapter, message_event(text, user=MARK))
            await settle(adapter)
    room = [c.params for c in fake.ok_calls("chat.postMessage") if c.params["channel"] == CHANNEL]
    ask, typed = room[-2:]
    assert section_text(ask["blocks"]).startswith(f"*Mark Roe* asks <@{asked}> to roll `5`")
    assert ask["text"].startswith(f"Mark Roe asks <@{asked}> to roll 5 against")
    assert section_text(typed["blocks"]).startswith("*Mark Roe* asks bob to roll `3`")
    assert "<@" not in typed["text"]


async def test_a_character_sheet_is_rendered_as_block_kit(fake, session):
    """#17: `!sheet` through the real adapter: a section of mrkdwn, the name bold, the plain
    fallback the same words."""
    async with serving(adapter_for(fake)) as adapter:
        for text in ("!char new Lise", "!char set Strength 3 Brawl 2", "!sheet"):
            status, _ = await post_event(session, adapter, message_event(text))
            assert status == 200
            await settle(adapter)
    *_, call = fake.ok_calls("chat.postMessage")
    mrkdwn = section_text(call.params["blocks"])
    assert mrkdwn.startswith("*Lise* (Lynn, revised)")
    assert "*Attributes*  Strength 3 · Dexterity 1" in mrkdwn
    assert "*Talents*  Brawl 2" in mrkdwn
    assert "Health [.......] Healthy" in mrkdwn
    plain = call.params["text"]
    assert plain.startswith("Lise (Lynn, revised)") and "*" not in plain


async def test_v5_remorse_vs_by_name_and_a_macro_in_block_kit(fake, session):
    """#17 through the real adapter in a room switched to v5: `!remorse` (the outcome and the
    Humanity change), `vs` another character of the same player by Trait names, a macro typed
    in lower-case abbreviations shown back by the sheet's names and run. Each reply: mrkdwn
    sections, buttons after the text, and a plain fallback with the same words."""
    faces = [2, 5, *[8, 8, 8, 3, 2], *[6, 4, 1], *[7, 7, 3]]
    # a player typing a dozen commands at once: the rate limit is not what is tested here
    core = make_core(faces, variants=("revised", "v5"), limits={"rate": {"enabled": False}})
    adapter = SlackAdapter(core, settings_for(fake), environ=ENV)
    async with serving(adapter):
        say = channel_say(fake, session, adapter)

        assert "now plays" in (await say("!variant v5"))["text"]
        played = await v5_character_session(say)
        remorse, versus, added, hunt = (played[k] for k in ("remorse", "versus", "added", "hunt"))
        sheet = played["sheet"]

    def plain_words(mrkdwn: str) -> str:
        return mrkdwn.replace("*", "").replace("~", "").replace("`", "")

    # remorse: 2 empty boxes, 2 dice, no success: Humanity 7 → 6 and the Stains cleared
    mrkdwn = section_text(remorse["blocks"])
    assert mrkdwn.startswith("*Lynn*\n2 dice (humanity 2), Difficulty 1: 2 5\n*Total failure*")
    change = "loses a point of Humanity (remorse, 2 dice): Humanity 7 → 6; Stains 1/3 → 0/4"
    assert mrkdwn.endswith(f"*Lise* {change}")
    assert remorse["text"].endswith(f"Lise {change}") and "*" not in remorse["text"]
    assert remorse["blocks"][-1]["elements"][0]["text"].endswith("· v5")
    assert "Humanity 6 · Stains 0/4" in sheet["text"]
    # vs by name: both pools read from the sheets, the result, then the buttons
    assert [b["type"] for b in versus["blocks"]] == ["section", "actions", "context"]
    mrkdwn = section_text(versus["blocks"])
    assert "5 dice (strength 3+brawl 2), Hunger 1: *8* *8* *8* 3 | Hunger [2]\n" in mrkdwn
    assert "Opposition, 3 dice (wits 2+awareness 1), Hunger 1: *6* 4 | Hunger [1]" in mrkdwn
    assert "*Win* — 3 successes against 1, margin 2\n" in mrkdwn
    assert mrkdwn.endswith(
        "Lise: Strength 3 + Brawl 2 = 5 dice\nCid: Wits 2 + Awareness 1 = 3 dice"
    )
    assert versus["text"] == plain_words(mrkdwn).replace("[2]", "2").replace("[1]", "1")
    # the macro: stored and shown by the sheet's names, run with the same rules
    assert section_text(added["blocks"]) == "*Lise*: macro !hunt = Wits+Streetwise 4"
    assert added["text"] == "Lise: macro !hunt = Wits+Streetwise 4"
    assert [b["type"] for b in hunt["blocks"]] == ["section", "actions", "context"]
    mrkdwn = section_text(hunt["blocks"])
    assert mrkdwn.startswith("*hunt:* *Lynn*\n3 dice (wits 2+streetwise 1), Hunger 1, Difficulty 4")
    assert "*Failure* — 2 successes, 2 short" in mrkdwn
    assert mrkdwn.endswith("\nLise: Wits 2 + Streetwise 1 = 3 dice")
    assert hunt["text"].endswith("\nLise: Wits 2 + Streetwise 1 = 3 dice")
    assert hunt["text"] == plain_words(mrkdwn).replace("[3]", "3")


async def test_a_v5_reroll_of_the_dice_the_player_names(fake, session):
    """``!reroll 8 1`` through the real adapter: the named regular dice thrown again, shown
    styled in mrkdwn with the plain fallback saying the same."""
    core = make_core([3, 8, 2, 1, 10, 9, 6], variants=("revised", "v5"))
    adapter = SlackAdapter(core, settings_for(fake), environ=ENV)
    async with serving(adapter):
        say = channel_say(fake, session, adapter)

        await say("!variant v5")
        await say("!roll 5 1 3")
        reroll = await say("!reroll 8 1")
    mrkdwn = section_text(reroll["blocks"])
    assert "Difficulty 3: 3 *9* 2 *6* | Hunger *[10]*\n*Win* — 3 successes, margin 0" in mrkdwn
    assert "Willpower re-roll (your choice): 8 1 → 9 6." in mrkdwn
    assert "Difficulty 3: 3 9 2 6 | Hunger 10\nWin — 3 successes, margin 0" in reroll["text"]


async def test_contest_and_vs_a_mentioned_player_by_trait_names(fake, session):
    """#17 between two Slack users: a contest by Trait names, each side read from its own
    player's sheet, the challenged named by a Slack mention; the Storyteller's `vs @user`."""
    faces = [8, 8, 3, 2, 1, *[9, 7, 7, 4, 4], *[6, 6, 6, 6, 6], *[2, 2, 2, 8]]
    core = make_core(faces, limits={"rate": {"enabled": False}})
    adapter = SlackAdapter(core, settings_for(fake), environ=ENV)
    mark = with_slack_id(fake, MARK)
    async with serving(adapter):

        async def say(text: str, user: str = LYNN) -> dict[str, Any]:
            status, _ = await post_event(session, adapter, message_event(text, user=user))
            assert status == 200
            await settle(adapter)
            return fake.ok_calls("chat.postMessage")[-1].params

        await say("!char new Lise")
        await say("!char set Strength 3 Brawl 2 Dexterity 3 Athletics 1")
        await say("!char new Max", user=mark)
        await say("!char set Dexterity 4 Athletics 1", user=mark)
        challenge = await say(f"!contest <@{mark}> Strength+Brawl")
        waiting = await say("!contest")
        answer = await say("!resist Dex+Athletics", user=mark)
        await say("!storyteller claim", user=mark)
        versus = await say(f"!roll 5 6 vs <@{LYNN}> Dex+Athletics 7", user=mark)
    # the challenged is told by Slack's own mention, in the blocks and in the text (notifications)
    assert section_text(challenge["blocks"]).startswith(f"*Lynn* challenges <@{mark}> (a resisted")
    assert challenge["text"].startswith(f"Lynn challenges <@{mark}> (a resisted roll)")
    # listed, the challenged is named without a mention (no second notification): by their name
    listed = "Lynn vs Mark Roe — a resisted roll; waiting for Mark Roe to !resist"
    assert (
        section_text(waiting["blocks"])
        == "*Contests*\n*Lynn* vs Mark Roe — a resisted roll; waiting for Mark Roe to `!resist`"
    )
    assert waiting["text"] == f"Contests\n{listed}" and "<@" not in json.dumps(waiting)
    # the challenge stores the pool's names; they are read when the answer is rolled
    assert "Strength" not in challenge["text"]
    mrkdwn = section_text(answer["blocks"])
    assert mrkdwn.startswith("*Lynn vs Mark Roe*\n5 dice, difficulty 6 (Standard): ~8~ *8* 3 2 ~1~")
    assert "Opposed (Mark Roe): 5 dice, difficulty 6 (Standard): *9* *7* *7* 4 4\n" in mrkdwn
    assert "Contest over: *Mark Roe* wins.\n" in mrkdwn
    pools = "Lise: Strength 3 + Brawl 2 = 5 dice\nMax: Dexterity 4 + Athletics 1 = 5 dice"
    assert mrkdwn.endswith(pools) and answer["text"].endswith(pools)
    assert answer["text"].startswith("Lynn vs Mark Roe\n5 dice, difficulty 6 (Standard): 8 8 3")
    # the Storyteller names a player by a mention: that player's active character is read
    mrkdwn = section_text(versus["blocks"])
    assert mrkdwn.startswith("*Mark Roe*\n5 dice, difficulty 6 (Standard): *6* *6* *6* *6* *6*")
    assert "Opposed: 4 dice, difficulty 7 (Challenging): 2 2 2 *8*\n" in mrkdwn
    assert "Resisted: you win with *4 successes* (Exceptional)\n" in mrkdwn
    assert mrkdwn.endswith("\nLise: Dexterity 3 + Athletics 1 = 4 dice")
    assert versus["text"].endswith("\nLise: Dexterity 3 + Athletics 1 = 4 dice")
    assert "Resisted: you win with 4 successes (Exceptional)\n" in versus["text"]


async def test_npc_trackers_go_to_the_storyteller_ephemerally_and_log_lines_render(fake, session):
    """#20: a hidden NPC's tracker moves only in the Storyteller's ephemeral message; `!log`
    shows a player's tracker change as a mrkdwn line and the NPC's as a secret one."""
    async with serving(adapter_for(fake)) as adapter:
        for user, text in (
            (MARK, "!storyteller claim"),
            (MARK, "!npc new Guard"),
            (MARK, "!npc damage Guard 2 lethal"),
            (LYNN, "!char new Lise"),
            (LYNN, "!damage 1"),
            (LYNN, "!log"),
        ):
            await post_event(session, adapter, message_event(text, user=user))
            await settle(adapter)
    room = [c.params for c in fake.ok_calls("chat.postMessage") if c.params["channel"] == CHANNEL]
    assert "An NPC's tracker changed." in [r["text"] for r in room]
    assert not any("Health [" in json.dumps(r) for r in room[:-2])  # the NPC's stays private
    [npc] = [c.params for c in fake.ok_calls("chat.postEphemeral") if "Health" in c.params["text"]]
    assert npc["user"] == MARK and npc["channel"] == CHANNEL
    assert section_text(npc["blocks"]) == "*Guard*: Health [.......] Healthy → [XX.....] Hurt (-1)"
    log = section_text(room[-1]["blocks"])
    assert log.startswith("*Last 2 entries*")
    assert "*Lynn* Lise: Health [.......] Healthy → [/......] Bruised" in log
    assert "*Mark Roe* changed a tracker in secret" in log and "Guard" not in log


async def test_an_npc_rouse_check_goes_to_the_storyteller_ephemerally(fake, session):
    """v5's ``!npc rouse``: the room learns only that the NPC made a secret check; the dice and
    the Hunger the NPC's sheet gained reach the Storyteller alone, as mrkdwn."""
    core = make_core([3], variants=("revised", "v5"))
    async with serving(SlackAdapter(core, settings_for(fake), environ=ENV)) as adapter:
        for text in ("!variant v5", "!storyteller claim", "!npc new Guard", "!npc hunger Guard 2"):
            await post_event(session, adapter, message_event(text, user=MARK))
            await settle(adapter)
        await post_event(session, adapter, message_event("!npc rouse Guard", user=MARK))
        await settle(adapter)
    room = fake.ok_calls("chat.postMessage")[-1].params
    assert room["text"] == "Guard made a secret NPC rouse." and "Hunger" not in json.dumps(room)
    [secret] = [
        c.params for c in fake.ok_calls("chat.postEphemeral") if "Rouse" in c.params["text"]
    ]
    assert secret["user"] == MARK and secret["channel"] == CHANNEL
    mrkdwn = section_text(secret["blocks"])
    assert mrkdwn.startswith("*Guard*\nRouse check: 3 — *failed*\nHunger 2 → *3*.")
    assert "Guard: Hunger 2/5 → 3/5" in mrkdwn
