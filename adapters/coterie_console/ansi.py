"""Encode the reply tree for a colour terminal (ANSI SGR codes)."""

from __future__ import annotations

from typing import ClassVar

from coterie.render.elements import Actions, Die, Mention, Role
from coterie.render.encode import Encoder

RESET = "\x1b[0m"


class AnsiEncoder(Encoder):
    """Colours and styles for a terminal; control characters in text are neutralised."""

    DIE_STYLE: ClassVar[dict[Role, str]] = {
        Role.SUCCESS: "\x1b[1;32m",  # bold green
        Role.CRITICAL: "\x1b[1;33m",  # bold yellow
        Role.CANCELLED: "\x1b[2;9m",  # dim, struck through
        Role.ONE: "\x1b[31m",  # red
        Role.BOTCH: "\x1b[1;41;97m",  # bold white on red
        Role.FAILURE: "\x1b[2m",  # dim
    }

    def text(self, value: str) -> str:
        """No escape sequence from user text reaches the terminal."""
        return "".join(ch if ch.isprintable() or ch == "\n" else "?" for ch in value)

    def bold(self, inner: str) -> str:
        return f"\x1b[1m{inner}{RESET}"

    def italic(self, inner: str) -> str:
        return f"\x1b[3m{inner}{RESET}"

    def strike(self, inner: str) -> str:
        return f"\x1b[9m{inner}{RESET}"

    def code(self, value: str) -> str:
        return f"\x1b[36m{self.text(value)}{RESET}"

    def die(self, die: Die) -> str:
        hunger = "\x1b[4m" if "hunger" in die.tags else ""
        return f"{self.DIE_STYLE[die.role]}{hunger}{die.face}{RESET}"

    def mention(self, mention: Mention) -> str:
        """A person is named in bold: a terminal has nobody to point at or notify."""
        return self.bold(self.text(mention.label))

    def actions(self, actions: Actions) -> str:
        return "Options: " + " | ".join(self.text(b.command) for b in actions.buttons)

    def finish(self, out: str) -> str:
        return out


ANSI = AnsiEncoder()
