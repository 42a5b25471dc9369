"""The normalised incoming message every adapter produces."""

from __future__ import annotations

from functools import cached_property

from coterie.records import dataclass


@dataclass(frozen=True)
class Message:
    """One chat message, platform-neutral.

    ``room`` and ``user`` are the platform's own ids; ``thread`` and ``reply_to`` are set where the
    platform has them. ``addressed`` is true when the bot was explicitly addressed (a mention, a
    slash command, a private chat), in which case the room prefix is optional.
    """

    platform: str
    room: str
    user: str
    text: str
    user_name: str | None = None
    thread: str | None = None
    reply_to: str | None = None
    message_id: str | None = None
    addressed: bool = False
    #: other names the user is mentioned by on the platform (a Telegram @username, say)
    handles: tuple[str, ...] = ()
    #: the platform says the user administers the room (a Matrix power level of 50 or more, a
    #: Telegram group administrator): they have a Storyteller's rights there
    admin: bool = False

    @cached_property
    def room_key(self) -> str:
        """A key unique across platforms, used for room settings and state (worked out once per
        message: the message path asks for it several times)."""
        return f"{self.platform}:{self.room}"

    @property
    def display_name(self) -> str:
        return self.user_name or self.user
