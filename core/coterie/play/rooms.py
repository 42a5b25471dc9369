"""Who runs a room and how it plays: ``!storyteller`` and ``!set`` / ``!settings``.

A built-in plugin. Roles: a room's Storytellers are the platform user ids its config
lists (``storytellers = [...]`` under ``[defaults]`` or ``[rooms."KEY"]``), whoever ran
``!storyteller claim`` first (and those they added), and room administrators where the adapter can
tell (``Message.admin``). A room with none of these is *open*: anyone may change its settings until
someone claims it. Players can't change the settings of a claimed room."""

from __future__ import annotations

import re
from typing import Any

from coterie.errors import UsageError
from coterie.framework.app import ROOM_SETTINGS
from coterie.framework.commands import Command, CommandContext
from coterie.framework.grammar import shorten, suggest, tokens
from coterie.framework.message import Message
from coterie.framework.sessions import SESSIONS
from coterie.framework.variant import HouseRule
from coterie.hookimpl import hookimpl
from coterie.render.elements import BR, Mention, Node, Text, bold, code, italic

#: state namespace of a room's chat-made roles: ``{"storytellers": {user id: name}}``
ROLES = "coterie.roles"


STORYTELLER_USAGE = "!storyteller [claim | release | add @USER | remove @USER]"


SET_USAGE = (
    "!set KEY VALUE (KEY: variant, prefix, difficulty or a house rule; VALUE `default` resets)"
)


_SLACK_MENTION = re.compile(r"<@([A-Z0-9]+)(?:\|[^>]*)?>")


# --- mentions -------------------------------------------------------------------------------------


def mention_key(token: str) -> str:
    """A mention as written (``<@U123>``, ``@alice:example.org``, ``@alice``) reduced to what
    :func:`mentions` compares: a platform user id, or a lower-case name."""
    token = token.strip()
    slack = _SLACK_MENTION.fullmatch(token)
    if slack:
        return slack.group(1)
    if token.startswith("@") and ":" in token:  # a Matrix user id
        return token
    return token.removeprefix("@").casefold()


def names_person(
    key: str, user: str, user_name: str | None = None, handles: tuple[str, ...] = ()
) -> bool:
    """Whether a mention (from :func:`mention_key`) names the person with this platform id,
    display name and handles."""
    names = {user, user.casefold()}
    names |= {handle.removeprefix("@").casefold() for handle in handles}
    if user_name:
        names.add(user_name.casefold())
        names.add(user_name.casefold().replace(" ", ""))
    return key in names


def mentions(key: str, message: Message) -> bool:
    """Whether a mention (from :func:`mention_key`) names the author of ``message``."""
    return names_person(key, message.user, message.user_name, message.handles)


def is_mention(word: str) -> bool:
    return word.startswith("@") or bool(_SLACK_MENTION.fullmatch(word))


def mention_element(word: str, *, notify: bool = False) -> Mention:
    """A mention as written (see :func:`is_mention`) as a reply element naming the same person:
    the platform id with its case (``U024BE7LH``, ``@alice:example.org``) or the name after the
    ``@``. Its label is that name (a Matrix id's local part)."""
    token = word.strip()
    slack = _SLACK_MENTION.fullmatch(token)
    if slack:
        return Mention(slack.group(1), slack.group(1), notify)
    if token.startswith("@") and ":" in token:  # a Matrix user id
        return Mention(token, token[1:].partition(":")[0] or token, notify)
    name = token.removeprefix("@")
    return Mention(name, name, notify)


# --- roles ----------------------------------------------------------------------------------------


def configured_storytellers(ctx: CommandContext) -> list[str]:
    config = ctx.app.config
    room = config.rooms.get(ctx.message.room_key)
    listed = list(config.defaults.storytellers)
    if room is not None:
        listed += room.storytellers
    return listed


async def claimed_storytellers(ctx: CommandContext) -> dict[str, str]:
    roles = await ctx.store.get(ROLES, ctx.message.room_key) or {}
    return dict(roles.get("storytellers", {}))


async def is_storyteller(ctx: CommandContext) -> bool:
    """The author is one of the room's Storytellers."""
    if ctx.message.admin:
        return True
    user = ctx.message.user
    if any(mentions(mention_key(who), ctx.message) for who in configured_storytellers(ctx)):
        return True
    claimed = await claimed_storytellers(ctx)
    return user in claimed or any(mentions(key, ctx.message) for key in claimed)


async def room_is_open(ctx: CommandContext) -> bool:
    """No Storyteller at all: configured, claimed or administering."""
    return not configured_storytellers(ctx) and not await claimed_storytellers(ctx)


