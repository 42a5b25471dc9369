"""The telegram-test-api emulator for the Telegram adapter tests, run through our launcher.

:func:`running_emulator` starts ``node tests/telegram/launcher.js`` (127.0.0.1, a free port, the
two python-telegram-bot 22 fixes; see the launcher), waits for the line it prints when listening,
and stops it at the end, also on failure: its standard input is closed (the launcher exits), then
it is terminated and, if need be, killed.

:class:`Emulator` plays the users through the emulator's client routes: ``/sendMessage`` and
``/sendCommand`` put an update in the bot's queue (the adapter fetches it with ``getUpdates``),
``/getUpdates`` hands out the bot's new messages to a chat, ``/getUpdatesHistory`` everything.
Each test uses its own bot token, so tests sharing one emulator never see each other's updates.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import queue
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import aiohttp

LAUNCHER = Path(__file__).resolve().parent / "telegram" / "launcher.js"
PACKAGE = LAUNCHER.parent / "node_modules" / "telegram-test-api" / "package.json"
START_SECONDS = 20.0
WAIT_SECONDS = 10.0
#: the emulator's bot (its getMe)
BOT_USERNAME = "TestNameBot"

_tokens = itertools.count(1)


def new_token() -> str:
    """A bot token of the right shape, different for every test."""
    number = next(_tokens)
    return f"{770000 + number}:AAE-emulator-test-token-{number:04d}"


class Emulator:
    """A running emulator on ``127.0.0.1:port``."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.base_url = f"http://127.0.0.1:{port}"
        self._messages = itertools.count(1)

    @property
    def api_url(self) -> str:
        """The adapter's ``api_url``: the emulator serves ``/bot<TOKEN>/<method>``."""
        return f"{self.base_url}/bot"

    async def _post(self, path: str, body: dict[str, Any]) -> Any:
        timeout = aiohttp.ClientTimeout(total=WAIT_SECONDS)
        async with (
            aiohttp.ClientSession(timeout=timeout) as session,
            session.post(f"{self.base_url}{path}", json=body) as response,
        ):
            assert response.status == 200, await response.text()
            return await response.json()

    async def bot_api(self, token: str, method: str, **params: Any) -> Any:
        """Call the Bot API as a bot would (to check what the launcher changes)."""
        return await self._post(f"/bot{token}/{method}", params)

    def message(
        self, token: str, chat: dict[str, Any], user: dict[str, Any], text: str
    ) -> dict[str, Any]:
        """A user's message as the emulator's client makes it."""
        return {
            "botToken": token,
            "date": int(time.time()),
            "from": user,
            "chat": chat,
            "text": text,
        }

    async def say(self, token: str, chat: dict[str, Any], user: dict[str, Any], text: str) -> None:
        """A user writes ``text``; a leading ``/command`` gets its ``bot_command`` entity."""
        message = self.message(token, chat, user, text)
        if text.startswith("/"):
            length = len(text.split(" ", 1)[0])
            message["entities"] = [{"offset": 0, "length": length, "type": "bot_command"}]
            await self._post("/sendCommand", message)
        else:
            await self._post("/sendMessage", message)

    async def history(self, token: str) -> list[dict[str, Any]]:
        """Every stored update of the bot: the users' and the bot's messages."""
        result = await self._post("/getUpdatesHistory", {"token": token})
        return list(result["result"])

    async def message_id_of(self, token: str, text: str) -> int:
        """The message id the emulator gave the user message with ``text``."""
        for item in await self.history(token):
            message = item.get("message", {})
            if "from" in message and message.get("text") == text:
                return int(item["messageId"])
        raise AssertionError(f"no user message {text!r}")

    async def replies(self, token: str, chat_id: int, count: int) -> list[dict[str, Any]]:
        """Wait (bounded) until the bot has sent ``count`` new messages to ``chat_id``; return
        what it sent (the Bot API parameters, as the emulator stored them)."""
        received: list[dict[str, Any]] = []
        deadline = time.monotonic() + WAIT_SECONDS
        while len(received) < count:
            result = await self._post("/getUpdates", {"token": token, "chatId": chat_id})
            received += [item["message"] for item in result["result"]]
            if len(received) >= count:
                break
            if time.monotonic() > deadline:
                raise AssertionError(f"{len(received)} of {count} replies arrived: {received}")
            await asyncio.sleep(0.05)
        return received

    async def no_more_replies(self, token: str, chat_id: int) -> list[dict[str, Any]]:
        """The bot's messages to ``chat_id`` not fetched yet (after the adapter settled)."""
        result = await self._post("/getUpdates", {"token": token, "chatId": chat_id})
        return [item["message"] for item in result["result"]]


def _first_line(stream: IO[bytes], timeout: float) -> bytes:
    lines: queue.Queue[bytes] = queue.Queue()
    threading.Thread(target=lambda: lines.put(stream.readline()), daemon=True).start()
    try:
        return lines.get(timeout=timeout)
    except queue.Empty:
        return b""


@contextlib.contextmanager
def running_emulator() -> Iterator[Emulator]:
    """Start the emulator through the launcher; stop it when the block ends."""
    node = shutil.which("node")
    if node is None:
        raise RuntimeError("node is not on PATH: the Telegram emulator tests need Node.js 18+")
    if not PACKAGE.exists():
        raise RuntimeError(
            "telegram-test-api is not installed: run `make test` (or "
            "`npm install --prefix tests/telegram`)"
        )
    with tempfile.TemporaryFile() as errors:
        process = subprocess.Popen(
            [node, str(LAUNCHER)],
            cwd=LAUNCHER.parent,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
        )
        try:
            assert process.stdout is not None
            line = _first_line(process.stdout, START_SECONDS)
            if not line:
                errors.seek(0)
                raise RuntimeError(
                    "the Telegram emulator did not start: "
                    + errors.read().decode(errors="replace")[-2000:]
                )
            ready = json.loads(line)
            assert ready["host"] == "127.0.0.1"
            yield Emulator(int(ready["port"]))
        finally:
            _stop(process)


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.stdin is not None:
        with contextlib.suppress(OSError):
            process.stdin.close()
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    if process.stdout is not None:
        process.stdout.close()
