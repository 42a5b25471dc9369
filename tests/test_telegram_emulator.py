"""The Telegram adapter against the telegram-test-api emulator (the npm package pinned in
tests/telegram/package.json), started once for this module through our launcher on 127.0.0.1.

The real python-telegram-bot ``Bot`` polls the emulator with ``getUpdates`` and answers with
``sendMessage``; the users' side goes through the emulator's client routes. What the emulator
cannot do (the command menu, photos, buttons, forum topics, rendering HTML) is covered against
the fake Bot API in test_telegram_polling.py and test_telegram_webhook.py."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from character_script import v5_character_session
from coterie_telegram import TelegramAdapter
from coterie_telegram.html import visible_text
from telegram_emulator import BOT_USERNAME, Emulator, new_token, running_emulator
from telegram_fake import make_core, serving, settle

#: (Telegram usernames have 5 characters or more: a reply mentions only such a one by @name)
LYNN = {"id": 501, "is_bot": False, "first_name": "Lynn", "username": "lynn_r"}
MARK = {"id": 502, "is_bot": False, "first_name": "Mark"}


def private_chat(user: dict[str, Any]) -> dict[str, Any]:
    return {"id": user["id"], "first_name": user["first_name"], "type": "private"}


def group(chat_id: int) -> dict[str, Any]:
    return {"id": chat_id, "title": "The coterie", "type": "group"}


@pytest.fixture(scope="module")
def emulator() -> Iterator[Emulator]:
    with running_emulator() as running:
        yield running


def adapter_for(emulator: Emulator, token: str, faces: list[int], **core: Any) -> TelegramAdapter:
    settings = {
        "enabled": True,
        "api_url": emulator.api_url,
        "bot_token_env": "EMULATOR_BOT_TOKEN",
        # the emulator answers getUpdates at once, whatever the timeout: poll every 50 ms
        "poll_timeout": 0,
        "poll_interval": 0.05,
        # the emulator has no setMyCommands (the fake Bot API covers the menu)
        "command_menu": False,
    }
    return TelegramAdapter(
        make_core(faces, **core), settings, environ={"EMULATOR_BOT_TOKEN": token}
    )


async def test_the_launcher_fixes_get_me_and_message_dates(emulator):
    token = new_token()
    me = await emulator.bot_api(token, "getMe")
    assert me["ok"] is True and me["result"]["is_bot"] is True
    assert me["result"]["username"] == BOT_USERNAME
    sent = await emulator.bot_api(token, "sendMessage", chat_id=1, text="hello")
    assert abs(sent["result"]["date"] - time.time()) < 60  # seconds, not milliseconds
    assert sent["result"]["text"] == "hello"


async def test_slash_roll_in_a_private_chat(emulator):
    token = new_token()
    async with serving(adapter_for(emulator, token, [10, 7, 1, 3, 6, 8, 2])) as adapter:
        await emulator.say(token, private_chat(LYNN), LYNN, "/roll 7 6")
        [reply] = await emulator.replies(token, LYNN["id"], 1)
        await settle(adapter)
    assert reply["parse_mode"] == "HTML"
    assert reply["text"].startswith("<b>Lynn</b>\n7 dice, difficulty 6 (Standard): ")
    assert "<b>10</b> <b>7</b> <s>1</s> 3 <s>6</s> <b>8</b> 2" in reply["text"]
    assert "<b>3 successes</b> — Complete" in reply["text"]
    command_id = await emulator.message_id_of(token, "/roll 7 6")
    assert json.loads(reply["reply_parameters"])["message_id"] == command_id


async def test_a_command_for_this_bot_in_a_group_and_not_one_for_another(emulator):
    token = new_token()
    chat = group(-9001)
    async with serving(adapter_for(emulator, token, [9, 9, 2, 4, 6, 1, 7, 5])) as adapter:
        # privacy mode delivers /roll@OurBot; /roll@OtherBot is not for us
        await emulator.say(token, chat, MARK, "/roll@SomeOtherBot 1 6")
        await emulator.say(token, chat, LYNN, f"/roll@{BOT_USERNAME} 7 6")
        await emulator.say(token, chat, MARK, "/roll 1 6")
        replies = await emulator.replies(token, chat["id"], 2)
        await settle(adapter)
        assert await emulator.no_more_replies(token, chat["id"]) == []
    first, second = replies
    assert first["text"].startswith("<b>Lynn</b>\n7 dice, difficulty 6 (Standard): <b>9</b>")
    assert second["text"].startswith("<b>Mark</b>\n1 die, difficulty 6 (Standard): 5\n")
    assert int(first["chat_id"]) == chat["id"]


async def test_the_room_prefix_in_a_group_and_chatter_left_alone(emulator):
    token = new_token()
    chat = group(-9002)
    async with serving(adapter_for(emulator, token, [8, 3])) as adapter:
        await emulator.say(token, chat, LYNN, "let us roll for it")
        await emulator.say(token, chat, LYNN, "!roll 2 6 # sneaking <past> the guard & co")
        [reply] = await emulator.replies(token, chat["id"], 1)
        await settle(adapter)
        assert await emulator.no_more_replies(token, chat["id"]) == []
    # the comment is escaped for HTML parse mode
    assert reply["text"].startswith(
        "<b>Lynn</b> — <i>sneaking &lt;past&gt; the guard &amp; co</i>\n2 dice"
    )


async def test_an_error_reply(emulator):
    token = new_token()
    async with serving(adapter_for(emulator, token, [5])) as adapter:
        await emulator.say(token, private_chat(LYNN), LYNN, "/roll 7 x")
        [reply] = await emulator.replies(token, LYNN["id"], 1)
        await settle(adapter)
    assert reply["text"].startswith("⚠ ")
    assert "Usage: <code>!roll" in reply["text"]


async def test_a_v5_roll_then_a_willpower_reroll(emulator):
    token = new_token()
    chat = group(-9003)
    faces = [2, 3, 7, 8, 4, 9, 1, 6]
    adapter = adapter_for(emulator, token, faces, variants=("revised", "v5"))
    async with serving(adapter):
        await emulator.say(token, chat, LYNN, "/variant v5")
        [switched] = await emulator.replies(token, chat["id"], 1)
        await emulator.say(token, chat, LYNN, "!roll 5 0 3")
        [roll] = await emulator.replies(token, chat["id"], 1)
        await emulator.say(token, chat, LYNN, "!reroll")
        [reroll] = await emulator.replies(token, chat["id"], 1)
        await emulator.say(token, chat, LYNN, "!reroll")
        [again] = await emulator.replies(token, chat["id"], 1)
        await settle(adapter)
    assert "now plays <b>Vampire: the Masquerade, 5th edition</b> (v5)" in switched["text"]
    assert "5 dice, Difficulty 3: 2 3 <b>7</b> <b>8</b> 4" in roll["text"]
    # the re-roll strategies that apply, as inline buttons under the roll
    keyboard = roll["reply_markup"]["inline_keyboard"]
    assert [b["text"] for row in keyboard for b in row] == ["Re-roll failures", "Go for criticals"]
    assert "Difficulty 3: <b>9</b> 1 <b>7</b> <b>8</b> <b>6</b>\n<b>Win</b>" in reroll["text"]
    assert "Willpower re-roll (failures): 2 3 4 → 9 1 6." in reroll["text"]
    assert again["text"].startswith("⚠ your last roll was already re-rolled")


async def test_a_v5_reroll_of_the_dice_the_player_names(emulator):
    token = new_token()
    chat = group(-9004)
    adapter = adapter_for(emulator, token, [3, 8, 2, 1, 10, 9, 6], variants=("revised", "v5"))
    async with serving(adapter):
        for text in ("/variant v5", "!roll 5 1 3", "!reroll 8 1"):
            await emulator.say(token, chat, LYNN, text)
            [reply] = await emulator.replies(token, chat["id"], 1)
        await settle(adapter)
    html = reply["text"]
    assert "Difficulty 3: 3 <b>9</b> 2 <b>6</b> | Hunger <b>[10]</b>\n<b>Win</b>" in html
    assert "Willpower re-roll (your choice): 8 1 → 9 6." in html


async def test_a_character_sheet_in_telegram_html(emulator):
    """#17: `!sheet` through the real adapter and the emulator: HTML parse mode, the name and
    the group headings bold, nothing unescaped."""
    token = new_token()
    chat = group(-9017)
    async with serving(adapter_for(emulator, token, [6, 6, 6, 6, 6])) as adapter:
        for text in ("!char new Lise <3", "!char new Lise", "!char set Strength 3 Brawl 2"):
            await emulator.say(token, chat, LYNN, text)
            await emulator.replies(token, chat["id"], 1)
        await emulator.say(token, chat, LYNN, "!sheet")
        [sheet] = await emulator.replies(token, chat["id"], 1)
        await emulator.say(token, chat, LYNN, "!roll Strength+Brawl 6")
        [roll] = await emulator.replies(token, chat["id"], 1)
        await settle(adapter)
    assert sheet["text"].startswith("<b>Lise</b> (Lynn, revised)\n<b>Attributes</b>  Strength 3")
    assert "<b>Talents</b>  Brawl 2" in sheet["text"]
    assert "Lise: Strength 3 + Brawl 2 = 5 dice" in roll["text"]


async def test_v5_remorse_vs_by_name_and_a_macro_in_telegram_html(emulator):
    """#17 through the real adapter and the emulator in a group switched to v5: `!remorse`
    (the outcome and the Humanity change), `vs` another character of the same player by Trait
    names, a macro typed in lower-case abbreviations shown back by the sheet's names and run
    (also as a slash command). HTML parse mode; the visible text has the plain words."""
    token = new_token()
    chat = group(-9117)
    faces = [2, 5, *[8, 8, 8, 3, 2], *[6, 4, 1], *[7, 7, 3], *[9, 1, 4]]
    # a player typing a dozen commands at once: the rate limit is not what is tested here
    adapter = adapter_for(
        emulator, token, faces, variants=("revised", "v5"), limits={"rate": {"enabled": False}}
    )
    async with serving(adapter):

        async def say(text: str) -> dict[str, Any]:
            await emulator.say(token, chat, LYNN, text)
            [reply] = await emulator.replies(token, chat["id"], 1)
            assert reply["parse_mode"] == "HTML"
            return reply

        await say("/variant v5")
        played = await v5_character_session(say)
        remorse, versus, added, hunt = (played[k] for k in ("remorse", "versus", "added", "hunt"))
        sheet = played["sheet"]
        slashed = await say("/hunt")  # the macro again, as a slash command
        await settle(adapter)

    # remorse: 2 empty boxes, 2 dice, no success: Humanity 7 → 6 and the Stains cleared
    html = remorse["text"]
    assert html.startswith("<b>Lynn</b>\n2 dice (humanity 2), Difficulty 1: 2 5\n")
    assert "<b>Total failure</b> — no successes at all.\n" in html
    change = "loses a point of Humanity (remorse, 2 dice): Humanity 7 → 6; Stains 1/3 → 0/4"
    assert f"\n<b>Lise</b> {change}" in html
    assert f"\nLise {change}" in visible_text(html)
    assert "Humanity 6 · Stains 0/4" in visible_text(sheet["text"])
    # vs by name: both pools read from the sheets, the result; the buttons as a keyboard
    html = versus["text"]
    assert "5 dice (strength 3+brawl 2), Hunger 1: <b>8</b> <b>8</b> <b>8</b> 3 | Hunger [2]" in (
        html
    )
    assert "Opposition, 3 dice (wits 2+awareness 1), Hunger 1: <b>6</b> 4 | Hunger [1]" in html
    assert "\n<b>Win</b> — 3 successes against 1, margin 2\n" in html
    pools = "Lise: Strength 3 + Brawl 2 = 5 dice\nCid: Wits 2 + Awareness 1 = 3 dice"
    assert f"margin 2\n{pools}\n<i>roll " in html
    keyboard = versus["reply_markup"]["inline_keyboard"]
    assert [b["text"] for row in keyboard for b in row] == ["Re-roll failures", "Go for criticals"]
    # the macro: stored and shown by the sheet's names, run with the same rules
    assert added["text"] == "<b>Lise</b>: macro !hunt = Wits+Streetwise 4"
    for run, dice in (
        (hunt, "<b>7</b> <b>7</b> | Hunger [3]"),
        (slashed, "<b>9</b> 1 | Hunger [4]"),
    ):
        html = run["text"]
        assert html.startswith("<b>hunt:</b> <b>Lynn</b>\n3 dice (wits 2+streetwise 1), Hunger 1")
        assert f"Difficulty 4: {dice}\n<b>Failure</b>" in html
        # the pools line right under the outcome: no empty line where the buttons were
        assert (
            ". The Storyteller may offer a win at a cost.\nLise: Wits 2 + Streetwise 1 = 3 dice\n"
            in html
        )
        assert "\n\n" not in html


async def test_an_ask_names_the_player_by_their_username(emulator):
    """The Storyteller's ``!ask @user … secret`` tells the player by their @username."""
    token = new_token()
    chat = group(-9218)
    adapter = adapter_for(emulator, token, [], limits={"rate": {"enabled": False}})
    async with serving(adapter):
        await emulator.say(token, chat, MARK, "!storyteller claim")
        await emulator.replies(token, chat["id"], 1)
        await emulator.say(token, chat, MARK, "!ask @lynn_r 5 6 secret")
        [asked] = await emulator.replies(token, chat["id"], 1)
        await emulator.say(token, chat, MARK, "!ask @bob 5 6 secret")  # not a username: text
        [typed] = await emulator.replies(token, chat["id"], 1)
        await settle(adapter)
    assert asked["text"].startswith("<b>Mark</b> asks @lynn_r to roll <code>5</code> against")
    assert typed["text"].startswith("<b>Mark</b> asks bob to roll")


