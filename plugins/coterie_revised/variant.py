"""The ``revised`` rule set as a coterie variant: chat grammar, requests, outcomes, rendering."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from coterie.dice import d10
from coterie.dice.odds import Distribution, require_rules
from coterie.errors import UsageError
from coterie.framework.grammar import Grammar, Option, Parsed
from coterie.framework.variant import HouseRule, Outcome, RollContext, RoomSettings, Variant
from coterie.records import dataclass, once
from coterie.render.elements import BR, Bold, Node, Text, bold, code, italic
from coterie.rulekit import pools
from coterie.rulekit.pools import POOL, WILLPOWER, difficulty_option, difficulty_slot, plural
from coterie_revised import rules
from coterie_revised.odds import odds as exact_odds
from coterie_revised.requests import RevisedRequest, Side

DIFFICULTY = difficulty_slot(rules.MIN_DIFFICULTY, rules.MAX_DIFFICULTY, rules.DEFAULT_DIFFICULTY)


#: two ``!roll`` calls written right, for help and for errors that teach
EXAMPLES = ("7 6", "3+4 8 wp")

GRAMMAR = Grammar(
    example=EXAMPLES[0],
    usage="!roll POOL [DIFFICULTY] [wp] [auto] [multi N [action K]] [retry N] "
    "[ext TARGET [progress P]] [vs POOL [DIFFICULTY] [wp]] [# comment]",
    positionals=(POOL, DIFFICULTY),
    options=(
        difficulty_option(rules.MIN_DIFFICULTY, rules.MAX_DIFFICULTY),
        WILLPOWER,
        pools.NO_SPECIALTY,
        Option("auto", "flag", "take an automatic (marginal) success instead of rolling"),
        Option(
            "multi",
            "int",
            "this turn has N actions: the first loses N dice",
            aliases=("actions",),
            minimum=2,
            maximum=20,
        ),
        Option(
            "action",
            "int",
            "which of the multiple actions this is (default 1)",
            minimum=1,
            maximum=20,
            metavar="K",
        ),
        Option(
            "retry",
            "int",
            "earlier failed attempts at this task: difficulty +N",
            minimum=0,
            maximum=20,
        ),
        Option(
            "ext",
            "int",
            "extended action needing TARGET successes",
            aliases=("extended",),
            minimum=1,
            maximum=1000,
            metavar="TARGET",
        ),
        Option(
            "progress",
            "int",
            "successes already gathered toward the target",
            minimum=0,
            maximum=1000,
            metavar="P",
        ),
    ),
    versus=Grammar(
        usage="vs POOL [DIFFICULTY] [wp] [progress P]",
        positionals=(POOL, DIFFICULTY),
        options=(
            WILLPOWER,
            pools.NO_SPECIALTY,
            Option(
                "progress",
                "int",
                "the opponent's tally so far (extended and resisted)",
                minimum=0,
                maximum=1000,
                metavar="P",
            ),
        ),
        named_traits=rules.TEN_POINT_TRAITS,
        named_trait_rule=pools.TEN_POINT_RULE,
    ),
    named_traits=rules.TEN_POINT_TRAITS,
    named_trait_rule=pools.TEN_POINT_RULE,
)


HOUSE_RULES = (
    HouseRule(
        "first_botch_free",
        False,
        "the first botch of each player's session counts as a plain failure",
    ),
    HouseRule("trying_again", True, "`retry N` raises the difficulty by N after failed attempts"),
    HouseRule("auto_success", True, "`auto` may take an automatic success when pool >= difficulty"),
    HouseRule("botch_wipes_extended", True, "a botch throws away an extended action's progress"),
    HouseRule("willpower_cancellable", False, "1s may cancel the Willpower success"),
)


@dataclass(frozen=True)
class RevisedOutcome(Outcome):
    request: RevisedRequest
    actor: rules.PoolRoll | None
    opponent: rules.PoolRoll | None = None
    free_botch: bool = False
    #: the opposing side's botch is its player's free first botch of the session
    opponent_free_botch: bool = False
    variant: str = "revised"
    #: a contest between two chat users: the challenger's and the answerer's names
    names: tuple[str, str] | None = None

    @once
    def faces(self) -> tuple[int, ...]:  # type: ignore[override]
        return self.actor.faces if self.actor else ()

    @once
    def botch(self) -> bool:
        return self.actor is not None and self.actor.botch and not self.free_botch

    @once
    def outcome(self) -> str:  # type: ignore[override]
        if self.actor is None:
            return "success"
        if self.botch:
            return "botch"
        return "success" if self.actor.net > 0 else "failure"

    @once
    def successes(self) -> int:  # type: ignore[override]
        if self.actor is None:
            return rules.AUTOMATIC_SUCCESSES
        return self.actor.net if self.outcome == "success" else 0

    @once
    def degree(self) -> str | None:  # type: ignore[override]
        """The degree of success of a simple action (000 Degrees of Success). A resisted
        action's winner has only the successes beyond the other side's: their degree, if the
        actor won; an extended action's rolls add up to a goal and take none."""
        resisted = self.resisted
        if resisted is not None:
            return rules.degree(resisted.net) if resisted.winner == "actor" else None
        if self.extended is not None:
            return None
        return rules.degree(self.successes)

    @once
    def resisted(self) -> d10.Resisted | None:
        if self.actor is None or self.opponent is None:
            return None
        return d10.Resisted(self.successes, 0 if self.opponent_botch else self.opponent.net)

    @once
    def opponent_botch(self) -> bool:
        """The opposing side botched (and it was not that player's free botch)."""
        return self.opponent is not None and self.opponent.botch and not self.opponent_free_botch

    @once
    def extended(self) -> d10.Extended | None:
        target = self.request.target
        if target is None or self.request.versus is not None or self.actor is None:
            return None
        state = d10.Extended(target, progress=self.request.actor.progress)
        return d10.extended_step(
            state, self.successes, self.botch, botch_wipes=self.request.botch_wipes
        )

    @once
    def contest(self) -> d10.ExtendedResisted | None:
        request = self.request
        if request.target is None or request.versus is None or not self.actor or not self.opponent:
            return None
        state = d10.ExtendedResisted(
            request.target, actor=request.actor.progress, opponent=request.versus.progress
        )
        return d10.extended_resisted_step(
            state,
            self.successes,
            self.opponent.net,
            actor_botched=self.botch,
            opponent_botched=self.opponent_botch,
            botch_wipes=request.botch_wipes,
        )

    def extra_json(self) -> dict[str, Any]:
        request = self.request
        data: dict[str, Any] = {
            "pool": request.actor.pool,
            "difficulty": request.actor.difficulty,
            "ones": self.actor.ones if self.actor else 0,
            "rolled_successes": self.actor.rolled if self.actor else 0,
            "willpower": request.actor.willpower,
            "automatic": request.automatic,
            "free_botch": self.free_botch,
        }
        if self.opponent is not None and self.resisted is not None:
            data["versus"] = {
                "faces": list(self.opponent.faces),
                "successes": self.opponent.net,
                "outcome": "botch" if self.opponent_botch else self.opponent.outcome,
                "free_botch": self.opponent_free_botch,
                "winner": self.resisted.winner,
                "net": self.resisted.net,
            }
        if self.extended is not None:
            data["extended"] = pools.extended_json(self.extended)
        if self.contest is not None:
            data["contest"] = pools.tally_json(self.contest)
        return data

    def render(self) -> list[Node]:
        return render(self)


