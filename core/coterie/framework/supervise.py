"""Running the adapters of ``coterie run``: side by side, each restarted with back-off when it
crashes (one adapter's crash never takes the others down), and stopped *together* when the process
is asked to stop (SIGINT or SIGTERM alike): every adapter stops taking new events, finishes and
delivers what it has in flight and acknowledges upstream only what was answered, within a grace
period (``[limits] shutdown_grace``); whatever is still running then is cancelled."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from coterie.framework.adapter import Adapter, one_line, unreachable
from coterie.retry import Backoff

if TYPE_CHECKING:
    from coterie.framework.app import Coterie

log = logging.getLogger("coterie")

#: the longest wait between restarts of a crashed adapter
MAX_RESTART_DELAY = 60.0


class Supervisor:
    """The adapters of one app, run until they finish or :attr:`stopping` is set."""

    def __init__(
        self, app: Coterie, names: Sequence[str], stopping: asyncio.Event | None = None
    ) -> None:
        self.app = app
        self.names = list(names)
        #: set to stop every adapter gracefully (``coterie run`` sets it on SIGINT and SIGTERM)
        self.stopping = stopping if stopping is not None else asyncio.Event()
        #: the adapter instances running now, by name
        self.running: dict[str, Adapter] = {}

    async def run(self, grace: float) -> None:
        """Run every adapter until each has returned; once :attr:`stopping` is set, ask them all
        to stop, give them ``grace`` seconds to finish what is in flight, then cancel the rest."""
        tasks = {asyncio.create_task(self._supervise(name)): name for name in self.names}
        stop: asyncio.Future[Any] = asyncio.create_task(self.stopping.wait())
        try:
            pending: set[asyncio.Future[Any]] = set(tasks)
            while pending and not self.stopping.is_set():
                _, pending = await asyncio.wait(
                    {*pending, stop}, return_when=asyncio.FIRST_COMPLETED
                )
                pending.discard(stop)
            if not pending:
                return
            # debug: the SIGINT/SIGTERM warning already said so in the one line a stop writes
            log.debug(
                "stopping: %s finish what is in flight (at most %g s)",
                ", ".join(sorted(self.running)) or "the adapters",
                grace,
            )
            await asyncio.gather(
                *(self._stop(name, adapter) for name, adapter in list(self.running.items()))
            )
            _, late = await asyncio.wait(pending, timeout=grace)
            for task in late:
                name = tasks.get(task, "?")  # type: ignore[call-overload]
                log.warning("adapter %s did not finish within %g s: cancelled", name, grace)
                task.cancel()
            for task in late:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        finally:
            stop.cancel()
            running = [task for task in tasks if not task.done()]
            for task in running:  # cancelled from outside: every adapter is told to stop
                task.cancel()
            await asyncio.gather(*running, return_exceptions=True)

    async def _pause(self, delay: float) -> None:
        """Wait ``delay`` seconds before a restart; a stop cuts the wait short."""
        waits = {
            asyncio.ensure_future(asyncio.sleep(delay)),
            asyncio.ensure_future(self.stopping.wait()),
        }
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()

    async def _stop(self, name: str, adapter: Adapter) -> None:
        try:
            await adapter.stop()
        except Exception:
            log.exception("adapter %s failed to stop", name)

    async def _supervise(self, name: str) -> None:
        cls = self.app.adapter_classes[name]
        backoff = Backoff(initial=self.app.restart_delay, maximum=MAX_RESTART_DELAY)
        while not self.stopping.is_set():
            adapter = cls(self.app, self.app.config.adapters.get(name, {}))
            self.running[name] = adapter
            self.app.metrics.adapter_started(name, adapter)
            started = time.monotonic()
            try:
                await adapter.run()
                return
            except asyncio.CancelledError:
                await adapter.stop()
                raise
            except Exception as error:
                if self.stopping.is_set():
                    log.exception("adapter %s failed while stopping", name)
                    return
                if time.monotonic() - started >= MAX_RESTART_DELAY:
                    backoff.reset()  # it ran well for a while: start the back-off anew
                delay = backoff.next()
                if unreachable(error):  # offline, DNS, refused: one line, not a traceback
                    log.warning(
                        "adapter %s: cannot reach the platform (%s); next try in %.3f s",
                        name,
                        one_line(error),
                        delay,
                    )
                else:
                    log.exception("adapter %s crashed; restarting in %.3f s", name, delay)
                await self._pause(delay)
            finally:
                self.running.pop(name, None)
