"""The documentation keeps up with the code: every hook and every CLI subcommand is documented."""

from __future__ import annotations

import argparse
import importlib
import inspect
import re
from pathlib import Path

import pluggy
import pytest

from coterie.framework import hookspecs
from coterie.ops.cli import build_parser

DOCS = Path(__file__).resolve().parent.parent / "docs"
HOOKS_DOC = DOCS / "plugin_hooks.md"
CLI_DOC = DOCS / "cli.md"

#: a hook section heading: ``## coterie_after_roll(app, message, variant, outcome)``
SECTION = re.compile(r"^## +(?P<name>[A-Za-z_][A-Za-z0-9_]*)\((?P<args>[^()]*)\) *$")


def hookspec_names() -> list[str]:
    """Every ``coterie_*`` attribute of :mod:`coterie.hookspecs` that pluggy reads as a hookspec."""
    pm = pluggy.PluginManager("coterie")
    return sorted(
        name
        for name in dir(hookspecs)
        if name.startswith("coterie_") and pm.parse_hookspec_opts(hookspecs, name) is not None
    )


def hookspec_arguments(name: str) -> list[str]:
    return list(inspect.signature(getattr(hookspecs, name)).parameters)


def documented_hooks() -> list[tuple[str, list[str]]]:
    """``(name, arguments)`` of every hook section in docs/plugin_hooks.md, in order."""
    sections = []
    for line in HOOKS_DOC.read_text(encoding="utf-8").splitlines():
        if not line.startswith("## "):
            continue
        match = SECTION.match(line)
        if match is None:
            assert not line[3:].strip().startswith("coterie_"), (
                f"malformed hook heading in {HOOKS_DOC.name}: {line!r} "
                "(expected '## hookname(arg, ...)')"
            )
            continue
        args = [arg.strip() for arg in match["args"].split(",") if arg.strip()]
        sections.append((match["name"], args))
    return sections


def test_there_are_hookspecs() -> None:
    assert "coterie_after_roll" in hookspec_names()


def test_every_hookspec_has_a_section() -> None:
    documented = [name for name, _ in documented_hooks()]
    missing = [name for name in hookspec_names() if name not in documented]
    assert not missing, f"hooks without a '## name(...)' section in {HOOKS_DOC.name}: {missing}"


def test_every_section_names_a_hookspec_once() -> None:
    specs = set(hookspec_names())
    documented = [name for name, _ in documented_hooks()]
    unknown = [name for name in documented if name not in specs]
    assert not unknown, f"{HOOKS_DOC.name} documents hooks that do not exist: {unknown}"
    twice = sorted({name for name in documented if documented.count(name) > 1})
    assert not twice, f"{HOOKS_DOC.name} documents these hooks more than once: {twice}"


@pytest.mark.parametrize("name", hookspec_names())
def test_section_arguments_match_the_hookspec(name: str) -> None:
    documented = dict(documented_hooks())
    if name not in documented:
        pytest.fail(f"{name} has no section in {HOOKS_DOC.name}")
    expected = hookspec_arguments(name)
    assert documented[name] == expected, (
        f"{HOOKS_DOC.name}: '## {name}({', '.join(documented[name])})' should be "
        f"'## {name}({', '.join(expected)})'"
    )


def subcommands(parser: argparse.ArgumentParser, prefix: str = "coterie") -> list[str]:
    """Every subcommand path, e.g. ``coterie roll`` and ``coterie config check``."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, subparser in action.choices.items():
                path = f"{prefix} {name}"
                found.append(path)
                found.extend(subcommands(subparser, path))
    return found


def test_every_cli_subcommand_is_documented() -> None:
    commands = subcommands(build_parser())
    assert "coterie roll" in commands and "coterie config check" in commands
    text = CLI_DOC.read_text(encoding="utf-8")
    missing = [
        command
        for command in commands
        if not re.search(rf"(?<![\w-]){re.escape(command)}(?![\w-])", text)
    ]
    assert not missing, f"subcommands not mentioned in {CLI_DOC.name}: {missing}"


# --- the API reference (issue 21) -----------------------------------------------------------------


def _api_modules() -> set[str]:
    found: set[str] = set()
    for page in (DOCS / "api").glob("*.md"):
        for line in page.read_text(encoding="utf-8").splitlines():
            if line.startswith("::: "):
                found.add(line[4:].strip())
    return found


def test_the_api_reference_documents_every_public_module_of_the_checklist() -> None:
    doc = (DOCS / "writing_plugins.md").read_text(encoding="utf-8")
    checklist = doc[doc.index("## Checklist") :]
    checklist = checklist[: checklist.index("* Keep `evaluate` pure")]
    named = set(re.findall(r"`(coterie(?:\.[a-z_0-9]+)*)`", checklist))
    forbidden = {
        "coterie.play",
        "coterie.ops",
        "coterie.framework.app",
        "coterie.rules",
        "coterie.commands",
    }
    public = named - forbidden - {"coterie", "coterie.dice"}
    assert public <= _api_modules(), public - _api_modules()
    # and the reference documents nothing the checklist does not call public
    assert _api_modules() - {"coterie.hookimpl"} <= public, _api_modules() - public
    for module in _api_modules():
        importlib.import_module(module)
