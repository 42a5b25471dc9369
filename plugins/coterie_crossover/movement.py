"""``!move``: the chronicle's movement table for one character (rules in ``rules.py``).

``!move MODE`` with the character's numbers says how far they get in a turn, what an Injured
character is held to (and rolls the push past it), how long full speed lasts, and how many dice an
action loses when the character moves far and acts in the same turn.
"""

from __future__ import annotations

from dataclasses import replace

from coterie.errors import UsageError
from coterie.framework.characters import CharacterView
from coterie.framework.commands import CommandContext
from coterie.framework.grammar import Grammar, Option, Parsed, Pool, parse, shorten, suggest, tokens
from coterie.records import dataclass
from coterie.render.elements import BR, Node, Reply, Text, bold, code, italic
from coterie.rulekit.pools import difficulty_option, plural
from coterie.rulekit.sheets import HEALTH_LEVELS
from coterie_crossover import rules
from coterie_crossover.requests import CrossoverRequest, Side
from coterie_crossover.rules import Conditions, Mode
from coterie_crossover.variant import CrossoverOutcome

MOVE_USAGE = (
    "!move walk|jog|run|swim|fly|climb [dex N] [stamina N] [injured] [skilled] [yards N] "
    "[speed N] [ideal|normal|poor] [successes N] [push willpower N [wound N] [diff D]] [# comment]"
)

#: the words a player may use for each mode
MODE_WORDS: dict[str, Mode] = {
    **{mode.value: mode for mode in Mode},
    "walking": Mode.WALK,
    "jogging": Mode.JOG,
    "running": Mode.RUN,
    "swimming": Mode.SWIM,
    "flying": Mode.FLY,
    "climbing": Mode.CLIMB,
}

#: ratings are usually 1-5; werewolf forms and the like go higher
MAX_RATING = 10

MOVE_GRAMMAR = Grammar(
    usage=MOVE_USAGE,
    options=(
        Option(
            "dex",
            "int",
            "Dexterity (jogging, running and swimming depend on it)",
            aliases=("dexterity",),
            minimum=0,
            maximum=MAX_RATING,
            compact=True,
        ),
        Option(
            "stamina",
            "int",
            "Stamina: ten turns of full speed per dot",
            aliases=("sta",),
            minimum=0,
            maximum=MAX_RATING,
            compact=True,
        ),
        Option("injured", "flag", "at Injured or worse: at most half the normal rate"),
        Option("skilled", "flag", "a trained swimmer: 12 + Dexterity yards instead of 8"),
        Option(
            "yards",
            "int",
            "yards moved this turn while also taking an action: the dice it costs",
            aliases=("moved",),
            minimum=0,
            maximum=1000,
        ),
        Option(
            "speed",
            "int",
            "a flyer's yards per turn (10 to 20)",
            minimum=rules.FLY_YARDS[0],
            maximum=rules.FLY_YARDS[1],
        ),
        Option("ideal", "flag", "climbing in ideal conditions: 15 to 20 feet per success"),
        Option("normal", "flag", "climbing in normal conditions: 10 feet per success"),
        Option("poor", "flag", "climbing in poor conditions: 5 feet per success"),
        Option(
            "successes",
            "int",
            "successes rolled for a climb: the feet climbed",
            aliases=("hits",),
            minimum=0,
            maximum=1000,
        ),
        Option("push", "flag", "Injured: roll the higher of Stamina or Willpower to move freely"),
        Option(
            "willpower",
            "int",
            "Willpower rating, for `push`",
            minimum=0,
            maximum=MAX_RATING,
        ),
        Option(
            "wound",
            "int",
            "the dice penalty of the character's health level, for `push`",
            aliases=("wounds",),
            minimum=0,
            maximum=MAX_RATING,
        ),
        difficulty_option(rules.MIN_DIFFICULTY, rules.MAX_DIFFICULTY),
    ),
)

_CONDITION_FLAGS = {"ideal": Conditions.IDEAL, "normal": Conditions.NORMAL, "poor": Conditions.POOR}


