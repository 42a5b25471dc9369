"""``coterie new-plugin NAME``: a new rule-set plugin distribution, ready to install and test.

It writes ``coterie-NAME/`` with a ``pyproject.toml`` (the ``coterie`` entry point), a package
with a small rule set (d10 pool, each die at or above the difficulty is a success, with exact
odds), a docs page, a README and tests that use :mod:`coterie.testing` and pass as written.
Change the rules from there (docs/writing_plugins.md).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from coterie.errors import UsageError

_NAME = re.compile(r"[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*", re.ASCII)

PYPROJECT = """[build-system]
requires = ["hatchling>=1.24"]
build-backend = "hatchling.build"

[project]
name = "coterie-{name}"
version = "0.1.0"
description = "A coterie rule set: {name}"
requires-python = ">=3.11"
dependencies = ["coterie"]

[project.optional-dependencies]
test = ["pytest>=8"]

# the plugin's name for operators ([plugins] enable = ["{name}"]) and what pluggy registers
[project.entry-points.coterie]
{name} = "{package}"

[tool.hatch.build.targets.wheel]
packages = ["{package}"]

[tool.pytest.ini_options]
testpaths = ["tests"]
"""

README = """# coterie-{name}

A coterie rule set plugin, `{name}`: a pool of d10s against a difficulty; each die at or above
it is a success. Made with `coterie new-plugin {name}`: change the rules in
`{package}/variant.py`, the page in `docs/{name}.md`, the tests in `tests/`.

    pip install -e .            # then: coterie plugins, coterie roll --variant {name} --pool 5
    pytest                      # the tests use coterie.testing (installed with coterie)
"""

INIT = '''"""coterie-{name}: the ``{name}`` rule set as a coterie plugin."""

from __future__ import annotations

from typing import Any

from coterie import hookimpl
from coterie.framework.variant import Variant

from {package}.variant import {cls}Outcome, {cls}Request, {cls}Variant

__all__ = ["{cls}Outcome", "{cls}Request", "{cls}Variant"]


@hookimpl
def coterie_variants() -> list[Variant[Any, Any]]:
    return [{cls}Variant()]
'''

VARIANT = '''"""The ``{name}`` rule set: a pool of d10s against a difficulty; each die at or
above it is a success, no success is a failure. See docs/{name}.md."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from coterie.dice.odds import Distribution, Key, power
from coterie.errors import UsageError
from coterie.framework.grammar import Grammar, Parsed, Positional
from coterie.framework.variant import Outcome, OutcomeKind, RoomSettings, Variant
from coterie.render.elements import BR, Die, Node, Role, Text, bold, dice

SIDES = 10
DEFAULT_DIFFICULTY = 6

GRAMMAR = Grammar(
    usage="!roll POOL [DIFFICULTY] [# comment]",
    positionals=(
        Positional("pool", "dice pool, e.g. 5 or 3+2", kind="pool", required=True),
        Positional("difficulty", "difficulty 2-10 (default 6)", minimum=2, maximum=10),
    ),
)


@dataclass(frozen=True)
class {cls}Request:
    pool: int
    difficulty: int


@dataclass(frozen=True)
class {cls}Outcome(Outcome):
    variant: str
    faces: tuple[int, ...]
    difficulty: int
    successes: int
    outcome: str
    degree: str | None = None

    def render(self) -> list[Node]:
        roles = [Role.SUCCESS if f >= self.difficulty else Role.FAILURE for f in self.faces]
        n = self.successes
        result = f"{{n}} success{{'es' if n > 1 else ''}}" if n else "Failure"
        return [
            Text(f"{{len(self.faces)}} dice, difficulty {{self.difficulty}}: "),
            *dice([Die(face, role) for face, role in zip(self.faces, roles, strict=True)]),
            BR,
            bold(result),
        ]

    def extra_json(self) -> dict[str, Any]:
        return {{"difficulty": self.difficulty}}


class {cls}Variant(Variant[{cls}Request, {cls}Outcome]):
    name = "{name}"
    title = "{title}"
    summary = "d10 pool against a difficulty (default 6); each die at or above it is a success."
    default_difficulty = DEFAULT_DIFFICULTY
    grammar = GRAMMAR
    outcome_kinds = (OutcomeKind("success", win=True), OutcomeKind("failure"))

    def build(self, parsed: Parsed, settings: RoomSettings) -> {cls}Request:
        pool = parsed.pool()
        if pool is None or pool.total < 1:
            raise UsageError("roll at least one die")
        difficulty = parsed.int("difficulty") or self.room_difficulty(settings)
        return {cls}Request(pool.total, difficulty or DEFAULT_DIFFICULTY)

    def dice_count(self, request: {cls}Request) -> int:
        return request.pool

    def evaluate(self, request: {cls}Request, faces: Sequence[int]) -> {cls}Outcome:
        successes = sum(1 for face in faces if face >= request.difficulty)
        return {cls}Outcome(
            variant=self.name,
            faces=tuple(faces),
            difficulty=request.difficulty,
            successes=successes,
            outcome="success" if successes else "failure",
        )

    def odds(self, request: {cls}Request, options: frozenset[str] = frozenset()) -> Distribution:
        """Exact: one die is ``{{0: difficulty - 1, 1: 11 - difficulty}}``, a pool its power."""
        hit = SIDES + 1 - request.difficulty
        counts: dict[Key, int] = {{}}
        for successes, ways in power({{0: SIDES - hit, 1: hit}}, request.pool).items():
            key = ("success" if successes else "failure", successes)
            counts[key] = counts.get(key, 0) + ways
        roll = f"{{request.pool}} dice, difficulty {{request.difficulty}}"
        return Distribution(self.name, roll, ("success", "failure"), counts, SIDES**request.pool)
