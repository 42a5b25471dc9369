"""Commands under a time limit, and third-party command handlers kept from stalling the bot.

Every command runs under ``[limits] command_timeout`` (counted once it holds its room's lock).
When the time is up the user gets a clear "took too long" reply, the command's transaction is
rolled back (nothing it did is kept) and the room is free again. How a handler is run depends on
whose it is:

* **coterie's own plugins** (the built-ins, the rule sets and adapters shipped with coterie;
  :attr:`PluginHost.trusted <coterie.framework.plugins.PluginHost.trusted>`) are awaited on the
  event loop as they are, in the caller's task, cancelled by a sweeping timer once past their
  deadline: no thread, no task, no timer per command on the usual path;
* a **third-party synchronous** handler runs in a daemon worker thread (a ``time.sleep`` or a
  busy loop there cannot stop the event loop); one still running when the time is up is
  abandoned and its command is refused at once ("an earlier call has not finished") until that
  call returns — one hung command holds one thread;
* a **third-party asynchronous** handler runs in a task of its own, cancelled when the time is up;
  one that ignores the cancellation is abandoned and fenced like a hung thread. Nothing can stop
  a coroutine that blocks the loop (a busy loop, a blocking call) while it runs, but
  :class:`LoopWatchdog`, a thread, sees the loop stop answering for more than
  ``[limits] loop_block_limit`` while that task is the one running: the plugin is named in the
  log and all its commands are paused for ``[limits] block_cooldown`` with a clear reply.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from inspect import isawaitable
from types import CoroutineType
from typing import TYPE_CHECKING, Any

from coterie.framework.plugins import PluginHost
from coterie.framework.ratelimit import describe_wait
from coterie.framework.replies import error_reply
from coterie.render.elements import Reply

if TYPE_CHECKING:
    from coterie.framework.commands import Command, CommandContext
    from coterie.framework.config import Limits

log = logging.getLogger("coterie.plugins")

#: seconds a cancelled third-party task gets to finish before it is abandoned
CANCEL_GRACE = 1.0


#: seconds between two sweeps of the trusted commands' deadlines (at most; a shorter limit
#: sweeps every quarter of it)
SWEEP_EVERY = 0.25


class _Deadline:
    """A trusted command running in ``task`` until ``deadline`` (``time.monotonic``)."""

    __slots__ = ("deadline", "expired", "task")

    def __init__(self, task: asyncio.Task[Any], deadline: float) -> None:
        self.task = task
        self.deadline = deadline
        self.expired = False


class CommandRefused(Exception):
    """A command stopped or refused by the guard, with the reply the user gets. Raised through
    the command's transaction, so that nothing it did is kept."""

    def __init__(self, reply: Reply) -> None:
        super().__init__("command refused")
        self.reply = reply


def _key(command: Command) -> str:
    """The name a command's hung calls are recorded under in :attr:`PluginHost.hung`."""
    return f"command {command.name}"


