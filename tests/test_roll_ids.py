"""Roll ids do not repeat (issue 19, item 1): a million of them into the SQLite roll log's
UNIQUE index, rolls through the whole message path, and ``!log`` never confusing two rolls whose
shown (short) ids are the same."""

from __future__ import annotations

import time
from pathlib import Path

from coterie.dice.sources import SeededDice
from coterie.framework.app import Coterie
from coterie.framework.commands import ID_ALPHABET, ROLL_ID_LENGTH, new_roll_id, shown_id
from coterie.framework.config import Config
from coterie.framework.message import Message
from coterie.render.encode import to_plain
from coterie.storage.migrate import upgrade
from coterie.storage.sql import SQLStore
from coterie.storage.state import RollRecord

MILLION = 1_000_000
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


async def test_a_million_ids_into_the_sqlite_roll_log(tmp_path: Path) -> None:
    """10^6 ids, each inserted into the real ``rolls`` table with its UNIQUE index on ``id``
    (one transaction, rows otherwise alike; in sorted order, which SQLite's indexes take
    several times faster and which changes nothing about which ids repeat): not one is
    refused."""
    url = f"sqlite:///{tmp_path / 'c.db'}"
    await upgrade(url)
    store = SQLStore(url)
    began = time.perf_counter()
    try:
        async with store.transaction("t:r") as tx:
            await tx.log_roll(RollRecord(**_row("first")))
            db = tx._db  # the store's own connection, inside its transaction
            db.execute("PRAGMA cache_size = -131072")  # the indexes in memory: a fast test
            db.executemany(
                'INSERT INTO rolls (id, room, "user", display_name, variant, request, faces, '
                "outcome, successes, botch, time, detail) "
                "VALUES (?, 't:r', 'u', 'U', 'revised', '!roll 1', '[]', 'failure', 0, 0, 0, '{}')",
                ((roll_id,) for roll_id in sorted(new_roll_id() for _ in range(MILLION))),
            )
        count = await store._read(lambda d: d.execute("SELECT count(DISTINCT id) FROM rolls"))
        assert count.fetchone()[0] == MILLION + 1
    finally:
        await store.close()
    assert time.perf_counter() - began < 60


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
