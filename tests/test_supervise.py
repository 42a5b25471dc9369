"""``coterie run`` supervision: an adapter that crashes is restarted with back-off, and the
others keep answering meanwhile."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from coterie import hookimpl
from coterie.dice.sources import SeededDice
from coterie.framework.adapter import Adapter
from coterie.framework.app import Coterie
from coterie.framework.config import Config
from coterie.framework.message import Message
from coterie.framework.plugins import PluginHost

EVENTS: list[str] = []


class Crashing(Adapter):
    """Crashes on its first two runs, then serves until stopped."""

    name = "crashing"
    runs = 0

    async def run(self) -> None:
        type(self).runs += 1
        EVENTS.append(f"crashing run {type(self).runs}")
        if type(self).runs <= 2:
            raise ConnectionError("the platform hung up")
        await asyncio.Event().wait()


class Steady(Adapter):
    """Answers a roll every few milliseconds, as a busy room would."""

    name = "steady"

    async def run(self) -> None:
        while True:
            reply = await self.app.handle(
                Message(platform="steady", room="r", user="u", text="!roll 3")
            )
            assert reply is not None and not reply.is_error
            EVENTS.append("steady answered")
            await asyncio.sleep(0.005)


class Adapters:
    @hookimpl
    def coterie_adapters(self) -> list[type[Adapter]]:
        return [Crashing, Steady]


async def test_a_crashing_adapter_is_restarted_while_the_others_keep_working(caplog: Any) -> None:
    host = PluginHost()
    host.load(["revised"])
    host.register(Adapters(), "test-adapters")
    config = Config.model_validate(
        {
            "plugins": {"enable": ["revised"]},
            "adapters": {"crashing": {"enabled": True}, "steady": {"enabled": True}},
            "limits": {"rate": {"enabled": False}},
        }
    )
    app = Coterie(config, host=host, dice=SeededDice(1))
    app.restart_delay = 0.05
    EVENTS.clear()
    running = asyncio.create_task(app.run_adapters())
    await asyncio.sleep(0.5)
    running.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await running
    runs = [event for event in EVENTS if event.startswith("crashing")]
    assert runs == ["crashing run 1", "crashing run 2", "crashing run 3"]
    # the back-off doubled: 0.05 s, then 0.1 s; the steady adapter answered before and after
    first, third = EVENTS.index("crashing run 1"), EVENTS.index("crashing run 3")
    assert "steady answered" in EVENTS[first:third]
    assert "steady answered" in EVENTS[third:]
    # the platform could not be reached: one line per attempt, no traceback
    lines = [r for r in caplog.records if r.message.startswith("adapter crashing")]
    assert [r.message for r in lines] == [
        "adapter crashing: cannot reach the platform (ConnectionError: the platform hung up); "
        "next try in 0.05 s",
        "adapter crashing: cannot reach the platform (ConnectionError: the platform hung up); "
        "next try in 0.1 s",
    ]
    assert all(r.exc_info is None and r.levelname == "WARNING" for r in lines)


def test_what_counts_as_unreachable() -> None:
    from coterie.framework.adapter import unreachable

    class NetworkError(Exception):  # named like python-telegram-bot's, from any module
        pass

    try:
        try:
            raise OSError("Name or service not known")
        except OSError as dns:
            raise RuntimeError("wrapped") from dns
    except RuntimeError as wrapped:
        assert unreachable(wrapped)  # through the cause
    assert unreachable(NetworkError("httpx.ConnectError"))
    assert unreachable(TimeoutError())
    assert not unreachable(ValueError("a bug"))
    assert not unreachable(KeyError("x"))