class CommandGuard:
    """Runs command handlers under the time limit and isolates third-party ones."""

    def __init__(self, host: PluginHost, limits: Limits) -> None:
        self.host = host
        self.limits = limits
        #: plugin → until when (``time.monotonic``) its commands are paused for blocking the loop
        self.paused: dict[str, float] = {}
        self._watchdog: LoopWatchdog | None = None
        #: trusted commands running, with their deadlines (see :meth:`_on_loop`)
        self._deadlines: dict[_Deadline, None] = {}
        self._sweeper: asyncio.TimerHandle | None = None
        self._sweep_loop: asyncio.AbstractEventLoop | None = None

    # --- refusals ------------------------------------------------------------------------------

    def refusal(self, command: Command, prefix: str) -> Reply | None:
        """The reply refusing ``command`` at once, when its plugin is paused or an earlier call
        of it is still hung; else ``None``."""
        if self.paused:
            left = self.paused.get(command.plugin, 0.0) - time.monotonic()
            if left > 0:
                return error_reply(
                    f"`{prefix}{command.name}` is paused for {describe_wait(left)}: its plugin "
                    f"({command.plugin}) held up the bot. Other commands work as usual."
                )
        if self.host.hung:
            started = self.host.hung.get((command.plugin, _key(command)))
            if started is not None:
                waited = time.monotonic() - started
                return error_reply(
                    f"`{prefix}{command.name}` is unavailable for now: an earlier call has not "
                    f"finished after {waited:.0f} s. Other commands work as usual."
                )
        return None

    def pause(self, plugin: str, command: str, seconds: float) -> None:
        """Pause ``plugin``'s commands for ``block_cooldown`` (called by the watchdog thread)."""
        cooldown = self.limits.block_cooldown
        self.paused[plugin] = time.monotonic() + cooldown
        log.error(
            "plugin %s: its command %s has held up the event loop for %.2f s (more than "
            "loop_block_limit = %g s); its commands are paused for %g s",
            plugin,
            command,
            seconds,
            self.limits.loop_block_limit,
            cooldown,
        )

    def _too_long(self, command: Command, prefix: str) -> CommandRefused:
        limit = self.limits.command_timeout
        log.warning(
            "command %s (plugin %s) took longer than %g s: stopped, its changes dropped",
            command.name,
            command.plugin or "?",
            limit,
        )
        return CommandRefused(
            error_reply(
                f"`{prefix}{command.name}` took too long (more than {limit:g} s) and was "
                "stopped; nothing it did was kept. The bot keeps working."
            )
        )

    # --- running -------------------------------------------------------------------------------

    async def invoke(self, command: Command, context: CommandContext) -> Any:
        """Call the handler (a third party's synchronous one in a worker thread) and await its
        result if it is awaitable."""
        handler = command.handler
        if command.plugin in self.host.trusted or inspect.iscoroutinefunction(handler):
            result: Any = handler(context)
        else:
            result = await self.host._in_thread(
                command.plugin, _key(command), handler, [context], None
            )
        if type(result) is CoroutineType or (type(result) is not Reply and isawaitable(result)):
            result = await result  # (a coroutine, what handlers mostly give, told at once)
        return result

    async def run(
        self,
        command: Command,
        context: CommandContext,
        call: Callable[[Command, CommandContext], Awaitable[Reply]],
    ) -> Reply:
        """``call(command, context)`` under the time limit; raises :class:`CommandRefused`."""
        prefix = context.settings.prefix
        if self.paused or self.host.hung:  # (a refusal is possible only then)
            refusal = self.refusal(command, prefix)
            if refusal is not None:
                raise CommandRefused(refusal)
        limit = self.limits.command_timeout
        if command.plugin in self.host.trusted:
            return await self._on_loop(command, context, call, prefix)
        task = asyncio.ensure_future(call(command, context))
        self.watchdog().watch(task, command.plugin, command.name)
        try:
            done, _ = await asyncio.wait({task}, timeout=limit)
        except asyncio.CancelledError:  # the caller is going away (shutdown): so is the task
            task.cancel()
            raise
        if done:
            return task.result()
        task.cancel()
        await asyncio.wait({task}, timeout=CANCEL_GRACE)
        if not task.done():
            self._abandon(task, command)
        else:
            _consume(task)
        raise self._too_long(command, prefix)

    async def _on_loop(
        self,
        command: Command,
        context: CommandContext,
        call: Callable[[Command, CommandContext], Awaitable[Reply]],
        prefix: str,
    ) -> Reply:
        """A trusted command, awaited in the caller's task. Its deadline goes in a table that
        one timer sweeps (:meth:`_sweep`) instead of a timer per command (``asyncio.timeout``
        costs ~10 µs a command; this, a dict entry)."""
        task = asyncio.current_task()
        assert task is not None
        entry = _Deadline(task, time.monotonic() + self.limits.command_timeout)
        self._deadlines[entry] = None
        if self._sweeper is None or self._sweep_loop is not task.get_loop():
            self._schedule_sweep()
        try:
            return await call(command, context)
        except asyncio.CancelledError:
            if not entry.expired:
                raise
            task.uncancel()
            raise self._too_long(command, prefix) from None
        finally:
            del self._deadlines[entry]

    def _schedule_sweep(self) -> None:
        interval = min(SWEEP_EVERY, self.limits.command_timeout / 4)
        self._sweep_loop = loop = asyncio.get_running_loop()
        self._sweeper = loop.call_later(interval, self._sweep)

    def _sweep(self) -> None:
        """Cancel the trusted commands past their deadline; sweep again while any runs."""
        self._sweeper = None
        now = time.monotonic()
        loop = self._sweep_loop
        for entry in self._deadlines:
            if not entry.expired and now >= entry.deadline and entry.task.get_loop() is loop:
                entry.expired = True
                entry.task.cancel()
        if self._deadlines:
            self._schedule_sweep()

    def _abandon(self, task: asyncio.Future[Reply], command: Command) -> None:
        """Leave a task that ignored its cancellation, fencing its command until it ends."""
        key = (command.plugin, _key(command))
        with self.host._hung_lock:
            self.host.hung[key] = started = time.monotonic()
        log.error(
            "command %s (plugin %s) ignored its cancellation: abandoned; refused until it ends",
            command.name,
            command.plugin,
        )

        def ended(done: asyncio.Future[Reply]) -> None:
            _consume(done)
            with self.host._hung_lock:
                if self.host.hung.get(key) == started:
                    del self.host.hung[key]

        task.add_done_callback(ended)

    # --- the watchdog --------------------------------------------------------------------------

    def watchdog(self) -> LoopWatchdog:
        """The running loop's watchdog (started on first use)."""
        loop = asyncio.get_running_loop()
        if self._watchdog is None or self._watchdog.loop is not loop:
            if self._watchdog is not None:
                self._watchdog.close()
            self._watchdog = LoopWatchdog(loop, self.limits.loop_block_limit, self.pause)
        return self._watchdog

    def close(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None
        if self._watchdog is not None:
            self._watchdog.close()
            self._watchdog = None


def _consume(task: asyncio.Future[Any]) -> None:
    """Retrieve a finished task's outcome (so asyncio does not log it as never retrieved)."""
    if not task.cancelled() and task.exception() is not None:
        log.debug("an abandoned command ended with %r", task.exception())


class LoopWatchdog:
    """A daemon thread that, while a watched task exists, asks the event loop every
    ``limit / 4`` seconds to run a trivial callback. When the loop has not run it within
    ``limit`` seconds, the task running on the loop at that moment is blocking it; if it is a
    watched one, ``on_block(plugin, command, seconds)`` is called (in the watchdog's thread).
    Idle (nothing watched), the thread sleeps on an event and costs nothing."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        limit: float,
        on_block: Callable[[str, str, float], None],
    ) -> None:
        self.loop = loop
        self.limit = limit
        self.on_block = on_block
        #: task → (plugin, command name)
        self.watched: dict[asyncio.Future[Any], tuple[str, str]] = {}
        self._wake = threading.Event()
        self._closed = False
        self.thread = threading.Thread(target=self._run, name="coterie-watchdog", daemon=True)
        self.thread.start()

    def watch(self, task: asyncio.Future[Any], plugin: str, command: str) -> None:
        self.watched[task] = (plugin, command)
        task.add_done_callback(self._unwatch)
        self._wake.set()

    def _unwatch(self, task: asyncio.Future[Any]) -> None:
        self.watched.pop(task, None)

    def close(self) -> None:
        self._closed = True
        self._wake.set()

    def _run(self) -> None:
        ticked = threading.Event()
        while not self._closed:
            if not self.watched:
                if not self._wake.wait(5.0) and self.loop.is_closed():
                    return  # the app was dropped without close(): nothing left to watch
                self._wake.clear()
                continue
            ticked.clear()
            sent = time.monotonic()
            try:
                self.loop.call_soon_threadsafe(ticked.set)
            except RuntimeError:  # the loop is closed
                return
            if ticked.wait(self.limit):
                time.sleep(self.limit / 4)
                continue
            running = asyncio.current_task(self.loop)
            culprit = self.watched.get(running) if running is not None else None
            if culprit is not None:
                self.on_block(*culprit, time.monotonic() - sent)
            while not ticked.wait(1.0):  # until the loop runs again
                if self._closed or self.loop.is_closed():
                    return
            if culprit is not None:
                log.warning(
                    "plugin %s: its command %s held up the event loop for %.2f s in all",
                    *culprit,
                    time.monotonic() - sent,
                )
