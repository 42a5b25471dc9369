"""The chat grammar shared by every command: prefix, command word, arguments, ``# comment``.

Rule sets describe their ``!roll`` arguments declaratively with a :class:`Grammar` (positional
slots and keyword options); :func:`parse` turns tokens into a :class:`Parsed` or raises a friendly
:class:`~coterie.errors.UsageError` (unknown words get the closest suggestion). Parsing is linear in
the input and uses no backtracking regular expressions on user text.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import field
from functools import cached_property
from typing import Literal

from coterie.errors import UsageError
from coterie.records import dataclass

#: longest run of digits accepted anywhere; "99999999999" is refused before any int() conversion
MAX_DIGITS = 6
_NUMBER = re.compile(rf"[0-9]{{1,{MAX_DIGITS}}}", re.ASCII)
_DIGITS = re.compile(r"[0-9]+", re.ASCII)
_POOL = re.compile(r"[0-9]+(?:[+-][0-9]+)*", re.ASCII)
_COMPACT = re.compile(r"([a-z]+)([0-9]+)", re.ASCII)
_JOIN_SIGNS = re.compile(r"(?<=[0-9])\s*([+-])\s*(?=[0-9A-Za-z])", re.ASCII)
_WORD = re.compile(r"[a-z][a-z0-9_-]*", re.ASCII)
#: dice notation (``7d10``, ``d6``, ``2d6+3``): not how a pool is written
DICE_NOTATION = re.compile(r"([0-9]{0,6})d([0-9]{1,6})([+-][0-9]+|k[hl]?[0-9]+)*", re.ASCII)
_NEGATIVE = re.compile(r"-[0-9]{1,6}", re.ASCII)
_NUMBER_NAMES = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty"
)
NUMBER_WORDS = {word: value for value, word in enumerate(_NUMBER_NAMES.split(" "))}


@dataclass(frozen=True)
class CommandLine:
    """A message split into prefix, command word, argument text and comment."""

    prefix: str
    command: str
    args: str
    comment: str | None


def split_command(text: str, prefixes: Sequence[str]) -> CommandLine | None:
    """Split ``!roll 7 6 # aim`` into its parts; ``None`` when the text is not a command."""
    stripped = text.strip()
    for prefix in sorted(prefixes, key=len, reverse=True):
        if prefix and stripped.startswith(prefix):
            rest = stripped[len(prefix) :]
            break
    else:
        return None
    comment: str | None = None
    if "#" in rest:
        rest, _, raw_comment = rest.partition("#")
        comment = raw_comment.strip() or None
    parts = rest.split(None, 1)  # any whitespace (a tab, a newline) ends the word
    if not parts:
        return None
    word, args = parts[0], parts[1] if len(parts) > 1 else ""
    return CommandLine(prefix=prefix, command=word.lower(), args=args.strip(), comment=comment)


def localise(usage: str, prefix: str) -> str:
    """A usage line written with ``!`` as it reads in a room whose prefix is ``prefix``."""
    return prefix + usage[1:] if usage.startswith("!") else usage


def tokens(args: str) -> list[str]:
    """Whitespace tokens, with ``3 + 4`` joined into ``3+4``."""
    return _JOIN_SIGNS.sub(r"\1", args).split()


def number(token: str, what: str) -> int:
    """A non-negative integer of at most :data:`MAX_DIGITS` digits, or a friendly error."""
    if _NUMBER.fullmatch(token):
        return int(token)
    if _DIGITS.fullmatch(token):
        raise UsageError(f"{what} `{token[:12]}{'…' if len(token) > 12 else ''}` is far too large")
    raise UsageError(f"{what} must be a whole number, not `{shorten(token)}`")


def shorten(token: str, width: int = 24) -> str:
    """Quote-safe short form of a user token for error messages."""
    clean = "".join(ch if ch.isprintable() and ch != "`" else "?" for ch in token)
    return clean if len(clean) <= width else clean[: width - 1] + "…"


@dataclass(frozen=True)
class PoolTerm:
    """One part of a pool: a number of dice, added or (``sign == -1``) taken away."""

    dice: int
    sign: int = 1
    trait: str | None = None
    #: a situational modifier (``Dex+Firearms+2``) written beside named Traits: not a Trait
    modifier: bool = False


@dataclass(frozen=True)
class Pool:
    """A dice pool written as a sum, e.g. ``3+4`` (Attribute + Ability) or ``willpower 7``."""

    terms: tuple[PoolTerm, ...]

    @property
    def total(self) -> int:
        return sum(term.dice * term.sign for term in self.terms)

    @property
    def added(self) -> tuple[PoolTerm, ...]:
        """The terms that add dice (Traits); subtracted terms and modifiers are not Traits."""
        return tuple(term for term in self.terms if term.sign > 0 and not term.modifier)

    @classmethod
    def of(cls, dice: int) -> Pool:
        return cls((PoolTerm(dice),))

    def __str__(self) -> str:
        parts: list[str] = []
        for index, term in enumerate(self.terms):
            sign = "-" if term.sign < 0 else ("+" if index else "")
            label = f"{term.trait} " if term.trait else ""
            parts.append(f"{sign}{label}{term.dice}")
        return "".join(parts)


