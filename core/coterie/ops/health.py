"""The ops endpoint of ``coterie run``: ``/healthz`` and Prometheus ``/metrics`` (``[ops]``,
``docs/deploy.md``).

* ``GET /healthz`` — ``200`` with ``{"status": "ok", "adapters": {...}, "state": "ok"}`` when
  every adapter the process runs is up (connected or listening) and the state store answers a
  cheap query (one primary-key read) within :data:`STATE_TIMEOUT` seconds; ``503`` with the same
  JSON naming what is down otherwise.
* ``GET /metrics`` — the text exposition of :class:`coterie.metrics.Metrics`.

Each worker process serves its own endpoint (``[ops] port``, plus ``$COTERIE_PORT_OFFSET`` when
several workers share one config: :func:`apply_port_offset`).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from aiohttp import web

from coterie.errors import ConfigError

if TYPE_CHECKING:
    from coterie.framework.app import Coterie
    from coterie.framework.config import Config

log = logging.getLogger("coterie.ops")

#: seconds the state store has to answer the health check's query
STATE_TIMEOUT = 2.0
#: the environment variable added to every listening port of the config (one value per worker)
PORT_OFFSET_ENV = "COTERIE_PORT_OFFSET"
#: the key the health check reads (it need not exist: the read is the check)
PROBE = ("coterie.ops", "healthz")


def apply_port_offset(config: Config, environ: Mapping[str, str] | None = None) -> int:
    """Add ``$COTERIE_PORT_OFFSET`` to the ``port`` of every adapter table that has one (Slack
    HTTP mode, the Telegram webhook), so that workers started from one config listen on ports of
    their own. Returns the offset (0 when unset), which :func:`serve_ops` adds to ``[ops] port``."""
    env = os.environ if environ is None else environ
    raw = env.get(PORT_OFFSET_ENV, "").strip()
    if not raw:
        return 0
    try:
        offset = int(raw)
    except ValueError:
        raise ConfigError(f"{PORT_OFFSET_ENV}: {raw!r} is not a whole number") from None
    if not 0 <= offset <= 1000:
        raise ConfigError(f"{PORT_OFFSET_ENV}: {offset} is outside 0-1000")
    if offset:
        for table in config.adapters.values():
            port = table.get("port")
            if isinstance(port, int) and not isinstance(port, bool) and port:
                table["port"] = port + offset
    return offset


async def health(app: Coterie, adapters: Sequence[str]) -> tuple[bool, dict[str, Any]]:
    """Whether the process is healthy, and the JSON that says so."""
    running = {name: app.metrics.adapter_running(name) for name in adapters}
    state = "ok"
    try:
        store = app.state.store
        async with asyncio.timeout(STATE_TIMEOUT):
            await store.get(*PROBE)
    except TimeoutError:
        state = f"no answer within {STATE_TIMEOUT:g} s"
    except Exception as error:
        state = f"error: {type(error).__name__}"
        log.warning("health check: the state store failed: %s", error)
    healthy = state == "ok" and all(running.values())
    body = {
        "status": "ok" if healthy else "unavailable",
        "adapters": {name: "up" if up else "down" for name, up in running.items()},
        "state": state,
        "pid": os.getpid(),
    }
    return healthy, body


class OpsServer:
    """The aiohttp server of ``/healthz`` and ``/metrics`` for one app."""

    def __init__(
        self, app: Coterie, *, host: str, port: int, adapters: Sequence[str] | None = None
    ) -> None:
        self.app = app
        self.host = host
        self.port = port
        self.adapters = list(adapters) if adapters is not None else app.config.enabled_adapters()
        #: the address actually listened on, once started
        self.address: tuple[str, int] | None = None
        self._runner: web.AppRunner | None = None

    async def _healthz(self, request: web.Request) -> web.Response:
        healthy, body = await health(self.app, self.adapters)
        return web.json_response(body, status=200 if healthy else 503)

    async def _metrics(self, request: web.Request) -> web.Response:
        response = web.Response(body=self.app.metrics.render())
        response.headers["Content-Type"] = self.app.metrics.content_type()
        return response

    async def start(self) -> tuple[str, int]:
        web_app = web.Application()
        web_app.router.add_get("/healthz", self._healthz)
        web_app.router.add_get("/metrics", self._metrics)
        runner = web.AppRunner(web_app, access_log=None, handle_signals=False)
        await runner.setup()
        try:
            site = web.TCPSite(runner, self.host, self.port)
            await site.start()
        except OSError as error:
            await runner.cleanup()
            raise ConfigError(
                f"ops.port: cannot listen on {self.host}:{self.port} ({error.strerror or error})"
            ) from None
        self._runner = runner
        host, port = runner.addresses[0][:2]
        self.address = (str(host), int(port))
        log.info("ops: /healthz and /metrics on http://%s:%d", host, port)
        return self.address

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> OpsServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


async def serve_ops(
    app: Coterie, adapters: Sequence[str], *, port_offset: int = 0
) -> OpsServer | None:
    """Start the ops server when ``[ops] enabled`` (on ``[ops] port`` + ``port_offset``, or a
    free port when ``port = 0``); ``None`` otherwise."""
    ops = app.config.ops
    if not ops.enabled:
        return None
    port = ops.port + port_offset if ops.port else 0
    server = OpsServer(app, host=ops.host, port=port, adapters=adapters)
    await server.start()
    return server
