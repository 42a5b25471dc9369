"""``!remorse``: the remorse roll of a character with Stains, where the rule set's template has
Stains on its Humanity track (:class:`~coterie.framework.characters.Degeneration`, v5).

One die per box of the track that neither Humanity nor a Stain fills, never fewer than one; the
roll is the rule set's own (``remorse_roll``: v5 rolls it as a Humanity tracker roll needing one
success, which a Willpower re-roll cannot change). No success costs a point of Humanity; the
Stains are cleared either way. The roll, its log entry and the sheet's change land together, and
``!undo`` takes the change back. A built-in plugin; see ``docs/characters.md`` and
``docs/rules/v5.md``. (Stains past Humanity and a change of Humanity are
:func:`coterie.play.sheets.set_level`'s.)"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from coterie.errors import UsageError
from coterie.framework.commands import Command, CommandContext, parse_requests
from coterie.framework.grammar import tokens
from coterie.framework.variant import Variant
from coterie.hookimpl import hookimpl
from coterie.play import sheets
from coterie.play.characters import _target
from coterie.play.roster import find, save, template_of
from coterie.render.elements import BR, Reply, Text, bold

REMORSE_USAGE = "!remorse [for NAME|@user] [# comment]"


def has_remorse(variant: Variant[Any, Any]) -> bool:
    """Whether characters of ``variant`` make remorse rolls."""
    template = getattr(variant, "character_template", None)
    rule = getattr(template, "degeneration", None)
    return rule is not None and bool(rule.remorse_roll)


async def remorse_command(ctx: CommandContext) -> Reply:
    template = template_of(ctx)
    rule = template.degeneration
    if rule is None or not rule.remorse_roll:
        raise UsageError(f"the {ctx.variant.name} rules have no remorse roll", usage=REMORSE_USAGE)
    words, who = _target(tokens(ctx.args))
    if words:
        raise UsageError(
            "`!remorse` takes no number: its dice come from the sheet's Humanity and Stains",
            usage=REMORSE_USAGE,
        )
    found = await find(ctx, who, edit=True)
    sheet = found.sheet
    kind = str(sheet.get("kind", ""))
    humanity = template.tracker_for(kind, rule.humanity)
    stains = template.tracker_for(kind, rule.stains)
    if humanity is None or stains is None:
        raise UsageError(f"a {kind} keeps no {rule.stains}: there is no remorse roll to make")
    marked = sheets.value(template, sheet, stains)
    if not marked and not sheets.degenerating(template, sheet):
        raise UsageError(f"{found.name} has no {rule.stains}: no remorse roll is needed")
    level = sheets.value(template, sheet, humanity)
    dice = max(1, rule.boxes - level - marked)
    ctx.line = replace(ctx.line, args=rule.remorse_roll.format(dice=dice))
    ctx.resolver = None  # the pool is the number above, not a name to read
    (request,) = parse_requests(ctx, usage=REMORSE_USAGE)
    outcome = await ctx.roll(request)
    passed = outcome.successes > 0
    lines: list[str] = []
    stains_before = sheets.tracker_text(template, sheet, stains)
    if not passed:
        before = sheets.tracker_text(template, sheet, humanity)
        sheets.set_value(sheet, humanity, max(humanity.low, level - 1))
        lines.append(f"{humanity.name} {before} → {sheets.tracker_text(template, sheet, humanity)}")
    cleared = sheets.clear_stains(template, sheet, stains_before)
    if cleared:
        lines.append(cleared)
    what = "; ".join(lines)
    await save(ctx, found, f"{found.name}: {what} (remorse)")
    body = ctx.variant.compose([outcome], ctx.message.display_name, ctx.line.comment)
    verdict = f"keeps {humanity.name}" if passed else f"loses a point of {humanity.name}"
    body += [BR, bold(found.name), Text(f" {verdict} (remorse, {dice} {_dice(dice)}): {what}")]
    if not passed and level - 1 <= 0:
        body += [BR, Text(f"{found.name} has no {humanity.name} left: the Beast has won.")]
    return Reply(body, meta={"variant": ctx.variant.name})


def _dice(n: int) -> str:
    return "die" if n == 1 else "dice"


@hookimpl
def coterie_commands() -> list[Command]:
    return [
        Command(
            name="remorse",
            summary="the remorse roll: Stains cleared, a point of Humanity lost without a success",
            usage=REMORSE_USAGE,
            handler=remorse_command,
            supports=has_remorse,
            examples=(
                "!char new Alex\n!stains +2\n!remorse",
                "!char new Alex\n!stains 1\n!remorse",
            ),
            details=(
                "One die per box of the Humanity track that neither Humanity nor a Stain fills "
                "(at least one)."
            ),
        )
    ]
