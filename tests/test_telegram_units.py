"""The Telegram adapter's parts: settings and secrets, the HTML encoder and the message splitter,
command words and the menu, button tokens, the bounded state records, retries, and the fake Bot
API's HTML parser (which the end-to-end tests rely on to judge the adapter's HTML)."""

from __future__ import annotations

import asyncio
import datetime as dtm
import json
import re
import subprocess
import sys
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from telegram.error import BadRequest, NetworkError, RetryAfter, TimedOut

import coterie_telegram.bot as telegram_bot
from coterie.errors import ConfigError
from coterie.framework.app import Coterie
from coterie.framework.commands import Command
from coterie.framework.config import Config, parse_config
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
from coterie.render.encode import to_plain
from coterie.storage.state import MemoryStore
from coterie_telegram import TelegramAdapter
from coterie_telegram.bot import ChatLocks, TelegramBot, retry_seconds
from coterie_telegram.buttons import ButtonBoard, callback_data, read_callback_data
from coterie_telegram.commands import (
    CommandWords,
    menu,
    read_text,
    telegram_name,
    with_user_ids,
)
from coterie_telegram.html import (
    HTML,
    TelegramEncoder,
    escape,
    split_html,
    truncate_html,
    utf16_len,
    visible_text,
)
from coterie_telegram.records import ExpiringRecord
from coterie_telegram.settings import TelegramSettings, read_credentials
from telegram_fake import ApiError, make_core, parse_html

TOKEN = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"


# --- settings and secrets -------------------------------------------------------------------------


def test_the_defaults():
    settings = TelegramSettings.from_table({})
    assert (settings.mode, settings.bot_token_env, settings.poll_timeout) == (
        "polling",
        "TELEGRAM_BOT_TOKEN",
        30,
    )
    assert settings.api_url == "https://api.telegram.org/bot"
    assert (settings.host, settings.port, settings.path) == ("127.0.0.1", 8443, "/telegram/webhook")


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"mode": "push"}, "adapters.telegram.mode: Input should be 'polling' or 'webhook'"),
        ({"modee": "webhook"}, "adapters.telegram.modee: unknown key (did you mean 'mode'?)"),
        ({"mode": "webhook"}, "adapters.telegram.webhook_url: webhook mode needs the public"),
        ({"path": "hook"}, "adapters.telegram.path: must start with /"),
        ({"bot_token_env": TOKEN}, "adapters.telegram.bot_token_env: '123456789:AAH"),
        ({"port": 70000}, "adapters.telegram.port: Input should be less than or equal to 65535"),
        ({"button_ttl": 5}, "adapters.telegram.button_ttl: Input should be greater than"),
        ({"api_url": "ftp://x"}, "adapters.telegram.api_url: must be an http(s) URL"),
        ({"webhook_url": "bot.example"}, "adapters.telegram.webhook_url: must be the public URL"),
    ],
)
def test_bad_settings_name_the_key(table, message):
    with pytest.raises(ConfigError) as raised:
        TelegramSettings.from_table(table)
    assert str(raised.value).startswith(message)


def test_core_checks_the_table_at_start_and_refuses_secrets_in_it():
    config = Config.model_validate(
        {
            "plugins": {"enable": ["revised", "telegram"]},
            "adapters": {"telegram": {"enabled": True, "mod": "x"}},
        }
    )
    with pytest.raises(ConfigError, match=r"adapters\.telegram\.mod: unknown key"):
        Coterie(config)
    with pytest.raises(ConfigError, match=r"adapters\.telegram\.bot_token: secrets are never read"):
        parse_config({"adapters": {"telegram": {"enabled": True, "bot_token": TOKEN}}})


def test_the_token_comes_from_the_named_variable():
    settings = TelegramSettings.from_table({"bot_token_env": "GAME_BOT"})
    credentials = read_credentials(settings, {"GAME_BOT": f"  {TOKEN}\n"})
    assert credentials.bot_token == TOKEN and credentials.bot_id == "123456789"
    assert credentials.webhook_secret is None
    assert TOKEN not in repr(credentials) and "AAH" not in repr(credentials)
    with pytest.raises(
        ConfigError, match=r"bot_token_env: the environment variable GAME_BOT is not"
    ):
        read_credentials(settings, {})
    with pytest.raises(ConfigError, match=r"GAME_BOT does not hold a bot token"):
        read_credentials(settings, {"GAME_BOT": "xoxb-a-slack-token"})


