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
    from coterie.framework.commands import Command, CommandContext
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
