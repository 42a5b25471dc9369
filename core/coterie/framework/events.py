"""Exactly once: a command that changes state records, in its own transaction, the platform event
it answered and the reply it gave. When the platform delivers the same event again (a retry, a
redelivery after the bot was killed between committing and sending), the command is not run again:
the stored reply is sent instead. Effect, record and reply land together or not at all, so a crash
can neither double an effect nor lose the reply of one that landed.

An event is named by the message's platform, room and ``message_id`` (the platform's id of the
message, button press or event); messages without one (the console, the CLI) are not recorded.
Records expire after :data:`EVENT_TTL` seconds (a platform redelivers within minutes or hours): the
store's ``expire`` removes them, every :data:`SWEEP_EVERY` seconds, when the store has one."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

from coterie.framework.message import Message
from coterie.render.elements import Reply
from coterie.render.serialize import reply_from_json, reply_to_text
from coterie.storage.state import StateStore, Transaction

#: state namespace of answered events: ``{"reply_text": JSON text of the reply, "at": seconds}``
#: by event key (the reply as :func:`~coterie.render.serialize.reply_to_json` writes it, kept as
#: text: a store copies or encodes a string at once, and a reply as objects in Python)
EVENTS = "coterie.events"
#: how long an answered event is remembered
EVENT_TTL = 7 * 24 * 3600.0
#: how often old records are swept
SWEEP_EVERY = 600.0


def event_key(message: Message) -> str | None:
    """The key of the platform event a message came from, if the platform names it."""
    if not message.message_id:
        return None
    return f"{message.platform}:{message.room}:{message.message_id}"


async def answered_before(tx: StateStore | Transaction, event: str) -> Reply | None:
    """The reply given to ``event`` before (marked ``redelivered``), if it was answered."""
    stored: Any = await tx.get(EVENTS, event)
    if not isinstance(stored, dict):
        return None
    try:
        text = stored.get("reply_text")
        # (a record written by an earlier coterie keeps the reply as an object, under "reply")
        reply = reply_from_json(stored.get("reply") if text is None else _loads(text))
    except ValueError:  # a record we can't read back: run nothing, answer nothing new
        return Reply([], meta={"redelivered": "true"})
    reply.meta["redelivered"] = "true"
    return reply


async def record_answer(tx: StateStore | Transaction, event: str, reply: Reply) -> None:
    """Record, in the command's transaction, that ``event`` was answered with ``reply``."""
    await tx.set(EVENTS, event, {"reply_text": reply_to_text(reply), "at": time.time()})


def _loads(text: Any) -> Any:
    """A stored reply's JSON text, read (``ValueError`` for anything that is not JSON text)."""
    if not isinstance(text, str):
        raise ValueError("a stored reply is JSON text")
    return json.loads(text)  # (json.JSONDecodeError is a ValueError)


async def sweep(store: Any, now: float | None = None) -> int:
    """Forget events answered more than :data:`EVENT_TTL` seconds ago; how many went (a store
    without ``expire`` keeps them)."""
    expire = getattr(store, "expire", None)
    if expire is None:
        return 0
    cutoff = (time.time() if now is None else now) - EVENT_TTL
    return int(await expire(EVENTS, cutoff))


class Sweeper:
    """Runs :func:`sweep` in the background at most every :data:`SWEEP_EVERY` seconds, when
    :meth:`tick` is called (by every command the app answers)."""

    def __init__(self, store: Callable[[], Any]) -> None:
        self.store = store
        self._next = time.monotonic() + SWEEP_EVERY
        self.task: asyncio.Task[int] | None = None

    def tick(self) -> None:
        if time.monotonic() < self._next or (self.task is not None and not self.task.done()):
            return
        self._next = time.monotonic() + SWEEP_EVERY
        self.task = asyncio.get_running_loop().create_task(sweep(self.store()))
