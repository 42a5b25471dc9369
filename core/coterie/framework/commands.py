"""Chat commands: the :class:`Command` record plugins return, and the context a handler gets."""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import asdict, field
from typing import TYPE_CHECKING, Any, Protocol

from coterie.dice.sources import DiceSource
from coterie.framework.grammar import CommandLine, Parsed, Pool
from coterie.framework.ids import ID_ALPHABET as ID_ALPHABET
from coterie.framework.ids import ROLL_ID_LENGTH as ROLL_ID_LENGTH
from coterie.framework.ids import SHOWN_ID_LENGTH as SHOWN_ID_LENGTH
from coterie.framework.ids import new_roll_id as new_roll_id
from coterie.framework.ids import shown_id as shown_id
from coterie.framework.message import Message
from coterie.framework.parsing import parse_requests as parse_requests
from coterie.framework.variant import Outcome, RollContext, RoomSettings, SidePart, Variant
from coterie.records import dataclass
from coterie.render.elements import Node, Reply
from coterie.storage.state import RollRecord, RoomState, StateStore, Transaction

if TYPE_CHECKING:
    from coterie.framework.app import Coterie

log = logging.getLogger("coterie")

#: the largest pool whose expected successes are worked out for the roll log at roll time
EXPECTED_MAX_DICE = 40


class PoolResolver(Protocol):
    """Reads Trait names in a roll's pool from a character sheet (``coterie_pool_resolver``)."""

    #: positional slots the sheet fills in (v5 ``hunger``); the words skip them
    preset: dict[str, Any]

    def read(self, token: str) -> Pool:
        """``Strength+Brawl+2`` as a pool of named terms, or a friendly error."""
        ...

    def check(self, parsed: Parsed) -> None:
        """A last check of a parsed roll against the sheet (a Willpower point left to spend)."""
        ...


@dataclass(frozen=True)
class ContestSides:
    """Whose dice are whose in a contest roll between two chat users: the challenger rolls the
    request's actor side, the answerer its ``versus`` side. Kept as JSON by rule sets that
    remember rolls (``dataclasses.asdict``)."""

    contest: str  #: the contest's id
    actor: str  #: the challenger's user key
    actor_name: str
    actor_request: str  #: the challenger's ``!contest`` message, for the roll log
    opponent: str  #: the answerer's user key
    opponent_name: str
    #: ``"actor"`` or ``"opponent"``: only that side rolled (a re-roll of one side's dice)
    only: str | None = None


