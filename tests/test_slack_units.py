"""The Slack adapter's parts on their own: mrkdwn encoding and escaping, incoming text, Block Kit
limits, button values, settings and credentials, event de-duplication, plugin registration."""

from __future__ import annotations

import importlib.util
import json
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coterie.errors import ConfigError
from coterie.framework.app import Coterie
from coterie.framework.config import Config
from coterie.render.elements import (
    BR,
    Actions,
    Bold,
    Button,
    Code,
    Die,
    Image,
    Italic,
    Mention,
    Node,
    Reply,
    Role,
    Strike,
    Text,
)
from coterie.storage.state import MemoryStore
from coterie_slack import SlackAdapter
from coterie_slack.blocks import (
    MAX_BLOCKS,
    MAX_BUTTON_VALUE,
    MAX_FALLBACK_TEXT,
    MAX_SECTION_TEXT,
    TRUNCATED,
    build_message,
    button_value,
    read_button_value,
    split_text,
    truncate,
    without_buttons,
)
from coterie_slack.dedup import NAMESPACE, RecentDeliveries, delivery_key
from coterie_slack.mrkdwn import (
    WORD_JOINER,
    SlackEncoder,
    SlackPlainEncoder,
    decode,
    escape,
    remove_mentions,
    strip_leading_mention,
    with_names,
)
from coterie_slack.settings import SlackSettings, read_credentials
from slack_fake import BOT_SCOPES, ENV, make_core

MRKDWN = SlackEncoder()

# --- mrkdwn ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "escaped"),
    [
        ("a & b", "a &amp; b"),
        ("<!channel> <@U123> <https://evil.example|click>", None),
        ("&lt; stays literal", "&amp;lt; stays literal"),
        (
            "@here and @Channel and @everyone",
            f"@{WORD_JOINER}here and @{WORD_JOINER}Channel and @{WORD_JOINER}everyone",
        ),
        ("mail me@heren.example", "mail me@heren.example"),
    ],
)
def test_escape(raw, escaped):
    out = escape(raw)
    assert "<" not in out and ">" not in out
    if escaped is not None:
        assert out == escaped


@given(st.text())
def test_no_text_can_form_a_control_sequence(value):
    nodes: list[Node] = [Text(value), Bold((Text(value),)), Code(value)]
    out = MRKDWN.encode(nodes)
    assert "<" not in out and ">" not in out
    # every & starts one of the three escapes
    assert out.count("&") == out.count("&amp;") + out.count("&lt;") + out.count("&gt;")


def test_formatting_nodes():
    nodes: list[Node] = [
        Bold((Text(" Lynn "),)),
        Italic((Text("sneaky"),)),
        Strike((Text("gone"),)),
        Code("!roll `x`"),
        BR,
        Bold((Text("  "),)),
    ]
    assert MRKDWN.encode(nodes) == " *Lynn* _sneaky_~gone~`!roll ˋxˋ`\n"


@pytest.mark.parametrize(
    ("role", "tags", "shown"),
    [
        (Role.SUCCESS, (), "*8*"),
        (Role.CRITICAL, (), "*_10_*"),
        (Role.FAILURE, (), "4"),
        (Role.ONE, (), "~1~"),
        (Role.CANCELLED, (), "~7~"),
        (Role.BOTCH, (), "*~1~*"),
        (Role.SUCCESS, ("hunger",), "*[8]*"),
    ],
)
def test_die_faces_are_styled_by_role(role, tags, shown):
    face = int(shown.strip("*_~[]"))
    assert MRKDWN.encode([Die(face, role, tags=frozenset(tags))]) == shown


