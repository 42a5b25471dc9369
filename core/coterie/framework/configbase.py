"""The configuration without pydantic: its constants, what the config classes share, and the quick
check that reads an ordinary config file at start without importing pydantic (~40% of a start).

:func:`quick_config` accepts only what the pydantic models of :mod:`coterie.framework.configmodels`
accept, and gives the same values, as plain read-only objects (:class:`Plain`): anything it cannot
vouch for (a wrong type, a value out of range, an unknown key, a value TOML types it does not
expect) returns ``None``, and :func:`coterie.framework.config.parse_config` then validates the
document with pydantic, whose error messages the user sees. The field table here repeats the
models' types, defaults and bounds; ``tests/test_config_quick.py`` checks it against the models,
and the two paths against each other on generated documents.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

#: The hard cap on dice in one roll, whatever the config says.
HARD_MAX_DICE = 1000
#: the environment variable that overrides ``[state] url`` (and may hold a password)
DATABASE_URL_ENV = "COTERIE_DATABASE_URL"
#: the environment variable naming the data directory when no config file is used
DATA_DIR_ENV = "COTERIE_DATA_DIR"
#: the SQLite file of the default store, under ``data_dir``
DEFAULT_DATABASE = "coterie.db"
#: the rule set of a room whose config names none ([defaults] variant)
DEFAULT_VARIANT = "revised"
#: ``json_schema_extra`` of a settings field whose value names the environment variable that holds
#: a secret (a token, a password): the logs redact that variable's value, whatever its length
SECRET_ENV: dict[str, Any] = {"secret_env": True}

SECRET_KEY = re.compile(r"(token|password|secret|api_key)$", re.IGNORECASE)
URL_PASSWORD = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^/@?#]*:[^/@?#]+@")
LEVEL = re.compile(r"^(DEBUG|INFO|WARNING|ERROR)$")
LOG_FORMAT = re.compile(r"^(text|json)$")


def refuse_secrets(table: Any, where: str) -> None:
    """Refuse a secret-looking key anywhere in a free-form table (nested tables included)."""
    if isinstance(table, list):
        for item in table:
            refuse_secrets(item, where)
    if not isinstance(table, dict):
        return
    for key, item in table.items():
        if SECRET_KEY.search(str(key)):
            raise ValueError(
                f"{where}.{key}: secrets are never read from the config file; "
                f"put the name of the environment variable that holds it in {key}_env instead"
            )
        refuse_secrets(item, f"{where}.{key}")


def url_has_password(value: str) -> bool:
    return bool(URL_PASSWORD.match(value) or re.search(r"[?&]password=", value, re.IGNORECASE))


def prefix_is_symbols(value: str) -> bool:
    return not any(ch.isalnum() or ch.isspace() for ch in value)


class ConfigMethods:
    """What the whole configuration offers besides its keys (the pydantic ``Config`` and the
    quick path's :class:`Plain` alike)."""

    if TYPE_CHECKING:  # (no annotations at run time: pydantic would take them for fields)
        defaults: Any
        adapters: dict[str, dict[str, Any]]
        data_dir: str
        state: Any
        _base_dir: Path | None

        @property
        def model_fields_set(self) -> set[str]: ...

    @property
    def default_variant(self) -> str:
        return str(self.defaults.variant or DEFAULT_VARIANT)

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
            return str(url)
        return f"sqlite+aiosqlite:///{(self.data_path() / DEFAULT_DATABASE).absolute()}"


class Plain:
    """A table of the configuration read by the quick path: its keys as read-only attributes."""

    def __init__(self, values: Mapping[str, Any], given: set[str]) -> None:
        object.__setattr__(self, "_values", dict(values))
        object.__setattr__(self, "model_fields_set", given)
        object.__setattr__(self, "_base_dir", None)

    def __getattr__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value: Any) -> None:
        if name != "_base_dir":
            raise AttributeError(f"the configuration is read-only ({name})")
        object.__setattr__(self, name, value)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._values!r})"

    def dump(self) -> dict[str, Any]:
        """The values as plain data, nested tables included (what ``model_dump`` gives)."""
        return {key: _dumped(value) for key, value in self._values.items()}

    def __eq__(self, other: object) -> bool:
        """Equal to the same values, read by this path or validated by pydantic."""
        dump = getattr(other, "dump", None) or getattr(other, "model_dump", None)
        if dump is None:
            return NotImplemented
        return bool(self.dump() == dump()) and self._base_dir == getattr(other, "_base_dir", None)

    def __hash__(self) -> int:
        return hash(repr(self.dump()))