def parse_pool(token: str) -> Pool:
    """``7``, ``3+4`` or ``3+4-2`` as a :class:`Pool`."""
    if not _POOL.fullmatch(token):
        raise UsageError(f"the pool must be a number or a sum like `3+4`, not `{shorten(token)}`")
    terms: list[PoolTerm] = []
    for match in re.finditer(r"([+-]?)([0-9]+)", token):
        sign = -1 if match.group(1) == "-" else 1
        terms.append(PoolTerm(number(match.group(2), "a pool"), sign))
    return Pool(tuple(terms))


Kind = Literal["flag", "int", "word"]


@dataclass(frozen=True)
class Option:
    """A keyword option of a command, e.g. ``wp`` (flag), ``diff 3`` (int) or ``for NAME`` (word).

    ``compact`` options also take the number glued on (``h2``); all options take ``name=value``.
    """

    name: str
    kind: Kind
    help: str
    aliases: tuple[str, ...] = ()
    minimum: int | None = None
    maximum: int | None = None
    compact: bool = False
    metavar: str = "N"
    #: where :class:`Parsed` stores the value (default: ``name``), e.g. ``wp`` -> ``willpower``
    key: str = ""

    @property
    def dest(self) -> str:
        return self.key or self.name

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)

    def syntax(self) -> str:
        return self.name if self.kind == "flag" else f"{self.name} {self.metavar}"


@dataclass(frozen=True)
class Positional:
    """A positional slot: ``pool`` (a sum of dice) or ``int``."""

    name: str
    help: str
    kind: Literal["pool", "int"] = "int"
    required: bool = False
    minimum: int | None = None
    maximum: int | None = None


@dataclass(frozen=True)
class Grammar:
    """How a command's arguments read. ``versus`` parses what follows ``vs`` (resisted rolls)."""

    usage: str
    positionals: tuple[Positional, ...] = ()
    options: tuple[Option, ...] = ()
    versus: Grammar | None = None
    #: Trait names that may stand before a number in the pool, e.g. ``willpower 7``
    named_traits: tuple[str, ...] = ()
    #: the error for a named Trait anywhere but alone at the start of the pool
    #: (``{Trait}``/``{trait}`` are filled in)
    named_trait_rule: str = (
        "{Trait} is rolled alone: write `{trait} N` at the start of the pool, "
        "with nothing added to it"
    )
    #: the arguments of one valid call (``7 6``): errors that teach rewrite it to show the fix
    example: str = ""

    def teach(self, pool: int | None = None) -> str:
        """A call of this command written right, as a hint: ``!roll 7 6``, with its pool set to
        ``pool`` when given; ``""`` without an :attr:`example`."""
        if not self.example:
            return ""
        first, _, rest = self.example.partition(" ")
        if pool is not None:
            first = str(pool)
        word = self.usage.split(None, 1)[0] if self.usage else "!roll"
        return f"`{word} {first}{' ' + rest if rest else ''}`"

    def teach_penalty(self, penalty: str) -> str:
        """:meth:`teach` with a penalty (``-2``) written after the example's pool."""
        first = self.example.partition(" ")[0]
        return self.teach().replace(f" {first}", f" {first}{penalty}", 1)

    def misplaced_trait(self, word: str) -> UsageError | None:
        """The error for a token naming a Trait where it can't stand (``3 rage 6``, ``2+rage``)."""
        for part in re.split(r"[+=-]", word):
            if part in self.named_traits:
                return UsageError(self.named_trait_rule.format(Trait=part.title(), trait=part))
        return None

    def option(self, word: str) -> Option | None:
        return self._option_index.get(word)

    @cached_property
    def _option_index(self) -> dict[str, Option]:
        """Each option by each of its names (the first option to claim a name keeps it), built
        once per grammar: :meth:`option` runs for every word of every command."""
        index: dict[str, Option] = {}
        for option in self.options:
            for name in option.names:
                index.setdefault(name, option)
        return index

    def vocabulary(self) -> list[str]:
        words = [name for option in self.options for name in option.names]
        words.extend(self.named_traits)
        if self.versus is not None:
            words.append("vs")
        return words


