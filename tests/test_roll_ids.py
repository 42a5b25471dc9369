"""Roll ids do not repeat (issue 19, item 1): a million of them, rolls through the whole message
path, and ``!log`` never confusing two rolls whose shown (short) ids are the same; migration 0003,
which took the unique index off ``id`` (issue 18)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
import sqlalchemy as sa

from coterie.dice.sources import SeededDice
from coterie.framework.app import Coterie
from coterie.framework.commands import ID_ALPHABET, ROLL_ID_LENGTH, new_roll_id, shown_id
from coterie.framework.config import Config
from coterie.framework.message import Message
from coterie.render.encode import to_plain
from coterie.storage.engine import create_engine
from coterie.storage.migrate import current, upgrade
from coterie.storage.sql import SQLStore
from coterie.storage.state import RollRecord
from test_store_characters import _migrate

MILLION = 1_000_000
T = TypeVar("T")
CONFIG = {"plugins": {"enable": ["revised"]}, "limits": {"rate": {"enabled": False}}}


def test_ids_have_65_random_bits_in_the_alphabet() -> None:
    ids = [new_roll_id() for _ in range(2000)]
    assert all(len(i) == ROLL_ID_LENGTH and set(i) <= set(ID_ALPHABET) for i in ids)
    # every symbol turns up in every position: no position is stuck
    for position in range(ROLL_ID_LENGTH):
        assert {i[position] for i in ids} == set(ID_ALPHABET), position
    assert shown_id("k3f9qzab7mxq2") == "k3f9qz"
    assert shown_id("k3f9qzab7mxq2-3") == "k3f9qz-3"
    assert shown_id("k3f9qz") == "k3f9qz"  # an id logged before ids grew


def test_a_million_ids_do_not_repeat() -> None:
    """10^6 new ids, not one the same as another (the roll log keeps no unique index on ``id``
    since migration 0003: 65 random bits are what keeps ids apart)."""
    began = time.perf_counter()
    ids = {new_roll_id() for _ in range(MILLION)}
    assert len(ids) == MILLION
    assert time.perf_counter() - began < 30


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_migration_0003_keeps_the_log_and_drops_only_the_unique_index(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Up from 0002: every roll kept with its ``seq``, new rolls numbered after them, the
    ``(room, seq)`` index still there, and two rolls may share an id (``!log`` lists both);
    down again: the unique index is back and refuses a repeated id."""
    url = (
        f"sqlite+aiosqlite:///{tmp_path / 'state.db'}"
        if backend == "sqlite"
        else request.getfixturevalue("pg_url")
    )
    await _migrate(url, "upgrade", "0002")
    store = SQLStore(url)
    try:
        for n in range(5):
            await store.log_roll(RollRecord(**{**_row(f"before{n}aaaaaa"), "faces": [n + 1]}))
        before = [(r.id, r.faces) for r in await store.rolls("t:r", limit=None)]
        with pytest.raises(Exception, match=r"(?i)unique"):
            await store.log_roll(RollRecord(**_row("before0aaaaaa")))
    finally:
        await store.close()
    await upgrade(url)
    assert await current(url) == "0003"
    store = SQLStore(url)
    try:
        assert [(r.id, r.faces) for r in await store.rolls("t:r", limit=None)] == before
        await store.log_roll(RollRecord(**{**_row("before0aaaaaa"), "faces": [9]}))
        await store.log_roll(RollRecord(**{**_row("after0aaaaaaa"), "faces": [8]}))
        rolls = await store.rolls("t:r", limit=3)
        assert [(r.id, r.faces) for r in rolls] == [
            ("after0aaaaaaa", [8]),
            ("before0aaaaaa", [9]),
            ("before4aaaaaa", [5]),
        ]
    finally:
        await store.close()
    assert await _unique_on_id(url) is False
    assert "ix_rolls_room_seq" in await _indexes(url)
    with pytest.raises(Exception, match=r"(?i)unique"):  # down: refused while an id repeats
        await _migrate(url, "downgrade", "0002")
    assert await current(url) == "0003"
    await _execute(url, "DELETE FROM rolls WHERE faces = '[9]'")
    await _migrate(url, "downgrade", "0002")
    assert await current(url) == "0002"
    assert await _unique_on_id(url) is True
    assert "ix_rolls_room_seq" in await _indexes(url)
    store = SQLStore(url)
    try:
        with pytest.raises(Exception, match=r"(?i)unique"):
            await store.log_roll(RollRecord(**_row("after0aaaaaaa")))
        assert len(await store.rolls("t:r", limit=None)) == 6
    finally:
        await store.close()


