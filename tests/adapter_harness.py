"""Shared by the adapter tests: run an adapter for the length of a block (a crash or a hang
fails the test); a store that counts the look-ups of one namespace."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, TypeVar

AdapterT = TypeVar("AdapterT", bound=Any)


@asynccontextmanager
async def serving(adapter: AdapterT, *, timeout: float = 10.0) -> AsyncIterator[AdapterT]:
    """Run ``adapter`` (which sets ``adapter.ready`` once it serves) until the block ends; a crash,
    a start or a stop slower than ``timeout`` seconds fails the test."""
    task = asyncio.create_task(adapter.run())
    ready = asyncio.create_task(adapter.ready.wait())
    try:
        done, _ = await asyncio.wait(
            {task, ready}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
        )
        if task in done:
            task.result()
            raise AssertionError("the adapter stopped before it was ready")
        assert ready in done, "the adapter was not ready in time"
        yield adapter
    finally:
        ready.cancel()
        await adapter.stop()
        finished, _ = await asyncio.wait({task}, timeout=timeout)
        if not finished:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            raise AssertionError("the adapter did not stop")
    task.result()


class LookUps:
    """A store that counts its reads of ``namespace`` outside transactions (``.reads``): an
    adapter's look-ups of its delivery records."""

    def __init__(self, store: Any, namespace: str) -> None:
        self.store = store
        self.namespace = namespace
        self.reads = 0

    async def get(self, namespace: str, key: str) -> Any:
        if namespace == self.namespace:
            self.reads += 1
        return await self.store.get(namespace, key)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)
