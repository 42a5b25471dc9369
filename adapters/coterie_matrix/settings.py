"""The ``[adapters.matrix]`` table, validated, and the secrets it names in the environment.

Nothing here imports matrix-nio, so a bad table is reported even when the ``matrix`` extra is
missing. Every error names the key, e.g. ``adapters.matrix.invite_policy: …``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from coterie.errors import ConfigError
from coterie.framework.config import SECRET_ENV, validate_table

WHERE = "adapters.matrix"

_SERVER = r"(?:[A-Za-z0-9.\-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?"
#: a server name as in user ids: a DNS name or IP address, optionally with a port
SERVER_NAME = re.compile(_SERVER)
#: a Matrix user id, ``@localpart:server`` (lenient about the localpart, as old ids are)
USER_ID = re.compile(rf"@[^\s:]+:{_SERVER}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


#: what a missing required key should hold
MISSING_HINTS = {
    "homeserver": "the homeserver's URL, e.g. https://matrix.example.org",
    "user_id": "the bot account's user id, e.g. @coterie:example.org",
}


class MatrixSettings(BaseModel):
    """Every key of ``[adapters.matrix]``; see ``docs/platforms/matrix.md``."""

    # built on first use: a bot that does not run this adapter never pays for the schema
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    #: read by core: start this adapter with ``coterie run``
    enabled: bool = False
    #: the homeserver's client API base URL, e.g. ``https://matrix.example.org``
    homeserver: str
    #: the bot account, e.g. ``@coterie:example.org``
    user_id: str
    #: the environment variable holding an access token (used when it is set)
    access_token_env: str = Field(
        default="MATRIX_ACCESS_TOKEN", min_length=1, json_schema_extra=SECRET_ENV
    )
    #: the environment variable holding the account's password (used when no token is set)
    password_env: str = Field(default="MATRIX_PASSWORD", min_length=1, json_schema_extra=SECRET_ENV)
    #: the name of the bot's device (password login), shown in the account's session list
    device_name: str = Field(default="coterie", min_length=1, max_length=100)
    #: end-to-end encryption: answer in encrypted rooms (needs ``store_path``)
    encryption: bool = True
    #: where matrix-nio keeps the bot's encryption keys (and coterie the device id and sync
    #: token); relative paths are under the config's ``data_dir``
    store_path: str = Field(default="matrix", min_length=1)
    #: the environment variable holding the passphrase that encrypts the key store (optional)
    store_passphrase_env: str = Field(
        default="MATRIX_STORE_PASSPHRASE", min_length=1, json_schema_extra=SECRET_ENV
    )
    #: which invitations the bot accepts: ``any``, ``allowlist`` (``allowed_inviters``) or ``none``
    invite_policy: Literal["any", "allowlist", "none"] = "any"
    #: ``@user:server`` (that user) or ``server`` (everyone on that homeserver)
    allowed_inviters: list[str] = Field(default_factory=list)
    #: where answers go: ``follow`` the command's thread, ``always`` start one, ``never`` (room)
    thread: Literal["follow", "always", "never"] = "follow"
    #: offer a reply's follow-up commands (e.g. V5 re-rolls) as reactions to press
    buttons: bool = True
    #: show "coterie is typing…" while a command takes longer than ``typing_delay`` seconds
    typing: bool = True
    typing_delay: float = Field(default=0.5, ge=0, le=60)
    #: seconds the homeserver may hold a sync request open (long polling)
    sync_timeout: float = Field(default=30.0, ge=1, le=300)
    #: seconds one API request (other than sync and uploads) may take
    request_timeout: float = Field(default=30.0, ge=1, le=600)
    #: reconnect back-off: the first wait and the longest wait, in seconds (doubling between)
    reconnect_initial: float = Field(default=1.0, gt=0, le=60)
    reconnect_max: float = Field(default=60.0, gt=0, le=3600)
    #: commands older than this (seconds) when the bot sees them are not answered
    max_event_age: float = Field(default=600.0, ge=1, le=7 * 24 * 3600)
    #: after an absence: how many events per room the bot reads back (``/messages``) to where it
    #: left off; older ones (and commands older than ``max_event_age``) are named in one notice
    catch_up_limit: int = Field(default=1000, ge=0, le=100_000)
    #: seconds a reply's reaction buttons can be pressed; then the bot takes them back
    button_ttl: float = Field(default=24 * 3600.0, ge=1, le=7 * 24 * 3600)

    @field_validator("homeserver")
    @classmethod
    def _homeserver(cls, value: str) -> str:
        if not re.fullmatch(r"https?://[^\s/?#]+(/[^\s?#]*)?", value):
            raise ValueError("must be an http(s) URL, e.g. https://matrix.example.org")
        return value.rstrip("/")

    @field_validator("user_id")
    @classmethod
    def _user_id(cls, value: str) -> str:
        if not USER_ID.fullmatch(value):
            raise ValueError(f"{value!r} is not a Matrix user id, e.g. @coterie:example.org")
        return value

    @field_validator("access_token_env", "password_env", "store_passphrase_env")
    @classmethod
    def _env_name(cls, value: str) -> str:
        if not _ENV_NAME.fullmatch(value):
            raise ValueError(
                f"{value!r} is not an environment variable name; give the NAME of the variable "
                "that holds the secret, never the secret itself"
            )
        return value

    @field_validator("allowed_inviters")
    @classmethod
    def _inviters(cls, value: list[str]) -> list[str]:
        for entry in value:
            if not (USER_ID.fullmatch(entry) or SERVER_NAME.fullmatch(entry.lstrip(":"))):
                raise ValueError(
                    f"{entry!r} is neither a user id (@name:server) nor a server name (example.org)"
                )
        return value

    @model_validator(mode="after")
    def _consistent(self) -> MatrixSettings:
        if self.reconnect_max < self.reconnect_initial:
            raise ValueError(
                f"reconnect_max: {self.reconnect_max:g} is shorter than reconnect_initial "
                f"({self.reconnect_initial:g})"
            )
        if self.invite_policy == "allowlist" and not self.allowed_inviters:
            raise ValueError(
                "allowed_inviters: the allowlist policy needs at least one entry "
                '(e.g. ["@gm:example.org", "example.org"]); use invite_policy = "none" to '
                "refuse every invitation"
            )
        return self

    @classmethod
    def from_table(cls, table: Mapping[str, Any]) -> MatrixSettings:
        """Validate a config table; a problem is a :class:`ConfigError` naming the key."""
        return validate_table(cls, table, WHERE, missing=MISSING_HINTS)

    def may_invite(self, inviter: str) -> bool:
        """Whether the bot accepts an invitation from ``inviter`` (a user id)."""
        if self.invite_policy == "any":
            return True
        if self.invite_policy == "none":
            return False
        server = inviter.split(":", 1)[1] if ":" in inviter else ""
        for entry in self.allowed_inviters:
            if entry.startswith("@"):
                if entry == inviter:
                    return True
            elif entry.lstrip(":").lower() == server.lower():
                return True
        return False

    def store_directory(self, data_dir: str | Path) -> Path:
        """``store_path`` resolved against the config's ``data_dir``."""
        path = Path(self.store_path).expanduser()
        return path if path.is_absolute() else Path(data_dir) / path


