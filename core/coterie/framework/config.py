"""The TOML configuration, validated; every error names the key and the problem.

Secrets (tokens, passwords) never come from this file: adapters name environment variables
(``*_env`` keys) and a secret-looking key in the file is refused.

The models are pydantic's (:mod:`coterie.framework.configmodels`, importable from here as before:
``Config``, ``Limits``, ...), imported when first used. :func:`load_config` reads an ordinary file
without them (:mod:`coterie.framework.configbase`, ~40% of a start is pydantic's import and model
building); a document that path cannot vouch for is validated by the models, so every error message
is pydantic's, as before.
"""

from __future__ import annotations

import contextlib
import copy
import difflib
import re
import tomllib
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, get_args, get_origin

from coterie.errors import ConfigError
from coterie.framework.configbase import (
    DATA_DIR_ENV,
    DATABASE_URL_ENV,
    DEFAULT_DATABASE,
    HARD_MAX_DICE,
    SECRET_ENV,
    quick_config,
)

if TYPE_CHECKING:
    from pydantic import BaseModel, ValidationError

    from coterie.framework.configmodels import (
        Config,
        Limits,
        LoggingConfig,
        OpsConfig,
        PluginsConfig,
        RateLimits,
        RoomConfig,
        StateConfig,
    )

__all__ = [
    "DATABASE_URL_ENV",
    "DATA_DIR_ENV",
    "DEFAULT_DATABASE",
    "HARD_MAX_DICE",
    "SECRET_ENV",
    "Config",
    "Limits",
    "LoggingConfig",
    "OpsConfig",
    "PluginsConfig",
    "Problems",
    "RateLimits",
    "RoomConfig",
    "StateConfig",
    "check_config",
    "did_you_mean",
    "load_config",
    "parse_config",
    "read_toml",
    "secret_env_fields",
    "secret_env_names_of",
    "validate_table",
]
#: the pydantic models, imported from :mod:`coterie.framework.configmodels` on first use
_MODELS = {
    "Config",
    "Limits",
    "LoggingConfig",
    "OpsConfig",
    "PluginsConfig",
    "RateLimits",
    "RoomConfig",
    "StateConfig",
}


def __getattr__(name: str) -> Any:
    if name in _MODELS:
        from coterie.framework import configmodels

        return getattr(configmodels, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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


ModelT = TypeVar("ModelT", bound="BaseModel")


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
    from pydantic import ValidationError

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
    from pydantic import ValidationError

    from coterie.framework.configmodels import Config

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
    from pydantic import ValidationError

    from coterie.framework.configmodels import Config

    try:
        return Config.model_validate(data)
    except ValidationError as error:
        raise ConfigError(f"{source}: invalid configuration\n{_format(error, Config)}") from None


def load_config(path: str | Path | None) -> Config:
    """Read and validate a TOML file; ``None`` gives the built-in defaults."""
    if path is None:
        return _quick({}) or parse_config({})
    path = Path(path)
    data = read_toml(path)
    config = _quick(data) or parse_config(data, str(path))
    config._base_dir = path.resolve().parent
    return config


def _quick(data: dict[str, Any]) -> Config | None:
    """The document read without pydantic when that path can vouch for it
    (:func:`coterie.framework.configbase.quick_config`: the same values, as plain read-only
    objects that offer what :class:`Config` does)."""
    return quick_config(data)  # type: ignore[return-value]