@dataclass
class Parsed:
    """Arguments read by :func:`parse`: values by slot/option name (flags are ``True``)."""

    values: dict[str, int | str | bool | Pool] = field(default_factory=dict)
    versus: Parsed | None = None
    comment: str | None = None

    def pool(self, name: str = "pool") -> Pool | None:
        value = self.values.get(name)
        return value if isinstance(value, Pool) else None

    def int(self, name: str, default: int | None = None) -> int | None:
        value = self.values.get(name, default)
        if isinstance(value, bool) or not isinstance(value, int | None):
            raise TypeError(f"{name} is not an int")
        return value

    def flag(self, name: str) -> bool:
        return self.values.get(name) is True

    def word(self, name: str) -> str | None:
        value = self.values.get(name)
        return value if isinstance(value, str) else None


def suggest(word: str, vocabulary: Iterable[str]) -> str | None:
    """The closest known word, if any is close enough."""
    matches = difflib.get_close_matches(word, list(vocabulary), n=1, cutoff=0.6)
    return matches[0] if matches else None


def check_range(value: int, low: int | None, high: int | None, what: str) -> int:
    """``value``, or a friendly error saying which bounds it breaks."""
    if (low is not None and value < low) or (high is not None and value > high):
        if low is not None and high is not None:
            raise UsageError(f"{what} must be between {low} and {high}, not {value}")
        if low is not None:
            raise UsageError(f"{what} must be at least {low}, not {value}")
        raise UsageError(f"{what} must be at most {high}, not {value}")
    return value


#: reads a pool written with Trait names (``Strength+Brawl``) from a character sheet
PoolReader = Callable[[str], Pool]
_Preset = Mapping[str, int | str | bool | Pool]
_Side = tuple[list[str], PoolReader | None, _Preset | None, Callable[[Parsed], None] | None]
#: how the words after ``vs`` read when they name a character (``vs Guard Wits+Awareness``):
#: given them, the words left, their pool reader, preset slots and a last check of the side
Opposition = Callable[[list[str]], _Side]


def parse(
    words: Sequence[str],
    grammar: Grammar,
    *,
    max_options: int = 20,
    pool: PoolReader | None = None,
    preset: Mapping[str, int | str | bool | Pool] | None = None,
    versus: Opposition | None = None,
) -> Parsed:
    """Read ``words`` against ``grammar``; a :class:`UsageError` carries the usage line.

    With ``pool`` (a character sheet's reader), a pool word containing a letter that is not an
    option is read by it (``Strength+Brawl``, ``Dex+Firearms+2``); ``preset`` values fill
    positional slots the words then skip (v5's Hunger from the sheet) unless an option gives
    them. ``versus`` says how the words after ``vs`` read (another character's sheet)."""
    try:
        return _parse(list(words), grammar, max_options, pool, preset or {}, versus)
    except UsageError as error:
        if error.usage is None:
            error.usage = grammar.usage
        raise


