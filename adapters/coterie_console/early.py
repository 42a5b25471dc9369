"""The prompt at once, before the line editor is ready.

prompt_toolkit (history, completion, colours) takes ~0.1 s to import, longer than everything
else a start does after the banner. So a terminal chat writes its prompt first, plainly, and
loads the editor behind it. Meanwhile the terminal neither echoes nor edits what is typed (echo
and line editing off, as the editor itself will have them; Ctrl-C still interrupts): every key
waits in its input buffer as it was pressed, Enter, Backspace and Ctrl-D included, and the
editor reads them as typed ahead when it draws its own prompt over the plain one. Nothing typed
is lost or shown twice."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from typing import IO, Any

#: back to the start of the line, and the line cleared: the editor draws its prompt there
ERASE_LINE = "\r\x1b[2K"
#: terminals that understand no such sequence (prompt_toolkit's ``is_dumb_terminal``): the prompt
#: waits for the editor there, as before
DUMB_TERMINALS = ("dumb", "unknown")


@contextlib.contextmanager
def prompt_while_loading(
    stdin: IO[str], write: Callable[[str], None], prompt: str
) -> Iterator[None]:
    """Write ``prompt`` now, with the terminal's echo and line editing off for as long as the
    block runs (while the line editor loads); then both as they were, and the line erased for
    the editor."""
    if os.environ.get("TERM", "").lower() in DUMB_TERMINALS:
        yield  # no line to erase there: the editor writes its plain prompt itself
        return
    attributes = _quiet(stdin)
    try:
        write(prompt)
        yield
    finally:
        if attributes is not None:
            _restore(stdin, attributes)
        write(ERASE_LINE)


def _quiet(stdin: IO[str]) -> list[Any] | None:
    """Turn the terminal's echo and line editing off; its attributes before, or ``None`` if it
    has none (not a terminal, or no ``termios`` here)."""
    try:
        import termios
    except ImportError:
        return None
    try:
        fd = stdin.fileno()
        before: list[Any] = termios.tcgetattr(fd)
        quiet = list(before)
        # no echo, and no line editing: keys stay as pressed (a Ctrl-D at the start of a line
        # edited by the terminal would be an end of input the editor never sees)
        quiet[3] = before[3] & ~(termios.ECHO | termios.ICANON)  # (the local modes)
        # TCSANOW, as prompt_toolkit does: nothing typed is flushed
        termios.tcsetattr(fd, termios.TCSANOW, quiet)
    except (termios.error, OSError, ValueError):
        return None
    return before


def _restore(stdin: IO[str], attributes: list[Any]) -> None:
    import termios

    with contextlib.suppress(termios.error, OSError, ValueError):
        termios.tcsetattr(stdin.fileno(), termios.TCSANOW, attributes)