@dataclass(frozen=True)
class Movement:
    """One ``!move`` request, checked."""

    mode: Mode
    dexterity: int | None = None
    stamina: int | None = None
    injured: bool = False
    skilled: bool = False
    yards: int | None = None
    speed: int | None = None
    conditions: Conditions = Conditions.NORMAL
    successes: int | None = None
    push: bool = False
    willpower: int | None = None
    wound: int = 0
    difficulty: int = rules.PUSH_DIFFICULTY
    #: what came from the caller's character sheet (``Dexterity 3``, ``Injured``), and whose
    from_sheet: tuple[str, ...] = ()
    character: str = ""

    @property
    def name(self) -> str:
        return rules.MODE_NAMES[self.mode]

    @property
    def rate(self) -> tuple[int, int]:
        """(least, most) per turn at full health: yards, or feet per success for a climb."""
        if self.mode is Mode.CLIMB:
            return rules.CLIMB_FEET_PER_SUCCESS[self.conditions]
        if self.mode is Mode.FLY and self.speed is not None:
            return self.speed, self.speed
        return rules.yards_per_turn(self.mode, self.dexterity, skilled=self.skilled)

    @property
    def injured_rate(self) -> tuple[int, int]:
        low, high = self.rate
        return rules.injured_rate(low), rules.injured_rate(high)

    @property
    def unit(self) -> str:
        """The rate's unit: ``yards a turn`` or ``feet per success``."""
        return "feet per success" if self.mode is Mode.CLIMB else "yards a turn"

    @property
    def push_pool(self) -> int:
        assert self.stamina is not None and self.willpower is not None
        return rules.push_pool(self.stamina, self.willpower, self.wound)


def _mode(words: list[str]) -> tuple[Mode, list[str]]:
    """The one mode word among ``words`` and the other words."""
    found = [(i, MODE_WORDS[w.lower()]) for i, w in enumerate(words) if w.lower() in MODE_WORDS]
    if len(found) > 1:
        names = " and ".join(f"`{words[i]}`" for i, _ in found)
        raise UsageError(f"one way of moving at a time: you named {names}")
    if not found:
        if words and words[0][:1].isalpha() and MOVE_GRAMMAR.option(words[0].lower()) is None:
            close = suggest(words[0].lower(), list(MODE_WORDS))
            hint = f" Did you mean `{close}`?" if close else ""
            raise UsageError(
                f"I don't know the movement `{shorten(words[0])}`.{hint} "
                "Choose walk, jog, run, swim, fly or climb."
            )
        raise UsageError(
            "how does the character move? Start with walk, jog, run, swim, fly or climb"
        )
    index, mode = found[0]
    return mode, words[:index] + words[index + 1 :]


def _refuse_bare_numbers(words: list[str]) -> None:
    """A number must follow the option it is for (``dex 3``, not ``3``). A number after an
    unknown word is left to the grammar, which reports the unknown word first."""
    previous: str | None = None
    for word in words:
        if word.isdigit():
            option = MOVE_GRAMMAR.option(previous) if previous is not None else None
            known = previous is None or option is not None or previous.isdigit() or "=" in previous
            if known and (option is None or option.kind != "int"):
                raise UsageError(
                    f"I don't know what `{shorten(word)}` is for: name it, e.g. `dex {word}` or "
                    f"`stamina {word}`"
                )
        previous = word.lower()


def parse_movement(
    text: str, max_options: int = 20, prefix: str = "!", sheet: CharacterView | None = None
) -> Movement:
    """Read the words after ``!move`` into a checked :class:`Movement` (or a friendly error);
    what the words leave out is taken from ``sheet``, the caller's active character."""
    mode, words = _mode(tokens(text))
    _refuse_bare_numbers(words)
    parsed = parse(words, MOVE_GRAMMAR, max_options=max_options)
    taken = _from_sheet(parsed, sheet) if sheet is not None else ()
    movement = check(mode, parsed, prefix)
    return replace(movement, from_sheet=taken, character=sheet.name if taken and sheet else "")


#: the Health levels from Injured on (004 *Movement*: at most half the normal rate)
_INJURED = tuple(
    name for name, _ in HEALTH_LEVELS[[n for n, _ in HEALTH_LEVELS].index("Injured") :]
)


