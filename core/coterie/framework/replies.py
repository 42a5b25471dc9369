"""How the framework shapes replies on their way out: the friendly error reply, the check that a
reply holds only elements, and buttons shown in the room's prefix."""

from __future__ import annotations

from collections.abc import Sequence

from coterie.framework.grammar import localise
from coterie.render.elements import (
    BR,
    NODE_TYPES,
    Actions,
    Bold,
    Button,
    Code,
    Die,
    Italic,
    LineBreak,
    Mention,
    Node,
    Reply,
    Strike,
    Text,
    code,
)


def error_reply(message: str, usage: str | None = None, hint: str | None = None) -> Reply:
    """A friendly error: what went wrong, then how the command is written."""
    body: list[Node] = [Text(f"⚠ {message}")]
    if hint:
        body += [BR, Text(hint)]
    if usage:
        body += [BR, Text("Usage: "), code(usage)]
    return Reply(body, kind="error")


#: element types without children, checked by exact type first (the common case)
_LEAVES = frozenset({Text, Die, LineBreak, Code, Mention})
#: element types with children
_PARENTS = (Bold, Italic, Strike)


def check_elements(nodes: Sequence[Node]) -> None:
    """Refuse a reply tree holding anything but elements (what ``walk`` visits, without its
    generators: this runs on every reply)."""
    for node in nodes:
        if type(node) in _LEAVES:
            continue
        if isinstance(node, _PARENTS):
            check_elements(node.children)
        elif not isinstance(node, NODE_TYPES):
            raise TypeError(f"a reply may hold only elements, not {node!r}")


def as_elements(nodes: Sequence[Node | str]) -> list[Node]:
    """A reply's top-level nodes, plain strings made :class:`Text` (a handler may answer
    strings), checked as :func:`check_elements` does: one pass over them."""
    out: list[Node] = []
    add = out.append
    for node in nodes:
        kind = type(node)
        if kind in _LEAVES:
            add(node)  # type: ignore[arg-type]
            continue
        if kind is str:
            add(Text(node))  # type: ignore[arg-type]
            continue
        if isinstance(node, _PARENTS):
            check_elements(node.children)
        elif not isinstance(node, NODE_TYPES):
            raise TypeError(f"a reply may hold only elements, not {node!r}")
        add(node)
    return out


def localise_buttons(node: Node, prefix: str) -> Node:
    """Buttons carry commands written with ``!``, like usage lines: shown in the room's prefix."""
    if not isinstance(node, Actions):
        return node
    return Actions(tuple(Button(b.label, localise(b.command, prefix)) for b in node.buttons))
