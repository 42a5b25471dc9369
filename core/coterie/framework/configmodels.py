"""The configuration's pydantic models: what a config file may say, validated strictly, every error
naming the key (:func:`coterie.framework.config.parse_config`). Imported only when a document needs
them: :mod:`coterie.framework.configbase` reads an ordinary config file without pydantic."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator

from coterie.framework.configbase import (
    DATABASE_URL_ENV,
    HARD_MAX_DICE,
    ConfigMethods,
    prefix_is_symbols,
    refuse_secrets,
    url_has_password,
)


class _Strict(BaseModel):
    # strict: a value must already have the key's type (TOML gives real types): ``true`` is not
    # the number 1 and ``"10"`` is not 10; only an integer is accepted where a float is expected
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class RateLimits(_Strict):
    """Token buckets per user and per room for commands to the bot (``[limits.rate]``)."""

    enabled: bool = True
    #: commands a user may send in a row; the bucket then refills at ``user_per_minute``
    user_burst: int = Field(default=10, ge=1, le=10_000)
    user_per_minute: float = Field(default=20.0, gt=0, le=100_000)
    #: the same for a room (shared by everyone in it)
    room_burst: int = Field(default=30, ge=1, le=100_000)
    room_per_minute: float = Field(default=60.0, gt=0, le=1_000_000)
    #: tokens a command costs (default 1), e.g. ``{ odds = 2 }``
    command_cost: dict[str, int] = Field(default_factory=dict)
    #: platforms not limited (a terminal room has one person in it)
    exempt_platforms: list[str] = Field(default_factory=lambda: ["console"])
    #: buckets kept per table (least recently used dropped first): memory stays bounded
    max_tracked: int = Field(default=10_000, ge=10, le=10_000_000)

    @field_validator("command_cost")
    @classmethod
    def _costs(cls, value: dict[str, int]) -> dict[str, int]:
        for name, cost in value.items():
            if not 0 <= cost <= 1000:
                raise ValueError(f"{name}: a cost is between 0 and 1000 tokens")
        return value


class Limits(_Strict):
    """Limits applied to every command (see ``docs/configuration.md``)."""

    max_dice: int = Field(default=100, ge=1, le=HARD_MAX_DICE, description="dice in one roll")
    max_message_length: int = Field(
        default=2000, ge=16, le=100_000, description="characters in a message"
    )
    max_comment_length: int = Field(
        default=300, ge=0, le=10_000, description="characters in a # comment"
    )
    max_rolls_per_message: int = Field(default=10, ge=1, le=100, description="rolls separated by ;")
    max_options: int = Field(default=20, ge=1, le=200, description="keyword options in one command")
    max_reply_length: int = Field(
        default=60_000, ge=200, le=1_000_000, description="characters in a reply's plain text"
    )
    max_extended_per_room: int = Field(
        default=10, ge=1, le=1000, description="extended actions running at once in one room"
    )
    command_timeout: float = Field(
        default=20.0,
        ge=0.1,
        le=3600,
        description="seconds a command may run; then it is stopped and its changes dropped",
    )
    loop_block_limit: float = Field(
        default=0.5,
        ge=0.05,
        le=60,
        description="seconds a third-party plugin's command may hold up the event loop",
    )
    block_cooldown: float = Field(
        default=60.0,
        ge=0.1,
        le=86_400,
        description="seconds a plugin's commands are paused after it held up the event loop",
    )
    shutdown_grace: float = Field(
        default=10.0,
        ge=0,
        le=600,
        description="seconds coterie run waits, on SIGINT or SIGTERM, for commands in flight",
    )
    rate: RateLimits = Field(default_factory=lambda: RateLimits())


class LoggingConfig(_Strict):
    """How ``coterie run`` and ``coterie chat`` log (``[logging]``)."""

    #: ``text`` (one readable line) or ``json`` (one JSON object per line)
    format: str = Field(default="text", pattern=r"^(text|json)$")
    #: overrides the top-level ``log_level`` when set
    level: str | None = Field(default=None, pattern=r"^(DEBUG|INFO|WARNING|ERROR)$")
    #: more environment variables whose values are secrets to redact from logs
    redact_env: list[str] = Field(default_factory=list)


class RoomConfig(_Strict):
    """Settings of a room: ``[defaults]`` for every room, ``[rooms."platform:id"]`` for one."""

    variant: str | None = None
    prefix: str | None = Field(default=None, min_length=1, max_length=3)
    default_difficulty: int | None = Field(default=None, ge=0, le=30)
    house_rules: dict[str, bool | int] = Field(default_factory=dict)
    #: platform user ids of the room's Storytellers (besides whoever runs ``!storyteller claim``)
    storytellers: list[str] = Field(default_factory=list, max_length=50)

    @field_validator("prefix")
    @classmethod
    def _prefix_symbols(cls, value: str | None) -> str | None:
        if value is not None and not prefix_is_symbols(value):
            raise ValueError("a prefix is made of symbols such as ! or ?, without spaces")
        return value


class PluginsConfig(_Strict):
    """Which installed plugins (entry points in the ``coterie`` group) to load."""

    enable: list[str] = Field(default_factory=lambda: ["*"])
    #: per-plugin settings, ``[plugins.settings.NAME]``
    settings: dict[str, dict[str, Any]] = Field(default_factory=dict)

    @field_validator("settings")
    @classmethod
    def _settings(cls, value: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        for name, table in value.items():
            refuse_secrets(table, name)
        return value


class StateConfig(_Strict):
    """``[state]``: where room settings, sessions and the roll log live (``docs/storage.md``)."""

    #: a SQLAlchemy URL (``sqlite+aiosqlite:///path``, ``postgresql+asyncpg://user@host/db``) or
    #: ``memory://``; unset: the SQLite file ``coterie.db`` under ``data_dir``
    url: str | None = Field(default=None, min_length=1)

    @field_validator("url")
    @classmethod
    def _no_password(cls, value: str | None) -> str | None:
        if value is not None and (url_has_password(value)):
            raise ValueError(
                "a password is never read from the config file; leave it out of the URL "
                f"and put the whole URL in the environment variable {DATABASE_URL_ENV} instead "
                "(or use ~/.pgpass / PGPASSWORD)"
            )
        return value


class OpsConfig(_Strict):
    """``[ops]``: the health and metrics endpoint of ``coterie run`` (``/healthz``, ``/metrics``;
    ``docs/deploy.md``). Off unless enabled; it listens on loopback unless told otherwise."""

    enabled: bool = False
    host: str = Field(default="127.0.0.1", min_length=1)
    #: ``0`` picks a free port; several workers: ``$COTERIE_PORT_OFFSET`` is added to it
    port: int = Field(default=9464, ge=0, le=65535)


class Config(_Strict, ConfigMethods):
    """The whole configuration file."""

    plugins: PluginsConfig = Field(default_factory=PluginsConfig)
    defaults: RoomConfig = Field(default_factory=lambda: RoomConfig(variant="revised", prefix="!"))
    rooms: dict[str, RoomConfig] = Field(default_factory=dict)
    adapters: dict[str, dict[str, Any]] = Field(default_factory=dict)
    limits: Limits = Field(default_factory=lambda: Limits())
    data_dir: str = "data"
    log_level: str = Field(default="INFO", pattern=r"^(DEBUG|INFO|WARNING|ERROR)$")
    state: StateConfig = Field(default_factory=lambda: StateConfig())
    ops: OpsConfig = Field(default_factory=lambda: OpsConfig())
    #: the directory of the config file (relative paths are resolved against it); ``None``:
    #: the built-in defaults or a parsed table, resolved against the working directory
    _base_dir: Path | None = PrivateAttr(default=None)
    logging: LoggingConfig = Field(default_factory=lambda: LoggingConfig())

    @field_validator("adapters")
    @classmethod
    def _adapters(cls, value: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        for name, table in value.items():
            if not isinstance(table, dict):
                raise ValueError(f"[adapters.{name}] must be a table")
            enabled = table.get("enabled", False)
            if not isinstance(enabled, bool):
                raise ValueError(f"{name}.enabled: must be true or false")
            refuse_secrets(table, name)
        return value
