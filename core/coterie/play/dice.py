"""Generic dice for everything outside a pool (damage, random tables): ``!dice 2d6+3``,
``!r 4d10kh2``. Expressions are read and rolled by the ``d20`` library (keep/drop, rerolls,
arithmetic), with coterie's own dice source (``secrets`` unless a test injects faces) and its
limits: at most ``limits.max_dice`` dice, numbers of at most six digits. The dice an expression
writes out are counted before any is drawn (``!r 260d10`` is refused without a roll); dice that
the rolled faces add (``e6`` explodes, ``ro1`` re-rolls) count as they come, and a roll that grows
past the limit is refused once it does: its faces are dropped, nothing is shown or kept.

``!r`` stays the short form of ``!roll`` for pools: only arguments that are a dice expression
(``2d6+3``, ``d20``, ``4d10kh2``) go to generic dice, so ``!r 5 6`` is still a pool roll.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from coterie.dice.sources import DiceSource
from coterie.errors import UsageError
from coterie.framework.commands import Command, CommandContext
from coterie.framework.grammar import MAX_DIGITS, shorten
from coterie.hookimpl import hookimpl
from coterie.render.elements import BR, Node, Reply, Text, bold, italic, strike

DICE_USAGE = "!dice EXPRESSION [# comment]  (also !r EXPRESSION)"
#: the most sides a generic die may have
MAX_SIDES = 1000
#: a dice expression: a die somewhere (``d6``, ``2d10``, ``d%``) and nothing but dice syntax
_EXPRESSION = re.compile(r"[0-9dDkKhHlLrRoOeEaAmMiIxXpP%+\-*/().,\s]*[0-9]*[dD][0-9%]+[^#]*")
_BIG_NUMBER = re.compile(rf"[0-9]{{{MAX_DIGITS + 1},}}")
_SIDES = re.compile(r"[dD]([0-9]+)")
#: d20's Markdown marks: ``~~dropped~~``, ``**a 1 or the highest face**``
_MARKED = re.compile(r"~~(.*?)~~|\*\*(.*?)\*\*")
#: d20 draws from the module-level ``random``; a roll swaps in the command's dice source
_SWAP = threading.Lock()


def is_expression(args: str) -> bool:
    """Whether ``args`` is a generic dice expression (``2d6+3``) rather than a pool (``5 6``)."""
    text = args.partition("#")[0].strip()
    return bool(text) and _EXPRESSION.fullmatch(text) is not None and "d" in text.lower()


class _Draw:
    """What d20 asks of ``random``, answered by a :class:`DiceSource`."""

    def __init__(self, source: DiceSource) -> None:
        self.source = source

    def randrange(self, start: int, stop: int | None = None, step: int = 1) -> int:
        if stop is None:
            start, stop = 0, start
        count = (stop - start) // step
        return start + (self.source.roll(1, count)[0] - 1) * step


@contextmanager
def _drawing_from(source: DiceSource) -> Iterator[None]:
    import d20.expression

    with _SWAP:
        saved = d20.expression.random
        d20.expression.random = _Draw(source)
        try:
            yield
        finally:
            d20.expression.random = saved


def roll_expression(expression: str, source: DiceSource, max_dice: int) -> Any:
    """Roll ``expression`` with ``source``; a :class:`UsageError` for anything d20 refuses or
    beyond the limits."""
    import d20

    if _BIG_NUMBER.search(expression):
        raise UsageError(f"numbers in a dice expression have at most {MAX_DIGITS} digits")
    for sides in _SIDES.findall(expression):
        if int(sides) > MAX_SIDES:
            raise UsageError(f"a die has at most {MAX_SIDES} sides, not {sides}")
    roller = d20.Roller(context=d20.RollContext(max_rolls=max_dice))
    try:
        tree = roller.parse(expression)
        count = _written_dice(tree)
        if count > max_dice:  # refused before a die is drawn
            raise UsageError(f"that is {count} dice; a roll may have at most {max_dice}")
        with _drawing_from(source):
            return roller.roll(tree, stringifier=d20.MarkdownStringifier())
    except d20.TooManyRolls:  # (what the dice rolled added: explosions, re-rolls)
        raise UsageError(
            f"that roll grew past {max_dice} dice (exploding and re-rolled dice count too); "
            f"a roll may have at most {max_dice}"
        ) from None
    except d20.RollSyntaxError:
        raise UsageError(
            f"I can't read `{shorten(expression, 40)}` as dice",
            hint="Write dice like `2d6+3`, `4d10kh2` (keep the highest 2) or `d20`.",
        ) from None
    except (d20.RollError, ZeroDivisionError, ValueError) as error:
        raise UsageError(f"`{shorten(expression, 40)}` can't be rolled: {error}") from None


def _written_dice(node: Any) -> int:
    """How many dice a parsed expression writes out (``4d6kh3 + d20``: 5), before any die it
    rolls adds more (explosions, re-rolls)."""
    import d20.diceast

    if isinstance(node, d20.diceast.Dice):
        return int(node.num)
    return sum(_written_dice(child) for child in node.children)


def _nodes(markdown: str) -> list[Node]:
    """d20's Markdown (``2d6 (~~1~~, 5) = `5` ``) as elements: dropped dice struck through, the
    total in bold."""
    head, _, total = markdown.rpartition(" = ")
    body: list[Node] = []
    at = 0
    for match in _MARKED.finditer(head):
        if match.start() > at:
            body.append(Text(head[at : match.start()]))
        if match.group(1) is not None:
            body.append(strike(match.group(1).replace("**", "")))
        else:
            body.append(bold(match.group(2)))
        at = match.end()
    if at < len(head):
        body.append(Text(head[at:]))
    return [*body, Text(" = "), bold(total.strip("`"))]


def dice_command(ctx: CommandContext) -> Reply:
    expression = ctx.args.strip()
    if not expression:
        raise UsageError("what should I roll? e.g. `!dice 2d6+3`", usage=DICE_USAGE)
    try:
        result = roll_expression(expression, ctx.dice, ctx.app.config.limits.max_dice)
    except UsageError as error:  # (`!r 2d6+` is a dice expression: its usage, not the pools')
        if error.usage is None:
            error.usage = DICE_USAGE
        raise
    body: list[Node] = [bold(ctx.message.display_name)]
    if ctx.line.comment:
        body += [Text(" — "), italic(ctx.line.comment)]
    body += [BR, *_nodes(str(result))]
    return Reply(body, meta={"total": str(result.total)})


@hookimpl
def coterie_commands() -> list[Command]:
    return [
        Command(
            name="dice",
            summary="plain dice outside the rules: damage, random tables (2d6+3, 4d10kh2)",
            usage=DICE_USAGE,
            handler=dice_command,
            transaction=False,
            examples=("!dice 2d6+3", "!r 4d10kh2 # keep the highest two"),
            details=(
                "`kh2`/`kl1` keep the highest/lowest, `ro1` re-rolls ones once, `e6` explodes; "
                "`+ - * /` work. `!r` rolls a dice expression this way and anything else as "
                "`!roll`."
            ),
        ),
    ]
