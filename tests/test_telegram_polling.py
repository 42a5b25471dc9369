"""The Telegram adapter in long-polling mode, end to end, against the fake Bot API
(tests/telegram_fake.py): python-telegram-bot's ``Bot`` on 127.0.0.1, replies rendered and
checked the way Telegram checks them (HTML entities, lengths, topics, keyboards, uploads)."""

from __future__ import annotations

import asyncio
import json
import re
import socket
import time
from collections.abc import AsyncIterator

import pytest

from coterie.storage.state import MemoryStore
from coterie_telegram.bot import EXPIRED, UNKNOWN_BUTTON
from telegram_fake import (
    BOT_TOKEN,
    BOT_USERNAME,
    PNG,
    FakeTelegram,
    TelegramTestCommands,
    html_of,
    make_adapter,
    make_core,
    serving,
    settings_for,
    settle,
)

GROUP = -1001
#: python-telegram-bot warns about its own RetryAfter type when it raises one (a 429)
pytestmark = pytest.mark.filterwarnings(
    "ignore:.*retry_after.*:telegram.warnings.PTBDeprecationWarning"
)
ALLOWED = ["message", "callback_query"]


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as telegram:
        telegram.add_chat(GROUP, "group", title="The coterie")
        yield telegram


@pytest.fixture
def lynn(fake):
    return fake.user(11, "Lynn", username="lynn_doe")


@pytest.fixture
def mark(fake):
    return fake.user(12, "Mark", username="mark_roe")


def texts(fake: FakeTelegram, chat: int | None = None) -> list[str]:
    return [m.get("text", m.get("caption", "")) for m in fake.sent(chat)]


def buttons_of(message: dict) -> list[tuple[str, str]]:
    rows = message.get("reply_markup", {}).get("inline_keyboard", [])
    return [(b["text"], b["callback_data"]) for row in rows for b in row]


async def quiet(fake: FakeTelegram, adapter) -> None:
    """Wait until the adapter has fetched every update (Telegram has its confirmation) and
    handled them, to show that something was *not* answered."""
    await fake.wait_for(lambda: not fake.pending, "every update fetched")
    await settle(adapter)


# --- commands and replies -------------------------------------------------------------------------


async def test_a_command_for_the_bot_gets_an_html_reply_to_it(fake, lynn):
    async with serving(make_adapter(fake, faces=[10, 7, 1, 3, 6])) as adapter:
        update = await fake.user_message(
            GROUP, lynn, f"/roll@{BOT_USERNAME} 5 6 # <b>ambush</b> & co"
        )
        [reply] = await fake.wait_sent(1)
        await settle(adapter)
    [call] = fake.ok_calls("sendMessage")
    assert call.params["parse_mode"] == "HTML"
    command = update["message"]["message_id"]
    assert json.loads(call.params["reply_parameters"]) == {
        "message_id": command,
        "allow_sending_without_reply": True,
    }
    assert "message_thread_id" not in call.params  # not a forum
    assert reply["reply_to_message"]["message_id"] == command
    # the fake parsed the HTML as Telegram does: the comment is text, the dice are styled
    assert reply["text"].splitlines()[0] == "Lynn — <b>ambush</b> & co"
    shown = html_of(reply)
    assert shown.startswith("<b>Lynn</b> — <i><b>ambush</b> & co</i>\n")
    assert "(Standard): <b>10</b> <b>7</b> <s>1</s> 3 <s>6</s>\n" in shown
    assert re.search(r"\n<i>roll [a-z2-9]{6} · revised</i>$", shown)


async def test_slash_commands_mentions_prefixes_and_private_chats(fake, lynn, mark):
    fake.add_chat(lynn["id"], "private", title="Lynn")
    async with serving(make_adapter(fake, faces=[8, 8, 8, 8, 8, 8, 8, 8])) as adapter:
        await fake.user_message(GROUP, lynn, "/roll 1 6")  # a command without the suffix
        await fake.user_message(GROUP, lynn, "/roll@SomeOtherBot 1 6")  # another bot's
        await fake.user_message(GROUP, lynn, f"@{BOT_USERNAME}, roll 1 6")  # a leading mention
        await fake.user_message(GROUP, lynn, f"thanks @{BOT_USERNAME}")  # not addressed
        await fake.user_message(GROUP, lynn, "!roll 1 6")  # the room prefix
        await fake.user_message(GROUP, lynn, "roll 1 6")  # chatter
        await fake.user_message(lynn["id"], lynn, "roll 1 6")  # a private chat: no prefix
        await fake.user_message(GROUP, mark, f"@{BOT_USERNAME}")  # a bare mention: help
        await fake.user_message(GROUP, mark, "/start")  # what opening a bot sends: help
        await fake.wait_sent(6)
        await quiet(fake, adapter)
    group = texts(fake, GROUP)
    assert len(group) == 5
    assert all(t.startswith("Lynn\n1 die, difficulty 6") for t in group[:3])
    assert group[3].startswith("coterie — rules:") and group[4].startswith("coterie — rules:")
    assert texts(fake, lynn["id"])[0].startswith("Lynn\n1 die, difficulty 6")