async def test_contest_by_trait_names_between_two_telegram_users(emulator):
    """#17 between two Telegram users in a group: a contest by Trait names, the challenged
    named by their @username, each side read from its own player's sheet."""
    token = new_token()
    chat = group(-9217)
    faces = [8, 8, 3, 2, 1, *[9, 7, 7, 4, 4]]
    adapter = adapter_for(emulator, token, faces, limits={"rate": {"enabled": False}})
    async with serving(adapter):

        async def say(user: dict[str, Any], text: str) -> dict[str, Any]:
            await emulator.say(token, chat, user, text)
            [reply] = await emulator.replies(token, chat["id"], 1)
            assert reply["parse_mode"] == "HTML"
            return reply

        await say(LYNN, "!char new Lise")
        await say(LYNN, "!char set Dexterity 4 Athletics 1")
        await say(MARK, "!char new Max")
        await say(MARK, "!char set Strength 3 Brawl 2")
        challenge = await say(MARK, "!contest @lynn_r Strength+Brawl")
        answer = await say(LYNN, "!resist Dex+Athletics")
        await settle(adapter)
    # the challenged player by their @username, which Telegram links and notifies
    assert challenge["text"] == (
        "<b>Mark</b> challenges @lynn_r (a resisted roll): the contest is on."
        " The answer: <code>!resist [@USER] POOL [DIFFICULTY] [wp]</code>."
    )
    assert "Strength" not in challenge["text"]
    html = answer["text"]
    assert html.startswith(
        "<b>Mark vs Lynn</b>\n5 dice, difficulty 6 (Standard): <s>8</s> <b>8</b> 3 2 <s>1</s>\n"
    )
    assert (
        "\nOpposed (Lynn): 5 dice, difficulty 6 (Standard): <b>9</b> <b>7</b> <b>7</b> 4 4\n"
        in html
    )
    pools = "Max: Strength 3 + Brawl 2 = 5 dice\nLise: Dexterity 4 + Athletics 1 = 5 dice"
    assert f"\nContest over: <b>Lynn</b> wins.\n{pools}\n<i>roll " in html
    assert f"Contest over: Lynn wins.\n{pools}\n" in visible_text(html)
