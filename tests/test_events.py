"""Exactly once (issue 19, item 2), through the core API: a command that changes state records the
platform event it answered and its reply in its own transaction; the same event delivered again
gets the stored reply and never runs the command twice. The adapters' redelivery after a kill -9 is
tested against each platform's peer in tests/test_faults.py."""

from __future__ import annotations

import copy
import json
import time

import pytest

from coterie.framework.events import EVENT_TTL, EVENTS, sweep
from coterie.framework.message import Message
from coterie.render.encode import to_plain
from coterie.render.serialize import reply_to_json
from coterie.storage.state import MemoryStore
from test_play import Table


def message(text: str, message_id: str | None, user: str = "alice") -> Message:
    return Message(
        platform="test",
        room="r",
        user=user,
        user_name=user.title(),
        text=text,
        message_id=message_id,
    )


async def test_a_redelivered_command_gets_its_stored_reply_and_runs_once() -> None:
    t = Table()
    await t.ok("alice", "!extended start vigil 20")
    t.faces(9, 9, 9)
    first = await t.app.handle(message("!roll 3 for vigil", "ev-1"))
    assert first is not None and "vigil: 3/20" in to_plain(first.body)
    position = t.dice._position
    state = copy.deepcopy(t.store._data)
    again = await t.app.handle(message("!roll 3 for vigil", "ev-1"))
    assert again is not None and again.meta.get("redelivered") == "true"
    assert again.body == first.body and again.meta["roll_id"] == first.meta["roll_id"]
    assert t.dice._position == position  # nothing rolled
    assert t.store._data == state  # nothing changed: the tally is still 3
    assert len(await t.app.state.rolls("test:r", limit=None)) == 1
    t.faces(9)
    other = await t.app.handle(message("!roll 1 for vigil", "ev-2"))
    assert other is not None and "vigil: 4/20" in to_plain(other.body)


async def test_only_messages_with_an_id_are_recorded_and_errors_are_not() -> None:
    t = Table()
    t.faces(5)
    await t.ok("alice", "!roll 1 6")  # no message id: nothing recorded
    assert await t.store.keys(EVENTS) == []
    reply = await t.app.handle(message("!roll 1 99", "ev-bad"))
    assert reply is not None and reply.is_error
    assert await t.store.keys(EVENTS) == []  # an error changes nothing, records nothing
    t.faces(8)
    await t.app.handle(message("!roll 1 6", "ev-ok"))
    assert await t.store.keys(EVENTS) == ["test:r:ev-ok"]


async def test_a_private_part_is_sent_again_too() -> None:
    t = Table()
    await t.ok("st", "!storyteller claim")
    t.faces(10, 10)
    first = await t.app.handle(message("!roll 2 6 secret", "ev-s"))
    again = await t.app.handle(message("!roll 2 6 secret", "ev-s"))
    assert first is not None and again is not None
    assert reply_to_json(again)["private"] == reply_to_json(first)["private"]


async def test_old_records_are_swept() -> None:
    store = MemoryStore()
    await store.set(EVENTS, "old", {"reply": {}, "at": time.time() - EVENT_TTL - 5})
    await store.set(EVENTS, "new", {"reply": {}, "at": time.time()})
    await store.set("other", "old", {"at": 0})
    assert await sweep(store) == 1
    assert await store.keys(EVENTS) == ["new"] and await store.keys("other") == ["old"]


@pytest.mark.parametrize("broken", [{"reply": {"body": [{"t": "nope"}]}}, {"reply": 3}])
async def test_an_unreadable_record_answers_nothing_and_runs_nothing(broken: object) -> None:
    t = Table()
    await t.store.set(EVENTS, "test:r:ev-x", {**broken, "at": time.time()})  # type: ignore[dict-item]
    position = t.dice._position
    reply = await t.app.handle(message("!roll 3 6", "ev-x"))
    assert reply is not None and reply.body == [] and t.dice._position == position


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_old_records_are_swept_from_the_sql_store(backend: str, tmp_path, request) -> None:
    from coterie.storage.migrate import upgrade
    from coterie.storage.sql import SQLStore

    if backend == "sqlite":
        url = f"sqlite:///{tmp_path / 'coterie.db'}"
    else:
        url = request.getfixturevalue("pg_url")
    await upgrade(url)
    store = SQLStore(url)
    try:
        await store.set(EVENTS, "a", {"reply": {}, "at": 1.0})
        await store.set(EVENTS, "b", {"reply": {}, "at": 2.0})
        await store.set("other", "a", {"at": 1.0})
        # everything was written just now: nothing is older than an hour ago
        assert await store.expire(EVENTS, time.time() - 3600) == 0
        assert await store.expire(EVENTS, time.time() + 1) == 2
        assert await store.keys(EVENTS) == [] and await store.keys("other") == ["a"]
    finally:
        await store.close()


async def test_the_reply_is_kept_as_json_text_and_an_earlier_record_still_reads() -> None:
    t = Table()
    t.faces(8, 3)
    first = await t.app.handle(message("!roll 2 6 # the door", "ev-t"))
    assert first is not None and not first.is_error
    stored = await t.store.get(EVENTS, "test:r:ev-t")
    assert set(stored) == {"reply_text", "at"} and isinstance(stored["reply_text"], str)
    assert json.loads(stored["reply_text"]) == reply_to_json(first)
    # a record an earlier coterie wrote keeps the reply as an object: still answered from it
    await t.store.set(EVENTS, "test:r:ev-old", {"reply": reply_to_json(first), "at": time.time()})
    position = t.dice._position
    again = await t.app.handle(message("!roll 2 6 # the door", "ev-old"))
    assert again is not None and again.body == first.body and t.dice._position == position


@pytest.mark.parametrize("broken", ["{not json", 3, '{"body": [{"t": "nope"}]}'])
async def test_an_unreadable_reply_text_answers_nothing_and_runs_nothing(broken: object) -> None:
    t = Table()
    await t.store.set(EVENTS, "test:r:ev-y", {"reply_text": broken, "at": time.time()})
    position = t.dice._position
    reply = await t.app.handle(message("!roll 3 6", "ev-y"))
    assert reply is not None and reply.body == [] and t.dice._position == position
