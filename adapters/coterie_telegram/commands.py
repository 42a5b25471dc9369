"""Telegram's command words both ways: what a message asks the bot, and the command menu.

Telegram marks ``/roll`` and ``/roll@BotName`` at the start of a message with a ``bot_command``
entity and ``@BotName`` with a ``mention`` entity. :func:`read_text` turns a message into the text
core reads and whether the bot was addressed (a command for this bot, a leading mention, a
private chat); a command for another bot (``/roll@OtherBot``) is not for us.

Telegram command names are 1-32 of ``a-z``, ``0-9`` and ``_``. A coterie command word that is
not (``house-rules``) is offered as the nearest valid name (``/house_rules``), and
:class:`CommandWords` maps it back. ``/start`` (what Telegram sends when someone opens the bot)
shows the help unless a plugin defines a ``start`` command.

Someone without a username is mentioned by picking them from the member list: the text has only
their name, marked by a ``text_mention`` entity that carries the user. :func:`with_user_ids` puts
``@`` and their user id in its place, which core reads as a mention of that person.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from coterie.framework.commands import Command

log = logging.getLogger("coterie.telegram")

#: a valid Telegram command name
COMMAND_NAME = re.compile(r"[a-z0-9_]{1,32}")
#: what Telegram allows in the command menu
MAX_MENU_COMMANDS = 100
MAX_DESCRIPTION = 256
#: separators after a leading mention: ``@coterie, roll 5``
_AFTER_MENTION = " ,:;\u00a0\t\n"


def telegram_name(word: str) -> str | None:
    """The Telegram command name for a coterie command word, or ``None`` if there is none."""
    name = re.sub(r"[^a-z0-9_]", "_", word.lower())[:32]
    return name if COMMAND_NAME.fullmatch(name) and name.strip("_") else None


@dataclass(frozen=True)
class CommandWords:
    """Telegram command name → the coterie word it runs (only where the two differ)."""

    renamed: Mapping[str, str]

    @classmethod
    def of(cls, commands: Iterable[Command]) -> CommandWords:
        words = {name for command in commands for name in command.names}
        renamed: dict[str, str] = {}
        for word in sorted(words):
            name = telegram_name(word)
            if name is not None and name != word and name not in words:
                renamed.setdefault(name, word)
        if "start" not in words:
            renamed["start"] = "help"
        return cls(renamed)

    def word(self, name: str) -> str:
        """The coterie word for ``/name``."""
        return self.renamed.get(name, name)


def read_text(
    text: str,
    first_entity: tuple[str, str] | None,
    *,
    bot_username: str,
    private: bool,
    words: CommandWords,
) -> tuple[str, bool] | None:
    """``(text for core, addressed)`` for a message, or ``None`` when it is not for this bot.

    ``first_entity`` is ``(type, text)`` of the entity starting the message, if any."""
    kind, entity = first_entity or ("", "")
    if kind == "bot_command" and text.startswith(entity) and entity.startswith("/"):
        name, _, target = entity[1:].partition("@")
        if target and target.lower() != bot_username.lower():
            return None  # /roll@OtherBot
        return f"{words.word(name)}{text[len(entity) :]}".strip(), True
    if kind == "mention" and text.startswith(entity) and _is_bot(entity, bot_username):
        rest = text[len(entity) :].lstrip(_AFTER_MENTION)
        return (rest or "help"), True
    return text, private


def _is_bot(mention: str, bot_username: str) -> bool:
    return bool(bot_username) and mention.lower() == "@" + bot_username.lower()


def menu(commands: Iterable[Command]) -> list[tuple[str, str]]:
    """``(name, description)`` for ``setMyCommands``: each command once, valid names only, at
    most Telegram's 100, in the given order."""
    entries: list[tuple[str, str]] = []
    seen: set[str] = set()
    for command in commands:
        name = telegram_name(command.name)
        if name is None or name in seen:
            log.info("command %r has no Telegram name: left out of the menu", command.name)
            continue
        seen.add(name)
        description = " ".join((command.summary or command.usage or command.name).split())
        if len(description) > MAX_DESCRIPTION:
            description = description[: MAX_DESCRIPTION - 1] + "…"
        entries.append((name, description))
    if len(entries) > MAX_MENU_COMMANDS:
        log.warning(
            "%d commands: Telegram's menu holds %d, the rest are left out",
            len(entries),
            MAX_MENU_COMMANDS,
        )
    return entries[:MAX_MENU_COMMANDS]


def with_user_ids(text: str, mentions: Iterable[tuple[int, int, int]]) -> str:
    """``text`` with each ``(offset, length, user id)`` span (``text_mention`` entities; offsets
    and lengths in UTF-16 code units, as Telegram counts) replaced by ``@`` and the user id."""
    spans = sorted(mentions)
    if not spans:
        return text
    units = text.encode("utf-16-le")
    out: list[str] = []
    at = 0
    for offset, length, user in spans:
        if offset < at or (offset + length) * 2 > len(units):
            continue  # overlapping or out of the text: not a span Telegram would send
        out.append(units[at * 2 : offset * 2].decode("utf-16-le", "replace"))
        out.append(f"@{user}")
        at = offset + length
    out.append(units[at * 2 :].decode("utf-16-le", "replace"))
    return "".join(out)
