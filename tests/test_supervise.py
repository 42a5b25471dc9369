"""``coterie run`` supervision: an adapter that crashes is restarted with back-off, and the
others keep answering meanwhile."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, ClassVar

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
    waits = [
        float(r.message.split(" in ")[1].removesuffix(" s"))
        for r in caplog.records
        if r.message.startswith("adapter crashing")
    ]
    # the platform could not be reached: one line per attempt, no traceback
    assert all(
        "cannot reach the platform (ConnectionError: the platform hung up)" in r.message
        and r.exc_info is None
        for r in caplog.records
        if r.message.startswith("adapter crashing")
    )
    # the shared back-off (coterie.retry): nominal waits, stretched by at most 20 % of jitter
    assert len(waits) == 2
    assert 0.05 <= waits[0] <= 0.06 and 0.1 <= waits[1] <= 0.12


class Busy(Adapter):
    """Takes events and answers each after a while; on stop, takes no more and finishes those it
    has (what every real adapter's stop does)."""

    name = "busy"
    answered: ClassVar[list[int]] = []

    async def run(self) -> None:
        self.stopping = asyncio.Event()
        self.tasks: set[asyncio.Task[None]] = set()
        number = 0
        while not self.stopping.is_set():
            number += 1
            task = asyncio.create_task(self._answer(number))
            self.tasks.add(task)
            await asyncio.sleep(0.01)
        await asyncio.gather(*self.tasks)

    async def _answer(self, number: int) -> None:
        reply = await self.app.handle(Message(platform="busy", room="r", user="u", text="!roll 2"))
        await asyncio.sleep(0.2)  # delivering takes a while
        assert reply is not None
        type(self).answered.append(number)

    async def stop(self) -> None:
        self.stopping.set()


class Stuck(Adapter):
    """Never finishes, even when asked to stop."""

    name = "stuck"

    async def run(self) -> None:
        await asyncio.Event().wait()

    async def stop(self) -> None:
        return None


class StopAdapters:
    @hookimpl
    def coterie_adapters(self) -> list[type[Adapter]]:
        return [Busy, Stuck]


def _stopping_app() -> Coterie:
    host = PluginHost()
    host.load(["revised"])
    host.register(StopAdapters(), "stop-adapters")
    config = Config.model_validate(
        {"plugins": {"enable": ["revised"]}, "limits": {"rate": {"enabled": False}}}
    )
    return Coterie(config, host=host, dice=SeededDice(1))


async def test_a_stop_lets_every_adapter_finish_what_is_in_flight() -> None:
    app = _stopping_app()
    stopping = asyncio.Event()
    running = asyncio.create_task(app.run_adapters(["busy"], stopping=stopping, grace=5))
    await asyncio.sleep(0.3)
    stopping.set()
    await asyncio.wait_for(running, 5)
    started = max(Busy.answered)
    assert sorted(Busy.answered) == list(range(1, started + 1))  # every event taken is answered


async def test_an_adapter_that_will_not_stop_is_cancelled_after_the_grace(caplog: Any) -> None:
    app = _stopping_app()
    stopping = asyncio.Event()
    running = asyncio.create_task(app.run_adapters(["busy", "stuck"], stopping=stopping, grace=0.5))
    await asyncio.sleep(0.1)
    stopping.set()
    await asyncio.wait_for(running, 5)  # the stuck one does not hold the process
    assert "adapter stuck did not finish within 0.5 s: cancelled" in caplog.text


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
