"""Every command under a time limit; third-party handlers kept from stalling the other rooms
(issue 19, item 7). The misbehaving plugin is tests/hanging_plugin.py, registered as a third
party through PluginHost.register."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from coterie import hookimpl
from coterie.dice.sources import SeededDice
from coterie.errors import ConfigError
from coterie.framework.app import Coterie
from coterie.framework.commands import Command, CommandContext
from coterie.framework.config import parse_config
from coterie.framework.limits import describe_limits
from coterie.framework.message import Message
from coterie.framework.plugins import PluginHost
from coterie.render.elements import Node, Text
from coterie.render.encode import to_plain
from coterie.storage.migrate import upgrade
from coterie.storage.sql import SQLStore, create_engine
from coterie.storage.state import MemoryStore, StateStore
from hanging_plugin import OWNER, HangingPlugin

#: what "answered within its normal time" means for another room's `!roll` during a hang
PROMPT = 0.25


def make(plugin: HangingPlugin, store: StateStore | None = None, **limits: Any) -> Coterie:
    host = PluginHost()
    host.load(["revised"])
    host.register(plugin, "hanging")
    config = parse_config({"plugins": {"enable": ["revised"]}, "limits": limits})
    return Coterie(config, host=host, dice=SeededDice(1), store=store)


async def ask(app: Coterie, text: str, room: str = "a") -> tuple[str, float]:
    """The reply's plain text and how long it took."""
    started = time.perf_counter()
    reply = await app.handle(Message(platform="test", room=room, user="u", text=text))
    assert reply is not None
    return to_plain(reply.body), time.perf_counter() - started


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[StateStore]:
    if request.param == "memory":
        yield MemoryStore()
        return
    if request.param == "sqlite":
        engine = create_engine(f"sqlite+aiosqlite:///{tmp_path / 'hang.db'}")
    else:
        engine = create_engine(request.getfixturevalue("pg_url"))
    await upgrade(engine)
    yield SQLStore(engine)


async def test_coterie_plugins_are_trusted_third_parties_are_not() -> None:
    app = make(HangingPlugin())
    trusted = app.host.trusted
    assert {"coterie.play.roll", "coterie.play.help", "revised"} <= trusted
    assert "hanging" not in trusted
    by_name = {c.name: c.plugin for c in app.commands}
    assert by_name["roll"] in trusted and by_name["hang"] == "hanging"


async def test_an_async_handler_that_never_returns_is_stopped_rolled_back_and_frees_the_room(
    store: StateStore,
) -> None:
    plugin = HangingPlugin()
    app = make(plugin, store, command_timeout=0.6)
    try:
        hang = asyncio.create_task(ask(app, "!hang", room="a"))
        await asyncio.wait_for(plugin.hanging.wait(), 5)
        # another room answers within its normal time while the hang is in progress; on SQLite
        # (one writer at a time for the whole database) it waits for the time limit at most
        other, took = await ask(app, "!roll 3 6", room="b")
        sqlite = getattr(store, "dialect", "") == "sqlite"
        assert "3 dice" in other and took < (0.6 + PROMPT if sqlite else PROMPT), (other, took)
        assert sqlite or not hang.done()
        text, took = await asyncio.wait_for(hang, 5)
        assert text.startswith("⚠ `!hang` took too long (more than 0.6 s)"), text
        assert "nothing it did was kept" in text and 0.55 < took < 3
        # the room's lock is free and the hang's write was rolled back
        again, took = await ask(app, "!roll 2 6", room="a")
        assert "2 dice" in again and took < PROMPT
        assert await app.state.get(f"{OWNER}:test:a", "touched") is None
    finally:
        await app.stop()


async def test_a_blocking_sync_handler_runs_in_a_thread_and_is_fenced_until_it_returns() -> None:
    plugin = HangingPlugin()
    app = make(plugin, command_timeout=0.5)
    try:
        nap = asyncio.create_task(ask(app, "!nap 2", room="a"))
        await asyncio.sleep(0.1)
        # time.sleep(2) in the handler: the event loop keeps answering every other room
        for room in ("b", "c"):
            other, took = await ask(app, "!roll 3 6", room=room)
            assert "3 dice" in other and took < PROMPT, (other, took)
        text, took = await asyncio.wait_for(nap, 5)
        assert text.startswith("⚠ `!nap` took too long") and took < 1.5, (text, took)
        assert plugin.threads and plugin.threads[0] != threading.current_thread().name
        # while the abandoned call sleeps on, the command is refused at once; the rest works
        refused, took = await ask(app, "!nap 0", room="b")
        assert refused.startswith("⚠ `!nap` is unavailable for now") and took < PROMPT
        assert "has not finished" in refused
        assert (await ask(app, "!fine", room="a"))[0] == "fine"
        assert "2 dice" in (await ask(app, "!roll 2 6", room="a"))[0]
        # once it has returned, the command works again
        for _ in range(100):
            if plugin.naps_done:
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.05)
        assert plugin.naps_done == 1
        assert (await ask(app, "!nap 0", room="b"))[0] == "slept"
    finally:
        await app.stop()