@dataclass
class CommandContext:
    """Everything a command handler may use."""

    app: Coterie
    message: Message
    line: CommandLine
    settings: RoomSettings
    variant: Variant[Any, Any]
    dice: DiceSource
    #: the room's transaction this command runs in (see :meth:`Coterie._run`), if any
    tx: Transaction | None = None
    #: the id of this command's rolls in the roll log, once something was rolled
    roll_id: str | None = None
    #: the session open in the room, if any (its id)
    session: str | None = None
    rolls: int = 0
    #: the rolls of this command are secret (logged as such, hidden from ``!log`` until revealed)
    secret: bool = False
    #: the scene being played in the room (``!scene start``), if any
    scene: str | None = None
    #: reads Trait names of a roll's pool from the caller's sheet (see :func:`find_resolver`)
    resolver: PoolResolver | None = None
    #: lines plugins add under the command's reply, above its buttons (a tracker a roll moved)
    notes: list[Node] = field(default_factory=list)
    #: the Storyteller character this command rolls for (``!npc roll Guard``: ``guard``), if any
    character: str | None = None
    #: the name a reply gives whoever rolls, when it is not the caller's (``!npc rouse Guard``:
    #: ``Guard``); see :attr:`roller_name`
    speaker: str | None = None

    @property
    def args(self) -> str:
        return self.line.args

    @property
    def roller_name(self) -> str:
        """Whom the reply names as rolling: :attr:`speaker`, else the caller's display name
        (the roll log keeps the caller's, so a secret NPC's name never shows there)."""
        return self.speaker or self.message.display_name

    @property
    def store(self) -> StateStore | Transaction:
        """Where this command reads and writes: its transaction, or the store itself."""
        return self.tx if self.tx is not None else self.app.state

    def state(self, owner: str) -> RoomState:
        """This room's key-value state, namespaced by ``owner`` (use your plugin's name). Inside
        a command it reads and writes through the command's transaction: all of a command's
        changes land together, and none of them when it answers with an error."""
        return RoomState(self.store, owner, self.message.room_key)

    async def roll(self, request: Any, sides: ContestSides | None = None) -> Outcome:
        """Roll a request of the room's variant the way ``!roll`` does: draw the faces, evaluate,
        settle room rules (e.g. a free botch), log it in the roll log, and notify
        ``coterie_after_roll``. Commands that roll should always come through here. A contest
        between two chat users gives its ``sides``: each side's dice are then settled and
        logged as its own player's."""
        variant = self.variant
        outcome: Outcome = variant.roll(request, self.dice)
        context = RollContext(
            settings=self.settings,
            user=sides.actor if sides else self.message.user,
            room=self.message.room_key,
            state=self.state(f"variant.{variant.name}"),
            session=self.session,
            opponent=sides.opponent if sides else None,
            contest=asdict(sides) if sides else None,
            character=self.character,
        )
        outcome = await variant.settle(outcome, context)
        if sides is not None:
            outcome = variant.name_sides(outcome, sides.actor_name, sides.opponent_name)
        if self.roll_id is None:
            self.roll_id = new_roll_id()
        await self.app.host.first_result("coterie_roll_settled", ctx=self, outcome=outcome)
        await self._log(request, outcome, sides)
        await self.app.host.call_async(
            "coterie_after_roll",
            app=self.app,
            message=self.message,
            variant=variant,
            outcome=outcome,
        )
        return outcome

    def _next_id(self) -> str:
        if self.roll_id is None:
            self.roll_id = new_roll_id()
        self.rolls += 1
        return self.roll_id if self.rolls == 1 else f"{self.roll_id}-{self.rolls}"

    async def _log(self, request: Any, outcome: Outcome, sides: ContestSides | None = None) -> None:
        parts = self.variant.contest_sides(outcome) if sides is not None else None
        if sides is not None and parts is not None:
            await self._log_sides(request, outcome, sides, parts)
            return
        variant, message = self.variant, self.message
        # (:meth:`_detail` and :meth:`_next_id` written out: every roll is logged)
        detail = outcome.as_json()  # a fresh dict: completed in place
        flags = variant.flags(outcome)
        if flags:
            detail["flags"] = sorted(flags)
        if self.secret:
            detail["secret"] = True
        if self.scene is not None:
            detail["scene"] = self.scene
        detail["hunger_dice"] = outcome.hunger_dice
        if self.roll_id is None:
            self.roll_id = new_roll_id()
        self.rolls += 1
        record = RollRecord(
            id=self.roll_id if self.rolls == 1 else f"{self.roll_id}-{self.rolls}",
            room=message.room_key,
            user=message.user,
            display_name=message.display_name,
            variant=variant.name,
            request=shorten_request(message.text),
            faces=list(outcome.rolled_faces),
            outcome=outcome.outcome,
            successes=outcome.successes,
            botch=variant.is_botch(outcome),
            expected=expected_successes(variant, request),
            session=self.session,
            detail=detail,
        )
        await (self.tx if self.tx is not None else self.app._state).log_roll(record)

    async def _log_sides(
        self,
        request: Any,
        outcome: Outcome,
        sides: ContestSides,
        parts: tuple[SidePart, SidePart],
    ) -> None:
        """One record per side of a contest, each under its own player, linked by the contest
        id: ``won``, ``lost`` or ``standoff`` once the contest is decided, else (an extended
        contest goes on, or the rule set reports no standing) the side's own result. The
        ``detail`` is the whole roll's JSON, with ``contest`` saying which side this is."""
        standing = self.variant.contest_standing(outcome)
        winner = None if standing is None else standing.winner
        decided = standing is not None and not standing.open
        written = shorten_request(self.message.text)
        actor_text = written if sides.only == "actor" else sides.actor_request
        rows = (
            ("actor", sides.actor, sides.actor_name, actor_text, parts[0], sides.opponent),
            ("opponent", sides.opponent, sides.opponent_name, written, parts[1], sides.actor),
        )
        for side, user, name, text, part, other in rows:
            if sides.only is not None and side != sides.only:
                continue
            if not decided:
                result = part.outcome
            elif winner in ("actor", "opponent"):
                result = "won" if winner == side else "lost"
            else:
                result = "standoff"
            contest = {
                "id": sides.contest,
                "side": side,
                "with": other,
                "result": result,
                "own": part.outcome,
                "hunger": part.hunger,
            }
            await self.store.log_roll(
                RollRecord(
                    id=self._next_id(),
                    room=self.message.room_key,
                    user=user,
                    display_name=name,
                    variant=self.variant.name,
                    request=text,
                    faces=list(part.faces),
                    outcome=result,
                    successes=part.successes,
                    botch=part.botch,
                    expected=None,
                    session=self.session,
                    detail={
                        **self._detail(outcome),
                        "hunger_dice": part.hunger,
                        "contest": contest,
                    },
                )
            )

    def _detail(self, outcome: Outcome) -> dict[str, Any]:
        """The logged detail: the outcome's JSON with the rule set's outcome flags, marked secret
        and with its scene."""
        detail = logged_detail(self.variant, outcome)
        if self.secret:
            detail["secret"] = True
        if self.scene is not None:
            detail["scene"] = self.scene
        return detail


