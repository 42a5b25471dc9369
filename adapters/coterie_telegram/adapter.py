"""The Telegram adapter: serves one bot by long polling (default) or a webhook.

Long polling needs no public URL: the bot asks Telegram for updates (``getUpdates``), waiting up to
``poll_timeout`` seconds for each answer. Webhook mode runs an HTTP server Telegram posts updates
to, behind a TLS reverse proxy; the adapter registers it with ``setWebhook`` and a secret token
that every request must carry.

Loading this module never imports python-telegram-bot: it is imported when the adapter runs, and a
missing ``telegram`` extra is a configuration error when the adapter is created.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from coterie.errors import ConfigError
from coterie.framework.adapter import Adapter
from coterie_telegram.settings import WHERE, Credentials, TelegramSettings, read_credentials

if TYPE_CHECKING:
    from coterie.framework.app import Coterie
    from coterie.render.elements import Node
    from coterie_telegram.bot import TelegramBot

log = logging.getLogger("coterie.telegram")

#: python-telegram-bot (the ``telegram`` extra), and aiohttp (a core dependency) for the webhook
REQUIRED_MODULES = ("telegram", "aiohttp")


class TelegramAdapter(Adapter):
    """Settings: see :class:`~coterie_telegram.settings.TelegramSettings` and
    docs/platforms/telegram.md."""

    name = "telegram"
    summary = "Telegram groups and private chats (python-telegram-bot): long polling or a webhook"
    settings_model = TelegramSettings

    @classmethod
    def encode_text(cls, body: Sequence[Node]) -> str | None:
        """The reply body as this platform is sent it (HTML parse mode)."""
        from coterie_telegram.html import TelegramEncoder

        return TelegramEncoder().encode(body)

    @classmethod
    def check_settings(cls, settings: Mapping[str, Any]) -> None:
        TelegramSettings.from_table(settings)

    def __init__(
        self,
        app: Coterie,
        settings: Mapping[str, Any],
        *,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(app, settings)
        self.options = TelegramSettings.from_table(settings)
        needed = REQUIRED_MODULES if self.options.mode == "webhook" else REQUIRED_MODULES[:1]
        missing = [name for name in needed if importlib.util.find_spec(name) is None]
        if missing:
            raise ConfigError(
                f"{WHERE}: the Telegram adapter needs the telegram extra "
                f"(pip install '.[telegram]' in a clone); missing: {', '.join(missing)}"
            )
        self.credentials: Credentials = read_credentials(self.options, environ)
        #: set while polling or while the webhook is registered and listening
        self.ready = asyncio.Event()
        #: webhook mode: the address actually listened on (``port = 0`` picks a free port)
        self.address: tuple[str, int] | None = None
        #: the running bot, for inspection
        self.bot: TelegramBot | None = None
        self._stopping = asyncio.Event()

    async def run(self) -> None:
        from coterie_telegram.bot import TelegramBot

        bot = TelegramBot(self.app, self.options, self.credentials)
        self.bot = bot
        try:
            await bot.start()
            if self.options.mode == "polling":
                await bot.poll(self._stopping, self._polling)
            else:
                await self._serve_webhook(bot)
        finally:
            self.ready.clear()
            await bot.close()

    async def stop(self) -> None:
        self._stopping.set()

    def _polling(self) -> None:
        self.ready.set()
        log.info("Telegram: long polling (timeout %d s)", self.options.poll_timeout)

    async def _serve_webhook(self, bot: TelegramBot) -> None:
        from coterie_telegram.webhook import WebhookServer

        secret = self.credentials.webhook_secret
        assert secret is not None
        if self.credentials.generated_secret:
            log.info(
                "Telegram: $%s is not set; the webhook uses a secret made for this run",
                self.options.webhook_secret_env,
            )
        server = WebhookServer(path=self.options.path, secret=secret, receive=bot.answer_webhook)
        try:
            self.address = await server.listen(self.options.host, self.options.port)
            await bot.set_webhook(secret)
            self.ready.set()
            host, port = self.address
            log.info(
                "Telegram: webhook %s → http://%s:%d%s",
                self.options.webhook_url,
                host,
                port,
                self.options.path,
            )
            await self._stopping.wait()
        finally:
            await server.close()