@pytest.mark.parametrize(
    ("mention", "shown"),
    [
        # to be told, by a Slack user id: Slack's own mention (it shows the name and notifies)
        (Mention("U024BE7LH", "U024BE7LH", notify=True), "<@U024BE7LH>"),
        (Mention("W0123456789", "Lynn", notify=True), "<@W0123456789>"),
        # a name typed after "@", or anything short of an id: the label, never a broken mention
        (Mention("bob", "bob", notify=True), "bob"),
        (Mention("UMBRA", "UMBRA", notify=True), "UMBRA"),
        (Mention("u024be7lh", "u024be7lh", notify=True), "u024be7lh"),
        (Mention("C024BE7LH", "C024BE7LH", notify=True), "C024BE7LH"),
        (Mention("U024BE7LH|x", "x", notify=True), "x"),
        # named in passing: the label, no ping
        (Mention("U024BE7LH", "U024BE7LH"), "U024BE7LH"),
        # the label is text like any other: escaped, broadcasts defused
        (Mention("<!channel>", "<!channel> & co", notify=True), "&lt;!channel&gt; &amp; co"),
        (Mention("U024BE7LH", "<@U1> & @here"), f"&lt;@U1&gt; &amp; @{WORD_JOINER}here"),
    ],
)
def test_a_mention_notifies_only_a_slack_user_id(mention, shown):
    """In the mrkdwn and in the ``text`` fallback alike (Slack's notifications read the latter)."""
    nodes: list[Node] = [Text("ask "), mention, Text(".")]
    assert MRKDWN.encode(nodes) == f"ask {shown}."
    assert SlackPlainEncoder().encode(nodes) == f"ask {shown}."
    # inside formatting too
    assert MRKDWN.encode([Bold((mention,))]) == f"*{shown}*"


def test_incoming_text_is_decoded():
    raw = "!roll 5 # for <@U0MARK|mark> in <#C0GAME|game> &lt;3 &amp; <https://x.io|x> <!here>"
    assert decode(raw) == "!roll 5 # for @mark in #game <3 & x @here"
    assert decode("<@U0MARK> <#C0GAME> <https://x.io> <!subteam^S1|@team>") == (
        "@U0MARK #C0GAME https://x.io @team"
    )


def test_mentions_of_the_bot():
    assert strip_leading_mention("  <@U0BOT|coterie>: roll 5", "U0BOT") == ("roll 5", True)
    assert strip_leading_mention("roll 5 <@U0BOT>", "U0BOT") == ("roll 5 <@U0BOT>", False)
    assert strip_leading_mention("<@U0BOTX> roll", "U0BOT") == ("<@U0BOTX> roll", False)
    assert strip_leading_mention("<@U0BOT> roll", None) == ("<@U0BOT> roll", False)
    assert remove_mentions("a <@U0BOT> b <@U0BOT|x>", "U0BOT") == "a  b "


# --- Block Kit ------------------------------------------------------------------------------------


def test_a_reply_becomes_sections_buttons_and_context():
    reply = Reply(
        [
            Text("Spend Willpower?"),
            Actions((Button("Re-roll", "!wp reroll k3f9qz"), Button("", "!keep"))),
            Text("after"),
            Image(b"png", "chart", "c.png"),
        ],
        meta={"roll_id": "k3f9qz", "variant": "v5"},
    )
    message = build_message(reply, owner="U0LYNN")
    types = [b["type"] for b in message.blocks]
    assert types == ["section", "actions", "section", "context"]
    buttons = message.blocks[1]["elements"]
    assert [b["text"]["text"] for b in buttons] == ["Re-roll", "!keep"]
    assert len({b["action_id"] for b in buttons}) == 2
    assert read_button_value(buttons[0]["value"]) == ("!wp reroll k3f9qz", "U0LYNN")
    assert message.blocks[2]["text"]["text"] == "after"
    assert message.blocks[3]["elements"][0]["text"] == "roll `k3f9qz` · v5"
    assert message.images == (Image(b"png", "chart", "c.png"),)
    assert message.text == "Spend Willpower?after[image: chart]"
    assert [b["type"] for b in without_buttons(message.blocks)] == ["section", "section", "context"]


def test_images_are_described_when_not_uploaded():
    reply = Reply([Text("Odds: "), Image(b"png", "odds <5>", "o.png")], ephemeral=True)
    message = build_message(reply, owner="U1", upload_images=False)
    assert message.images == ()
    assert message.blocks[0]["text"]["text"] == "Odds: [image: odds &lt;5&gt;]"