def _dumped(value: Any) -> Any:
    if isinstance(value, Plain):
        return value.dump()
    if isinstance(value, dict):
        return {key: _dumped(item) for key, item in value.items()}
    return value


class PlainConfig(Plain, ConfigMethods):
    """The whole configuration, read by the quick path."""


class Unsure(Exception):
    """The quick path cannot vouch for this value: pydantic decides."""


Check = Callable[[Any], Any]


def _int(low: int | None = None, high: int | None = None, *, optional: bool = False) -> Check:
    def check(value: Any) -> Any:
        if value is None and optional:
            return None
        if type(value) is not int or (low is not None and value < low):
            raise Unsure
        if high is not None and value > high:
            raise Unsure
        return value

    return check


def _float(low: float, high: float, *, above: bool = False) -> Check:
    def check(value: Any) -> Any:
        if type(value) not in (int, float) or not math.isfinite(value):
            raise Unsure
        if value < low or value > high or (above and value <= low):
            raise Unsure
        return float(value)

    return check


def _bool(value: Any) -> Any:
    if type(value) is not bool:
        raise Unsure
    return value


def _str(
    pattern: re.Pattern[str] | None = None, *, optional: bool = False, min_length: int = 0
) -> Check:
    def check(value: Any) -> Any:
        if value is None and optional:
            return None
        if type(value) is not str or len(value) < min_length:
            raise Unsure
        if pattern is not None and not pattern.search(value):
            raise Unsure
        return value

    return check


def _strings(max_items: int | None = None) -> Check:
    def check(value: Any) -> Any:
        if type(value) is not list or any(type(item) is not str for item in value):
            raise Unsure
        if max_items is not None and len(value) > max_items:
            raise Unsure
        return list(value)

    return check


def _dict_of(item: Check) -> Check:
    def check(value: Any) -> Any:
        if type(value) is not dict or any(type(key) is not str for key in value):
            raise Unsure
        return {key: item(v) for key, v in value.items()}

    return check


def _table(value: Any) -> Any:
    if type(value) is not dict:
        raise Unsure
    return value


def _house_rule(value: Any) -> Any:
    if type(value) not in (bool, int):
        raise Unsure
    return value


def _cost(value: Any) -> Any:
    if type(value) is not int or not 0 <= value <= 1000:
        raise Unsure
    return value


def _prefix(value: Any) -> Any:
    if value is None:
        return None
    if type(value) is not str or not 1 <= len(value) <= 3 or not prefix_is_symbols(value):
        raise Unsure
    return value


def _url(value: Any) -> Any:
    if value is None:
        return None
    if type(value) is not str or not value or url_has_password(value):
        raise Unsure
    return value


def _free_tables(value: Any) -> Any:
    tables = _dict_of(_table)(value)
    try:
        for name, table in tables.items():
            refuse_secrets(table, name)
    except ValueError:
        raise Unsure from None
    return tables


def _adapter_tables(value: Any) -> Any:
    tables = _free_tables(value)
    if any(type(table.get("enabled", False)) is not bool for table in tables.values()):
        raise Unsure
    return tables


#: each table's keys: (check, default factory); a nested table's check is its ``_section``
Fields = dict[str, tuple[Check, Callable[[], Any]]]