class RevisedVariant(pools.StorytellerActions, Variant[RevisedRequest, RevisedOutcome]):
    name = "revised"
    examples = EXAMPLES
    title = "Vampire: the Masquerade, Revised"
    sides = 10
    default_difficulty = rules.DEFAULT_DIFFICULTY
    difficulty_range = (rules.MIN_DIFFICULTY, rules.MAX_DIFFICULTY)
    summary = (
        "d10 pool against a difficulty (default 6); 10s always succeed, each 1 cancels a success; "
        "no success and a 1 is a botch."
    )
    grammar = GRAMMAR
    pure_build = True
    house_rules = HOUSE_RULES

    def build(self, parsed: Parsed, settings: RoomSettings) -> RevisedRequest:
        pools.refuse_specialty(parsed, self.name)
        house = {rule.name: settings.rule(self, rule.name) for rule in self.house_rules}
        default = self.room_difficulty(settings) or rules.DEFAULT_DIFFICULTY
        actions = parsed.int("multi") or 1
        action = parsed.int("action")
        if action is not None and actions == 1:
            raise UsageError("`action K` goes with `multi N` (the number of actions this turn)")
        action = action or 1
        if action > actions:
            raise UsageError(f"action {action} of {actions}? `action` must be at most `multi`")
        retry = parsed.int("retry") or 0
        if retry and not house["trying_again"]:
            raise UsageError("this room does not raise the difficulty for trying again")
        penalty = rules.multiple_action_penalty(actions, action) if actions > 1 else 0
        actor = _side(parsed, default, penalty=penalty, retry=retry, multi=(actions, action))
        automatic = parsed.flag("auto")
        target = parsed.int("ext")
        progress = parsed.int("progress")
        if progress is not None and target is None:
            raise UsageError("`progress` goes with `ext TARGET`")
        if target is not None and (progress or 0) >= target:
            raise UsageError(f"progress {progress} already reaches the target {target}")
        actor = replace(actor, progress=progress or 0)
        versus = None
        if parsed.versus is not None:
            if parsed.versus.int("progress") is not None and target is None:
                raise UsageError("`progress` goes with `ext TARGET`")
            versus = _side(parsed.versus, default)
            versus = replace(versus, progress=parsed.versus.int("progress") or 0)
            if target is not None and versus.progress >= target:
                raise UsageError(f"progress {versus.progress} already reaches the target {target}")
        if automatic:
            if not house["auto_success"]:
                raise UsageError("this room does not allow automatic successes")
            if actor.willpower:
                raise UsageError("`auto` rolls no dice, so Willpower adds nothing to it")
            if versus is not None or target is not None:
                raise UsageError("resisted and extended actions are rolled, not automatic")
            if not rules.automatic_success_allowed(actor.pool, actor.difficulty):
                raise UsageError(
                    f"an automatic success needs a pool of at least the difficulty "
                    f"({actor.pool} dice < difficulty {actor.difficulty}); roll instead"
                )
        return RevisedRequest(
            actor=actor,
            base_difficulty=parsed.int("difficulty") or default,
            automatic=automatic,
            actions=actions,
            action=action,
            retry=retry,
            target=target,
            versus=versus,
            willpower_cancellable=bool(house["willpower_cancellable"]),
            botch_wipes=bool(house["botch_wipes_extended"]),
        )

    def dice_count(self, request: RevisedRequest) -> int:
        return request.dice

    def odds(self, request: RevisedRequest, options: frozenset[str] = frozenset()) -> Distribution:
        require_rules(self, RevisedVariant)
        return exact_odds(self, request)

    def evaluate(self, request: RevisedRequest, faces: Sequence[int]) -> RevisedOutcome:
        if len(faces) != request.dice:
            raise UsageError(f"this roll needs {request.dice} dice, but {len(faces)} were given")
        own = 0 if request.automatic else request.actor.pool
        actor = None
        if not request.automatic:
            actor = rules.roll_pool(
                faces[:own],
                request.actor.difficulty,
                willpower=request.actor.willpower,
                willpower_cancellable=request.willpower_cancellable,
            )
        opponent = None
        if request.versus is not None:
            opponent = rules.roll_pool(
                faces[own:],
                request.versus.difficulty,
                willpower=request.versus.willpower,
                willpower_cancellable=request.willpower_cancellable,
            )
        return RevisedOutcome(request=request, actor=actor, opponent=opponent, variant=self.name)

    async def settle(self, outcome: RevisedOutcome, context: RollContext) -> RevisedOutcome:
        """The optional free first botch: one per player and per Storyteller character (NPC) per
        session (see docs/rules/revised.md). In a contest between two chat users each side's
        botch is its own player's."""
        whose = context.user if context.character is None else f"npc:{context.character}"
        if outcome.request.actions > 1 and context.state is not None:
            await _one_willpower_a_turn(outcome.request, context, whose)
        if not context.settings.rule(self, "first_botch_free"):
            return outcome
        if outcome.botch and await _spend_free_botch(context, whose):
            outcome = replace(outcome, free_botch=True)
        opponent = outcome.opponent
        if (
            context.opponent is not None
            and opponent is not None
            and opponent.botch
            and await _spend_free_botch(context, context.opponent)
        ):
            outcome = replace(outcome, opponent_free_botch=True)
        return outcome

    def check_team(self, requests: Sequence[RevisedRequest]) -> None:
        """Teamwork members each roll a plain pool of their own."""
        for request in requests:
            if request.automatic or request.versus or request.target or request.actions > 1:
                raise UsageError(
                    "teamwork members roll plain pools (no `auto`, `vs`, `ext` or `multi`)"
                )

    def degree_label(self, successes: int) -> str | None:
        return rules.degree(successes) if successes > 0 else None

    def team(self, outcomes: Sequence[RevisedOutcome]) -> list[Node]:
        rolled = [outcome for outcome in outcomes if outcome.actor is not None]
        # a member's free first botch (settled) spoils nothing: it does not count as a botch
        rolls = [outcome.actor for outcome in rolled if outcome.actor is not None]
        result = rules.teamwork(rolls, [outcome.free_botch for outcome in rolled])
        line: list[Node] = [Text("Teamwork: "), bold(plural(result.total, "success"))]
        if result.total:
            line.append(Text(f" ({rules.degree(result.total)})"))
        if result.botched:
            members = [str(i) for i, botched in enumerate(result.botches, start=1) if botched]
            line.append(
                Text(f" — but member {', '.join(members)} botched, which may spoil it for all")
            )
        return line

    def help(self) -> list[Node]:
        body: list[Node] = [code(GRAMMAR.usage), BR, Text(self.summary), BR]
        body += [
            Text("POOL is a number or two Traits added, like "),
            code("3+4"),
            Text("; a penalty is subtracted, like "),
            code("3+4-1"),
            Text("."),
            BR,
        ]
        for option in GRAMMAR.options:
            if option is pools.NO_SPECIALTY:
                continue
            body += [code(option.syntax()), Text(f" — {option.help}"), BR]
        body += [
            code("vs POOL [DIFFICULTY]"),
            Text(" — resisted: the other side rolls too; its successes cancel yours"),
            BR,
        ]
        body += [Text("Difficulties: ")]
        body.append(Text(", ".join(f"{k} {v}" for k, v in rules.DIFFICULTY_LABELS.items())))
        body += [
            BR,
            Text(
                "Degrees: "
                + ", ".join(f"{i} {d}" for i, d in enumerate(rules.DEGREES, start=1))
                + " (or more)"
            ),
        ]
        return body


