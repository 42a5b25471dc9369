"""The TOML configuration, validated; every error names the key and the problem.

Secrets (tokens, passwords) never come from this file: adapters name environment variables
(``*_env`` keys) and a secret-looking key in the file is refused.
"""

from __future__ import annotations

import contextlib
import copy
import difflib
import os
import re
import tomllib
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator

from coterie.errors import ConfigError

#: The hard cap on dice in one roll, whatever the config says.
HARD_MAX_DICE = 1000

_SECRET_KEY = re.compile(r"(token|password|secret|api_key)$", re.IGNORECASE)


def _refuse_secrets(table: Any, where: str) -> None:
    """Refuse a secret-looking key anywhere in a free-form table (nested tables included)."""
    if isinstance(table, list):
        for item in table:
            _refuse_secrets(item, where)
    if not isinstance(table, dict):
        return
    for key, item in table.items():
        if _SECRET_KEY.search(str(key)):
            raise ValueError(
                f"{where}.{key}: secrets are never read from the config file; "
                f"put the name of the environment variable that holds it in {key}_env instead"
            )
        _refuse_secrets(item, f"{where}.{key}")


#: ``json_schema_extra`` of a settings field whose value names the environment variable that holds
#: a secret (a token, a password): the logs redact that variable's value, whatever its length
SECRET_ENV: dict[str, Any] = {"secret_env": True}


def secret_env_fields(model: type[BaseModel]) -> list[str]:
    """The fields of a settings model marked :data:`SECRET_ENV`."""
    return [
        name
        for name, info in model.model_fields.items()
        if isinstance(info.json_schema_extra, dict) and info.json_schema_extra.get("secret_env")
    ]


def secret_env_names_of(model: type[BaseModel], table: Mapping[str, Any]) -> list[str]:
    """The environment variables a settings table names in its secret fields (the table's value,
    else the field's default)."""
    names = []
    for name in secret_env_fields(model):
        value = table.get(name, model.model_fields[name].default)
        if isinstance(value, str) and value:
            names.append(value)
    return names


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
        if value is not None and (any(ch.isalnum() or ch.isspace() for ch in value)):
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
            _refuse_secrets(table, name)
        return value


#: the environment variable that overrides ``[state] url`` (and may hold a password)
DATABASE_URL_ENV = "COTERIE_DATABASE_URL"
#: the environment variable naming the data directory when no config file is used
DATA_DIR_ENV = "COTERIE_DATA_DIR"
#: the SQLite file of the default store, under ``data_dir``
DEFAULT_DATABASE = "coterie.db"
_URL_PASSWORD = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^/@?#]*:[^/@?#]+@")


class StateConfig(_Strict):
    """``[state]``: where room settings, sessions and the roll log live (``docs/storage.md``)."""

    #: a SQLAlchemy URL (``sqlite+aiosqlite:///path``, ``postgresql+asyncpg://user@host/db``) or
    #: ``memory://``; unset: the SQLite file ``coterie.db`` under ``data_dir``
    url: str | None = Field(default=None, min_length=1)

    @field_validator("url")
    @classmethod
    def _no_password(cls, value: str | None) -> str | None:
        if value is not None and (
            _URL_PASSWORD.match(value) or re.search(r"[?&]password=", value, re.IGNORECASE)
        ):
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


class Config(_Strict):
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
            _refuse_secrets(table, name)
        return value

    @property
    def default_variant(self) -> str:
        return self.defaults.variant or "revised"

    def enabled_adapters(self) -> list[str]:
        return [name for name, table in self.adapters.items() if table.get("enabled", False)]

    def data_path(self) -> Path:
        """Where coterie keeps its files (the SQLite store, chart images): ``data_dir``, a
        relative one under the config file's directory; without a config file (and no
        ``data_dir`` given) the platform's user data directory, e.g. ``~/.local/share/coterie``
        (``$COTERIE_DATA_DIR`` overrides it)."""
        if self._base_dir is None and "data_dir" not in self.model_fields_set:
            override = os.environ.get(DATA_DIR_ENV)
            if override:
                return Path(override).expanduser()
            import platformdirs

            return Path(platformdirs.user_data_dir("coterie", appauthor=False))
        path = Path(self.data_dir).expanduser()
        if path.is_absolute() or self._base_dir is None:
            return path
        return self._base_dir / path

    def database_url(self) -> str:
        """The state store's URL: ``$COTERIE_DATABASE_URL``, else ``[state] url``, else the
        SQLite file ``coterie.db`` under :meth:`data_path` (not created here)."""
        url = os.environ.get(DATABASE_URL_ENV)
        if url:
            return url
        url = self.state.url
        if url:  # a relative SQLite file in the config file is under its directory too
            scheme, sep, rest = url.partition(":///")
            relative = sep and scheme.split("+")[0] == "sqlite" and not rest.startswith("/")
            if relative and self._base_dir is not None and rest and not rest.startswith(":"):
                return f"{scheme}:///{self._base_dir / rest}"
            return url
        return f"sqlite+aiosqlite:///{(self.data_path() / DEFAULT_DATABASE).absolute()}"


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_KEYED_MESSAGE = re.compile(r"([A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*): (.*)", re.DOTALL)


def _key_path(parts: Iterable[object]) -> str:
    """``rooms."console:table".variant``: TOML's dotted-key spelling of a location."""
    return ".".join(str(part) if _BARE_KEY.fullmatch(str(part)) else f'"{part}"' for part in parts)


