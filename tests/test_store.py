"""The StateStore protocol, one suite for every store: memory, SQLite and a real PostgreSQL.
Also the migrations, ``coterie db`` and the ``[state]`` config."""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from coterie.errors import ConfigError
from coterie.framework.config import DATABASE_URL_ENV, load_config, parse_config
from coterie.ops import cli
from coterie.storage.migrate import current, head_revision, open_store, upgrade
from coterie.storage.sql import SQLStore, create_engine
from coterie.storage.state import MemoryStore, RollRecord, RoomState, StateStore, Transaction


async def _sql_store(url: str) -> SQLStore:
    await upgrade(url)
    return SQLStore(url)


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[StateStore]:
    made: StateStore
    if request.param == "memory":
        made = MemoryStore()
    elif request.param == "sqlite":
        made = await _sql_store(f"sqlite+aiosqlite:///{tmp_path / 'state.db'}")
    else:
        made = await _sql_store(request.getfixturevalue("pg_url"))
    yield made
    await made.close()


def record(n: int, **changes: Any) -> RollRecord:
    data: dict[str, Any] = {
        "id": f"r{n:04d}",
        "room": "console:table",
        "user": "lynn",
        "display_name": "Lynn",
        "variant": "revised",
        "request": f"!roll {n} 6",
        "faces": [10, 1, 6, n % 10 + 1],
        "outcome": "success",
        "successes": 2,
        "time": 1_795_000_000.123456 + n,
        "detail": {"faces": [10, 1, 6], "nested": {"a": [1.5, None, True]}},
    }
    data.update(changes)
    return RollRecord(**data)


# --- key-value ---------------------------------------------------------------------------


async def test_is_a_state_store(store: StateStore) -> None:
    assert isinstance(store, StateStore)
    async with store.transaction("r") as tx:
        assert isinstance(tx, Transaction)


async def test_get_set_delete(store: StateStore) -> None:
    assert await store.get("ns", "k") is None
    await store.set("ns", "k", {"a": 1})
    assert await store.get("ns", "k") == {"a": 1}
    await store.set("ns", "k", [1, 2])  # overwrite
    assert await store.get("ns", "k") == [1, 2]
    assert await store.get("other", "k") is None  # namespaces are separate
    await store.delete("ns", "k")
    assert await store.get("ns", "k") is None
    await store.delete("ns", "k")  # deleting nothing is fine


JSON_VALUES: list[Any] = [
    0,
    -(2**53),
    2**62,
    3.141592653589793,
    1e-300,
    "",
    "Ünïcödé 🦇 'quotes' \"double\" \\ back\nline \x00 nul",
    True,
    False,
    [],
    {},
    [1, "two", None, 3.5, [False, {"deep": ["x"]}]],
    {"settings": {"variant": "v5", "house_rules": {"free_botch": True, "max_hunger": 5}}},
]


@pytest.mark.parametrize("value", JSON_VALUES, ids=range(len(JSON_VALUES)))
async def test_json_round_trip(store: StateStore, value: Any) -> None:
    await store.set("ns", "k", value)
    back = await store.get("ns", "k")
    assert back == value
    assert json.dumps(back, sort_keys=True) == json.dumps(value, sort_keys=True)


async def test_values_are_copies(store: StateStore) -> None:
    value = {"list": [1]}
    await store.set("ns", "k", value)
    value["list"].append(2)
    got = await store.get("ns", "k")
    assert got == {"list": [1]}
    got["list"].append(3)
    assert await store.get("ns", "k") == {"list": [1]}


@pytest.mark.parametrize(
    "bad", [object(), math.nan, math.inf, {1, 2}, b"bytes", {"k": object()}], ids=str
)
async def test_refuses_non_json(store: StateStore, bad: Any) -> None:
    await store.set("ns", "k", "kept")
    with pytest.raises((TypeError, ValueError)):
        await store.set("ns", "k", bad)
    with pytest.raises((TypeError, ValueError)):
        async with store.transaction("r") as tx:
            await tx.set("ns", "k", bad)
    assert await store.get("ns", "k") == "kept"