def test_the_webhook_secret():
    settings = TelegramSettings.from_table(
        {"mode": "webhook", "webhook_url": "https://b.example/h"}
    )
    given_secret = read_credentials(
        settings, {"TELEGRAM_BOT_TOKEN": TOKEN, "TELEGRAM_WEBHOOK_SECRET": "abc_DEF-123"}
    )
    assert given_secret.webhook_secret == "abc_DEF-123" and not given_secret.generated_secret
    assert "abc_DEF" not in repr(given_secret)
    made = read_credentials(settings, {"TELEGRAM_BOT_TOKEN": TOKEN})
    other = read_credentials(settings, {"TELEGRAM_BOT_TOKEN": TOKEN})
    assert made.generated_secret and made.webhook_secret != other.webhook_secret
    assert re.fullmatch(r"[A-Za-z0-9_-]{32,256}", made.webhook_secret or "")
    with pytest.raises(ConfigError, match=r"webhook_secret_env: TELEGRAM_WEBHOOK_SECRET must hold"):
        read_credentials(
            settings, {"TELEGRAM_BOT_TOKEN": TOKEN, "TELEGRAM_WEBHOOK_SECRET": "no spaces!"}
        )


def test_the_adapter_is_a_plugin_that_loads_without_the_library():
    host = PluginHost()
    host.load(["telegram"])
    [classes] = [value for _, value in host.call("coterie_adapters")]
    assert classes == [TelegramAdapter] and TelegramAdapter.name == "telegram"
    probe = (
        "import sys, coterie_telegram; print(sorted({'telegram', 'tornado'} & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_every_key_is_documented_with_its_default(root):
    doc = (root / "docs" / "platforms" / "telegram.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| `([a-z_]+)` \| ([^|]+) \|", doc, re.MULTILINE))
    for key, field in TelegramSettings.model_fields.items():
        assert key in rows, f"{key} is not in the keys table"
        cell = rows[key].strip().strip("`")
        assert (None if cell == "none" else json.loads(cell)) == field.default, (key, cell)


def test_a_missing_token_stops_the_adapter_at_creation():
    with pytest.raises(ConfigError, match="TELEGRAM_BOT_TOKEN is not set"):
        TelegramAdapter(make_core(), {"enabled": True}, environ={})


# --- HTML -----------------------------------------------------------------------------------------


def test_text_is_escaped_and_dice_are_styled():
    body: list[Node] = [
        Bold((Text("Lynn <&> co"),)),
        Text(" — "),
        Italic((Text("a <b>comment</b> & more"),)),
        BR,
        Die(8, Role.SUCCESS),
        Text(" "),
        Die(10, Role.CRITICAL),
        Text(" "),
        Die(3, Role.FAILURE),
        Text(" "),
        Die(1, Role.ONE),
        Text(" "),
        Die(6, Role.CANCELLED),
        Text(" "),
        Die(1, Role.BOTCH),
        Text(" "),
        Die(7, Role.SUCCESS, tags=frozenset({"hunger"})),
        BR,
        Strike((Text("gone"),)),
        Text(" "),
        Code("!roll <5> & 6"),
        Bold((Text("  "),)),
        Image(b"png", "a chart"),
        Actions((Button("Again", "!roll 5"),)),
    ]
    html = HTML.encode(body)
    assert html == (
        "<b>Lynn &lt;&amp;&gt; co</b> — <i>a &lt;b&gt;comment&lt;/b&gt; &amp; more</i>\n"
        "<b>8</b> <b><i>10</i></b> 3 <s>1</s> <s>6</s> <b><s>1</s></b> <b>[7]</b>\n"
        "<s>gone</s> <code>!roll &lt;5&gt; &amp; 6</code>"
    )
    text, entities = parse_html(html)  # Telegram would accept it
    assert text.splitlines()[0] == "Lynn <&> co — a <b>comment</b> & more"
    assert {e["type"] for e in entities} == {"bold", "italic", "strikethrough", "code"}