def _parse(
    words: list[str],
    grammar: Grammar,
    max_options: int,
    reader: PoolReader | None = None,
    preset: Mapping[str, int | str | bool | Pool] | None = None,
    versus: Opposition | None = None,
) -> Parsed:
    parsed = Parsed()
    preset = preset or {}
    slots = [slot for slot in grammar.positionals if slot.name not in preset]
    options_seen = 0
    index = 0
    while index < len(words):
        raw = words[index]
        word = raw.lower()
        index += 1
        if word == "vs" and grammar.versus is not None:
            rest = words[index:]
            if not rest:
                raise UsageError("`vs` needs the other side after it")
            # errors on the other side keep the whole command's usage line
            side = versus(rest) if versus is not None else (rest, None, None, None)
            parsed.versus = _parse(side[0], grammar.versus, max_options, side[1], side[2])
            if side[3] is not None:
                side[3](parsed.versus)
            break
        name, _, inline = word.partition("=")
        option = grammar.option(name)
        value_token: str | None = inline if _ else None
        if option is None and value_token is None:
            compact = _COMPACT.fullmatch(word)
            if compact:
                candidate = grammar.option(compact.group(1))
                if candidate is not None and candidate.compact:
                    option, value_token = candidate, compact.group(2)
        if option is not None:
            options_seen += 1
            if options_seen > max_options:
                raise UsageError(f"too many options: at most {max_options} in one command")
            if option.dest in parsed.values:
                raise UsageError(f"`{option.name}` is given twice")
            if option.kind == "flag":
                if value_token is not None:
                    raise UsageError(f"`{option.name}` takes no value")
                parsed.values[option.dest] = True
                continue
            if value_token is None:
                if index >= len(words):
                    raise UsageError(
                        f"`{option.name}` needs a value, e.g. `{option.name} {option.metavar}`"
                    )
                value_token = words[index]
                index += 1
            if option.kind == "int":
                value = number(value_token, f"`{option.name}`")
                parsed.values[option.dest] = check_range(
                    value, option.minimum, option.maximum, f"`{option.name}`"
                )
            else:
                if not _WORD.fullmatch(value_token.lower()) or len(value_token) > 40:
                    raise UsageError(
                        f"`{option.name}` needs a short name (letters, digits, - and _), "
                        f"not `{shorten(value_token)}`"
                    )
                parsed.values[option.dest] = value_token.lower()
            continue
        if (
            reader is not None
            and slots
            and slots[0].kind == "pool"
            and slots[0].name not in parsed.values
            and not _POOL.fullmatch(word)
            and any("a" <= ch <= "z" for ch in word)
        ):
            parsed.values[slots.pop(0).name] = reader(raw)
            continue
        if word in grammar.named_traits and slots and slots[0].kind == "pool":
            if index >= len(words) or not _POOL.fullmatch(words[index]):
                raise UsageError(f"`{word}` needs its rating after it, e.g. `{word} 7`")
            pool = parse_pool(words[index])
            index += 1
            first, *others = pool.terms
            pool = Pool((PoolTerm(first.dice, 1, word), *others))
            parsed.values[slots.pop(0).name] = pool
            continue
        while slots and slots[0].name in parsed.values:
            slots.pop(0)  # already given as a keyword option
        if _POOL.fullmatch(word) and slots:
            slot = slots.pop(0)
            if slot.kind == "pool":
                parsed.values[slot.name] = parse_pool(word)
            else:
                value = number(word, slot.name)
                try:
                    check_range(value, slot.minimum, slot.maximum, slot.name)
                except UsageError as error:
                    error.hint = _positions_hint(grammar)
                    raise
                parsed.values[slot.name] = value
            continue
        misplaced = grammar.misplaced_trait(word)
        if misplaced is not None:
            raise misplaced
        if _POOL.fullmatch(word) and not grammar.positionals:
            raise UsageError(
                f"I don't know what `{shorten(raw)}` is for: this command takes no numbers "
                "on their own"
            )
        if _POOL.fullmatch(word):
            filled = ", ".join(
                f"{s.name} {parsed.values[s.name]}"
                for s in grammar.positionals
                if s.name in parsed.values
            )
            raise UsageError(f"I don't know what `{shorten(raw)}` is for (I read {filled})")
        taught = _teaching(raw, word, grammar, parsed, words)
        if taught is not None:
            raise taught
        close = suggest(name, grammar.vocabulary())
        hint = f" Did you mean `{close}`?" if close else ""
        raise UsageError(f"unknown option `{shorten(raw)}`.{hint}")
    for slot in slots:
        if slot.required and slot.name not in parsed.values:
            raise UsageError(f"the {slot.name} is missing")
    for slot_name, preset_value in preset.items():
        parsed.values.setdefault(slot_name, preset_value)
    return parsed


def _positions_hint(grammar: Grammar) -> str | None:
    """How the numbers of a command are read, with an example: the fix for a number that landed
    in the wrong slot (v5's ``!roll 7 6`` reads 6 as Hunger)."""
    example = grammar.teach()
    if not example or not grammar.positionals:
        return None
    names = " ".join(slot.name.upper() for slot in grammar.positionals)
    word = grammar.usage.split(None, 1)[0]
    return f"`{word}` reads its numbers as {names}, e.g. {example}."


def _teaching(
    raw: str, word: str, grammar: Grammar, parsed: Parsed, words: Sequence[str]
) -> UsageError | None:
    """The error for a word a newcomer writes for a pool (``7d10``, ``five``, ``-2``), saying how
    to write it in this rule set; ``None`` for any other word."""
    if not grammar.example or not grammar.positionals or grammar.positionals[0].kind != "pool":
        return None
    pool_given = grammar.positionals[0].name in parsed.values
    dice = DICE_NOTATION.fullmatch(word)
    if dice is not None and not pool_given:
        count = int(dice.group(1) or 1)
        return UsageError(
            f"`{shorten(raw)}` is dice notation; here a pool is just its number of dice, and the "
            "rule set knows the die",
            hint=f"{count} {'die' if count == 1 else 'dice'}: {grammar.teach(count or 1)}. "
            f"Plain dice outside the rules: `!r {shorten(raw)}`.",
        )
    if word in NUMBER_WORDS:
        fixed = [str(NUMBER_WORDS[w.lower()]) if w.lower() in NUMBER_WORDS else w for w in words]
        command = grammar.usage.split(None, 1)[0]
        return UsageError(
            f"numbers are written in digits, not `{shorten(raw)}`",
            hint=f"Write `{command} {shorten(' '.join(fixed), 60)}`.",
        )
    if _NEGATIVE.fullmatch(word) and not pool_given:
        return UsageError(
            f"a pool is a number of dice, so it can't be `{shorten(raw)}`",
            hint=f"A penalty is taken from the pool: {grammar.teach()} becomes "
            f"{grammar.teach_penalty(word)}.",
        )
    return None
