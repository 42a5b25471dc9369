"""Completion for the interactive console: command names first, then Trait names.

The first word of a line completes to the room's commands (and the console's own ``/as``,
``/storyteller``, ``/help``, ``/quit``); every later word completes to the Traits and rollable
trackers of the room's rule set and the custom Traits of the speaker's active character, so
``!roll Wi<Tab>+Aw<Tab>`` becomes ``!roll Wits+Awareness``. Both lists are made again before each
prompt, so they follow ``!variant`` and ``!char add``.
Words are split at spaces and at ``+``/``-``, as pools are written. prompt_toolkit is imported only
when a completer is made, that is only at a terminal.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from coterie.framework.characters import CharacterTemplate

#: the console's own commands, completed like the room's
CONSOLE_COMMANDS = ("/as", "/storyteller", "/help", "/quit")
#: where a Trait name starts inside a pool: after a space, ``+`` or ``-``
_WORD_START = re.compile(r"[^\s+\-]*$")


def template_names(template: CharacterTemplate | None) -> list[str]:
    """The names a pool may use on this rule set's sheets: Traits, then rollable trackers."""
    if template is None:
        return []
    names = [spec.name for group in template.groups for spec in group.traits]
    names += [t.name for t in template.trackers if t.rolls != "never" and t.name not in names]
    return names


def current_word(text: str) -> tuple[str, bool]:
    """The word before the cursor, and whether it is the line's first (a command name)."""
    stripped = text.lstrip()
    if " " not in stripped:
        return stripped, True
    match = _WORD_START.search(text)
    return (match.group(0) if match else ""), False


def candidates(text: str, commands: Iterable[str], traits: Iterable[str]) -> list[str]:
    """What the word before the cursor may become, given the line up to the cursor."""
    word, first = current_word(text)
    if not word and not first:
        return []
    folded = word.casefold()
    pool = commands if first else traits
    return sorted({name for name in pool if name.casefold().startswith(folded) and name != word})


def sheet_names(record: Mapping[str, Any]) -> list[str]:
    """The custom Traits (a Discipline, a Background of the player's own) of the active character
    in a player's record (``coterie.storage.characters.load_player``)."""
    sheet = record.get("chars", {}).get(record.get("active") or "")
    custom = sheet.get("custom") if isinstance(sheet, dict) else None
    return sorted(str(name) for name in custom) if isinstance(custom, dict) else []


def completer(commands: Iterable[str], traits: Iterable[str]) -> Any:
    """A prompt_toolkit completer over :func:`candidates`; its ``update(commands, traits)`` sets
    new words (the console calls it before each prompt: the room's rule set may have changed)."""
    from prompt_toolkit.completion import Completer, Completion

    class _Completer(Completer):
        def __init__(self) -> None:
            self.commands: list[str] = []
            self.traits: list[str] = []
            self.update(commands, traits)

        def update(self, commands: Iterable[str], traits: Iterable[str]) -> None:
            self.commands, self.traits = list(commands), list(traits)

        def get_completions(self, document: Any, complete_event: Any) -> Iterator[Completion]:
            text = document.text_before_cursor
            word, _ = current_word(text)
            for name in candidates(text, self.commands, self.traits):
                yield Completion(name, start_position=-len(word))

    return _Completer()
