"""``coterie COMMAND ...`` is parsed by a parser declaring only COMMAND (issue 18, start-up): the
result, the help and every error are the full parser's."""

from __future__ import annotations

import contextlib
import io
from typing import Any

import pytest

from coterie.ops.parser import build_parser, command_of

LINES = [
    ["chat"],
    ["chat", "--config", "c.toml", "--user", "lynn", "--room", "den", "-v"],
    ["chat", "--seed", "7", "--variant", "v5", "--storyteller", "ann", "--log-format", "json"],
    ["chat", "--seed", "seven"],
    ["chat", "--log-format", "xml"],
    ["chat", "--version"],
    ["chat", "--bogus"],
    ["chat", "extra"],
    ["chat", "--conf", "c.toml"],  # an abbreviated option
    ["run", "--config", "c.toml"],
    ["run", "-v", "--log-format", "text"],
    ["plugins"],
    ["plugins", "--config", "x"],
    ["config"],
    ["config", "check"],
    ["config", "check", "c.toml"],
    ["config", "nope"],
    ["db"],
    ["db", "upgrade", "--config", "c.toml"],
    ["db", "current"],
    ["db", "downgrade"],
    ["export", "console:table"],
    ["export", "console:table", "--format", "json", "-o", "out.json"],
    ["export"],
    ["roll", "--variant", "revised", "--pool", "5"],
    ["roll", "--variant", "revised", "--pool", "five"],
    ["roll", "--pool", "5"],
    ["roll", "--variant", "v5", "--pool", "5", "--hunger", "2", "--option", "a=b", "--json"],
    ["odds", "--variant", "v5", "--pool", "4", "--reroll", "--chart", "c.png"],
    ["completion", "bash"],
    ["completion", "fish"],
    ["new-plugin", "tally", "--dir", "somewhere"],
    ["new-plugin"],
]
COMMANDS = sorted({line[0] for line in LINES})


def _outcome(parser_for: Any, argv: list[str]) -> tuple[Any, ...]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            result: Any = sorted(vars(parser_for(argv).parse_args(argv)).items())
        except SystemExit as stop:
            result = ("exit", stop.code)
    return result, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("argv", LINES + [[c, "--help"] for c in COMMANDS], ids=" ".join)
def test_a_line_naming_a_command_parses_as_with_every_command_declared(argv, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    assert command_of(argv) == argv[0]
    partial = _outcome(lambda line: build_parser(command_of(line)), argv)
    assert partial == _outcome(lambda line: build_parser(), argv)


@pytest.mark.parametrize(
    "argv", [[], ["--help"], ["--version"], ["chatt"], ["-v", "chat"], ["--", "chat"]], ids=str
)
def test_anything_else_gets_the_full_parser(argv):
    assert command_of(argv) is None


def test_every_command_is_covered():
    full = build_parser()
    [sub] = [a for a in full._actions if a.dest == "command"]
    assert sorted(sub.choices) == COMMANDS  # type: ignore[arg-type]
    for command in COMMANDS:
        [only] = [a for a in build_parser(command)._actions if a.dest == "command"]
        assert list(only.choices) == [command]  # type: ignore[arg-type]
