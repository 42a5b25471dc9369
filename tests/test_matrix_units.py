"""The Matrix adapter's parts on their own: settings and credentials, the HTML and plain
encoders, splitting long replies, reading commands and mentions, event contents, what is
remembered between runs, and the bot's send/retry and checkpoint logic against a stub client."""

from __future__ import annotations

import asyncio
import html.parser
import importlib.util
import json
import logging
import re
import struct
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from hypothesis import given
from hypothesis import strategies as st
from nio import ErrorResponse, RoomSendResponse
from nio.crypto import OlmAccount

from coterie.errors import ConfigError
from coterie.framework.app import Coterie
from coterie.framework.config import Config
from coterie.framework.plugins import PluginHost
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
    Role,
    Strike,
    Text,
)
from coterie.storage.state import MemoryStore
from coterie_matrix import MatrixAdapter
from coterie_matrix import adapter as adapter_module
from coterie_matrix.adapter import quiet_nio
from coterie_matrix.bot import Backoff, LoginFailed, MatrixBot, _Batch, key_store_class
from coterie_matrix.content import (
    Target,
    image,
    image_size,
    notice,
    reaction,
    relation,
    transaction_id,
)
from coterie_matrix.formatting import (
    KEYCAPS,
    MatrixHtmlEncoder,
    MatrixPlainEncoder,
    Part,
    button_keys,
    escape,
    render,
)
from coterie_matrix.incoming import (
    read_command,
    strip_mention,
    strip_reply_fallback,
    with_user_ids,
)
from coterie_matrix.session import SESSION, SESSION_FILE, RecentRecords, Session, SessionData
from coterie_matrix.settings import Credentials, MatrixSettings, read_credentials
from matrix_helpers import PNG, png

BOT = "@coterie:example.org"
BASE = {"homeserver": "https://matrix.example.org", "user_id": BOT}
HTML = MatrixHtmlEncoder()
PLAIN = MatrixPlainEncoder()


# --- settings and credentials --------------------------------------------------------------------


def test_defaults():
    settings = MatrixSettings.from_table(BASE)
    assert settings.invite_policy == "any" and settings.encryption and settings.buttons
    assert settings.access_token_env == "MATRIX_ACCESS_TOKEN"
    assert settings.password_env == "MATRIX_PASSWORD"
    assert settings.store_directory("data") == Path("data/matrix")
    absolute = MatrixSettings.from_table({**BASE, "store_path": "/var/lib/coterie/keys"})
    assert absolute.store_directory("data") == Path("/var/lib/coterie/keys")


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"user_id": BOT}, "adapters.matrix.homeserver: missing: the homeserver's URL"),
        ({"homeserver": "https://m.org"}, "adapters.matrix.user_id: missing: the bot account"),
        ({**BASE, "homeserver": "matrix.example.org"}, "homeserver: must be an http(s) URL"),
        ({**BASE, "user_id": "coterie"}, "user_id: 'coterie' is not a Matrix user id"),
        (
            {**BASE, "invite_polcy": "any"},
            "invite_polcy: unknown key (did you mean 'invite_policy'?)",
        ),
        ({**BASE, "password_env": "hunter2!"}, "password_env: 'hunter2!' is not an environment"),
        ({**BASE, "invite_policy": "friends"}, "invite_policy: Input should be 'any'"),
        ({**BASE, "invite_policy": "allowlist"}, "allowed_inviters: the allowlist policy needs"),
        ({**BASE, "allowed_inviters": ["bad server!"]}, "neither a user id"),
        ({**BASE, "reconnect_initial": 10, "reconnect_max": 5}, "reconnect_max: 5 is shorter"),
        ({**BASE, "thread": "sometimes"}, "adapters.matrix.thread: Input should be"),
    ],
)
def test_bad_settings_name_the_key(table, message):
    with pytest.raises(ConfigError) as error:
        MatrixSettings.from_table(table)
    assert message in str(error.value)
    assert str(error.value).startswith("adapters.matrix.")


def test_core_checks_the_table_at_start():
    host = PluginHost()
    host.load(["revised", "matrix"])
    config = Config.model_validate(
        {
            "plugins": {"enable": ["revised", "matrix"]},
            "adapters": {"matrix": {"enabled": True, "homeserver": "ftp://x", "user_id": BOT}},
        }
    )
    with pytest.raises(ConfigError, match=r"adapters\.matrix\.homeserver: must be"):
        Coterie(config, host=host)
    assert "matrix" in Coterie(Config(), host=host).adapter_classes


def test_the_entry_point_registers_the_adapter():
    app = Coterie(Config.model_validate({"plugins": {"enable": ["revised", "matrix"]}}))
    assert app.adapter_classes["matrix"] is MatrixAdapter


