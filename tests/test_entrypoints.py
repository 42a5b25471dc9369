"""The entry points a start reads come from an index only while nothing the scan would read has
changed: a distribution installed, removed or edited afterwards is never hidden (issue 18)."""

from __future__ import annotations

import importlib.machinery
import marshal
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from chat_probe import cached_env, chat_probe
from coterie.framework import entrypoints
from coterie.framework.entrypoints import found, scan
from coterie.framework.plugins import BUILTIN_GROUP, ENTRY_POINT_GROUP, PROVIDES_GROUP

GROUPS = (ENTRY_POINT_GROUP, BUILTIN_GROUP, PROVIDES_GROUP)
OLD = time.time() - 3600


def _age(*paths: Path) -> None:
    """Make these files and directories an hour old (what an install long done looks like)."""
    for path in paths:
        for item in [path, *(path.rglob("*") if path.is_dir() else [])]:
            os.utime(item, (OLD, OLD))


def _dist(site: Path, name: str, entry_points: str) -> Path:
    info = site / f"{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(entry_points, encoding="utf-8")
    return info


class Scans:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        real = entrypoints.scan

        def counted(*groups: str) -> Any:
            self.count += 1
            return real(*groups)

        monkeypatch.setattr(entrypoints, "scan", counted)


@pytest.fixture
def site(tmp_path, monkeypatch):
    site = tmp_path / "site"
    site.mkdir()
    _dist(site, "alpha_plugin", "[coterie]\nalpha = alpha_mod\n")
    _age(site)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    # what was just made is "settled" here (the test ages nothing by the clock); the test of
    # the rule itself puts it back
    monkeypatch.setattr(entrypoints, "SETTLED", 0.0)
    return site


def _names(result: entrypoints.Found) -> dict[str, str]:
    return {e.name: e.value for e in result.plugins}


def test_the_index_gives_what_the_scan_gives(tmp_path, site, monkeypatch):
    index = str(tmp_path / "index")
    scans = Scans(monkeypatch)
    first = found(*GROUPS, index=index)
    assert scans.count == 1 and Path(index).exists()
    again = found(*GROUPS, index=index)
    assert scans.count == 1  # nothing changed: no scan
    assert again.rows() == first.rows() == scan(*GROUPS).rows()
    assert _names(again)["alpha"] == "alpha_mod"
    assert {e.name for e in again.builtins or []} >= {"roll", "help", "dice"}
    assert {e.value for e in again.provides} >= {"coterie_revised", "coterie_console"}
    # entries load as importlib.metadata's do
    roll = next(e for e in again.builtins or [] if e.name == "roll")
    assert roll.load() is sys.modules["coterie.play.roll"]


def test_a_distribution_installed_later_is_seen(tmp_path, site, monkeypatch):
    index = str(tmp_path / "index")
    scans = Scans(monkeypatch)
    found(*GROUPS, index=index)
    _dist(site, "beta_plugin", "[coterie]\nbeta = beta_mod\n")  # pip install, an hour later
    assert _names(found(*GROUPS, index=index))["beta"] == "beta_mod"
    assert scans.count == 2


def test_a_distribution_removed_later_is_gone(tmp_path, site, monkeypatch):
    index = str(tmp_path / "index")
    found(*GROUPS, index=index)
    for item in sorted((site / "alpha_plugin-1.0.dist-info").iterdir()):
        item.unlink()
    (site / "alpha_plugin-1.0.dist-info").rmdir()
    assert "alpha" not in _names(found(*GROUPS, index=index))


def test_entry_points_edited_in_place_are_seen(tmp_path, site, monkeypatch):
    index = str(tmp_path / "index")
    found(*GROUPS, index=index)
    info = site / "alpha_plugin-1.0.dist-info"
    (info / "entry_points.txt").write_text("[coterie]\nalpha = alpha_two\n", encoding="utf-8")
    _age(site)  # even with every directory's time as it was, and the file's set back an hour
    os.utime(info / "entry_points.txt", (OLD + 1, OLD + 1))
    assert _names(found(*GROUPS, index=index))["alpha"] == "alpha_two"


def test_a_metadata_edit_in_place_is_seen(tmp_path, site, monkeypatch):
    index = str(tmp_path / "index")
    found(*GROUPS, index=index)
    info = site / "alpha_plugin-1.0.dist-info"
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: coterie-alpha\n", encoding="utf-8")
    os.utime(info / "METADATA", (OLD + 1, OLD + 1))
    alpha = next(e for e in found(*GROUPS, index=index).plugins if e.name == "alpha")
    assert alpha.dist.name == "coterie-alpha"


def test_another_sys_path_is_another_index(tmp_path, site, monkeypatch):
    index = str(tmp_path / "index")
    scans = Scans(monkeypatch)
    found(*GROUPS, index=index)
    other = tmp_path / "other"
    other.mkdir()
    _dist(other, "gamma_plugin", "[coterie]\ngamma = gamma_mod\n")
    _age(other)
    monkeypatch.syspath_prepend(str(other))
    assert "gamma" in _names(found(*GROUPS, index=index)) and scans.count == 2


