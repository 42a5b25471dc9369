"""Reading a roll command's arguments into the rule set's requests: :func:`parse_requests`
(importable from :mod:`coterie.framework.commands` too, where it was first). A roll written again
in a room whose settings have not changed reuses the request built the first time
(:mod:`coterie.framework.requestcache`)."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from coterie.errors import UsageError
from coterie.framework.grammar import CommandLine, Parsed, parse, split_command, tokens
from coterie.framework.requestcache import remember, remembered, settings_key

if TYPE_CHECKING:
    from coterie.framework.commands import CommandContext


def parse_requests(
    ctx: CommandContext,
    *,
    minimum: int = 1,
    usage: str | None = None,
    prepare: Callable[[Parsed], None] | None = None,
) -> list[Any]:
    """Every ``;``-separated roll of the message, parsed with the room's rule set and checked
    against the limits before anything is rolled: one bad roll means none is rolled. Errors show
    ``usage`` (default: the rule set's ``!roll`` usage; the app adapts a leading ``!`` to the
    room's prefix). ``prepare`` may adjust each parsed roll before the rule set builds it (an
    extended action fills in its target and progress)."""
    variant = ctx.variant
    limits = ctx.app.config.limits
    usage = usage or variant.grammar.usage
    args = ctx.line.args
    segments = args.split(";")
    if not args.strip():
        raise UsageError("what should I roll? Give at least a dice pool.", usage=usage)
    if len(segments) < minimum:
        raise UsageError(f"give at least {minimum} rolls separated by `;`", usage=usage)
    if len(segments) > limits.max_rolls_per_message:
        raise UsageError(
            f"that is {len(segments)} rolls in one message; at most "
            f"{limits.max_rolls_per_message} are allowed",
            usage=usage,
        )
    requests: list[Any] = []
    # a roll read without a sheet, as written before in a room with these settings: built before
    memo = variant.pure_build and ctx.resolver is None and prepare is None
    room = settings_key(ctx.settings) if memo else None
    for segment in segments:
        if memo:
            key, request = remembered(variant, room, segment, ctx.line.comment, limits.max_options)
            if request is None:
                request = _build(ctx, segment, usage, prepare)
                remember(key, variant, request)
        else:
            request = _build(ctx, segment, usage, prepare)
        count = variant.dice_count(request)
        if count > limits.max_dice:
            raise UsageError(
                f"that is {count} dice; a roll may have at most {limits.max_dice}", usage=usage
            )
        requests.append(request)
    return requests


#: ``!roll`` where a hint writes it, alone (`` `!roll` reads…``) or with its arguments
_TAUGHT_ROLL = re.compile(r"`!roll(?=[ `])")


def _build(
    ctx: CommandContext, segment: str, usage: str, prepare: Callable[[Parsed], None] | None
) -> Any:
    """One roll of a message, parsed and built by the room's rule set."""
    variant = ctx.variant
    limits = ctx.app.config.limits
    words = tokens(segment)
    if not words:
        raise UsageError("one of the rolls between `;` is empty", usage=usage)
    resolver = ctx.resolver
    try:
        if resolver is None:
            parsed = parse(words, variant.grammar, max_options=limits.max_options)
        else:
            parsed = parse(
                words,
                variant.grammar,
                max_options=limits.max_options,
                pool=resolver.read,
                # a pool in numbers only reads as it always did, slots and all
                preset=resolver.preset if any(c.isalpha() for c in words[0]) else None,
                # the other side of `vs`, named (`vs Guard Wits+Awareness`)
                versus=getattr(resolver, "versus", None),
            )
            resolver.check(parsed)
        parsed.comment = ctx.line.comment
        if prepare is not None:
            prepare(parsed)
        request = variant.build(parsed, ctx.settings)
    except UsageError as error:
        if error.usage in (None, variant.grammar.usage):
            error.usage = usage
        written = f"`{ctx.line.prefix}{ctx.line.command}"
        if error.hint and written != "`!roll":  # taught with `!roll`: say `!odds`, `?throw`
            error.hint = _TAUGHT_ROLL.sub(written, error.hint)
        raise
    return request


@functools.lru_cache(maxsize=1024)
def split_line(text: str, prefixes: tuple[str, ...]) -> CommandLine | None:
    """:func:`~coterie.framework.grammar.split_command`, remembered for the texts most recently
    split (a :class:`CommandLine` is immutable; the same commands come again and again)."""
    return split_command(text, prefixes)