@pytest.mark.parametrize(
    ("policy", "allowed", "inviter", "accepted"),
    [
        ("any", [], "@anyone:evil.example", True),
        ("none", [], "@gm:example.org", False),
        ("allowlist", ["@gm:example.org"], "@gm:example.org", True),
        ("allowlist", ["@gm:example.org"], "@gm2:example.org", False),
        ("allowlist", ["example.org"], "@whoever:example.org", True),
        ("allowlist", [":Example.org"], "@whoever:example.org", True),
        ("allowlist", ["example.org"], "@whoever:example.org.evil", False),
        ("allowlist", ["example.org:8448"], "@x:example.org:8448", True),
    ],
)
def test_invite_policy(policy, allowed, inviter, accepted):
    table = {**BASE, "invite_policy": policy, "allowed_inviters": allowed}
    assert MatrixSettings.from_table(table).may_invite(inviter) is accepted


def test_credentials_come_from_the_environment():
    settings = MatrixSettings.from_table(BASE)
    both = read_credentials(settings, {"MATRIX_ACCESS_TOKEN": "syt_x", "MATRIX_PASSWORD": "pw"})
    assert both.access_token == "syt_x" and both.password is None  # the token wins
    password = read_credentials(settings, {"MATRIX_PASSWORD": "pw", "MATRIX_STORE_PASSPHRASE": "k"})
    assert password.password == "pw" and password.store_passphrase == "k"
    assert (
        "pw" not in repr(password) and repr(password) == "Credentials(password, store_passphrase)"
    )
    with pytest.raises(ConfigError, match="neither MATRIX_ACCESS_TOKEN nor MATRIX_PASSWORD"):
        read_credentials(settings, {})


def test_the_adapter_refuses_to_start_without_credentials_or_the_extra(monkeypatch, tmp_path):
    app = Coterie(Config.model_validate({"plugins": {"enable": ["revised"]}}))
    with pytest.raises(ConfigError, match="MATRIX_PASSWORD"):
        MatrixAdapter(app, BASE, environ={})
    real = importlib.util.find_spec
    monkeypatch.setattr(
        adapter_module.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "vodozemac" else real(name, *a),
    )
    with pytest.raises(ConfigError, match=r"needs the matrix extra .*missing: vodozemac"):
        MatrixAdapter(app, BASE, environ={"MATRIX_PASSWORD": "pw"})
    # without encryption vodozemac is not needed
    plain = MatrixAdapter(app, {**BASE, "encryption": False}, environ={"MATRIX_PASSWORD": "pw"})
    assert plain.store_dir == Path("data/matrix")


# --- formatting ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "escaped"),
    [
        ("<b>&'\"", "&lt;b&gt;&amp;&#x27;&quot;"),
        ('<a href="https://matrix.to/#/@x:y">x</a>', None),
        ("plain words", "plain words"),
    ],
)
def test_escape(raw, escaped):
    out = escape(raw)
    assert "<" not in out and ">" not in out and '"' not in out
    if escaped is not None:
        assert out == escaped


@pytest.mark.parametrize(
    ("role", "styled"),
    [
        (Role.SUCCESS, '<strong><font color="#2e9e48" data-mx-color="#2e9e48">8</font></strong>'),
        (Role.CRITICAL, '<strong><em><font color="#c99a06" data-mx-color="#c99a06">8</font>'),
        (Role.FAILURE, '<font color="#8a8f98" data-mx-color="#8a8f98">8</font>'),
        (Role.ONE, '<del><font color="#d64545" data-mx-color="#d64545">8</font></del>'),
        (Role.CANCELLED, '<del><font color="#8a8f98" data-mx-color="#8a8f98">8</font></del>'),
        (Role.BOTCH, '<strong><del><font color="#d64545" data-mx-color="#d64545">8</font>'),
    ],
)
def test_die_faces_by_role(role, styled):
    assert HTML.die(Die(8, role)).startswith(styled)
    assert PLAIN.die(Die(8, role)) == "8"


def test_hunger_dice_in_brackets_in_both_bodies():
    hunger = Die(10, Role.CRITICAL, tags=frozenset({"hunger"}))
    assert ">[10]</font>" in HTML.die(hunger)
    assert PLAIN.die(hunger) == "[10]"


def test_markup_nodes():
    body: list[Node] = [
        BR,
        Bold((Text("a<"),)),
        Italic((Text("b"),)),
        Strike((Text("c"),)),
        Code("!roll <5>"),
        BR,
        Text("x & y"),
        BR,
        BR,
    ]
    assert HTML.encode(body) == (
        "<strong>a&lt;</strong><em>b</em><del>c</del><code>!roll &lt;5&gt;</code><br>x &amp; y"
    )
    assert MatrixPlainEncoder().encode(body) == "a<bc!roll <5>\nx & y"


