"""The rules-engine interface every rule set ("variant") implements.

A variant is an object with a name, die sides, a default difficulty, help text, a chat
:class:`~coterie.grammar.Grammar` for ``!roll``, and a **pure** :meth:`Variant.evaluate` from
(request, faces) to an :class:`Outcome`. Rolling is drawing faces from an injected
:class:`~coterie.dice.DiceSource` and evaluating them, so a physical roll can be replayed exactly.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import field
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from coterie.dice.sources import DiceSource
from coterie.framework.grammar import Grammar, Parsed
from coterie.records import dataclass
from coterie.render.elements import BR, Bold, Node, Text, italic

if TYPE_CHECKING:
    from coterie.dice.odds import Distribution


@dataclass(frozen=True)
class HouseRule:
    """A per-room toggle a variant declares; set in the config's ``house_rules`` tables."""

    name: str
    default: bool | int
    help: str
    #: the range of a numeric rule
    minimum: int | None = None
    maximum: int | None = None

    def check(self, value: bool | int) -> bool | int:
        """``value`` if this rule can take it, else ``ValueError`` saying what it takes."""
        if isinstance(self.default, bool):
            if value not in (True, False):  # 1 and 0 read as true and false
                raise ValueError(f"{self.name} is true or false")
            return bool(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{self.name} is a whole number")
        low, high = self.minimum, self.maximum
        if (low is not None and value < low) or (high is not None and value > high):
            raise ValueError(f"{self.name} goes from {low} to {high}, not {value}")
        return value

    def read(self, word: str) -> bool | int:
        """A value written as text (``on``/``off``/``true``/``false``/``yes``/``no``, a number),
        checked; ``ValueError`` saying what the rule takes. What ``coterie roll --option`` uses."""
        word = word.strip().lower()
        if isinstance(self.default, bool):
            if word in ("on", "true", "yes", "1"):
                return True
            if word in ("off", "false", "no", "0"):
                return False
            raise ValueError(f"{self.name} is on or off, not {word!r}")
        try:
            number = int(word)
        except ValueError:
            raise ValueError(f"{self.name} is a whole number, not {word!r}") from None
        return self.check(number)


@dataclass(frozen=True)
class RoomSettings:
    """The settings in force in one room (config defaults, overridden per room)."""

    variant: str
    prefix: str = "!"
    default_difficulty: int | None = None
    house_rules: Mapping[str, bool | int] = field(default_factory=dict)
    #: the chronicle the room belongs to when the Storyteller linked it to another room's
    #: (``!chronicle join``); ``None``: the room is its own chronicle. Commands of the rooms of
    #: one chronicle run under its lock (``Coterie._run``): they share characters
    chronicle: str | None = None

    def rule(self, variant: Variant[Any, Any], name: str) -> bool | int:
        """The value of a house rule of ``variant`` in this room, falling back to its default."""
        for rule in variant.house_rules:
            if rule.name == name:
                return self.house_rules.get(name, rule.default)
        raise KeyError(f"{variant.name} declares no house rule {name!r}")


class Outcome(ABC):
    """The result of one roll command: everything a renderer and the JSON contract need."""

    variant: str
    #: the faces in the order rolled (for the JSON contract and the roll log)
    faces: tuple[int, ...]
    #: the result name, e.g. ``success``, ``failure``, ``botch``
    outcome: str
    #: the successes value as the variant defines it for ``coterie roll --json``
    successes: int
    #: the degree/quality word, or ``None``
    degree: str | None

    @abstractmethod
    def render(self) -> list[Node]:
        """The neutral element tree for this result (without the caller's name or comment)."""

    def extra_json(self) -> dict[str, Any]:
        """Variant-specific keys added to the JSON object."""
        return {}

    @property
    def rolled_faces(self) -> tuple[int, ...]:
        """Every face of the roller's own dice, for the roll log (a rule set whose
        :attr:`faces` leave some out, such as V5's Hunger dice, overrides this)."""
        return self.faces

    @property
    def hunger_dice(self) -> int:
        """How many of the last :attr:`rolled_faces` are Hunger dice (V5); 0 elsewhere."""
        return 0

    def as_json(self) -> dict[str, Any]:
        """The machine interface object (a stable contract; see ``docs/cli.md``)."""
        return {
            "variant": self.variant,
            "faces": list(self.faces),
            "successes": self.successes,
            "outcome": self.outcome,
            "degree": self.degree,
            **self.extra_json(),
        }


#: the outcome flags a rule set may declare (:class:`OutcomeKind`): a critical win, a messy one
#: (V5's Hunger), the rule set's worst result ("botch-like": what ``!stats`` counts as a botch),
#: an exceptional success
FLAGS = ("critical", "messy", "botch", "exceptional")


@dataclass(frozen=True)
class OutcomeKind:
    """One ``outcome`` word a rule set can return, with what it means for code that knows no
    rule set: charts colour bars by it, the roll log and ``!stats`` count by it, export prints
    it."""

    name: str
    #: counts as a success (charts' "chance of success", win rates)
    win: bool = False
    #: among :data:`FLAGS`
    flags: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        unknown = set(self.flags) - set(FLAGS)
        if unknown:
            raise ValueError(f"unknown outcome flags {sorted(unknown)}; known: {FLAGS}")

    @property
    def label(self) -> str:
        """The name for people: ``messy_critical`` -> ``messy critical``."""
        return self.name.replace("_", " ")


#: what a rule set returns unless it declares otherwise
DEFAULT_OUTCOMES = (
    OutcomeKind("success", win=True),
    OutcomeKind("failure"),
    OutcomeKind("botch", flags=frozenset({"botch"})),
)


_NO_FLAGS: frozenset[str] = frozenset()

RequestT = TypeVar("RequestT")
OutcomeT = TypeVar("OutcomeT", bound=Outcome)


@dataclass
class RollContext:
    """What a variant may consult after a roll is evaluated (house rules, room state)."""

    settings: RoomSettings
    user: str
    room: str
    #: a small key-value view of the room's state, see :class:`coterie.state.RoomState`
    state: Any = None
    #: the id of the session open in the room (``!session start``), if any
    session: str | None = None
    #: in a contest between two chat users: the answering player (``user`` is then the
    #: challenger, whose pool is the request's actor side)
    opponent: str | None = None
    #: that contest's sides as JSON (:class:`coterie.framework.commands.ContestSides`), for a
    #: rule set that remembers the roll for later (V5's Willpower re-roll)
    contest: Mapping[str, Any] | None = None
    #: the Storyteller character rolled for (``!npc roll Guard``: ``guard``, folded), if any:
    #: ``user`` is then the Storyteller who rolls for them
    character: str | None = None


@dataclass(frozen=True)
class SidePart:
    """One side's share of a contest roll, for the roll log: its own faces (regular then
    Hunger), its successes and result, whether it botched (a free botch does not count) and how
    many of its last faces are Hunger dice."""

    faces: tuple[int, ...]
    successes: int
    outcome: str
    botch: bool = False
    hunger: int = 0


@dataclass(frozen=True)
class Progress:
    """Where an extended action stands after a roll toward it."""

    progress: int
    target: int
    #: the roll botched and threw the progress away
    wiped: bool = False

    @property
    def done(self) -> bool:
        return self.progress >= self.target


@dataclass(frozen=True)
class Standing:
    """Where a contest between two chat users stands after a roll: the winner (``"actor"``,
    ``"opponent"``, or ``None`` while an extended contest goes on / on a standoff), and for an
    extended contest each side's tally toward ``target`` (a seesaw keeps one ``balance``: the
    challenger's lead, negative when the opponent leads)."""

    winner: str | None
    actor: int = 0
    opponent: int = 0
    target: int | None = None
    #: an extended contest goes on after this roll
    open: bool = False


@dataclass(frozen=True)
class InitiativeEntry:
    """One combatant's place in the order of a turn, as a rule set works it out
    (:meth:`Variant.initiative`)."""

    name: str
    #: compared element by element: the higher acts first; combatants still equal roll one
    #: die apiece, the highest first, until the tie is broken (``!init`` does that)
    key: tuple[int, ...]
    #: how the place was worked out, shown in the order, e.g. ``Dex+Wits 6 + 8 = 14``
    shown: str
    #: extra actions this turn (Celerity, Rage), taken after everyone's first action
    extra: int = 0


class Variant(ABC, Generic[RequestT, OutcomeT]):
    """One rule set. Subclass it in a plugin and return an instance from ``coterie_variants``."""

    #: short unique name used in config and chat (``!variant revised``)
    name: ClassVar[str]
    #: human title, e.g. "Vampire: the Masquerade, Revised"
    title: ClassVar[str]
    #: die sides (10 for d10)
    sides: ClassVar[int] = 10
    #: difficulty used when the roll and the room name none
    default_difficulty: ClassVar[int | None] = None
    #: the lowest and highest difficulty this rule set accepts
    difficulty_range: ClassVar[tuple[int, int]] = (2, 10)
    #: a difficulty above the range is rolled as its highest (d6, 001), instead of refused
    difficulty_capped: ClassVar[bool] = False
    #: one line for listings
    summary: ClassVar[str] = ""
    #: the ``!roll`` grammar
    grammar: ClassVar[Grammar]
    #: the arguments of ``!roll`` calls written right (two or more), e.g. ``("7 6", "3+4 8 wp")``:
    #: the welcome banner, ``!help`` and errors that teach show them (a test runs every one)
    examples: ClassVar[tuple[str, ...]] = ()
    #: per-room toggles with defaults
    house_rules: ClassVar[tuple[HouseRule, ...]] = ()
    #: the character template a plugin declared for this rule set (set by the app; ``None``:
    #: no characters in rooms on it)
    character_template: Any = None
    #: command prefixes that also work in rooms on this rule set, besides the room's own
    extra_prefixes: ClassVar[tuple[str, ...]] = ()
    #: extra words ``!odds`` understands in rooms on this rule set (word -> what it asks for);
    #: the ones given reach :meth:`odds` as ``options``
    odds_options: ClassVar[Mapping[str, str]] = {}
    #: teamwork over several messages (``!team start``): ``"sum"`` when each helper rolls and
    #: the successes add up (:meth:`team` gives the verdict), ``"dice"`` when helpers add dice
    #: to the leader's one roll (:meth:`prepare_helpers`), ``None`` without teamwork
    team_mode: ClassVar[str | None] = None
    #: every ``outcome`` word this rule set returns, with its flags (see :class:`OutcomeKind`)
    outcome_kinds: ClassVar[tuple[OutcomeKind, ...]] = DEFAULT_OUTCOMES
    #: a contest between chat users may have a TARGET (extended, or a d6 seesaw)
    extended_contests: ClassVar[bool] = False
    #: the notable results ``!stats`` counts for this rule set: (outcome name, label); the name
    #: ``botch`` counts the rolls :meth:`is_botch` flags
    tallies: ClassVar[tuple[tuple[str, str], ...]] = (("botch", "botch"),)
    #: :meth:`build` depends only on its arguments (and the rule set's fixed grammar): the app
    #: may then reuse a request built before from the same roll and settings
    #: (:mod:`coterie.framework.requestcache`); leave it off for a ``build`` that reads more
    pure_build: ClassVar[bool] = False

    @abstractmethod
    def build(self, parsed: Parsed, settings: RoomSettings) -> RequestT:
        """Turn parsed chat (or CLI) arguments into a request; raise ``UsageError`` on bad input."""

    @abstractmethod
    def dice_count(self, request: RequestT) -> int:
        """How many dice the request rolls (core checks it against the configured limit)."""

    @abstractmethod
    def evaluate(self, request: RequestT, faces: Sequence[int]) -> OutcomeT:
        """The pure rule: faces in roll order -> outcome. No I/O, no randomness."""

    def roll(self, request: RequestT, dice: DiceSource) -> OutcomeT:
        """Draw the faces and evaluate them. Variants whose dice count depends on the faces
        (re-rolls until a tie is broken, say) override this and draw more from ``dice``."""
        return self.evaluate(request, dice.roll(self.dice_count(request), self.sides))

    def odds(self, request: RequestT, options: frozenset[str] = frozenset()) -> Distribution:
        """The exact distribution of the result of ``request``: every outcome and ``successes``
        value as :meth:`evaluate` would give them (see docs/odds.md). ``options`` are words of
        :attr:`odds_options` the player added. A rule set without odds keeps this default, which
        says so politely."""
        from coterie.errors import UsageError

        raise UsageError(f"the {self.name} rules cannot work out odds yet")

    async def settle(self, outcome: OutcomeT, context: RollContext) -> OutcomeT:
        """Apply rules that need room state (e.g. a free first botch); default: unchanged."""
        return outcome

    def compose(self, outcomes: Sequence[OutcomeT], who: str, comment: str | None) -> list[Node]:
        """The whole reply to a roll command. By default: the roller's name and comment on the
        first line, then each outcome. A rule set whose players expect another layout overrides
        it."""
        body: list[Node] = [Bold((Text(who),))]  # (``bold(who)``, without its checks)
        if comment:
            body += [Text(" — "), italic(comment)]
        for outcome in outcomes:
            body.append(BR)
            body += outcome.render()
        return body

    def check_team(self, requests: Sequence[RequestT]) -> None:
        """Raise ``UsageError`` unless ``!team`` can roll these members' requests (called before
        anything is rolled). By default a rule set has no teamwork of separate rolls."""
        from coterie.errors import UsageError

        raise UsageError(f"the {self.name} rules have no teamwork of separate rolls")

    def team(self, outcomes: Sequence[OutcomeT]) -> list[Node]:
        """The teamwork line for the members' rolled outcomes (after :meth:`check_team`)."""
        return []

    def degree_label(self, successes: int) -> str | None:
        """The rule set's word for a total of ``successes`` (teamwork over several messages
        without a target), e.g. ``Exceptional``; ``None`` when it has none."""
        return None

    # --- actions that span messages (core's !extended, !team start, !contest, retry NAME) -----

    def is_botch(self, outcome: OutcomeT) -> bool:
        """Whether ``outcome`` counts as a botch in the roll log and ``!stats``: by default, an
        outcome declared with the ``botch`` flag."""
        return "botch" in self.flags(outcome)

    def stats_tallies(self) -> tuple[tuple[str, str], ...]:
        """What ``!stats`` counts: :attr:`tallies` when the rule set sets them, else every
        declared outcome with a flag (the ``botch`` one counted through :meth:`is_botch`)."""
        own = any("tallies" in vars(cls) for cls in type(self).__mro__ if cls is not Variant)
        if own or self.outcome_kinds is DEFAULT_OUTCOMES:
            return self.tallies
        return tuple((kind.name, kind.label) for kind in self.outcome_kinds if kind.flags)

    def outcome_kind(self, name: str) -> OutcomeKind | None:
        """The declared kind of the outcome word ``name``, if any."""
        for kind in self.outcome_kinds:
            if kind.name == name:
                return kind
        return None

    def flags(self, outcome: OutcomeT) -> frozenset[str]:
        """The flags of one outcome: those its word is declared with. A rule set whose flags
        depend on more than the word overrides this."""
        own = getattr(self, "__dict__", None)  # (the declared kinds' flags by word, kept)
        if own is None or type(self).outcome_kind is not Variant.outcome_kind:
            kind = self.outcome_kind(outcome.outcome)
            return kind.flags if kind is not None else _NO_FLAGS
        table: tuple[object, dict[str, frozenset[str]]] | None = own.get("_flags_by_word")
        if table is None or table[0] is not self.outcome_kinds:
            words = {k.name: k.flags for k in reversed(self.outcome_kinds)}  # (the first wins)
            table = own["_flags_by_word"] = (self.outcome_kinds, words)
        return table[1].get(outcome.outcome, _NO_FLAGS)

    def prepare_extended(self, parsed: Parsed, target: int, progress: int) -> None:
        """Turn a parsed ``!roll`` into a roll toward an extended action that needs ``target``
        successes and has ``progress`` so far, or raise ``UsageError`` when the rule set has no
        extended actions."""
        from coterie.errors import UsageError

        raise UsageError(f"the {self.name} rules have no extended actions")

    def extended_progress(self, outcome: OutcomeT) -> Progress | None:
        """The extended action's standing after a roll made through :meth:`prepare_extended`."""
        return None

    def prepare_retry(self, parsed: Parsed, failures: int) -> None:
        """Make a parsed roll another attempt at a task failed ``failures`` times before (the
        rule set raises the difficulty by its schedule), or raise ``UsageError``."""
        from coterie.errors import UsageError

        raise UsageError(f"the {self.name} rules have no difficulty schedule for trying again")

    def prepare_helpers(self, parsed: Parsed, helpers: int) -> None:
        """With :attr:`team_mode` ``"dice"``: add ``helpers`` helpers to the leader's roll."""
        from coterie.errors import UsageError

        raise UsageError(f"the {self.name} rules have no teamwork that adds dice to one roll")

    def prepare_contest(
        self, actor: Parsed, opponent: Parsed, target: int | None, standing: Standing | None
    ) -> Parsed:
        """One roll of a contest between two chat users: the challenger's parsed pool and the
        opponent's (read with :attr:`grammar`'s ``versus`` grammar), with the running standing
        of an extended contest to ``target``. By default a simple resisted roll."""
        from coterie.errors import UsageError

        if self.grammar.versus is None:
            raise UsageError(f"the {self.name} rules have no contests between two characters")
        if target is not None:
            raise UsageError(f"the {self.name} rules have no extended contests; leave out TARGET")
        actor.versus = opponent
        return actor

    def contest_standing(self, outcome: OutcomeT) -> Standing | None:
        """Who won a contest roll made through :meth:`prepare_contest` (and the tallies)."""
        return None

    def initiative_usage(self) -> str:
        """How ``!init add`` is written in rooms on this rule set (empty: no initiative)."""
        return ""

    def initiative(self, name: str, words: Sequence[str], dice: DiceSource) -> InitiativeEntry:
        """One combatant's initiative from the words after ``!init add NAME`` (any die it
        needs drawn from ``dice``), or ``UsageError`` when the words don't read or the rule set
        has no initiative. By default a rule set has none."""
        from coterie.errors import UsageError

        raise UsageError(f"the {self.name} rules have no initiative yet")

    def contest_sides(self, outcome: OutcomeT) -> tuple[SidePart, SidePart] | None:
        """The challenger's and the answerer's parts of a contest roll, so that each is logged
        under its own player; ``None`` logs the roll as one record (a rule set without
        contests between chat users)."""
        return None

    def name_sides(self, outcome: OutcomeT, actor: str, opponent: str) -> OutcomeT:
        """``outcome`` of a contest between two chat users, told the players' names so that its
        reply names them instead of saying "you" and "the opposition"; default: unchanged."""
        return outcome

    def hidden_difficulty(self, value: int) -> int:
        """``value`` as a Difficulty the Storyteller keeps secret (``!ask``), checked like the
        difficulty of a roll: ``ValueError`` saying what the rule set takes. A rule set that rolls
        a difficulty above its range as its highest (:attr:`difficulty_capped`, d6) takes it."""
        low, high = self.difficulty_range
        if self.difficulty_capped and value > high:
            return value
        if not low <= value <= high:
            more = f" (more counts as {high})" if self.difficulty_capped else ""
            raise ValueError(
                f"a {self.name} Difficulty goes from {low} to {high}{more}, not {value}"
            )
        return value

    def room_difficulty(self, settings: RoomSettings) -> int | None:
        """The room's default difficulty when it fits this rule set, else the rule set's own
        (a room that switched rule sets may carry a default meant for another one)."""
        low, high = self.difficulty_range
        value = settings.default_difficulty
        if value is not None and low <= value <= high:
            return value
        return self.default_difficulty

    def roll_examples(self) -> tuple[str, ...]:
        """:attr:`examples`, else the grammar's one example, else a bare pool."""
        return self.examples or ((self.grammar.example,) if self.grammar.example else ("5",))

    def help_notes(self) -> list[Node]:
        """Lines added at the foot of the bare ``!help`` in rooms on this rule set."""
        return []

    def help_topics(self) -> Mapping[str, list[Node]]:
        """Extra ``!help TOPIC`` pages of this rule set (e.g. a ratings table), by topic name."""
        return {}

    def help(self) -> list[Node]:
        """The ``!help roll`` text for this variant."""
        from coterie.render.elements import BR, Text, code

        return [code(self.grammar.usage), BR, Text(self.summary)]
