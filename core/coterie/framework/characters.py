"""Character templates: what a rule set's character sheet holds, declared by the rule-set plugin.

A rule-set plugin (or a community plugin) returns a :class:`CharacterTemplate` from the
``coterie_character_templates`` hook (see ``docs/plugin_hooks.md``): its Trait groups with their
ranges, which Traits are rated up to 10 and rolled alone, its trackers (points, levels, damage
boxes) with the chat command that moves each, the Health track's wound penalties, and how a
settled roll moves the trackers (:attr:`CharacterTemplate.effects`, e.g. a failed rouse check
raises Hunger). The framework only describes; ``coterie.play.characters`` keeps the sheets.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import field
from functools import cached_property, lru_cache
from typing import Any, Literal

from coterie.errors import UsageError
from coterie.framework.grammar import suggest
from coterie.records import dataclass

_DROP = str.maketrans("", "", " \t\n_'-")


@lru_cache(maxsize=4096)
def fold(name: str) -> str:
    """The form names are compared in: lower case, without spaces, ``_``, ``-`` or ``'``."""
    return name.translate(_DROP).casefold()


@dataclass(frozen=True)
class TraitSpec:
    """One Trait of a template."""

    name: str
    low: int = 0
    high: int = 5
    default: int = 0
    aliases: tuple[str, ...] = ()
    #: rated up to 10 and rolled alone (Willpower, Humanity, Rage, Gnosis)
    ten_point: bool = False
    #: ``physical`` / ``social`` / ``mental`` for Attributes (v5 impairment), else ``""``
    category: str = ""
    #: a reflexive roll: wound penalties do not apply (Willpower, Virtues)
    reflexive: bool = False
    #: may carry specialties
    specialties: bool = True


@dataclass(frozen=True)
class TraitGroup:
    """A heading of the sheet: ``Attributes``, ``Skills``, ``Disciplines``…"""

    name: str
    traits: tuple[TraitSpec, ...] = ()
    #: players may add Traits of their own to it (a Discipline, a Background)
    custom: bool = False
    custom_low: int = 0
    custom_high: int = 5
    #: listed on the sheet even at 0 (Attributes); other groups list only rated Traits
    always_shown: bool = False


TrackerKind = Literal["points", "level", "boxes"]


@dataclass(frozen=True)
class TrackerSpec:
    """A value play moves. ``points``: a current value up to a maximum (the rating of the Trait
    ``trait``, or a stored maximum starting at ``high``); ``level``: one value ``low``..``high``
    (``high_rule`` names a house rule that caps it, e.g. ``max_hunger``); ``boxes``: a damage
    track of ``size`` boxes (a number, or Trait names added to ``size_offset``) marked with
    ``marks`` (kind, symbol), least severe first."""

    name: str
    command: str | None
    kind: TrackerKind
    low: int = 0
    high: int = 10
    default: int = 0
    trait: str | None = None
    high_rule: str | None = None
    size: int | tuple[str, ...] = 0
    size_offset: int = 0
    marks: tuple[tuple[str, str], ...] = ()
    aliases: tuple[str, ...] = ()
    #: how a roll of it reads: ``rating`` (the Trait), ``current`` (undamaged boxes or current
    #: points, at least one die), ``never``
    rolls: Literal["rating", "current", "never"] = "never"

    def mark_kind(self, word: str) -> tuple[str, str]:
        """The (kind, symbol) a word names (``agg``, ``a``, ``aggravated``), or an error."""
        key = fold(word)
        for kind, symbol in self.marks:
            if key in (fold(kind), fold(kind)[:1], fold(kind)[:3], symbol.casefold()):
                return kind, symbol
        names = ", ".join(kind for kind, _ in self.marks)
        raise UsageError(f"{self.name} takes {names} damage, not `{word[:20]}`")


