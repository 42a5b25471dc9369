"""The memory store's transaction (:class:`coterie.storage.scope.LockedScope`): one room's
transactions never interleave, other rooms' do not wait, an error or a cancellation lands
nothing and leaves the lock usable, and a room's lock is forgotten once nobody holds it."""

from __future__ import annotations

import asyncio

import pytest

from coterie.storage.state import MemoryStore


async def _increment(store: MemoryStore, room: str, pause: float = 0.0) -> None:
    async with store.transaction(room) as tx:
        value = await tx.get("n", room) or 0
        await asyncio.sleep(pause)  # another task runs here: without the lock it reads the same
        await tx.set("n", room, value + 1)


async def test_one_rooms_transactions_do_not_interleave() -> None:
    store = MemoryStore()
    await asyncio.gather(*(_increment(store, "r") for _ in range(30)))
    assert await store.get("n", "r") == 30
    assert store._locks == {}


async def test_without_a_lock_updates_are_lost_negative_control() -> None:
    store = MemoryStore()
    await asyncio.gather(*(_increment(store, "") for _ in range(30)))
    assert await store.get("n", "") == 1  # the check above can fail


async def _held(store: MemoryStore, room: str) -> tuple[asyncio.Task[None], asyncio.Event]:
    """A task inside a transaction of ``room`` until the event it gives back is set."""
    entered = asyncio.Event()
    release = asyncio.Event()

    async def hold() -> None:
        async with store.transaction(room):
            entered.set()
            await release.wait()

    holder = asyncio.create_task(hold())
    await entered.wait()
    return holder, release


async def test_other_rooms_do_not_wait() -> None:
    store = MemoryStore()
    holder, release = await _held(store, "a")
    await asyncio.wait_for(_increment(store, "b"), 1)
    assert await store.get("n", "b") == 1
    release.set()
    await holder
    assert store._locks == {}


async def test_an_error_lands_nothing_and_frees_the_room() -> None:
    store = MemoryStore()
    with pytest.raises(RuntimeError):
        async with store.transaction("r") as tx:
            await tx.set("n", "r", 5)
            raise RuntimeError("boom")
    assert await store.get("n", "r") is None
    assert store._locks == {}
    await _increment(store, "r")
    assert await store.get("n", "r") == 1


async def test_a_cancelled_waiter_lands_nothing_and_the_room_stays_usable() -> None:
    store = MemoryStore()
    entered = asyncio.Event()
    release = asyncio.Event()

    async def hold() -> None:
        async with store.transaction("r") as tx:
            await tx.set("n", "r", 1)
            entered.set()
            await release.wait()

    holder = asyncio.create_task(hold())
    await entered.wait()
    waiter = asyncio.create_task(_increment(store, "r"))
    await asyncio.sleep(0.01)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    release.set()
    await holder
    assert await store.get("n", "r") == 1
    await asyncio.wait_for(_increment(store, "r"), 1)
    assert await store.get("n", "r") == 2
    assert store._locks == {}


async def test_a_waiter_cancelled_as_the_lock_reaches_it_passes_it_on() -> None:
    store = MemoryStore()
    holder, release = await _held(store, "r")
    first = asyncio.create_task(_increment(store, "r"))
    second = asyncio.create_task(_increment(store, "r"))
    await asyncio.sleep(0.01)  # both wait, in that order
    release.set()
    await asyncio.sleep(0)  # the holder ends and hands the lock to `first`, not run yet
    assert holder.done()
    first.cancel()  # ... which is cancelled before it runs: it must hand the lock on
    with pytest.raises(asyncio.CancelledError):
        await first
    await asyncio.wait_for(second, 1)
    assert await store.get("n", "r") == 1
    assert store._locks == {}
