"""The quick config path (coterie.framework.configbase) against the pydantic models: it accepts
only what they accept, with the same values; ordinary config files go through it (no pydantic at
start)."""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from coterie.framework import configbase
from coterie.framework.config import load_config, parse_config
from coterie.framework.configbase import Plain, PlainConfig, quick_config
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

TABLES: list[tuple[type[BaseModel], dict[str, Any]]] = [
    (RateLimits, configbase.RATE),
    (Limits, configbase.LIMITS),
    (LoggingConfig, configbase.LOGGING),
    (RoomConfig, configbase.ROOM),
    (PluginsConfig, configbase.PLUGINS),
    (StateConfig, configbase.STATE),
    (OpsConfig, configbase.OPS),
    (Config, configbase.CONFIG),
]


def dumped(value: Any) -> Any:
    if isinstance(value, Plain):
        return value.dump()
    if isinstance(value, BaseModel):
        return value.model_dump()
    return value


def fields_sets(value: Any) -> Any:
    """Which keys were given, table by table (``model_fields_set`` of every nested table)."""
    if isinstance(value, Plain):
        return {
            "": set(value.model_fields_set),
            **{k: fields_sets(v) for k, v in value._values.items()},
        }
    if isinstance(value, BaseModel):
        return {
            "": set(value.model_fields_set),
            **{k: fields_sets(getattr(value, k)) for k in type(value).model_fields},
        }
    if isinstance(value, dict):
        return {k: fields_sets(v) for k, v in value.items()}
    return None


@pytest.mark.parametrize(("model", "fields"), TABLES, ids=lambda x: getattr(x, "__name__", ""))
def test_the_field_table_is_the_models(model: type[BaseModel], fields: dict[str, Any]) -> None:
    assert set(fields) == set(model.model_fields)
    for name, (_, default) in fields.items():
        expected = model.model_fields[name].get_default(call_default_factory=True)
        assert dumped(default()) == dumped(expected), name


def test_defaults_are_the_same() -> None:
    quick = quick_config({})
    assert isinstance(quick, PlainConfig)
    assert quick == Config() and dumped(quick) == Config().model_dump()
    assert fields_sets(quick) == fields_sets(Config())


SCALARS = [
    0,
    1,
    -1,
    2,
    9,
    10,
    16,
    30,
    31,
    50,
    100,
    199,
    200,
    1000,
    1001,
    3600,
    65535,
    65536,
    10_000_000,
    0.0,
    0.04,
    0.05,
    0.1,
    0.5,
    20.5,
    3600.5,
    math.nan,
    math.inf,
    True,
    False,
    "",
    "text",
    "json",
    "xml",
    "INFO",
    "debug",
    "!",
    "?",
    "!!!!",
    "a",
    "! ",
    "revised",
    "sqlite:///x.db",
    "postgresql://u:p@h/db",
    "postgresql://h/db?password=x",
    None,
]
LISTS = [[], ["x"], ["console", "slack"], ["x"] * 51, [1], "x"]
TABLES_ = [
    {},
    {"a": 1},
    {"a": True},
    {"a": 2000},
    {"token": "x"},
    {"a": {"password": 1}},
    {"enabled": "yes"},
    {"enabled": True, "bot_token_env": "T"},
    {"a": [1]},
    5,
]


def values() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.sampled_from(SCALARS),
        st.sampled_from(LISTS),
        st.sampled_from(TABLES_),
        st.dictionaries(st.sampled_from(["a", "b", "token"]), st.sampled_from(TABLES_), max_size=2),
    )


def table(
    fields: dict[str, Any], nested: dict[str, st.SearchStrategy[Any]]
) -> st.SearchStrategy[Any]:
    keys = [*fields, "unknown"]
    return st.dictionaries(
        st.sampled_from(keys),
        st.deferred(lambda: st.one_of(values(), *nested.values())),
        max_size=4,
    ).flatmap(
        lambda d: st.fixed_dictionaries(
            {k: (nested[k] if k in nested else st.just(v)) for k, v in d.items()}
        )
    )


