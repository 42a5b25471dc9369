"""Logging for ``coterie run`` and ``coterie chat``: readable text or one JSON object per line,
and a filter that keeps secrets out of every log line.

The :class:`Redactor` knows two kinds of secret:

* the values of the environment variables that hold secrets, whatever their length — the
  adapters' defaults (``SLACK_BOT_TOKEN``, ``TELEGRAM_BOT_TOKEN``, ``MATRIX_PASSWORD``, …), every
  variable an ``[adapters.NAME]`` table names in a field its settings schema marks secret
  (:data:`coterie.config.SECRET_ENV`; an adapter without a schema: every ``*_env`` key),
  ``[logging] redact_env``, and the password in ``COTERIE_DATABASE_URL``;
* anything shaped like a token: Slack ``xoxb-…``/``xapp-…``, Telegram ``123456:ABC…``, Matrix
  ``syt_…``, ``Bearer …`` and the password in ``scheme://user:password@host``.

:class:`RedactingFilter` applies it to the message, its arguments, extra fields and the formatted
exception and stack, on the handler, so records from every logger pass through it.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import time
import traceback
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TextIO
from urllib.parse import unquote, urlsplit

if TYPE_CHECKING:
    from coterie.framework.adapter import Adapter
    from coterie.framework.config import Config

REDACTED = "[redacted]"

#: environment variables that hold secrets whatever the config says (the adapters' defaults)
SECRET_ENV = (
    "SLACK_BOT_TOKEN",
    "SLACK_APP_TOKEN",
    "SLACK_SIGNING_SECRET",
    "TELEGRAM_BOT_TOKEN",
    "TELEGRAM_WEBHOOK_SECRET",
    "MATRIX_ACCESS_TOKEN",
    "MATRIX_PASSWORD",
    "MATRIX_STORE_PASSPHRASE",
    "COTERIE_DATABASE_URL",
)
#: a secret shorter than this is still redacted, but a warning says it is weak (and that
#: redacting it blanks out ordinary text in the logs)
SHORT_SECRET = 6
_WARNED: set[str] = set()

TOKEN_PATTERNS = (
    re.compile(r"\bxox[a-z]-[A-Za-z0-9-]{8,}"),  # Slack bot, user and legacy tokens
    re.compile(r"\bxapp-[A-Za-z0-9-]{8,}"),  # Slack app-level tokens
    re.compile(r"(?<![0-9])[0-9]{5,12}:[A-Za-z0-9_-]{30,}"),  # Telegram bot tokens
    re.compile(r"\bsy[tn]_[A-Za-z0-9_]{8,}"),  # Matrix (Synapse) access tokens
    re.compile(r"\b(?i:bearer)\s+[A-Za-z0-9._~+/-]{8,}=*"),
)
#: every token pattern in one expression: a text is scanned once, not once per pattern
TOKENS = re.compile("|".join(f"(?:{pattern.pattern})" for pattern in TOKEN_PATTERNS))
#: texts up to this long are remembered with their redacted form (ids, command names and the
#: like, logged with every message: the same few hundred strings all evening)
MEMO_LENGTH = 120
MEMO_SIZE = 4096
#: ``scheme://user:password@host``: the password goes
URL_PASSWORD = re.compile(r"(://[^:/?#@\s]*:)([^@/\s]+)(@)")

#: where :class:`RedactingFilter` leaves the names of a record's extra fields, for the
#: formatters (so each record's attributes are walked once)
_EXTRA = "_coterie_extra"
#: attributes every LogRecord has; anything else was passed with ``extra=``
_STANDARD = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime", "taskName", _EXTRA}
#: values that are never text, so never redacted (exact types: a str subclass is text)
_PLAIN = frozenset({int, float, bool, type(None)})


def _extra(record: logging.LogRecord) -> list[str]:
    """The names of the record's extra fields, in the order they were given."""
    known: list[str] | None = getattr(record, _EXTRA, None)
    if known is None:
        known = [key for key in vars(record) if key not in _STANDARD]
    return known


