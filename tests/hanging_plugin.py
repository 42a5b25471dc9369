"""A badly behaved third-party plugin, for the command time limit and isolation tests (and the
fault battery): register it with ``PluginHost.register(HangingPlugin(), "hanging")``.

* ``!hang`` — async; writes to the room's state, then waits forever (it can be cancelled);
* ``!stubborn`` — async; waits for ``release`` and ignores cancellation until then;
* ``!nap SECONDS`` — synchronous; ``time.sleep(SECONDS)`` (it would freeze the event loop if it
  ran there);
* ``!spin SECONDS`` — async; busy-loops SECONDS without awaiting (blocks the event loop);
* ``!fine`` — async; answers at once (the plugin's well-behaved command).
"""

from __future__ import annotations

import asyncio
import threading
import time

from coterie import hookimpl
from coterie.framework.commands import Command, CommandContext
from coterie.render.elements import Node, Text

OWNER = "hanging"


class HangingPlugin:
    def __init__(self) -> None:
        #: set by ``!hang`` once its state write is done
        self.hanging = asyncio.Event()
        #: ``!stubborn`` returns once this is set
        self.release = threading.Event()
        #: how many ``!nap`` calls returned (from their worker thread)
        self.naps_done = 0
        self.threads: list[str] = []

    @hookimpl
    def coterie_commands(self) -> list[Command]:
        return [
            Command("hang", "never answers", "!hang", handler=self.hang),
            Command("stubborn", "ignores cancellation", "!stubborn", handler=self.stubborn),
            Command("nap", "sleeps, blocking", "!nap SECONDS", handler=self.nap),
            Command("spin", "busy-loops on the event loop", "!spin SECONDS", handler=self.spin),
            Command("fine", "answers at once", "!fine", handler=self.fine),
        ]

    async def hang(self, ctx: CommandContext) -> list[Node]:
        await ctx.state(OWNER).set("touched", True)
        self.hanging.set()
        await asyncio.Event().wait()
        return [Text("never")]

    async def stubborn(self, ctx: CommandContext) -> list[Node]:
        while not self.release.is_set():
            try:
                await asyncio.sleep(0.02)
            except asyncio.CancelledError:
                continue  # badly behaved: carries on
        return [Text("released")]

    def nap(self, ctx: CommandContext) -> list[Node]:
        self.threads.append(threading.current_thread().name)
        time.sleep(float(ctx.args or "1"))
        self.naps_done += 1
        return [Text("slept")]

    async def spin(self, ctx: CommandContext) -> list[Node]:
        end = time.monotonic() + float(ctx.args or "1")
        while time.monotonic() < end:
            pass
        return [Text("spun")]

    async def fine(self, ctx: CommandContext) -> list[Node]:
        return [Text("fine")]
