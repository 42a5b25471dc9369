"""Rolls by Trait name: ``!roll Strength+Brawl 6`` reads the pool from the caller's active
character (``coterie_pool_resolver``).

The pool rules of the rule set's template are applied and shown: at most ``max_traits`` Traits
(modifiers such as ``+2`` aside), a Trait rated up to 10 rolled alone, the Health chart's wound
penalty (not on reflexive Traits), a tracker rolled from its current value but never below one
die, v5's impairment, ``Trait.Specialty``. A pool written in numbers only never reads the sheet.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from coterie.errors import UsageError
from coterie.framework.characters import CharacterTemplate, CharacterView, TrackerSpec, fold
from coterie.framework.commands import CommandContext
from coterie.framework.grammar import Parsed, Pool, PoolTerm, number, shorten, tokens
from coterie.hookimpl import hookimpl
from coterie.play import sheets
from coterie.play.poolwords import _PART, _by_name, _names_trait, _opposed, opponent_word
from coterie.play.poolwords import canonical as canonical
from coterie.play.poolwords import canonical_roll as canonical_roll
from coterie.play.roster import NPC_OWNER, chronicle_of, opponent, templates
from coterie.render.elements import BR, Text

#: a letter (what a Trait name, an option's name and ``vs`` each have)
_LETTER = re.compile(r"[^\W\d_]")
_NAMES = {1: "one", 2: "two", 3: "three"}
#: pools read from shared sheets (``SheetPools(shared=True)``: a store's read-only sheet, never
#: changed), by sheet, template and token; each kept with its sheet and template, whose ids thus
#: stay theirs while it is here
_POOLS_MOST = 4096
_pools: dict[tuple[int, int, str], tuple[dict[str, Any], CharacterTemplate, Pool, str, bool]] = {}


Side = tuple[
    list[str],
    Callable[[str], Pool] | None,
    Mapping[str, Any] | None,
    Callable[[Parsed], None] | None,
]


def _grammar_words(grammar: Any, token: str) -> bool:
    """Whether every name in a pool is one the rule set's grammar reads itself, without a sheet
    (``willpower 7``, ``rage``; ``2+rage`` too, which the grammar then refuses, saying why)."""
    named = getattr(grammar, "named_traits", ())
    parts = [m.group(2).lower() for m in _PART.finditer(token) if not m.group(2).isdigit()]
    return bool(parts) and all(part in named for part in parts)


class _Opposition:
    """How the other side of ``vs`` reads: from the sheet named there (see
    :class:`~coterie.framework.grammar.Opposition`)."""

    ctx: CommandContext
    #: the sheets named after ``vs``, read before parsing (by the word that names each)
    opponents: dict[str, SheetPools]

    def versus(self, words: list[str]) -> Side:
        grammar = self.ctx.variant.grammar.versus
        who = opponent_word(grammar, words)
        if who is None or who not in self.opponents:
            if words and _by_name(grammar, words[0]) and not _grammar_words(grammar, words[0]):
                raise UsageError(
                    f"whose `{shorten(words[0])}`? Name the other side: "
                    f"`vs NAME {shorten(words[0])}` (a character or NPC) or `vs @user …`"
                )
            return words, None, None, None
        side = self.opponents[who]
        rest = words[1:]
        if not rest:
            raise UsageError(f"`vs {shorten(who)}` needs a pool after it, e.g. `Wits+Awareness`")
        preset = side.preset if any(c.isalpha() for c in rest[0]) else None
        return rest, side.read, preset, side.check


class _NumbersOnly(_Opposition):
    """A roll in numbers against a side named by its character (the roller needs no sheet)."""

    def __init__(self, ctx: CommandContext) -> None:
        self.ctx = ctx
        self.preset: dict[str, Any] = {}
        self.opponents = {}

    def read(self, token: str) -> Pool:
        prefix = self.ctx.settings.prefix
        raise UsageError(
            f"to roll `{shorten(token)}` by Trait name you need a character here: "
            f"`{prefix}char new NAME` (or roll numbers, e.g. `3+2`)"
        )

    def check(self, parsed: Parsed) -> None:
        return None


class SheetPools(_Opposition):
    """Reads pools of Trait names from one character (a :class:`~coterie.framework.commands.
    PoolResolver`)."""

    def __init__(
        self,
        ctx: CommandContext,
        template: CharacterTemplate,
        sheet: dict[str, Any],
        *,
        shared: bool = False,
    ) -> None:
        self.template = template
        self.sheet = sheet
        self.shared = shared  # a store's read-only sheet: pools read from it are kept
        self.ctx = ctx
        self.opponents = {}
        self.specialty = False
        self.kind = kind = str(sheet.get("kind", ""))
        self.preset: dict[str, Any] = {}
        for slot, name in template.presets.items():
            tracker = template.tracker_for(kind, name)
            self.preset[slot] = 0 if tracker is None else sheets.value(template, sheet, tracker)

    def read(self, token: str) -> Pool:
        wanted = (id(self.sheet), id(self.template), token)
        known = _pools.get(wanted) if self.shared else None
        if known is not None and known[0] is self.sheet and known[1] is self.template:
            pool, note, specialty = known[2:]
            self.specialty = self.specialty or specialty
        else:
            before, self.specialty = self.specialty, False
            pool, note = self._read(token)
            specialty, self.specialty = self.specialty, before or self.specialty
            if self.shared:
                if len(_pools) >= _POOLS_MOST:
                    _pools.clear()
                _pools[wanted] = (self.sheet, self.template, pool, note, specialty)
        if not getattr(self.ctx, "secret", False):  # a secret roll's pool stays out of the room
            self.ctx.notes += [BR, Text(note)]
        return pool

    def _read(self, token: str) -> tuple[Pool, str]:
        """The pool ``token`` reads from the sheet, and the line that says how."""
        template, sheet = self.template, self.sheet
        terms: list[PoolTerm] = []
        named: list[tuple[str, int]] = []
        alone: list[str] = []
        reflexive = True
        categories: set[str] = set()
        trackers = False
        ten_point = False
        shown: dict[str, int] = {}  # a tracker's own value where it rolls at least one die
        for match in _PART.finditer(token):
            sign = -1 if match.group(1) == "-" else 1
            part = match.group(2)
            if part.isdigit():
                terms.append(PoolTerm(number(part, "a modifier"), sign, modifier=True))
                continue
            word, dot, special = part.partition(".")
            name = template.find(word, sheet["custom"])
            if sign < 0:
                raise UsageError(f"a Trait adds dice: `-{name}` can't be taken away")
            key = fold(name)
            spec = template.traits.get(key)
            tracker = None if spec is not None else template.tracker_for(self.kind, name)
            dice = self._dice(name, spec is not None, tracker)
            if tracker is not None and tracker.rolls != "never":
                shown[name.lower()] = self._tracker_value(tracker)
            if tracker is not None:
                trackers = True
            if (spec is not None and spec.ten_point) or tracker is not None:
                alone.append(name)
            if spec is not None and spec.ten_point:
                ten_point = True
            if spec is None or not (spec.reflexive or spec.ten_point):
                reflexive = reflexive and tracker is not None
            if spec is not None and spec.category:
                categories.add(spec.category)
            if dot:
                self._specialty(name, special)
            named.append((name, dice))
            terms.append(PoolTerm(dice, 1, name.lower()))
        self._check(token, named, alone)
        added = [t.dice for t in terms if t.modifier and t.sign > 0]
        if added and ten_point:
            # a Trait rated up to 10 is its whole pool (000 Rolling Dice, 004 Dice Pools); a
            # penalty may still be taken away, as from a pool written in numbers
            raise UsageError(
                f"{named[0][0]} is rolled alone: `{shorten(token)}` adds {added[0]} to it"
            )
        if not trackers:
            terms += self._penalties(named, reflexive, categories)
        return Pool(tuple(terms)), self._show(terms, shown)

    def _show(self, terms: list[PoolTerm], shown: dict[str, int]) -> str:
        """The line under the roll that says how the sheet made the pool: ``Lise: Strength 3 +
        Brawl 2 − 1 (Hurt) = 4 dice``; ``shown``: the value of a tracker rolled by name, where
        it differs from its dice (no undamaged box left: ``Willpower 0``, one die)."""
        parts: list[str] = []
        raised = False
        for term in terms:
            sign = "−" if term.sign < 0 else "+"
            label = f"{term.trait.title()} " if term.trait else ""
            if term.modifier and term.trait:
                parts.append(f"{sign} {term.dice} ({term.trait.title()})")
            else:
                value = shown.get(term.trait, term.dice) if term.trait else term.dice
                raised = raised or value < term.dice
                parts.append(f"{sign} {label}{value}")
        total = sum(t.dice * t.sign for t in terms)
        if self.specialty and self.template.specialty == "die":  # v5: one more die (002)
            parts.append("+ 1 (specialty)")
            total += 1
        text = " ".join(parts).removeprefix("+ ")
        extra = ""
        if raised:
            extra = " (a tracker rolls at least one die)"
        elif total < 1:
            total, extra = 1, " (a pool never falls below one die)"
        dice = "die" if total == 1 else "dice"
        return f"{self.sheet['name']}: {text} = {total} {dice}{extra}"

    def _tracker_value(self, tracker: TrackerSpec) -> int:
        """What a tracker rolled by name holds: its undamaged boxes, or its current points."""
        if tracker.kind == "boxes":
            return sheets.undamaged(self.template, self.sheet, tracker)
        return sheets.value(self.template, self.sheet, tracker)

    def _dice(self, name: str, is_trait: bool, tracker: TrackerSpec | None) -> int:
        template, sheet = self.template, self.sheet
        if is_trait or tracker is None or tracker.rolls == "never":
            return sheets.rating(template, sheet, name)
        value = self._tracker_value(tracker)
        if tracker.kind != "boxes" and tracker.rolls == "rating":
            return value
        return max(1, value)  # a tracker rolls at least one die (002)

    def _specialty(self, name: str, special: str) -> None:
        if self.template.specialty == "none":
            raise UsageError(
                f"the {self.template.variant} rules give specialties no dice effect: "
                f"roll `{name}` without `.{shorten(special)}`"
            )
        known = self.sheet["specialties"].get(name, [])
        matching = [s for s in known if fold(s).startswith(fold(special))]
        if not matching:
            prefix = self.ctx.settings.prefix
            listed = f" (it has {', '.join(known)})" if known else ""
            raise UsageError(
                f"{name} has no specialty `{shorten(special)}`{listed}: "
                f"`{prefix}char spec {name} {special}` adds one"
            )
        self.specialty = True

    def _check(self, token: str, named: list[tuple[str, int]], alone: list[str]) -> None:
        most = self.template.max_traits
        written = " + ".join(name for name, _ in named)
        if alone and len(named) > 1:
            raise UsageError(f"{alone[0]} is rolled alone: `{written}` adds it to other Traits")
        if most is not None and len(named) > most:
            limit = _NAMES.get(most, str(most))
            raise UsageError(
                f"`{written}` adds {len(named)} Traits; a pool adds at most {limit} "
                "(modifiers such as +2 aside)"
            )
        if not named:
            raise UsageError(f"`{shorten(token)}` names no Trait")

    def _penalties(
        self, named: list[tuple[str, int]], reflexive: bool, categories: set[str]
    ) -> list[PoolTerm]:
        template, sheet = self.template, self.sheet
        out: list[PoolTerm] = []
        if reflexive:
            return out
        level, penalty = sheets.wound_penalty(template, sheet)
        if penalty is None:
            raise UsageError(f"{sheet['name']} is {level}: no action can be attempted")
        total = sum(dice for _, dice in named)
        if penalty:
            if total + penalty <= 0:
                raise UsageError(
                    f"{sheet['name']} is {level} ({penalty:+d} dice), leaving "
                    f"{total + penalty} of {total}: this action cannot be attempted"
                )
            out.append(PoolTerm(-penalty, -1, level.lower(), modifier=True))
        health = template.health
        if health is not None and health.impairment:
            for track, kinds in health.impairment_tracks.items():
                tracker = template.tracker(track)
                if tracker is None or not categories & set(kinds):
                    continue
                if sheets.undamaged(template, sheet, tracker) == 0:
                    out.append(PoolTerm(health.impairment, -1, "impaired", modifier=True))
                    break
        rule = template.degeneration
        # Stains overlapping Humanity impair every pool (docs/rules/v5.md, reading chosen);
        # one impairment, not two
        if (
            rule is not None
            and sheets.degenerating(template, sheet)
            and not any(term.trait == "impaired" for term in out)
        ):
            out.append(PoolTerm(rule.impairment, -1, "impaired", modifier=True))
        return out

    def check(self, parsed: Parsed) -> None:
        template, sheet = self.template, self.sheet
        # `!odds … wp` spends nothing: only a roll needs the point
        spends = () if self.ctx.line.command == "odds" else template.spends
        for spend in spends:
            if parsed.values.get(spend.option) is not True:
                continue
            tracker = template.tracker(spend.tracker)
            if tracker is None:
                continue
            left = sheets.value(template, sheet, tracker)
            if left < spend.amount:
                high = sheets.tracker_high(template, sheet, tracker)
                raise UsageError(f"{sheet['name']} has no {tracker.name} left ({left}/{high})")
        if self.specialty:
            parsed.values["specialty"] = True
            self.specialty = False


#: the option words of a grammar that spend a tracker of a template (both live as long as the
#: process: rule sets and their templates are made once)
_spending: dict[tuple[int, int], frozenset[str]] = {}


def _wants_sheet(ctx: CommandContext, template: CharacterTemplate) -> tuple[bool, bool]:
    """(a pool is written by name, a spending option is used) — decided without any read."""
    grammar = ctx.variant.grammar
    spending = _spending.get((id(template), id(grammar)))
    if spending is None:
        spending = _spending[(id(template), id(grammar))] = frozenset(
            name
            for option in grammar.options
            for spend in template.spends
            if option.dest == spend.option
            for name in option.names
        )
    by_name = spends = False
    for segment in ctx.args.split(";"):
        words = tokens(segment)
        if not words:
            continue
        if _by_name(grammar, words[0]):
            by_name = True
        if spending and any(w.lower() in spending for w in words):
            spends = True
    return by_name, spends


@hookimpl
def coterie_pool_resolver(
    ctx: CommandContext,
) -> Awaitable[SheetPools | _NumbersOnly | None] | None:
    """A reader of the caller's sheet, decided without any read: a roll in numbers only (most
    of them) gets ``None`` at once, with nothing to await."""
    if _LETTER.search(ctx.line.args) is None:
        return None  # no word at all: no Trait name, no option that spends, no `vs NAME`
    template = templates(ctx.app).get(ctx.variant.name)
    if template is None:
        return None
    names, opposed = _opposed(ctx)
    if isinstance(ctx.resolver, _Opposition):  # set by the command (an NPC's sheet): complete it
        return _complete(ctx, ctx.resolver, template, names) if names else None
    by_name, spends = _wants_sheet(ctx, template)
    if not by_name and not spends and not opposed:
        return None
    return _resolver(ctx, template, names, opposed, by_name, spends)


async def _complete(
    ctx: CommandContext, resolver: _Opposition, template: CharacterTemplate, names: list[str]
) -> None:
    for who in names:
        resolver.opponents[who] = SheetPools(ctx, template, await opponent(ctx, who))


async def _resolver(
    ctx: CommandContext,
    template: CharacterTemplate,
    names: list[str],
    opposed: bool,
    by_name: bool,
    spends: bool,
) -> SheetPools | _NumbersOnly | None:
    own = await _own(ctx, template, by_name, spends) if by_name or spends else None
    if not opposed:
        return own
    resolver = own or _NumbersOnly(ctx)
    for who in names:
        resolver.opponents[who] = SheetPools(ctx, template, await opponent(ctx, who))
    return resolver


async def _own(
    ctx: CommandContext, template: CharacterTemplate, by_name: bool, spends: bool
) -> SheetPools | None:
    """The reader of the caller's active character, ``None`` when the roll needs none."""
    # the pool is only read from the sheet: no copy of it
    active = await ctx.store.active_character(chronicle_of(ctx), ctx.message.user, readonly=True)
    if active is None:
        first = tokens(ctx.args.split(";")[0])[:1]
        if not by_name or (first and _grammar_words(ctx.variant.grammar, first[0])):
            return None  # numbers, or `willpower 7` / `2+rage` (the grammar's words): no sheet
        if not any(_names_trait(template, w) for w in tokens(ctx.args)[:1]):
            return None  # no Trait name in it (`3+x`): the grammar says what is wrong
        prefix = ctx.settings.prefix
        raise UsageError(
            "to roll by Trait name you need a character here: "
            f"`{prefix}char new NAME`, then `{prefix}char set Strength 3 …` "
            "(or roll numbers, e.g. `3+2`)"
        )
    return SheetPools(ctx, template, active.sheet, shared=True)


@hookimpl
async def coterie_active_character(ctx: CommandContext) -> CharacterView | None:
    """The caller's active character as a rule set's own command reads it (one read); for a
    command the Storyteller runs for an NPC (``!npc rouse Guard``), the NPC's sheet."""
    template = templates(ctx.app).get(ctx.variant.name)
    if template is None:
        return None
    resolver = ctx.resolver
    if isinstance(resolver, SheetPools) and resolver.sheet.get("owner") == NPC_OWNER:
        sheet = resolver.sheet
    else:
        active = await ctx.store.active_character(
            chronicle_of(ctx), ctx.message.user, readonly=True
        )
        if active is None:
            return None
        sheet = active.sheet
    names = [spec.name for spec in template.traits.values()] + list(sheet["custom"])
    level, penalty = sheets.wound_penalty(template, sheet)
    ratings = {name: sheets.rating(template, sheet, name) for name in names}
    kind = str(sheet.get("kind", ""))
    trackers = {
        t.name: sheets.value(template, sheet, t)
        for t in template.trackers
        if t.kind != "boxes" and template.tracker_for(kind, t.name) is not None
    }
    return CharacterView(str(sheet["name"]), ratings, level, penalty, trackers)
