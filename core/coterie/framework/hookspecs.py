# mypy: disable-error-code="empty-body"
"""The hooks coterie calls. Every hook is documented in ``docs/plugin_hooks.md``.

Call hooks with keyword arguments only. pluggy is synchronous: hooks that do async work return an
awaitable, which core awaits. Each plugin's implementation is called in isolation: one that raises
is logged with the plugin's name and skipped for that call.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from coterie.framework.adapter import Adapter
    from coterie.framework.app import Coterie
    from coterie.framework.characters import CharacterTemplate, CharacterView
    from coterie.framework.commands import Command, CommandContext, PoolResolver
    from coterie.framework.grammar import CommandLine
    from coterie.framework.message import Message
    from coterie.framework.settings import Setting
    from coterie.framework.variant import Outcome, Variant
    from coterie.render.elements import Reply

hookspec = pluggy.HookspecMarker("coterie")


@hookspec
def coterie_variants() -> list[Variant[Any, Any]]:
    """Return rule sets (``Variant`` instances) this plugin provides."""


@hookspec
def coterie_commands() -> list[Command]:
    """Return extra chat commands this plugin provides."""


@hookspec
def coterie_adapters() -> list[type[Adapter]]:
    """Return platform adapter classes this plugin provides."""


@hookspec
def coterie_settings() -> list[Setting]:
    """Return the schema of this plugin's ``[plugins.settings.NAME]`` table."""


@hookspec
def coterie_startup(app: Coterie) -> Awaitable[None] | None:
    """Called once when the app starts, before any message; may return an awaitable."""


@hookspec
def coterie_shutdown(app: Coterie) -> Awaitable[None] | None:
    """Called once when the app stops; may return an awaitable."""


@hookspec
def coterie_after_roll(
    app: Coterie, message: Message, variant: Variant[Any, Any], outcome: Outcome
) -> Awaitable[None] | None:
    """Notified after every roll is settled and before the reply is sent (logging, statistics)."""


@hookspec
def coterie_before_reply(app: Coterie, message: Message, reply: Reply) -> Awaitable[None] | None:
    """Called with every reply before an adapter sends it; may change ``reply`` in place."""


@hookspec
def coterie_roll_command(
    ctx: CommandContext, usage: str | None
) -> Awaitable[Reply | None] | Reply | None:
    """Offered every roll command before it is read; return a reply to answer it yourself."""


@hookspec
def coterie_character_templates() -> list[CharacterTemplate]:
    """Return character templates (one per rule set it names) this plugin provides."""


@hookspec
def coterie_pool_resolver(ctx: CommandContext) -> Awaitable[PoolResolver | None] | None:
    """Offered every roll command before it is read: return a resolver that reads Trait names
    in the pool (from the caller's character sheet), or ``None``."""


@hookspec
def coterie_active_character(ctx: CommandContext) -> Awaitable[CharacterView | None] | None:
    """The caller's active character in the room's chronicle, for a rule set's own command to
    read (crossover's ``!move`` takes Dexterity from it), or ``None``."""


@hookspec
def coterie_command_fallback(
    app: Coterie, message: Message, line: CommandLine, variant: str
) -> Awaitable[Command | None] | Command | None:
    """Offered a command word no plugin declares (``!hunt``): return a command to run it."""


@hookspec
def coterie_roll_settled(ctx: CommandContext, outcome: Outcome) -> Awaitable[None] | None:
    """Called inside the command's transaction for every settled roll, before it is logged
    (a tracker a roll moves, e.g. a failed rouse check raising Hunger). Unlike
    ``coterie_after_roll`` it is not isolated: a ``UsageError`` undoes the whole command. Notes
    for the reply go in ``ctx.notes``."""