def test_every_image_is_uploaded_in_order_wherever_it_sits():
    first, second, third = (Image(b"png", f"chart {n}", f"{n}.png") for n in range(3))
    body: list[Node] = [
        first,
        Bold((Text("odds "), Italic((second,)))),
        Actions((Button("again", "!roll 2"),)),
        Strike((Text("old"), third)),
    ]
    message = build_message(Reply(body), owner="U1")
    assert message.images == (first, second, third)
    assert "image" not in message.blocks[0]["text"]["text"]


def test_an_image_only_reply_has_no_body():
    message = build_message(Reply([Image(b"png", "chart")], meta={"variant": "v5"}), owner="U1")
    assert not message.has_body and len(message.images) == 1
    assert build_message(Reply([Text("x")]), owner="U1").has_body


def test_long_replies_are_split_under_slacks_limits():
    line = "x" * 120
    reply = Reply([node for _ in range(100) for node in (Text(line), BR)], meta={"roll_id": "a"})
    message = build_message(reply, owner="U1")
    sections = [b for b in message.blocks if b["type"] == "section"]
    assert len(sections) == 5
    assert all(len(s["text"]["text"]) <= MAX_SECTION_TEXT for s in sections)
    assert "\n".join(s["text"]["text"] for s in sections) == "\n".join([line] * 100)


def test_a_huge_reply_is_truncated_to_fifty_blocks():
    reply = Reply([Text("y" * (MAX_SECTION_TEXT * 60))], meta={"roll_id": "a"})
    message = build_message(reply, owner="U1")
    assert len(message.blocks) == MAX_BLOCKS
    assert message.blocks[-2]["text"]["text"] == TRUNCATED
    assert message.blocks[-1]["type"] == "context"
    assert len(message.text) == MAX_FALLBACK_TEXT and message.text.endswith("…")


def test_split_text_never_cuts_an_escape():
    text = "a" * 9 + "&amp;" + "b" * 10
    pieces = split_text(text, 11)
    assert pieces == ["a" * 9, "&amp;" + "b" * 6, "b" * 4]
    assert split_text("\n \n", 5) == []
    assert truncate("abc&lt;d", 6) == "abc…"


def test_split_text_never_cuts_a_mention():
    text = "a" * 9 + "<@U024BE7LH>" + "b" * 5
    assert split_text(text, 14) == ["a" * 9, "<@U024BE7LH>bb", "bbb"]
    assert split_text(text, 21) == ["a" * 9 + "<@U024BE7LH>", "b" * 5]
    assert truncate(text, 15) == "a" * 9 + "…"
    # a reply too long for one section: the mention arrives whole in the next
    reply = Reply([Text("x" * (MAX_SECTION_TEXT - 5)), Mention("U024BE7LH", "L", notify=True)])
    sections = [b["text"]["text"] for b in build_message(reply, owner="U1").blocks]
    assert sections == ["x" * (MAX_SECTION_TEXT - 5), "<@U024BE7LH>"]


def test_buttons_too_long_for_slack_are_left_out():
    long = Button("big", "!echo " + "z" * MAX_BUTTON_VALUE)
    message = build_message(Reply([Actions((long,))]), owner="U1")
    assert message.blocks == []
    message = build_message(Reply([Actions((long, Button("ok", "!ok")))]), owner="U1")
    [row] = message.blocks
    assert [e["text"]["text"] for e in row["elements"]] == ["ok"]


@pytest.mark.parametrize("value", ["", "not json", "[1]", '{"c": "!x"}', '{"c": 1, "u": "U1"}'])
def test_foreign_button_values_are_refused(value):
    assert read_button_value(value) is None


def test_button_value_round_trip():
    assert read_button_value(button_value("!roll 5 # «ü»", "U1")) == ("!roll 5 # «ü»", "U1")


# --- settings and credentials ---------------------------------------------------------------------


