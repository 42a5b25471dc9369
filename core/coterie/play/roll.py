"""``!roll`` and ``!odds``: the built-in roll commands, registered as an ordinary plugin. Rolls
toward actions and tasks (``for NAME``, ``retry NAME``) are taken over by
:mod:`coterie.play.clauses`."""

from __future__ import annotations

from typing import Any

from coterie.framework.commands import Command, CommandContext, roll_reply
from coterie.framework.variant import Variant
from coterie.hookimpl import hookimpl
from coterie.play.dice import dice_command, is_expression
from coterie.render.elements import Reply

ROLL_USAGE = "!roll POOL [DIFFICULTY] [options] [# comment]"


ODDS_USAGE = "!odds POOL [DIFFICULTY] [options] [chart] [# comment]"


async def roll(ctx: CommandContext) -> Reply:
    # `!r 2d6+3` is generic dice; `!r 5 6` (and any `!roll`) a pool under the room's rules
    if ctx.line.command == "r" and is_expression(ctx.args):
        return dice_command(ctx)
    return await roll_reply(ctx)


# the odds engine (coterie.rulekit.odds, coterie.dice.odds, fractions) is imported by the first
# `!odds` or `!help` that lists it, not by every start (docs/performance.md)
async def odds(ctx: CommandContext) -> Reply:
    from coterie.rulekit.odds import odds_reply

    return await odds_reply(ctx)


def has_odds(variant: Variant[Any, Any]) -> bool:
    """:func:`coterie.rulekit.odds.has_odds`."""
    from coterie.rulekit.odds import has_odds

    return has_odds(variant)


@hookimpl
def coterie_commands() -> list[Command]:
    return [
        Command(
            name="roll",
            aliases=("r",),
            summary="roll a dice pool under the room's rules",
            usage=ROLL_USAGE,
            examples=("!roll {roll}", "!roll {roll2}"),
            handler=roll,
            details=(
                "Several rolls in one message are separated by `;`. `!r` is short for `!roll`; "
                "`!r 2d6+3` rolls plain dice (see `!help dice`)."
            ),
        ),
        Command(
            name="odds",
            summary="the exact chances of a roll, before you roll it",
            usage=ODDS_USAGE,
            supports=has_odds,
            examples=("!odds {roll}", "!odds {roll2}"),
            handler=odds,
            transaction=False,
            details=(
                "Written like !roll; nothing is rolled. Shows the chance of each result, the "
                "most likely numbers of successes and the average; add `chart` for a bar chart. "
                "Several rolls are separated by `;`."
            ),
        ),
    ]