async def test_keys_sorted_by_prefix(store: StateStore) -> None:
    for key in ["b", "a", "ab", "a%", "a_c", "A", "abc", "é"]:
        await store.set("ns", key, 1)
    await store.set("other", "aa", 1)
    assert await store.keys("ns") == sorted(["b", "a", "ab", "a%", "a_c", "A", "abc", "é"])
    assert await store.keys("ns", "a") == ["a", "a%", "a_c", "ab", "abc"]
    assert await store.keys("ns", "a%") == ["a%"]  # no LIKE wildcards
    assert await store.keys("ns", "a_") == ["a_c"]
    assert await store.keys("ns", "A") == ["A"]  # case-sensitive
    assert await store.keys("ns", "zz") == []
    assert await store.keys("empty") == []


async def test_room_state_view(store: StateStore) -> None:
    state = RoomState(store, "plugin", "console:table")
    assert await state.get("n", 5) == 5
    await state.set("n", 6)
    assert await state.get("n") == 6
    assert await state.keys() == ["n"]
    assert await store.get("plugin:console:table", "n") == 6
    await state.delete("n")
    assert await state.get("n") is None


# --- transactions ------------------------------------------------------------------------


async def test_transaction_commits_together(store: StateStore) -> None:
    await store.set("ns", "gone", 1)
    async with store.transaction("console:table") as tx:
        await tx.set("ns", "a", 1)
        assert await tx.get("ns", "a") == 1  # reads see the transaction's writes
        await tx.set("ns", "a", 2)
        await tx.delete("ns", "gone")
        assert await tx.get("ns", "gone") is None
        assert await tx.keys("ns") == ["a"]
        await tx.log_roll(record(1))
    assert await store.get("ns", "a") == 2
    assert await store.get("ns", "gone") is None
    assert [r.id for r in await store.rolls("console:table")] == ["r0001"]


class Boom(Exception):
    pass


async def test_exception_rolls_back_everything(store: StateStore) -> None:
    await store.set("ns", "kept", "before")
    await store.log_roll(record(1))
    with pytest.raises(Boom):
        async with store.transaction("console:table") as tx:
            await tx.set("ns", "kept", "after")
            await tx.set("ns", "new", 1)
            await tx.delete("ns", "kept")
            await tx.log_roll(record(2))
            raise Boom
    assert await store.get("ns", "kept") == "before"
    assert await store.get("ns", "new") is None
    assert await store.keys("ns") == ["kept"]
    assert [r.id for r in await store.rolls("console:table")] == ["r0001"]
    # the store still works after a rollback, on the same lock too
    async with store.transaction("console:table") as tx:
        await tx.set("ns", "new", 2)
    assert await store.get("ns", "new") == 2


async def test_transaction_without_lock(store: StateStore) -> None:
    async with store.transaction() as tx:
        await tx.set("ns", "k", 1)
    assert await store.get("ns", "k") == 1


# --- roll log ----------------------------------------------------------------------------


async def test_roll_record_round_trips_exactly(store: StateStore) -> None:
    original = record(
        7,
        botch=True,
        expected=2.718281828459045,
        session="s-1",
        outcome="botch",
        successes=-1,
        display_name='Lynn 🦇 | the "Brujah"',
        time=1_795_352_904.150538,
    )
    bare = record(8)  # defaults: no session, no expectation, no botch
    await store.log_roll(original)
    await store.log_roll(bare)
    newest, oldest = await store.rolls("console:table")
    assert oldest == original
    assert newest == bare
    assert newest.expected is None and newest.session is None and newest.botch is False
    assert oldest.as_json() == original.as_json()


async def test_rolls_order_limit_filters(store: StateStore) -> None:
    for n in range(1, 31):
        await store.log_roll(
            record(
                n,
                user="lynn" if n % 2 else "mara",
                session="s1" if n <= 10 else ("s2" if n <= 20 else None),
            )
        )
    await store.log_roll(record(99, room="console:other"))
    all_rolls = await store.rolls("console:table", limit=None)
    assert [r.id for r in all_rolls] == [f"r{n:04d}" for n in range(30, 0, -1)]
    assert [r.id for r in await store.rolls("console:table")] == [
        f"r{n:04d}" for n in range(30, 10, -1)
    ]  # default limit 20, newest first
    assert [r.id for r in await store.rolls("console:table", limit=3)] == [
        "r0030",
        "r0029",
        "r0028",
    ]
    assert await store.rolls("console:table", limit=0) == []
    mara = await store.rolls("console:table", limit=None, user="mara")
    assert [r.id for r in mara] == [f"r{n:04d}" for n in range(30, 0, -2)]
    s1 = await store.rolls("console:table", limit=None, session="s1")
    assert [r.id for r in s1] == [f"r{n:04d}" for n in range(10, 0, -1)]
    both = await store.rolls("console:table", limit=2, user="lynn", session="s2")
    assert [r.id for r in both] == ["r0019", "r0017"]
    assert [r.id for r in await store.rolls("console:other")] == ["r0099"]
    assert await store.rolls("nowhere") == []


