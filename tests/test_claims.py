"""One write transaction per message: an adapter's claim on a delivery joins the command's own
transaction (coterie.storage.joining), and its "answered" marks are written in batches
(coterie.storage.deferred) — on the memory store, SQLite and PostgreSQL. The exactly-once rules
of issue 19 still hold: of two workers racing for one delivery, one answers."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from coterie.storage.ambient import AmbientStore
from coterie.storage.deferred import DeferredWrites
from coterie.storage.joining import join_next_transaction
from coterie.storage.state import MemoryStore, StateStore
from coterie_slack.dedup import BUSY, DONE, NAMESPACE, NEW, ClaimLost, RecentDeliveries
from coterie_telegram.records import ClaimLost as UpdateClaimLost
from coterie_telegram.records import SeenIds

NS = "test.marks"


@pytest.fixture
def store(migrated_store: StateStore) -> StateStore:
    """Each kind of store in turn (``pg_fixture.migrated_store``)."""
    return migrated_store


# --- deferred writes -------------------------------------------------------------------------


async def test_a_deferred_mark_lands_with_the_next_transaction(store: StateStore) -> None:
    marks = DeferredWrites(store, NS, delay=60)
    marks.put("a", {"done": True})
    assert marks.pending("a") == {"done": True}
    assert await store.get(NS, "a") is None  # not written yet
    async with store.transaction("room") as tx:
        await tx.set(NS, "other", 1)
        batch = await marks.write_into(tx)
    marks.landed(batch)
    assert await store.get(NS, "a") == {"done": True}
    assert marks.pending("a") is None and len(marks) == 0


async def test_a_failed_transaction_leaves_the_marks_pending(store: StateStore) -> None:
    marks = DeferredWrites(store, NS, delay=60)
    marks.put("a", 1)
    batch: dict[str, Any] = {}
    with pytest.raises(RuntimeError):
        async with store.transaction() as tx:
            batch = await marks.write_into(tx)
            raise RuntimeError("rolled back")
    marks.not_landed(batch)
    assert await store.get(NS, "a") is None
    assert marks.pending("a") == 1
    await marks.flush()  # one transaction of its own
    assert await store.get(NS, "a") == 1 and len(marks) == 0


async def test_a_mark_rides_on_one_transaction_at_a_time(store: StateStore) -> None:
    """Transactions that open while another carries a mark leave it out; when that one fails,
    the mark is the next one's."""
    marks = DeferredWrites(store, NS, delay=60)
    marks.put("a", 1)
    marks.put("b", 2)
    async with store.transaction() as tx:
        first = await marks.write_into(tx)
    assert first == {"a": 1, "b": 2}
    marks.put("c", 3)
    async with store.transaction() as tx:  # a and b are still on their way (not landed)
        second = await marks.write_into(tx)
    assert second == {"c": 3}
    await marks.flush()  # every pending mark rides on a transaction: it leaves them pending
    assert len(marks) == 3
    marks.not_landed(first)  # say the first one's commit failed after all
    assert marks.pending("a") == 1 and len(marks) == 3
    marks.landed(second)
    async with store.transaction() as tx:
        third = await marks.write_into(tx)
    assert third == {"a": 1, "b": 2}
    marks.landed(third)
    assert len(marks) == 0
    assert [await store.get(NS, key) for key in "abc"] == [1, 2, 3]


async def test_a_write_that_fails_in_write_into_frees_its_marks() -> None:
    class Refusing:
        async def set(self, namespace: str, key: str, value: Any) -> None:
            raise ValueError("refused")

    marks = DeferredWrites(MemoryStore(), NS, delay=60)
    marks.put("a", 1)
    with pytest.raises(ValueError):
        await marks.write_into(Refusing())  # type: ignore[arg-type]
    async with MemoryStore().transaction() as tx:
        assert await marks.write_into(tx) == {"a": 1}


async def test_marks_nobody_carries_are_flushed_after_the_delay(store: StateStore) -> None:
    marks = DeferredWrites(store, NS, delay=0.01)
    for key in "abc":
        marks.put(key, key)
    for _ in range(200):
        if len(marks) == 0:
            break
        await asyncio.sleep(0.01)
    assert [await store.get(NS, key) for key in "abc"] == ["a", "b", "c"]


async def test_a_mark_left_after_a_ride_waits_a_delay_of_its_own(store: StateStore) -> None:
    """A mark put while others ride on a transaction is not flushed when the older marks'
    delay ends: the next message can still carry it."""
    marks = DeferredWrites(store, NS, delay=0.3)
    marks.put("a", 1)
    await asyncio.sleep(0.2)  # most of a's delay spent
    async with store.transaction("room") as tx:
        batch = await marks.write_into(tx)
        marks.put("b", 2)  # put while a rides
    marks.landed(batch)
    await asyncio.sleep(0.15)  # past a's delay, within b's
    assert marks.pending("b") == 2 and await store.get(NS, "b") is None
    for _ in range(200):
        if len(marks) == 0:
            break
        await asyncio.sleep(0.02)
    assert await store.get(NS, "b") == 2


