"""The Matrix and Telegram adapters' back-off sleeps end early on a stop; a cancellation of the
adapter's task that lands just as the stop event is set must still cancel it. On Python 3.11
``asyncio.wait_for`` returned normally in that case and dropped the cancellation (the bug
tests/test_plugins.py pins for async hooks), so the sleeps wait under ``asyncio.timeout``."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from coterie.framework.app import Coterie
from coterie.framework.config import Config
from coterie.storage.state import MemoryStore
from coterie_matrix.adapter import MatrixAdapter
from coterie_telegram.bot import sleep_until_stopped


async def stop_and_cancel(stopping: asyncio.Event, sleep: Callable[[], Awaitable[object]]) -> None:
    task = asyncio.ensure_future(sleep())
    await asyncio.sleep(0)  # the sleep is now waiting on the event
    stopping.set()  # the stop ...
    task.cancel()  # ... and the supervisor's cancellation in the same loop turn
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_telegram_sleep_keeps_a_cancellation_that_arrives_with_the_stop() -> None:
    stopping = asyncio.Event()
    await stop_and_cancel(stopping, lambda: sleep_until_stopped(stopping, 30))


async def test_matrix_sleep_keeps_a_cancellation_that_arrives_with_the_stop(tmp_path: Path) -> None:
    config = Config.model_validate({"plugins": {"enable": ["revised", "matrix"]}})
    settings = {
        "enabled": True,
        "homeserver": "http://127.0.0.1:9",
        "user_id": "@bot:coterie.test",
        "password_env": "COTERIE_TEST_MATRIX_PASSWORD",
        "store_path": str(tmp_path / "store"),
    }
    adapter = MatrixAdapter(
        Coterie(config, store=MemoryStore()),
        settings,
        environ={"COTERIE_TEST_MATRIX_PASSWORD": "secret"},
    )
    await stop_and_cancel(adapter._stopping, lambda: adapter._sleep(30))


async def test_a_stop_alone_ends_the_sleeps_early(tmp_path: Path) -> None:
    stopping = asyncio.Event()
    task = asyncio.ensure_future(sleep_until_stopped(stopping, 30))
    await asyncio.sleep(0)
    stopping.set()
    await asyncio.wait_for(task, 1)