RATE: Fields = {
    "enabled": (_bool, lambda: True),
    "user_burst": (_int(1, 10_000), lambda: 10),
    "user_per_minute": (_float(0, 100_000, above=True), lambda: 20.0),
    "room_burst": (_int(1, 100_000), lambda: 30),
    "room_per_minute": (_float(0, 1_000_000, above=True), lambda: 60.0),
    "command_cost": (_dict_of(_cost), dict),
    "exempt_platforms": (_strings(), lambda: ["console"]),
    "max_tracked": (_int(10, 10_000_000), lambda: 10_000),
}
LIMITS: Fields = {
    "max_dice": (_int(1, HARD_MAX_DICE), lambda: 100),
    "max_message_length": (_int(16, 100_000), lambda: 2000),
    "max_comment_length": (_int(0, 10_000), lambda: 300),
    "max_rolls_per_message": (_int(1, 100), lambda: 10),
    "max_options": (_int(1, 200), lambda: 20),
    "max_reply_length": (_int(200, 1_000_000), lambda: 60_000),
    "max_extended_per_room": (_int(1, 1000), lambda: 10),
    "command_timeout": (_float(0.1, 3600), lambda: 20.0),
    "loop_block_limit": (_float(0.05, 60), lambda: 0.5),
    "block_cooldown": (_float(0.1, 86_400), lambda: 60.0),
    "shutdown_grace": (_float(0, 600), lambda: 10.0),
}
LOGGING: Fields = {
    "format": (_str(LOG_FORMAT), lambda: "text"),
    "level": (_str(LEVEL, optional=True), lambda: None),
    "redact_env": (_strings(), list),
}
ROOM: Fields = {
    "variant": (_str(optional=True), lambda: None),
    "prefix": (_prefix, lambda: None),
    "default_difficulty": (_int(0, 30, optional=True), lambda: None),
    "house_rules": (_dict_of(_house_rule), dict),
    "storytellers": (_strings(50), list),
}
PLUGINS: Fields = {
    "enable": (_strings(), lambda: ["*"]),
    "settings": (_free_tables, dict),
}
STATE: Fields = {"url": (_url, lambda: None)}
OPS: Fields = {
    "enabled": (_bool, lambda: False),
    "host": (_str(min_length=1), lambda: "127.0.0.1"),
    "port": (_int(0, 65535), lambda: 9464),
}


def _section(fields: Fields, **defaults: Any) -> Check:
    """The check of a table of ``fields``; ``defaults`` are given keys of its default value."""

    def check(value: Any) -> Plain:
        if type(value) is not dict or not set(value) <= set(fields):
            raise Unsure
        values = {key: fields[key][0](item) for key, item in value.items()}
        for key, (_, default) in fields.items():
            if key not in values:
                values[key] = default()
        return Plain(values, set(value))

    def default() -> Plain:
        values = {key: factory() for key, (_, factory) in fields.items()}
        values.update(defaults)
        return Plain(values, set(defaults))

    check.default = default  # type: ignore[attr-defined]
    return check


RATE_SECTION = _section(RATE)
LIMITS["rate"] = (RATE_SECTION, RATE_SECTION.default)  # type: ignore[attr-defined]
_LIMITS = _section(LIMITS)
_ROOM = _section(ROOM)
_DEFAULTS = _section(ROOM, variant=DEFAULT_VARIANT, prefix="!")
_PLUGINS = _section(PLUGINS)
_STATE = _section(STATE)
_OPS = _section(OPS)
_LOGGING = _section(LOGGING)

CONFIG: Fields = {
    "plugins": (_PLUGINS, _PLUGINS.default),  # type: ignore[attr-defined]
    "defaults": (_ROOM, _DEFAULTS.default),  # type: ignore[attr-defined]
    "rooms": (_dict_of(_ROOM), dict),
    "adapters": (_adapter_tables, dict),
    "limits": (_LIMITS, _LIMITS.default),  # type: ignore[attr-defined]
    "data_dir": (_str(), lambda: "data"),
    "log_level": (_str(LEVEL), lambda: "INFO"),
    "state": (_STATE, _STATE.default),  # type: ignore[attr-defined]
    "ops": (_OPS, _OPS.default),  # type: ignore[attr-defined]
    "logging": (_LOGGING, _LOGGING.default),  # type: ignore[attr-defined]
}


def quick_config(data: Mapping[str, Any]) -> PlainConfig | None:
    """The configuration of a parsed TOML document, read without pydantic; ``None`` when this
    path cannot vouch for every value (then pydantic validates it and says what is wrong)."""
    if type(data) is not dict or not set(data) <= set(CONFIG):
        return None
    try:
        values = {key: CONFIG[key][0](item) for key, item in data.items()}
    except Unsure:
        return None
    for key, (_, default) in CONFIG.items():
        if key not in values:
            values[key] = default()
    return PlainConfig(values, set(data))