async def test_an_error_is_answered_with_the_usage(fake, lynn):
    async with serving(make_adapter(fake)) as adapter:
        await fake.user_message(GROUP, lynn, "/roll 7 x")
        await fake.user_message(GROUP, lynn, "/rol 7")
        await fake.wait_sent(2)
        await settle(adapter)
    bad_pool, unknown = fake.sent()
    assert bad_pool["text"].startswith("⚠ ")
    assert "<code>!roll" in html_of(bad_pool)
    # core writes command names in its messages between backticks: code in Telegram HTML too
    assert html_of(unknown) == (
        "⚠ unknown command <code>!rol</code>.\nDid you mean <code>!roll</code>?"
    )


async def test_a_reply_in_a_forum_topic_stays_in_the_topic(fake, lynn):
    forum = -1002
    fake.add_chat(forum, "supergroup", forum=True)
    scene = fake.add_topic(forum, "Scene 1")
    async with serving(make_adapter(fake, faces=[9, 2])) as adapter:
        await fake.user_message(forum, lynn, "!roll 1 6", thread=scene)
        await fake.user_message(forum, lynn, "!roll 1 6")  # the General topic
        await fake.wait_sent(2)
        await settle(adapter)
    in_topic, general = fake.ok_calls("sendMessage")
    assert in_topic.params["message_thread_id"] == str(scene)
    assert in_topic.result["is_topic_message"] is True
    assert in_topic.result["message_thread_id"] == scene
    assert "message_thread_id" not in general.params
    assert "message_thread_id" not in general.result


async def test_a_long_reply_is_split_under_the_limit_without_breaking_tags(fake, lynn):
    async with serving(make_adapter(fake)) as adapter:
        update = await fake.user_message(GROUP, lynn, "!long 400")
        await fake.wait_for(lambda: len(fake.sent()) >= 2, "the pieces")
        await quiet(fake, adapter)
    assert all(call.ok for call in fake.attempts("sendMessage"))
    pieces = fake.sent()
    assert len(pieces) >= 3
    for piece in pieces:
        assert len(piece["text"].encode("utf-16-le")) // 2 <= 4096
        # every piece carries its own bold entities: tags were closed and reopened at the cuts
        assert any(e["type"] == "bold" for e in piece["entities"])
    command = update["message"]["message_id"]
    assert pieces[0]["reply_to_message"]["message_id"] == command
    assert all("reply_to_message" not in p for p in pieces[1:])
    expected = "".join(f"line {n:04d} <&> continued 🎲🎲" for n in range(400))
    assert re.sub(r"\s", "", "".join(p["text"] for p in pieces)) == re.sub(r"\s", "", expected)
    # cuts fall at line ends: each piece starts a line ("line NNNN" or "continued")
    assert all(re.match(r"(line \d{4} <&>|continued 🎲🎲)\n", p["text"]) for p in pieces)


async def test_images_are_sent_as_photos_with_a_caption(fake, lynn):
    async with serving(make_adapter(fake)) as adapter:
        update = await fake.user_message(GROUP, lynn, "!chart")
        await fake.wait_sent(2)
        await settle(adapter)
    text, photo = fake.sent()
    assert text["text"] == "Odds of 5 dice:"
    assert text["reply_to_message"]["message_id"] == update["message"]["message_id"]
    [call] = fake.ok_calls("sendPhoto")
    assert call.files["photo"] == ("odds.png", PNG)
    assert call.params["parse_mode"] == "HTML"
    assert call.params["caption"] == "odds of &lt;5&gt; dice &amp; more"
    assert photo["caption"] == "odds of <5> dice & more"
    assert fake.photos[(GROUP, photo["message_id"])] == PNG


