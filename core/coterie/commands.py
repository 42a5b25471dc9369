"""Chat commands: the :class:`Command` record plugins return, and the context a handler gets."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from coterie.dice import DiceSource
from coterie.elements import Node, Reply
from coterie.grammar import CommandLine
from coterie.message import Message
from coterie.rules import RoomSettings, Variant
from coterie.state import RoomState

if TYPE_CHECKING:
    from coterie.app import Coterie


@dataclass
class CommandContext:
    """Everything a command handler may use."""

    app: Coterie
    message: Message
    line: CommandLine
    settings: RoomSettings
    variant: Variant[Any, Any]
    dice: DiceSource

    @property
    def args(self) -> str:
        return self.line.args

    def state(self, owner: str) -> RoomState:
        """This room's key-value state, namespaced by ``owner`` (use your plugin's name)."""
        return RoomState(self.app.state, owner, self.message.room_key)


Result = Reply | list[Node]
Handler = Callable[[CommandContext], Awaitable[Result] | Result]


@dataclass(frozen=True)
class Command:
    """A chat command. ``variants`` limits it to rooms on those rule sets (empty: every room)."""

    name: str
    summary: str
    usage: str
    handler: Handler
    aliases: tuple[str, ...] = ()
    variants: tuple[str, ...] = ()
    #: longer help shown by ``!help NAME``
    details: str = ""
    #: set by the plugin host: which plugin provided it
    plugin: str = field(default="", compare=False)

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)

    def available_in(self, variant: str) -> bool:
        return not self.variants or variant in self.variants