#: seconds after which the actions of a turn declared with `multi N` are taken as a new turn
TURN_LAPSE = 3600


async def _one_willpower_a_turn(request: RevisedRequest, context: RollContext, whose: str) -> None:
    """000 Willpower: one point a turn. The actions of one turn (``multi 3``, then
    ``multi 3 action 2`` …) may come in several messages: a second ``wp`` among them is refused
    (raised before anything is kept: the command's transaction is rolled back). A turn ends with
    an action that is not a later one of the same declaration, or after :data:`TURN_LAPSE`."""
    key = f"multi_turn:{whose}"
    last = await context.state.get(key)
    now = time.time()
    same_turn = (
        isinstance(last, dict)
        and last.get("actions") == request.actions
        and isinstance(last.get("action"), int)
        and request.action > last["action"]
        and now - float(last.get("at", 0)) < TURN_LAPSE
    )
    spent_on = last.get("wp_action") if same_turn and isinstance(last, dict) else None
    if spent_on is not None and request.actor.willpower:
        raise UsageError(
            f"Willpower was already spent this turn (on action {spent_on} of {request.actions}): "
            "one point a turn. Roll this action without `wp`"
        )
    if spent_on is None and request.actor.willpower:
        spent_on = request.action
    turn = {"actions": request.actions, "action": request.action, "at": now}
    await context.state.set(key, {**turn, "wp_action": spent_on})