async def test_a_private_answer_goes_to_the_private_chat(fake, lynn, mark):
    fake.add_chat(mark["id"], "private", title="Mark")  # Mark has started the bot; Lynn not
    async with serving(make_adapter(fake)) as adapter:
        await fake.user_message(GROUP, mark, "!secret")
        await fake.user_message(GROUP, lynn, "!secret")
        await fake.wait_sent(2)
        await settle(adapter)
    assert texts(fake, mark["id"]) == ["for your eyes only"]
    [notice] = texts(fake, GROUP)
    assert notice.startswith("Lynn: an answer is only for you, but I cannot write to you")
    assert "start a chat with me" in notice and "eyes only" not in notice
    [sent] = fake.sent(GROUP)
    links = [e["url"] for e in sent["entities"] if e["type"] == "text_link"]
    assert links == [f"https://t.me/{BOT_USERNAME}?start=private"]  # a deep link to start it
    forbidden = [c for c in fake.attempts("sendMessage") if c.status == 403]
    assert [c.params["chat_id"] for c in forbidden] == [str(lynn["id"])]


async def test_a_flooder_gets_one_short_slow_down_privately_or_in_one_line(fake, lynn, mark):
    """The slow-down notice is ephemeral: in the private chat when the player has started the
    bot (Mark), else one short line in the group (Lynn) — never the "start a chat" notice."""
    fake.add_chat(mark["id"], "private", title="Mark")
    core = make_core(limits={"rate": {"user_burst": 3, "user_per_minute": 0.1}})
    async with serving(make_adapter(fake, core=core)) as adapter:
        for _ in range(8):
            await fake.user_message(GROUP, lynn, "!roll 2 6")
            await fake.user_message(GROUP, mark, "!roll 2 6")
        await fake.wait_sent(3 + 3 + 1)
        await quiet(fake, adapter)
    group = texts(fake, GROUP)
    rolls = [t for t in group if "2 dice" in t]
    notices = [t for t in group if "2 dice" not in t]
    assert len(rolls) == 6  # three each
    assert notices == [
        "Lynn: slow down, please: too many commands from you just now. "
        "Try again in about 10 minutes."
    ]
    assert texts(fake, mark["id"]) == [
        "⚠ slow down, please: too many commands from you just now. Try again in about 10 minutes."
    ]
    assert not any("privately" in t for t in group)


async def test_bots_edits_forwards_and_other_updates_are_ignored(fake, lynn):
    other_bot = fake.user(77, "Dicey", username="dicey_bot", bot=True)
    async with serving(make_adapter(fake, faces=[7])) as adapter:
        await fake.user_message(GROUP, other_bot, "!roll 1 6")
        await fake.user_message(
            GROUP,
            lynn,
            "!roll 1 6",
            forward_origin={"type": "user", "date": 1, "sender_user": other_bot},
        )
        await fake.user_message(GROUP, lynn, "!roll 1 6", via_bot=other_bot)
        # Telegram does not send edits (not in allowed_updates); forced through, still ignored
        edited = await fake.user_message(GROUP, lynn, "!roll 1 6")
        await fake.push({"edited_message": edited["message"]}, force=True)
        await fake.push({"channel_post": edited["message"]}, force=True)
        await fake.wait_sent(1)
        await quiet(fake, adapter)
    assert len(fake.sent()) == 1  # only the person's own, new message
    assert json.loads(fake.attempts("getUpdates")[0].params["allowed_updates"]) == ALLOWED


# --- the command menu -----------------------------------------------------------------------------


async def test_every_command_is_in_the_menu_with_a_valid_name(fake, lynn):
    async with serving(make_adapter(fake)) as adapter:
        await fake.wait_for(lambda: bool(fake.ok_calls("setMyCommands")), "setMyCommands")
        await fake.user_message(GROUP, lynn, "/house_rules as written")
        await fake.wait_sent(1)
        await settle(adapter)
    [call] = fake.ok_calls("setMyCommands")
    assert json.loads(call.params["scope"]) == {"type": "default"}
    menu = {c["command"]: c["description"] for c in json.loads(call.params["commands"])}
    core = make_core()
    wanted = {c.name.replace("-", "_") for c in core.room_commands(core.config.default_variant)}
    assert set(menu) == wanted
    assert {"roll", "team", "help", "variant", "multi", "house_rules"} <= set(menu)
    assert menu["roll"] == "roll a dice pool under the room's rules"
    # the Telegram name of a command Telegram could not take runs that command
    assert fake.sent()[0]["text"] == "Lynn: as written"


