"""The ``revised`` rule set through the chat path (``Coterie.handle``) with fixed faces."""

from __future__ import annotations

from conftest import without_roll_id
from coterie.dice.sources import FixedDice
from coterie.framework.app import Coterie
from coterie.framework.config import Config
from coterie.framework.message import Message
from coterie.render.elements import Die, Role, walk
from coterie.render.encode import to_markdown, to_plain


def app_with(faces: list[int], **config) -> Coterie:
    config.setdefault("plugins", {"enable": ["revised"]})
    return Coterie(Config.model_validate(config), dice=FixedDice(faces))


async def say(app: Coterie, text: str, user: str = "lynn"):
    reply = await app.handle(Message(platform="test", room="r", user=user, text=text))
    assert reply is not None
    return without_roll_id(reply)


async def test_roll_reply_shows_faces_roles_and_result() -> None:
    reply = await say(app_with([9, 1, 1, 8, 1]), "!roll 5 8 # shooting through the window")
    text = to_plain(reply.body)
    assert text.splitlines() == [
        "lynn — shooting through the window",
        "5 dice, difficulty 8 (Difficult): 9 1 1 8 1",
        "Failure (3 ones cancelled 2 of 2)",
    ]
    roles = [node.role for node in walk(reply.body) if isinstance(node, Die)]
    assert roles == [Role.CANCELLED, Role.CANCELLED, Role.CANCELLED, Role.CANCELLED, Role.ONE]
    assert reply.meta["variant"] == "revised" and len(reply.meta["roll_id"]) == 6


async def test_botch_reply_and_markdown() -> None:
    reply = await say(app_with([1, 3, 4, 3, 7]), "!roll 5 8")
    assert "Botch! No success and 1 one." in to_plain(reply.body)
    markdown = to_markdown(reply.body)
    assert "**Botch\\!**" in markdown and "__1__" in markdown


async def test_pool_as_sum_and_degree() -> None:
    reply = await say(app_with([3, 3, 8, 7, 10, 6]), "!roll 2+4")
    assert "4 successes — Exceptional" in to_plain(reply.body)


async def test_a_resisted_or_extended_roll_has_no_degree_of_its_own() -> None:
    # 000 Resisted Actions (Giselle): 4 against 3 leaves 1 success, Marginal; the 4 take no degree
    app = app_with([7, 8, 9, 10, 2, 3] + [6, 7, 8, 2, 3, 4, 5] + [7, 8, 9])
    lines = to_plain((await say(app, "!roll 6 7 vs 7 6")).body).splitlines()
    assert lines[2] == "4 successes" and lines[4] == "Opposed: 3 successes"
    assert lines[5] == "Resisted: you win with 1 success (Marginal)"
    lines = to_plain((await say(app, "!roll 3 6 ext 10")).body).splitlines()
    assert lines[2:4] == ["3 successes", "Extended: 3/10"]  # a step toward the goal


async def test_several_rolls_in_one_message() -> None:
    reply = await say(app_with([7, 7, 2, 2]), "!roll 2 6; 2 6")
    text = to_plain(reply.body)
    assert "2 successes — Moderate" in text and "Failure" in text


async def test_multi_command_applies_the_schedule() -> None:
    app = app_with([7] * 4 + [7] * 2 + [7])
    text = to_plain((await say(app, "!multi 7 6; 6 6; 6 6")).body)
    assert "7 − 3 = 4 dice (action 1 of 3)" in text
    assert "6 − 4 = 2 dice (action 2 of 3)" in text
    assert "6 − 5 = 1 die (action 3 of 3)" in text


async def test_one_willpower_point_a_turn_across_the_messages_of_its_actions() -> None:
    # 000 Willpower: one point a turn; `multi 3` then `multi 3 action 2` are the same turn
    app = app_with([7] * 40)
    assert not (await say(app, "!roll 7 6 multi 3 wp")).is_error
    logged = len(await app.state.rolls("test:r"))
    refused = await say(app, "!roll 6 6 multi 3 action 2 wp")
    assert refused.is_error
    assert "already spent this turn (on action 1 of 3)" in to_plain(refused.body)
    assert len(await app.state.rolls("test:r")) == logged  # nothing rolled, nothing kept
    assert not (await say(app, "!roll 6 6 multi 3 action 2")).is_error
    assert (await say(app, "!roll 6 6 multi 3 action 3 wp")).is_error  # still that turn
    assert not (await say(app, "!roll 7 6 multi 3 wp")).is_error  # action 1: a new turn
    assert not (await say(app, "!roll 6 6 multi 3 action 2 wp", "bob")).is_error  # bob's own


async def test_multi_command_refuses_an_action_that_cannot_be_attempted() -> None:
    app = app_with([])
    reply = await say(app, "!multi 7 6; 3 6")
    assert reply.is_error and "cannot be attempted" in to_plain(reply.body)


async def test_team_command_adds_and_flags_botches() -> None:
    app = app_with([7, 8, 1, 2])
    text = to_plain((await say(app, "!team 2 6; 2 6")).body)
    assert "Teamwork: 2 successes" in text and "member 2 botched" in text


async def test_extended_and_resisted_replies() -> None:
    app = app_with([7, 8, 2] + [3, 4, 1, 6, 4, 1, 6])
    text = to_plain((await say(app, "!roll 3 7 ext 18 progress 5")).body)
    assert "Extended: 7/18" in text
    text = to_plain((await say(app, "!roll 7 7 ext 18 progress 5")).body)
    assert "the botch wipes out 5 successes" in text and "0/18" in text
    app = app_with([7, 8, 9, 10, 2, 3] + [6, 7, 8, 2, 3, 4, 5])
    text = to_plain((await say(app, "!roll 6 7 vs 7 6")).body)
    assert "Resisted: you win with 1 success (Marginal)" in text


async def test_automatic_success_reply() -> None:
    text = to_plain((await say(app_with([]), "!roll 7 6 auto")).body)
    assert "Automatic success — Marginal" in text


async def test_free_botch_house_rule_through_chat() -> None:
    app = app_with(
        [1, 3] * 3,
        defaults={"variant": "revised", "house_rules": {"first_botch_free": True}},
    )
    first = to_plain((await say(app, "!roll 2 6")).body)
    assert "the first of the session is free" in first
    assert "Botch!" in to_plain((await say(app, "!roll 2 6")).body)
    assert "the first of the session is free" in to_plain((await say(app, "!roll 2 6", "bob")).body)


async def test_help_roll_lists_every_option() -> None:
    text = to_plain((await say(app_with([]), "!help roll")).body)
    for word in ("wp", "auto", "multi N", "action K", "retry N", "ext TARGET", "progress P", "vs"):
        assert word in text
    assert "7 Challenging" in text and "5 Phenomenal" in text


async def test_team_refuses_members_that_do_not_roll_a_plain_pool() -> None:
    app = app_with([])
    for text in ("!team 7 6 auto; 3 6", "!team 5 6 vs 3; 3 6", "!team 5 6"):
        reply = await say(app, text)
        assert reply.is_error, text
    assert "plain pools" in to_plain((await say(app, "!team 5 6 ext 9; 3 6")).body)
    assert "at least 2 rolls" in to_plain((await say(app, "!team 5 6")).body)
