"""Event contents the bot sends, built from plain data (no nio): notices, images, reactions, and
the relations that make them replies (``m.in_reply_to``) and keep them in a thread
(``rel_type: m.thread``).

Every message carries ``"m.mentions"``: an explicit list of whom it pings, so that a player's
name in a roll, or ``@room`` in a comment, never notifies anyone (clients that support
intentional mentions then skip the old display-name and ``@room`` keyword rules). It is empty
(``{}``) unless the reply asks to tell someone (the player challenged or asked: a pill the core
marked ``notify``), then ``{"user_ids": [...]}`` of those alone.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass
from typing import Any

from coterie.render.elements import Image
from coterie_matrix.formatting import FORMAT, Part

#: a custom key with what a reply is to coterie: its kind, roll id and rule set, which part
META_KEY = "coterie.reply"
#: the state event that makes a new room end-to-end encrypted (Megolm)
ENCRYPTION_STATE = {
    "type": "m.room.encryption",
    "state_key": "",
    "content": {"algorithm": "m.megolm.v1.aes-sha2"},
}


@dataclass(frozen=True)
class Target:
    """Where a reply goes: the room, the event it answers, the thread (if any)."""

    room_id: str
    #: the event answered (a command, or the reply whose button was pressed)
    reply_to: str
    thread: str | None = None


def relation(target: Target) -> dict[str, Any]:
    """``m.relates_to`` of a reply: a real reply to the command, inside its thread if any.

    In a thread, ``m.in_reply_to`` names the command itself, so ``is_falling_back`` is false
    (it would be true if ``m.in_reply_to`` only pointed at the thread's latest event for clients
    without threads)."""
    if not target.reply_to and not target.thread:  # a message of its own (a private part)
        return {}
    in_reply_to = {"event_id": target.reply_to}
    if target.thread:
        return {
            "rel_type": "m.thread",
            "event_id": target.thread,
            "is_falling_back": False,
            "m.in_reply_to": in_reply_to,
        }
    return {"m.in_reply_to": in_reply_to}


def notice(part: Part, target: Target, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    """An ``m.notice`` with both bodies, as a reply to ``target``."""
    content: dict[str, Any] = {
        "msgtype": "m.notice",
        "body": part.plain or " ",
        "format": FORMAT,
        "formatted_body": part.html,
        "m.mentions": {"user_ids": list(part.mentions)} if part.mentions else {},
    }
    related = relation(target)
    if related:
        content["m.relates_to"] = related
    if meta:
        content[META_KEY] = meta
    return content


def image(
    picture: Image,
    target: Target,
    *,
    url: str,
    encryption: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """An ``m.image`` whose ``body`` is the alt text; ``url`` is the ``mxc://`` URI. In an
    encrypted room the upload is encrypted and ``encryption`` holds its key (``file``)."""
    info: dict[str, Any] = {"mimetype": picture.mime, "size": len(picture.data)}
    size = image_size(picture.data)
    if size is not None:
        info["w"], info["h"] = size
    content: dict[str, Any] = {
        "msgtype": "m.image",
        "body": picture.alt,
        "filename": picture.filename,
        "info": info,
        "m.relates_to": relation(target),
        "m.mentions": {},
    }
    if encryption is not None:
        content["file"] = {**encryption, "url": url, "mimetype": picture.mime}
    else:
        content["url"] = url
    return content


def reaction(event_id: str, key: str) -> dict[str, Any]:
    """An annotation (``m.reaction``) of ``event_id`` with ``key``."""
    return {"m.relates_to": {"rel_type": "m.annotation", "event_id": event_id, "key": key}}


def transaction_id(cause: str, what: str) -> str:
    """A transaction id determined by the event that caused the send and what is sent. The
    homeserver keeps each device's transaction ids and answers a repeated one with the event it
    already made: a send retried after a lost connection, or repeated after a restart in the
    middle of answering, never posts twice."""
    digest = hashlib.sha256(cause.encode()).hexdigest()[:32]
    return f"coterie.{digest}.{what}"


def image_size(data: bytes) -> tuple[int, int] | None:
    """Width and height of a PNG, GIF or JPEG, read from its header; ``None`` if unknown."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24 and data[12:16] == b"IHDR":
        width, height = struct.unpack(">II", data[16:24])
        return int(width), int(height)
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        width, height = struct.unpack("<HH", data[6:10])
        return int(width), int(height)
    if data[:2] == b"\xff\xd8":
        return _jpeg_size(data)
    return None


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    index = 2
    while index + 9 < len(data):
        if data[index] != 0xFF:
            return None
        marker = data[index + 1]
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            index += 2
            continue
        (length,) = struct.unpack(">H", data[index + 2 : index + 4])
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", data[index + 5 : index + 9])
            return int(width), int(height)
        index += 2 + length
    return None