async def test_a_chat_on_another_rule_set_gets_its_own_menu(fake, lynn):
    adapter = make_adapter(fake, core=make_core(variants=("revised", "v5")))
    async with serving(adapter):
        await fake.user_message(GROUP, lynn, "!variant v5")
        await fake.wait_for(lambda: len(fake.ok_calls("setMyCommands")) == 2, "a chat menu")
        await fake.user_message(GROUP, lynn, "!roll 1")  # no change: no new menu
        await fake.user_message(GROUP, lynn, "!variant revised")
        await fake.wait_for(lambda: bool(fake.ok_calls("deleteMyCommands")), "the chat menu gone")
        await settle(adapter)
    default, chat = fake.ok_calls("setMyCommands")
    assert json.loads(chat.params["scope"]) == {"type": "chat", "chat_id": GROUP}
    names = [c["command"] for c in json.loads(chat.params["commands"])]
    assert "reroll" in names and "rouse" in names and "multi" not in names
    assert "reroll" not in [c["command"] for c in json.loads(default.params["commands"])]
    [removed] = fake.ok_calls("deleteMyCommands")
    assert json.loads(removed.params["scope"]) == {"type": "chat", "chat_id": GROUP}
    assert "default" in fake.commands and f"chat:{GROUP}" not in fake.commands


async def test_a_chats_menu_is_read_once_and_a_failed_change_is_tried_again(fake, lynn):
    from coterie_telegram.bot import MENUS_NAMESPACE

    adapter = make_adapter(fake, core=make_core(variants=("revised", "v5")))
    reads: list[str] = []
    state = adapter.app.state
    real_get = state.get

    async def get(namespace: str, key: str) -> object:
        if namespace == MENUS_NAMESPACE:
            reads.append(key)
        return await real_get(namespace, key)

    state.get = get  # type: ignore[method-assign]
    async with serving(adapter) as running:
        await fake.user_message(GROUP, lynn, "!variant v5")
        await fake.wait_for(lambda: len(fake.ok_calls("setMyCommands")) == 2, "a chat menu")
        await settle(running)
        assert len(reads) == 1
        for n in range(3):
            await fake.user_message(GROUP, lynn, "!roll 1")
            await fake.wait_sent(2 + n)
        await settle(running)
        assert len(reads) == 1  # the chat's menu is known here: not read again
        fake.fail_next("deleteMyCommands", 400, "Bad Request: not now")
        await fake.user_message(GROUP, lynn, "!variant revised")
        await fake.wait_sent(5)
        await settle(running)
        assert not fake.ok_calls("deleteMyCommands") and len(reads) == 2
        await fake.user_message(GROUP, lynn, "!roll 1")  # the change not made: tried again
        await fake.wait_for(lambda: bool(fake.ok_calls("deleteMyCommands")), "the menu gone")
        await settle(running)
    assert len(reads) == 3 and f"chat:{GROUP}" not in fake.commands


async def test_a_failing_menu_does_not_stop_the_bot(fake, lynn):
    fake.fail_next("setMyCommands", 400, "Bad Request: BOT_COMMAND_INVALID")
    async with serving(make_adapter(fake, faces=[6])) as adapter:
        await fake.user_message(GROUP, lynn, "!roll 1 6")
        await fake.wait_sent(1)
        await settle(adapter)
    assert fake.attempts("setMyCommands")[0].status == 400


# --- buttons --------------------------------------------------------------------------------------


async def test_v5_reroll_buttons_belong_to_the_roller(fake, lynn, mark):
    core = make_core([2, 3, 7, 8, 4, 10, 9, 1], variants=("v5",), defaults={"variant": "v5"})
    async with serving(make_adapter(fake, core=core)) as adapter:
        await fake.user_message(GROUP, lynn, "!roll 5 0 3")
        [roll] = await fake.wait_sent(1)
        assert [label for label, _ in buttons_of(roll)] == ["Re-roll failures", "Go for criticals"]
        failures, crits = (data for _, data in buttons_of(roll))

        # another player's press: refused with a notice, nothing runs
        pressed = await fake.press(roll, crits, mark)
        query = pressed["callback_query"]["id"]
        await fake.wait_for(lambda: fake.answers[query] is not None, "the answer")
        assert fake.answers[query] == {
            "text": "These buttons belong to Lynn: only they can press them.",
            "show_alert": False,
        }
        # forged data, and data that is not ours at all
        forged = {"c1:AAAAAAAAAAAAAAAA:0": EXPIRED, f"{crits[:-1]}7": UNKNOWN_BUTTON}
        for data, answer in {**forged, "reroll crits": UNKNOWN_BUTTON}.items():
            pressed = await fake.press(roll, data, lynn)
            query = pressed["callback_query"]["id"]
            await fake.wait_for(lambda q=query: fake.answers[q] is not None, "the answer")
            assert fake.answers[query] == {"text": answer, "show_alert": True}
        await settle(adapter)
        assert len(fake.sent()) == 1

        # the roller's press: the buttons go, the re-roll answers the roll
        pressed = await fake.press(roll, crits, lynn)
        [_, reroll] = await fake.wait_sent(2)
        query = pressed["callback_query"]["id"]
        await fake.wait_for(lambda: fake.answers[query] is not None, "the answer")
        assert fake.answers[query] == {"text": None, "show_alert": False}
        assert "reply_markup" not in fake.messages[(GROUP, roll["message_id"])]
        assert reroll["reply_to_message"]["message_id"] == roll["message_id"]
        assert "Willpower re-roll (crits): 2 3 4 → 10 9 1." in reroll["text"]

        # the same button again, or its sibling: expired
        for data in (crits, failures):
            pressed = await fake.press(roll, data, lynn)
            query = pressed["callback_query"]["id"]
            await fake.wait_for(lambda q=query: fake.answers[q] is not None, "the answer")
            assert fake.answers[query] == {"text": EXPIRED, "show_alert": True}
        await settle(adapter)
    assert len(fake.sent()) == 2


