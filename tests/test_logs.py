"""Logs: secrets never reach them; JSON lines with ids and no message text."""

from __future__ import annotations

import io
import json
import linecache
import logging
import subprocess

import pytest
from pydantic import BaseModel, Field

from coterie.framework.adapter import Adapter
from coterie.framework.config import SECRET_ENV, parse_config, secret_env_fields
from coterie.ops.logs import REDACTED, Redactor, secret_values, setup_logging

SLACK = "xoxb-2093-48811-T0k3nV4lu3AbCdEf"
TELEGRAM = "7123456789:AAHd8t4kQx9_mZ3r1LhW0pNcVbYuTsEoIgA"
MATRIX = "syt_Ym90_ZQmNgHfAwWcTtTsPoKq_0x1Y2z"


@pytest.fixture
def restore_logging():
    """setup_logging replaces the root logger's handlers: put pytest's back afterwards."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in list(root.handlers):
        root.removeHandler(handler)
    for handler in handlers:
        root.addHandler(handler)
    root.setLevel(level)


def capture(config=None, *, log_format="text", environ=None, level="DEBUG") -> io.StringIO:
    out = io.StringIO()
    setup_logging(config, log_format=log_format, level=level, stream=out, environ=environ or {})
    return out


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        (f"auth with {SLACK} failed", "auth with"),
        ("app token xapp-1-A0123456789-1234567890123-abcdef0123", "app token"),
        (f"GET https://api.telegram.org/bot{TELEGRAM}/getMe", "api.telegram.org/bot"),
        (f"Authorization: Bearer {MATRIX}", "Authorization:"),
        (f"token={MATRIX}&x=1", "&x=1"),
        ("postgresql+asyncpg://coterie:hunter2hunter2@db.local/coterie", "@db.local/coterie"),
    ],
)
def test_token_shaped_strings_are_redacted(text: str, kept: str) -> None:
    out = Redactor()(text)
    assert REDACTED in out and kept in out
    for secret in (SLACK, TELEGRAM, MATRIX, "hunter2hunter2", "abcdef0123"):
        assert secret not in out


def test_ordinary_text_is_left_alone() -> None:
    text = "room C024BE91L user U12345 rolled !roll 7 6 at 12:30:45, incident k3f9qz"
    assert Redactor(["secret-value"])(text) == text


def test_secret_values_come_from_the_adapters_env_variables() -> None:
    config = parse_config({"adapters": {"slack": {"bot_token_env": "MY_SLACK"}}})
    environ = {
        "MY_SLACK": "plain-looking-secret",  # named by the config
        "MATRIX_PASSWORD": "correct horse battery",  # a default name
        "COTERIE_DATABASE_URL": "postgresql://bot:p%40ss-w0rd@127.0.0.1/db",
        "HOME": "/home/bot",  # not a secret
        "TELEGRAM_BOT_TOKEN": "short",  # short, but a secret all the same
    }
    values = secret_values(config, environ)
    assert "plain-looking-secret" in values and "correct horse battery" in values
    assert "p@ss-w0rd" in values and "p%40ss-w0rd" in values
    assert "/home/bot" not in values
    assert "short" in Redactor(values).secrets


def test_a_traceback_with_a_token_is_redacted(restore_logging) -> None:
    config = parse_config({"adapters": {"telegram": {"bot_token_env": "TG"}}})
    secret = "not-token-shaped-but-secret"
    out = capture(config, environ={"TG": secret, "SLACK_BOT_TOKEN": SLACK})
    log = logging.getLogger("coterie.test")
    try:
        raise ConnectionError(f"connect to https://example.test/bot{TELEGRAM} with {secret}")
    except ConnectionError:
        log.exception("adapter %s crashed with %s", "telegram", SLACK, extra={"token": secret})
    log.warning("stack here", stack_info=True)
    text = out.getvalue()
    assert "Traceback (most recent call last)" in text and "ConnectionError" in text
    assert "adapter telegram crashed" in text
    for leaked in (secret, SLACK, TELEGRAM):
        assert leaked not in text
    assert text.count(REDACTED) >= 4


def test_json_lines_carry_extra_fields_and_exceptions(restore_logging) -> None:
    out = capture(log_format="json", environ={"MATRIX_ACCESS_TOKEN": MATRIX})
    log = logging.getLogger("coterie.test")
    log.info("hello %s", "world", extra={"room": "!abc:example.org", "count": 3})
    try:
        1 / 0  # noqa: B018
    except ZeroDivisionError:
        log.error("failed using %s", MATRIX, exc_info=True)
    first, second = (json.loads(line) for line in out.getvalue().splitlines())
    assert first["level"] == "INFO" and first["logger"] == "coterie.test"
    assert first["message"] == "hello world"
    assert first["room"] == "!abc:example.org" and first["count"] == 3
    assert first["time"].endswith("+00:00")
    assert second["level"] == "ERROR" and "ZeroDivisionError" in second["exception"]
    assert MATRIX not in second["message"] and REDACTED in second["message"]


async def test_each_answered_command_logs_ids_never_text(restore_logging, make_app, say) -> None:
    out = capture(log_format="json", level="INFO")
    app = make_app()
    await say(app, "!roll 5 6 # the secret plan", user="U7", room="C9", platform="slack")
    await say(app, "!roll 5 banana # the secret plan", user="U7", room="C9", platform="slack")
    await say(app, "just chatting about the secret plan", user="U7", room="C9", platform="slack")
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    answered = [line for line in lines if line["logger"] == "coterie.chat"]
    assert len(answered) == 2  # chatter is not logged
    for line, error in zip(answered, [False, True], strict=True):
        assert line["level"] == "INFO"
        assert (line["platform"], line["room"], line["user"]) == ("slack", "C9", "U7")
        assert line["command"] == "roll" and line["error"] is error
        assert line["rate_limited"] is False
        assert isinstance(line["duration_ms"], float) and line["duration_ms"] >= 0
    assert "secret plan" not in out.getvalue() and "banana" not in out.getvalue()


async def test_unknown_command_words_are_not_logged(restore_logging, make_app, say) -> None:
    out = capture(log_format="json", level="INFO")
    await say(make_app(), "!hunter2 please")
    [line] = [json.loads(line) for line in out.getvalue().splitlines()]
    assert line["command"] == "(unknown)" and line["error"] is True
    assert "hunter2" not in out.getvalue()


def test_text_format_and_config_driven_level(restore_logging) -> None:
    config = parse_config({"logging": {"format": "json", "level": "WARNING"}})
    out = io.StringIO()
    setup_logging(config, log_format="text", stream=out, environ={})
    log = logging.getLogger("coterie.test")
    log.info("hidden")
    log.warning("shown %d", 1, extra={"room": "r1"})
    text = out.getvalue()
    assert "hidden" not in text
    assert "WARNING coterie.test: shown 1 room=r1" in text
    assert logging.getLogger().level == logging.WARNING


def test_bad_logging_config_is_refused() -> None:
    from coterie.errors import ConfigError

    with pytest.raises(ConfigError, match=r"logging\.format"):
        parse_config({"logging": {"format": "xml"}})


def test_coterie_run_logs_json_with_secrets_redacted(coterie_cli, cli_env, tmp_path) -> None:
    """The real CLI: an adapter that cannot start logs its error as JSON, token redacted."""
    config = tmp_path / "bot.toml"
    config.write_text(
        '[plugins]\nenable = ["revised", "console"]\n[adapters.console]\nenabled = true\n',
        encoding="utf-8",
    )
    env = dict(cli_env, SLACK_BOT_TOKEN=SLACK)
    done = subprocess.run(
        [*coterie_cli, "run", "--config", str(config), "--log-format", "json"],
        input=f"!roll 3 6 # {SLACK}\n!nosuch\n",
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "3 dice, difficulty 6" in done.stdout
    lines = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    commands = [line["command"] for line in lines if line.get("logger") == "coterie.chat"]
    assert commands == ["roll", "(unknown)"]
    assert SLACK not in done.stderr


class SchemaSettings(BaseModel):
    """A third-party adapter's settings: the secret is named by a key that does not end in
    ``_env``, so only the schema's marking can tell."""

    enabled: bool = False
    login_from: str = Field(default="SHOP_LOGIN", json_schema_extra=SECRET_ENV)
    greeting_env: str = "SHOP_GREETING"  # names a variable, but not a secret one


