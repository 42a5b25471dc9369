"""The platform-adapter interface. Adapters are plugins returned by ``coterie_adapters``.

An adapter is thin: it turns platform events into :class:`~coterie.message.Message`, calls
``app.handle(message)``, and encodes the returned :class:`~coterie.elements.Reply` into the
platform's native formatting. No rule logic lives in an adapter.
"""

from __future__ import annotations

import asyncio
import logging
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from coterie.framework.config import secret_env_names_of

if TYPE_CHECKING:
    from pydantic import BaseModel

    from coterie.framework.app import Coterie
    from coterie.render.elements import Node


class Adapter(ABC):
    """Base class of platform adapters."""

    #: the key under ``[adapters.NAME]`` in the config
    name: ClassVar[str]
    #: one line for ``coterie plugins``
    summary: ClassVar[str] = ""
    #: the pydantic model of the ``[adapters.NAME]`` table, if it has one: its fields marked
    #: :data:`coterie.config.SECRET_ENV` name the environment variables holding secrets
    settings_model: ClassVar[type[BaseModel] | None] = None

    def __init__(self, app: Coterie, settings: Mapping[str, Any]) -> None:
        """May raise ``ConfigError`` for a permanent problem (a missing token): that stops
        ``coterie run`` with the message instead of restarting the adapter forever."""
        self.app = app
        self.settings = dict(settings)

    @classmethod
    def check_settings(cls, settings: Mapping[str, Any]) -> None:
        """Validate the ``[adapters.NAME]`` table without connecting or reading secrets; raise
        ``ConfigError`` naming the key. Called at start and by ``coterie config check``."""
        return None  # the default adapter accepts any table

    @classmethod
    def secret_env_names(cls, settings: Mapping[str, Any]) -> list[str]:
        """The environment variables whose values are secrets, by :attr:`settings_model`'s
        marked fields; an adapter without a model: every ``*_env`` key of its table (when
        unsure, redact more)."""
        if cls.settings_model is not None:
            return secret_env_names_of(cls.settings_model, settings)
        return [str(v) for k, v in settings.items() if k.endswith("_env") and v]

    @classmethod
    def encode_text(cls, body: Sequence[Node]) -> str | None:
        """A reply body as the text this platform is sent, in its own markup (Slack mrkdwn,
        Telegram HTML, Matrix ``formatted_body`` HTML): for tests (``coterie.testing``) and
        previews. ``None``: the adapter does not say."""
        return None

    @abstractmethod
    async def run(self) -> None:
        """Serve until stopped (or, for the console, until input ends). Raising means a crash:
        the supervisor logs it and restarts the adapter with back-off."""

    async def stop(self) -> None:  # noqa: B027 - optional hook, nothing to do by default
        """Ask the adapter to finish; ``run`` should return soon after."""


async def drain_tasks(
    tasks: set[asyncio.Task[None]], timeout: float, *, what: str, log: logging.Logger
) -> None:
    """Wait until the tasks in ``tasks`` (a set their done-callbacks shrink) have finished; after
    ``timeout`` seconds cancel the rest and log how many ``what`` were left. For adapters that
    answer in background tasks and must not drop replies on shutdown."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while tasks:
        remaining = deadline - loop.time()
        if remaining <= 0:
            left = list(tasks)
            log.warning("%d %s still pending at shutdown: cancelled", len(left), what)
            for task in left:
                task.cancel()
            await asyncio.gather(*left, return_exceptions=True)
            return
        await asyncio.wait(set(tasks), timeout=remaining)


#: exception class names (any module) that mean the network is not there, from the HTTP and chat
#: libraries the adapters use: the core names them without importing a platform library
_NETWORK_ERRORS = (
    "NetworkError",
    "TimedOut",
    "ConnectError",
    "ConnectTimeout",
    "ClientConnectorError",
    "ClientConnectorDNSError",
    "ServerDisconnectedError",
    "ClientOSError",
    "LocalProtocolError",
)


def unreachable(error: BaseException) -> bool:
    """Whether ``error`` (or what caused it) says the platform could not be reached."""
    seen: BaseException | None = error
    for _ in range(8):
        if seen is None:
            return False
        if isinstance(seen, OSError | TimeoutError):
            return True
        if any(cls.__name__ in _NETWORK_ERRORS for cls in type(seen).__mro__):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def one_line(error: BaseException) -> str:
    """``ClassName: message`` on one line, for a log line without a traceback."""
    text = " ".join(str(error).split()) or "no detail"
    return f"{type(error).__name__}: {text[:200]}"