async def test_a_button_can_send_an_image(fake, lynn):
    async with serving(make_adapter(fake)) as adapter:
        await fake.user_message(GROUP, lynn, "!offer")
        [offer] = await fake.wait_sent(1)
        assert offer["text"].startswith("Pick one:")
        [(label, data), _] = buttons_of(offer)
        assert label == "Show the chart" and len(data.encode()) <= 64
        await fake.press(offer, data, lynn)
        await fake.wait_for(lambda: bool(fake.ok_calls("sendPhoto")), "the chart")
        await settle(adapter)
    [photo] = [m for m in fake.sent() if "photo" in m]
    assert photo["caption"] == "odds of <5> dice & more"


# --- migration, retries, de-duplication -----------------------------------------------------------


async def test_a_group_that_becomes_a_supergroup_keeps_its_settings_and_state(fake, lynn):
    core = make_core(
        [2, 3, 7, 8, 4, 9, 1, 6, 5],
        variants=("revised", "v5"),
        rooms={f"telegram:{GROUP}": {"prefix": "?"}},
    )
    supergroup = -1001000000001
    async with serving(make_adapter(fake, core=core)) as adapter:
        await fake.user_message(GROUP, lynn, "?variant v5")
        await fake.user_message(GROUP, lynn, "?roll 5 0 3")  # remembered for ?reroll
        await fake.wait_sent(2)
        await fake.migrate(GROUP, supergroup, lynn)
        # a message from just before the upgrade: its answer is re-sent to the supergroup
        await fake.user_message(GROUP, lynn, "?help roll", late=True)
        await fake.wait_sent(1, supergroup)
        await fake.user_message(supergroup, lynn, "?reroll")
        await fake.wait_sent(2, supergroup)
        await settle(adapter)
    help_reply, reroll = texts(fake, supergroup)
    assert help_reply.startswith("?roll (v5)")  # the config's prefix, the chat's rule set
    assert "Willpower re-roll (failures)" in reroll  # the V5 state of the group
    migrated = [c for c in fake.attempts("sendMessage") if c.status == 400]
    assert [c.params["chat_id"] for c in migrated] == [str(GROUP)]
    assert await core.state.get("telegram.chats", str(supergroup)) == str(GROUP)


async def test_a_429_is_waited_out(fake, lynn):
    fake.rate_limit_next("sendMessage", 1)
    async with serving(make_adapter(fake, faces=[8])) as adapter:
        await fake.user_message(GROUP, lynn, "!roll 1 6")
        await fake.wait_sent(1)
        await settle(adapter)
    refused, sent = fake.attempts("sendMessage")
    assert refused.status == 429 and sent.ok
    assert sent.at - refused.at >= 0.95
    assert sent.params["text"] == refused.params["text"]


async def test_polling_backs_off_on_network_errors_and_429(fake, lynn):
    fake.drop_next("getUpdates")
    fake.rate_limit_next("getUpdates", 1)
    async with serving(make_adapter(fake, faces=[8])) as adapter:
        await fake.user_message(GROUP, lynn, "!roll 1 6")
        await fake.wait_sent(1)
        await settle(adapter)
    dropped, limited, served = fake.attempts("getUpdates")[:3]
    assert (dropped.status, limited.status, served.status) == (0, 429, 200)
    assert limited.at - dropped.at >= 0.95  # the first back-off after a network error: 1 s
    assert served.at - limited.at >= 0.95  # retry_after