class SchemaAdapter(Adapter):
    name = "shop"
    settings_model = SchemaSettings

    async def run(self) -> None:  # pragma: no cover - never run
        return None


def test_every_secret_the_schema_marks_is_redacted_whatever_its_length(restore_logging) -> None:
    """Secrets of 1-5 characters used to pass unredacted, and a secret key not named ``*_env``
    was missed: the settings schema's marking decides, whatever the length."""
    from coterie.framework.app import Coterie

    config = parse_config(
        {
            "plugins": {"enable": ["revised", "slack", "telegram", "matrix"]},
            "adapters": {
                "shop": {"login_from": "MY_LOGIN"},
                "telegram": {"webhook_secret_env": "TG_HOOK"},
                "slack": {},
            },
        }
    )
    adapters = {**Coterie(config).adapter_classes, "shop": SchemaAdapter}
    environ = {
        "MY_LOGIN": "k9",  # two characters, named by a key without _env
        "TG_HOOK": "w3bh",  # four characters
        "SLACK_SIGNING_SECRET": "x7Q",  # the default variable of a marked field
        "SHOP_GREETING": "hello",  # not marked secret: left alone
    }
    out = io.StringIO()
    setup_logging(
        config, level="DEBUG", stream=out, environ=environ, adapters=adapters, log_format="text"
    )
    log = logging.getLogger("coterie.test")
    log.info("login k9, hook w3bh, signing x7Q; say hello")
    line = out.getvalue().splitlines()[-1]
    assert line.endswith(f"login {REDACTED}, hook {REDACTED}, signing {REDACTED}; say hello")
    text = out.getvalue()
    assert "$MY_LOGIN holds a secret of only 2 characters" in text  # and a warning says so
    assert secret_values(config, environ, adapters).count("hello") == 0


