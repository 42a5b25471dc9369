"""The architecture holds (docs/architecture.md): the import-linter contracts in pyproject.toml are
kept, and they would catch the cycles and wrong-way imports the flat core used to have; no core
module grows past ~500 lines without a written reason; the old module paths a third-party plugin
may use still work, with a DeprecationWarning."""

from __future__ import annotations

import ast
import importlib
import shutil
import subprocess
import sys
import tomllib
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "core" / "coterie"
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
#: a core module longer than this says at the top of its docstring why
MAX_LINES = 500
REASON = "Why this module is long:"

#: old path -> where it moved (the first module named holds the names checked below)
DEPRECATED = {
    "coterie.adapters": ("coterie.framework.adapter", "Adapter"),
    "coterie.app": ("coterie.framework.app", "Coterie"),
    "coterie.commands": ("coterie.framework.commands", "CommandContext"),
    "coterie.config": ("coterie.framework.config", "parse_config"),
    "coterie.d10": ("coterie.dice.d10", "count_successes"),
    "coterie.elements": ("coterie.render.elements", "Reply"),
    "coterie.encode": ("coterie.render.encode", "to_plain"),
    "coterie.grammar": ("coterie.framework.grammar", "Grammar"),
    "coterie.message": ("coterie.framework.message", "Message"),
    "coterie.odds": ("coterie.dice.odds", "Distribution"),
    "coterie.plugins": ("coterie.framework.plugins", "PluginHost"),
    "coterie.pools": ("coterie.rulekit.pools", "StorytellerActions"),
    "coterie.rules": ("coterie.framework.variant", "Variant"),
    "coterie.sqlstore": ("coterie.storage.sql", "SQLStore"),
    "coterie.state": ("coterie.storage.state", "RoomState"),
}


def _lint_imports(*args: str, cwd: Path = ROOT, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    return f"exit {done.returncode}\n{done.stdout}{done.stderr}"


def test_the_contracts_are_kept() -> None:
    out = _lint_imports()
    assert out.startswith("exit 0"), out
    assert "0 broken" in out


@pytest.mark.parametrize(
    ("module", "line", "broken"),
    [
        # the framework reaching up into play (what commands.roll_reply did with actions)
        ("framework/commands.py", "from coterie.play import clauses", "core layers"),
        # the engine importing the framework (what odds.py did with grammar)
        ("dice/odds.py", "from coterie.framework import grammar", "core layers"),
        # a cycle inside one package (app -> plugins -> app)
        ("framework/plugins.py", "from coterie.framework import app", "no import cycle"),
        # our own code on a deprecated path
        ("play/roll.py", "from coterie import rules", "deprecated"),
    ],
)
def test_a_wrong_way_import_breaks_a_contract(
    tmp_path: Path, module: str, line: str, broken: str
) -> None:
    """The contracts would catch the cycles of the flat core: the same wrong-way import added to a
    copy of the package fails `lint-imports` with a message naming the contract."""
    copy = tmp_path / "coterie"
    shutil.copytree(CORE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    target = copy / module
    target.write_text(target.read_text(encoding="utf-8") + f"\n{line}  # noqa\n", "utf-8")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = [
        c for c in config["tool"]["importlinter"]["contracts"] if c["id"] != "system-layers"
    ]
    lines = [
        "[importlinter]",
        "root_packages =",
        "    coterie",
        "exclude_type_checking_imports = True",
    ]
    for contract in contracts:
        fields = {
            key: [v for v in contract[key] if v.split(".")[0] == "coterie"]
            for key in ("layers", "source_modules", "forbidden_modules", "ancestors")
            if key in contract
        }
        if not all(fields.values()):  # a contract about the plugins only
            continue
        lines += ["", f"[importlinter:contract:{contract['id']}]"]
        lines += [f"{key} = {contract[key]}" for key in ("name", "type")]
        for key, values in fields.items():
            lines += [f"{key} =", *(f"    {value}" for value in values)]
    (tmp_path / ".importlinter").write_text("\n".join(lines) + "\n", encoding="utf-8")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path)}
    out = _lint_imports(str(tmp_path / ".importlinter"), cwd=tmp_path, env=env)
    assert not out.startswith("exit 0"), out
    assert "BROKEN" in out and broken in out, out


def _docstring_lines(path: Path) -> str:
    return ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""


def test_no_core_module_is_long_without_a_reason() -> None:
    long = [
        f"{path.relative_to(ROOT)} ({count} lines)"
        for path in sorted(CORE.rglob("*.py"))
        if (count := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
        and REASON not in _docstring_lines(path)
    ]
    assert not long, f"over {MAX_LINES} lines with no '{REASON}' in the docstring: {long}"


def test_every_core_package_is_described_in_the_architecture_doc() -> None:
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    packages = sorted(p.name for p in CORE.iterdir() if (p / "__init__.py").exists())
    assert packages, "no subpackages found"
    missing = [name for name in packages if f"`coterie.{name}`" not in doc]
    assert not missing, f"docs/architecture.md does not describe: {missing}"
    for module in sorted(CORE.rglob("*.py")):
        if module.parent == CORE or module.name == "__init__.py" or "migrations" in module.parts:
            continue
        dotted = ".".join(module.relative_to(CORE.parent).with_suffix("").parts)
        assert f"`{dotted}`" in doc or f"`{module.stem}`" in doc, f"{dotted} not in the doc"


@pytest.mark.parametrize("old", sorted(DEPRECATED))
def test_an_old_module_path_still_works_and_warns(old: str) -> None:
    new, name = DEPRECATED[old]
    sys.modules.pop(old, None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = importlib.import_module(old)
    assert any(
        issubclass(w.category, DeprecationWarning) and new in str(w.message) for w in caught
    ), [str(w.message) for w in caught]
    assert getattr(module, name) is getattr(importlib.import_module(new), name)


def test_the_old_dice_path_is_the_new_package() -> None:
    from coterie.dice import FixedDice
    from coterie.dice.sources import FixedDice as moved

    assert FixedDice is moved