def test_buttons_become_reaction_keys():
    row = Actions((Button("Re-roll", "!reroll failures"), Button("", "!reroll crits")))
    keys = [key for key, _ in button_keys([Text("x"), row])]
    assert keys == list(KEYCAPS[:2])
    assert MatrixHtmlEncoder(keys).actions(row) == (
        f"React to choose: {KEYCAPS[0]} Re-roll (<code>!reroll failures</code>) · "
        f"{KEYCAPS[1]} !reroll crits (<code>!reroll crits</code>)"
    )
    assert MatrixPlainEncoder(keys).actions(row) == (
        f"React to choose: {KEYCAPS[0]} Re-roll (!reroll failures) · "
        f"{KEYCAPS[1]} !reroll crits (!reroll crits)"
    )
    # with buttons off (or beyond ten) the commands are listed to type
    assert button_keys([row], enabled=False) == []
    assert MatrixPlainEncoder().actions(row) == "Options: !reroll failures · !reroll crits"
    eleven = Actions(tuple(Button(str(i), f"!b {i}") for i in range(11)))
    assert len(button_keys([eleven])) == 10
    text = MatrixPlainEncoder(KEYCAPS).actions(eleven)
    assert text.endswith(f"{KEYCAPS[9]} 9 (!b 9) · !b 10")


def test_images_are_not_in_the_text():
    picture = Image(PNG, "odds", "odds.png")
    [part] = render([Text("Odds:"), picture])
    assert part == Part(html="Odds:", plain="Odds:")
    assert render([picture]) == []


def test_the_footer_names_the_roll_and_the_rule_set():
    [part] = render([Text("x")], meta={"roll_id": "k3f9qz", "variant": "revised"})
    assert part.html == "x<br><sub>roll k3f9qz · revised</sub>"
    assert part.plain == "x\nroll k3f9qz · revised"
    [bare] = render([Text("x")], meta={})
    assert bare.plain == "x"


def test_a_long_reply_splits_at_line_ends():
    lines = [f"line {i} " + "y" * 50 for i in range(100)]
    body: list[Node] = []
    for text in lines:
        body += [Text(text), BR]
    parts = render(body, budget=1000)
    assert len(parts) > 5
    assert all(part.size <= 1000 for part in parts)
    assert "\n".join(part.plain for part in parts).splitlines() == lines
    assert "<br>".join(part.html for part in parts).split("<br>") == lines


def test_one_huge_line_and_one_huge_element_are_cut_too():
    dice = [Die(face % 10 + 1, Role.SUCCESS) for face in range(400)]
    parts = render([Text("roll: "), *dice], budget=2000)
    assert len(parts) > 3 and all(part.size <= 2000 for part in parts)
    faces = re.findall(r">(\d+)</font>", "".join(part.html for part in parts))
    assert faces == [str(face % 10 + 1) for face in range(400)]
    bold = Bold((Text("é" * 5000),))
    parts = render([bold], budget=3000)
    assert all(part.size <= 3000 for part in parts)
    assert all(p.html.startswith("<strong>") and p.html.endswith("</strong>") for p in parts)
    assert "".join(part.plain for part in parts) == "é" * 5000