def _from_sheet(parsed: Parsed, sheet: CharacterView) -> tuple[str, ...]:
    """Fill in Dexterity, Stamina, the Injured state and, for a push, Willpower and the wound
    penalty from the character's sheet where the words do not give them; what was taken."""
    if sheet.penalty is None:
        raise UsageError(f"{sheet.name} is {sheet.level}: no movement can be attempted")
    taken: list[str] = []
    for dest, trait in (("dex", "Dexterity"), ("stamina", "Stamina")):
        if parsed.values.get(dest) is None and trait in sheet.ratings:
            parsed.values[dest] = sheet.ratings[trait]
            taken.append(f"{trait} {sheet.ratings[trait]}")
    if sheet.level in _INJURED and not parsed.flag("injured"):
        parsed.values["injured"] = True
        taken.append(sheet.level)
    if parsed.flag("push"):
        if parsed.values.get("willpower") is None and "Willpower" in sheet.ratings:
            parsed.values["willpower"] = sheet.ratings["Willpower"]
            taken.append(f"Willpower {sheet.ratings['Willpower']}")
        if parsed.values.get("wound") is None and sheet.penalty:
            parsed.values["wound"] = -sheet.penalty
            taken.append(f"wound penalty {sheet.penalty}")
    return tuple(taken)


def _only_for(parsed: Parsed, option: str, mode: Mode, wanted: Mode, why: str) -> None:
    if parsed.values.get(option) is not None and mode is not wanted:
        raise UsageError(f"`{option}` is for {rules.MODE_NAMES[wanted].lower()}: {why}")


def check(mode: Mode, parsed: Parsed, prefix: str = "!") -> Movement:
    """Every combination rule of ``!move``; nothing is rolled when one fails."""
    _only_for(parsed, "skilled", mode, Mode.SWIM, "a trained swimmer makes 12 + Dexterity yards")
    _only_for(parsed, "speed", mode, Mode.FLY, "a flyer makes 10 to 20 yards a turn")
    _only_for(parsed, "successes", mode, Mode.CLIMB, "a climb goes so many feet per success")
    flags = [name for name in _CONDITION_FLAGS if parsed.flag(name)]
    if flags and mode is not Mode.CLIMB:
        raise UsageError(
            f"`{flags[0]}` describes the conditions of a climb: `{prefix}move climb {flags[0]}`"
        )
    if len(flags) > 1:
        raise UsageError("choose one of `ideal`, `normal` or `poor` for the climb")
    dexterity = parsed.int("dex")
    if mode in rules.DEXTERITY_MODES and dexterity is None:
        example = f"{prefix}move {mode.value} dex 3"
        raise UsageError(
            f"{rules.MODE_NAMES[mode].lower()} depends on Dexterity: add `dex N`, e.g. `{example}`"
        )
    movement = Movement(
        mode=mode,
        dexterity=dexterity,
        stamina=parsed.int("stamina"),
        injured=parsed.flag("injured"),
        skilled=parsed.flag("skilled"),
        yards=parsed.int("yards"),
        speed=parsed.int("speed"),
        conditions=_CONDITION_FLAGS[flags[0]] if flags else Conditions.NORMAL,
        successes=parsed.int("successes"),
        push=parsed.flag("push"),
        willpower=parsed.int("willpower"),
        wound=parsed.int("wound") or 0,
        difficulty=parsed.int("difficulty") or rules.PUSH_DIFFICULTY,
    )
    _check_push(movement, parsed)
    _check_yards(movement)
    return movement


def _check_push(movement: Movement, parsed: Parsed) -> None:
    if not movement.push:
        for name in ("willpower", "wound", "difficulty"):
            if parsed.values.get(name) is not None:
                shown = "diff" if name == "difficulty" else name
                raise UsageError(
                    f"`{shown}` is for the roll an Injured character makes to move freely: "
                    "add `injured push`"
                )
        return
    if not movement.injured:
        raise UsageError(
            "`push` is the roll an Injured character makes to move at the full rate; "
            "add `injured`, or leave `push` out"
        )
    if movement.stamina is None or movement.willpower is None:
        raise UsageError(
            "the push rolls the greater of Stamina and Willpower: give both, "
            "e.g. `stamina 2 willpower 5`"
        )
    if movement.push_pool < 1:
        raise UsageError(
            f"the health penalty takes {plural(movement.wound, 'dice')} from "
            f"{max(movement.stamina, movement.willpower)}, leaving none: the character cannot "
            "push past the injury"
        )