def test_a_change_too_recent_to_be_sure_of_is_not_indexed(tmp_path, site, monkeypatch):
    monkeypatch.setattr(entrypoints, "SETTLED", 2.0)
    index = tmp_path / "index"
    _dist(site, "fresh_plugin", "[coterie]\nfresh = fresh_mod\n")  # within this clock tick
    scans = Scans(monkeypatch)
    assert "fresh" in _names(found(*GROUPS, index=str(index)))
    assert not index.exists()  # a later change in the same tick could keep the same time
    found(*GROUPS, index=str(index))
    assert scans.count == 2


def test_nothing_is_written_without_bytecode_writing(tmp_path, site, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    index = tmp_path / "index"
    scans = Scans(monkeypatch)
    assert "alpha" in _names(found(*GROUPS, index=str(index)))
    assert not index.exists()
    # the process's next look is checked against what it saw, not scanned again ...
    assert "alpha" in _names(found(*GROUPS, index=str(index))) and scans.count == 1
    # ... and still sees a change
    _dist(site, "beta_plugin", "[coterie]\nbeta = beta_mod\n")
    assert "beta" in _names(found(*GROUPS, index=str(index))) and scans.count == 2
    assert not index.exists()


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"not marshal at all",
        marshal.dumps([1, 2, 3]),
        marshal.dumps({"key": None}),
        marshal.dumps({"key": (1, 2), "seen": [("x", 1, 2, 3)], "rows": 5}),
    ],
)
def test_an_index_it_cannot_use_is_ignored(tmp_path, site, monkeypatch, content):
    index = tmp_path / "index"
    index.write_bytes(content)
    assert _names(found(*GROUPS, index=str(index)))["alpha"] == "alpha_mod"


def test_an_index_with_forged_rows_but_a_changed_place_is_not_used(tmp_path, site, monkeypatch):
    index = tmp_path / "index"
    found(*GROUPS, index=str(index))
    stored = marshal.loads(index.read_bytes())
    stored["rows"] = ([("alpha", "forged", "coterie", "x")], None, [])
    index.write_bytes(marshal.dumps(stored))
    entrypoints._memory.clear()  # as a new process: the file is read
    assert _names(found(*GROUPS, index=str(index))) == {"alpha": "forged"}  # trusted as is ...
    _dist(site, "delta_plugin", "")  # ... until anything it records changes
    assert _names(found(*GROUPS, index=str(index)))["alpha"] == "alpha_mod"


def test_no_index_when_another_finder_can_find_distributions(tmp_path, site, monkeypatch):
    from importlib.metadata import DistributionFinder, PathDistribution

    extra = tmp_path / "extra"
    extra.mkdir()
    info = _dist(extra, "hidden_plugin", "[coterie]\nhidden = hidden_mod\n")

    class Finder(DistributionFinder):
        def find_spec(self, *args: Any) -> None:
            return None

        def find_distributions(self, context: Any = None) -> Any:
            return iter([PathDistribution(info)])

    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, Finder()])
    index = tmp_path / "index"
    assert "hidden" in _names(found(*GROUPS, index=str(index)))
    assert not index.exists()
    assert sys.meta_path[-1].__class__ is Finder
    assert importlib.machinery.PathFinder in sys.meta_path


HELLO = """
from coterie import hookimpl
from coterie.framework.commands import Command
from coterie.render.elements import Text


def hello(ctx):
    return [Text("hello from a plugin installed later")]


@hookimpl
def coterie_commands():
    return [Command(name="hello", summary="says hello", usage="!hello", handler=hello)]
"""


def test_a_plugin_installed_after_the_index_was_written_is_found(tmp_path, cli_env):
    """End to end: a chat start writes the index; the next one reads no distribution metadata;
    a plugin installed then is found by the start after, and answers."""
    work, site = tmp_path / "work", tmp_path / "site"
    work.mkdir()
    site.mkdir()
    (tmp_path / "coterie.toml").write_text("", encoding="utf-8")  # enable = ["*"]
    env = cached_env(cli_env, tmp_path)
    env["PYTHONPATH"] = os.pathsep.join([str(site), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)

    def start(line: str) -> tuple[str, set[str]]:
        out, report = chat_probe(tmp_path, env, [line], cwd=work)
        return out, set(report["modules"])

    start("!roll 3")  # creates the database
    time.sleep(entrypoints.SETTLED + 0.2)  # an install long done: its times are settled
    # (a first start slower than SETTLED, on a loaded machine, found the new site directory
    # settled already and wrote an index: the next start would then read it, not scan)
    for written in (tmp_path / "pycache").rglob("entrypoints.*.index"):
        written.unlink()
    _, modules = start("!roll 3")  # scans, writes the index
    assert "importlib.metadata" in modules
    indexes = list((tmp_path / "pycache").rglob("entrypoints.*.index"))
    assert indexes, "the second start wrote no index"
    out, modules = start("!roll 3")
    assert "3 dice" in out, out
    # (a change to any sys.path directory by something else during the test would also do this)
    assert "importlib.metadata" not in modules, "the third start scanned: the index was refused"
    assert "email" not in modules
    out, _ = start("!hello")
    assert "hello from a plugin installed later" not in out
    (site / "hello_plugin.py").write_text(HELLO, encoding="utf-8")
    _dist(site, "hello_plugin", "[coterie]\nhello = hello_plugin\n")  # pip install
    out, modules = start("!hello")
    assert "hello from a plugin installed later" in out, out
    assert "importlib.metadata" in modules