class _Balanced(html.parser.HTMLParser):
    """Checks that tags nest and close (``<br>`` is void)."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.ok = True

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag != "br":
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack.pop() != tag:
            self.ok = False


_words = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=60)
_leaf = st.one_of(
    _words.map(Text),
    st.builds(Code, _words),
    st.builds(
        Die,
        st.integers(1, 10),
        st.sampled_from(list(Role)),
        st.just(10),
        st.sampled_from([frozenset(), frozenset({"hunger"})]),
    ),
    st.just(BR),
)
_node = st.recursive(
    _leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=6).map(lambda c: Bold(tuple(c))),
        st.lists(inner, max_size=6).map(lambda c: Italic(tuple(c))),
        st.lists(inner, max_size=6).map(lambda c: Strike(tuple(c))),
    ),
    max_leaves=30,
)


@given(st.lists(_node, max_size=40), st.integers(200, 1500))
def test_every_part_fits_and_is_well_formed(body, budget):
    parts = render(body, budget=budget)
    whole = MatrixPlainEncoder().encode(body)
    for part in parts:
        assert part.size <= budget
        checker = _Balanced()
        checker.feed(part.html)
        checker.close()
        assert checker.ok and not checker.stack, part.html
        assert "<script" not in part.html.lower()

    def squeeze(value: str) -> str:
        return re.sub(r"\s+", "", value)

    assert squeeze("".join(part.plain for part in parts)) == squeeze(whole)


# --- reading commands ----------------------------------------------------------------------------


def text_event(body: str, **extra: Any) -> dict[str, Any]:
    return {"msgtype": "m.text", "body": body, **extra}


def pill(user: str, label: str, rest: str) -> dict[str, Any]:
    return text_event(
        f"{label}{rest}",
        format="org.matrix.custom.html",
        formatted_body=f'<a href="https://matrix.to/#/{user}">{label}</a>{rest}',
    )


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (text_event("!roll 5 6"), ("!roll 5 6", False)),
        (text_event("  just chatting "), ("just chatting", False)),
        (text_event(f"{BOT} roll 5 6"), ("roll 5 6", True)),
        (text_event(f"{BOT}: roll 5 6"), ("roll 5 6", True)),
        (text_event("@coterie roll 5 6"), ("roll 5 6", True)),
        (text_event("@Coterie, roll 5 6"), ("roll 5 6", True)),
        (text_event("coterie: roll 5 6"), ("roll 5 6", True)),
        (text_event("Dice Bot: roll 5 6"), ("roll 5 6", True)),
        (text_event("coterie roll 5 6"), ("coterie roll 5 6", False)),  # no colon: chat
        (text_event("coteries: are fun"), ("coteries: are fun", False)),
        (text_event(f"{BOT}"), ("help", True)),
        (text_event(f"I asked {BOT} to roll"), (f"I asked {BOT} to roll", False)),
        (pill(BOT, "Dice Bot", ": roll 5 6"), ("roll 5 6", True)),
        (pill(BOT.replace("@", "%40"), "coterie", " roll 2"), ("roll 2", True)),
        # a pill to someone else addresses nobody; the core reads the person's id
        (
            pill("@someone:example.org", "someone", ": roll 5 6"),
            ("@someone:example.org: roll 5 6", False),
        ),
        (
            text_event(
                "> <@lynn:example.org> earlier\n\nDice Bot: roll 4",
                format="org.matrix.custom.html",
                formatted_body="<mx-reply><blockquote>earlier</blockquote></mx-reply>"
                f'<a href="https://matrix.to/#/{BOT}">Dice Bot</a>: roll 4',
                **{"m.relates_to": {"m.in_reply_to": {"event_id": "$x"}}},
            ),
            ("roll 4", True),
        ),
        (
            text_event(
                "> <@lynn:example.org> earlier\n\n!roll 3",
                **{"m.relates_to": {"m.in_reply_to": {"event_id": "$x"}}},
            ),
            ("!roll 3", False),
        ),
    ],
)
def test_read_command(content, expected):
    command = read_command(content, BOT, "Dice Bot")
    assert command is not None
    assert (command.text, command.addressed) == expected
    assert command.thread is None


@pytest.mark.parametrize(
    "content",
    [
        {"msgtype": "m.notice", "body": "!roll 5 6"},
        {"msgtype": "m.emote", "body": "!roll 5 6"},
        {"msgtype": "m.image", "body": "!roll.png", "url": "mxc://x/y"},
        text_event("   "),
        text_event(
            "* !roll 5 6",
            **{
                "m.new_content": {"msgtype": "m.text", "body": "!roll 5 6"},
                "m.relates_to": {"rel_type": "m.replace", "event_id": "$orig"},
            },
        ),
        {"msgtype": "m.text"},
        {"msgtype": "m.text", "body": 5},
    ],
)
def test_ignored_messages(content):
    assert read_command(content, BOT) is None


def test_threads_and_reply_fallbacks():
    relates = {
        "rel_type": "m.thread",
        "event_id": "$root",
        "is_falling_back": True,
        "m.in_reply_to": {"event_id": "$last"},
    }
    command = read_command(text_event("!roll 2", **{"m.relates_to": relates}), BOT)
    assert command is not None and command.thread == "$root"
    assert strip_reply_fallback("> <@a:b> hi\n> more\n\n!roll 2") == "!roll 2"
    assert strip_reply_fallback("> a quote I typed") == "> a quote I typed"
    assert strip_mention("hello", None, BOT) == ("hello", False)


# --- event contents ------------------------------------------------------------------------------


def test_relations():
    assert relation(Target("!r", "$cmd")) == {"m.in_reply_to": {"event_id": "$cmd"}}
    assert relation(Target("!r", "$cmd", thread="$root")) == {
        "rel_type": "m.thread",
        "event_id": "$root",
        "is_falling_back": False,
        "m.in_reply_to": {"event_id": "$cmd"},
    }


def test_notice_content():
    body = notice(Part("<strong>x</strong>", "x"), Target("!r", "$cmd"), {"kind": "ok"})
    assert body == {
        "msgtype": "m.notice",
        "body": "x",
        "format": "org.matrix.custom.html",
        "formatted_body": "<strong>x</strong>",
        "m.relates_to": {"m.in_reply_to": {"event_id": "$cmd"}},
        "m.mentions": {},
        "coterie.reply": {"kind": "ok"},
    }


def test_a_person_the_reply_tells_is_a_pill_and_an_intentional_mention():
    mark = Mention("@mark:example.org", "mark", notify=True)
    body: list[Node] = [
        Bold((Text("Lynn"),)),
        Text(" challenges "),
        mark,
        Text(" and names "),
        Mention("@ana:example.org", "ana <3"),  # in passing: a pill that pings nobody
        Text(", "),
        Mention("bob", "bob", notify=True),  # a name typed after @: no user id, text only
    ]
    [part] = render(body)
    assert part.html == (
        '<strong>Lynn</strong> challenges <a href="https://matrix.to/#/@mark:example.org">mark</a>'
        ' and names <a href="https://matrix.to/#/@ana:example.org">ana &lt;3</a>, bob'
    )
    assert part.plain == "Lynn challenges mark and names ana <3, bob"
    assert part.mentions == ("@mark:example.org",)
    content = notice(part, Target("!r", "$cmd"))
    assert content["m.mentions"] == {"user_ids": ["@mark:example.org"]}
    # a reply cut into parts: each tells only the users it names
    long = [*body, BR, Text("x" * 300), BR, Mention("@zed:example.org", "zed", notify=True)]
    first, *rest = render(long, budget=300)
    assert first.mentions == ("@mark:example.org",) and rest[-1].mentions == ("@zed:example.org",)
    # an old-style id's "#", "?" and "/" are percent-encoded in the link
    [old] = render([Mention("@a#b?c/d:example.org", "a", notify=True)])
    assert old.html == '<a href="https://matrix.to/#/@a%23b%3Fc%2Fd:example.org">a</a>'
    # an id that is no Matrix user id is never put in a link
    [odd] = render([Mention('@x" onclick="y:z', "x", notify=True)])
    assert "<a" not in odd.html and odd.mentions == ()


@pytest.mark.parametrize(
    ("body", "formatted", "expected"),
    [
        # Element: the pill's label in the body, the id in the link
        (
            "!contest Mark 4 6",
            '!contest <a href="https://matrix.to/#/@mark:hs">Mark</a> 4 6',
            "!contest @mark:hs 4 6",
        ),
        # two pills (one percent-encoded); the same word earlier in the text is not the pill
        (
            "!roll Ana 5 vs Ana Bo",
            '!roll Ana 5 vs <a href="https://matrix.to/#/%40ana%3Ahs">Ana</a> '
            '<a href="https://matrix.to/#/@bo:hs">Bo</a>',
            "!roll Ana 5 vs @ana:hs @bo:hs",
        ),
        (
            "!contest A &amp; B 4",
            '!contest <a href="https://matrix.to/#/@ab:hs">A &amp;amp; B</a> 4',
            "!contest @ab:hs 4",
        ),
        # the body already spells the id (older clients)
        (
            "!contest @mark:hs 4",
            '!contest <a href="https://matrix.to/#/@mark:hs">mark</a> 4',
            "!contest @mark:hs 4",
        ),
        # a room, an alias or an event link is no person
        (
            "see General 4",
            'see <a href="https://matrix.to/#/#general:hs">General</a> 4',
            "see General 4",
        ),
        (
            "see Dice at 4",
            'see <a href="https://matrix.to/#/!room:hs/$ev?via=hs">Dice</a> at 4',
            "see Dice at 4",
        ),
        # a display name with an entity in the HTML: the body has the character itself
        (
            "!contest Tom & Jerry 4",
            '!contest <a href="https://matrix.to/#/@tj:hs">Tom &amp; Jerry</a> 4',
            "!contest @tj:hs 4",
        ),
        ("!roll 5", None, "!roll 5"),
        # a label inside a longer word is not the pill
        (
            "!contest Markus Mark 4",
            '!contest Markus <a href="https://matrix.to/#/@mark:hs">Mark</a> 4',
            "!contest Markus @mark:hs 4",
        ),
    ],
)
def test_a_pill_to_a_user_reaches_the_core_as_the_user_id(
    body: str, formatted: str | None, expected: str
) -> None:
    assert with_user_ids(body, formatted, "@coterie:hs") == expected


def test_the_bot_s_own_leading_pill_still_addresses_it_and_other_pills_become_ids():
    content = {
        "msgtype": "m.text",
        "body": "Coterie: contest Mark 4 6",
        "format": "org.matrix.custom.html",
        "formatted_body": '<a href="https://matrix.to/#/@coterie:hs">Coterie</a>: contest '
        '<a href="https://matrix.to/#/@mark:hs">Mark</a> 4 6',
    }
    command = read_command(content, "@coterie:hs", "Coterie")
    assert command is not None and command.addressed
    assert command.text == "contest @mark:hs 4 6"


def test_image_content_plain_and_encrypted():
    picture = Image(png(7, 5), "odds of 5 dice", "odds.png")
    plain = image(picture, Target("!r", "$c"), url="mxc://s/m")
    assert plain["url"] == "mxc://s/m" and "file" not in plain
    assert plain["info"] == {"mimetype": "image/png", "size": len(picture.data), "w": 7, "h": 5}
    assert plain["body"] == "odds of 5 dice" and plain["msgtype"] == "m.image"
    keys = {"v": "v2", "key": {"k": "K"}, "iv": "I", "hashes": {"sha256": "H"}}
    secret = image(picture, Target("!r", "$c"), url="mxc://s/m", encryption=keys)
    assert "url" not in secret
    assert secret["file"] == {**keys, "url": "mxc://s/m", "mimetype": "image/png"}


def test_image_sizes():
    assert image_size(png(12, 34)) == (12, 34)
    assert image_size(b"GIF89a" + struct.pack("<HH", 640, 480) + b"\x00" * 10) == (640, 480)
    jpeg = (
        b"\xff\xd8"
        + b"\xff\xe0"
        + struct.pack(">H", 16)
        + b"JFIF\x00" * 2
        + b"\x00\x00\x00\x00"
        + b"\xff\xc0"
        + struct.pack(">HBHH", 17, 8, 200, 300)
        + b"\x00" * 20
    )
    assert image_size(jpeg) == (300, 200)
    assert image_size(b"not an image") is None
    assert image_size(b"\x89PNG\r\n\x1a\n") is None


def test_reactions_and_transaction_ids():
    assert reaction("$e", KEYCAPS[0]) == {
        "m.relates_to": {"rel_type": "m.annotation", "event_id": "$e", "key": KEYCAPS[0]}
    }
    first = transaction_id("$cmd", "part0")
    assert first == transaction_id("$cmd", "part0")
    assert len({first, transaction_id("$cmd", "part1"), transaction_id("$other", "part0")}) == 3


# --- what is remembered --------------------------------------------------------------------------


async def test_session_in_the_state_store_and_the_file(tmp_path):
    store = MemoryStore()
    session = Session(store, BOT, tmp_path)
    assert await session.load() == SessionData()
    await session.save(device_id="DEV1")  # a new device is written at once
    assert json.loads((tmp_path / SESSION_FILE).read_text())["device_id"] == "DEV1"
    await session.save(next_batch="s1")  # a new token waits (at most FILE_SECONDS) ...
    assert json.loads((tmp_path / SESSION_FILE).read_text())["next_batch"] is None
    session.flush()  # ... or until shutdown
    data = json.loads((tmp_path / SESSION_FILE).read_text())
    assert data == {"user_id": BOT, "device_id": "DEV1", "next_batch": "s1"}
    assert (tmp_path / SESSION_FILE).stat().st_mode & 0o777 == 0o600
    assert await store.get(SESSION, BOT) == {"device_id": "DEV1", "next_batch": "s1"}
    # a new process: an empty state store, the file remains
    again = await Session(MemoryStore(), BOT, tmp_path).load()
    assert (again.device_id, again.next_batch) == ("DEV1", "s1")
    # another account's file is not used; nor is a broken one
    other = await Session(MemoryStore(), "@other:example.org", tmp_path).load()
    assert other.device_id is None
    (tmp_path / SESSION_FILE).write_text("{not json")
    assert (await Session(MemoryStore(), BOT, tmp_path).load()).device_id is None
    await session.forget_device()
    assert not (tmp_path / SESSION_FILE).exists()
    assert await store.get(SESSION, BOT) is None


async def test_recent_records_are_bounded():
    store = MemoryStore()
    records = RecentRecords(store, "test.records", size=3)
    for index in range(5):
        await records.put(f"e{index}", index)
    assert [await records.get(f"e{i}") for i in range(5)] == [None, None, 2, 3, 4]
    await records.put("e3", {"used": True})  # an update keeps its slot
    await records.put("e5", 5)
    assert await records.get("e3") == {"used": True}
    assert not await records.contains("e2")
    # the ring position survives a new instance on the same store
    again = RecentRecords(store, "test.records", size=3)
    await again.put("e6", 6)
    assert await again.get("e3") is None and await again.get("e5") == 5
    assert sum(1 for key in store._data if key[1].startswith("id:")) == 3
    with pytest.raises(ValueError):
        RecentRecords(store, "x", size=0)


def test_backoff_doubles_up_to_the_maximum():
    backoff = Backoff(0.5, 3.0, jitter=0)
    assert [backoff.next() for _ in range(5)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    backoff.reset()
    assert backoff.next() == 0.5
    jittered = Backoff(0.5, 3.0)  # the default: up to 20 % longer, never shorter
    waits = [jittered.next() for _ in range(5)]
    assert all(n <= w <= n * 1.2 for w, n in zip(waits, [0.5, 1.0, 2.0, 3.0, 3.0], strict=True))


# --- the bot against a stub client ---------------------------------------------------------------


class StubRoom:
    def __init__(self, encrypted: bool = False) -> None:
        self.encrypted = encrypted


class StubClient:
    """Answers ``room_send`` from a script: exceptions are raised, responses returned."""

    def __init__(self, script: list[Any], *, olm: object | None = object()) -> None:
        self.script = script
        self.calls: list[tuple[str, str, dict[str, Any], str]] = []
        self.rooms = {"!plain": StubRoom(), "!secret": StubRoom(encrypted=True)}
        self.olm = olm

    async def room_send(
        self, room_id: str, event_type: str, body: dict[str, Any], tx_id: str, **_: Any
    ) -> Any:
        self.calls.append((room_id, event_type, body, tx_id))
        step = self.script.pop(0)
        if isinstance(step, BaseException):
            raise step
        return step


def stub_bot(client: StubClient, tmp_path: Path) -> MatrixBot:
    app = Coterie(Config.model_validate({"plugins": {"enable": ["revised"]}}))
    settings = MatrixSettings.from_table({**BASE, "reconnect_initial": 0.01, "reconnect_max": 0.02})
    bot = MatrixBot(app, settings, Credentials(password="pw"), store_dir=tmp_path)
    bot.client = client
    return bot


def sent(event_id: str) -> Any:
    return RoomSendResponse(event_id, "!plain")


async def test_a_send_is_retried_with_the_same_transaction_id(tmp_path):
    refused = aiohttp.ClientConnectionError("connection refused")
    client = StubClient([refused, TimeoutError(), sent("$ok")])
    bot = stub_bot(client, tmp_path)
    assert await bot.send("!plain", "m.room.message", {"body": "x"}, "txn1") == "$ok"
    assert [call[3] for call in client.calls] == ["txn1"] * 3


async def test_a_send_gives_up_after_bounded_attempts(tmp_path):
    client = StubClient([aiohttp.ClientConnectionError()] * 8)
    bot = stub_bot(client, tmp_path)
    assert await bot.send("!plain", "m.room.message", {}, "t") is None
    assert len(client.calls) == 8


async def test_an_ended_session_and_refusals(tmp_path):
    client = StubClient([ErrorResponse("gone", "M_UNKNOWN_TOKEN")])
    with pytest.raises(LoginFailed, match="ended the session"):
        await stub_bot(client, tmp_path).send("!plain", "m.room.message", {}, "t")
    forbidden = StubClient([ErrorResponse("not in room", "M_FORBIDDEN")])
    assert await stub_bot(forbidden, tmp_path).send("!plain", "m.room.message", {}, "t") is None
    assert len(forbidden.calls) == 1  # a refusal is not retried


async def test_no_plaintext_into_an_encrypted_room_without_encryption(tmp_path):
    client = StubClient([sent("$never")], olm=None)
    assert await stub_bot(client, tmp_path).send("!secret", "m.room.message", {}, "t") is None
    assert client.calls == []


async def test_the_sync_token_is_saved_only_when_its_answers_are_sent(tmp_path):
    bot = stub_bot(StubClient([]), tmp_path)
    gate = asyncio.Event()
    slow = asyncio.create_task(gate.wait())
    done = asyncio.create_task(asyncio.sleep(0))
    await done
    bot._batches.extend(
        [_Batch("s1", {done}), _Batch("s2", {slow}), _Batch("s3", set())]  # type: ignore[arg-type]
    )
    await bot.checkpoint()
    assert (await bot.session.load()).next_batch == "s1"
    gate.set()
    await slow
    await bot.checkpoint()
    assert (await bot.session.load()).next_batch == "s3"
    assert not bot._batches


@pytest.mark.parametrize(
    ("policy", "thread", "expected"),
    [
        ("follow", None, None),
        ("follow", "$root", "$root"),
        ("always", None, "$cmd"),
        ("always", "$root", "$root"),
        ("never", "$root", None),
    ],
)
def test_where_replies_go(tmp_path, policy, thread, expected):
    bot = stub_bot(StubClient([]), tmp_path)
    bot.settings = MatrixSettings.from_table({**BASE, "thread": policy})
    assert bot.thread_for(thread, "$cmd") == expected


def test_nio_is_quiet_unless_debugging():
    nio_log = logging.getLogger("nio")
    before = nio_log.level
    try:
        nio_log.setLevel(logging.NOTSET)
        quiet_nio("DEBUG")
        assert nio_log.level == logging.NOTSET
        quiet_nio("INFO")
        assert nio_log.level == logging.WARNING
        nio_log.setLevel(logging.ERROR)  # an operator's choice stays
        quiet_nio("INFO")
        assert nio_log.level == logging.ERROR
    finally:
        nio_log.setLevel(before)


def test_history_before_the_bot_joined_is_not_read(tmp_path):
    bot = stub_bot(StubClient([]), tmp_path)

    class Event:
        def __init__(self, source: dict[str, Any]) -> None:
            self.source = source

    def member(membership: str, previous: str | None) -> Event:
        unsigned = {"prev_content": {"membership": previous}} if previous else {}
        return Event(
            {
                "type": "m.room.member",
                "state_key": BOT,
                "content": {"membership": membership},
                "unsigned": unsigned,
            }
        )

    old = Event({"type": "m.room.message", "content": {"body": "!roll 1"}})
    new = Event({"type": "m.room.message", "content": {"body": "!roll 2"}})
    assert bot._after_own_join([old, member("join", "invite"), new]) == [new]
    # a display-name change is a join after a join: not a new membership
    rename = member("join", "join")
    assert bot._after_own_join([old, rename, new]) == [old, rename, new]
    assert bot._after_own_join([old, new]) == [old, new]


def test_the_key_store_skips_empty_saves(tmp_path, monkeypatch):
    store_class = key_store_class()
    store = store_class(BOT, "DEVICE", str(tmp_path), "passphrase")
    store.save_account(OlmAccount())
    calls: list[set[str]] = []
    parent = store_class.__mro__[1]
    original = parent.save_encrypted_rooms
    monkeypatch.setattr(
        parent, "save_encrypted_rooms", lambda self, rooms: calls.append(set(rooms))
    )
    store.save_encrypted_rooms(set())
    assert calls == []
    store.save_encrypted_rooms({"!secret:example.org"})
    assert calls == [{"!secret:example.org"}]
    monkeypatch.setattr(parent, "save_encrypted_rooms", original)
    store.save_encrypted_rooms({"!secret:example.org"})
    assert store.load_encrypted_rooms() == {"!secret:example.org"}


class PressingClient(StubClient):
    """Sends reactions; while the second key is being added, the player presses the first (what
    :meth:`MatrixBot._answer_press` does: the record is spent, its keys taken back)."""

    def __init__(self) -> None:
        super().__init__([sent("$key1"), sent("$key2"), sent("$key3")])
        self.bot: MatrixBot | None = None
        self.redacted: list[str] = []

    async def room_send(self, room_id, event_type, body, tx_id, **kw):  # type: ignore[override]
        if len(self.calls) == 1 and self.bot is not None:  # the second key is on its way
            bot = self.bot
            async with bot._presses:
                record = await bot.buttons.get("$offer")
                await bot.buttons.put("$offer", {**record, "used": True})
            await bot._remove_keys(room_id, record, "$press")
        return await super().room_send(room_id, event_type, body, tx_id, **kw)

    async def room_redact(self, room_id: str, event_id: str, **_: Any) -> Any:
        self.redacted.append(event_id)
        return object()


async def test_a_press_while_keys_are_added_still_takes_every_key_back(tmp_path):
    """The first key was pressed before the last one existed: the keys added after the press
    were left on the reply for good (and the offer's final save could undo the press)."""
    from coterie.render.elements import Button
    from coterie_matrix.content import Target

    client = PressingClient()
    bot = stub_bot(client, tmp_path)
    client.bot = bot
    keyed = [("1\ufe0f\u20e3", Button("One", "!echo one")), ("2\ufe0f\u20e3", Button("Two", "!b"))]
    keyed.append(("3\ufe0f\u20e3", Button("Three", "!c")))
    await bot._offer_buttons(Target("!plain", "$cmd"), "$offer", keyed, "@lynn:x", "$cmd")
    record = await bot.buttons.get("$offer")
    assert record["used"] is True  # the press is not undone by the offer's own saving
    assert sorted(set(client.redacted)) == ["$key1", "$key2", "$key3"]
    assert record["removed"] is True and not bot._lapses


async def test_unpressed_buttons_lapse_and_are_taken_back(tmp_path):
    client = StubClient([sent("$key1")])
    client.redacted = []  # type: ignore[attr-defined]

    async def room_redact(room_id: str, event_id: str, **_: Any) -> Any:
        client.redacted.append(event_id)  # type: ignore[attr-defined]
        return object()

    client.room_redact = room_redact  # type: ignore[attr-defined]
    bot = stub_bot(client, tmp_path)
    from coterie.render.elements import Button
    from coterie_matrix.content import Target

    bot.settings = bot.settings.model_copy(update={"button_ttl": 0.05})
    await bot._offer_buttons(
        Target("!plain", "$cmd"), "$offer", [("1\ufe0f\u20e3", Button("One", "!x"))], "@l:x", "$c"
    )
    assert "$offer" in bot._lapses
    await asyncio.sleep(0.2)
    assert client.redacted == ["$key1"]  # type: ignore[attr-defined]
    record = await bot.buttons.get("$offer")
    assert record["lapsed"] is True and record["removed"] is True and not bot._lapses


def test_backticks_become_code_in_html_only():
    from coterie.render.elements import Reply, Text

    [part] = render(Reply([Text("give a value, e.g. `!set difficulty 7`; a lone ` stays")]).body)
    assert "<code>!set difficulty 7</code>" in part.html
    assert "a lone ` stays" in part.html
    assert "`!set difficulty 7`" in part.plain
    [part] = render(Reply([Text("`<b>x</b>` & co")]).body)
    assert part.html.startswith("<code>&lt;b&gt;x&lt;/b&gt;</code> &amp; co")
