"""The ``coterie`` command line's arguments. Each subcommand names its function in
:mod:`coterie.ops.cli` (``func``), which imports what that command needs when it runs: parsing the
arguments imports nothing of the app (start-up time, docs/performance.md)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any

from coterie import __version__

LOG_FORMAT_HELP = "log lines as text or one JSON object each (default: [logging] format)"
VERBOSE_HELP = "also log the database migration library's own lines when nothing is migrated"


def _pool_arguments(parser: argparse.ArgumentParser) -> None:
    """The options ``coterie roll`` and ``coterie odds`` share: the rule set, the pool and what
    changes it."""
    parser.add_argument("--variant", required=True, help="rule set, e.g. revised")
    parser.add_argument("--pool", required=True, type=int, help="dice pool")
    parser.add_argument("--difficulty", type=int, help="difficulty")
    parser.add_argument("--hunger", type=int, help="Hunger dice (v5)")
    parser.add_argument("--specialty", action="store_true", help="a specialty applies")
    parser.add_argument("--willpower", action="store_true", help="spend Willpower")
    parser.add_argument(
        "--option",
        action="append",
        metavar="NAME[=VALUE]",
        help="a house rule or !roll option of the rule set, e.g. rote or chance_again=on",
    )


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``coterie`` command line. ``command``: declare only that subcommand, for parsing a
    line that names it (what :func:`coterie.ops.cli.main` does; see :func:`command_of`): its
    arguments, help and errors are the full parser's, without declaring the others' (~50
    arguments; each builds a help formatter, which asks the terminal its width)."""
    parser = argparse.ArgumentParser(
        prog="coterie", description="Storyteller dice bots for every chat platform."
    )
    parser.add_argument("--version", action="version", version=f"coterie {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, declare in _DECLARE.items():
        if command is None or command == name:
            declare(sub)
    return parser


def command_of(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` (the arguments after ``coterie``) names first, if it is one: the
    full parser reads that word as the subcommand whatever follows it. None otherwise (an
    option, a typo, nothing), for which the full parser is needed (its errors list them all)."""
    return argv[0] if argv and argv[0] in _DECLARE else None


_STATE_NOTE = (
    "State (room settings, sessions, the roll log) is kept in the store of [state] url or "
    "$COTERIE_DATABASE_URL, by default the SQLite file coterie.db under data_dir; it is "
    "created and migrated on start."
)


def _chat(sub: Any) -> None:
    chat = sub.add_parser(
        "chat",
        help="a chat room in the terminal",
        description=f"A chat room in the terminal. {_STATE_NOTE}",
    )
    chat.add_argument("--variant", help="the room's rule set (default: from the config)")
    chat.add_argument("--config", help="config file (default: $COTERIE_CONFIG or built-ins)")
    chat.add_argument("--seed", type=int, help="deterministic dice for demos and tests")
    chat.add_argument("--user", help="your name in the room")
    chat.add_argument("--room", help="the room's name (default: table)")
    chat.add_argument(
        "--storyteller", metavar="USER", help="this user has the Storyteller's rights in the room"
    )
    chat.add_argument("--log-format", choices=("text", "json"), help=LOG_FORMAT_HELP)
    chat.add_argument("-v", "--verbose", action="store_true", help=VERBOSE_HELP)
    chat.set_defaults(func="cmd_chat")


def _run(sub: Any) -> None:
    run = sub.add_parser(
        "run",
        help="start every adapter enabled in the config",
        description=f"Start every adapter enabled in the config. {_STATE_NOTE}",
    )
    run.add_argument("--config", help="config file")
    run.add_argument("--log-format", choices=("text", "json"), help=LOG_FORMAT_HELP)
    run.add_argument("-v", "--verbose", action="store_true", help=VERBOSE_HELP)
    run.set_defaults(func="cmd_run")


def _plugins(sub: Any) -> None:
    plugins = sub.add_parser("plugins", help="installed and enabled plugins")
    plugins.add_argument("--config", help="config file")
    plugins.set_defaults(func="cmd_plugins")


def _config(sub: Any) -> None:
    config = sub.add_parser("config", help="configuration tools")
    config_sub = config.add_subparsers(dest="config_command", required=True, metavar="ACTION")
    check = config_sub.add_parser("check", help="validate a config file")
    check.add_argument("path", nargs="?", help="the file (default: $COTERIE_CONFIG)")
    check.set_defaults(func="cmd_config_check")


def _db(sub: Any) -> None:
    db = sub.add_parser(
        "db",
        help="the state database ([state] url, $COTERIE_DATABASE_URL; default data_dir/coterie.db)",
    )
    db_sub = db.add_subparsers(dest="db_command", required=True, metavar="ACTION")
    for action, summary in (
        ("upgrade", "create or migrate the database to the newest schema"),
        ("current", "show the database's schema revision (exit 1 unless it is the newest)"),
    ):
        db_action = db_sub.add_parser(action, help=summary)
        db_action.add_argument("--config", help="config file")
        db_action.set_defaults(func="cmd_db")


def _export(sub: Any) -> None:
    export = sub.add_parser("export", help="a room's roll log as a session log (md or json)")
    export.add_argument("room", metavar="ROOM", help="the room key, e.g. console:table")
    export.add_argument("--format", choices=("md", "json"), default="md", help="default: md")
    export.add_argument("-o", "--output", metavar="FILE", help="write here (default: stdout)")
    export.add_argument("--config", help="config file")
    export.set_defaults(func="cmd_export")


def _roll(sub: Any) -> None:
    roll = sub.add_parser("roll", help="roll (or count a given roll) and print the result")
    _pool_arguments(roll)
    roll.add_argument("--faces", help="replay these faces instead of rolling, e.g. 9,1,1,8,1")
    roll.add_argument("--seed", type=int, help="deterministic dice")
    roll.add_argument("--json", action="store_true", help="print one JSON object")
    roll.add_argument("--config", help="config file")
    roll.set_defaults(func="cmd_roll")


def _odds(sub: Any) -> None:
    odds = sub.add_parser("odds", help="the exact odds of a roll (nothing is rolled)")
    _pool_arguments(odds)
    odds.add_argument(
        "--reroll", action="store_true", help="v5: re-roll failures with Willpower if it fails"
    )
    odds.add_argument("--json", action="store_true", help="print one JSON object")
    odds.add_argument("--chart", metavar="PNG", help="write a bar chart to this file")
    odds.add_argument("--config", help="config file")
    odds.set_defaults(func="cmd_odds")


def _completion(sub: Any) -> None:
    completion = sub.add_parser(
        "completion",
        help="print a shell completion script",
        description='Print a completion script: eval "$(coterie completion bash)" in ~/.bashrc '
        "(or zsh in ~/.zshrc).",
    )
    completion.add_argument("shell", choices=("bash", "zsh"), help="the shell")
    completion.set_defaults(func="_completion")


def _new_plugin(sub: Any) -> None:
    new = sub.add_parser(
        "new-plugin", help="write a new rule-set plugin distribution (with passing tests)"
    )
    new.add_argument("name", metavar="NAME", help="the plugin and rule set name, e.g. tally")
    new.add_argument("--dir", default=".", help="where to write coterie-NAME/ (default: here)")
    new.set_defaults(func="_new_plugin")


#: every subcommand, in the order ``coterie --help`` lists them, and what declares it
_DECLARE: dict[str, Callable[[Any], None]] = {
    "chat": _chat,
    "run": _run,
    "plugins": _plugins,
    "config": _config,
    "db": _db,
    "export": _export,
    "roll": _roll,
    "odds": _odds,
    "completion": _completion,
    "new-plugin": _new_plugin,
}