'''

DOC = """# `{name}`

{title}: a pool of ten-sided dice against a difficulty (2-10, default 6).

## The rules

* Each die at or above the difficulty is a success; no success is a failure.

## Chat syntax

```
!roll POOL [DIFFICULTY] [# comment]
```

## Machine interface

`coterie roll --variant {name} --json` prints the five standard keys plus `difficulty`.

## Odds

Exact: one die succeeds in `11 - difficulty` cases of 10; a pool is that die's power.
"""

TESTS = '''"""Tests of the {name} rule set, with coterie.testing's fixtures (no conftest needed)."""

from __future__ import annotations

from coterie.framework.grammar import Parsed, Pool
from coterie.framework.variant import RoomSettings

import {package}
from {package} import {cls}Variant

VARIANT = {cls}Variant()
#: registered as the entry point would be, so the tests pass before `pip install`
PLUGIN = ("{name}", {package})


def test_counts_dice_at_or_above_the_difficulty() -> None:
    request = VARIANT.build(Parsed(values={{"pool": Pool.of(4), "difficulty": 7}}),
                            RoomSettings(variant="{name}"))
    outcome = VARIANT.evaluate(request, [10, 7, 2, 1])
    assert (outcome.outcome, outcome.successes) == ("success", 2)
    assert outcome.as_json()["difficulty"] == 7


def test_chat(coterie_table) -> None:
    table = coterie_table([PLUGIN], faces=[8, 3, 6, 1])
    said = table.say("!roll 3 # the lock", user="ana")
    assert said.lines == ["ana — the lock", "3 dice, difficulty 6: 8 3 6", "2 successes"]
    assert table.say("!roll 1 7", user="ben", room="cellar").lines[-1] == "Failure"
    table.assert_rolled({{"user": "ana", "successes": 2, "outcome": "success"}})
    table.assert_rolled({{"user": "ben", "outcome": "failure"}}, room="cellar")


def test_bad_input_rolls_nothing(coterie_table) -> None:
    table = coterie_table([PLUGIN], faces=[])
    said = table.say("!roll 3 11")
    assert said.is_error and "difficulty" in said.text
    assert table.rolls() == []


def test_odds_add_up_and_match_by_hand(coterie_table) -> None:
    request = VARIANT.build(Parsed(values={{"pool": Pool.of(2)}}), RoomSettings(variant="{name}"))
    dist = VARIANT.odds(request)
    assert sum(dist.outcomes.values()) == 1
    assert float(dist.outcomes["failure"]) == 0.25  # both dice below 6: (5/10) ** 2
    table = coterie_table([PLUGIN])
    lines = table.say("!odds 2").lines
    assert lines[1] == "Chance of success: 75.0%"
    assert "success 75.0% · failure 25.0%" in lines
'''


def package_name(name: str) -> str:
    return "coterie_" + name.replace("-", "_")


def class_name(name: str) -> str:
    return "".join(part.capitalize() for part in re.split(r"[-_]", name))


def new_plugin(name: str, where: Path) -> Path:
    """Write ``where/coterie-NAME`` and return it; refuse a bad name or an existing directory."""
    if not _NAME.fullmatch(name) or len(name) > 40:
        raise UsageError(
            f"a plugin name is lower-case letters and digits, words joined by - or _, "
            f"starting with a letter (e.g. tally or my-rules), not {name!r}"
        )
    root = where / f"coterie-{name}"
    if root.exists():
        raise UsageError(f"{root} already exists: choose another name or directory")
    package = package_name(name)
    values = {
        "name": name,
        "package": package,
        "cls": class_name(name),
        "title": f"{class_name(name)} (a coterie rule set)",
    }
    files = {
        "pyproject.toml": PYPROJECT,
        "README.md": README,
        f"{package}/__init__.py": INIT,
        f"{package}/variant.py": VARIANT,
        f"docs/{name}.md": DOC,
        f"tests/test_{name.replace('-', '_')}.py": TESTS,
    }
    for relative, template in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(template.format(**values), encoding="utf-8")
    return root


def cmd_new_plugin(args: argparse.Namespace) -> int:
    """``coterie new-plugin NAME [--dir DIR]``."""
    root = new_plugin(args.name, Path(args.dir))
    sys.stdout.write(
        f"wrote {root}: pip install -e {root}, then `pytest {root}` and "
        f"`coterie roll --variant {args.name} --pool 5`\n"
    )
    return 0
