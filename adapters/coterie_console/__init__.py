"""The console chat: a room in the terminal that goes through the same core path as the platforms.

Interactive (a terminal): a prompt with readline history and colour. Piped: one message per input
line, each reply printed as plain text, so sessions can be scripted.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from coterie import hookimpl
from coterie.framework.adapter import Adapter
from coterie.framework.message import Message
from coterie.render.elements import Node, Reply
from coterie.render.encode import to_plain
from coterie_console.ansi import ANSI

if TYPE_CHECKING:
    from coterie.framework.app import Coterie

HISTORY_LINES = 1000


class ConsoleAdapter(Adapter):
    """Settings: ``user`` (default: your login name), ``room`` (default ``table``),
    ``color`` (``auto``, ``always``, ``never``), ``history_file``."""

    name = "console"
    summary = "a chat room in the terminal"

    @classmethod
    def encode_text(cls, body: Sequence[Node]) -> str | None:
        """The reply body as this platform is sent it (ANSI colours)."""
        from coterie_console.ansi import AnsiEncoder

        return AnsiEncoder().encode(body)

    def __init__(
        self,
        app: Coterie,
        settings: Mapping[str, Any],
        *,
        stdin: IO[str] | None = None,
        stdout: IO[str] | None = None,
    ) -> None:
        super().__init__(app, settings)
        self.stdin = stdin or sys.stdin
        self.stdout = stdout or sys.stdout
        self.user = str(self.settings.get("user") or _login())
        self.room = str(self.settings.get("room") or "table")
        self.interactive = self.stdin.isatty() and self.stdout.isatty()
        color = self.settings.get("color", "auto")
        self.color = color == "always" or (color == "auto" and self.interactive)
        self._stopping = False

    async def run(self) -> None:
        if self.interactive:
            self._setup_readline()
            settings = await self.app.room_settings(f"console:{self.room}")
            self._write(
                f"coterie — room '{self.room}', rules: {settings.variant}. "
                f"Try {settings.prefix}roll 7 6 or {settings.prefix}help; Ctrl-D leaves.\n"
            )
        while not self._stopping:
            line = await self._read()
            if line is None:
                break
            if not line.strip():
                continue
            message = Message(platform="console", room=self.room, user=self.user, text=line)
            reply = await self.app.handle(message)
            if reply is not None:
                self._write(self.encode(reply) + "\n")
            elif self.interactive:
                self._write("(commands start with the room prefix, e.g. !roll 7 6)\n")

    async def stop(self) -> None:
        self._stopping = True

    def encode(self, reply: Reply) -> str:
        """The reply as the terminal shows it; parts meant for one user only (a secret roll's
        result) follow, each marked ``(private to NAME)``: the console is one screen."""
        text = self._text(reply.body)
        for image in reply.images():
            path = self._save_image(image.filename, image.data)
            text += f"\n(image saved to {path})"
        for part in reply.private:
            text += f"\n(private to {part.name or part.user}) " + self._text(part.body)
        return text

    def _text(self, body: list[Node]) -> str:
        return ANSI.encode(body) if self.color else to_plain(body)

    def _save_image(self, filename: str, data: bytes) -> Path:
        folder = Path(self.app.config.data_dir) / "images"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / Path(filename).name
        path.write_bytes(data)
        return path.resolve()

    async def _read(self) -> str | None:
        if self.interactive:
            try:
                return await asyncio.to_thread(input, f"{self.user}> ")
            except EOFError:
                self._write("\n")
                return None
        line = await asyncio.to_thread(self.stdin.readline)
        return line.rstrip("\r\n") if line else None

    def _write(self, text: str) -> None:
        self.stdout.write(text)
        self.stdout.flush()

    def _setup_readline(self) -> None:
        try:
            import readline
        except ImportError:  # pragma: no cover - Windows without pyreadline
            return
        history = Path(
            self.settings.get("history_file") or Path.home() / ".coterie_history"
        ).expanduser()
        with contextlib.suppress(OSError):
            readline.read_history_file(history)
        readline.set_history_length(HISTORY_LINES)
        import atexit

        atexit.register(_save_history, readline, history)


def _save_history(readline: Any, path: Path) -> None:
    with contextlib.suppress(OSError):
        readline.write_history_file(path)


def _login() -> str:
    try:
        return os.environ.get("COTERIE_USER") or getpass.getuser()
    except Exception:
        return "you"


@hookimpl
def coterie_adapters() -> list[type[Adapter]]:
    return [ConsoleAdapter]