@dataclass(frozen=True)
class HealthSpec:
    """Wound penalties by number of marked boxes of the tracker ``tracker``: ``levels[n]`` is
    the level name and its dice penalty with ``n`` boxes marked (``None``: no action possible).
    ``impairment`` (v5): dice off when a whole track is marked (Health: Physical pools,
    Willpower: Social and Mental pools)."""

    tracker: str = "Health"
    levels: tuple[tuple[str, int | None], ...] = ()
    impairment: int = 0
    impairment_tracks: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class Effect:
    """A tracker change a settled roll brings (see :attr:`CharacterTemplate.effects`):
    ``add`` to a points/level tracker (negative spends), or ``damage`` boxes of ``mark``."""

    tracker: str
    amount: int
    action: Literal["add", "damage"] = "add"
    mark: str | None = None
    why: str = ""
    #: a spend that would fall below 0 is refused (before the roll, by ``spends``)
    strict: bool = False


@dataclass(frozen=True)
class Spend:
    """An option of ``!roll`` that spends a tracker: checked before the roll (refused when not
    enough is left) and taken after it. ``option`` is the parsed value's key (``willpower``)."""

    option: str
    tracker: str
    amount: int = 1


@dataclass(frozen=True)
class CharacterView:
    """What a rule set's own command reads of the caller's active character
    (``coterie_active_character``; ``!move`` in crossover reads Dexterity from it): its name,
    every Trait's rating by canonical name (custom ones too), and the Health level with its dice
    penalty (``None``: no action possible; ``""`` and 0 without a Health chart), and the current
    value of each points or level tracker this kind of character has (v5 ``!rouse`` reads
    ``Hunger``; none for a mortal)."""

    name: str
    ratings: Mapping[str, int]
    level: str = ""
    penalty: int | None = 0
    trackers: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Degeneration:
    """Stains on a Humanity track (v5): ``stains`` share the ``boxes`` of the track with the
    ``humanity`` level tracker. A Stain that finds no empty box marks ``overflow`` damage
    (tracker, kind) instead and impairs every pool by ``impairment`` dice until the Stains are
    cleared; a change of Humanity and a remorse roll clear them. ``remorse_roll`` is the
    ``!roll`` arguments of the remorse roll, ``{dice}`` filled in (empty: no ``!remorse``)."""

    humanity: str = "Humanity"
    stains: str = "Stains"
    boxes: int = 10
    overflow: tuple[str, str] = ("Willpower", "aggravated")
    impairment: int = 2
    remorse_roll: str = ""


