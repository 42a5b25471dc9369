"""Inline buttons: what a button's ``callback_data`` holds and what it stands for.

``callback_data`` is at most 64 bytes and comes back from the client unchecked, so it carries no
command at all: only ``c1:TOKEN:INDEX``, where ``TOKEN`` (96 random bits) names one reply's row of
buttons in the state store. The stored record holds who may press them (the player whose command
produced the reply), the room, and the command of each button; it lives ``button_ttl`` seconds.
A press is honoured once per reply: the first valid press consumes the record, so the other
buttons of that reply (and a second click) no longer run anything.
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from coterie.storage.state import StateStore
from coterie_telegram.records import ExpiringRecord

NAMESPACE = "telegram.buttons"
#: replies whose buttons are remembered at once (older ones expire early)
MAX_REPLIES = 1000
MAX_CALLBACK_DATA = 64
_DATA = re.compile(r"c1:([A-Za-z0-9_-]{16}):([0-9]{1,2})")


def callback_data(token: str, index: int) -> str:
    data = f"c1:{token}:{index}"
    assert len(data.encode()) <= MAX_CALLBACK_DATA
    return data


def read_callback_data(data: str | None) -> tuple[str, int] | None:
    """``(token, index)`` from a button's data, or ``None`` if it is not one of ours."""
    match = _DATA.fullmatch(data or "")
    return (match.group(1), int(match.group(2))) if match else None


@dataclass(frozen=True)
class ButtonRow:
    """The buttons of one reply."""

    #: the user id of the only player who may press them, and how to name them
    owner: str
    owner_name: str
    #: the room key the reply was sent to
    room: str
    commands: tuple[str, ...]

    def command(self, index: int) -> str | None:
        return self.commands[index] if 0 <= index < len(self.commands) else None


class ButtonBoard:
    """Issues and redeems button tokens, kept in the app's state store."""

    def __init__(
        self,
        store: StateStore,
        bot_id: str,
        *,
        ttl: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._record = ExpiringRecord(
            store, NAMESPACE, bot_id, ttl=ttl, max_entries=MAX_REPLIES, clock=clock
        )

    async def issue(
        self, *, owner: str, owner_name: str, room: str, commands: Sequence[str]
    ) -> str:
        """A new token for one reply's buttons."""
        value = {"u": owner, "n": owner_name, "r": room, "c": list(commands)}
        while True:
            token = secrets.token_urlsafe(12)
            if await self._record.add(token, value):
                return token

    async def peek(self, token: str) -> ButtonRow | None:
        return _row(await self._record.get(token))

    async def redeem(self, token: str) -> ButtonRow | None:
        """The buttons of ``token``, consumed: ``None`` when expired, unknown or already used."""
        return _row(await self._record.pop(token))


def _row(value: object) -> ButtonRow | None:
    if not isinstance(value, dict):
        return None
    owner, name, room, commands = (value.get(k) for k in ("u", "n", "r", "c"))
    if not (
        isinstance(owner, str)
        and isinstance(name, str)
        and isinstance(room, str)
        and isinstance(commands, list)
        and all(isinstance(c, str) for c in commands)
    ):
        return None
    return ButtonRow(owner, name, room, tuple(commands))