def _check_yards(movement: Movement) -> None:
    yards = movement.yards
    if yards is None:
        return
    if movement.mode is Mode.CLIMB:
        raise UsageError(
            "a climb is rolled, so it is an action of its own: `yards` counts the dice that "
            "walking, jogging, running, swimming or flying cost another action"
        )
    full = movement.rate[1]
    most = movement.injured_rate[1] if movement.injured and not movement.push else full
    if yards > most:
        state = "Injured, " if most != full else ""
        hint = " (or roll to go faster with `push`)" if most != full else ""
        raise UsageError(
            f"{state}{movement.name.lower()} covers at most {most} yards a turn; "
            f"{yards} is too far{hint}"
        )
    if movement.dexterity is None and yards > rules.LEAST_FREE_YARDS:
        raise UsageError(
            "the dice penalty counts from half the running distance (20 + 3 × Dexterity): "
            "add `dex N`"
        )


# --- the reply ------------------------------------------------------------------------------------


def _span(low: int, high: int) -> str:
    return str(low) if low == high else f"{low} to {high}"


def _rate_line(movement: Movement) -> list[Node]:
    low, high = movement.rate
    dex = movement.dexterity
    why = ""
    if movement.mode is Mode.JOG:
        why = f" ({rules.JOG_BASE_YARDS} + Dexterity {dex})"
    elif movement.mode is Mode.RUN:
        why = f" ({rules.RUN_BASE_YARDS} + {rules.RUN_YARDS_PER_DEXTERITY} × Dexterity {dex})"
    elif movement.mode is Mode.SWIM:
        if movement.skilled:
            why = f" ({rules.SKILLED_SWIM_BASE_YARDS} + Dexterity {dex}, a trained swimmer)"
        else:
            why = f" ({rules.SWIM_BASE_YARDS} + Dexterity {dex})"
    elif movement.mode is Mode.CLIMB:
        why = f" in {movement.conditions.value} conditions"
    line: list[Node] = [bold(movement.name), Text(f": {_span(low, high)} {movement.unit}{why}.")]
    if movement.mode is Mode.CLIMB and movement.successes is not None:
        line += [
            Text(f" {plural(movement.successes, 'success')}: "),
            bold(_reach(movement, injured=False)),
            Text("."),
        ]
    return line