@pytest.mark.parametrize(
    ("mention", "html"),
    [
        # a user id: a link to the person, shown by the label (escaped, never in the attribute)
        (
            Mention("123456789", "Ana <&>", notify=True),
            '<a href="tg://user?id=123456789">Ana &lt;&amp;&gt;</a>',
        ),
        (Mention("123456789", "Ana"), "Ana"),  # in passing: no link, no ping
        # a username the core wants told: Telegram links and notifies @username by itself
        (Mention("lynn_r", "lynn_r", notify=True), "@lynn_r"),
        # named in passing: the bare name, so it pings no one
        (Mention("lynn_r", "lynn_r"), "lynn_r"),
        # not a username Telegram could have (too short, a symbol, a digit first): text only
        (Mention("bob", "bob", notify=True), "bob"),
        (Mention("a<b>cde", "a<b>cde", notify=True), "a&lt;b&gt;cde"),
        (Mention("1abcde", "1abcde x", notify=True), "1abcde x"),
        (Mention("12 34", "12 34", notify=True), "12 34"),
    ],
)
def test_a_person_in_a_reply_is_a_link_an_at_name_or_text(mention: Mention, html: str) -> None:
    encoded = HTML.encode([Text("Mark challenges "), mention])
    assert encoded == f"Mark challenges {html}"
    text, entities = parse_html(encoded)  # Telegram would accept it
    assert text == f"Mark challenges {mention.label if '<a' in html else parse_html(html)[0]}"
    assert visible_text(encoded) == text  # the plain text sent if Telegram refused the HTML
    links = [e for e in entities if e["type"] == "text_link"]
    assert [e["url"] for e in links] == ([f"tg://user?id={mention.user}"] if links else [])


_words = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)


@st.composite
def trees(draw: Any, depth: int = 2) -> list[Node]:
    leaves = st.one_of(
        _words.map(Text),
        _words.map(Code),
        st.just(BR),
        st.builds(Die, st.integers(1, 10), st.sampled_from(list(Role))),
    )
    if depth == 0:
        return draw(st.lists(leaves, max_size=6))
    inner = trees(depth - 1).map(tuple)
    nodes = st.one_of(leaves, inner.map(Bold), inner.map(Italic), inner.map(Strike))
    return draw(st.lists(nodes, max_size=6))


@given(trees())
def test_any_reply_is_valid_html_that_reads_as_its_plain_text(body):
    text, _ = parse_html(HTML.encode(body))
    assert re.sub(r"\s", "", text) == re.sub(r"\s", "", to_plain(body))


def _styles(html: str) -> list[tuple[str, frozenset[str]]]:
    """Each visible, non-space character with the formatting it is shown in."""
    text, entities = parse_html(html)
    out = []
    position = 0
    for ch in text:
        kinds = frozenset(
            e["type"] for e in entities if e["offset"] <= position < e["offset"] + e["length"]
        )
        if not ch.isspace():
            out.append((ch, kinds))
        position += utf16_len(ch)
    return out


@given(st.lists(trees(), min_size=1, max_size=8), st.integers(16, 120))
def test_split_pieces_fit_parse_and_keep_every_character_and_its_style(bodies, limit):
    body = [node for part in bodies for node in [*part, BR]]
    html = HTML.encode(body)
    pieces = split_html(html, limit)
    kept: list[tuple[str, frozenset[str]]] = []
    for piece in pieces:
        text, _ = parse_html(piece)
        assert utf16_len(text) <= limit
        assert text.strip()
        kept += _styles(piece)
    assert kept == _styles(html)


def test_split_cuts_at_line_ends_then_spaces_never_inside_an_escape():
    lines = [f"<b>line {n}</b> &amp; more" for n in range(10)]
    pieces = split_html("\n".join(lines), 40)
    assert pieces == ["\n".join(lines[i : i + 2]) for i in range(0, 10, 2)]
    long_line = "<i>" + "word &amp; " * 30 + "</i>"
    pieces = split_html(long_line, 32)
    assert all(p.startswith("<i>") and p.endswith("</i>") for p in pieces)
    # whole words only: a cut falls between two words, not inside one or inside "&amp;"
    assert all(re.fullmatch(r"(word & )+", parse_html(p)[0]) for p in pieces)
    assert "".join(parse_html(p)[0] for p in pieces) == "word & " * 30
    assert split_html("a" * 40, 16) == ["a" * 16, "a" * 16, "a" * 8]  # a word longer than all
    emoji = split_html("🎲" * 20, 16)
    assert [utf16_len(p) for p in emoji] == [16, 16, 8]
    assert split_html("short", 4096) == ["short"]
    assert split_html("\n\n<b> </b>\n", 4096) == []
    with pytest.raises(ValueError):
        split_html("x", 8)