async def _inspect(url: str, look: Callable[[Any], T]) -> T:
    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            return await conn.run_sync(lambda c: look(sa.inspect(c)))
    finally:
        await engine.dispose()


async def _indexes(url: str) -> set[str]:
    return await _inspect(url, lambda i: {x["name"] for x in i.get_indexes("rolls")})


async def _unique_on_id(url: str) -> bool:
    """Whether anything on ``rolls`` refuses a repeated ``id`` (a unique constraint or index)."""

    def look(inspector: Any) -> bool:
        unique = [c["column_names"] for c in inspector.get_unique_constraints("rolls")]
        unique += [x["column_names"] for x in inspector.get_indexes("rolls") if x["unique"]]
        return ["id"] in unique

    return await _inspect(url, look)


async def _execute(url: str, statement: str) -> None:
    engine = create_engine(url)
    try:
        async with engine.begin() as conn:
            await conn.execute(sa.text(statement))
    finally:
        await engine.dispose()


def _row(roll_id: str) -> dict[str, object]:
    return {
        "id": roll_id,
        "room": "t:r",
        "user": "u",
        "display_name": "U",
        "variant": "revised",
        "request": "!roll 1",
        "faces": [5],
        "outcome": "failure",
        "successes": 0,
    }


async def _app(tmp_path: Path) -> Coterie:
    url = f"sqlite:///{tmp_path / 'c.db'}"
    await upgrade(url)
    return Coterie(Config.model_validate(CONFIG), dice=SeededDice(7), store=SQLStore(url))


async def test_rolls_through_the_message_path_all_logged_with_distinct_ids(
    tmp_path: Path,
) -> None:
    app = await _app(tmp_path)
    try:
        shown = []
        for n in range(600):
            text = "!roll 3; 4" if n % 3 == 0 else "!roll 5"
            reply = await app.handle(Message(platform="t", room="r", user="u", text=text))
            assert reply is not None and not reply.is_error, reply and to_plain(reply.body)
            shown.append(reply.meta["roll_id"])
            assert to_plain(reply.body).splitlines()[-1] == f"roll {reply.meta['roll_id']}"
        rolls = await app.state.rolls("t:r", limit=None)
        assert len(rolls) == 800  # 200 messages with two rolls
        assert len({r.id for r in rolls}) == 800
        assert {shown_id(r.id.partition("-")[0]) for r in rolls} == set(shown)
        assert all(len(r.id.partition("-")[0]) == ROLL_ID_LENGTH for r in rolls)
    finally:
        await app.stop()


async def test_log_tells_apart_two_rolls_sharing_a_shown_id(tmp_path: Path) -> None:
    """Two rolls whose ids start alike (as two of enough rolls will, shown short): ``!log``
    with the shown id lists both, each under its whole id; the whole id finds just one."""
    app = await _app(tmp_path)
    try:
        one, two = "abc234aaaaaaa", "abc234bbbbbbb"
        assert shown_id(one) == shown_id(two)
        await app.state.log_roll(RollRecord(**{**_row(one), "faces": [3, 3]}))
        await app.state.log_roll(RollRecord(**{**_row(two), "faces": [9, 9]}))
        await app.state.log_roll(RollRecord(**{**_row("zzz999zzzzzzz"), "faces": [1]}))

        async def log(args: str) -> str:
            reply = await app.handle(Message(platform="t", room="r", user="u", text=f"!log {args}"))
            assert reply is not None and not reply.is_error, reply and to_plain(reply.body)
            return to_plain(reply.body)

        both = await log("abc234")
        assert "2 different rolls have ids starting with abc234" in both
        assert f"Roll {one}" in both and f"Roll {two}" in both
        assert "Faces: 3 3" in both and "Faces: 9 9" in both
        assert "zzz999" not in both
        just_one = await log(two)
        assert f"Roll {two}" in just_one and "Faces: 9 9" in just_one
        assert one not in just_one and "different rolls" not in just_one
        listed = await log("5")
        assert listed.count("abc234 ") == 2  # the list shows ids short
    finally:
        await app.stop()