def _halves(value: int) -> str:
    return str(value // 2) if value % 2 == 0 else f"{value / 2:g}"


def _reach(movement: Movement, *, injured: bool) -> str:
    """How far the character gets this turn, at the normal or the Injured (half) rate: yards,
    feet climbed with the given successes, or feet per success."""
    if movement.mode is not Mode.CLIMB:
        return f"{_span(*(movement.injured_rate if injured else movement.rate))} yards"
    if movement.successes is not None:
        low, high = rules.climb_feet(movement.successes, movement.conditions)
        if injured:  # half of the distance climbed
            low, high = rules.injured_rate(low), rules.injured_rate(high)
        return f"{_span(low, high)} feet"
    low, high = movement.rate
    if not injured:
        return f"{_span(low, high)} feet per success"
    halves = _halves(low) if low == high else f"{_halves(low)} to {_halves(high)}"
    return f"{halves} feet per success"


def _injured_line(movement: Movement) -> list[Node]:
    line: list[Node] = [
        Text("Injured: at most "),
        bold(_reach(movement, injured=True)),
        Text(" (half the normal rate)."),
    ]
    if not movement.push:
        line += [
            Text(" To move freely this turn, roll for it: add "),
            code("push stamina N willpower N"),
            Text("."),
        ]
    return line


def _acting_lines(movement: Movement, moved: int | None) -> list[Node]:
    """The half-a-run allowance and, for ``moved`` yards, the dice the action loses."""
    if movement.mode is Mode.CLIMB:
        return []
    dex = movement.dexterity
    lines: list[Node] = []
    if moved is not None:
        penalty = rules.acting_penalty(moved, dex)
        lines += [BR, Text(f"Moving {plural(moved, 'yard')} and acting: ")]
        if penalty:
            assert dex is not None
            lines += [
                bold(f"−{plural(penalty, 'dice')}"),
                Text(f" on the action ({penalty} beyond the free {rules.free_yards(dex)})."),
            ]
        else:
            lines.append(bold("no penalty."))
        return lines
    if dex is None:
        if movement.rate[1] <= rules.LEAST_FREE_YARDS:
            lines += [BR, Text(f"{movement.name} leaves you free to act: no dice penalty.")]
        return lines
    free = rules.free_yards(dex)
    lines += [
        BR,
        Text("Acting too: up to "),
        bold(plural(free, "yard")),
        Text(" (half the running distance) costs nothing; each yard beyond takes a die."),
    ]
    return lines


def _stamina_line(movement: Movement) -> list[Node]:
    if movement.stamina is None:
        return []
    if movement.mode not in rules.FULL_SPEED_MODES:
        return [
            BR,
            Text(
                f"{movement.name} is not full speed (running, swimming, climbing): "
                "Stamina does not limit it."
            ),
        ]
    turns = rules.full_speed_turns(movement.stamina)
    return [
        BR,
        Text("Full speed for at most "),
        bold(plural(turns, "turn")),
        Text(f" ({rules.TURNS_PER_STAMINA} per dot of Stamina {movement.stamina})."),
    ]


def _push_request(movement: Movement) -> CrossoverRequest:
    pool = movement.push_pool
    return CrossoverRequest(actor=Side(Pool.of(pool), pool, movement.difficulty))


def _push_lines(movement: Movement, outcome: CrossoverOutcome) -> tuple[list[Node], int]:
    """The push roll and its verdict; also how far the character may now move (yards)."""
    assert movement.stamina is not None and movement.willpower is not None
    stamina, willpower = movement.stamina, movement.willpower
    trait = "Willpower" if willpower > stamina else "Stamina"
    lines: list[Node] = [
        BR,
        Text(
            f"Pushing past the injury with {trait} {max(stamina, willpower)} (the greater of "
            f"Stamina {stamina} and Willpower {willpower})"
            + (f", −{movement.wound} for wounds" if movement.wound else "")
            + ": "
        ),
        *outcome.render(),
        BR,
    ]
    full, held = movement.rate[1], movement.injured_rate[1]
    if outcome.outcome == "success":
        lines += [
            bold("Full movement this turn"),
            Text(f": {_reach(movement, injured=False)}."),
        ]
        reach = full
    elif outcome.outcome == "failure":
        lines += [
            bold("Held back"),
            Text(f": half the normal rate this turn, at most {_reach(movement, injured=True)}."),
        ]
        reach = held
    else:
        lines += [
            bold("The body gives out"),
            Text(": no movement this turn — or the character trips and falls."),
        ]
        reach = 0
    return lines, reach


async def move(ctx: CommandContext) -> Reply:
    """How far a character moves in a turn, and what it costs an action taken as well."""
    sheet = await ctx.app.host.first_result("coterie_active_character", ctx=ctx)
    limit = ctx.app.config.limits.max_options
    movement = parse_movement(ctx.args, limit, ctx.settings.prefix, sheet)
    body: list[Node] = [bold(ctx.message.display_name)]
    if ctx.line.comment:
        body += [Text(" — "), italic(ctx.line.comment)]
    if movement.from_sheet:
        body += [BR, italic(f"From {movement.character}'s sheet: {', '.join(movement.from_sheet)}")]
    body += [BR, *_rate_line(movement)]
    if movement.injured:
        body += [BR, *_injured_line(movement)]
    moved = movement.yards
    meta = {"variant": ctx.variant.name}
    if movement.push:
        outcome = await ctx.roll(_push_request(movement))
        assert isinstance(outcome, CrossoverOutcome)
        lines, reach = _push_lines(movement, outcome)
        body += lines
        meta["roll_id"] = ctx.roll_id or ""
        if reach == 0:
            body += _stamina_line(movement)
            return Reply(body, meta=meta)
        if moved is not None and moved > reach:
            body += [BR, italic(f"Only {plural(reach, 'yard')} of the {moved} this turn.")]
            moved = reach
    body += _acting_lines(movement, moved)
    body += _stamina_line(movement)
    return Reply(body, meta=meta)
