"""``!help`` and ``!variant``: the room's commands and rule set, registered as an ordinary
plugin."""

from __future__ import annotations

from coterie.errors import UsageError
from coterie.framework.commands import Command, CommandContext, example_steps
from coterie.framework.grammar import localise, shorten, suggest
from coterie.hookimpl import hookimpl
from coterie.play.rooms import require_storyteller
from coterie.render.elements import BR, Code, Node, Text, bold, code


def help_command(ctx: CommandContext) -> list[Node]:
    prefix = ctx.settings.prefix
    variant = ctx.variant
    topic = ctx.args.strip().lower().removeprefix(prefix)
    topics = variant.help_topics()
    if not topic:
        body: list[Node] = [
            bold("coterie"),
            Text(f" — rules: {variant.title} ({variant.name})"),
            BR,
        ]
        for command in ctx.app.room_commands(variant.name):
            body += [code(prefix + command.name), Text(f" — {command.summary}"), BR]
        rolls = variant.roll_examples()
        body += [Text("Try "), code(f"{prefix}roll {rolls[0]}")]
        if len(rolls) > 1:
            body += [Text(" or "), code(f"{prefix}roll {rolls[1]}")]
        body += [Text("."), BR]
        body += [Text(f"{prefix}help COMMAND tells more, e.g. "), code(f"{prefix}help roll")]
        for name in topics:
            body += [Text(", "), code(f"{prefix}help {name}")]
        notes = variant.help_notes()
        return [*body, BR, *notes] if notes else body
    if topic in topics:
        return list(topics[topic])
    found = ctx.app.find_command(topic, variant.name)
    if found is not None and found.name != topic:  # a command's own name before another's alias
        named = [c for c in ctx.app.room_commands(variant.name) if c.name == topic]
        found = named[0] if named else found
    if found is None:
        names = [n for c in ctx.app.room_commands(variant.name) for n in c.names]
        close = suggest(topic, [*names, *topics])
        hint = f" Did you mean `{close}`?" if close else ""
        raise UsageError(
            f"there is no command or topic `{shorten(topic)}`.{hint}",
            usage="!help [COMMAND | TOPIC]",
        )
    if found.name == "roll":
        lines = [
            Code(localise(n.text, prefix)) if isinstance(n, Code) else n for n in variant.help()
        ]
        lines = [bold(f"{prefix}roll"), Text(f" ({variant.name})"), BR, *lines]
        return [*lines, *_examples(found, ctx)]
    if found.name == "odds":
        from coterie.rulekit.odds import odds_usage

        body = [code(localise(odds_usage(variant), prefix)), BR, Text(found.summary)]
        body += [BR, Text(found.details)]
        for word, meaning in variant.odds_options.items():
            body += [BR, code(word), Text(f" — {meaning}")]
        return [*body, *_examples(found, ctx)]
    body = [code(localise(found.usage_in(variant), prefix)), BR, Text(found.summary)]
    if found.details:
        body += [BR, Text(found.details)]
    return [*body, *_examples(found, ctx)]


def _examples(command: Command, ctx: CommandContext) -> list[Node]:
    """``Examples: !roll 7 6; !roll 3+4 8 wp``, in the room's rule set and prefix."""
    body: list[Node] = []
    for example in command.examples:
        body.append(Text("; " if body else "Examples: "))
        for index, (who, text) in enumerate(
            example_steps(example, ctx.variant, ctx.settings.prefix)
        ):
            body += [Text(" then ")] if index else []
            body.append(code(f"{who}: {text}" if who else text))
    return [BR, *body] if body else []


async def variant_command(ctx: CommandContext) -> list[Node]:
    wanted = ctx.args.strip().lower()
    variants = ctx.app.variants
    if not wanted:
        body: list[Node] = [Text("This room plays "), bold(ctx.variant.title), Text(".")]
        for name, variant in sorted(variants.items()):
            marker = "• " if name == ctx.variant.name else "  "
            body += [BR, Text(marker), code(name), Text(f" — {variant.title}")]
        body += [BR, Text(f"Switch with {ctx.settings.prefix}variant NAME.")]
        return body
    if wanted not in variants:
        close = suggest(wanted, list(variants))
        hint = f" Did you mean `{close}`?" if close else ""
        raise UsageError(
            f"there is no rule set `{shorten(wanted)}`.{hint} "
            f"Installed: {', '.join(sorted(variants))}.",
            usage="!variant [NAME]",
        )
    await require_storyteller(ctx, "switch the rule set")
    await ctx.app.update_room(ctx.message.room_key, store=ctx.store, variant=wanted)
    return [Text("This room now plays "), bold(variants[wanted].title), Text(f" ({wanted}).")]


@hookimpl
def coterie_commands() -> list[Command]:
    return [
        Command(
            name="help",
            summary="list the commands, or explain one",
            usage="!help [COMMAND | TOPIC]",
            examples=("!help", "!help roll"),
            handler=help_command,
            transaction=False,
        ),
        Command(
            name="variant",
            summary="show the room's rule set, or switch it",
            usage="!variant [NAME]",
            examples=("!variant", "!variant {variant}"),
            handler=variant_command,
        ),
    ]