async def _spend_free_botch(context: RollContext, user: str) -> bool:
    """Whether ``user``'s botch is their free first of the session (and mark it used)."""
    key = f"free_botch_used:{context.session or '-'}:{user}"
    used = bool(await context.state.get(key, False))
    counts, used_after = rules.first_botch_free(True, used)
    if used_after != used:
        await context.state.set(key, used_after)
    return not counts


def _side(
    parsed: Parsed,
    default_difficulty: int,
    *,
    penalty: int = 0,
    retry: int = 0,
    multi: tuple[int, int] = (1, 1),
) -> Side:
    written = parsed.pool()
    actions, action = multi
    pool = pools.checked_pool(
        written,
        max_traits=rules.MAX_TRAITS_IN_POOL,
        ten_point_traits=rules.TEN_POINT_TRAITS,
        penalty=penalty,
        penalty_reason=f"action {action} of {actions}",
    )
    assert written is not None
    base = parsed.int("difficulty") or default_difficulty
    difficulty = rules.retry_difficulty(base, retry)
    if difficulty > rules.MAX_DIFFICULTY:
        raise UsageError(
            f"after {retry} failed attempt(s) the difficulty would be {difficulty}, above "
            f"{rules.MAX_DIFFICULTY}: the task is now beyond this character"
        )
    return Side(written, pool, difficulty, willpower=parsed.flag("willpower"))