async def test_a_send_that_may_have_arrived_is_not_sent_again(fake, lynn, caplog):
    # the connection drops after Telegram got the request: it may have posted the message
    fake.drop_next("sendMessage")
    async with serving(make_adapter(fake, faces=[8])) as adapter:
        await fake.user_message(GROUP, lynn, "!roll 1 6")
        await fake.wait_for(lambda: fake.attempts("sendMessage"), "a send")
        await settle(adapter)
    assert [c.status for c in fake.attempts("sendMessage")] == [0]
    assert "may not have arrived" in caplog.text


async def test_a_timed_out_send_is_not_posted_twice(fake, lynn, monkeypatch, caplog):
    """Telegram posts the reply but answers after the client gave up (a read time-out): the
    reply must not be sent a second time."""
    monkeypatch.setattr("coterie_telegram.bot.READ_TIMEOUT", 0.5)
    fake.answer_late_next("sendMessage", 1.5)
    async with serving(make_adapter(fake, faces=[8])) as adapter:
        await fake.user_message(GROUP, lynn, "!roll 1 6")
        await fake.wait_sent(1)
        await settle(adapter)
        await asyncio.sleep(1.2)  # a retry, if there were one, would have gone out by now
    assert len(fake.sent(GROUP)) == 1
    assert len(fake.attempts("sendMessage")) == 1
    assert "may not have arrived" in caplog.text


async def test_a_send_that_never_left_is_retried(fake):
    """A refused connection proves Telegram never got the call: sent again (once)."""
    from coterie_telegram.bot import TelegramBot, make_bot, not_processed
    from coterie_telegram.settings import Credentials, TelegramSettings

    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    settings = TelegramSettings.from_table(settings_for(fake, rate_limit_retries=2))
    credentials = Credentials(bot_token=BOT_TOKEN)
    nowhere = make_bot(
        TelegramSettings.from_table(settings_for(fake, api_url=f"http://127.0.0.1:{closed}/bot")),
        credentials,
    )
    core = make_core()
    bot = TelegramBot(core, settings, credentials)
    senders = [nowhere, bot.bot]
    errors: list[BaseException] = []

    async def send() -> object:
        sender = senders.pop(0)
        try:
            return await sender.send_message(GROUP, "hello")
        except Exception as error:
            errors.append(error)
            raise

    # only its HTTP client is started: initialize() would ask the closed port for getMe
    for request in nowhere._request:
        await request.initialize()
    try:
        async with bot.bot:
            await bot.call("sendMessage", send, idempotent=False)
    finally:
        for request in nowhere._request:
            await request.shutdown()
    assert len(errors) == 1 and not_processed(errors[0])
    assert [m["text"] for m in fake.sent(GROUP)] == ["hello"]


async def test_refused_html_and_a_lost_topic_fall_back(fake, lynn):
    forum = -1002
    fake.add_chat(forum, "supergroup", forum=True)
    scene = fake.add_topic(forum)
    refusal = 'can\'t parse entities: Unsupported start tag "x" at byte offset 0'
    async with serving(make_adapter(fake, faces=[8, 9])) as adapter:
        fake.fail_next("sendMessage", 400, f"Bad Request: {refusal}")
        await fake.user_message(GROUP, lynn, "!roll 1 6")
        await fake.wait_sent(1)
        fake.fail_next("sendMessage", 400, "Bad Request: message thread not found")
        await fake.user_message(forum, lynn, "!roll 1 6", thread=scene)
        await fake.wait_sent(2)
        await settle(adapter)
    plain, general = fake.ok_calls("sendMessage")
    assert "parse_mode" not in plain.params
    assert plain.params["text"].startswith("Lynn\n1 die, difficulty 6 (Standard): 8")
    assert "message_thread_id" not in general.params and general.params["parse_mode"] == "HTML"


async def test_an_update_delivered_again_after_a_restart_is_not_answered(fake, lynn):
    store = MemoryStore()
    async with serving(make_adapter(fake, core=make_core([8, 9], store=store))) as adapter:
        update = await fake.user_message(GROUP, lynn, "!roll 1 6")
        await fake.wait_sent(1)
        await settle(adapter)
    # the bot stopped before Telegram saw the confirmation: the update comes once more
    await fake.push({"message": update["message"]}, update_id=update["update_id"])
    async with serving(make_adapter(fake, core=make_core([8, 9], store=store))) as adapter:
        await quiet(fake, adapter)
    assert len(fake.sent()) == 1


async def test_stopping_confirms_the_updates_handled(fake, lynn):
    async with serving(make_adapter(fake, faces=[8])) as adapter:
        update = await fake.user_message(GROUP, lynn, "!roll 1 6")
        await fake.wait_sent(1)
        await settle(adapter)
    assert fake.pending == []
    # on the way out: one short call whose offset confirms everything handled
    [confirm] = [c for c in fake.attempts("getUpdates") if c.params["timeout"] == "0"]
    assert confirm.ok
    assert (confirm.params["offset"], confirm.params["limit"]) == (
        str(update["update_id"] + 1),
        "1",
    )