@dataclass(frozen=True)
class CharacterTemplate:
    """What a rule set's character sheet holds (see the module docstring)."""

    variant: str
    groups: tuple[TraitGroup, ...]
    trackers: tuple[TrackerSpec, ...] = ()
    health: HealthSpec | None = None
    #: Traits added in one pool at most (modifiers aside); ``None``: no limit
    max_traits: int | None = 2
    #: ``die`` (+1 die, v5), ``tens`` (10s count double, laia), ``none``
    specialty: Literal["die", "tens", "none"] = "none"
    #: kinds of character (v5: vampire, mortal, ghoul); the first is the default
    kinds: tuple[str, ...] = ()
    #: trackers only some kinds have (``{"Hunger": ("vampire",)}``)
    kind_trackers: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: the positional slot a sheet fills in and a by-name roll skips (v5 ``hunger``: tracker)
    presets: Mapping[str, str] = field(default_factory=dict)
    #: the options of ``!roll`` that spend a tracker
    spends: tuple[Spend, ...] = ()
    #: the tracker changes a settled roll brings; given the outcome (duck-typed, the rule
    #: set's own) and the sheet's trackers, returns :class:`Effect` s
    effects: Callable[[Any], Sequence[Effect]] | None = None
    #: one line per reading chosen where the rule document is silent
    readings: tuple[str, ...] = ()
    #: Stains on the Humanity track, degeneration and remorse (v5); ``None``: no Stains
    degeneration: Degeneration | None = None

    @cached_property
    def traits(self) -> dict[str, TraitSpec]:
        """Every template Trait by folded name."""
        return {fold(t.name): t for g in self.groups for t in g.traits}

    @cached_property
    def group_of(self) -> dict[str, TraitGroup]:
        return {fold(t.name): g for g in self.groups for t in g.traits}

    @cached_property
    def aliases(self) -> dict[str, str]:
        found: dict[str, str] = {}
        for spec in self.traits.values():
            for alias in spec.aliases:
                found[fold(alias)] = spec.name
        for tracker in self.trackers:
            for alias in tracker.aliases:
                found.setdefault(fold(alias), tracker.name)
        return found

    @cached_property
    def _tracker_index(self) -> dict[str, TrackerSpec]:
        index: dict[str, TrackerSpec] = {}
        for tracker in self.trackers:
            for name in (tracker.name, *tracker.aliases):
                index.setdefault(fold(name), tracker)
        return index

    @cached_property
    def _roll_names(self) -> dict[str, str]:
        """Names a pool may use, by folded name: Traits, then the trackers rolled by name."""
        names = {key: spec.name for key, spec in self.traits.items()}
        for tracker in self.trackers:
            if tracker.rolls != "never":
                names.setdefault(fold(tracker.name), tracker.name)
        return names

    @cached_property
    def _trait_names(self) -> dict[str, str]:
        return {key: spec.name for key, spec in self.traits.items()}

    def tracker(self, name: str) -> TrackerSpec | None:
        return self._tracker_index.get(fold(name))

    def tracker_for(self, kind: str, name: str) -> TrackerSpec | None:
        """The tracker called ``name`` if a character of ``kind`` has it."""
        tracker = self.tracker(name)
        if tracker is None:
            return None
        allowed = self.kind_trackers.get(tracker.name)
        return tracker if allowed is None or kind in allowed else None

    def find(self, word: str, custom: Iterable[str] = (), *, rollable: bool = True) -> str:
        """The canonical name ``word`` stands for among the template's Traits, the character's
        custom Traits and (``rollable``) the trackers rolled by name: exact, then alias, then a
        unique prefix; else a friendly error with a suggestion."""
        names = self._roll_names if rollable else self._trait_names
        if custom:
            names = dict(names)
            for name in custom:
                names.setdefault(fold(name), name)
        key = fold(word)
        if not key:
            raise UsageError("a Trait name is missing")
        if key in names:
            return names[key]
        if key in self.aliases and fold(self.aliases[key]) in names:
            return self.aliases[key]
        starting = sorted({name for k, name in names.items() if k.startswith(key)})
        if len(starting) == 1:
            return starting[0]
        shown = word if len(word) <= 24 else word[:23] + "…"
        if starting:
            listed = ", ".join(starting[:5]) + ("…" if len(starting) > 5 else "")
            raise UsageError(f"`{shown}` could be {listed}: write more of the name")
        close = suggest(key, list(names))
        hint = f" — did you mean {names[close]}?" if close else ""
        raise UsageError(f'no Trait "{shown}"{hint}')


def custom_group(template: CharacterTemplate, word: str) -> TraitGroup:
    """The group ``word`` names among those that take custom Traits (prefix accepted)."""
    open_groups = [g for g in template.groups if g.custom]
    key = fold(word)
    for group in open_groups:
        if fold(group.name) == key or fold(group.name).rstrip("s") == key:
            return group
    starting = [g for g in open_groups if fold(g.name).startswith(key)]
    if len(starting) == 1:
        return starting[0]
    names = ", ".join(g.name for g in open_groups) or "none"
    raise UsageError(f"no group `{word[:24]}` takes Traits of your own here (groups: {names})")


def collect_templates(
    listed: Iterable[tuple[str, list[Any]]], bad: Callable[[str, str, str], None]
) -> dict[str, CharacterTemplate]:
    """The character templates the plugins declared, by rule set, from each plugin's
    ``coterie_character_templates`` list in registration order: the first plugin to declare one
    for a rule set keeps it; anything else is reported through ``bad(plugin, hook, problem)``."""
    found: dict[str, CharacterTemplate] = {}
    for plugin, templates in listed:
        for template in templates:
            if not isinstance(template, CharacterTemplate):
                bad(plugin, "coterie_character_templates", f"{template!r} is not a template")
            elif template.variant in found:
                bad(plugin, "coterie_character_templates", f"{template.variant} has one already")
            else:
                found[template.variant] = template
    return found