async def test_a_mark_put_again_while_it_is_written_stays_pending() -> None:
    store = MemoryStore()
    marks = DeferredWrites(store, NS, delay=60)
    marks.put("a", 1)
    async with store.transaction() as tx:
        batch = await marks.write_into(tx)
        marks.put("a", 2)  # a newer value while the older one is being written
        async with MemoryStore().transaction() as other:
            assert await marks.write_into(other) == {"a": 2}  # the newer value is free
    marks.landed(batch)
    assert marks.pending("a") == 2


# --- joining the next transaction ------------------------------------------------------------


class Recorder:
    """A joiner writing one key, recording what happened to it."""

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.joined: list[Any] = []
        self.landed = False
        self.rolled = 0

    async def join(self, tx: Any) -> None:
        self.joined.append(tx)
        await tx.set(NS, "claim", "mine")
        if self.fail:
            raise ClaimLost(BUSY)

    def committed(self) -> None:
        self.landed = True

    def rolled_back(self) -> None:
        self.rolled += 1


async def test_a_joiner_runs_first_in_the_next_transaction_only(store: StateStore) -> None:
    ambient = AmbientStore(store)
    joiner = Recorder()
    join_next_transaction(joiner)
    async with ambient.transaction("room") as tx:
        assert joiner.joined == [tx]  # before the body
        await ambient.set(NS, "effect", 1)
    assert joiner.landed
    assert await store.get(NS, "claim") == "mine" and await store.get(NS, "effect") == 1
    async with ambient.transaction("room"):
        pass
    assert len(joiner.joined) == 1  # consumed by the first one


async def test_a_rolled_back_transaction_does_not_land_its_joiner(store: StateStore) -> None:
    ambient = AmbientStore(store)
    joiner = Recorder()
    join_next_transaction(joiner)
    with pytest.raises(ValueError):
        async with ambient.transaction("room"):
            await ambient.set(NS, "effect", 1)
            raise ValueError("a command's error")
    assert joiner.joined and not joiner.landed and joiner.rolled == 1
    assert await store.get(NS, "claim") is None and await store.get(NS, "effect") is None


async def test_a_joiner_hears_of_a_commit_that_failed() -> None:
    class FailingCommit(MemoryStore):
        def _apply(self, tx: Any) -> None:
            raise OSError("disk full")

    ambient = AmbientStore(FailingCommit())
    joiner = Recorder()
    join_next_transaction(joiner)
    with pytest.raises(OSError):
        async with ambient.transaction("room"):
            await ambient.set(NS, "effect", 1)
    assert joiner.joined and not joiner.landed and joiner.rolled == 1


async def test_a_joiner_that_refuses_rolls_the_transaction_back(store: StateStore) -> None:
    ambient = AmbientStore(store)
    joiner = Recorder(fail=True)
    join_next_transaction(joiner)
    ran = False
    with pytest.raises(ClaimLost):
        async with ambient.transaction("room"):
            ran = True
    assert not ran and not joiner.landed and joiner.rolled == 1
    assert await store.get(NS, "claim") is None


async def test_a_joiner_taken_back_joins_nothing(store: StateStore) -> None:
    ambient = AmbientStore(store)
    joiner = Recorder()
    join_next_transaction(joiner)
    join_next_transaction(None)
    async with ambient.transaction("room"):
        pass
    assert joiner.joined == []


# --- Slack: the claim in the command's transaction -------------------------------------------


async def command(ambient: AmbientStore, room: str, n: int) -> None:
    """What a command that changes state does: one transaction on its room."""
    async with ambient.transaction(room):
        await ambient.set("test.effects", f"{room}:{n}", n)


async def test_a_slack_delivery_is_claimed_in_its_commands_transaction(store: StateStore) -> None:
    ambient = AmbientStore(store)
    recent = RecentDeliveries(ambient)
    assert await recent.check("event:Ev1") == NEW
    assert await store.get(NAMESPACE, "event:Ev1") is None  # checked, not written
    assert await recent.check("event:Ev1") == BUSY  # being answered here
    pending = recent.claim_later("event:Ev1")
    join_next_transaction(pending)
    await command(ambient, "slack:C1", 1)
    assert pending.landed
    entry = await store.get(NAMESPACE, "event:Ev1")
    assert entry is not None and entry["done"] is False  # claimed with the command's write
    assert await recent.settle(pending) == NEW  # no transaction of its own
    recent.done_soon("event:Ev1")
    assert await recent.check("event:Ev1") == DONE  # known here before it lands
    await recent.flush()
    entry = await store.get(NAMESPACE, "event:Ev1")
    assert entry is not None and entry["done"] is True


