"""Chat commands: the :class:`Command` record plugins return, and the context a handler gets."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from coterie.dice import DiceSource
from coterie.elements import Node, Reply
from coterie.grammar import CommandLine
from coterie.message import Message
from coterie.rules import Outcome, RollContext, RoomSettings, Variant
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

    async def roll(self, request: Any) -> Outcome:
        """Roll a request of the room's variant the way ``!roll`` does: draw the faces, evaluate,
        settle room rules (e.g. a free botch), and notify ``coterie_after_roll``. Commands that
        roll should always come through here."""
        variant = self.variant
        outcome: Outcome = variant.roll(request, self.dice)
        context = RollContext(
            settings=self.settings,
            user=self.message.user,
            room=self.message.room_key,
            state=RoomState(self.app.state, f"variant.{variant.name}", self.message.room_key),
        )
        outcome = await variant.settle(outcome, context)
        await self.app.host.call_async(
            "coterie_after_roll",
            app=self.app,
            message=self.message,
            variant=variant,
            outcome=outcome,
        )
        return outcome


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

    def clashes_with(self, other: Command) -> bool:
        """Both would answer the same word in the same room. (A command restricted to some rule
        sets may reuse the name of an unrestricted one: it takes over in those rooms.)"""
        if not set(self.names) & set(other.names):
            return False
        if not self.variants or not other.variants:
            return not self.variants and not other.variants
        return bool(set(self.variants) & set(other.variants))
