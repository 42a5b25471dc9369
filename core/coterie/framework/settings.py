"""Plugin settings, declared once and checked: the schema of ``[plugins.settings.NAME]``.

A plugin declares its settings with the ``coterie_settings`` hook — a list of :class:`Setting`
(name, type, default, help, and optionally ``required``, ``choices``, a range). The app checks
each loaded plugin's table against its declaration when it is built — so at start and in
``coterie config check`` — and reports **every** problem at once in one ``ConfigError`` (one line
each: an unknown key with the closest declared one, a missing required key, a wrong type, a
value out of range or not among the choices). ``app.plugin_settings[NAME]`` then holds the table
with the declared defaults filled in. A plugin that declares nothing keeps its table unchecked.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from coterie.errors import ConfigError
from coterie.framework.grammar import suggest
from coterie.records import dataclass

_TYPE_WORDS = {bool: "true or false", int: "a whole number", float: "a number", str: "a string"}


@dataclass(frozen=True)
class Setting:
    """One key of a plugin's ``[plugins.settings.NAME]`` table."""

    name: str
    type: type
    default: Any = None
    help: str = ""
    required: bool = False
    choices: tuple[Any, ...] = ()
    minimum: float | None = None
    maximum: float | None = None

    def __post_init__(self) -> None:
        if self.type not in (*_TYPE_WORDS, list):
            raise ValueError(f"setting {self.name}: type is one of bool, int, float, str, list")

    def problem(self, value: Any) -> str | None:
        """What is wrong with ``value`` for this setting, or ``None``."""
        kind = self.type
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if (kind is int and isinstance(value, bool)) or not isinstance(value, kind):
            word = _TYPE_WORDS.get(kind, "a list")
            return f"is {word}, not {value!r}"
        if self.choices and value not in self.choices:
            return f"is one of {', '.join(map(repr, self.choices))}, not {value!r}"
        if isinstance(value, int | float) and not isinstance(value, bool):
            low, high = self.minimum, self.maximum
            if (low is not None and value < low) or (high is not None and value > high):
                return f"goes from {low} to {high}, not {value!r}"
        return None


def check_settings(
    plugin: str, schema: Sequence[Setting], table: Mapping[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    """``table`` checked against ``schema``: the table with defaults filled in, and every
    problem (``plugins.settings.PLUGIN.KEY: ...``), in the table's order then the schema's."""
    where = f"plugins.settings.{plugin}"
    declared = {setting.name: setting for setting in schema}
    problems: list[str] = []
    for key, value in table.items():
        setting = declared.get(key)
        if setting is None:
            close = suggest(key, list(declared))
            hint = f"did you mean {close!r}?" if close else f"it declares {', '.join(declared)}"
            problems.append(f"{where}.{key}: {plugin} has no such setting ({hint})")
            continue
        problem = setting.problem(value)
        if problem:
            problems.append(f"{where}.{key}: {problem}")
    for setting in schema:
        if setting.required and setting.name not in table:
            problems.append(f"{where}.{setting.name}: missing ({setting.help or 'required'})")
    merged = {s.name: s.default for s in schema if not s.required}
    merged.update(table)
    return merged, problems


def check_all(
    schemas: Mapping[str, Sequence[Setting]], tables: Mapping[str, Mapping[str, Any]]
) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Every declaring plugin's table checked: the merged tables and all the problems."""
    merged: dict[str, dict[str, Any]] = {}
    problems: list[str] = []
    for plugin, schema in schemas.items():
        merged[plugin], found = check_settings(plugin, schema, tables.get(plugin, {}))
        problems += found
    return merged, problems


def check_plugin_settings(
    listed: Sequence[tuple[str, Sequence[Any]]],
    tables: Mapping[str, Mapping[str, Any]],
    bad: Callable[[str, str, str], None],
) -> dict[str, dict[str, Any]]:
    """What the app does with the ``coterie_settings`` results (``(plugin, settings)`` pairs):
    report a non-:class:`Setting` item as the plugin's problem (``bad``), check every table,
    and raise one :class:`ConfigError` listing every problem; else return all the tables, the
    declaring plugins' with their defaults."""
    schemas: dict[str, list[Setting]] = {}
    for plugin, declared in listed:
        good = [s for s in declared if isinstance(s, Setting)]
        if len(good) != len(declared):
            bad(plugin, "coterie_settings", "declare settings as Setting records")
        schemas[plugin] = good
    merged, problems = check_all(schemas, tables)
    if problems:
        raise ConfigError(
            f"{len(problems)} problem(s) in plugin settings:\n  " + "\n  ".join(problems)
        )
    return {**{name: dict(table) for name, table in tables.items()}, **merged}
