"""The ``coterie`` command line.

``coterie roll ... --json`` is a stable machine interface (see ``docs/cli.md``).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from coterie.errors import ConfigError, UsageError
from coterie.ops.parser import build_parser, command_of

if TYPE_CHECKING:
    from coterie.dice.sources import DiceSource
    from coterie.framework.config import Config

# Each command imports what it needs when it runs (start-up time, docs/performance.md): the
# parser (:mod:`coterie.ops.parser`, which names each command's function here) and this module
# import nothing of the app, the rule sets or the odds engine.
__all__ = ["EXIT_CONFIG", "EXIT_USAGE", "build_parser", "main"]

EXIT_USAGE = 2
EXIT_CONFIG = 3


def _config(path: str | None) -> Config:
    from coterie.framework.config import load_config

    return load_config(path or os.environ.get("COTERIE_CONFIG"))


def _app(config: Config, dice: DiceSource | None = None, store: Any = None) -> Any:
    from coterie.framework.app import Coterie

    return Coterie(config, dice=dice, store=store)


async def _open_store(config: Config, *, verbose: bool = False) -> Any:
    """The config's state store (``[state]``; SQLite under ``data_dir`` by default), migrated;
    Alembic's own lines only when something is migrated, or with ``verbose`` (``-v``)."""
    from coterie.storage.migrate import open_store

    return await open_store(config, verbose=verbose)


def _dice(seed: int | None) -> DiceSource:
    from coterie.dice.sources import SeededDice, SystemDice

    return SeededDice(seed) if seed is not None else SystemDice()


def cmd_chat(args: argparse.Namespace) -> int:
    from coterie.ops.lifecycle import describe_store, until_interrupted
    from coterie.ops.logs import setup_logging

    config = _config(args.config)
    # the terminal is the chat: only warnings unless [logging] level asks for more
    setup_logging(config, log_format=args.log_format, level=config.logging.level or "WARNING")
    app = _app(config, _dice(args.seed))
    # again, now that the adapters' settings schemas can say which keys name secrets
    level = config.logging.level or "WARNING"
    setup_logging(config, log_format=args.log_format, level=level, adapters=app.adapter_classes)
    settings = dict(config.adapters.get("console", {}))
    if args.user:
        settings["user"] = args.user
    if args.room:
        settings["room"] = args.room
    if args.storyteller:
        settings["storyteller"] = args.storyteller
    cls = app.adapter_classes.get("console")
    if cls is None:
        raise ConfigError("plugins.enable: the console adapter plugin is not enabled")
    if args.variant is not None and args.variant not in app.variants:
        raise UsageError(
            f"--variant: there is no rule set {args.variant!r}; "
            f"installed: {', '.join(sorted(app.variants))}"
        )

    async def main() -> None:
        app.state = await _open_store(config, verbose=args.verbose)
        sys.stderr.write(f"coterie: {describe_store(config)}\n")
        await app.start()
        try:
            if args.variant is not None:  # as if the room had said !variant NAME
                room = f"console:{settings.get('room') or 'table'}"
                await app.update_room(room, variant=args.variant)
            await cls(app, settings).run()
        finally:
            await app.stop()

    return until_interrupted(main)


def cmd_run(args: argparse.Namespace) -> int:
    import asyncio
    import contextlib
    import signal

    from coterie.ops.lifecycle import (
        describe_store,
        settle_memory,
        stop_on_signal,
        until_interrupted,
    )
    from coterie.ops.logs import setup_logging

    config = _config(args.config)
    setup_logging(config, log_format=args.log_format)
    from coterie.ops.health import apply_port_offset, serve_ops

    port_offset = apply_port_offset(config)
    app = _app(config)
    # again, now that the adapters' settings schemas can say which keys name secrets
    setup_logging(config, log_format=args.log_format, adapters=app.adapter_classes)
    names = config.enabled_adapters()
    if not names:
        raise ConfigError("no adapter is enabled: set enabled = true under [adapters.NAME]")

    async def main() -> None:
        # SIGINT (Ctrl-C) and SIGTERM alike: every adapter stops taking events and finishes what
        # is in flight (within [limits] shutdown_grace), then the process exits 0
        stopping = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):  # not on this platform
                loop.add_signal_handler(signum, stop_on_signal, stopping, signum)
        app.state = await _open_store(config, verbose=args.verbose)
        logging.getLogger("coterie").info("%s", describe_store(config))
        await app.start()
        settle_memory()
        ops = await serve_ops(app, names, port_offset=port_offset)
        try:
            await app.run_adapters(names, stopping=stopping)
        finally:
            if ops is not None:
                await ops.stop()
            await app.stop()

    return until_interrupted(main)


