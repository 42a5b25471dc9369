"""The Matrix adapter: one bot account on one homeserver (see docs/platforms/matrix.md).

:meth:`MatrixAdapter.run` logs in, then syncs until stopped. While the homeserver is unreachable
(at start or later) it waits ``reconnect_initial`` seconds, doubling up to ``reconnect_max``, and
tries again from where it was; only refused credentials crash the adapter (the app's supervisor
then restarts it, with its own back-off).

Loading this module never imports matrix-nio: it is imported when the adapter runs, and a
missing ``matrix`` extra is a configuration error when the adapter is created.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import logging
from collections.abc import Awaitable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from coterie.errors import ConfigError
from coterie.framework.adapter import Adapter
from coterie_matrix.settings import WHERE, Credentials, MatrixSettings, read_credentials

if TYPE_CHECKING:
    from coterie.framework.app import Coterie
    from coterie.render.elements import Node
    from coterie_matrix.bot import MatrixBot

log = logging.getLogger("coterie.matrix")

REQUIRED_MODULES = ("nio", "aiohttp")
#: what end-to-end encryption needs besides nio (the ``e2e`` extra of matrix-nio)
E2E_MODULES = ("vodozemac", "peewee", "cachetools", "atomicwrites")

T = TypeVar("T")


def quiet_nio(level: str) -> None:
    """matrix-nio logs every event it handles at INFO (room ids, event types): keep its loggers at
    WARNING unless coterie runs at DEBUG or the operator configured them."""
    nio_log = logging.getLogger("nio")
    if nio_log.level == logging.NOTSET and level != "DEBUG":
        nio_log.setLevel(logging.WARNING)


class MatrixAdapter(Adapter):
    """Settings: see :class:`~coterie_matrix.settings.MatrixSettings` and
    docs/platforms/matrix.md."""

    name = "matrix"
    summary = "Matrix rooms (matrix-nio), end-to-end encrypted ones included"
    settings_model = MatrixSettings

    @classmethod
    def encode_text(cls, body: Sequence[Node]) -> str | None:
        """The reply body as this platform is sent it (the ``formatted_body`` HTML)."""
        from coterie_matrix.formatting import MatrixHtmlEncoder

        return MatrixHtmlEncoder().encode(body)

    @classmethod
    def check_settings(cls, settings: Mapping[str, Any]) -> None:
        MatrixSettings.from_table(settings)

    def __init__(
        self,
        app: Coterie,
        settings: Mapping[str, Any],
        *,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(app, settings)
        self.options = MatrixSettings.from_table(settings)
        needed = REQUIRED_MODULES + (E2E_MODULES if self.options.encryption else ())
        missing = [name for name in needed if importlib.util.find_spec(name) is None]
        if missing:
            raise ConfigError(
                f"{WHERE}: the Matrix adapter needs the matrix extra "
                f"(pip install '.[matrix]' in a clone); missing: {', '.join(missing)}"
            )
        self.credentials: Credentials = read_credentials(self.options, environ)
        #: where the key store, device id and sync token live
        self.store_dir: Path = self.options.store_directory(app.config.data_dir)
        #: set while the bot is logged in and syncing
        self.ready = asyncio.Event()
        #: the running bot, for inspection
        self.bot: MatrixBot | None = None
        self._stopping = asyncio.Event()

    async def run(self) -> None:
        from coterie_matrix.bot import CONNECTION_ERRORS, Backoff, MatrixBot, Unreachable

        retried: tuple[type[Exception], ...] = (*CONNECTION_ERRORS, Unreachable)

        quiet_nio(self.app.config.log_level)
        bot = MatrixBot(self.app, self.options, self.credentials, store_dir=self.store_dir)
        self.bot = bot
        try:
            backoff = Backoff(self.options.reconnect_initial, self.options.reconnect_max)
            while True:
                try:
                    if not await self._unless_stopped(bot.login()):
                        return
                    break
                except retried as error:
                    wait = backoff.next()
                    log.warning(
                        "Matrix: cannot reach %s (%s); trying again in %.1f s",
                        self.options.homeserver,
                        error,
                        wait,
                    )
                    if await self._sleep(wait):
                        return
            resumed = bot.next_batch is not None
            while not self._stopping.is_set():
                fetched = await self._unless_stopped(bot.fetch(resumed=resumed))
                if fetched is None:
                    return  # stopped
                response = fetched[0]
                if response is None:
                    if await self._sleep(bot.retry_delay()):
                        return
                    continue
                await bot.handle(response)
                resumed = False
                self.ready.set()
        finally:
            self.ready.clear()
            await bot.close()

    async def stop(self) -> None:
        self._stopping.set()

    async def _sleep(self, seconds: float) -> bool:
        """Wait ``seconds``, or less if :meth:`stop` is called; true when stopped."""
        # asyncio.timeout, not wait_for: on Python 3.11 wait_for can drop a cancellation that
        # arrives as the event is set (see coterie.framework.plugins)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await self._stopping.wait()
        return self._stopping.is_set()

    async def _unless_stopped(self, work: Awaitable[T]) -> tuple[T] | None:
        """``(result,)`` of ``work``, or ``None`` if :meth:`stop` came first (``work`` is then
        cancelled)."""
        task = asyncio.ensure_future(work)
        stopping = asyncio.ensure_future(self._stopping.wait())
        try:
            await asyncio.wait({task, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
            if not task.done():
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await stopping
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait({task})
        if task.cancelled():
            return None
        return (task.result(),)
