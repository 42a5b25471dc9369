"""The webhook: an HTTP server Telegram posts updates to (tornado, from python-telegram-bot's
``webhooks`` extra).

Every request must carry the ``X-Telegram-Bot-Api-Secret-Token`` header with the secret the bot
gave ``setWebhook``; anything without it, whatever its path or method, is refused with 403 before
its body is looked at (the secret is compared in constant time). Then only ``POST`` on the
configured path is accepted; its body must be one update as JSON (400 otherwise). Bodies over
1 MB are refused by the HTTP server itself (400). The answer is 200 as soon as the
update is recorded (its id de-duplicated), before the reply is computed: Telegram waits for the
answer and would otherwise re-send the update.

The server speaks plain HTTP on ``host``:``port``; Telegram only posts to HTTPS, so it runs behind
a reverse proxy that terminates TLS (see docs/platforms/telegram.md).
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import tornado.web
from tornado.httpserver import HTTPServer
from tornado.netutil import bind_sockets

log = logging.getLogger("coterie.telegram.webhook")

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
#: an update is a few kilobytes; anything much larger is not one
MAX_BODY = 1 << 20

Receiver = Callable[[Mapping[str, Any]], Awaitable[bool]]


class _Handler(tornado.web.RequestHandler):
    def initialize(self, server: WebhookServer) -> None:
        self.server = server

    def prepare(self) -> None:
        given = self.request.headers.get(SECRET_HEADER, "").encode()
        if not hmac.compare_digest(given, self.server.secret):
            raise tornado.web.HTTPError(403, reason="Forbidden")
        if self.request.path != self.server.path:
            raise tornado.web.HTTPError(404, reason="Not Found")
        if self.request.method != "POST":
            raise tornado.web.HTTPError(405, reason="Method Not Allowed")

    async def post(self) -> None:
        try:
            data = json.loads(self.request.body)
        except ValueError:
            raise tornado.web.HTTPError(400, reason="Not JSON") from None
        update_id = data.get("update_id") if isinstance(data, dict) else None
        if not isinstance(update_id, int) or isinstance(update_id, bool):
            raise tornado.web.HTTPError(400, reason="Not an update")
        await self.server.receive(data)
        self.set_status(200)

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        self.set_header("Content-Type", "text/plain; charset=utf-8")
        self.finish(f"{status_code} {self._reason}\n")


def _log_request(handler: tornado.web.RequestHandler) -> None:
    status = handler.get_status()
    level = logging.DEBUG if status < 400 else logging.INFO
    request = handler.request
    log.log(level, "%d %s %s from %s", status, request.method, request.path, request.remote_ip)


class WebhookServer:
    """The HTTP server; :meth:`listen` starts it, :meth:`close` stops it."""

    def __init__(self, *, path: str, secret: str, receive: Receiver) -> None:
        self.path = path
        self.secret = secret.encode()
        self.receive = receive
        app = tornado.web.Application(
            [(r".*", _Handler, {"server": self})], log_function=_log_request
        )
        self._http = HTTPServer(app, max_body_size=MAX_BODY, idle_connection_timeout=75.0)
        self._listening = False

    def listen(self, host: str, port: int) -> tuple[str, int]:
        """Start listening; the address actually bound (``port = 0`` picks a free port)."""
        sockets = bind_sockets(port, address=host)
        self._http.add_sockets(sockets)
        self._listening = True
        bound = sockets[0].getsockname()
        return str(bound[0]), int(bound[1])

    async def close(self) -> None:
        """Stop listening and close the open connections."""
        if self._listening:
            self._http.stop()
            await self._http.close_all_connections()
            self._listening = False