def cmd_plugins(args: argparse.Namespace) -> int:
    from coterie.framework.plugins import installed_plugins

    config = _config(args.config)
    app = _app(config)
    loaded = set(app.host.plugin_names)
    out = sys.stdout
    out.write("Installed plugins (entry points in the 'coterie' group):\n")
    for name, ep in sorted(installed_plugins().items()):
        state = "enabled" if name in loaded else "not enabled"
        out.write(f"  {name:<16} {ep.value:<32} {state}\n")
    out.write("Rule sets:\n")
    for name, variant in sorted(app.variants.items()):
        default = " (default)" if name == config.default_variant else ""
        out.write(f"  {name:<16} {variant.title}{default}\n")
    out.write("Commands:\n")
    for command in sorted(app.commands, key=lambda c: c.name):
        where = f" [{', '.join(command.variants)}]" if command.variants else ""
        out.write(f"  !{command.name:<15} {command.summary}{where} — {command.plugin}\n")
    out.write("Adapters:\n")
    for name, cls in sorted(app.adapter_classes.items()):
        state = "enabled" if name in config.enabled_adapters() else "not enabled"
        out.write(f"  {name:<16} {cls.summary} ({state})\n")
    if app.host.failures:
        out.write("Problems:\n")
        for failure in app.host.failures:
            out.write(f"  {failure.plugin}: {failure.where}: {failure.error}\n")
    return 0


def cmd_config_check(args: argparse.Namespace) -> int:
    from coterie.ops.configcheck import config_check

    return config_check(args.path or os.environ.get("COTERIE_CONFIG"), _app)


def cmd_db(args: argparse.Namespace) -> int:
    import asyncio

    from coterie.storage.migrate import (
        current,
        display_url,
        head_revision,
        is_memory_url,
        sqlite_file,
    )
    from coterie.storage.migrate import upgrade as upgrade_db

    config = _config(args.config)
    url = config.database_url()
    shown = display_url(url)
    if is_memory_url(url):
        sys.stdout.write(f"{shown}: an in-memory store has no schema; nothing to do\n")
        return 0
    head = head_revision()
    path = sqlite_file(url)
    if args.db_command == "current" and path is not None and not path.exists():
        sys.stdout.write(f"{shown}: no database yet (head is {head}; `coterie db upgrade`)\n")
        return 1
    before = asyncio.run(current(url))
    if args.db_command == "current":
        state = "head" if before == head else f"behind head {head}; run `coterie db upgrade`"
        sys.stdout.write(f"{shown}: {before or 'empty'} ({state})\n")
        return 0 if before == head else 1
    asyncio.run(upgrade_db(url))
    after = asyncio.run(current(url))
    if before == after:
        sys.stdout.write(f"{shown}: already at {after} (head)\n")
    else:
        sys.stdout.write(f"{shown}: upgraded from {before or 'empty'} to {after}\n")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    import asyncio

    from coterie.ops.export import room_log, to_json, to_markdown
    from coterie.storage.migrate import display_url, sqlite_file
    from coterie.storage.sql import SQLStore

    config = _config(args.config)
    url = config.database_url()
    path = sqlite_file(url)
    if path is not None and not path.exists():
        sys.stderr.write(f"coterie: no state database at {path}: nothing has been logged yet\n")
        return 1

    async def main() -> tuple[dict[str, Any], list[str]]:
        store = await _open_store(config)
        try:
            log = await room_log(store, args.room)
            rooms = await store.rooms() if isinstance(store, SQLStore) else []
            return log, rooms
        finally:
            await store.close()

    log, rooms = asyncio.run(main())
    if not log["rolls"]:
        hint = f"; rooms with rolls: {', '.join(rooms)}" if rooms else ""
        sys.stderr.write(
            f"coterie: no rolls logged in room {args.room!r} in {display_url(url)} "
            f"(a room is named platform:room, e.g. console:table){hint}\n"
        )
        return 1
    text = to_json(log) if args.format == "json" else to_markdown(log)
    if args.output in (None, "-"):
        sys.stdout.write(text)
        return 0
    try:
        with open(args.output, "w", encoding="utf-8") as out:
            out.write(text)
    except OSError as error:
        raise UsageError(f"-o: cannot write {args.output}: {error.strerror}") from None
    sys.stdout.write(f"{len(log['rolls'])} roll(s) of {args.room} written to {args.output}\n")
    return 0


def _faces(text: str) -> list[int]:
    try:
        faces = [int(part) for part in text.replace(" ", "").split(",") if part]
    except ValueError:
        raise UsageError(
            f"--faces takes numbers separated by commas, e.g. 9,1,1,8,1; not {text!r}"
        ) from None
    return faces