class Redactor:
    """Replaces secret values and token-shaped strings with ``[redacted]``."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        values = {s for s in secrets if s}
        # longest first, so a secret containing another is replaced whole
        self.secrets = sorted(values, key=len, reverse=True)
        self._memo: dict[str, str] = {}

    def __call__(self, text: str) -> str:
        short = len(text) <= MEMO_LENGTH
        if short and (done := self._memo.get(text)) is not None:
            return done
        redacted = self._redact(text)
        if short:
            if len(self._memo) >= MEMO_SIZE:
                self._memo.clear()
            self._memo[text] = redacted
        return redacted

    def _redact(self, text: str) -> str:
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        if "://" in text:
            text = URL_PASSWORD.sub(rf"\g<1>{REDACTED}\g<3>", text)
        return TOKENS.sub(REDACTED, text)

    def value(self, value: Any) -> Any:
        """A log argument or extra field, redacted if it is (or shows as) text."""
        kind = type(value)
        if kind is str:
            return self(value)
        if kind in _PLAIN or isinstance(value, int | float):
            return value
        return self(value if isinstance(value, str) else str(value))


def secret_env_names(
    config: Config | None = None, adapters: Mapping[str, type[Adapter]] | None = None
) -> list[str]:
    """Names of the environment variables whose values are secrets: the defaults, what each
    ``[adapters.NAME]`` table names in the fields its adapter's settings schema marks secret
    (``adapters``: the loaded adapter classes by name; a table of an adapter not given, or
    without a schema, counts every ``*_env`` key), and ``[logging] redact_env``."""
    names = list(SECRET_ENV)
    if config is not None:
        for name, table in config.adapters.items():
            cls = (adapters or {}).get(name)
            if cls is not None:
                names += cls.secret_env_names(table)
            else:
                names += [str(v) for k, v in table.items() if k.endswith("_env") and v]
        names += config.logging.redact_env
    return list(dict.fromkeys(names))


def secret_values(
    config: Config | None = None,
    environ: Mapping[str, str] | None = None,
    adapters: Mapping[str, type[Adapter]] | None = None,
) -> list[str]:
    """The secret values present in the environment (a database URL gives its password too)."""
    env = os.environ if environ is None else environ
    values: list[str] = []
    for name in secret_env_names(config, adapters):
        value = env.get(name, "").strip()
        if not value:
            continue
        values.append(value)
        if len(value) < SHORT_SECRET and name not in _WARNED:
            _WARNED.add(name)
            logging.getLogger("coterie").warning(
                "$%s holds a secret of only %d characters: it is redacted from the logs "
                "(with every text that contains it), but it is easy to guess",
                name,
                len(value),
            )
        if "://" in value:
            try:
                password = urlsplit(value).password
            except ValueError:
                password = None
            if password:
                values += [password, unquote(password)]
    return values


class RedactingFilter(logging.Filter):
    """Redacts a record in place: message with its arguments, extra fields, exception, stack."""

    def __init__(self, redactor: Redactor) -> None:
        super().__init__()
        self.redactor = redactor

    def filter(self, record: logging.LogRecord) -> bool:
        redact = self.redactor
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: keep what there is
            message = f"{record.msg!r} % {record.args!r}"
        record.msg, record.args = redact(message), None
        if record.exc_info and record.exc_info[0] is not None:
            text = "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
            record.exc_text = redact(text)
            record.exc_info = None
        elif record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        fields = vars(record)
        extra = [key for key in fields if key not in _STANDARD]
        for key in extra:
            fields[key] = redact.value(fields[key])
        fields[_EXTRA] = extra
        return True


#: ``json.dumps(…, ensure_ascii=False, default=str)``, its encoder made once
_JSON = json.JSONEncoder(ensure_ascii=False, default=str)


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ``time``, ``level``, ``logger``, ``message``, every ``extra``
    field, and ``exception``/``stack`` when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        fields = vars(record)
        for key in _extra(record):
            if key not in entry:
                entry[key] = fields[key]
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            entry["exception"] = record.exc_text
        if record.stack_info:
            entry["stack"] = record.stack_info
        return _JSON.encode(entry)


class TextFormatter(logging.Formatter):
    """``time level logger: message key=value …`` (extra fields appended)."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")
        self._second = -1
        self._stamp = ""

    def formatMessage(self, record: logging.LogRecord) -> str:
        line = super().formatMessage(record)
        fields = vars(record)
        extra = [f"{k}={fields[k]}" for k in _extra(record)]
        return f"{line} {' '.join(extra)}" if extra else line

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        """As :class:`logging.Formatter`'s, with the local time of a second formatted once."""
        if datefmt is not None:
            return super().formatTime(record, datefmt)
        second = int(record.created)
        if second != self._second:
            self._second = second
            self._stamp = time.strftime(self.default_time_format, self.converter(second))
        if self.default_msec_format is None:
            return self._stamp
        return self.default_msec_format % (self._stamp, record.msecs)


#: marks the handler :func:`setup_logging` installed, so a second call replaces it
_OURS = "coterie"


def setup_logging(
    config: Config | None = None,
    *,
    log_format: str | None = None,
    level: str | int | None = None,
    stream: TextIO | None = None,
    environ: Mapping[str, str] | None = None,
    adapters: Mapping[str, type[Adapter]] | None = None,
) -> logging.Handler:
    """Send every log record to ``stream`` (stderr) as text or JSON, secrets redacted.

    ``log_format`` and ``level`` win over the config's ``[logging]`` table (then ``log_level``).
    Replaces the root logger's handlers (``logging.basicConfig``'s included). ``adapters`` (the
    loaded adapter classes by name) lets their settings schemas say which keys are secret."""
    chosen = log_format or (config.logging.format if config else "text")
    if level is None:
        level = (config.logging.level or config.log_level) if config else "INFO"
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.set_name(_OURS)
    handler.setFormatter(JsonFormatter() if chosen == "json" else TextFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    # after the handler is in place, so that a warning about a weak secret is shown (redacted)
    handler.addFilter(RedactingFilter(Redactor(secret_values(config, environ, adapters))))
    root.setLevel(level)
    return handler