def test_default_settings():
    settings = SlackSettings.from_table({"enabled": True})
    assert settings.mode == "socket" and settings.thread == "follow"
    assert settings.slash_commands == {"/coterie": "", "/roll": "roll", "/odds": "odds"}
    assert (settings.bot_token_env, settings.app_token_env, settings.signing_secret_env) == (
        "SLACK_BOT_TOKEN",
        "SLACK_APP_TOKEN",
        "SLACK_SIGNING_SECRET",
    )
    assert SlackSettings.from_table({"api_url": "http://127.0.0.1:9/api"}).api_url == (
        "http://127.0.0.1:9/api/"
    )


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"threads": "never"}, "adapters.slack.threads: unknown key (did you mean 'thread'?)"),
        ({"thread": "sometimes"}, "adapters.slack.thread: Input should be 'follow', 'always'"),
        ({"mode": "rtm"}, "adapters.slack.mode: Input should be 'socket' or 'http'"),
        ({"port": 70000}, "adapters.slack.port: Input should be less than or equal to 65535"),
        ({"path": "events"}, "adapters.slack.path: must start with /"),
        ({"api_url": "slack.com"}, "adapters.slack.api_url: must be an http(s) URL"),
        ({"bot_token_env": "xoxb-123-abc"}, "is not an environment variable name"),
        ({"slash_commands": {}}, "name at least one slash command"),
        ({"slash_commands": {"roll": "roll"}}, "'roll' is not a slash command name"),
        ({"slash_commands": {"/Roll": ""}}, "'/Roll' is not a slash command name"),
        ({"slash_commands": {"/r": "roll 5"}}, "/r: 'roll 5' is not a command word"),
        ({"ping_interval": 0}, "adapters.slack.ping_interval: Input should be greater than 0"),
    ],
)
def test_bad_settings_name_the_key(table, message):
    with pytest.raises(ConfigError) as error:
        SlackSettings.from_table(table)
    assert message in str(error.value)


def test_the_config_file_refuses_secrets_in_the_slack_table():
    with pytest.raises(ValueError, match="bot_token_env instead"):
        Config.model_validate({"adapters": {"slack": {"bot_token": "xoxb-1"}}})


def test_credentials_come_from_the_named_variables():
    settings = SlackSettings.from_table({"bot_token_env": "B", "app_token_env": "A"})
    credentials = read_credentials(settings, {"B": "xoxb-1", "A": "xapp-1"})
    assert (credentials.bot_token, credentials.app_token) == ("xoxb-1", "xapp-1")
    assert credentials.signing_secret is None
    assert "xoxb" not in repr(credentials) and "xapp" not in repr(credentials)
    assert repr(credentials) == "Credentials(bot_token, app_token)"


@pytest.mark.parametrize(
    ("table", "environ", "message"),
    [
        ({}, {}, "adapters.slack.bot_token_env: the environment variable SLACK_BOT_TOKEN is not"),
        ({}, {"SLACK_BOT_TOKEN": "xapp-1"}, "holds an app-level token"),
        ({}, {"SLACK_BOT_TOKEN": "xoxb-1"}, "app_token_env: the environment variable SLACK_APP"),
        (
            {"mode": "http"},
            {"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xapp-1"},
            "signing_secret_env: the environment variable SLACK_SIGNING_SECRET is not set",
        ),
    ],
)
def test_missing_or_mistaken_credentials(table, environ, message):
    with pytest.raises(ConfigError, match=message):
        read_credentials(SlackSettings.from_table(table), environ)