async def test_an_async_handler_that_blocks_the_loop_is_named_and_its_plugin_paused(
    caplog: pytest.LogCaptureFixture,
) -> None:
    plugin = HangingPlugin()
    app = make(plugin, command_timeout=5, loop_block_limit=0.2, block_cooldown=1.5)
    caplog.set_level(logging.WARNING, logger="coterie.plugins")
    try:
        text, took = await ask(app, "!spin 0.8", room="a")
        assert text == "spun" and took >= 0.8  # it did finish: the block is over
        await asyncio.sleep(0.05)  # the watchdog's closing line
        blocked = [r.getMessage() for r in caplog.records if "held up the event loop" in r.message]
        assert blocked and blocked[0].startswith("plugin hanging: its command spin has held up")
        assert "paused for 1.5 s" in blocked[0]
        # the plugin's commands are refused at once for the cool-down, the others answer
        for command in ("!fine", "!spin 0.5", "!nap 0"):
            refused, took = await ask(app, command, room="b")
            name = command.split()[0]
            assert refused.startswith(f"⚠ `{name}` is paused for a few seconds"), refused
            assert "(hanging) held up the bot" in refused and took < PROMPT
        assert "3 dice" in (await ask(app, "!roll 3 6", room="b"))[0]
        await asyncio.sleep(1.6)
        assert (await ask(app, "!fine", room="b"))[0] == "fine"
    finally:
        await app.stop()


async def test_a_short_await_is_not_mistaken_for_a_block(caplog: pytest.LogCaptureFixture) -> None:
    plugin = HangingPlugin()
    app = make(plugin, command_timeout=5, loop_block_limit=0.2)
    caplog.set_level(logging.WARNING, logger="coterie.plugins")
    try:
        for _ in range(5):
            assert (await ask(app, "!spin 0.02"))[0] == "spun"
            assert (await ask(app, "!fine"))[0] == "fine"
        assert not app.guard.paused
        assert not [r for r in caplog.records if "held up" in r.message]
    finally:
        await app.stop()


async def test_a_handler_ignoring_cancellation_is_abandoned_and_fenced_until_it_ends() -> None:
    plugin = HangingPlugin()
    app = make(plugin, command_timeout=0.3)
    try:
        text, took = await ask(app, "!stubborn", room="a")
        assert text.startswith("⚠ `!stubborn` took too long") and took < 2.5
        refused, took = await ask(app, "!stubborn", room="b")
        assert refused.startswith("⚠ `!stubborn` is unavailable for now") and took < PROMPT
        assert "2 dice" in (await ask(app, "!roll 2 6", room="a"))[0]  # room a is free
        plugin.release.set()
        await asyncio.sleep(0.1)
        assert not app.host.hung
        plugin.release.clear()
        plugin.release.set()  # the next call returns at once
        assert (await ask(app, "!stubborn", room="b"))[0] == "released"
    finally:
        await app.stop()


class SlowBuiltin:
    """Registered as trusted (as coterie's own plugins are): run on the loop, still limited."""

    def __init__(self) -> None:
        self.loop_thread = ""

    @hookimpl
    def coterie_commands(self) -> list[Command]:
        return [Command("dawdle", "sleeps", "!dawdle", handler=self.dawdle)]

    async def dawdle(self, ctx: CommandContext) -> list[Node]:
        self.loop_thread = threading.current_thread().name
        await ctx.state("slow").set("touched", True)
        await asyncio.sleep(30)
        return [Text("late")]


async def test_trusted_commands_run_on_the_loop_under_the_same_limit() -> None:
    plugin = SlowBuiltin()
    host = PluginHost()
    host.load(["revised"])
    host.register(plugin, "slow", trusted=True)
    config = parse_config({"plugins": {"enable": ["revised"]}, "limits": {"command_timeout": 0.3}})
    app = Coterie(config, host=host, dice=SeededDice(1))
    try:
        text, took = await ask(app, "!dawdle")
        assert text.startswith("⚠ `!dawdle` took too long") and 0.25 < took < 2
        assert plugin.loop_thread == threading.current_thread().name
        assert await app.state.get("slow:test:a", "touched") is None
        assert "2 dice" in (await ask(app, "!roll 2 6"))[0]
    finally:
        await app.stop()


def test_the_time_limits_are_validated_and_described() -> None:
    rows = {row["key"]: row for row in describe_limits()}
    assert rows["limits.command_timeout"]["default"] == 20.0
    assert rows["limits.loop_block_limit"]["low"] == 0.05
    assert rows["limits.block_cooldown"]["default"] == 60.0
    for bad in (0, -1, 4000):
        with pytest.raises(ConfigError, match="command_timeout"):
            parse_config({"limits": {"command_timeout": bad}})
    with pytest.raises(ConfigError, match="loop_block_limit"):
        parse_config({"limits": {"loop_block_limit": 0.001}})