def test_marked_fields_of_the_shipped_adapters() -> None:
    from coterie_matrix.settings import MatrixSettings
    from coterie_slack.settings import SlackSettings
    from coterie_telegram.settings import TelegramSettings

    assert secret_env_fields(SlackSettings) == [
        "bot_token_env",
        "app_token_env",
        "signing_secret_env",
    ]
    assert secret_env_fields(TelegramSettings) == ["bot_token_env", "webhook_secret_env"]
    assert secret_env_fields(MatrixSettings) == [
        "access_token_env",
        "password_env",
        "store_passphrase_env",
    ]


def test_lines_read_as_the_standard_formatters_wrote_them(restore_logging) -> None:
    """Issue 18 made a log line cheaper (the record's attributes walked once, the time of a
    second formatted once, the chat line made without a search of the caller's frame): the
    same records give the same lines as the plain `logging` calls and formatter do."""
    from coterie.framework.chatlog import chat_log, chat_record
    from coterie.ops.logs import TextFormatter

    fields = {"platform": "slack", "room": "C9", "user": "U7", "command": "roll", "error": False}
    for log_format in ("text", "json"):
        out = capture(log_format=log_format, level="INFO")
        chat_log.log(logging.INFO, "command %s", "roll", extra=dict(fields))
        chat_record(logging.INFO, "roll", dict(fields))
        by_log, by_record = out.getvalue().splitlines()
        if log_format == "json":
            first, second = json.loads(by_log), json.loads(by_record)
            assert set(first) == set(second) == {"time", "level", "logger", "message", *fields}
            first.pop("time"), second.pop("time")
            assert first == second
        else:
            assert by_log.split(" ", 2)[2] == by_record.split(" ", 2)[2]
            assert by_record.endswith(
                "INFO coterie.chat: command roll platform=slack room=C9 user=U7 command=roll "
                "error=False"
            )
    record = chat_log.makeRecord("coterie.chat", logging.INFO, "f", 1, "m", (), None)
    mine, plain = TextFormatter(), logging.Formatter("%(asctime)s")
    for created in (1_700_000_000.0, 1_700_000_000.999, 1_700_000_001.0005, 1_700_003_600.25):
        record.created, record.msecs = created, int((created - int(created)) * 1000) + 0.0
        assert mine.formatTime(record) == plain.formatTime(record)
        assert mine.formatTime(record, "%H:%M") == plain.formatTime(record, "%H:%M")


def test_the_chat_record_says_where_it_was_made() -> None:
    from coterie.framework import chatlog

    seen: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = seen.append  # type: ignore[method-assign]
    chatlog.chat_log.addHandler(handler)
    try:
        chatlog.chat_record(logging.WARNING, "roll", {"room": "C9"})
    finally:
        chatlog.chat_log.removeHandler(handler)
    [record] = seen
    assert record.pathname == chatlog.__file__ and record.funcName == "chat_record"
    assert "chat_log.makeRecord(" in linecache.getline(record.pathname, record.lineno)
    assert record.getMessage() == "command roll" and record.room == "C9"  # type: ignore[attr-defined]