def test_a_caption_is_truncated_with_an_ellipsis():
    caption = truncate_html(escape("odds & ends " * 200), 1024)
    text, _ = parse_html(caption)
    assert text.endswith("…") and utf16_len(text) <= 1024
    assert truncate_html(escape("short & sweet"), 1024) == "short &amp; sweet"


# --- the fake's HTML parser, as Telegram's --------------------------------------------------------


@pytest.mark.parametrize(
    ("html", "error"),
    [
        ("<b>bold", 'Can\'t find end tag corresponding to start tag "b"'),
        ("<foo>x</foo>", 'Unsupported start tag "foo" at byte offset 0'),
        ("a < b", 'Unsupported start tag "" at byte offset 2'),
        ("<b>x</i>", 'Unmatched end tag at byte offset 4, expected "</b>", found "</i>"'),
        ("x</b>", "Unexpected end tag at byte offset 1"),
        ("é<b", "Unclosed start tag at byte offset 2"),
        ('<span class="x">s</span>', 'Tag "span" must have class "tg-spoiler"'),
    ],
)
def test_the_fake_refuses_html_as_telegram_does(html, error):
    with pytest.raises(ApiError) as raised:
        parse_html(html)
    assert raised.value.code == 400
    assert raised.value.description == f"Bad Request: can't parse entities: {error}"


def test_the_fake_reads_tags_and_escapes_as_telegram_does():
    text, entities = parse_html("<b>a &amp; <I>b</I></b> &lt;3 &#x1F3B2; &copy; &")
    assert text == "a & b <3 🎲 &copy; &"
    assert entities == [
        {"type": "bold", "offset": 0, "length": 5},
        {"type": "italic", "offset": 4, "length": 1},
    ]


# --- command words and the menu ------------------------------------------------------------------

WORDS = CommandWords.of(
    [
        Command("roll", "", "", handler=lambda ctx: []),
        Command("house-rules", "", "", handler=lambda ctx: []),
    ]
)


@pytest.mark.parametrize(
    ("text", "private", "expected"),
    [
        ("/roll 7 6", False, ("roll 7 6", True)),
        ("/roll@CoterieBot 7 6", False, ("roll 7 6", True)),
        ("/roll@coteriebot 7 6", False, ("roll 7 6", True)),
        ("/roll@OtherBot 7 6", False, None),
        ("/roll@OtherBot 7 6", True, None),
        ("@CoterieBot, roll 2", False, ("roll 2", True)),
        ("@CoterieBot", False, ("help", True)),
        ("@OtherBot roll 2", False, ("@OtherBot roll 2", False)),
        ("!roll 2 # @CoterieBot", False, ("!roll 2 # @CoterieBot", False)),
        ("roll 2", True, ("roll 2", True)),
        ("/start", True, ("help", True)),
        ("/house_rules as written", False, ("house-rules as written", True)),
    ],
)
def test_read_text(text, private, expected):
    first = text.split(" ", 1)[0].rstrip(",")
    kind = "bot_command" if text.startswith("/") else "mention" if text.startswith("@") else ""
    entity = (kind, first) if kind else None
    assert (
        read_text(text, entity, bot_username="CoterieBot", private=private, words=WORDS) == expected
    )


def test_telegram_names_and_the_menu():
    assert telegram_name("house-rules") == "house_rules"
    assert telegram_name("Roll") == "roll"
    assert telegram_name("x" * 40) == "x" * 32
    assert telegram_name("!?") is None and telegram_name("") is None

    def command(name: str, summary: str) -> Command:
        return Command(name, summary, f"!{name}", handler=lambda ctx: [])

    entries = menu(
        [
            command("roll", "roll   a\n pool"),
            command("Roll", "the same name again"),
            command("!?", "no Telegram name"),
            command("long", "x" * 300),
            *(command(f"c{n}", "filler") for n in range(120)),
        ]
    )
    assert entries[0] == ("roll", "roll a pool")
    assert entries[1] == ("long", "x" * 255 + "…")
    assert len(entries) == 100 and len({name for name, _ in entries}) == 100


