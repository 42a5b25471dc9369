"""``coterie new-plugin NAME`` (issue 21): the package it writes installs as a plugin and its
tests, written with coterie.testing, pass as generated; its code is lint- and type-clean."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from coterie.ops.cli import main

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def test_the_generated_plugin_passes_its_own_tests(tmp_path: Path, capsys) -> None:
    assert main(["new-plugin", "my-rules", "--dir", str(tmp_path)]) == 0
    root = tmp_path / "coterie-my-rules"
    assert f"wrote {root}" in capsys.readouterr().out
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    assert files == [
        "README.md",
        "coterie_my_rules/__init__.py",
        "coterie_my_rules/variant.py",
        "docs/my-rules.md",
        "pyproject.toml",
        "tests/test_my_rules.py",
    ]
    assert 'my-rules = "coterie_my_rules"' in (root / "pyproject.toml").read_text()
    env = {**os.environ, "PYTHONPATH": str(root)}
    env.pop("COTERIE_CONFIG", None)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 passed" in done.stdout
    lint = subprocess.run(
        [
            str(BIN / "ruff"),
            "check",
            "--isolated",
            "--line-length",
            "100",
            "--select",
            "E,F,W,I,B,UP,SIM,RUF",
            ".",
        ],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert lint.returncode == 0, lint.stdout
    typed = subprocess.run(
        [str(BIN / "mypy"), "--strict", "--no-incremental", "coterie_my_rules"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert typed.returncode == 0, typed.stdout


@pytest.mark.parametrize("name", ["My", "9lives", "a b", "x--y", ""])
def test_bad_names_are_refused(tmp_path: Path, capsys, name: str) -> None:
    assert main(["new-plugin", name, "--dir", str(tmp_path)]) == 2
    assert "a plugin name is lower-case letters" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_an_existing_directory_is_left_alone(tmp_path: Path, capsys) -> None:
    (tmp_path / "coterie-tally").mkdir()
    assert main(["new-plugin", "tally", "--dir", str(tmp_path)]) == 2
    assert "already exists" in capsys.readouterr().err
    assert list((tmp_path / "coterie-tally").iterdir()) == []