@dataclass(frozen=True)
class Credentials:
    """The secrets, read from the environment. Never printed: ``repr`` shows only which exist."""

    access_token: str | None = None
    password: str | None = None
    store_passphrase: str | None = None

    def __repr__(self) -> str:
        present = [
            name
            for name, value in (
                ("access_token", self.access_token),
                ("password", self.password),
                ("store_passphrase", self.store_passphrase),
            )
            if value
        ]
        return f"Credentials({', '.join(present)})"


def read_credentials(
    settings: MatrixSettings, environ: Mapping[str, str] | None = None
) -> Credentials:
    """The access token or, without one, the password, from the variables the settings name.
    Neither being set is a :class:`ConfigError` naming both keys and variables."""
    env = os.environ if environ is None else environ
    token = env.get(settings.access_token_env, "").strip()
    password = env.get(settings.password_env, "")
    passphrase = env.get(settings.store_passphrase_env, "") or None
    if token:
        return Credentials(access_token=token, store_passphrase=passphrase)
    if password:
        return Credentials(password=password, store_passphrase=passphrase)
    raise ConfigError(
        f"{WHERE}.access_token_env / {WHERE}.password_env: neither "
        f"{settings.access_token_env} nor {settings.password_env} is set; one of them must hold "
        f"the access token or the password of {settings.user_id}"
    )