async def test_one_chat_in_order_other_chats_meanwhile(fake, lynn):
    other = -1003
    fake.add_chat(other, "group")
    plugin = TelegramTestCommands()
    async with serving(make_adapter(fake, plugin=plugin)) as adapter:
        await fake.user_message(GROUP, lynn, "!slow")
        await fake.user_message(GROUP, lynn, "!echo after the slow one")
        await fake.user_message(other, lynn, "!echo elsewhere")
        await fake.wait_sent(1, other)
        await asyncio.sleep(0.2)
        assert texts(fake, GROUP) == []  # the echo waits for the slow command of its chat
        plugin.gate.set()
        await fake.wait_sent(2, GROUP)
        await settle(adapter)
    assert texts(fake, GROUP) == ["done waiting", "Lynn: after the slow one"]


async def test_a_refused_token_fails_the_adapter():
    async with FakeTelegram(token="4242424242:AAE-some-other-valid-token_000") as fake:
        adapter = make_adapter(fake)
        started = time.monotonic()
        with pytest.raises(RuntimeError, match=r"refused the bot token from \$COTERIE_TEST"):
            await asyncio.wait_for(adapter.run(), 10)
        assert time.monotonic() - started < 5
        assert [c.status for c in fake.attempts("getMe")] == [401]


async def test_a_secret_roll_goes_to_the_roller_and_storyteller_in_private(fake, lynn, mark):
    fake.add_chat(mark["id"], "private", title="Mark")
    fake.add_chat(lynn["id"], "private", title="Lynn")
    async with serving(make_adapter(fake, faces=[10, 7, 1, 3, 6])) as adapter:
        await fake.user_message(GROUP, mark, "!storyteller claim")
        await fake.wait_sent(1)
        await fake.user_message(GROUP, lynn, "!roll 5 6 secret # ambush")
        await fake.wait_sent(4)
        await settle(adapter)
        roll_id = texts(fake, GROUP)[-1].split("roll ")[-1].split()[0]
        await fake.user_message(GROUP, lynn, f"!reveal {roll_id}")
        await fake.wait_sent(5)
        await settle(adapter)
    *room, revealed = texts(fake, GROUP)
    assert "10 7 1 3 6" in revealed and "ambush" in revealed
    assert room[-1].startswith("Lynn made a secret roll.")
    assert not any("10" in text or "ambush" in text for text in room[1:])
    [mine] = texts(fake, lynn["id"])
    [storyteller] = texts(fake, mark["id"])
    for text in (mine, storyteller):
        assert "10 7 1 3 6" in text and "ambush" in text
    assert "reveal" in mine and storyteller.startswith("Lynn's secret roll")


async def test_a_secret_for_someone_who_never_started_the_bot_leaves_one_short_notice(fake, lynn):
    async with serving(make_adapter(fake, faces=[9, 9])) as adapter:
        await fake.user_message(GROUP, lynn, "!roll 2 6 secret")
        await fake.wait_sent(2)
        await settle(adapter)
    room = texts(fake, GROUP)
    assert room[0].startswith("Lynn made a secret roll.")
    assert room[1].startswith("Lynn: an answer is only for you") and len(room) == 2
    assert not any("9 9" in text for text in room)


async def test_a_hanging_third_party_command_leaves_other_chats_answering(fake, lynn, mark):
    """A plugin's `time.sleep` (in a worker thread) in one group: another group's `!roll` is
    answered meanwhile, in its normal time; the sleeper gets "took too long"."""
    from coterie.dice.sources import SeededDice
    from coterie.framework.app import Coterie
    from coterie.framework.config import Config
    from coterie.framework.plugins import PluginHost
    from hanging_plugin import HangingPlugin

    other = -1002
    fake.add_chat(other, "group", title="Another table")
    host = PluginHost()
    host.load(["revised", "telegram"])
    host.register(TelegramTestCommands(), "telegram-test")
    host.register(HangingPlugin(), "hanging")
    config = Config.model_validate(
        {"plugins": {"enable": ["revised", "telegram"]}, "limits": {"command_timeout": 1.5}}
    )
    core = Coterie(config, host=host, dice=SeededDice(1))
    async with serving(make_adapter(fake, core=core)) as adapter:
        await fake.user_message(GROUP, lynn, "!nap 3")
        await asyncio.sleep(0.3)
        started = time.monotonic()
        await fake.user_message(other, mark, "!roll 2 6")
        [answer] = await fake.wait_sent(1, other)
        took = time.monotonic() - started
        [late] = await fake.wait_sent(1, GROUP)
        await settle(adapter)
    assert "2 dice" in answer["text"] and took < 1.0, took
    assert late["text"].startswith("⚠ !nap took too long")  # the command as code
    assert "<code>!nap</code>" in html_of(late)