async def test_of_two_workers_racing_for_one_slack_delivery_one_answers(
    store: StateStore,
) -> None:
    first, second = AmbientStore(store), AmbientStore(store)
    worker1, worker2 = RecentDeliveries(first), RecentDeliveries(second)
    # both see the delivery free (neither has claimed it yet)
    assert await worker1.check("event:Ev2") == NEW
    assert await worker2.check("event:Ev2") == NEW
    claim1 = worker1.claim_later("event:Ev2")
    join_next_transaction(claim1)
    await command(first, "slack:C1", 1)
    claim2 = worker2.claim_later("event:Ev2")
    join_next_transaction(claim2)
    with pytest.raises(ClaimLost):  # its command's transaction is rolled back: no effect
        await command(second, "slack:C1", 2)
    assert await store.get("test.effects", "slack:C1:2") is None
    assert await worker1.settle(claim1) == NEW
    assert await worker2.settle(claim2) == BUSY  # answers nothing
    worker1.done_soon("event:Ev2")
    await worker1.flush()
    assert await worker2.check("event:Ev2") == DONE


async def test_a_slack_reply_without_a_transaction_is_claimed_before_it_is_sent(
    store: StateStore,
) -> None:
    """A command that changes nothing opens no transaction: the claim is made on its own."""
    ambient = AmbientStore(store)
    worker1, worker2 = RecentDeliveries(ambient), RecentDeliveries(AmbientStore(store))
    assert await worker1.check("event:Ev3") == NEW
    assert await worker2.check("event:Ev3") == NEW
    claim1, claim2 = worker1.claim_later("event:Ev3"), worker2.claim_later("event:Ev3")
    assert await worker1.settle(claim1) == NEW
    assert await worker2.settle(claim2) == BUSY


# --- Telegram: the same for update ids -------------------------------------------------------


async def test_a_telegram_update_is_claimed_in_its_commands_transaction(
    store: StateStore,
) -> None:
    ambient = AmbientStore(store)
    seen = SeenIds(ambient, "test.updates", "bot", ttl=3600, max_entries=100)
    other = SeenIds(AmbientStore(store), "test.updates", "bot", ttl=3600, max_entries=100)
    assert await seen.check("7", lease=10)
    assert not await seen.check("7", lease=10)  # being answered here
    assert await other.check("7", lease=10)  # the other worker cannot know yet
    pending = seen.claim_later("7", lease=10)
    join_next_transaction(pending)
    await command(ambient, "telegram:-1", 7)
    assert pending.landed and await seen.settle(pending)
    racing = other.claim_later("7", lease=10)
    join_next_transaction(racing)
    with pytest.raises(UpdateClaimLost):
        await command(AmbientStore(store), "telegram:-1", 8)
    assert not await other.settle(racing)
    seen.done_soon("7")
    assert await seen.is_done("7") and not await other.is_done("7")  # not landed yet
    await seen.flush()
    assert await other.is_done("7")


async def test_a_telegram_update_that_needed_no_claim_is_marked_answered(
    store: StateStore,
) -> None:
    """Chatter (not a command) is only checked; marking it answered still records it, so
    polling confirms it and a redelivery is not taken again."""
    seen = SeenIds(AmbientStore(store), "test.updates", "bot", ttl=3600, max_entries=100)
    assert await seen.check("9", lease=10)
    await seen.done("9")
    assert await seen.is_done("9")
    assert not await seen.check("9", lease=10)


async def test_a_claim_lost_inside_a_command_rolls_it_back_quietly(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Through the real core: another worker claimed the delivery first, so the command's
    transaction is rolled back (no roll logged), nothing is logged as a failure, and the
    worker replies nothing."""
    from coterie.framework.message import Message
    from slack_fake import make_core

    core = make_core([8, 8, 8], limits={"rate": {"enabled": False}})
    key = "event:Ev9"
    other, here = RecentDeliveries(core.state), RecentDeliveries(core.state)
    assert await here.check(key) == NEW
    assert await other.check(key) == NEW
    assert await other.settle(other.claim_later(key)) == NEW  # the other worker was faster
    pending = here.claim_later(key)
    join_next_transaction(pending)
    message = Message(platform="slack", room="C1", user="U1", text="!roll 3", message_id="1.5")
    try:
        reply = await core.handle(message)
    finally:
        join_next_transaction(None)
    assert reply is not None and not pending.landed
    assert await core.state.rolls("slack:C1") == []
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")]
    assert await here.settle(pending) == BUSY
    # and the same message with the claim free is a roll like any other
    join_next_transaction(RecentDeliveries(core.state).claim_later("event:Ev10"))
    try:
        await core.handle(Message(platform="slack", room="C1", user="U1", text="!roll 3"))
    finally:
        join_next_transaction(None)
    assert len(await core.state.rolls("slack:C1")) == 1
