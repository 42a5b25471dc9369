"""Limits in one place: every ``[limits]`` key is enforced at its configured value, replies are cut
to the reply limit at an element boundary, and docs/reliability.md lists every limit."""

from __future__ import annotations

import pytest

from conftest import RecordingDice
from coterie import hookimpl
from coterie.framework.app import Coterie
from coterie.framework.config import Config
from coterie.framework.limits import describe_limits, limit_reply, reply_length
from coterie.framework.plugins import PluginHost
from coterie.render.elements import BR, Italic, Reply, Text, bold
from coterie.render.encode import to_plain


def lines(count: int, width: int = 30) -> list:
    body: list = []
    for index in range(count):
        body += [bold(f"line {index:03d}"), Text(" " + "x" * (width - 9)), BR]
    return body


def test_a_short_reply_is_left_alone() -> None:
    reply = Reply(lines(3))
    before = list(reply.body)
    assert not limit_reply(reply, 200)
    assert reply.body == before and "truncated" not in reply.meta


def test_a_long_reply_is_cut_after_the_last_whole_line_and_keeps_its_last_line() -> None:
    full = to_plain(lines(100)).splitlines()
    reply = Reply(lines(100))
    assert limit_reply(reply, 500)
    plain = to_plain(reply.body).splitlines()
    head, note, last = plain[:-2], plain[-2], plain[-1]
    assert note == "… (reply cut at 500 characters)"
    assert last == full[-1]  # where a roll's result is
    assert len("\n".join([*head, last])) <= 500
    assert head == full[: len(head)] and len(head) >= 10  # whole lines from the start
    assert all(len(line) == 30 for line in head)  # no line cut in half
    assert reply.meta["truncated"] == "true"


def test_a_long_last_line_is_not_kept() -> None:
    reply = Reply([*lines(20), Text("z" * 150)])
    assert limit_reply(reply, 400)
    plain = to_plain(reply.body).splitlines()
    assert plain[-1] == "… (reply cut at 400 characters)"
    assert isinstance(reply.body[-1], Italic)


def test_one_huge_text_is_cut_inside() -> None:
    reply = Reply([Text("y" * 10_000)])
    assert limit_reply(reply, 300)
    first, note = to_plain(reply.body).split("\n")
    assert first == "y" * 300 and "cut at 300" in note


def test_without_line_breaks_the_cut_is_after_the_last_whole_element() -> None:
    reply = Reply([Text("a" * 150), Text("b" * 150), Text("c" * 150)])
    assert limit_reply(reply, 400)
    assert to_plain(reply.body).split("\n")[0] == "a" * 150 + "b" * 150


def test_the_roll_id_footer_is_kept_after_the_note() -> None:
    reply = Reply([*lines(50), BR, Italic((Text("roll k3f9qz"),))], meta={"roll_id": "k3f9qz"})
    assert limit_reply(reply, 200)
    plain = to_plain(reply.body).splitlines()
    assert plain[-3:] == ["… (reply cut at 200 characters)", "line 049 " + "x" * 21, "roll k3f9qz"]
    assert len("\n".join(plain[:-3])) <= 200


class Verbose:
    """A plugin that makes every reply enormous on its way out."""

    @hookimpl
    def coterie_before_reply(self, app, message, reply):
        reply.body += [BR, Text("z" * 50_000)]


async def test_the_app_cuts_every_reply_even_after_hooks(say) -> None:
    host = PluginHost()
    host.load(["revised"])
    host.register(Verbose(), "verbose")
    config = Config.model_validate(
        {"plugins": {"enable": ["revised"]}, "limits": {"max_reply_length": 300}}
    )
    app = Coterie(config, host=host, dice=RecordingDice())
    plain = await say(app, "!roll 100 6 # a very big pool")
    assert plain is not None
    assert plain.endswith("… (reply cut at 300 characters)")
    assert len(plain) <= 300 + len("\n… (reply cut at 300 characters)")
    assert plain.startswith("alice — a very big pool")


async def test_the_default_reply_limit_keeps_normal_replies_whole(make_app, send) -> None:
    reply = await send(make_app(), "!roll 100 6; 100 6; 100 6 # three big pools")
    assert reply is not None and "truncated" not in reply.meta
    assert reply_length(reply) < 30_000


@pytest.mark.parametrize(
    ("limits", "ok", "refused", "says"),
    [
        ({"max_dice": 5}, "!roll 5 6", "!roll 6 6", "at most 5"),
        ({"max_message_length": 40}, "!roll 3 6", "!roll 3 6 " + " " * 40, "at most 40"),
        ({"max_comment_length": 5}, "!roll 3 6 # short", "!roll 3 6 # longer", "at most 5"),
        ({"max_rolls_per_message": 2}, "!roll 1 6; 1 6", "!roll 1 6; 1 6; 1 6", "at most 2"),
        ({"max_options": 1}, "!roll 5 6 wp", "!roll 5 6 wp auto", "1"),
    ],
)
async def test_each_limit_is_enforced_at_its_configured_value(
    make_app, say, limits, ok, refused, says
) -> None:
    dice = RecordingDice()
    app = make_app(limits=limits, dice=dice)
    answer = await say(app, ok)
    assert answer is not None and not answer.startswith("⚠"), answer
    rolled = dice.rolls
    answer = await say(app, refused)
    assert answer is not None and answer.startswith("⚠") and says in answer, answer
    assert dice.rolls == rolled  # refused before anything was rolled


def test_limits_defaults_and_ranges_are_described() -> None:
    rows = {row["key"]: row for row in describe_limits()}
    assert rows["limits.max_reply_length"]["default"] == 60_000
    assert rows["limits.max_extended_per_room"]["default"] == 10
    assert rows["limits.max_dice"]["high"] == 1000
    assert rows["limits.rate.user_burst"]["default"] == 10
    assert "limits.rate" not in rows


def test_reliability_doc_lists_every_limit_with_its_default(root) -> None:
    doc = (root / "docs" / "reliability.md").read_text(encoding="utf-8")
    for row in describe_limits():
        key = row["key"].removeprefix("limits.").removeprefix("rate.")
        default = row["default"]
        shown = str(default).lower() if isinstance(default, bool) else str(default)
        matching = [line for line in doc.splitlines() if line.startswith(f"| `{key}` |")]
        assert matching, f"docs/reliability.md has no row for {row['key']}"
        assert any(shown.replace("'", '"') in line for line in matching), (row["key"], shown)


def test_configuration_doc_and_example_mention_every_limit(root) -> None:
    doc = (root / "docs" / "configuration.md").read_text(encoding="utf-8")
    example = (root / "config" / "coterie.example.toml").read_text(encoding="utf-8")
    for row in describe_limits():
        name = row["key"].rsplit(".", 1)[1]
        assert name in doc, row["key"]
        assert name in example, row["key"]