def _table_model(model: Any, parts: Iterable[object]) -> Any:
    """The model class of the table at ``parts`` (through ``dict[str, Model]`` fields too)."""
    for part in parts:
        fields = getattr(model, "model_fields", None)
        if fields is not None:
            model = fields[part].annotation if part in fields else None
        elif get_origin(model) is dict:
            model = get_args(model)[1]
        else:
            return None
    return model


def _format(
    error: ValidationError,
    model: type[BaseModel],
    *,
    prefix: str = "",
    missing: Mapping[str, str] | None = None,
) -> str:
    lines: list[str] = []
    for item in error.errors():
        parts = [*(prefix.split(".") if prefix else []), *item["loc"]]
        location = _key_path(parts) or "(top level)"
        message = item["msg"]
        if item["type"] == "extra_forbidden":
            message = "unknown key"
            parent = _table_model(model, item["loc"][:-1])
            known = list(getattr(parent, "model_fields", {}) or {})
            close = difflib.get_close_matches(str(item["loc"][-1]), known, n=1)
            if close:
                message += f" (did you mean {close[0]!r}?)"
            elif known:
                message += f" (known keys: {', '.join(known)})"
        elif item["type"] in ("int_type", "float_type") and isinstance(item.get("input"), bool):
            word = "true" if item["input"] else "false"
            kind = "a whole number" if item["type"] == "int_type" else "a number"
            message = f"must be {kind}, not {word}"
        elif item["type"] == "missing":
            message = "missing: " + (missing or {}).get(str(item["loc"][-1]), "required")
        elif message.startswith("Value error, "):
            message = message.removeprefix("Value error, ")
            keyed = _KEYED_MESSAGE.fullmatch(message)
            if keyed:  # a validator named the key inside a free-form table
                location, message = f"{location}.{keyed.group(1)}", keyed.group(2)
        lines.append(f"{location}: {message}")
    return "\n".join(lines)


ModelT = TypeVar("ModelT", bound=BaseModel)


def validate_table(
    model: type[ModelT],
    table: Mapping[str, Any],
    where: str,
    *,
    missing: Mapping[str, str] | None = None,
) -> ModelT:
    """Validate a free-form table of the config (an adapter's or a plugin's settings) with a
    pydantic model. A problem is a :class:`ConfigError` naming the key as ``where.key``, unknown
    keys with the closest known one; ``missing`` gives a hint per required key."""
    try:
        return model.model_validate(dict(table), strict=True)
    except ValidationError as error:
        raise ConfigError(_format(error, model, prefix=where, missing=missing)) from None


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """`` (did you mean 'rooms'?)``, or `` (known: a, b, c)`` when nothing is close, or ``""``."""
    names = sorted(set(known))
    close = difflib.get_close_matches(word, names, n=1)
    if close:
        return f" (did you mean {close[0]!r}?)"
    return f" (known: {', '.join(names)})" if names else ""


class Problems:
    """Every problem of a configuration, gathered instead of stopping at the first: each is one
    line ``key.path: what is wrong (and the fix)``. ``coterie config check`` prints them all;
    checks that find several problems add each, or raise :class:`ConfigError` (one line per
    problem) inside :meth:`gather`."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def __bool__(self) -> bool:
        return bool(self.lines)

    def __len__(self) -> int:
        return len(self.lines)

    def add(self, where: str, message: str) -> None:
        self.lines.append(f"{where}: {message}" if where else message)

    @contextlib.contextmanager
    def gather(self) -> Iterator[None]:
        """Run a check that raises :class:`ConfigError`; its lines become problems."""
        try:
            yield
        except ConfigError as error:
            self.lines.extend(line for line in str(error).splitlines() if line.strip())

    def raise_if_any(self, heading: str | None = None) -> None:
        if self.lines:
            raise ConfigError("\n".join([heading, *self.lines] if heading else self.lines))


def check_config(data: dict[str, Any], problems: Problems) -> Config | None:
    """Validate a parsed TOML document, adding every problem to ``problems``. Returns the
    config, or, when some top-level tables are invalid, the config without them (so that later
    checks still run on the rest), or ``None`` when nothing can be salvaged."""
    try:
        return Config.model_validate(data)
    except ValidationError as error:
        problems.lines.extend(_format(error, Config).splitlines())
        locations = [item["loc"] for item in error.errors() if item["loc"]]
    pruned = copy.deepcopy(data)
    for loc in locations:  # leave out just the bad keys: the rest of their table is still checked
        table: Any = pruned
        for part in loc[:-1]:
            table = table.get(part) if isinstance(table, dict) else None
        if isinstance(table, dict):
            table.pop(loc[-1], None)
    whole_tables = {k: v for k, v in data.items() if k not in {loc[0] for loc in locations}}
    for candidate in (pruned, whole_tables):
        try:
            return Config.model_validate(candidate)
        except ValidationError:
            continue
    return None


def read_toml(path: str | Path) -> dict[str, Any]:
    """A TOML file's document, or a :class:`ConfigError` saying why it can't be read."""
    path = Path(path)
    try:
        raw = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"{path}: cannot read the config file ({error.strerror})") from None
    try:
        return tomllib.loads(raw)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: not valid TOML: {error}") from None


def parse_config(data: dict[str, Any], source: str = "config") -> Config:
    """Validate an already-parsed TOML document."""
    try:
        return Config.model_validate(data)
    except ValidationError as error:
        raise ConfigError(f"{source}: invalid configuration\n{_format(error, Config)}") from None


def load_config(path: str | Path | None) -> Config:
    """Read and validate a TOML file; ``None`` gives the built-in defaults."""
    if path is None:
        return Config()
    path = Path(path)
    config = parse_config(read_toml(path), str(path))
    config._base_dir = path.resolve().parent
    return config
