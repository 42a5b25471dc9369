"""The character methods of the store protocol (#17), one suite for memory, SQLite and a real
PostgreSQL; migration 0002 (kv sheets and undo stacks into tables, and back); the schema the
migrations make is the one ``engine.tables`` declares; a roll by name costs one SELECT on SQLite
and stays within two round trips on PostgreSQL (players rolling in turn)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from coterie.framework.app import Coterie
from coterie.framework.config import DATABASE_URL_ENV, load_config, parse_config
from coterie.framework.message import Message
from coterie.storage.ambient import AmbientStore
from coterie.storage.character_rows import Character
from coterie.storage.engine import create_engine, tables
from coterie.storage.migrate import alembic_config, current, open_store, upgrade
from coterie.storage.sql import SCHEMA_HEAD, SQLStore
from coterie.storage.state import MemoryStore, StateStore


@pytest.fixture
def store(migrated_store: StateStore) -> StateStore:
    """Each kind of store in turn (``pg_fixture.migrated_store``)."""
    return migrated_store


def sheet(name: str, **more: Any) -> dict[str, Any]:
    return {"name": name, "traits": {"Strength": 3}, "nested": {"a": [1, None, True]}, **more}


# --- the methods -------------------------------------------------------------------------------


async def test_empty(store: StateStore) -> None:
    assert await store.active_character("c", "ana") is None
    assert await store.characters("c") == []
    assert await store.changes("c", "ana") == []
    assert await store.pop_change("c", "ana") is None


async def test_save_activate_list_and_delete(store: StateStore) -> None:
    await store.save_character("c", "ana", "lise", sheet("Lise"))
    assert await store.active_character("c", "ana") is None  # a new one is not active
    await store.set_active("c", "ana", "lise")
    await store.save_character("c", "ana", "al", sheet("Al"))
    await store.save_character("c", "bo", "kai", sheet("Kai"))
    await store.save_character("other", "ana", "zed", sheet("Zed"))
    assert await store.active_character("c", "ana") == Character("ana", "lise", sheet("Lise"), True)
    assert await store.characters("c") == [
        Character("ana", "al", sheet("Al"), False),
        Character("ana", "lise", sheet("Lise"), True),
        Character("bo", "kai", sheet("Kai"), False),
    ]
    assert [c.key for c in await store.characters("c", "bo")] == ["kai"]
    # saving a sheet again keeps it active; another becomes active alone
    await store.save_character("c", "ana", "lise", sheet("Lise", version=2))
    found = await store.active_character("c", "ana")
    assert found is not None and found.sheet["version"] == 2
    await store.set_active("c", "ana", "al")
    assert [c.key for c in await store.characters("c", "ana") if c.active] == ["al"]
    await store.set_active("c", "ana", None)
    assert await store.active_character("c", "ana") is None
    await store.set_active("c", "ana", "lise")
    await store.delete_character("c", "ana", "lise")
    assert await store.active_character("c", "ana") is None
    assert [c.key for c in await store.characters("c")] == ["al", "kai"]
    assert [c.key for c in await store.characters("other")] == ["zed"]


async def test_sheets_are_copies(store: StateStore) -> None:
    given = sheet("Lise")
    await store.save_character("c", "ana", "lise", given)
    await store.set_active("c", "ana", "lise")
    given["traits"]["Strength"] = 5
    found = await store.active_character("c", "ana")
    assert found is not None and found.sheet["traits"]["Strength"] == 3
    found.sheet["traits"]["Strength"] = 4
    again = await store.active_character("c", "ana")
    assert again is not None and again.sheet["traits"]["Strength"] == 3
    # a read-only read (a roll's pool) may share the sheet, and reads the same
    shared = await store.active_character("c", "ana", readonly=True)
    assert shared == Character("ana", "lise", sheet("Lise"), True)
    async with store.transaction("c") as tx:
        inside = await tx.active_character("c", "ana", readonly=True)
        assert inside is not None and inside.sheet == sheet("Lise")
        await tx.save_character("c", "ana", "lise", sheet("Lise", version=2))
        changed = await tx.active_character("c", "ana", readonly=True)
        assert changed is not None and changed.sheet["version"] == 2
    last = await store.active_character("c", "ana", readonly=True)
    assert last is not None and last.sheet["version"] == 2


async def test_a_transaction_sees_its_own_writes_and_commits_them_together(
    store: StateStore,
) -> None:
    await store.save_character("c", "ana", "lise", sheet("Lise"))
    await store.set_active("c", "ana", "lise")
    async with store.transaction("c") as tx:
        await tx.save_character("c", "ana", "al", sheet("Al"))
        await tx.set_active("c", "ana", "al")
        found = await tx.active_character("c", "ana")
        assert found is not None and found.key == "al"
        assert [(c.key, c.active) for c in await tx.characters("c")] == [
            ("al", True),
            ("lise", False),
        ]
        await tx.delete_character("c", "ana", "lise")
        assert [c.key for c in await tx.characters("c", "ana")] == ["al"]
        await tx.push_change("c", "ana", {"n": 1})
        assert await tx.changes("c", "ana") == [{"n": 1}]
        await tx.set("ns", "k", 1)
    assert [(c.key, c.active) for c in await store.characters("c")] == [("al", True)]
    assert await store.changes("c", "ana") == [{"n": 1}]
    assert await store.get("ns", "k") == 1


async def test_an_exception_rolls_back_every_character_write(store: StateStore) -> None:
    await store.save_character("c", "ana", "lise", sheet("Lise"))
    await store.set_active("c", "ana", "lise")
    await store.push_change("c", "ana", {"n": 1})
    with pytest.raises(RuntimeError):
        async with store.transaction("c") as tx:
            await tx.save_character("c", "ana", "lise", sheet("Lise", version=9))
            await tx.save_character("c", "ana", "al", sheet("Al"))
            await tx.set_active("c", "ana", "al")
            assert await tx.pop_change("c", "ana") == {"n": 1}
            await tx.push_change("c", "ana", {"n": 2})
            raise RuntimeError("boom")
    assert await store.characters("c") == [Character("ana", "lise", sheet("Lise"), True)]
    assert await store.changes("c", "ana") == [{"n": 1}]


async def test_undo_stack_is_bounded_and_pops_newest_first(store: StateStore) -> None:
    for n in range(25):
        await store.push_change("c", "ana", {"n": n}, keep=20)
    await store.push_change("c", "bo", {"n": 99})
    assert [c["n"] for c in await store.changes("c", "ana")] == list(range(5, 25))
    assert await store.pop_change("c", "ana") == {"n": 24}
    async with store.transaction("c") as tx:
        # pushed before the stack is read, then read, popped and pushed again
        await tx.push_change("c", "ana", {"n": 100}, keep=3)
        assert await tx.pop_change("c", "ana") == {"n": 100}
        assert await tx.pop_change("c", "ana") == {"n": 23}
        await tx.push_change("c", "ana", {"n": 101}, keep=3)
        # the push of 100 kept the newest three (22, 23, 100)
        assert [c["n"] for c in await tx.changes("c", "ana")] == [22, 101]
    assert [c["n"] for c in await store.changes("c", "ana")] == [22, 101]
    assert await store.changes("c", "bo") == [{"n": 99}]
    for expected in (101, 22):
        assert await store.pop_change("c", "ana") == {"n": expected}
    assert await store.pop_change("c", "ana") is None


async def test_the_ambient_store_joins_the_command_transaction(store: StateStore) -> None:
    ambient = AmbientStore(store)
    with pytest.raises(RuntimeError):
        async with ambient.transaction("c"):
            await ambient.save_character("c", "ana", "lise", sheet("Lise"))
            await ambient.set_active("c", "ana", "lise")
            found = await ambient.active_character("c", "ana")
            assert found is not None and found.key == "lise"
            raise RuntimeError("boom")
    assert await ambient.characters("c") == []


async def test_refuses_what_json_cannot_hold(store: StateStore) -> None:
    with pytest.raises((TypeError, ValueError)):
        await store.save_character("c", "ana", "x", {"bad": float("nan")})
    with pytest.raises((TypeError, ValueError)):
        await store.push_change("c", "ana", {"bad": object()})
    assert await store.characters("c") == []


# --- the migration -----------------------------------------------------------------------------

OLD_PLAYERS = {
    "test:a|ana": {
        "active": "lise",
        "chars": {"lise": sheet("Lise", version=3), "al": sheet("Al")},
    },
    "slack:T1:C|x|bo": {"active": None, "chars": {"kai": sheet("Kai")}},
    "test:a|~npcs": {"active": None, "chars": {"guard": sheet("Guard", npc=True)}},
}
OLD_STACKS = {
    "test:a|ana": [{"n": n, "before": sheet("Lise", version=n)} for n in range(3)],
    "test:a|st": [{"n": 7}],
}


async def _migrate(url: str, direction: str, revision: str) -> None:
    from alembic import command

    engine = create_engine(url)
    try:
        async with engine.begin() as conn:
            await conn.run_sync(lambda c: getattr(command, direction)(alembic_config(c), revision))
    finally:
        await engine.dispose()


async def _kv_rows(url: str, namespace: str) -> dict[str, Any]:
    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            found = await conn.execute(
                sa.text("SELECT key, value FROM kv WHERE namespace = :ns"), {"ns": namespace}
            )
            return {key: json.loads(value) for key, value in found}
    finally:
        await engine.dispose()


async def _fill_0001(url: str) -> None:
    await _migrate(url, "upgrade", "0001")
    store = SQLStore(url)
    try:
        for key, value in OLD_PLAYERS.items():
            await store.set("coterie.characters", key, value)
        for key, value in OLD_STACKS.items():
            await store.set("coterie.character_changes", key, value)
        await store.set("coterie.chronicle_links", "ABC123", {"chronicle": "test:a"})
    finally:
        await store.close()


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_migration_0002_moves_every_sheet_and_stack_and_back(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = (
        f"sqlite+aiosqlite:///{tmp_path / 'state.db'}"
        if backend == "sqlite"
        else request.getfixturevalue("pg_url")
    )
    await _fill_0001(url)
    await upgrade(url)
    assert await current(url) == "0003"
    store = SQLStore(url)
    try:
        active = await store.active_character("test:a", "ana")
        assert active == Character("ana", "lise", sheet("Lise", version=3), True)
        assert [(c.owner, c.key, c.active) for c in await store.characters("test:a")] == [
            ("ana", "al", False),
            ("ana", "lise", True),
            ("~npcs", "guard", False),
        ]
        kai = await store.characters("slack:T1:C|x", "bo")  # a room key holding `|`
        assert kai == [Character("bo", "kai", sheet("Kai"), False)]
        assert await store.changes("test:a", "ana") == OLD_STACKS["test:a|ana"]
        assert await store.changes("test:a", "st") == [{"n": 7}]
        assert await store.pop_change("test:a", "ana") == OLD_STACKS["test:a|ana"][-1]
        assert await store.get("coterie.chronicle_links", "ABC123") == {"chronicle": "test:a"}
        assert await store.keys("coterie.characters") == []
        await store.push_change("test:a", "ana", {"n": 9})
    finally:
        await store.close()
    await _migrate(url, "downgrade", "0001")
    assert await current(url) == "0001"
    assert await _kv_rows(url, "coterie.characters") == OLD_PLAYERS
    assert await _kv_rows(url, "coterie.character_changes") == {
        "test:a|ana": [*OLD_STACKS["test:a|ana"][:2], {"n": 9}],
        "test:a|st": [{"n": 7}],
    }
    await upgrade(url)  # and up again: nothing lost either way
    store = SQLStore(url)
    try:
        assert len(await store.characters("test:a")) == 3
    finally:
        await store.close()


async def test_a_0001_sqlite_database_is_upgraded_when_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "data" / "coterie.db"
    url = f"sqlite:///{path}"
    await _fill_0001(url)
    monkeypatch.setenv(DATABASE_URL_ENV, url)
    config = load_config(None)
    store = await open_store(config)
    try:
        assert SCHEMA_HEAD == "0003"
        found = await store.active_character("test:a", "ana")
        assert found is not None and found.key == "lise"
    finally:
        await store.close()


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_the_migrations_make_the_declared_tables(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    url = (
        f"sqlite+aiosqlite:///{tmp_path / 'state.db'}"
        if backend == "sqlite"
        else request.getfixturevalue("pg_url")
    )
    await upgrade(url)
    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            diff = await conn.run_sync(
                lambda c: compare_metadata(MigrationContext.configure(c), tables().metadata)
            )
    finally:
        await engine.dispose()
    assert diff == []


# --- the cost of a roll by name ----------------------------------------------------------------


def _app(store: StateStore) -> Coterie:
    config = {
        "plugins": {"enable": ["revised"]},
        "defaults": {"variant": "revised"},
        "limits": {"rate": {"enabled": False}},
    }
    return Coterie(parse_config(config, "test"), store=store)


async def _say(app: Coterie, text: str, user: str = "ana") -> None:
    reply = await app.handle(Message(platform="test", room="r", user=user, text=text))
    assert reply is not None and not reply.is_error, reply


async def test_a_roll_by_name_reads_the_sheet_in_one_select_on_sqlite(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'state.db'}"
    await upgrade(url)
    store = SQLStore(url)
    app = _app(store)
    try:
        for user in ("ana", "bo"):
            await _say(app, "!char new Hero", user)
            await _say(app, "!char set Strength 3 Brawl 2", user)
        statements: list[str] = []
        db = store._lite()
        db.set_trace_callback(statements.append)

        async def count(text: str) -> list[str]:
            statements.clear()
            await _say(app, text)
            return list(statements)

        by_number = await count("!roll 5 6")
        by_name = await count("!roll Strength+Brawl 6")
        reads = [s for s in by_name if "characters" in s]
        assert len(reads) == 1 and reads[0].lstrip().upper().startswith("SELECT"), reads
        assert not any("characters" in s for s in by_number)
        assert len(by_name) == len(by_number) + 1, (by_number, by_name)
    finally:
        db.set_trace_callback(None)
        await store.close()
    assert isinstance(db, sqlite3.Connection)


async def test_a_roll_by_name_stays_within_two_round_trips_on_postgresql(
    pg_url: str, pg_trips: dict[str, int]
) -> None:
    await upgrade(pg_url)
    store = SQLStore(pg_url)
    app = _app(store)
    trips = pg_trips
    players = ["ana", "bo", "cy"]
    try:
        for user in players:
            await _say(app, "!char new Hero", user)
            await _say(app, "!char set Strength 3 Brawl 2", user)
        for user in players:  # warm up: connections, the read-ahead of the room's lock
            await _say(app, "!roll Strength+Brawl 6", user)
        costs = {}
        for text in ("!roll 5 6", "!roll Strength+Brawl 6"):
            await _say(app, text)
            before = trips["n"]
            for n in range(12):  # the players in turn
                await _say(app, text, players[n % len(players)])
            costs[text] = (trips["n"] - before) / 12
        assert costs["!roll Strength+Brawl 6"] <= 2, costs
        assert costs["!roll Strength+Brawl 6"] <= costs["!roll 5 6"], costs
    finally:
        await app.stop()


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
async def test_a_pool_read_again_follows_every_change_of_the_sheet(
    backend: str, tmp_path: Path
) -> None:
    """Pools read from a shared sheet are kept per sheet: a change of the sheet (a new sheet
    object) is read afresh, and a specialty still adds its die the second time."""
    store: StateStore = MemoryStore()
    if backend == "sqlite":
        url = f"sqlite:///{tmp_path / 'state.db'}"
        await upgrade(url)
        store = SQLStore(url)
    config = {
        "plugins": {"enable": ["v5"]},
        "defaults": {"variant": "v5"},
        "limits": {"rate": {"enabled": False}},
    }
    app = Coterie(parse_config(config, "test"), store=store)

    async def text(line: str) -> str:
        reply = await app.handle(Message(platform="test", room="r", user="ana", text=line))
        assert reply is not None and not reply.is_error, reply
        return str(reply.body)

    try:
        await text("!char new Lise")
        await text("!char set Strength 3 Brawl 2")
        await text("!char spec Brawl Grappling")
        for _ in range(2):
            assert "Strength 3 + Brawl 2 = 5 dice" in await text("!roll Strength+Brawl 3")
            assert "6 dice" in await text("!roll Strength+Brawl.grap 3")
        await text("!char set Strength 4")
        assert "Strength 4 + Brawl 2 = 6 dice" in await text("!roll Strength+Brawl 3")
        await text("!damage 4 aggravated")  # a full Health track impairs Physical pools
        assert "= 4 dice" in await text("!roll Strength+Brawl 3")
        await text("!undo")
        assert "Strength 4 + Brawl 2 = 6 dice" in await text("!roll Strength+Brawl 3")
    finally:
        await app.stop()
