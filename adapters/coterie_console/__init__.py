"""The console chat: a room in the terminal that goes through the same core path as the platforms.

Interactive (a terminal): a prompt_toolkit prompt with history, completion of the room's commands
and of its rule set's Trait names (:mod:`coterie_console.complete`), and colour (``NO_COLOR`` turns
it off); prompt_toolkit is imported only then. Piped: one message per input line, each reply
printed as plain text, so sessions can be scripted.

One console can speak for the whole table: ``/as bob`` makes bob the speaker until the next
``/as``, and ``bob: !resist 3 6`` says one message as bob. ``/storyteller NAME`` (or the
``storyteller`` setting, ``coterie chat --storyteller NAME``) gives that user the Storyteller's
rights, as a platform's room administrator has them. The prompt shows whose turn it is.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import os
import re
import signal
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from coterie import hookimpl
from coterie.framework.adapter import Adapter
from coterie.framework.message import Message
from coterie.render.elements import Node, Reply
from coterie.render.encode import to_plain
from coterie.storage import characters
from coterie_console.ansi import ANSI
from coterie_console.complete import CONSOLE_COMMANDS, completer, sheet_names, template_names
from coterie_console.early import prompt_while_loading

if TYPE_CHECKING:
    from coterie.framework.app import Coterie

HISTORY_LINES = 1000
#: ``bob: !resist 3 6``: a name, a colon, then a command
_SPEAKER = re.compile(r"([A-Za-z][A-Za-z0-9_.-]{0,31}):\s+(\S.*)")
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,31}")
CONSOLE_HELP = (
    "Console: /as NAME speaks as NAME from now on; NAME: MESSAGE says one message as NAME; "
    "/storyteller NAME gives NAME the Storyteller's rights (/storyteller off: nobody); "
    "/quit or Ctrl-D leaves."
)


class ConsoleAdapter(Adapter):
    """Settings: ``user`` (default: your login name), ``room`` (default ``table``),
    ``color`` (``auto``, ``always``, ``never``; ``auto`` honours ``NO_COLOR``), ``history_file``,
    ``storyteller`` (a user with the Storyteller's rights)."""

    name = "console"
    summary = "a chat room in the terminal, for one player or the whole table"

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
        self.storyteller: str | None = self.settings.get("storyteller") or None
        self.interactive = self.stdin.isatty() and self.stdout.isatty()
        color = self.settings.get("color", "auto")
        no_color = bool(os.environ.get("NO_COLOR"))
        self.color = color == "always" or (color == "auto" and self.interactive and not no_color)
        self._stopping = False
        self._lines: asyncio.Queue[str | None] | None = None
        self._session: Any = None
        self._busy: asyncio.Task[None] | None = None
        self._interrupted = False

    # --- the loop ------------------------------------------------------------------------------

    async def run(self) -> None:
        if self.interactive:
            await self._banner()
        while not self._stopping:
            try:
                line = await self._read()
            except KeyboardInterrupt:  # Ctrl-C at the prompt: leave, like Ctrl-D
                self._write("\n(interrupted) bye\n")
                return
            if line is None:
                break
            if not line.strip():
                continue
            if not self.interactive:
                await self.say(line)
                continue
            # on a terminal, Ctrl-C while a message is handled leaves too (prompt_toolkit has
            # its own SIGINT handler only while the prompt is up)
            self._install_sigint()
            self._busy = asyncio.create_task(self.say(line))
            try:
                await self._busy
            except asyncio.CancelledError:
                if not self._interrupted:
                    raise
            finally:
                self._busy = None
            if self._interrupted:
                self._write("\n(interrupted) bye\n")
                return

    def _install_sigint(self) -> None:
        loop = asyncio.get_running_loop()
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signal.SIGINT, self._on_interrupt)

    def _on_interrupt(self) -> None:
        self._interrupted = True
        if self._busy is not None:
            self._busy.cancel()

    async def say(self, line: str) -> None:
        """Handle one input line: a console command, or a message from the speaker."""
        stripped = line.strip()
        if stripped.startswith("/") and await self._console_command(stripped):
            return
        user, text = self.user, line
        found = _SPEAKER.fullmatch(stripped)
        if found and not found.group(2)[0].isalnum():
            user, text = found.group(1), found.group(2)
        message = Message(
            platform="console",
            room=self.room,
            user=user,
            text=text,
            admin=self.storyteller is not None and user.casefold() == self.storyteller.casefold(),
        )
        reply = await self.app.handle(message)
        if reply is not None:
            self._write(self.encode(reply) + "\n")
        elif self.interactive:
            settings = await self.app.room_settings(f"console:{self.room}")
            self._write(
                f"(not a command: commands start with {settings.prefix}, "
                f"e.g. {settings.prefix}help; /help for the console)\n"
            )

    async def _console_command(self, line: str) -> bool:
        """``/as``, ``/storyteller``, ``/help``, ``/quit``; ``False`` for anything else."""
        word, _, rest = line[1:].partition(" ")
        word, rest = word.lower(), rest.strip()
        if word == "as":
            if not _NAME.fullmatch(rest):
                self._write("⚠ /as NAME: a name of letters, digits, _ . or -, e.g. /as bob\n")
            else:
                self.user = rest
                self._write(f"(speaking as {rest})\n")
            return True
        if word in ("storyteller", "st"):
            if rest.lower() in ("off", "none", "nobody"):
                self.storyteller = None
                self._write("(nobody in this console has the Storyteller's rights)\n")
            elif not _NAME.fullmatch(rest):
                self._write("⚠ /storyteller NAME, e.g. /storyteller alice (or off)\n")
            else:
                self.storyteller = rest
                self._write(f"({rest} has the Storyteller's rights)\n")
            return True
        if word in ("help", "?"):
            self._write(CONSOLE_HELP + "\n")
            return True
        if word in ("quit", "exit"):
            self._stopping = True
            return True
        return False

    async def stop(self) -> None:
        self._stopping = True

    # --- output --------------------------------------------------------------------------------

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
        folder = self.app.config.data_path() / "images"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / Path(filename).name
        path.write_bytes(data)
        return path.resolve()

    def _write(self, text: str) -> None:
        self.stdout.write(text)
        self.stdout.flush()

    async def _banner(self) -> None:
        settings = await self.app.room_settings(f"console:{self.room}")
        variant = self.app.variants[settings.variant]
        example = f"{settings.prefix}roll {variant.roll_examples()[0]}"
        self._write(
            f"coterie — room '{self.room}', rules: {settings.variant}. "
            f"Try {example} or {settings.prefix}help; /help for the console; Ctrl-D leaves.\n"
        )

    # --- input ---------------------------------------------------------------------------------

    def prompt(self) -> str:
        """Whose turn it is: ``bob> ``, ``alice (Storyteller)> ``."""
        role = (
            " (Storyteller)"
            if self.storyteller and self.user.casefold() == self.storyteller.casefold()
            else ""
        )
        return f"{self.user}{role}> "

    async def _read(self) -> str | None:
        if self.interactive:
            return await self._prompt()
        if self._lines is None:
            self._lines = asyncio.Queue()
            _start_reader(self.stdin, self._lines, asyncio.get_running_loop())
        return await self._lines.get()

    async def _prompt(self) -> str | None:
        if self._session is None:
            self._session = await self._new_session()
        else:  # the room's rule set, or the speaker's sheet, may have changed since
            self._session.completer.update(*await self.completion_words())
        try:
            text: str = await self._session.prompt_async(self.prompt())
            return text
        except EOFError:
            self._write("bye\n")
            return None

    async def _new_session(self) -> Any:
        # the prompt shows at once; the line editor loads behind it (coterie_console.early)
        with prompt_while_loading(self.stdin, self._write, self.prompt()):
            from prompt_toolkit import PromptSession

            history = Path(
                self.settings.get("history_file") or Path.home() / ".coterie_history"
            ).expanduser()
            return PromptSession(
                history=_BoundedHistory(str(history)),
                completer=completer(*await self.completion_words()),
                complete_while_typing=False,
                color_depth=None if self.color else _monochrome(),
            )

    async def completion_words(self) -> tuple[list[str], list[str]]:
        """What the prompt completes now: the room's commands, and the Traits of its rule set
        with the custom ones of the speaker's active character (one read of the store)."""
        key = f"console:{self.room}"
        settings = await self.app.room_settings(key)
        words = [
            f"{settings.prefix}{name}"
            for command in self.app.room_commands(settings.variant)
            for name in command.names
        ]
        words += CONSOLE_COMMANDS
        rules = self.app.variants.get(settings.variant)
        traits = template_names(getattr(rules, "character_template", None))
        record = await characters.load_player(self.app.state, settings.chronicle or key, self.user)
        traits += [name for name in sheet_names(record) if name not in traits]
        return words, traits


