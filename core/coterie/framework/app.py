"""The application object: plugins, variants, commands, state, and the one message path that every
adapter (console, Slack, Telegram, Matrix) goes through: :meth:`Coterie.handle`."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from coterie.dice.sources import DiceSource, SystemDice
from coterie.errors import UsageError
from coterie.framework.adapter import Adapter
from coterie.framework.catalogue import Catalogue, Registry
from coterie.framework.chatlog import chat_log, chat_record
from coterie.framework.checks import check_against_plugins
from coterie.framework.commands import Command, CommandContext, new_roll_id, shown_id
from coterie.framework.events import EVENTS, Sweeper, answered_before, event_key, record_answer
from coterie.framework.grammar import CommandLine, localise
from coterie.framework.guard import CommandGuard, CommandRefused
from coterie.framework.limits import limit_reply
from coterie.framework.message import Message
from coterie.framework.metrics import Metrics
from coterie.framework.parsing import split_line
from coterie.framework.plugins import PluginHost
from coterie.framework.ratelimit import RateCheck, SharedRateLimiter, limiter_for, slow_down
from coterie.framework.replies import as_elements, check_elements, error_reply, localise_buttons
from coterie.framework.roomsettings import merge_room_settings
from coterie.framework.sessions import current_play
from coterie.framework.settings import check_plugin_settings
from coterie.framework.supervise import Supervisor
from coterie.framework.unknown import unknown_command
from coterie.framework.variant import RoomSettings, Variant
from coterie.render.elements import Reply, roll_footer
from coterie.storage.ambient import AmbientStore
from coterie.storage.readahead import expect_reads, forget
from coterie.storage.state import MemoryStore, StateStore, Transaction

if TYPE_CHECKING:
    from coterie.framework.config import Config

log = logging.getLogger("coterie")

#: state namespace of room settings changed from chat (``!set``, ``!variant NAME``)
ROOM_SETTINGS = "coterie.rooms"
#: rooms whose merged settings :meth:`Coterie.room_settings` keeps (oldest dropped first)
SETTINGS_MEMO_SIZE = 1024


class Coterie:
    """One bot: its config, plugins, rule sets, commands and state."""

    def __init__(
        self,
        config: Config,
        *,
        host: PluginHost | None = None,
        dice: DiceSource | None = None,
        store: StateStore | None = None,
    ) -> None:
        self.config = config
        if host is None:
            host = PluginHost()
            host.load(config.plugins.enable, defer=True)
        self.host = host
        self.dice: DiceSource = dice or SystemDice()
        self._state = AmbientStore(store or MemoryStore())
        self._by_word: tuple[int, dict[str, list[Command]]] = (0, {})
        #: per-user and per-room token buckets (``[limits.rate]``), shared through a PostgreSQL
        #: store by every worker on it; tests may swap its clock
        self.rate_limiter = limiter_for(config.limits.rate, self._state.store)
        #: Prometheus counters and the latency histogram (``/metrics``, :mod:`coterie.ops`)
        self.metrics = Metrics()
        #: the time limit of every command and the isolation of third-party handlers
        self.guard = CommandGuard(self.host, config.limits)
        #: chat-made room settings changes so far (``handle`` re-reads settings after one)
        self._room_writes = 0
        #: room key → (stored chat changes, config, the settings merged from them), bounded
        self._settings_memo: dict[str, tuple[dict[str, Any], Config, RoomSettings]] = {}
        #: forgets old answered events now and then (:mod:`coterie.framework.events`)
        self.sweeper = Sweeper(lambda: self._state.store)
        #: the plugins' rule sets, commands, adapters and character templates; a deferred
        #: plugin's are collected when first needed (:mod:`coterie.framework.catalogue`)
        self.catalogue = Catalogue(self.host, self._bad)
        self.variants: Registry[Variant[Any, Any]] = self.catalogue.variants
        self.adapter_classes: Registry[type[Adapter]] = self.catalogue.adapter_classes
        self.character_templates = self.catalogue.character_templates
        self._check_config()
        #: each plugin's ``[plugins.settings.NAME]`` with its declared defaults (coterie_settings)
        self.plugin_settings: dict[str, dict[str, Any]] = check_plugin_settings(
            self.catalogue.listed("coterie_settings"), config.plugins.settings, self._bad
        )

    @property
    def state(self) -> AmbientStore:
        """The state store (see :class:`coterie.storage.ambient.AmbientStore`): inside a
        command, reads and writes join the command's transaction."""
        return self._state

    @state.setter
    def state(self, store: StateStore) -> None:
        self._state = store if isinstance(store, AmbientStore) else AmbientStore(store)
        self.rate_limiter = limiter_for(
            self.config.limits.rate, self._state.store, self.rate_limiter
        )

    # --- plugins -----------------------------------------------------------------------------

    @property
    def commands(self) -> list[Command]:
        """Every command of every enabled plugin (deferred plugins are imported for it)."""
        return self.catalogue.all_commands()

    def _bad(self, plugin: str, hook: str, problem: str) -> None:
        self.host._fail(plugin, hook, TypeError(problem))

    def _check_config(self) -> None:
        """Check the config against the loaded plugins; every problem is reported at once."""
        check_against_plugins(self.config, self.variants, self.adapter_classes)

    # --- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        await self.host.call_async("coterie_startup", app=self)

    async def stop(self) -> None:
        await self.host.call_async("coterie_shutdown", app=self)
        self.guard.close()
        await self.state.close()

    async def run_adapters(
        self,
        names: Sequence[str] | None = None,
        *,
        stopping: asyncio.Event | None = None,
        grace: float | None = None,
    ) -> None:
        """Run adapters side by side until every one has finished. A crashed adapter is
        restarted with exponential back-off; it never takes the others down. Once ``stopping``
        is set, every adapter stops taking events and finishes what is in flight, within
        ``grace`` seconds (default ``[limits] shutdown_grace``): :mod:`coterie.framework.
        supervise`."""
        chosen = list(names) if names is not None else self.config.enabled_adapters()
        supervisor = Supervisor(self, chosen, stopping)
        await supervisor.run(self.config.limits.shutdown_grace if grace is None else grace)

    #: seconds before the first restart of a crashed adapter (doubling up to a minute)
    restart_delay = 1.0

    # --- rooms -------------------------------------------------------------------------------

    async def room_settings(
        self, room_key: str, *, store: StateStore | Transaction | None = None
    ) -> RoomSettings:
        """Settings in force: config ``[defaults]``, then ``[rooms."KEY"]``, then chat changes
        (:func:`~coterie.framework.roomsettings.merge_room_settings`).

        The merge is memoised per room on the stored changes it was made from (compared on every
        call), so a change from any process sharing the store shows at once: only the store read
        is done per call, and with :class:`~coterie.state.MemoryStore` that costs a copy."""
        source = store if store is not None else self.state
        return self._settings_of(room_key, await source.get(ROOM_SETTINGS, room_key) or {})

    async def known_room_settings(self, room_key: str) -> RoomSettings:
        """The room's settings as this process last read them (its own changes included), not
        asked again whether another process changed them since (a SQLite store's peek; other
        stores read them): for what may lag a message behind, like a chat's command menu."""
        stored, _ = await self.state.peek(ROOM_SETTINGS, room_key)
        return self._settings_of(room_key, stored or {})

    def _settings_of(self, room_key: str, stored: dict[str, Any]) -> RoomSettings:
        memo = self._settings_memo.get(room_key)
        if memo is not None and memo[1] is self.config and memo[0] == stored:
            return memo[2]
        settings = merge_room_settings(self.config, self.variants, room_key, dict(stored))
        if len(self._settings_memo) >= SETTINGS_MEMO_SIZE:
            self._settings_memo.pop(next(iter(self._settings_memo)))
        self._settings_memo[room_key] = (stored, self.config, settings)
        return settings

    async def update_room(
        self, room_key: str, *, store: StateStore | Transaction | None = None, **changes: Any
    ) -> None:
        """Persist a chat-made change to a room's settings (through ``store``: a command's
        transaction, by default the app's store). A value of ``None`` removes the change."""
        target = store if store is not None else self.state
        self._room_writes += 1
        stored = await target.get(ROOM_SETTINGS, room_key) or {}
        stored.update(changes)
        stored = {k: v for k, v in stored.items() if v is not None}
        await target.set(ROOM_SETTINGS, room_key, stored)

    # --- the message path --------------------------------------------------------------------

    def find_command(self, word: str, variant: str, args: str | None = None) -> Command | None:
        """The command called ``word`` in a room on ``variant`` (variant-specific ones first),
        for ``args`` when given (see :attr:`Command.applies`)."""
        commands = self.catalogue.commands
        if self.variants._pending:
            self.variants.settle(variant)  # a deferred rule set's commands join when it loads
        if self._by_word[0] != len(commands):  # (re)index by name, rule-set ones first
            ranked = sorted(commands, key=lambda c: not c.variants)
            names = {name for c in ranked for name in c.names}
            self._by_word = (len(ranked), {n: [c for c in ranked if n in c.names] for n in names})
        for command in self._by_word[1].get(word, ()):
            # (:meth:`Command.available_in` and :meth:`Command.takes` written out)
            if (not command.variants or variant in command.variants) and (
                args is None or command.applies is None or command.applies(args)
            ):
                return command
        return None

    def room_commands(self, variant: str) -> list[Command]:
        """The commands of a room on ``variant`` that its rule set supports, by name."""
        seen: dict[str, Command] = {}
        rules = self.variants.get(variant)
        for command in sorted(self.catalogue.commands, key=lambda c: not c.variants):
            if command.available_in(variant) and (rules is None or command.supported_by(rules)):
                seen.setdefault(command.name, command)
        return sorted(seen.values(), key=lambda c: c.name)

    async def handle(self, message: Message) -> Reply | None:
        """Answer one message: a :class:`Reply`, or ``None`` when the message is not for the bot.
        Every reply, errors included, passes ``coterie_before_reply`` on its way out.

        Commands for the bot (not ordinary talk) are rate limited per user and per room
        (``[limits.rate]``): over the limit, one "slow down" reply, then silence. Every reply is
        cut to ``limits.max_reply_length``. Each answered command logs one INFO line on
        ``coterie.chat`` with the platform, room and user ids, the command and the duration —
        never the message text."""
        started = time.perf_counter()
        # the room's settings are read once per message (and again only when the command changed
        # them, for the buttons below): with a database store each read is a query. A SQLite
        # store answers the value it read last, unconfirmed: a command that runs in a transaction
        # confirms it there (see _run_in_transaction); anything else reads it afresh now
        stored, confirmed = await self._state.peek(ROOM_SETTINGS, message.room_key)
        settings = self._settings_of(message.room_key, stored or {})
        route = self._route(message, settings)
        if not confirmed and not _in_transaction(route, self.config.limits.max_comment_length):
            settings = await self.room_settings(message.room_key)
            route, confirmed = self._route(message, settings), True
        command = _command_name(route)
        reply: Reply | None = None
        limited = False
        writes = self._room_writes
        rate: RateCheck | None = None
        limiter = self.rate_limiter
        if command is not None:
            if (
                route is not None
                and route.command is not None
                and route.command.transaction
                and isinstance(limiter, SharedRateLimiter)
                and limiter.joins(message.platform)
            ):  # limited in its room's transaction (a shared store: no round trips of its own)
                rate = RateCheck(limiter, message.platform, message.room_key, message.user, command)
            else:
                verdict = await self.rate_limiter.verdict(
                    message.platform, message.room_key, message.user, command
                )
                limited = not verdict.allowed
                if limited and verdict.warn:
                    reply = slow_down(verdict)
        if not limited and route is not None:
            try:
                reply = await self._answer(message, route, rate, confirm=not confirmed)
            except _StaleSettings:  # another process changed them: routed again, confirmed
                settings = await self.room_settings(message.room_key)
                route = self._route(message, settings)
                command = _command_name(route)
                reply = None if route is None else await self._answer(message, route, rate)
            limited = rate is not None and rate.verdict is not None and not rate.verdict.allowed
        if reply is not None:
            if self._room_writes != writes:  # the command changed room settings (`!set prefix`)
                settings = await self.room_settings(message.room_key)
            if settings.prefix != "!":  # buttons are written with "!": only another prefix
                reply.body = [localise_buttons(node, settings.prefix) for node in reply.body]
            await self.host.call_async(
                "coterie_before_reply", app=self, message=message, reply=reply
            )
            limit_reply(reply, self.config.limits.max_reply_length)
            for part in reply.private:
                private = Reply(part.body)
                limit_reply(private, self.config.limits.max_reply_length)
                part.body = private.body
        if command is not None:
            self.sweeper.tick()
            self.metrics.observe(
                platform=message.platform,
                command=command,
                seconds=time.perf_counter() - started,
                error=reply is not None and reply.is_error,
            )
            level = logging.INFO if reply is not None else logging.DEBUG
            if chat_log.isEnabledFor(level):  # (its record's fields are not made for nothing)
                chat_record(
                    level,
                    command,
                    {
                        "platform": message.platform,
                        "room": message.room,
                        "user": message.user,
                        "command": command,
                        "duration_ms": round((time.perf_counter() - started) * 1000, 2),
                        "error": reply is not None and reply.is_error,
                        "rate_limited": limited,
                    },
                )
        return reply

    def _route(self, message: Message, settings: RoomSettings) -> _Route | None:
        """Where a message goes in a room with ``settings``: ``None`` for ordinary talk, else its
        command line and the command it calls (``None`` for an unknown one)."""
        text = message.text
        variant = self.variants[settings.variant]
        prefixes = (settings.prefix, *variant.extra_prefixes)
        if message.addressed and not text.lstrip().startswith(prefixes):
            text = settings.prefix + text.lstrip()
        if not text.lstrip().startswith(prefixes):
            return None
        too_long = len(text) > self.config.limits.max_message_length
        # an over-long message is not parsed: its first words only serve to name the command
        line = split_line(text[:200] if too_long else text, prefixes)
        if line is None:
            return None
        command = self.find_command(line.command, variant.name, line.args)
        if command is None and line.prefix != settings.prefix:
            return None  # "?what now" in a room where "?" also works: ordinary talk, not for us
        return _Route(settings, variant, text, too_long, line, command)

    async def _answer(
        self,
        message: Message,
        route: _Route,
        rate: RateCheck | None = None,
        *,
        confirm: bool = False,
    ) -> Reply | None:
        """The reply to a routed message; ``rate``: its rate limit when not decided yet (a
        command limited in its transaction; limited here first if it ends before one);
        ``confirm``: the room's settings were read unconfirmed (see :meth:`_run`)."""
        settings, variant, text, too_long, line, command = route
        limits = self.config.limits
        if too_long and rate is not None and not await rate.allowed():
            return rate.refusal()
        if too_long:
            return error_reply(
                f"that message is {len(text)} characters long; "
                f"commands may be at most {limits.max_message_length}",
                usage=localise(command.usage_in(variant), settings.prefix) if command else None,
            )
        fallback = {"app": self, "message": message, "line": line, "variant": variant.name}
        if command is None:  # a plugin may answer a word no one declares (a macro: `!hunt`)
            command = await self.host.first_result("coterie_command_fallback", **fallback)
        if command is None:
            return unknown_command(self, line, settings)
        if line.comment is not None and len(line.comment) > limits.max_comment_length:
            if rate is not None and not await rate.allowed():
                return rate.refusal()
            return error_reply(
                f"that comment is {len(line.comment)} characters long; "
                f"comments may be at most {limits.max_comment_length}",
                usage=localise(command.usage_in(variant), settings.prefix),
            )
        context = CommandContext(self, message, line, settings, variant, self.dice)
        return await self._run(command, context, rate, confirm=confirm)

    async def _run(
        self,
        command: Command,
        context: CommandContext,
        rate: RateCheck | None = None,
        *,
        confirm: bool = False,
    ) -> Reply | None:
        """Run a command; a command that may change state runs in one transaction of its room:
        all of its changes land, or (on an error reply) none. ``rate``: its rate limit, decided
        in that transaction when not decided yet (``None`` when refused without a notice).
        ``confirm``: the room's settings were read unconfirmed; the transaction reads them
        again first and raises :class:`_StaleSettings` if they changed."""
        try:
            if command.transaction:
                return await self._run_in_transaction(command, context, rate, confirm)
            if rate is not None and not await rate.allowed():
                return rate.refusal()
            reply = await self.guard.run(command, context, self._call)
        except CommandRefused as refused:  # too long, or fenced: rolled back, room free again
            return refused.reply
        except _StaleSettings:
            raise
        except UsageError as error:
            prefix = context.settings.prefix
            usage = localise(error.usage or command.usage_in(context.variant), prefix)
            hint = error.hint.replace("`!", f"`{prefix}") if error.hint else None
            return error_reply(error.message, usage=usage, hint=hint)
        except Exception:
            incident = new_roll_id()
            log.exception(
                "command %s (plugin %s) failed; incident %s",
                command.name,
                command.plugin or "?",
                incident,
            )
            return error_reply(
                f"something went wrong while running `{context.settings.prefix}{command.name}` "
                f"(incident {incident}). The bot keeps working."
            )
        return self._footed(reply, context)

    async def _run_in_transaction(
        self, command: Command, context: CommandContext, rate: RateCheck | None, confirm: bool
    ) -> Reply | None:
        room = context.message.room_key
        event = event_key(context.message)
        # read with the room's lock, in the transaction's first round trip: the delivery's
        # record (new with every message) and, on a shared store, the rate limit's take
        said = expect_reads([(EVENTS, event)]) if event is not None else None
        take_back = rate.expect() if rate is not None else None
        try:
            async with self._state.transaction(lock=context.settings.chronicle or room) as tx:
                context.tx = tx
                if confirm and await self.room_settings(room, store=tx) != context.settings:
                    raise _StaleSettings  # (rolled back: nothing was done)
                if rate is not None and not (await rate.decide(tx)).allowed:
                    return rate.refusal()
                if event is not None:
                    answered = await answered_before(tx, event)
                    if answered is not None:  # a redelivery: its reply, never a re-run
                        return answered
                context.session, context.scene = await current_play(tx, room)
                reply = await self.guard.run(command, context, self._call)
                reply = self._footed(reply, context)
                if event is not None:
                    await record_answer(tx, event, reply)
        finally:
            if said is not None:
                forget(said)
            if take_back is not None:
                take_back()
        return reply

    @staticmethod
    def _footed(reply: Reply, context: CommandContext) -> Reply:
        """The reply with the plugins' ``ctx.notes``, then a roll's id at the foot (``!log ID``),
        shown short: ``!log`` tells apart rolls that share a shown id."""
        if context.notes and not reply.is_error:
            reply.add_notes(context.notes)
        if context.roll_id is not None:
            shown = shown_id(context.roll_id)
            if reply.meta.get("roll_id") in (None, context.roll_id):
                reply.meta["roll_id"] = shown
            reply.body += roll_footer(shown)
        return reply

    async def _call(self, command: Command, context: CommandContext) -> Reply:
        result = await self.guard.invoke(command, context)
        reply = result if isinstance(result, Reply) else Reply(list(result))
        reply.body = as_elements(reply.body)
        for part in reply.private:
            check_elements(part.body)
        return reply


class _StaleSettings(Exception):
    """The room's settings a message was routed with (peeked, on SQLite) changed before its
    transaction: another process, or a command of this one that committed meanwhile, changed
    them. The message is routed again with the settings in force."""


def _in_transaction(route: _Route | None, max_comment: int) -> bool:
    """Whether a routed message is acted on in its room's transaction only (where settings
    read unconfirmed are confirmed first), not refused before it (too long)."""
    return (
        route is not None
        and not route.too_long
        and route.command is not None
        and route.command.transaction
        and (route.line.comment is None or len(route.line.comment) <= max_comment)
    )


class _Route(NamedTuple):
    """A message for the bot, as :meth:`Coterie._route` read it."""

    settings: RoomSettings
    variant: Variant[Any, Any]
    text: str
    too_long: bool
    line: CommandLine
    command: Command | None


def _command_name(route: _Route | None) -> str | None:
    """The command a message calls, ``(unknown)`` for an unknown one with the room's prefix,
    ``None`` for ordinary talk (the name rate limits, metrics and the chat log use)."""
    if route is None:
        return None
    return route.command.name if route.command is not None else "(unknown)"
