"""How the framework shapes replies on their way out: the friendly error reply, the check that a
reply holds only elements, and buttons shown in the room's prefix."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress

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
_LEAVES = frozenset({Text, Die, LineBreak, Code})
#: element types with children
_PARENTS = frozenset({Bold, Italic, Strike})
_KNOWN = _LEAVES | _PARENTS


def check_elements(nodes: Sequence[Node]) -> None:
    """Refuse a reply tree holding anything but elements (what ``walk`` visits, without its
    generators: this runs on every reply)."""
    kinds = set(map(type, nodes))  # (one pass in C: most replies are leaves and a few parents)
    if kinds <= _LEAVES:
        return
    if kinds <= _KNOWN:  # leaves and parents: only the parents' children are left to check
        for parent in compress(nodes, map(_PARENTS.__contains__, map(type, nodes))):
            check_elements(parent.children)  # type: ignore[union-attr]
        return
    for node in nodes:
        if type(node) in _LEAVES:
            continue
        if isinstance(node, Bold | Italic | Strike):
            check_elements(node.children)
        elif not isinstance(node, NODE_TYPES):
            raise TypeError(f"a reply may hold only elements, not {node!r}")


def as_elements(nodes: Sequence[Node | str]) -> list[Node]:
    """A reply's top-level nodes with plain strings made :class:`Text` (a handler may answer
    strings), checked with :func:`check_elements`."""
    if str in set(map(type, nodes)):
        nodes = [Text(node) if isinstance(node, str) else node for node in nodes]
    check_elements(nodes)  # type: ignore[arg-type]
    return list(nodes)  # type: ignore[arg-type]


def localise_buttons(node: Node, prefix: str) -> Node:
    """Buttons carry commands written with ``!``, like usage lines: shown in the room's prefix."""
    if not isinstance(node, Actions):
        return node
    return Actions(tuple(Button(b.label, localise(b.command, prefix)) for b in node.buttons))