async def test_npc_trackers_go_to_the_storytellers_private_chat_and_log_lines_render(
    fake, lynn, mark
):
    """#20: a hidden NPC's tracker moves only in the Storyteller's private chat, as HTML; `!log`
    in the group shows a player's tracker change and the NPC's only as a secret line."""
    fake.add_chat(mark["id"], "private", title="Mark")
    async with serving(make_adapter(fake)) as adapter:
        sent = 0
        for user, text, answers in (
            (mark, "!storyteller claim", 1),
            (mark, "!npc new Guard", 2),
            (mark, "!npc damage Guard 2 lethal", 2),
            (lynn, "!char new Lise", 1),
            (lynn, "!damage 1", 1),
            (lynn, "!log", 1),
        ):
            sent += answers
            await fake.user_message(GROUP, user, text)
            await fake.wait_sent(sent)
            await settle(adapter)
    room = texts(fake, GROUP)
    assert "An NPC's tracker changed." in room
    assert not any("Guard" in text for text in room)
    private = fake.sent(mark["id"])
    npc = private[-1]  # sent as HTML: the name in bold
    assert npc["text"] == "Guard: Health [.......] Healthy → [XX.....] Hurt (-1)"
    assert {"type": "bold", "offset": 0, "length": 5} in npc["entities"]
    log = fake.sent(GROUP)[-1]
    assert "Lynn Lise: Health [.......] Healthy → [/......] Bruised" in log["text"]
    assert "Mark changed a tracker in secret" in log["text"]
    bold = {log["text"][e["offset"] : e["offset"] + e["length"]] for e in log["entities"]}
    assert {"Lynn", "Mark"} <= bold


async def test_an_npc_rouse_check_goes_to_the_storytellers_private_chat(fake, lynn, mark):
    """v5's ``!npc rouse``: the group sees only that the NPC made a secret check; the die and
    the Hunger it gained go to the Storyteller's private chat as HTML."""
    fake.add_chat(mark["id"], "private", title="Mark")
    core = make_core([3], variants=("revised", "v5"))
    async with serving(make_adapter(fake, core=core)) as adapter:
        sent = 0
        for text, answers in (
            ("!variant v5", 1),
            ("!storyteller claim", 1),
            ("!npc new Guard", 2),
            ("!npc hunger Guard 2", 2),
            ("!npc rouse Guard", 2),
        ):
            sent += answers
            await fake.user_message(GROUP, mark, text)
            await fake.wait_sent(sent)
            await settle(adapter)
    room = texts(fake, GROUP)
    assert room[-1].startswith("Guard made a secret NPC rouse.")
    assert not any("Rouse" in text or "Hunger" in text for text in room)
    secret = fake.sent(mark["id"])[-1]
    assert secret["text"].startswith("Guard\nRouse check: 3 — failed\nHunger 2 → 3.\n")
    assert "Guard: Hunger 2/5 → 3/5" in secret["text"]
    assert {"type": "bold", "offset": 0, "length": 5} in secret["entities"]


async def test_someone_without_a_username_is_challenged_by_picking_them(fake, lynn):
    """Picking a member without a username puts only their name in the text, with a
    ``text_mention`` entity that carries the user: the bot reads it as a mention of that person,
    links them in the challenge under their name, and they can answer."""
    ann = fake.user(13, "Ann Vey")  # no username
    async with serving(make_adapter(fake, faces=[8, 8, 8, 2, 2, 2])) as adapter:
        text = "!contest Ann Vey 3 6 # 🐺 at the door"
        picked = {"type": "text_mention", "offset": 9, "length": 7, "user": ann}
        await fake.user_message(GROUP, lynn, text, entities=[picked])
        [challenge] = await fake.wait_sent(1)
        await fake.user_message(GROUP, ann, "!resist 3 6")
        [_, answer] = await fake.wait_sent(2)
        await settle(adapter)
    assert challenge["text"].startswith("Lynn challenges Ann Vey (a resisted roll)")
    link = {"type": "text_link", "offset": 16, "length": 7, "url": "tg://user?id=13"}
    assert link in challenge["entities"]
    assert "Contest over: Lynn wins." in answer["text"]