# --- buttons and the state records ----------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_button_tokens_are_short_single_use_and_expire():
    clock = Clock()
    board = ButtonBoard(MemoryStore(), "42", ttl=60, clock=clock)
    token = await board.issue(owner="11", owner_name="Lynn", room="-1", commands=["!a", "!b"])
    assert all(len(callback_data(token, i).encode()) <= 64 for i in (0, 99))
    assert read_callback_data(callback_data(token, 1)) == (token, 1)
    row = await board.peek(token)
    assert row is not None and row.command(1) == "!b" and row.command(2) is None
    assert (await board.redeem(token)) == row
    assert await board.redeem(token) is None
    token = await board.issue(owner="11", owner_name="Lynn", room="-1", commands=["!a"])
    clock.now += 61
    assert await board.peek(token) is None


@pytest.mark.parametrize(
    "data",
    [
        None,
        "",
        "reroll crits",
        "c1:short:0",
        "c1:" + "A" * 16 + ":100",
        "c2:" + "A" * 16 + ":0",
        "c1:" + "A" * 16 + ":0 ",
        "c1:" + "A" * 15 + "/:0",
    ],
)
def test_foreign_callback_data_is_not_ours(data):
    assert read_callback_data(data) is None


async def test_an_expiring_record_is_bounded():
    clock = Clock()
    store = MemoryStore()
    record = ExpiringRecord(store, "ns", "k", ttl=10, max_entries=3, clock=clock)
    assert [await record.add(str(n)) for n in (1, 2, 1)] == [True, True, False]
    clock.now += 5
    for n in (3, 4, 5):
        assert await record.add(str(n))
    assert await record.size() == 3 and await record.get("2") is None  # the oldest went
    clock.now += 6  # 3, 4, 5 are 6 s old; 1 and 2 would have expired anyway
    assert await record.get("3") is True
    clock.now += 5
    assert await record.size() == 0 and await record.add("1")
    await store.set("ns", "k", {"x": "corrupt", "y": [1], "z": [1e12, "ok"]})
    assert await record.get("z") == "ok" and await record.get("x") is None


async def test_only_one_of_racing_pops_wins():
    record = ExpiringRecord(MemoryStore(), "ns", "k", ttl=10, max_entries=5)
    await record.add("t", {"v": 1})
    results = await asyncio.gather(*(record.pop("t") for _ in range(10)))
    assert [r for r in results if r is not None] == [{"v": 1}]
    assert await record.size() == 0


# --- retries, ordering, receiving -----------------------------------------------------------------


def make_bot(**settings: Any) -> TelegramBot:
    # a closed port on loopback: nothing here may reach the network
    table = {"rate_limit_retries": 2, "api_url": "http://127.0.0.1:9/bot", **settings}
    options = TelegramSettings.from_table(table)
    return TelegramBot(
        make_core(), options, read_credentials(options, {"TELEGRAM_BOT_TOKEN": TOKEN})
    )


def test_retry_after_in_either_form(monkeypatch):
    monkeypatch.setenv("PTB_TIMEDELTA", "true")
    assert retry_seconds(RetryAfter(dtm.timedelta(seconds=3))) == 3.0
    monkeypatch.delenv("PTB_TIMEDELTA")
    with pytest.warns(DeprecationWarning):
        error = RetryAfter(7)
    assert retry_seconds(error) == 7.0


class Flaky:
    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "done"


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
async def test_calls_are_retried_on_429_and_network_errors_only(monkeypatch):
    monkeypatch.setattr(telegram_bot, "FIRST_BACKOFF", 0.001)
    bot = make_bot()
    flaky = Flaky(RetryAfter(0), TimedOut())
    assert await bot.call("x", flaky, idempotent=True) == "done" and flaky.calls == 3
    flaky = Flaky(*(NetworkError("down") for _ in range(3)))
    with pytest.raises(NetworkError):
        await bot.call("x", flaky, idempotent=True)
    assert flaky.calls == 3  # the first try and rate_limit_retries = 2 retries
    flaky = Flaky(BadRequest("Chat not found"))
    with pytest.raises(BadRequest):
        await bot.call("x", flaky, idempotent=True)
    assert flaky.calls == 1
    flaky = Flaky(RetryAfter(3600))  # a flood wait of an hour is not waited out
    with pytest.raises(RetryAfter):
        await bot.call("x", flaky, idempotent=True)
    assert flaky.calls == 1


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
async def test_a_send_is_retried_only_when_it_provably_did_not_happen(monkeypatch):
    monkeypatch.setattr(telegram_bot, "FIRST_BACKOFF", 0.001)
    bot = make_bot()
    # a 429 and a request that never left are safe to send again
    refused = NetworkError("httpx.ConnectError: refused")
    refused.__cause__ = httpx.ConnectError("refused")
    flaky = Flaky(RetryAfter(0), refused)
    assert await bot.call("sendMessage", flaky, idempotent=False) == "done"
    assert flaky.calls == 3
    # a time-out or a dropped connection after the request went out: it may have been posted
    late = TimedOut()
    late.__cause__ = httpx.ReadTimeout("no answer")
    dropped = NetworkError("httpx.RemoteProtocolError: Server disconnected")
    dropped.__cause__ = httpx.RemoteProtocolError("Server disconnected")
    for error in (late, dropped, NetworkError("Bad Gateway")):
        flaky = Flaky(error)
        with pytest.raises(NetworkError):
            await bot.call("sendMessage", flaky, idempotent=False)
        assert flaky.calls == 1


