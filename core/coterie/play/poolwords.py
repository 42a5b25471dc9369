"""How a roll's words name Traits and characters (``Strength+Brawl``, ``vs Guard Wits+Awareness``),
read without any sheet: what :mod:`coterie.play.byname` decides before it reads one."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from coterie.errors import UsageError
from coterie.framework.characters import CharacterTemplate, fold
from coterie.framework.commands import CommandContext
from coterie.framework.grammar import tokens
from coterie.play.rooms import is_mention

if TYPE_CHECKING:
    from coterie.play.byname import SheetPools

_PART = re.compile(r"([+-]?)([^+-]+)")
_NUMBERS = re.compile(r"[0-9+-]+")


def _names_trait(template: CharacterTemplate, word: str) -> bool:
    for match in _PART.finditer(word):
        part = match.group(2).partition(".")[0]
        if part.isdigit():
            continue
        try:
            template.find(part)
        except UsageError:
            continue
        return True
    return False


def _has_letter(word: str) -> bool:
    return any(ch.isalpha() for ch in word)


def canonical(template: CharacterTemplate, sheet: dict[str, Any], token: str) -> str:
    """A pool of Trait names written with the names the sheet knows them by:
    ``wits+street.slum+1`` → ``Wits+Streetwise.Slums+1`` (a specialty by the sheet's own name when
    one matches). Errors as :meth:`SheetPools.read` gives them (an unknown or ambiguous name)."""
    out: list[str] = []
    for match in _PART.finditer(token):
        sign, part = match.group(1), match.group(2)
        if part.isdigit():
            out.append(sign + part)
            continue
        word, dot, special = part.partition(".")
        name = template.find(word, sheet["custom"])
        if dot:
            known = sheet["specialties"].get(name, [])
            matching = [s for s in known if fold(s).startswith(fold(special))]
            special = matching[0] if len(matching) == 1 else special
        out.append(sign + name + (dot + special if dot else ""))
    return "".join(out)


def canonical_roll(
    grammar: Any,
    template: CharacterTemplate,
    sheet: dict[str, Any] | None,
    roll: str,
    opponents: Mapping[str, SheetPools] | None = None,
) -> str:
    """A roll's arguments with each pool written by Trait name (the first word of each roll
    between ``;``, read from ``sheet``, and the pool after ``vs NAME``, read from the sheet of
    ``opponents[NAME]``) in :func:`canonical` form; numbers, options and comments as they were."""
    segments = []
    changed = False
    for segment in roll.split(";"):
        words = tokens(segment)
        if words and sheet is not None and _by_name(grammar, words[0]):
            words[0] = canonical(template, sheet, words[0])
        lowered = [w.lower() for w in words]
        at = lowered.index("vs") + 1 if "vs" in lowered else len(words)
        side = (opponents or {}).get(words[at]) if at < len(words) - 1 else None
        if side is not None and _by_name(grammar.versus, words[at + 1]):
            words[at + 1] = canonical(template, side.sheet, words[at + 1])
        rewritten = " ".join(words)
        changed = changed or rewritten != " ".join(tokens(segment))
        segments.append(rewritten)
    return "; ".join(segments) if changed else roll


def _by_name(grammar: Any, word: str) -> bool:
    """Whether a roll's first word is a pool of Trait names (not numbers, not an option)."""
    low = word.lower()
    return (
        _has_letter(low)
        and not _NUMBERS.fullmatch(low)
        and grammar.option(low.partition("=")[0]) is None
    )


_PLAIN = re.compile(r"[^\W\d_][\w'\-]{0,29}")


def opponent_word(grammar: Any, after: list[str]) -> str | None:
    """The character named right after ``vs`` (``vs Guard Wits+Awareness``, ``vs @bob 4``):
    a mention, or a plain word followed by a pool of Trait names; else ``None``."""
    if not after or grammar is None:
        return None
    first = after[0]
    if is_mention(first):
        return first
    if (
        len(after) > 1
        and _PLAIN.fullmatch(first)
        and grammar.option(first.lower()) is None
        and _by_name(grammar, after[1])
    ):
        return first
    return None


def _opposed(ctx: CommandContext) -> tuple[list[str], bool]:
    """(the characters named after ``vs``, whether any side after ``vs`` is written by name)
    — decided without any read."""
    grammar = ctx.variant.grammar.versus
    if grammar is None or "vs" not in ctx.args.lower():
        return [], False
    names: list[str] = []
    by_name = False
    for segment in ctx.args.split(";"):
        words = tokens(segment)
        lowered = [w.lower() for w in words]
        if "vs" not in lowered:
            continue
        after = words[lowered.index("vs") + 1 :]
        who = opponent_word(grammar, after)
        if who is not None:
            names.append(who)
            by_name = True
        elif after and _by_name(grammar, after[0]):
            by_name = True
    return names, by_name
