"""Encode the reply tree for a colour terminal (ANSI SGR codes)."""

from __future__ import annotations

from collections.abc import Iterable

from coterie.elements import (
    Actions,
    Bold,
    Code,
    Die,
    Image,
    Italic,
    LineBreak,
    Node,
    Role,
    Strike,
    Text,
)

RESET = "\x1b[0m"
_DIE_STYLE = {
    Role.SUCCESS: "\x1b[1;32m",  # bold green
    Role.CRITICAL: "\x1b[1;33m",  # bold yellow
    Role.CANCELLED: "\x1b[2;9m",  # dim, struck through
    Role.ONE: "\x1b[31m",  # red
    Role.BOTCH: "\x1b[1;41;97m",  # bold white on red
    Role.FAILURE: "\x1b[2m",  # dim
}


def _clean(value: str) -> str:
    """No escape sequences from user text reach the terminal."""
    return "".join(ch if ch.isprintable() or ch == "\n" else "?" for ch in value)


def to_ansi(nodes: Iterable[Node]) -> str:
    out: list[str] = []
    for node in nodes:
        if isinstance(node, Text):
            out.append(_clean(node.text))
        elif isinstance(node, Code):
            out.append(f"\x1b[36m{_clean(node.text)}{RESET}")
        elif isinstance(node, Bold):
            out.append(f"\x1b[1m{to_ansi(node.children)}{RESET}")
        elif isinstance(node, Italic):
            out.append(f"\x1b[3m{to_ansi(node.children)}{RESET}")
        elif isinstance(node, Strike):
            out.append(f"\x1b[9m{to_ansi(node.children)}{RESET}")
        elif isinstance(node, LineBreak):
            out.append("\n")
        elif isinstance(node, Die):
            hunger = "\x1b[4m" if "hunger" in node.tags else ""
            out.append(f"{_DIE_STYLE[node.role]}{hunger}{node.face}{RESET}")
        elif isinstance(node, Image):
            out.append(f"[image: {_clean(node.alt)}]")
        elif isinstance(node, Actions):
            out.append("Options: " + " | ".join(_clean(b.command) for b in node.buttons))
    return "".join(out)