ROOM = table(configbase.ROOM, {})
DOCUMENTS = table(
    configbase.CONFIG,
    {
        "limits": table(configbase.LIMITS, {"rate": table(configbase.RATE, {})}),
        "defaults": ROOM,
        "rooms": st.dictionaries(st.sampled_from(["console:table", "x"]), ROOM, max_size=2),
        "plugins": table(configbase.PLUGINS, {}),
        "logging": table(configbase.LOGGING, {}),
        "state": table(configbase.STATE, {}),
        "ops": table(configbase.OPS, {}),
        "adapters": st.dictionaries(
            st.sampled_from(["slack", "x"]), st.sampled_from(TABLES_), max_size=2
        ),
    },
)


@settings(max_examples=600)
@given(DOCUMENTS)
def test_the_quick_path_accepts_only_what_pydantic_accepts_with_the_same_values(data: Any) -> None:
    quick = quick_config(data)
    try:
        model = Config.model_validate(data)
    except ValidationError:
        assert quick is None, data
        return
    if quick is not None:
        assert dumped(quick) == model.model_dump(), data
        assert fields_sets(quick) == fields_sets(model), data
        assert quick.default_variant == model.default_variant
        assert quick.enabled_adapters() == model.enabled_adapters()


def test_ordinary_config_files_take_the_quick_path(root: Path) -> None:
    files = sorted((root / "config").glob("*.toml")) + sorted((root / "examples").rglob("*.toml"))
    files = [f for f in files if f.name != "pyproject.toml"]
    assert files
    for path in files:
        config = load_config(path)
        assert isinstance(config, PlainConfig), path
        model = parse_config(tomllib.loads(path.read_text("utf-8")))
        assert dumped(config) == model.model_dump()
        assert fields_sets(config) == fields_sets(model)
        assert config.data_path() == path.resolve().parent / config.data_dir


def test_a_bad_config_still_gets_pydantics_message(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text("[limits]\nmax_dice = 1001\n", encoding="utf-8")
    with pytest.raises(
        Exception, match=r"limits\.max_dice: Input should be less than or equal to 1000"
    ):
        load_config(path)


def test_a_start_reads_its_config_without_pydantic(tmp_path: Path) -> None:
    path = tmp_path / "coterie.toml"
    path.write_text(
        '[plugins]\nenable = ["revised", "console"]\n[limits]\nmax_dice = 50\n', "utf-8"
    )
    probe = textwrap.dedent(
        f"""
        import sys
        from coterie.framework.app import Coterie
        from coterie.framework.config import load_config
        app = Coterie(load_config({str(path)!r}))
        assert app.config.limits.max_dice == 50
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("pydantic", "pydantic_core")))
        """
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


#: where each table sits in a document
PLACES: list[tuple[type[BaseModel], Any]] = [
    (Config, lambda doc: doc),
    (Limits, lambda doc: {"limits": doc}),
    (RateLimits, lambda doc: {"limits": {"rate": doc}}),
    (RoomConfig, lambda doc: {"defaults": doc}),
    (RoomConfig, lambda doc: {"rooms": {"console:table": doc}}),
    (PluginsConfig, lambda doc: {"plugins": doc}),
    (LoggingConfig, lambda doc: {"logging": doc}),
    (StateConfig, lambda doc: {"state": doc}),
    (OpsConfig, lambda doc: {"ops": doc}),
]


def near_bounds(model: type[BaseModel], name: str) -> list[Any]:
    """The field's bounds and the values just either side of them, as integers and floats."""
    found: list[Any] = []
    for item in model.model_fields[name].metadata:
        for attr in ("ge", "gt", "le", "lt", "min_length", "max_length"):
            bound = getattr(item, attr, None)
            if bound is None:
                continue
            for value in (bound - 1, bound, bound + 1):
                found += [value, float(value), value - 0.01, value + 0.01]
                if attr in ("min_length", "max_length") and value >= 0:
                    found += ["!" * int(value), ["x"] * int(value)]
    return found


@pytest.mark.parametrize(("model", "place"), PLACES, ids=lambda x: getattr(x, "__name__", ""))
def test_every_field_with_every_kind_of_value(model: type[BaseModel], place: Any) -> None:
    for name in model.model_fields:
        for value in [*SCALARS, *LISTS, *TABLES_, *near_bounds(model, name)]:
            data = place({name: value})
            quick = quick_config(data)
            try:
                validated = Config.model_validate(data)
            except ValidationError:
                assert quick is None, data
                continue
            assert quick is not None, data  # what pydantic takes, the quick path takes too here
            assert dumped(quick) == validated.model_dump(), data
            assert fields_sets(quick) == fields_sets(validated), data