def _request(args: argparse.Namespace) -> tuple[Config, Any, Any]:
    """The config, rule set and request that ``--variant``, ``--pool`` and the option flags of
    ``coterie roll`` and ``coterie odds`` describe (flags a rule set has no option for are
    refused), checked against the dice limit."""
    import asyncio

    from coterie.framework.grammar import Parsed, Pool, check_range
    from coterie.ops.options import apply_options

    config = _config(args.config)
    app = _app(config)
    variant = app.variants.get(args.variant)
    if variant is None:
        raise UsageError(
            f"unknown variant {args.variant!r}; installed: {', '.join(sorted(app.variants))}"
        )
    values: dict[str, Any] = {"pool": Pool.of(args.pool)}
    extra = {
        "difficulty": args.difficulty,
        "hunger": args.hunger,
        "specialty": True if args.specialty else None,
        "willpower": True if args.willpower else None,
    }
    accepted = {o.dest for o in variant.grammar.options} | {
        p.name for p in variant.grammar.positionals
    }
    for key, value in extra.items():
        if value is None:
            continue
        if key not in accepted:
            raise UsageError(f"the {variant.name} rules have no {key} option")
        values[key] = value
    for slot in variant.grammar.positionals:
        value = values.get(slot.name)
        if isinstance(value, int) and not isinstance(value, bool):
            check_range(value, slot.minimum, slot.maximum, f"--{slot.name}")
    settings = asyncio.run(app.room_settings("cli:roll"))
    settings = apply_options(variant, getattr(args, "option", None) or [], values, settings)
    request = variant.build(Parsed(values=values), settings)
    count = variant.dice_count(request)
    if count > config.limits.max_dice:
        raise UsageError(f"that is {count} dice; a roll may have at most {config.limits.max_dice}")
    return config, variant, request


def cmd_roll(args: argparse.Namespace) -> int:
    from coterie.dice.sources import ReplayDice
    from coterie.render.encode import to_plain

    _, variant, request = _request(args)
    if args.faces is not None:
        # any roll replays, exploding dice and re-rolls included: the rule draws what it needs
        replay = ReplayDice(_faces(args.faces), what="--faces: ")
        outcome = variant.roll(request, replay)
        replay.finish()
    else:
        outcome = variant.roll(request, _dice(args.seed))
    if args.json:
        sys.stdout.write(json.dumps(outcome.as_json(), ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(to_plain(outcome.render()) + "\n")
    return 0


def cmd_odds(args: argparse.Namespace) -> int:
    from coterie.render.elements import BR
    from coterie.render.encode import to_plain
    from coterie.rulekit.odds import answer, chart_png, flagged, histogram

    _, variant, request = _request(args)
    options: set[str] = set()
    if args.reroll:
        if "reroll" not in variant.odds_options:
            raise UsageError(f"the {variant.name} rules have no reroll option for odds")
        options.add("reroll")
    dist = flagged(variant.odds(request, frozenset(options)), variant)
    if args.chart is not None:
        png = chart_png(dist)  # before any output: a missing matplotlib is a plain usage error
        try:
            with open(args.chart, "wb") as out:
                out.write(png)
        except OSError as error:
            raise UsageError(f"--chart: cannot write {args.chart}: {error.strerror}") from None
    if args.json:
        sys.stdout.write(json.dumps(dist.as_json(), ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(to_plain([*answer(dist), BR, *histogram(dist)]) + "\n")
        if args.chart is not None:
            sys.stdout.write(f"(chart saved to {args.chart})\n")
    return 0


def _new_plugin(args: argparse.Namespace) -> int:
    from coterie.ops.scaffold import cmd_new_plugin

    return cmd_new_plugin(args)


def _completion(args: argparse.Namespace) -> int:
    from coterie.ops.completion import script

    sys.stdout.write(script(build_parser(), args.shell))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    # only the named subcommand is declared: a line naming one parses as with them all
    parser = build_parser(command_of(sys.argv[1:] if argv is None else argv))
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        func = globals()[args.func] if isinstance(args.func, str) else args.func
        code: int = func(args)
    except UsageError as error:
        sys.stderr.write(f"coterie: {error.message}\n")
        return EXIT_USAGE
    except ConfigError as error:
        sys.stderr.write(f"coterie: {error}\n")
        return EXIT_CONFIG
    except KeyboardInterrupt:  # Ctrl-C before or after the command's own loop: one line
        sys.stderr.write("coterie: interrupted, stopped cleanly\n")
        return 0
    except BrokenPipeError:  # e.g. `coterie plugins | head`: the reader left, nothing to say
        sys.stderr.close()
        return 0
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
