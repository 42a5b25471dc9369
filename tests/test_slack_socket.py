"""The Slack adapter in Socket Mode, end to end: the fake's ``apps.connections.open`` hands out a
loopback websocket that says ``hello`` and then sends ``events_api``, ``slash_commands`` and
``interactive`` envelopes; the real slack-sdk client under Bolt must acknowledge each envelope,
reply through the fake Web API, and reconnect when the socket is dropped."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from coterie.errors import ConfigError
from coterie_slack import SlackAdapter
from slack_fake import (
    APP_TOKEN,
    BOT_USER,
    CHANNEL,
    ENV,
    LYNN,
    MARK,
    FakeSlack,
    block_action,
    envelope,
    make_core,
    message_event,
    section_text,
    serving,
    settings_for,
    settle,
    slash_command,
)


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as slack:
        yield slack


def socket_adapter(
    fake: FakeSlack, faces: list[int] | None = None, **settings: object
) -> SlackAdapter:
    return SlackAdapter(
        make_core(faces), settings_for(fake, mode="socket", **settings), environ=ENV
    )


async def connected(fake: FakeSlack, count: int) -> None:
    await fake.wait_for(lambda: fake.connections >= count and fake.socket_open, "a connection")


async def test_socket_mode_end_to_end(fake):
    async with serving(socket_adapter(fake, faces=[10, 2, 6, 1])) as adapter:
        await connected(fake, 1)
        [opened] = fake.ok_calls("apps.connections.open")
        assert opened.token == APP_TOKEN

        # events_api: acknowledged with the envelope id, answered with chat.postMessage
        event = envelope("events_api", message_event("!roll 4 6"))
        await fake.send(event)
        assert await fake.acked(event["envelope_id"]) == {"envelope_id": event["envelope_id"]}
        await settle(adapter)
        [call] = fake.ok_calls("chat.postMessage")
        assert call.params["channel"] == CHANNEL
        assert "4 dice, difficulty 6 (Standard): *10* 2 ~6~ ~1~" in section_text(
            call.params["blocks"]
        )

        # Slack re-sends the same event in a new envelope: acked, not answered again
        retry = envelope("events_api", event["payload"], retry_attempt=1, retry_reason="timeout")
        await fake.send(retry)
        await fake.acked(retry["envelope_id"])
        await settle(adapter)
        assert len(fake.ok_calls("chat.postMessage")) == 1

        # slash_commands: acked at once, answered through the response_url
        command = envelope(
            "slash_commands",
            slash_command("/coterie", "offer", response_url=fake.response_url("c")),
        )
        await fake.send(command)
        await fake.acked(command["envelope_id"])
        await settle(adapter)
        [offer] = fake.posted_to("c")
        assert offer["response_type"] == "in_channel"
        button = next(b for b in offer["blocks"] if b["type"] == "actions")["elements"][0]

        # interactive: another player's press only gets a notice
        posted = {**offer, "ts": "1690000000.000500"}
        press = envelope(
            "interactive",
            block_action(posted, button, user=MARK, response_url=fake.response_url("m")),
        )
        await fake.send(press)
        await fake.acked(press["envelope_id"])
        await settle(adapter)
        [notice] = fake.posted_to("m")
        assert notice["response_type"] == "ephemeral"

        # the roller's press runs the command
        press = envelope(
            "interactive",
            block_action(posted, button, user=LYNN, response_url=fake.response_url("l")),
        )
        await fake.send(press)
        await fake.acked(press["envelope_id"])
        await settle(adapter)
        replaced, answer = fake.posted_to("l")
        assert replaced["replace_original"] is True
        assert section_text(answer["blocks"]) == "*Lynn*: rerolled"


async def test_a_dropped_socket_is_reconnected(fake):
    async with serving(socket_adapter(fake, faces=[7, 8])) as adapter:
        await connected(fake, 1)
        await fake.drop()
        # the client asks for a new URL and connects again
        await connected(fake, 2)
        assert len(fake.ok_calls("apps.connections.open")) == 2
        event = envelope("events_api", message_event("!roll 1 6"))
        await fake.send(event)
        await fake.acked(event["envelope_id"])
        # Slack asks the client to move to a new connection ("refresh_requested")
        await fake.send({"type": "disconnect", "reason": "refresh_requested"})
        await connected(fake, 3)
        assert len(fake.ok_calls("apps.connections.open")) == 3
        mention = envelope(
            "events_api", message_event(f"<@{BOT_USER}> roll 1 6", event_type="app_mention")
        )
        await fake.send(mention)
        await fake.acked(mention["envelope_id"])
        await settle(adapter)
    first, second = fake.ok_calls("chat.postMessage")
    assert "*7*" in section_text(first.params["blocks"])
    assert "*8*" in section_text(second.params["blocks"])


async def test_a_refused_app_token_fails_the_adapter(fake):
    fake.fail_next("apps.connections.open", 200, "invalid_auth")
    adapter = socket_adapter(fake)
    with pytest.raises(RuntimeError, match="COTERIE_TEST_SLACK_APP: invalid_auth"):
        await asyncio.wait_for(adapter.run(), 10)
    assert fake.connections == 0


async def test_a_refused_bot_token_fails_the_adapter(fake):
    fake.fail_next("auth.test", 200, "invalid_auth")
    adapter = socket_adapter(fake)
    with pytest.raises(RuntimeError, match="COTERIE_TEST_SLACK_BOT: invalid_auth"):
        await asyncio.wait_for(adapter.run(), 10)
    assert fake.ok_calls("apps.connections.open") == []


def test_socket_mode_needs_an_app_level_token(fake):
    env = {k: v for k, v in ENV.items() if k != "COTERIE_TEST_SLACK_APP"}
    with pytest.raises(ConfigError, match="app_token_env: the environment variable"):
        SlackAdapter(make_core(), settings_for(fake, mode="socket"), environ=env)
    env["COTERIE_TEST_SLACK_APP"] = "xoxb-not-an-app-token"
    with pytest.raises(ConfigError, match=r"must hold an app-level token \(xapp-"):
        SlackAdapter(make_core(), settings_for(fake, mode="socket"), environ=env)