async def test_log_roll_refuses_non_json_detail(store: StateStore) -> None:
    with pytest.raises((TypeError, ValueError)):
        await store.log_roll(record(1, detail={"x": object()}))
    with pytest.raises((TypeError, ValueError)):
        await store.log_roll(record(2, expected=math.nan))
    assert await store.rolls("console:table") == []


# --- persistence and schema --------------------------------------------------------------


async def test_sqlite_survives_reopening(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'state.db'}"
    first = await _sql_store(url)
    await first.set("ns", "k", {"v": 1})
    await first.log_roll(record(1))
    await first.close()
    second = await _sql_store(url)
    assert await second.get("ns", "k") == {"v": 1}
    assert await second.rolls("console:table") == [record(1)]
    await second.close()


async def _schema(url: str) -> tuple[set[str], str]:
    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            tables = await conn.run_sync(lambda c: set(sa.inspect(c).get_table_names()))
            journal = ""
            if engine.dialect.name == "sqlite":
                journal = str(await conn.scalar(sa.text("PRAGMA journal_mode")))
            return tables, journal
    finally:
        await engine.dispose()


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_migrations_to_head_and_idempotent(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if backend == "sqlite":
        url = f"sqlite+aiosqlite:///{tmp_path / 'new' / 'dir' / 'state.db'}"
    else:
        url = request.getfixturevalue("pg_url")
    head = head_revision()
    assert head == "0003"
    if backend == "postgresql":
        assert await current(url) is None  # the empty database exists, unmigrated
    await upgrade(url)
    assert await current(url) == head
    tables, journal = await _schema(url)
    assert {"kv", "rolls", "alembic_version"} <= tables
    if backend == "sqlite":
        assert journal == "wal"
    store = SQLStore(url)
    await store.set("ns", "k", 1)
    await store.close()
    await upgrade(url)  # a no-op: nothing changes, nothing is lost
    assert await current(url) == head
    store = SQLStore(url)
    assert await store.get("ns", "k") == 1
    await store.close()


def _write_config(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_cli_db_upgrade_and_current(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(DATABASE_URL_ENV, raising=False)
    config = _write_config(tmp_path / "coterie.toml", 'data_dir = "state"\n')
    db = tmp_path / "state" / "coterie.db"
    assert cli.main(["db", "current", "--config", str(config)]) == 1
    assert "no database yet" in capsys.readouterr().out
    assert not db.exists()  # `current` does not create it
    assert cli.main(["db", "upgrade", "--config", str(config)]) == 0
    assert "upgraded from empty to 0003" in capsys.readouterr().out
    assert db.exists()
    assert cli.main(["db", "upgrade", "--config", str(config)]) == 0
    assert "already at 0003" in capsys.readouterr().out
    assert cli.main(["db", "current", "--config", str(config)]) == 0
    assert "0003 (head)" in capsys.readouterr().out


def test_cli_db_on_postgresql(
    pg_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DATABASE_URL_ENV, pg_url)
    assert cli.main(["db", "current"]) == 1
    assert "empty" in capsys.readouterr().out
    assert cli.main(["db", "upgrade"]) == 0
    assert "upgraded from empty to 0003" in capsys.readouterr().out
    assert cli.main(["db", "current"]) == 0
    assert "0003 (head)" in capsys.readouterr().out


def test_cli_db_unreachable_server_is_a_friendly_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv(DATABASE_URL_ENV, f"postgresql+asyncpg://x:pw@127.0.0.1:{port}/db")
    assert cli.main(["db", "upgrade"]) == cli.EXIT_CONFIG
    err = capsys.readouterr().err
    assert "cannot use the database" in err
    assert "pw" not in err  # the password is never shown


# --- config ------------------------------------------------------------------------------


async def test_default_store_is_sqlite_under_data_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(DATABASE_URL_ENV, raising=False)
    monkeypatch.chdir(tmp_path)  # the data dir is relative to the config file, not the cwd
    folder = tmp_path / "conf"
    folder.mkdir()
    config = load_config(_write_config(folder / "coterie.toml", 'data_dir = "nested/data"\n'))
    db = folder / "nested" / "data" / "coterie.db"
    assert config.data_path() == folder / "nested" / "data"
    assert not db.exists()
    store = await open_store(config)
    try:
        assert isinstance(store, SQLStore)
        assert db.exists()  # created on first start, directories too
        await store.set("ns", "k", 1)
    finally:
        await store.close()
    assert not (tmp_path / "nested").exists()


async def test_env_var_overrides_the_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = parse_config({"state": {"url": f"sqlite:///{tmp_path / 'from-config.db'}"}})
    monkeypatch.setenv(DATABASE_URL_ENV, f"sqlite:///{tmp_path / 'from-env.db'}")
    store = await open_store(config)
    await store.close()
    assert (tmp_path / "from-env.db").exists()
    assert not (tmp_path / "from-config.db").exists()
    monkeypatch.setenv(DATABASE_URL_ENV, "memory://")
    assert isinstance(await open_store(config), MemoryStore)
    monkeypatch.delenv(DATABASE_URL_ENV)
    store = await open_store(config)
    await store.close()
    assert (tmp_path / "from-config.db").exists()


@pytest.mark.parametrize(
    "url",
    [
        "postgresql+asyncpg://bot:hunter2@db.example/coterie",
        "postgresql://bot:hunter2@127.0.0.1:5432/coterie",
        "postgresql+asyncpg://bot@127.0.0.1/coterie?password=hunter2",
    ],
)
def test_password_in_config_url_refused(tmp_path: Path, url: str) -> None:
    path = _write_config(tmp_path / "c.toml", f'[state]\nurl = "{url}"\n')
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    message = str(caught.value)
    assert "state.url" in message
    assert DATABASE_URL_ENV in message
    assert "hunter2" not in message


def test_url_without_password_accepted() -> None:
    config = parse_config({"state": {"url": "postgresql+asyncpg://bot@127.0.0.1:5432/coterie"}})
    assert config.state.url == "postgresql+asyncpg://bot@127.0.0.1:5432/coterie"


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("mysql://bot@127.0.0.1/x", "SQLite or PostgreSQL"),
        ("not a url", "not a database URL"),
        ("sqlite+aiosqlite://", "memory://"),
    ],
)
async def test_unusable_urls_are_friendly(
    url: str, problem: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DATABASE_URL_ENV, url)
    with pytest.raises(ConfigError, match=problem):
        await open_store(parse_config({}))


def test_unknown_state_key_refused() -> None:
    with pytest.raises(ConfigError, match=r"state\.path: unknown key"):
        parse_config({"state": {"path": "x"}})


def test_relative_sqlite_url_is_under_the_config_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(DATABASE_URL_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "conf"
    folder.mkdir()
    path = _write_config(folder / "c.toml", '[state]\nurl = "sqlite:///db/state.db"\n')
    assert load_config(path).database_url() == f"sqlite:///{folder / 'db' / 'state.db'}"
    absolute = f"sqlite+aiosqlite:///{tmp_path / 'abs.db'}"
    path.write_text(f'[state]\nurl = "{absolute}"\n', encoding="utf-8")
    assert load_config(path).database_url() == absolute


def test_chat_keeps_room_settings_across_restarts(
    tmp_path: Path, coterie_cli: list[str], cli_env: dict[str, str]
) -> None:
    """`coterie chat` opens the config's SQLite store: a room's rule set chosen in one process
    is still chosen in the next."""
    import subprocess

    config = _write_config(
        tmp_path / "c.toml", '[plugins]\nenable = ["revised", "v5", "console"]\n'
    )
    env = {k: v for k, v in cli_env.items() if k != DATABASE_URL_ENV}

    def chat(text: str) -> str:
        done = subprocess.run(
            [*coterie_cli, "chat", "--config", str(config), "--user", "Lynn", "--seed", "1"],
            input=text,
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert "now plays" in chat("!variant v5\n")
    assert (tmp_path / "data" / "coterie.db").exists()
    shown = chat("!variant\n").splitlines()
    assert "5th edition" in shown[0], shown  # "This room plays ... 5th edition."
    assert any(line.startswith("• v5") for line in shown), shown  # the current one is marked


def test_schema_head_constant_is_alembics_head() -> None:
    """Start-up compares a SQLite database with ``SCHEMA_HEAD`` without Alembic: it must name
    the newest migration shipped."""
    from coterie.storage.sql import SCHEMA_HEAD

    assert head_revision() == SCHEMA_HEAD


@pytest.mark.parametrize(
    "url",
    [
        "sqlite:///relative/state.db",
        "sqlite:////absolute/state.db",
        "sqlite+aiosqlite:////with%20space/a.db?mode=rwc",
        "sqlite+pysqlite:///~/x.db",
    ],
)
def test_sqlite_urls_read_as_sqlalchemy_reads_them(url: str) -> None:
    from sqlalchemy.engine import make_url

    from coterie.storage.migrate import sqlite_file

    database = make_url(url).database
    assert database is not None
    assert sqlite_file(url) == Path(database).expanduser()


def test_a_current_sqlite_schema_opens_without_sqlalchemy(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    """Start-up on a database at the newest schema reads its revision with plain sqlite3 and
    neither imports SQLAlchemy nor Alembic; a new database is migrated (they are imported)."""
    import subprocess
    import sys

    script = (
        "import asyncio, sys\n"
        "from coterie.framework.config import parse_config\n"
        "from coterie.storage.migrate import open_store\n"
        "async def main():\n"
        "    store = await open_store(parse_config({}))\n"
        "    await store.set('ns', 'k', 1)\n"
        "    assert await store.get('ns', 'k') == 1\n"
        "    await store.close()\n"
        "asyncio.run(main())\n"
        "print(sorted(m for m in ('sqlalchemy', 'alembic', 'aiosqlite') if m in sys.modules))\n"
    )
    env = {**cli_env, DATABASE_URL_ENV: f"sqlite:///{tmp_path / 'state.db'}"}

    def run() -> str:
        done = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    assert run() == "['aiosqlite', 'alembic', 'sqlalchemy']"  # created: migrated
    assert run() == "[]"  # current: plain sqlite3 only


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_sql_stores_offer_an_engine_for_plugins_tables(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """docs/storage.md: a plugin may keep tables of its own through ``store.engine``."""
    if backend == "sqlite":
        url = f"sqlite:///{tmp_path / 'state.db'}"
    else:
        url = request.getfixturevalue("pg_url")
    store = await _sql_store(url)
    try:
        await store.set("ns", "k", 1)
        async with store.engine.begin() as conn:
            await conn.execute(sa.text("CREATE TABLE my_plugin_things (n integer)"))
            await conn.execute(sa.text("INSERT INTO my_plugin_things VALUES (7)"))
        async with store.engine.connect() as conn:
            assert await conn.scalar(sa.text("SELECT n FROM my_plugin_things")) == 7
            assert await conn.scalar(sa.text("SELECT count(*) FROM kv")) == 1
    finally:
        await store.close()


@pytest.mark.parametrize(
    "value",
    [
        {"a": [1, 2.5, None, True], "é": "ünïcode"},
        [],
        "text",
        {"nested": {"deep": [[{"x": 1}]]}},
        {1: "int keys become text", "b": False},
    ],
)
def test_stored_json_is_what_json_dumps_writes(value: Any) -> None:
    from coterie.storage.rows import dumps_json

    assert dumps_json(value) == json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def test_stored_json_refuses_with_json_dumps_words() -> None:
    from coterie.storage.rows import dumps_json

    circular: list[Any] = []
    circular.append(circular)
    for bad in [math.nan, {"a": [math.inf]}, {1j: 1}, object(), circular]:
        with pytest.raises((TypeError, ValueError)) as ours:
            dumps_json(bad)
        with pytest.raises((TypeError, ValueError)) as theirs:
            json.dumps(bad, allow_nan=False)
        assert (type(ours.value), str(ours.value)) == (type(theirs.value), str(theirs.value))
    assert dumps_json([1, 2]) == "[1,2]"  # a failed call leaves the encoder as it was
