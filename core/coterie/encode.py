"""Encoders from the neutral reply tree to plain text and Markdown.

Plain text always exists (screen readers, logs, the console when piped); Markdown is the base for
platforms with Markdown-like markup. Platform encoders (mrkdwn, Telegram HTML, Matrix HTML) live in
the adapters and follow the same shape: one function per node type, text always escaped.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

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


def to_plain(nodes: Iterable[Node]) -> str:
    """Text with no markup at all; die faces as bare numbers."""
    out: list[str] = []
    for node in nodes:
        if isinstance(node, Text | Code):
            out.append(node.text)
        elif isinstance(node, Bold | Italic | Strike):
            out.append(to_plain(node.children))
        elif isinstance(node, LineBreak):
            out.append("\n")
        elif isinstance(node, Die):
            out.append(str(node.face))
        elif isinstance(node, Image):
            out.append(f"[image: {node.alt}]")
        elif isinstance(node, Actions):
            out.append("Options: " + " | ".join(b.command for b in node.buttons))
    return _tidy("".join(out))


_MD_SPECIAL = re.compile(r"([\\`*_~\[\]()<>#|!{}+\-.])")


def escape_markdown(value: str) -> str:
    """Backslash-escape every character Markdown could read as markup."""
    return _MD_SPECIAL.sub(r"\\\1", value)


def markdown_die(die: Die, face: str) -> str:
    """How a die face is styled in Markdown (``face`` is already escaped)."""
    styles: dict[Role, Callable[[str], str]] = {
        Role.SUCCESS: lambda f: f"**{f}**",
        Role.CRITICAL: lambda f: f"***{f}***",
        Role.CANCELLED: lambda f: f"~~{f}~~",
        Role.ONE: lambda f: f"~~{f}~~",
        Role.BOTCH: lambda f: f"__{f}__",
        Role.FAILURE: lambda f: f,
    }
    return styles[die.role](face)


def to_markdown(nodes: Iterable[Node]) -> str:
    """CommonMark with GFM strikethrough; every piece of user or rule text escaped."""
    out: list[str] = []
    for node in nodes:
        if isinstance(node, Text):
            out.append(escape_markdown(node.text))
        elif isinstance(node, Code):
            ticks = "``" if "`" in node.text else "`"
            pad = " " if "`" in node.text else ""
            out.append(f"{ticks}{pad}{node.text}{pad}{ticks}")
        elif isinstance(node, Bold):
            out.append(f"**{to_markdown(node.children)}**")
        elif isinstance(node, Italic):
            out.append(f"_{to_markdown(node.children)}_")
        elif isinstance(node, Strike):
            out.append(f"~~{to_markdown(node.children)}~~")
        elif isinstance(node, LineBreak):
            out.append("\n")
        elif isinstance(node, Die):
            out.append(markdown_die(node, str(node.face)))
        elif isinstance(node, Image):
            out.append(f"[image: {escape_markdown(node.alt)}]")
        elif isinstance(node, Actions):
            out.append(" · ".join(f"`{b.command}`" for b in node.buttons))
    return _tidy("".join(out))


def _tidy(value: str) -> str:
    return "\n".join(part.rstrip() for part in value.rstrip("\n").split("\n"))
