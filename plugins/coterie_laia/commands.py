"""``?throw``: the LAIA community's own roll command, kept so players need not relearn anything."""

from __future__ import annotations

from coterie.app import new_roll_id
from coterie.builtins import parse_requests
from coterie.commands import Command, CommandContext
from coterie.elements import Reply
from coterie.errors import UsageError

THROW_USAGE = (
    "?throw POOL [DIFFICULTY] [spec] [retry N] [ext TARGET [progress P]] "
    "[vs POOL [DIFFICULTY] [spec] [progress P]] [# comment]"
)


async def throw(ctx: CommandContext) -> Reply:
    """Exactly ``!roll`` (several throws may be separated by `;`), with errors that show the
    ``?throw`` usage line the player was typing."""
    variant = ctx.variant
    try:
        requests = parse_requests(ctx)
    except UsageError as error:
        if error.usage is None or error.usage == variant.grammar.usage:
            error.usage = THROW_USAGE
        raise
    outcomes = [await ctx.roll(request) for request in requests]
    body = variant.compose(outcomes, ctx.message.display_name, ctx.line.comment)
    return Reply(body, meta={"roll_id": new_roll_id(), "variant": variant.name})


COMMANDS = [
    Command(
        name="throw",
        summary="throw a dice pool the LAIA way: ?throw POOL DIFFICULTY # comment",
        usage=THROW_USAGE,
        handler=throw,
        variants=("laia",),
        details=(
            "The same as `!roll` in this room. The reply starts with `# SUM` and "
            "`Details:[POOLd10c[>=DIFFICULTY]-@c[=1] (faces)]`. Add `spec` when a specialty "
            "applies."
        ),
    ),
]
