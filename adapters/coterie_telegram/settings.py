"""The ``[adapters.telegram]`` table, validated, and the secrets it names in the environment.

Nothing here imports python-telegram-bot, so a bad table is reported even when the ``telegram``
extra is missing. Every error names the key, e.g. ``adapters.telegram.mode: …``.
"""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from coterie.errors import ConfigError
from coterie.framework.config import SECRET_ENV, validate_table

WHERE = "adapters.telegram"

#: what @BotFather hands out: the bot's numeric id, a colon, then the secret part
BOT_TOKEN = re.compile(r"[0-9]{1,20}:[A-Za-z0-9_-]{20,100}")
#: what Telegram accepts as a webhook ``secret_token`` (1-256 of A-Z, a-z, 0-9, _ and -)
WEBHOOK_SECRET = re.compile(r"[A-Za-z0-9_-]{1,256}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class TelegramSettings(BaseModel):
    """Every key of ``[adapters.telegram]``; see ``docs/platforms/telegram.md``."""

    # built on first use: a bot that does not run this adapter never pays for the schema
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    #: read by core: start this adapter with ``coterie run``
    enabled: bool = False
    #: ``polling`` (the bot asks Telegram for updates; no public URL) or ``webhook``
    mode: Literal["polling", "webhook"] = "polling"
    #: the environment variable holding the bot token from @BotFather
    bot_token_env: str = Field(
        default="TELEGRAM_BOT_TOKEN", min_length=1, json_schema_extra=SECRET_ENV
    )
    #: webhook mode: the variable holding the ``secret_token`` Telegram sends with every update
    #: (a random one is made at each start when the variable is unset)
    webhook_secret_env: str = Field(
        default="TELEGRAM_WEBHOOK_SECRET", min_length=1, json_schema_extra=SECRET_ENV
    )
    #: webhook mode: the public HTTPS URL Telegram posts updates to (the reverse proxy's)
    webhook_url: str | None = None
    #: webhook mode: the address and port to listen on, and the path of the webhook
    host: str = Field(default="127.0.0.1", min_length=1)
    port: int = Field(default=8443, ge=0, le=65535)
    path: str = "/telegram/webhook"
    #: webhook mode: how many connections Telegram may open at once (1-100)
    max_connections: int = Field(default=40, ge=1, le=100)
    #: polling: the long-poll timeout of ``getUpdates`` in seconds (0: short polling)
    poll_timeout: int = Field(default=30, ge=0, le=50)
    #: polling: seconds to wait between two ``getUpdates`` calls
    poll_interval: float = Field(default=0.0, ge=0, le=60)
    #: at start, drop the updates Telegram queued while the bot was offline
    drop_pending_updates: bool = False
    #: register the commands in the bot's command menu (``setMyCommands``)
    command_menu: bool = True
    #: seconds a reply's buttons can be pressed (Telegram answers presses for 48 hours at most)
    button_ttl: int = Field(default=3600, ge=10, le=172_800)
    #: end each roll with a line naming the roll id and the rule set
    show_roll_id: bool = True
    #: how often one Bot API call is retried after 429 (``retry_after``) or a network error
    rate_limit_retries: int = Field(default=3, ge=0, le=10)
    #: seconds after which an update claimed but never answered (its process died) is taken
    #: over when Telegram sends it again
    claim_lease: float = Field(default=60.0, ge=1, le=3600)
    #: the Bot API base URL; the token and method are appended (a local Bot API server, tests)
    api_url: str = "https://api.telegram.org/bot"

    @field_validator("path")
    @classmethod
    def _path(cls, value: str) -> str:
        if not value.startswith("/") or any(ch.isspace() for ch in value):
            raise ValueError("must start with / and contain no spaces, e.g. /telegram/webhook")
        return value

    @field_validator("api_url")
    @classmethod
    def _api_url(cls, value: str) -> str:
        if not re.fullmatch(r"https?://[^\s/]+(/[^\s]*)?", value):
            raise ValueError("must be an http(s) URL, e.g. https://api.telegram.org/bot")
        return value

    @field_validator("webhook_url")
    @classmethod
    def _webhook_url(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"https?://[^\s/]+(/[^\s]*)?", value):
            raise ValueError("must be the public URL of the webhook, e.g. https://bot.example.org")
        return value

    @field_validator("bot_token_env", "webhook_secret_env")
    @classmethod
    def _env_name(cls, value: str) -> str:
        if not _ENV_NAME.fullmatch(value):
            raise ValueError(
                f"{value!r} is not an environment variable name; give the NAME of the variable "
                "that holds the secret, never the secret itself"
            )
        return value

    @model_validator(mode="after")
    def _webhook_needs_url(self) -> TelegramSettings:
        if self.mode == "webhook" and not self.webhook_url:
            raise ValueError(
                "webhook_url: webhook mode needs the public HTTPS URL Telegram posts to, "
                'e.g. webhook_url = "https://bot.example.org/telegram/webhook"'
            )
        return self

    @classmethod
    def from_table(cls, table: Mapping[str, Any]) -> TelegramSettings:
        """Validate a config table; a problem is a :class:`ConfigError` naming the key."""
        return validate_table(cls, table, WHERE)


@dataclass(frozen=True)
class Credentials:
    """The secrets, read from the environment. Never printed: ``repr`` shows only which exist."""

    bot_token: str
    #: webhook mode only
    webhook_secret: str | None = None
    #: true when the webhook secret was made up at start (the variable was unset)
    generated_secret: bool = False

    @property
    def bot_id(self) -> str:
        """The bot's numeric id: the part of the token before the colon (not a secret)."""
        return self.bot_token.split(":", 1)[0]

    def __repr__(self) -> str:
        present = ["bot_token"] + (["webhook_secret"] if self.webhook_secret else [])
        return f"Credentials({', '.join(present)})"


def read_credentials(
    settings: TelegramSettings, environ: Mapping[str, str] | None = None
) -> Credentials:
    """The secrets the mode needs, from the variables the settings name. A missing or
    malformed one is a :class:`ConfigError` that names the key and the variable."""
    env = os.environ if environ is None else environ
    name = settings.bot_token_env
    token = env.get(name, "").strip()
    if not token:
        raise ConfigError(
            f"{WHERE}.bot_token_env: the environment variable {name} is not set; it must hold "
            "the bot token from @BotFather (123456789:AA…)"
        )
    if not BOT_TOKEN.fullmatch(token):
        raise ConfigError(
            f"{WHERE}.bot_token_env: {name} does not hold a bot token: @BotFather's tokens "
            "look like 123456789:AA… (digits, a colon, then letters, digits, _ and -)"
        )
    if settings.mode != "webhook":
        return Credentials(bot_token=token)
    secret_name = settings.webhook_secret_env
    secret = env.get(secret_name, "").strip()
    if not secret:
        return Credentials(token, secrets.token_urlsafe(32), generated_secret=True)
    if not WEBHOOK_SECRET.fullmatch(secret):
        raise ConfigError(
            f"{WHERE}.webhook_secret_env: {secret_name} must hold 1-256 characters of "
            "A-Z, a-z, 0-9, _ and - (Telegram's rule for a webhook secret_token)"
        )
    return Credentials(token, secret)
