"""The ``[adapters.slack]`` table, validated, and the secrets it names in the environment.

Nothing here imports Slack libraries, so a bad table is reported even when the ``slack`` extra is
missing. Every error names the key, e.g. ``adapters.slack.thread: …``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from coterie.errors import ConfigError
from coterie.framework.config import SECRET_ENV, validate_table

WHERE = "adapters.slack"

#: a slash command as Slack allows it: a slash, then up to 31 lower-case letters, digits, - or _
_SLASH_NAME = re.compile(r"/[a-z0-9_-]{1,31}")
#: a coterie command word (what follows the room prefix), e.g. ``roll``
_COMMAND_WORD = re.compile(r"[^\s#;]{1,32}")


class SlackSettings(BaseModel):
    """Every key of ``[adapters.slack]``; see ``docs/platforms/slack.md``."""

    # built on first use: a bot that does not run this adapter never pays for the schema
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    #: read by core: start this adapter with ``coterie run``
    enabled: bool = False
    #: ``socket`` (Socket Mode: an outgoing websocket, no public URL) or ``http`` (Events API)
    mode: Literal["socket", "http"] = "socket"
    #: the environment variable holding the bot token (``xoxb-…``)
    bot_token_env: str = Field(
        default="SLACK_BOT_TOKEN", min_length=1, json_schema_extra=SECRET_ENV
    )
    #: the environment variable holding the app-level token (``xapp-…``; Socket Mode only)
    app_token_env: str = Field(
        default="SLACK_APP_TOKEN", min_length=1, json_schema_extra=SECRET_ENV
    )
    #: the environment variable holding the signing secret (HTTP mode only)
    signing_secret_env: str = Field(
        default="SLACK_SIGNING_SECRET", min_length=1, json_schema_extra=SECRET_ENV
    )
    #: HTTP mode: the address and port to listen on, and the path Slack posts to
    host: str = Field(default="127.0.0.1", min_length=1)
    port: int = Field(default=3000, ge=0, le=65535)
    path: str = "/slack/events"
    #: where answers to channel messages go: ``follow`` the command's thread, ``always`` start one,
    #: ``never`` (always the channel itself)
    thread: Literal["follow", "always", "never"] = "follow"
    #: slash command → the coterie command it runs; an empty word means "the text is a whole
    #: command", e.g. ``/coterie roll 7 6``
    slash_commands: dict[str, str] = Field(
        default_factory=lambda: {"/coterie": "", "/roll": "roll", "/odds": "odds"}
    )
    #: the Web API base URL (only changed for tests or an API proxy)
    api_url: str = "https://slack.com/api/"
    #: Socket Mode: seconds between websocket pings; a dead connection is replaced after a few
    ping_interval: float = Field(default=10.0, gt=0, le=300)
    #: how often one Web API call is retried after ``ratelimited`` (HTTP 429) or a 5xx (each time
    #: after Retry-After, else the back-off)
    rate_limit_retries: int = Field(default=3, ge=0, le=10)

    @field_validator("path")
    @classmethod
    def _path(cls, value: str) -> str:
        if not value.startswith("/") or any(ch.isspace() for ch in value):
            raise ValueError("must start with / and contain no spaces, e.g. /slack/events")
        return value

    @field_validator("api_url")
    @classmethod
    def _api_url(cls, value: str) -> str:
        if not re.match(r"https?://[^\s/]+", value):
            raise ValueError("must be an http(s) URL, e.g. https://slack.com/api/")
        return value if value.endswith("/") else value + "/"

    @field_validator("bot_token_env", "app_token_env", "signing_secret_env")
    @classmethod
    def _env_name(cls, value: str) -> str:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value):
            raise ValueError(
                f"{value!r} is not an environment variable name; give the NAME of the variable "
                "that holds the secret, never the secret itself"
            )
        return value

    @field_validator("slash_commands")
    @classmethod
    def _slash_commands(cls, value: dict[str, str]) -> dict[str, str]:
        if not value:
            raise ValueError('name at least one slash command, e.g. {"/coterie" = ""}')
        for name, word in value.items():
            if not _SLASH_NAME.fullmatch(name):
                raise ValueError(
                    f"{name!r} is not a slash command name: a / then up to 31 lower-case "
                    "letters, digits, - or _"
                )
            if word and not _COMMAND_WORD.fullmatch(word):
                raise ValueError(
                    f"{name}: {word!r} is not a command word (one word, e.g. roll); "
                    'use "" to take the whole text as a command'
                )
        return value

    @classmethod
    def from_table(cls, table: Mapping[str, Any]) -> SlackSettings:
        """Validate a config table; a problem is a :class:`ConfigError` naming the key."""
        return validate_table(cls, table, WHERE)


@dataclass(frozen=True)
class Credentials:
    """The secrets, read from the environment. Never printed: ``repr`` shows only which exist."""

    bot_token: str
    app_token: str | None = None
    signing_secret: str | None = None

    def __repr__(self) -> str:
        present = [
            name
            for name, value in (
                ("bot_token", self.bot_token),
                ("app_token", self.app_token),
                ("signing_secret", self.signing_secret),
            )
            if value
        ]
        return f"Credentials({', '.join(present)})"


def read_credentials(
    settings: SlackSettings, environ: Mapping[str, str] | None = None
) -> Credentials:
    """The secrets the mode needs, from the variables the settings name. A missing or
    mistaken one is a :class:`ConfigError` that names the key and the variable."""
    env = os.environ if environ is None else environ

    def need(key: str, what: str) -> str:
        name = getattr(settings, key)
        value = env.get(name, "").strip()
        if not value:
            raise ConfigError(
                f"{WHERE}.{key}: the environment variable {name} is not set; it must hold {what}"
            )
        return value

    bot_token = need("bot_token_env", "the bot token (xoxb-…)")
    if bot_token.startswith("xapp-"):
        raise ConfigError(
            f"{WHERE}.bot_token_env: {settings.bot_token_env} holds an app-level token (xapp-…); "
            "it must hold the bot token (xoxb-…)"
        )
    if settings.mode == "socket":
        app_token = need("app_token_env", "the app-level token (xapp-…) for Socket Mode")
        if not app_token.startswith("xapp-"):
            raise ConfigError(
                f"{WHERE}.app_token_env: {settings.app_token_env} must hold an app-level token "
                "(xapp-…, with the connections:write scope)"
            )
        return Credentials(bot_token=bot_token, app_token=app_token)
    secret = need("signing_secret_env", "the app's signing secret (HTTP mode)")
    return Credentials(bot_token=bot_token, signing_secret=secret)
