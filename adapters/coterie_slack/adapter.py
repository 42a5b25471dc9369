"""The Slack adapter: serves one workspace in Socket Mode (default) or over HTTP.

Socket Mode opens an outgoing websocket (``apps.connections.open`` with the app-level token), so
no public URL is needed; slack-sdk reconnects a dropped socket by itself. HTTP mode listens for
the Events API, slash commands and interactivity on one path; every request's signature (and its
5-minute replay window) is checked before anything else runs (:meth:`SlackBot.dispatch_http`).

Loading this module never imports Slack libraries: they are imported when the adapter runs, and a
missing ``slack`` extra is a configuration error when the adapter is created.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import logging
from collections.abc import Awaitable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from coterie.errors import ConfigError
from coterie.framework.adapter import Adapter
from coterie_slack.settings import WHERE, Credentials, SlackSettings, read_credentials

if TYPE_CHECKING:
    from coterie.framework.app import Coterie
    from coterie.render.elements import Node
    from coterie_slack.bot import SlackBot

log = logging.getLogger("coterie.slack")

REQUIRED_MODULES = ("slack_bolt", "slack_sdk", "aiohttp")


class SlackAdapter(Adapter):
    """Settings: see :class:`~coterie_slack.settings.SlackSettings` and docs/platforms/slack.md."""

    name = "slack"
    summary = "Slack workspaces (slack-bolt): Socket Mode or the HTTP Events API"
    settings_model = SlackSettings

    @classmethod
    def encode_text(cls, body: Sequence[Node]) -> str | None:
        """The reply body as this platform is sent it (mrkdwn)."""
        from coterie_slack.mrkdwn import SlackEncoder

        return SlackEncoder().encode(body)

    @classmethod
    def check_settings(cls, settings: Mapping[str, Any]) -> None:
        SlackSettings.from_table(settings)

    def __init__(
        self,
        app: Coterie,
        settings: Mapping[str, Any],
        *,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(app, settings)
        missing = [name for name in REQUIRED_MODULES if importlib.util.find_spec(name) is None]
        if missing:
            raise ConfigError(
                f"{WHERE}: the Slack adapter needs the slack extra "
                f"(pip install '.[slack]' in a clone); missing: {', '.join(missing)}"
            )
        self.options = SlackSettings.from_table(settings)
        self.credentials: Credentials = read_credentials(self.options, environ)
        #: set while connected (Socket Mode) or listening (HTTP)
        self.ready = asyncio.Event()
        #: HTTP mode: the address actually listened on (``port = 0`` picks a free port)
        self.address: tuple[str, int] | None = None
        #: the running Bolt app, for inspection
        self.bot: SlackBot | None = None
        self._stopping = asyncio.Event()

    async def run(self) -> None:
        import aiohttp

        from coterie_slack.bot import SlackBot

        async with aiohttp.ClientSession() as session:
            bot = SlackBot(self.app, self.options, self.credentials, session=session)
            self.bot = bot
            await bot.start()
            if self.options.mode == "socket":
                await self._serve_socket(bot)
            else:
                await self._serve_http(bot)

    async def stop(self) -> None:
        self._stopping.set()

    async def _serve_socket(self, bot: SlackBot) -> None:
        from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler

        handler = AsyncSocketModeHandler(
            bot.bolt,
            app_token=self.credentials.app_token,
            web_client=bot.client,
            ping_interval=self.options.ping_interval,
            logger=logging.getLogger("coterie.slack.socket"),
        )
        try:
            # the first URL is fetched here, so a bad app-level token fails the adapter (and the
            # supervisor retries with back-off) instead of being retried silently for ever
            handler.client.wss_uri = await bot.open_socket_url()
            if await self._unless_stopped(handler.connect_async()):  # type: ignore[no-untyped-call]
                self.ready.set()
                log.info("Slack: connected in Socket Mode")
                await self._stopping.wait()
        finally:
            self.ready.clear()
            await handler.close_async()  # type: ignore[no-untyped-call]
            await bot.drain()

    async def _serve_http(self, bot: SlackBot) -> None:
        from aiohttp import web
        from slack_bolt.adapter.aiohttp import to_aiohttp_response

        async def endpoint(request: web.Request) -> web.Response:
            raw = await request.read()  # at most client_max_size (1 MiB): 413 beyond
            response = await bot.dispatch_http(raw, request.query_string, request.headers)
            return await to_aiohttp_response(response)

        web_app = web.Application()
        web_app.router.add_post(self.options.path, endpoint)
        runner = web.AppRunner(web_app, access_log=None, handle_signals=False)
        await runner.setup()
        try:
            site = web.TCPSite(runner, self.options.host, self.options.port)
            await site.start()
            host, port = runner.addresses[0][:2]
            self.address = (str(host), int(port))
            self.ready.set()
            log.info("Slack: listening on http://%s:%d%s", host, port, self.options.path)
            await self._stopping.wait()
        finally:
            self.ready.clear()
            await runner.cleanup()
            await bot.drain()

    async def _unless_stopped(self, work: Awaitable[None]) -> bool:
        """Run ``work`` unless :meth:`stop` comes first; true when it finished."""
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
        if task.cancelled():
            return False
        task.result()
        return True