# --- rendering ----------------------------------------------------------------------------------


def _faces(roll: rules.PoolRoll) -> list[Node]:
    return pools.face_nodes(roll.faces, roll.roles)


_FAILURE = bold("Failure")  # (elements are immutable: one serves every reply)


def _result_line(roll: rules.PoolRoll, free_botch: bool = False, degree: bool = True) -> list[Node]:
    """One side's result; ``degree``: with its degree of success (a simple action's roll only:
    a resisted side keeps only what beats the other, and an extended roll adds to a goal)."""
    if roll.botch and not free_botch:
        return [bold("Botch!"), Text(f" No success and {plural(roll.ones, 'one')}.")]
    parts: list[Node] = []
    if roll.net > 0:
        parts += [Bold((Text(plural(roll.net, "success")),))]
        if degree:
            parts += [Text(f" — {rules.degree(roll.net)}")]
    else:
        parts += [_FAILURE]
    details: list[str] = []
    if roll.ones and roll.rolled:
        cancelled = min(roll.ones, roll.rolled)
        details.append(f"{plural(roll.ones, 'one')} cancelled {cancelled} of {roll.rolled}")
    if roll.willpower:
        details.append("+1 from Willpower")
    if details:
        parts.append(Text(f" ({'; '.join(details)})"))
    if free_botch:
        parts += [Text(" — "), italic("a botch, but the first of the session is free")]
    return parts


def _setup(side: Side, request: RevisedRequest, label: str | None = None) -> list[Node]:
    bits = [plural(side.pool, "dice")]
    if request.actions > 1 and label is None:
        penalty = rules.multiple_action_penalty(request.actions, request.action)
        bits = [
            f"{side.written} − {penalty} = {plural(side.pool, 'dice')} "
            f"(action {request.action} of {request.actions})"
        ]
    bits.append(f"difficulty {side.difficulty} ({rules.DIFFICULTY_LABELS[side.difficulty]})")
    if request.retry and label is None:
        bits[-1] += f", +{request.retry} for trying again"
    prefix = f"{label}: " if label else ""
    return [Text(prefix + ", ".join(bits) + ": ")]


#: the actor's setup line of requests rendered lately, by the request object (a roll written
#: again is the same request: :mod:`coterie.framework.requestcache`): id → (request, line)
_SETUPS: dict[int, tuple[RevisedRequest, tuple[Node, ...]]] = {}


def _actor_setup(request: RevisedRequest) -> tuple[Node, ...]:
    """``_setup(request.actor, request)``, kept per request (immutable both: the same text)."""
    kept = _SETUPS.get(id(request))
    if kept is not None and kept[0] is request:  # (held here: its id names no other object)
        return kept[1]
    line = tuple(_setup(request.actor, request))
    if len(_SETUPS) >= 1024:
        _SETUPS.pop(next(iter(_SETUPS)))
    _SETUPS[id(request)] = (request, line)
    return line


def render(outcome: RevisedOutcome) -> list[Node]:
    request = outcome.request
    if outcome.actor is None:
        side = request.actor
        return [
            bold("Automatic success"),
            Text(f" — Marginal ({side.pool} dice ≥ difficulty {side.difficulty}; no dice rolled)"),
        ]
    body: list[Node] = []
    body += _actor_setup(request)
    body += _faces(outcome.actor)
    body.append(BR)
    simple = outcome.opponent is None and outcome.extended is None
    body += _result_line(outcome.actor, outcome.free_botch, degree=simple)
    extended = outcome.extended
    if extended is not None:
        body += [BR, Text("Extended: ")]
        if extended.wiped:
            body += [Text(f"the botch wipes out {request.actor.progress} successes — ")]
        body += [bold(f"{extended.progress}/{extended.target}")]
        if extended.done:
            body += [Text(" — done!")]
    if outcome.opponent is not None and request.versus is not None:
        opposed = f"Opposed ({outcome.names[1]})" if outcome.names else "Opposed"
        body += [BR, *_setup(request.versus, request, opposed), *_faces(outcome.opponent)]
        body += [
            BR,
            Text(f"{opposed}: "),
            *_result_line(outcome.opponent, outcome.opponent_free_botch, degree=False),
        ]
        body += [BR, *_resisted_line(outcome)]
    return body


def _resisted_line(outcome: RevisedOutcome) -> list[Node]:
    assert outcome.resisted is not None
    return pools.resisted_verdict(outcome.resisted, outcome.contest, rules.degree, outcome.names)