async def require_storyteller(ctx: CommandContext, what: str) -> None:
    """Raise a friendly error unless the author may ``what`` (Storytellers; anyone in an open
    room)."""
    if await room_is_open(ctx) or await is_storyteller(ctx):
        return
    names = await storyteller_names(ctx)
    raise UsageError(
        f"only the Storyteller ({names}) can {what} in this room",
        hint=f"`{ctx.settings.prefix}storyteller` shows who runs the room.",
    )


async def storyteller_names(ctx: CommandContext) -> str:
    claimed = await claimed_storytellers(ctx)
    names = [*configured_storytellers(ctx), *claimed.values()]
    return ", ".join(dict.fromkeys(names)) or "nobody yet"


async def storyteller(ctx: CommandContext) -> list[Node]:
    words = tokens(ctx.args)
    action = words[0].lower() if words else ""
    room = ctx.message.room_key
    roles = await ctx.store.get(ROLES, room) or {}
    claimed: dict[str, str] = dict(roles.get("storytellers", {}))
    me, my_name = ctx.message.user, ctx.message.display_name
    prefix = ctx.settings.prefix
    if not action:
        names = await storyteller_names(ctx)
        body: list[Node] = [Text("Storyteller of this room: "), bold(names)]
        if await room_is_open(ctx):
            body += [BR, Text("The room is open: anyone may change its settings until someone ")]
            body += [Text("runs "), code(f"{prefix}storyteller claim"), Text(".")]
        return body
    if action == "claim":
        if len(words) > 1:
            raise UsageError("`claim` takes nothing after it", usage=STORYTELLER_USAGE)
        if await is_storyteller(ctx):
            return [Text("You are already a Storyteller of this room.")]
        if not await room_is_open(ctx):
            raise UsageError(
                f"this room already has a Storyteller ({await storyteller_names(ctx)})",
                hint=f"They can add you with `{prefix}storyteller add @you`.",
            )
        claimed[me] = my_name
    elif action in ("release", "resign"):
        mine = [key for key in claimed if key == me or mentions(key, ctx.message)]
        if not mine:
            raise UsageError("you are not a Storyteller named in chat here: nothing to release")
        for key in mine:
            del claimed[key]
    elif action in ("add", "remove"):
        if len(words) != 2 or not is_mention(words[1]):
            raise UsageError(
                f"whom? e.g. `{prefix}storyteller {action} @alice`", usage=STORYTELLER_USAGE
            )
        if not await is_storyteller(ctx):
            raise UsageError(f"only a Storyteller can {action} Storytellers")
        key = mention_key(words[1])
        if action == "add":
            if len(claimed) >= 20:
                raise UsageError("a room has at most 20 Storytellers")
            claimed[key] = words[1].removeprefix("@")
        elif key not in claimed:
            raise UsageError(f"{shorten(words[1])} is not a Storyteller named in chat here")
        else:
            del claimed[key]
    else:
        close = suggest(action, ["claim", "release", "add", "remove"])
        hint = f"Did you mean `{close}`?" if close else None
        raise UsageError(f"unknown `{shorten(action)}`", usage=STORYTELLER_USAGE, hint=hint)
    roles["storytellers"] = claimed
    await ctx.store.set(ROLES, room, roles)
    names = await storyteller_names(ctx)
    return [Text("Storyteller of this room: "), bold(names)]


# --- settings -------------------------------------------------------------------------------------

_ON = {"on", "yes", "true", "1", "enable", "enabled"}


_OFF = {"off", "no", "false", "0", "disable", "disabled"}


_KEYS = {
    "variant": "variant",
    "prefix": "prefix",
    "difficulty": "difficulty",
    "default_difficulty": "difficulty",
    "diff": "difficulty",
}


def _rule_value(rule: HouseRule, word: str) -> bool | int:
    if isinstance(rule.default, bool):
        if word in _ON:
            return True
        if word in _OFF:
            return False
        raise UsageError(f"`{rule.name}` is on or off, not `{shorten(word)}`")
    if not re.fullmatch(r"[0-9]{1,3}", word):
        raise UsageError(f"`{rule.name}` takes a whole number, not `{shorten(word)}`")
    try:
        return rule.check(int(word))
    except ValueError as error:
        raise UsageError(str(error)) from None


