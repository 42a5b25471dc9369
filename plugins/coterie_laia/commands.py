"""``?throw``: the LAIA community's own roll command, kept so players need not relearn anything."""

from __future__ import annotations

from coterie.framework.commands import Command, CommandContext, roll_reply
from coterie.render.elements import Reply

THROW_USAGE = (
    "?throw POOL [DIFFICULTY] [spec] [retry N] [ext TARGET [progress P]] "
    "[vs POOL [DIFFICULTY] [spec] [progress P]] [# comment]"
)


async def throw(ctx: CommandContext) -> Reply:
    """Exactly ``!roll`` (several throws may be separated by `;`), with errors that show the
    ``?throw`` usage line the player was typing."""
    return await roll_reply(ctx, usage=THROW_USAGE)


COMMANDS = [
    Command(
        name="throw",
        summary="throw a dice pool the LAIA way: ?throw POOL DIFFICULTY # comment",
        usage=THROW_USAGE,
        examples=("?throw {roll}", "?throw {roll2}"),
        handler=throw,
        variants=("laia",),
        details=(
            "The same as `!roll` in this room. The reply starts with `# SUM` and "
            "`Details:[POOLd10c[>=DIFFICULTY]-@c[=1] (faces)]`. Add `spec` when a specialty "
            "applies."
        ),
    ),
]