async def test_chat_locks_keep_order_and_are_forgotten():
    locks = ChatLocks()
    order: list[str] = []

    async def work(chat: int, name: str, pause: float) -> None:
        async with locks.hold(chat):
            await asyncio.sleep(pause)
            order.append(name)

    await asyncio.gather(work(1, "a1", 0.05), work(1, "a2", 0), work(2, "b", 0))
    assert order == ["b", "a1", "a2"] and len(locks) == 0


async def test_receiving_what_is_not_an_update_or_cannot_be_read(caplog):
    bot = make_bot()
    assert await bot.receive({"message": {}}) is False
    assert await bot.receive({"update_id": True}) is False
    assert await bot.receive({"update_id": 5, "message": {"text": "no chat"}}) is True
    assert "update 5 could not be read" in caplog.text
    assert await bot.receive({"update_id": 5, "message": {"text": "no chat"}}) is False
    edited = {"message_id": 1, "date": 1, "chat": {"id": 1, "type": "private"}, "text": "!roll"}
    assert await bot.receive({"update_id": 6, "edited_message": edited}) is True
    await bot.drain(5)
    assert bot.busy == 0
    await bot.bot.shutdown()


async def test_a_lost_claim_says_whether_the_update_was_answered(monkeypatch):
    """Before replying, a claim found taken is either an update answered before (200 over the
    webhook) or one another process is answering (503); a store that cannot tell says 503."""
    from coterie_telegram.records import ClaimLost

    bot = make_bot()
    pending = bot.seen.claim_later("7", lease=60)

    async def not_taken(_: Any) -> bool:
        return False

    monkeypatch.setattr(bot.seen, "settle", not_taken)
    for done, expected in ((True, True), (False, False)):

        async def is_done(_: str, done: bool = done) -> bool:
            return done

        monkeypatch.setattr(bot.seen, "is_done", is_done)
        with pytest.raises(ClaimLost) as lost:
            await bot._settle(pending)
        assert lost.value.answered is expected

    async def failing(_: str) -> bool:
        raise OSError("the store is away")

    monkeypatch.setattr(bot.seen, "is_done", failing)
    with pytest.raises(ClaimLost) as lost:
        await bot._settle(pending)
    assert lost.value.answered is False


def test_a_person_picked_without_a_username_reaches_the_core_as_their_id() -> None:
    # offsets in UTF-16 units: the wolf before the second name counts two
    text = "!roll 3 vs 🐺 Ann Vey and Bo"
    assert with_user_ids(text, [(14, 7, 13), (26, 2, 14)]) == "!roll 3 vs 🐺 @13 and @14"
    assert with_user_ids(text, []) == text
    # overlapping or out of the text: left alone, never a broken text
    assert with_user_ids("ab cd", [(0, 2, 1), (1, 2, 2), (4, 9, 3)]) == "@1 cd"


def test_a_mention_by_id_shows_the_name_the_bot_knows() -> None:
    encoder = TelegramEncoder({"13": "Ann <V>"})
    html = encoder.encode([Mention("13", "13", notify=True), Text(" "), Mention("14", "14")])
    assert encoder.encode([Mention("13", "13")]) == "Ann &lt;V&gt;"  # named in passing: text
    assert html == '<a href="tg://user?id=13">Ann &lt;V&gt;</a> 14'