def test_http_mode_needs_no_app_token():
    settings = SlackSettings.from_table({"mode": "http"})
    credentials = read_credentials(
        settings, {"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "s"}
    )
    assert credentials.signing_secret == "s" and credentials.app_token is None


def test_the_adapter_reads_the_process_environment(monkeypatch):
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-from-env")
    monkeypatch.setenv("SLACK_APP_TOKEN", "xapp-from-env")
    adapter = SlackAdapter(make_core(), {"enabled": True})
    assert adapter.credentials.bot_token == "xoxb-from-env"
    monkeypatch.delenv("SLACK_APP_TOKEN")
    with pytest.raises(ConfigError, match="SLACK_APP_TOKEN is not set"):
        SlackAdapter(make_core(), {"enabled": True})


def test_a_missing_slack_extra_is_a_config_error(monkeypatch):
    core = make_core()
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "slack_bolt" else real(name)
    )
    with pytest.raises(ConfigError, match=r"needs the slack extra .*missing: slack_bolt"):
        SlackAdapter(core, {"enabled": True}, environ=ENV)


# --- plugin ---------------------------------------------------------------------------------------


def test_the_entry_point_provides_the_adapter():
    config = Config.model_validate(
        {"plugins": {"enable": ["revised", "slack"]}, "adapters": {"slack": {"enabled": True}}}
    )
    app = Coterie(config)
    assert app.adapter_classes["slack"] is SlackAdapter
    assert not app.host.failures


# --- de-duplication -------------------------------------------------------------------------------


def test_delivery_keys():
    assert delivery_key({"event_id": "Ev1", "trigger_id": "t"}) == "event:Ev1"
    assert delivery_key({"command": "/roll", "trigger_id": "123.456"}) == "trigger:123.456"
    assert delivery_key({"type": "url_verification", "challenge": "c"}) is None
    assert delivery_key({"event_id": ""}) is None


async def test_recent_deliveries_expire_and_stay_bounded():
    store = MemoryStore()
    now = [1000.0]
    recent = RecentDeliveries(store, window=60, max_ids=3, clock=lambda: now[0])
    assert await recent.first_time("a")
    assert not await recent.first_time("a")
    now[0] += 59
    assert not await recent.first_time("a")
    now[0] += 2  # 61 s after "a" was first seen
    assert await recent.first_time("a")
    for key in "bcd":
        now[0] += 1
        assert await recent.first_time(key)
    assert await recent.prune() == 1
    assert await store.keys(NAMESPACE) == ["b", "c", "d"]  # the oldest went beyond max_ids
    json.dumps(await store.get(NAMESPACE, "b"))
    # a second instance over the same store (a restart, another process) knows them
    assert not await RecentDeliveries(store, clock=lambda: now[0]).first_time("c")
    now[0] += 61
    assert await recent.prune() == 3  # expired
    assert await store.keys(NAMESPACE) == []


async def test_a_claim_not_marked_done_is_taken_over_after_its_lease():
    store = MemoryStore()
    now = [1000.0]
    worker1 = RecentDeliveries(store, lease=10, clock=lambda: now[0])
    worker2 = RecentDeliveries(store, lease=10, clock=lambda: now[0])
    assert await worker1.claim("e") == "new"
    assert await worker2.claim("e") == "busy"  # worker 1 is answering it
    now[0] += 11  # worker 1 died before answering
    assert await worker2.claim("e") == "new"
    await worker2.done("e")
    assert await worker1.claim("e") == "done"


# --- the app manifest ----------------------------------------------------------------------------

Tree = dict[str, Any]


def read_manifest(text: str) -> Tree:
    """Parse the block-style YAML the manifest is written in: nested mappings, lists of scalars
    or of mappings, quoted or plain scalars, ``>-`` folded text, full-line comments."""
    lines = [
        (len(raw) - len(raw.lstrip(" ")), raw.strip())
        for raw in text.splitlines()
        if raw.strip() and not raw.strip().startswith("#")
    ]
    value, end = _block(lines, 0, lines[0][0])
    assert end == len(lines), f"unparsed manifest line: {lines[end][1]!r}"
    return value


#: ``key: value`` or ``key:`` (a colon inside a plain scalar such as ``chat:write`` is no key)
_KEY = re.compile(r"([A-Za-z_][\w.-]*):(?:\s+(.*)|$)")


def _scalar(text: str) -> Any:
    if text in ("true", "false"):
        return text == "true"
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    return text