def _monochrome() -> Any:
    from prompt_toolkit.output import ColorDepth

    return ColorDepth.MONOCHROME


class _BoundedHistory:
    """prompt_toolkit's ``FileHistory`` keeping the last :data:`HISTORY_LINES` entries."""

    def __new__(cls, path: str) -> Any:
        from prompt_toolkit.history import FileHistory

        class Bounded(FileHistory):
            def load_history_strings(self) -> Any:
                for count, item in enumerate(super().load_history_strings()):
                    if count >= HISTORY_LINES:
                        return
                    yield item

        return Bounded(path)


def _start_reader(
    stdin: IO[str], queue: asyncio.Queue[str | None], loop: asyncio.AbstractEventLoop
) -> None:
    """Read ``stdin`` line by line in a daemon thread: a Ctrl-C while it waits for a line does
    not keep the process alive until Enter."""

    def read() -> None:
        try:
            for raw in iter(stdin.readline, ""):
                loop.call_soon_threadsafe(queue.put_nowait, raw.rstrip("\r\n"))
        except (OSError, ValueError):
            pass
        finally:
            with contextlib.suppress(RuntimeError):  # the loop is already closed
                loop.call_soon_threadsafe(queue.put_nowait, None)

    threading.Thread(target=read, name="console-stdin", daemon=True).start()


def _login() -> str:
    try:
        return os.environ.get("COTERIE_USER") or getpass.getuser()
    except Exception:
        return "you"


@hookimpl
def coterie_adapters() -> list[type[Adapter]]:
    return [ConsoleAdapter]