def logged_detail(variant: Variant[Any, Any], outcome: Outcome) -> dict[str, Any]:
    """The roll log's ``detail``: the outcome's JSON object, plus ``flags`` (sorted) when the
    rule set flags the outcome (``Variant.outcome_kinds``): what export and ``!stats`` read
    without knowing the rule set."""
    detail = outcome.as_json()
    flags = variant.flags(outcome)
    if flags:
        detail["flags"] = sorted(flags)
    return detail


def shorten_request(text: str, limit: int = 300) -> str:
    """The command as written, for the roll log (bounded)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


#: requests whose expected successes :func:`expected_successes` keeps (oldest dropped first)
EXPECTED_CACHE_SIZE = 4096
_expected_cache: dict[tuple[type, str, Any], float | None] = {}
#: the same, by the request object itself: id → (request, rule set, value). A roll written again
#: is built once (:mod:`coterie.framework.requestcache`), so it is the same object, found here
#: without hashing it (a request's hash walks its dataclasses in Python, every time)
_expected_by_id: dict[int, tuple[Any, Variant[Any, Any], float | None]] = {}


def expected_successes(variant: Variant[Any, Any], request: Any) -> float | None:
    """The mean ``successes`` of ``request`` from the odds engine, when it can tell cheaply.

    Remembered per (rule set, request) for requests that can be hashed (every built-in rule
    set's): the odds engine caches its tables, but wrapping one up into a distribution for the
    request still costs tens of microseconds, on every roll."""
    seen = _expected_by_id.get(id(request))
    if seen is not None and seen[0] is request and seen[1] is variant:
        return seen[2]  # (held here: the id names no other object while the entry lives)
    value = _expected_hashed(variant, request)
    if not _immutable(type(request)):  # (a request changed in place would be another one)
        return value
    try:
        hash(request)  # (only what hashes is remembered: no list inside to change)
    except TypeError:
        return value
    if len(_expected_by_id) >= EXPECTED_CACHE_SIZE:
        _expected_by_id.pop(next(iter(_expected_by_id)))
    _expected_by_id[id(request)] = (request, variant, value)
    return value


#: request types by whether they are frozen dataclasses (what :func:`expected_successes` may
#: remember by identity)
_FROZEN: dict[type, bool] = {}


def _immutable(kind: type) -> bool:
    frozen = _FROZEN.get(kind)
    if frozen is None:
        params = getattr(kind, "__dataclass_params__", None)
        frozen = _FROZEN[kind] = bool(params is not None and params.frozen)
    return frozen


def _expected_hashed(variant: Variant[Any, Any], request: Any) -> float | None:
    try:
        key = (type(variant), variant.name, request)
        return _expected_cache[key]
    except TypeError:  # an unhashable request: worked out every time
        return _expected(variant, request)
    except KeyError:
        pass
    value = _expected(variant, request)
    if len(_expected_cache) >= EXPECTED_CACHE_SIZE:
        _expected_cache.pop(next(iter(_expected_cache)))
    _expected_cache[key] = value
    return value


def _expected(variant: Variant[Any, Any], request: Any) -> float | None:
    try:
        if variant.dice_count(request) > EXPECTED_MAX_DICE:
            return None
        distribution = variant.odds(request)
    except Exception:  # a rule set without odds, or odds for this request: not an error
        return None
    return distribution.successes_sum() / distribution.total


async def roll_reply(ctx: CommandContext, *, usage: str | None = None) -> Reply:
    """What ``!roll`` does: parse every roll, roll each through :meth:`CommandContext.roll`, lay
    the reply out with the rule set's ``compose``. A rule set's own roll command (laia's
    ``?throw``) calls this with its usage line."""
    await find_resolver(ctx)
    taken = await ctx.app.host.first_result("coterie_roll_command", ctx=ctx, usage=usage)
    if taken is not None:  # a plugin answers this roll itself (play's `for NAME`, `retry NAME`)
        return taken  # type: ignore[no-any-return]
    requests = parse_requests(ctx, usage=usage)
    outcomes = [await ctx.roll(request) for request in requests]
    body = ctx.variant.compose(outcomes, ctx.message.display_name, ctx.line.comment)
    return Reply(body, meta={"variant": ctx.variant.name})


async def find_resolver(ctx: CommandContext) -> None:
    """Ask ``coterie_pool_resolver`` for a reader of Trait names (a character sheet) for this
    roll command; kept in ``ctx.resolver``. A plugin answers ``None`` (cheaply, without any
    read) for a roll written in numbers only. A reader the command set itself (an NPC's sheet)
    is kept; the hook still sees it, to complete it (the sheets named after ``vs``)."""
    found = await ctx.app.host.first_result("coterie_pool_resolver", ctx=ctx)
    if ctx.resolver is None:
        ctx.resolver = found


Result = Reply | list[Node]
Handler = Callable[[CommandContext], Awaitable[Result] | Result]


@dataclass(frozen=True)
class Command:
    """A chat command. ``variants`` limits it to rooms on those rule sets (empty: every room)."""

    name: str
    summary: str
    usage: str
    handler: Handler
    aliases: tuple[str, ...] = ()
    variants: tuple[str, ...] = ()
    #: longer help shown by ``!help NAME``
    details: str = ""
    #: set by the plugin host: which plugin provided it
    plugin: str = field(default="", compare=False)
    #: run in one transaction of the room's state (all its changes or none, one command per
    #: room at a time); off for commands that only read, so slow work holds no lock
    transaction: bool = True
    #: for a command limited to some rule sets: whether it takes these arguments; one that
    #: declines leaves them to the unrestricted command of the same name (d6's ``!contest POOL
    #: vs POOL`` declines ``!contest @user ...``, which play's contest between users answers)
    applies: Callable[[str], bool] | None = field(default=None, compare=False)
    #: calls written right, shown by ``!help NAME`` (two, ideally). Each is one line, or several
    #: separated by a newline when it takes a few messages; ``bob: `` before a line means bob
    #: writes it. ``{roll}``, ``{roll2}`` (the rule set's ``!roll`` examples), ``{pool}`` (the
    #: first one's pool), ``{variant}`` and ``{difficulty}`` are the room's. A test runs them all.
    examples: tuple[str, ...] = ()
    #: whether a rule set can do what this command does (``None``: every one can); ``!help``
    #: lists it only in rooms whose rule set can (e.g. ``!extended`` needs extended actions)
    supports: Callable[[Variant[Any, Any]], bool] | None = field(default=None, compare=False)
    #: the usage line in a room on a given rule set, when it depends on the rule set's grammar
    #: (``!resist``: a V5 pool takes Hunger, a revised one a difficulty); else :attr:`usage`
    usage_for: Callable[[Variant[Any, Any]], str] | None = field(default=None, compare=False)
    #: the Storyteller may run it for an NPC, ``!npc NAME-OF-COMMAND NPC ARGS`` (``!npc rouse
    #: Guard 2``): the NPC's sheet stands for the caller's active character
    #: (``coterie_active_character``, the trackers its rolls move) and the reply names the NPC
    for_npcs: bool = False

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)

    def usage_in(self, variant: Variant[Any, Any]) -> str:
        """The usage line shown in a room on ``variant``."""
        return self.usage if self.usage_for is None else self.usage_for(variant)

    def available_in(self, variant: str) -> bool:
        return not self.variants or variant in self.variants

    def supported_by(self, variant: Variant[Any, Any]) -> bool:
        """Whether ``variant`` can do what this command does (see :attr:`supports`)."""
        return self.supports is None or self.supports(variant)

    def takes(self, args: str | None) -> bool:
        """Whether this command answers ``args`` (``None``: any arguments, e.g. for ``!help``)."""
        return args is None or self.applies is None or self.applies(args)

    def clashes_with(self, other: Command) -> bool:
        """Both would answer the same word in the same room. (A command restricted to some rule
        sets may reuse the name of an unrestricted one: it takes over in those rooms.)"""
        if not set(self.names) & set(other.names):
            return False
        if not self.variants or not other.variants:
            return not self.variants and not other.variants
        return bool(set(self.variants) & set(other.variants))


#: one message of an example: who writes it (``None``: whoever reads the help) and the text
ExampleStep = tuple[str | None, str]


def _first_trait(variant: Variant[Any, Any]) -> str:
    """A Trait the rule set's characters have, for examples (``Strength``; d6: ``Physical``)."""
    template = variant.character_template
    for group in template.groups if template is not None else ():
        for trait in group.traits:
            return str(trait.name)
    return "Strength"


def example_steps(example: str, variant: Variant[Any, Any], prefix: str = "!") -> list[ExampleStep]:
    """An example of :attr:`Command.examples` as it reads in a room on ``variant`` with
    ``prefix``: its messages, each with its author."""
    rolls = variant.roll_examples()
    values = {
        "roll": rolls[0],
        "roll2": rolls[1] if len(rolls) > 1 else rolls[0],
        "pool": rolls[0].split()[0],
        "variant": variant.name,
        "difficulty": str(
            variant.default_difficulty
            if variant.default_difficulty is not None
            else variant.difficulty_range[0]
        ),
        "init": _initiative_example(variant),
        "trait": _first_trait(variant),
        "id": "ROLL-ID",
    }
    steps: list[ExampleStep] = []
    for line in example.format(**values).splitlines():
        who, sep, text = line.partition(": ")
        if not sep or " " in who or who.startswith(("!", "?")):
            who, text = "", line
        text = text.strip()
        if text.startswith("!"):
            text = prefix + text[1:]
        steps.append((who or None, text))
    return steps


def _initiative_example(variant: Variant[Any, Any]) -> str:
    """What follows ``!init add NAME`` in an example, from the rule set's usage line
    (``DEX+WITS [rage N]`` reads ``3+2``; ``ranged | close | other`` reads ``close``)."""
    usage = variant.initiative_usage().partition(" NAME")[2]
    usage = re.sub(r"\s*\[[^\]]*\]", "", usage).strip()
    usage = re.sub(r"(\w+)(?: \| \w+)+", r"\1", usage)
    return usage.replace("DEX+WITS", "3+2")


def show_example(steps: list[ExampleStep]) -> str:
    """``!roll 7 6``, or ``alice: !contest @bob 7`` then ``bob: !resist 7``: for a help line."""
    return " then ".join(f"`{who + ': ' if who else ''}{text}`" for who, text in steps)