async def set_command(ctx: CommandContext) -> list[Node]:
    words = tokens(ctx.args)
    if len(words) != 2:
        raise UsageError("give a setting and its value, e.g. `!set difficulty 7`", usage=SET_USAGE)
    await require_storyteller(ctx, "change the settings")
    key, value = words[0].lower().replace("-", "_"), words[1]
    variant = ctx.variant
    room = ctx.message.room_key
    reset = value.lower() == "default"
    rules = {rule.name: rule for rule in variant.house_rules}
    store = ctx.store
    if _KEYS.get(key) == "variant":
        wanted = value.lower()
        if not reset and wanted not in ctx.app.variants:
            close = suggest(wanted, list(ctx.app.variants))
            hint = f" Did you mean `{close}`?" if close else ""
            raise UsageError(f"there is no rule set `{shorten(wanted)}`.{hint}", usage=SET_USAGE)
        await ctx.app.update_room(room, store=store, variant=None if reset else wanted)
    elif _KEYS.get(key) == "prefix":
        if not reset and (len(value) > 3 or any(ch.isalnum() for ch in value)):
            raise UsageError("a prefix is one to three symbols, like `!` or `?`", usage=SET_USAGE)
        await ctx.app.update_room(room, store=store, prefix=None if reset else value)
    elif _KEYS.get(key) == "difficulty":
        if reset:
            await ctx.app.update_room(
                room, store=store, default_difficulty=None, difficulty_for=None
            )
        else:
            low, high = variant.difficulty_range
            if not re.fullmatch(r"[0-9]{1,2}", value) or not low <= int(value) <= high:
                raise UsageError(
                    f"{variant.name}'s difficulties go from {low} to {high}, not `{shorten(value)}`"
                )
            await ctx.app.update_room(
                room, store=store, default_difficulty=int(value), difficulty_for=variant.name
            )
    elif key in rules:
        stored = await store.get(ROOM_SETTINGS, room) or {}
        house: dict[str, Any] = dict(stored.get("house_rules", {}))
        if reset:
            house.pop(key, None)
        else:
            house[key] = _rule_value(rules[key], value.lower())
        await ctx.app.update_room(room, store=store, house_rules=house)
    else:
        known = ["variant", "prefix", "difficulty", *rules]
        close = suggest(key, known)
        hint = f"Did you mean `{close}`? " if close else ""
        raise UsageError(
            f"there is no setting `{shorten(key)}` in a {variant.name} room",
            hint=f"{hint}`{ctx.settings.prefix}settings` lists them.",
        )
    settings = await ctx.app.room_settings(room, store=store)
    return [Text("Done. "), *await _settings_body(ctx, settings.variant)]


async def _settings_body(ctx: CommandContext, variant_name: str | None = None) -> list[Node]:
    room = ctx.message.room_key
    settings = await ctx.app.room_settings(room, store=ctx.store)
    variant = ctx.app.variants[variant_name or settings.variant]
    prefix = settings.prefix
    difficulty = variant.room_difficulty(settings)
    body: list[Node] = [
        bold("Room settings"),
        BR,
        code("variant"),
        Text(f" {variant.name} — {variant.title}"),
        BR,
        code("prefix"),
        Text(f" {prefix}"),
        BR,
        code("difficulty"),
        Text(f" {difficulty if difficulty is not None else 'none'} (the default for rolls)"),
    ]
    for rule in variant.house_rules:
        value = settings.rule(variant, rule.name)
        shown = ("on" if value else "off") if isinstance(value, bool) else str(value)
        default = rule.default
        shown_default = ("on" if default else "off") if isinstance(default, bool) else str(default)
        body += [BR, code(rule.name), Text(f" {shown} — {rule.help}")]
        if value != default:
            body += [italic(f" (default {shown_default})")]
    body += [BR, Text("Storyteller: "), Text(await storyteller_names(ctx))]
    session = (await ctx.store.get(SESSIONS, room) or {}).get("current")
    if session:
        body += [Text(" · session "), code(session["id"]), Text(" open")]
    body += [BR, Text(f"Change one with {prefix}set KEY VALUE (Storyteller).")]
    return body


async def settings_command(ctx: CommandContext) -> list[Node]:
    if ctx.args.strip():
        raise UsageError(
            "`!settings` takes nothing; change a setting with `!set KEY VALUE`", usage="!settings"
        )
    return await _settings_body(ctx)


@hookimpl
def coterie_commands() -> list[Command]:
    return [
        Command(
            name="storyteller",
            aliases=("st",),
            summary="who runs the room; claim it, hand it over",
            usage=STORYTELLER_USAGE,
            examples=("!storyteller claim", "!storyteller claim\n!storyteller add @bob"),
            handler=storyteller,
            details=(
                "The first to claim a room becomes its Storyteller; Storytellers can add others. "
                "The config may name Storytellers too, and room admins count as Storytellers "
                "where the platform tells the bot."
            ),
        ),
        Command(
            name="set",
            summary="change a room setting or house rule (Storyteller)",
            usage=SET_USAGE,
            examples=("!set difficulty {difficulty}", "!set prefix ?"),
            handler=set_command,
            details="`!settings` lists the settings and house rules of the room's rule set.",
        ),
        Command(
            name="settings",
            summary="the room's rule set, prefix, difficulty and house rules",
            usage="!settings",
            examples=("!settings", "!set prefix ?\n?settings"),
            handler=settings_command,
        ),
    ]
