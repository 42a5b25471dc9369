"""Element trees and replies as JSON, and back: a reply can be kept in the state store and shown
again later exactly as it was built (a secret roll revealed, a reply sent again after a restart).

The JSON form is a list of objects, one per node, each with a ``"t"`` naming the node type:
``{"t": "text", "text": "..."}``, ``{"t": "bold", "children": [...]}``, ``{"t": "die", "face": 9,
"role": "success", "sides": 10, "tags": ["hunger"]}`` (``"tags"`` left out when there are none),
``{"t": "br"}``, ``{"t": "mention", "user": ..., "label": ..., "notify": true}`` (``"notify"`` left
out when false), ``{"t": "image", "data": BASE64, ...}``, ``{"t": "actions", "buttons":
[{"label": ..., "command": ...}]}``. Reading refuses anything else with ``ValueError``: stored
data is checked, never trusted. :func:`reply_to_text` writes a reply's JSON as text directly."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from typing import Any

from coterie.render.elements import (
    BR,
    Actions,
    Bold,
    Button,
    Code,
    Die,
    Image,
    Italic,
    LineBreak,
    Mention,
    Node,
    Private,
    Reply,
    Role,
    Strike,
    Text,
)

#: how deep nested bold/italic/strike may go when read back (a reply is never this deep)
MAX_DEPTH = 16

_CONTAINERS: dict[type, str] = {Bold: "bold", Italic: "italic", Strike: "strike"}
_CONTAINER_TYPES = {name: kind for kind, name in _CONTAINERS.items()}


def node_to_json(node: Node) -> dict[str, Any]:
    """One node as a JSON-compatible object."""
    write = _WRITERS.get(type(node))
    if write is None:  # a subclass of an element is written as the element
        write = next((_WRITERS[c] for c in type(node).__mro__ if c in _WRITERS), None)
        if write is None:
            raise TypeError(f"not an element: {node!r}")
    return write(node)


def _die(node: Die) -> dict[str, Any]:
    written = {"t": "die", "face": node.face, "role": node.role.value, "sides": node.sides}
    if node.tags:  # (most dice have none: read back, a die without "tags" has none)
        written["tags"] = sorted(node.tags)
    return written


def _mention(node: Mention) -> dict[str, Any]:
    written: dict[str, Any] = {"t": "mention", "user": node.user, "label": node.label}
    if node.notify:
        written["notify"] = True
    return written


def _image(node: Image) -> dict[str, Any]:
    return {
        "t": "image",
        "data": base64.b64encode(node.data).decode("ascii"),
        "alt": node.alt,
        "filename": node.filename,
        "mime": node.mime,
    }


def _container(kind: str) -> Callable[[Any], dict[str, Any]]:
    def write(node: Any) -> dict[str, Any]:
        return {"t": kind, "children": nodes_to_json(node.children)}

    return write


#: how each element type is written, by exact type (one look-up per node, not a chain of checks)
_WRITERS: dict[type, Callable[[Any], dict[str, Any]]] = {
    Text: lambda node: {"t": "text", "text": node.text},
    Code: lambda node: {"t": "code", "text": node.text},
    LineBreak: lambda node: {"t": "br"},
    Die: _die,
    Mention: _mention,
    Image: _image,
    Actions: lambda node: {
        "t": "actions",
        "buttons": [{"label": b.label, "command": b.command} for b in node.buttons],
    },
    **{cls: _container(kind) for cls, kind in _CONTAINERS.items()},
}


def nodes_to_json(nodes: Any) -> list[dict[str, Any]]:
    """A list (or tuple) of nodes as JSON-compatible objects."""
    return [node_to_json(node) for node in nodes]


def _str(data: dict[str, Any], key: str) -> str:
    value = data.get(key)
    if not isinstance(value, str):
        raise ValueError(f"{data.get('t')!r} node: {key!r} is not text")
    return value


def _int(data: dict[str, Any], key: str) -> int:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{data.get('t')!r} node: {key!r} is not a whole number")
    return value


def node_from_json(data: Any, depth: int = 0) -> Node:
    """The node a :func:`node_to_json` object stands for; ``ValueError`` for anything else."""
    if not isinstance(data, dict):
        raise ValueError(f"a node is an object, not {type(data).__name__}")
    kind = data.get("t")
    if kind == "text":
        return Text(_str(data, "text"))
    if kind == "code":
        return Code(_str(data, "text"))
    if kind == "br":
        return BR
    if kind == "die":
        tags = data.get("tags", [])
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise ValueError("'die' node: 'tags' is not a list of text")
        try:
            role = Role(_str(data, "role"))
        except ValueError:
            raise ValueError(f"'die' node: unknown role {data.get('role')!r}") from None
        return Die(_int(data, "face"), role, _int(data, "sides"), frozenset(tags))
    if kind == "mention":
        notify = data.get("notify", False)
        if not isinstance(notify, bool):
            raise ValueError("'mention' node: 'notify' is not true or false")
        return Mention(_str(data, "user"), _str(data, "label"), notify)
    if kind == "image":
        try:
            raw = base64.b64decode(_str(data, "data"), validate=True)
        except binascii.Error:
            raise ValueError("'image' node: 'data' is not base64") from None
        return Image(raw, _str(data, "alt"), _str(data, "filename"), _str(data, "mime"))
    if kind == "actions":
        buttons = data.get("buttons")
        if not isinstance(buttons, list):
            raise ValueError("'actions' node: 'buttons' is not a list")
        return Actions(tuple(Button(_str(b, "label"), _str(b, "command")) for b in buttons))
    container = _CONTAINER_TYPES.get(kind) if isinstance(kind, str) else None
    if container is None:
        raise ValueError(f"unknown node type {kind!r}")
    if depth >= MAX_DEPTH:
        raise ValueError(f"nodes nested deeper than {MAX_DEPTH}")
    children = data.get("children")
    if not isinstance(children, list):
        raise ValueError(f"{kind!r} node: 'children' is not a list")
    return container(tuple(node_from_json(child, depth + 1) for child in children))  # type: ignore[no-any-return]


def nodes_from_json(data: Any) -> list[Node]:
    """The nodes of a :func:`nodes_to_json` list; ``ValueError`` for anything else."""
    if not isinstance(data, list):
        raise ValueError("nodes are a list")
    return [node_from_json(item) for item in data]


def reply_to_json(reply: Reply) -> dict[str, Any]:
    """A whole reply (body, kind, ephemeral, meta and private parts) as a JSON-compatible object."""
    return {
        "body": nodes_to_json(reply.body),
        "kind": reply.kind,
        "ephemeral": reply.ephemeral,
        "meta": dict(reply.meta),
        "private": [
            {"user": part.user, "name": part.name, "body": nodes_to_json(part.body)}
            for part in reply.private
        ],
    }


def reply_to_text(reply: Reply) -> str:
    """:func:`reply_to_json` as compact JSON text (``json.loads`` gives the same object), written
    straight from the elements: every answered command keeps its reply this way
    (:mod:`coterie.framework.events`), and most of a reply's elements are the same few dice and
    texts, whose text is remembered."""
    parts = [
        '{"body":',
        _nodes_text(reply.body),
        ',"kind":',
        _dumps(reply.kind),
        ',"ephemeral":',
        "true" if reply.ephemeral else "false",
        ',"meta":',
        _dumps(dict(reply.meta)),
        ',"private":',
    ]
    if reply.private:
        parts.append(_dumps(reply_to_json(Reply([], private=reply.private))["private"]))
    else:
        parts.append("[]")
    parts.append("}")
    return "".join(parts)


_dumps = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode
#: the JSON text of die elements (shared objects: the same few dozen serve every roll) and of
#: texts, remembered; each forgotten all at once when it grows too large
_DIE_TEXT: dict[int, tuple[Die, str]] = {}
_TEXT_TEXT: dict[str, str] = {}
_REMEMBERED_MOST = 4096


def _nodes_text(nodes: Any) -> str:
    parts: list[str] = []
    add = parts.append
    for node in nodes:
        kind = type(node)
        if kind is Text:
            text = node.text
            done = _TEXT_TEXT.get(text)
            if done is None:
                done = '{"t":"text","text":' + _dumps(text) + "}"
                if len(text) <= 80:
                    if len(_TEXT_TEXT) >= _REMEMBERED_MOST:
                        _TEXT_TEXT.clear()
                    _TEXT_TEXT[text] = done
            add(done)
        elif kind is Die:
            kept = _DIE_TEXT.get(id(node))
            if kept is not None and kept[0] is node:  # (held here: its id names no other object)
                add(kept[1])
                continue
            done = _dumps(_die(node))
            if len(_DIE_TEXT) >= _REMEMBERED_MOST:
                _DIE_TEXT.clear()
            _DIE_TEXT[id(node)] = (node, done)
            add(done)
        elif kind is LineBreak:
            add('{"t":"br"}')
        elif kind in _CONTAINERS:
            add('{"t":"' + _CONTAINERS[kind] + '","children":' + _nodes_text(node.children) + "}")
        else:
            add(_dumps(node_to_json(node)))
    return "[" + ",".join(parts) + "]"


def reply_from_json(data: Any) -> Reply:
    """The reply a :func:`reply_to_json` object stands for; ``ValueError`` for anything else."""
    if not isinstance(data, dict):
        raise ValueError("a reply is an object")
    meta = data.get("meta", {})
    if not isinstance(meta, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in meta.items()
    ):
        raise ValueError("a reply's meta maps text to text")
    private = data.get("private", [])
    if not isinstance(private, list):
        raise ValueError("a reply's private parts are a list")
    return Reply(
        nodes_from_json(data.get("body")),
        kind=_str(data, "kind"),
        ephemeral=bool(data.get("ephemeral", False)),
        meta=dict(meta),
        private=[
            Private(_str(part, "user"), nodes_from_json(part.get("body")), _str(part, "name"))
            for part in private
            if isinstance(part, dict)
        ],
    )
