"""Keys said before a transaction opens (``coterie.storage.readahead``) are read with the lock in
its first round trip on PostgreSQL, and not kept as the room's read-ahead; a command from a
platform event claimed by its adapter (both keys new with every message) stays within two round
trips."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from coterie.framework.app import Coterie
from coterie.framework.config import Config
from coterie.framework.message import Message
from coterie.storage.joining import join_next_transaction
from coterie.storage.migrate import upgrade
from coterie.storage.readahead import expect_reads, expected, forget
from coterie.storage.sql import SQLStore


@pytest.fixture
async def store(pg_url: str) -> AsyncIterator[SQLStore]:
    await upgrade(pg_url)
    made = SQLStore(pg_url)
    yield made
    await made.close()


def test_what_is_said_adds_up_and_is_taken_back() -> None:
    assert expected() == ()
    first = expect_reads([("a", "1")])
    second = expect_reads([("b", "2")])
    assert expected() == (("a", "1"), ("b", "2"))
    forget(second)
    assert expected() == (("a", "1"),)
    forget(first)
    assert expected() == ()


async def test_a_key_said_is_read_with_the_lock(store: SQLStore, pg_trips: dict[str, int]) -> None:
    await store.set("ns", "said", {"v": 1})
    async with store.transaction(lock="room") as tx:  # the lock's read-ahead: just "room"
        await tx.get("ns", "room")
    before = pg_trips["n"]
    token = expect_reads([("ns", "said")])
    try:
        async with store.transaction(lock="room") as tx:
            assert await tx.get("ns", "room") is None
            assert await tx.get("ns", "said") == {"v": 1}  # no round trip of its own
            await tx.set("ns", "room", 1)
    finally:
        forget(token)
    assert pg_trips["n"] - before == 2  # the lock with the reads; the commit
    before = pg_trips["n"]
    async with store.transaction(lock="room") as tx:  # nothing said this time
        await tx.get("ns", "room")
        assert await tx.get("ns", "said") == {"v": 1}  # not kept as the room's read-ahead
    assert pg_trips["n"] - before == 3  # lock and read, the key said before, the unlock


async def test_a_key_not_said_costs_its_round_trip(
    store: SQLStore, pg_trips: dict[str, int]
) -> None:
    """The control: without the hint, the same transaction takes one round trip more."""
    await store.set("ns", "said", {"v": 1})
    async with store.transaction(lock="room") as tx:
        await tx.get("ns", "room")
    before = pg_trips["n"]
    async with store.transaction(lock="room") as tx:
        await tx.get("ns", "room")
        assert await tx.get("ns", "said") == {"v": 1}
        await tx.set("ns", "room", 1)
    assert pg_trips["n"] - before == 3


class Claim:
    """An adapter's claim on a delivery, joined to the command's transaction (as the Slack and
    Telegram adapters make theirs): the first thing the transaction reads and writes."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.landed = False

    async def join(self, tx: Any) -> None:
        assert await tx.get("claims", self.key) is None
        await tx.set("claims", self.key, {"done": False})

    def committed(self) -> None:
        self.landed = True

    def rolled_back(self) -> None:
        self.landed = False


async def test_a_claimed_command_from_a_platform_event_takes_two_round_trips(
    store: SQLStore, pg_trips: dict[str, int]
) -> None:
    """An adapter's delivery: the claim is read first (with the lock), the event's record
    second — said ahead, so in the same round trip (one more without: see the control above)."""
    config = {"plugins": {"enable": ["revised"]}, "limits": {"rate": {"enabled": False}}}
    app = Coterie(Config.model_validate(config), store=store)
    users = ["ana", "bo", "cy"]

    async def deliver(n: int) -> Any:
        claim = Claim(f"update-{n}")
        join_next_transaction(claim)
        try:
            reply = await app.handle(
                Message(
                    platform="test",
                    room="r",
                    user=users[n % 3],
                    text="!roll 7 6",
                    message_id=f"m{n}",
                )
            )
        finally:
            join_next_transaction(None)
        assert claim.landed
        return reply

    try:
        for n in range(5):  # warm up: connections, the room's read-ahead
            await deliver(n)
        before = pg_trips["n"]
        for n in range(5, 17):
            reply = await deliver(n)
            assert reply is not None and not reply.is_error
        assert (pg_trips["n"] - before) / 12 == 2
    finally:
        await app.stop()


async def test_a_take_said_is_made_once_with_the_lock_and_kept_if_rolled_back(
    store: SQLStore,
) -> None:
    """A take said before a transaction opens is made in its first round trip and committed
    there: the transaction rolling back keeps it. Another transaction opened inside it (a
    plugin's own, on another lock) makes no second take."""
    from coterie.storage.readahead import expect_take, forget_take
    from coterie.storage.shared import take_request

    request = take_request("bucket", "user:u", "room:r", 1.0, 100.0, (5.0, 9.0), (1.0, 1.0))
    token = expect_take(request)
    try:
        with pytest.raises(RuntimeError):
            async with store.transaction(lock="room") as tx:
                assert await tx.get("ns", "room") is None
                assert await tx.taken() == {"allowed": True}
                async with store.transaction(lock="elsewhere") as inner:
                    assert await inner.taken() is None
                raise RuntimeError("the command failed")
    finally:
        forget_take(token)
    assert (await store.get("bucket", "user:u"))["t"] == 4.0  # one token, kept
    assert (await store.get("bucket", "room:r"))["t"] == 8.0
