"""The webhook: an HTTP server Telegram posts updates to (aiohttp, like the other adapters' HTTP
endpoints and ``/healthz``).

Every request must carry the ``X-Telegram-Bot-Api-Secret-Token`` header with the secret the bot
gave ``setWebhook``; anything without it, whatever its path or method, is refused with 403 before
its body is looked at (the secret is compared in constant time). Then only ``POST`` on the
configured path is accepted; its body must be one update as JSON (400 otherwise). Bodies over
1 MB are refused by the HTTP server itself (413). The status of an update is the bot's
(:meth:`~coterie_telegram.bot.TelegramBot.answer_webhook`): 200 once it is answered (or was
before), 503 while its claim is held elsewhere, so Telegram posts it again later; an update is
never acknowledged before it is answered unless answering takes longer than the bot's budget.

The server speaks plain HTTP on ``host``:``port``; Telegram only posts to HTTPS, so it runs behind
a reverse proxy that terminates TLS (see docs/platforms/telegram.md).
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from aiohttp import web

log = logging.getLogger("coterie.telegram.webhook")

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
#: an update is a few kilobytes; anything much larger is not one
MAX_BODY = 1 << 20

#: takes one update, answers the HTTP status for it
Receiver = Callable[[Mapping[str, Any]], Awaitable[int]]


def _refuse(status: int, reason: str) -> web.Response:
    return web.Response(status=status, reason=reason, text=f"{status} {reason}\n")


class WebhookServer:
    """The HTTP server; :meth:`listen` starts it, :meth:`close` stops it."""

    def __init__(self, *, path: str, secret: str, receive: Receiver) -> None:
        self.path = path
        self.secret = secret.encode()
        self.receive = receive
        self._runner: web.AppRunner | None = None

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        response = await self._answer(request)
        level = logging.DEBUG if response.status < 400 else logging.INFO
        log.log(
            level, "%d %s %s from %s", response.status, request.method, request.path, request.remote
        )
        return response

    async def _answer(self, request: web.Request) -> web.Response:
        given = request.headers.get(SECRET_HEADER, "").encode()
        if not hmac.compare_digest(given, self.secret):
            return _refuse(403, "Forbidden")
        if request.path != self.path:
            return _refuse(404, "Not Found")
        if request.method != "POST":
            return _refuse(405, "Method Not Allowed")
        try:
            data = json.loads(await request.read())
        except web.HTTPRequestEntityTooLarge:
            return _refuse(413, "Request Entity Too Large")
        except ValueError:
            return _refuse(400, "Not JSON")
        update_id = data.get("update_id") if isinstance(data, dict) else None
        if not isinstance(update_id, int) or isinstance(update_id, bool):
            return _refuse(400, "Not an update")
        status = await self.receive(data)
        if status != 200:
            return _refuse(status, "Busy, try again")
        return web.Response(status=200)

    async def listen(self, host: str, port: int) -> tuple[str, int]:
        """Start listening; the address actually bound (``port = 0`` picks a free port)."""
        app = web.Application(client_max_size=MAX_BODY)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        runner = web.AppRunner(app, access_log=None, keepalive_timeout=75.0)
        await runner.setup()
        site = web.TCPSite(runner, host, port)
        await site.start()
        self._runner = runner
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        bound = sockets[0].getsockname() if sockets else (host, port)
        return str(bound[0]), int(bound[1])

    async def close(self) -> None:
        """Stop listening and close the open connections."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
