"""A room's settings on the SQLite store: every message reads them as last remembered, without
asking the file whether another process changed them (SQLStore.peek), and confirms them in its
transaction, where the question costs no system call. A change made by another process is never
missed: a command routed with the old settings is routed again (nothing done twice), and a
message acted on outside a transaction reads them afresh first."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from coterie.dice.sources import SeededDice
from coterie.framework.app import ROOM_SETTINGS, Coterie
from coterie.framework.config import Config
from coterie.framework.message import Message
from coterie.render.encode import to_plain
from coterie.storage.migrate import upgrade
from coterie.storage.sql import SQLStore

CONFIG = {"plugins": {"enable": ["revised", "v5"]}, "limits": {"rate": {"enabled": False}}}
ROOM = "t:r"


@pytest.fixture
async def app(tmp_path: Path) -> AsyncIterator[Coterie]:
    url = f"sqlite:///{tmp_path / 'state.db'}"
    await upgrade(url)
    made = Coterie(Config.model_validate(CONFIG), dice=SeededDice(3), store=SQLStore(url))
    yield made
    await made.stop()


def _statements(app: Coterie) -> list[str]:
    """The statements the store's writing connection runs from now on."""
    seen: list[str] = []
    writer = app.state.store._writer  # type: ignore[attr-defined]
    assert writer is not None
    writer.set_trace_callback(seen.append)
    return seen


def _elsewhere(app: Coterie, settings: dict[str, str]) -> None:
    """Another process changes the room's settings (its own connection to the file)."""
    other = sqlite3.connect(app.state.store.path, isolation_level=None)  # type: ignore[attr-defined]
    other.execute(
        "INSERT INTO kv (namespace, key, value, updated_at) VALUES (?, ?, ?, 0) "
        "ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value",
        (ROOM_SETTINGS, ROOM, json.dumps(settings)),
    )
    other.close()


async def _say(app: Coterie, text: str) -> str | None:
    reply = await app.handle(Message(platform="t", room="r", user="u", text=text))
    return None if reply is None else to_plain(reply.body)


async def test_a_roll_asks_the_file_only_inside_its_transaction(app: Coterie) -> None:
    await app.update_room(ROOM, prefix="!")
    assert await _say(app, "!roll 3") is not None  # settings remembered now
    seen = _statements(app)
    for _ in range(3):
        assert "3 dice" in (await _say(app, "!roll 3") or "")
    assert [s for s in seen if s.startswith("PRAGMA")] == ["PRAGMA data_version"] * 3
    assert seen.count("BEGIN IMMEDIATE") == 3
    assert not [s for s in seen if "coterie.rooms" in s]  # never SELECTed again


async def test_a_store_peek_is_a_remembered_value_unconfirmed(app: Coterie) -> None:
    store = app.state.store
    await store.set("ns", "k", {"v": 1})
    assert await app.state.peek("ns", "k") == ({"v": 1}, True)  # read (and remembered)
    seen = _statements(app)
    value, confirmed = await app.state.peek("ns", "k")
    assert (value, confirmed) == ({"v": 1}, False)
    assert seen == []
    value["v"] = 2  # the caller's own copy
    assert await app.state.peek("ns", "k") == ({"v": 1}, False)
    async with app.state.transaction() as tx:  # in a transaction: confirmed
        assert await app.state.peek("ns", "k") == ({"v": 1}, True)
        assert tx is not None


async def test_a_command_routed_with_changed_settings_is_routed_again(app: Coterie) -> None:
    await app.update_room(ROOM, variant="revised")
    assert "difficulty 6" in (await _say(app, "!roll 3") or "")  # revised, remembered
    _elsewhere(app, {"variant": "v5"})
    answer = await _say(app, "!roll 3")
    assert answer is not None and "Difficulty 1 (default)" in answer, answer  # v5's
    rolls = await app.state.rolls(ROOM, limit=None)
    assert [r.variant for r in rolls] == ["v5", "revised"]  # the message rolled once, on v5


async def test_a_new_prefix_from_elsewhere_turns_a_command_into_talk(app: Coterie) -> None:
    await app.update_room(ROOM, prefix="!")
    assert await _say(app, "!roll 3") is not None
    _elsewhere(app, {"prefix": "?"})
    assert await _say(app, "!roll 3") is None  # ordinary talk in a `?` room
    assert len(await app.state.rolls(ROOM, limit=None)) == 1
    assert "3 dice" in (await _say(app, "?roll 3") or "")


async def test_talk_and_commands_outside_a_transaction_read_afresh(app: Coterie) -> None:
    await app.update_room(ROOM, prefix="!")
    assert await _say(app, "!roll 3") is not None
    _elsewhere(app, {"prefix": "+"})
    answer = await _say(app, "+help")  # talk under the old prefix: confirmed, then answered
    assert answer is not None and "+roll" in answer, answer
    _elsewhere(app, {"prefix": "!"})
    assert await _say(app, "+help") is None  # `!help` under the old `+`: read afresh, talk
    assert "!roll" in (await _say(app, "!help") or "")


async def test_a_command_refused_before_its_transaction_reads_afresh(app: Coterie) -> None:
    """An over-long comment is refused before the transaction: its settings are confirmed
    first, so a prefix changed elsewhere makes it talk rather than an error."""
    await app.update_room(ROOM, prefix="!")
    assert await _say(app, "!roll 3") is not None
    long = "x" * (app.config.limits.max_comment_length + 1)
    assert "comment" in (await _say(app, f"!roll 3 # {long}") or "")
    _elsewhere(app, {"prefix": "+"})
    assert await _say(app, f"!roll 3 # {long}") is None
    assert "comment" in (await _say(app, f"+roll 3 # {long}") or "")