def _block(lines: list[tuple[int, str]], at: int, indent: int) -> tuple[Any, int]:
    if lines[at][1].startswith("- "):
        items: list[Any] = []
        while at < len(lines) and lines[at][0] == indent and lines[at][1].startswith("- "):
            content = lines[at][1][2:]
            if _KEY.match(content):
                # a mapping item: its first key is on the dash line
                rest = [(indent + 2, content), *lines[at + 1 :]]
                item, used = _block(rest, 0, indent + 2)
                items.append(item)
                at += used
            else:
                items.append(_scalar(content))
                at += 1
        return items, at
    mapping: Tree = {}
    while at < len(lines) and lines[at][0] == indent:
        match = _KEY.match(lines[at][1])
        assert match is not None, f"not a key: {lines[at][1]!r}"
        key, rest = match.group(1), match.group(2)
        at += 1
        if rest is None:
            mapping[key], at = _block(lines, at, lines[at][0])
        elif rest == ">-":
            folded = []
            while at < len(lines) and lines[at][0] > indent:
                folded.append(lines[at][1])
                at += 1
            mapping[key] = " ".join(folded)
        else:
            mapping[key] = _scalar(rest)
    return mapping, at


def test_the_manifest_reader():
    text = "a:\n  b: 'x # y'\n  c:\n    - d:e\n    - e: true\n      f: >-\n        g\n        h\n"
    assert read_manifest(text) == {"a": {"b": "x # y", "c": ["d:e", {"e": True, "f": "g h"}]}}


def test_the_manifest_matches_the_adapter(root):
    manifest = read_manifest((root / "config" / "slack-manifest.yml").read_text(encoding="utf-8"))
    scopes = set(manifest["oauth_config"]["scopes"]["bot"])
    assert scopes == {
        "app_mentions:read",
        "channels:history",
        "chat:write",
        "commands",
        "files:write",
        "groups:history",
        "im:history",
        "im:write",
        "mpim:history",
        "users:read",
    }
    assert scopes == set(BOT_SCOPES)  # the fake Web API grants what the manifest asks for
    settings = manifest["settings"]
    assert set(settings["event_subscriptions"]["bot_events"]) == {
        "app_mention",
        "message.channels",
        "message.groups",
        "message.im",
        "message.mpim",
    }
    assert settings["interactivity"]["is_enabled"] is True
    assert settings["socket_mode_enabled"] is True
    commands = manifest["features"]["slash_commands"]
    assert [c["command"] for c in commands] == list(SlackSettings().slash_commands)
    assert all(c["should_escape"] is False and c["description"] for c in commands)
    assert manifest["features"]["app_home"]["messages_tab_enabled"] is True


def test_config_check_validates_the_slack_table(tmp_path) -> None:
    from coterie.ops.cli import main

    bad = tmp_path / "bad.toml"
    bad.write_text('[adapters.slack]\nenabled = true\nmode = "carrier-pigeon"\n', encoding="utf-8")
    assert main(["config", "check", str(bad)]) == 3
    good = tmp_path / "good.toml"
    good.write_text('[adapters.slack]\nenabled = true\nmode = "http"\n', encoding="utf-8")
    assert main(["config", "check", str(good)]) == 0  # no token needed to check the file


async def test_a_person_named_in_passing_by_a_slack_id_gets_their_name() -> None:
    asked: list[str] = []

    async def name_of(user: str) -> str | None:
        asked.append(user)
        return {"U0MARK00000": "Mark <Roe>"}.get(user)

    body = [
        Bold((Mention("U0MARK00000", "U0MARK00000"),)),
        Mention("U0NOBODY000", "U0NOBODY000"),  # no name known: the id stays
        Mention("bob", "bob"),  # typed: no lookup
        Mention("U0MARK00000", "Mark", notify=True),  # a label of its own: kept
    ]
    named = await with_names(body, name_of)
    assert asked == ["U0MARK00000", "U0NOBODY000"]
    assert SlackEncoder().encode(named) == "*Mark &lt;Roe&gt;*U0NOBODY000bob<@U0MARK00000>"
