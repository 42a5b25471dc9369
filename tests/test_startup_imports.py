"""Start-up imports what the first answer needs (issue 18): coterie's own rule sets and adapters are
deferred plugins, imported when first needed; the command line imports per command.

Checked on ``sys.modules`` of a real ``coterie chat`` in a subprocess, not on a clock."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from chat_probe import cached_env, chat_probe
from coterie.framework.app import Coterie
from coterie.framework.config import parse_config
from coterie.framework.entrypoints import SETTLED
from coterie.framework.plugins import PROVIDES_GROUP, PluginHost, _installed

OTHER_RULE_SETS = ("coterie_v5", "coterie_d6", "coterie_laia", "coterie_crossover")
ADAPTERS = ("coterie_slack", "coterie_telegram", "coterie_matrix")
#: never needed to answer a roll on a current schema
HEAVY = (
    "sqlalchemy",
    "alembic",
    "prometheus_client",
    "matplotlib",
    "slack_bolt",
    "telegram",
    "nio",
)


def chat(
    tmp_path: Path, env: dict[str, str], lines: list[str], config: str = ""
) -> tuple[str, set[str]]:
    """Run ``coterie chat`` (piped, on the SQLite store) with these input lines: its output and the
    modules it had imported when it ended."""
    (tmp_path / "coterie.toml").write_text(config, encoding="utf-8")
    env = {k: v for k, v in env.items() if k != "COTERIE_DATABASE_URL"}
    out, report = chat_probe(tmp_path, env, lines)
    return out, set(report["modules"])


def imported(modules: set[str], package: str) -> bool:
    return package in modules or any(m.startswith(package + ".") for m in modules)


def test_a_roll_in_chat_imports_only_its_rule_set_and_the_console(tmp_path, cli_env):
    # the default config enables every installed plugin (`enable = ["*"]`); the first start
    # creates the database, the second finds it at the current schema (the usual restart)
    _, first = chat(tmp_path, cli_env, [])
    assert imported(first, "alembic")
    out, modules = chat(tmp_path, cli_env, ["!roll 3"])
    assert "3 dice, difficulty 6" in out
    assert "coterie_revised" in modules and "coterie_console" in modules
    assert [p for p in OTHER_RULE_SETS + ADAPTERS if imported(modules, p)] == []
    assert [p for p in HEAVY if imported(modules, p)] == []
    # the odds commands' engine waits for `!odds` (the roll's expected successes use the rule
    # set's own odds, not it)
    assert "coterie.rulekit.odds" not in modules


def test_a_rule_set_is_imported_when_a_room_plays_it(tmp_path, cli_env):
    out, modules = chat(tmp_path, cli_env, ["!variant v5", "!roll 4 hunger 2"])
    assert "Vampire: the Masquerade 5th" in out or "v5" in out
    assert "4 dice" in out, out
    assert "coterie_v5" in modules
    assert [
        p for p in ("coterie_d6", "coterie_laia", "coterie_crossover") if imported(modules, p)
    ] == []
    assert [p for p in ADAPTERS if imported(modules, p)] == []


def test_what_needs_every_rule_set_still_has_them(tmp_path, cli_env):
    out, modules = chat(tmp_path, cli_env, ["!variant", "!rouse"])
    for name in ("revised", "v5", "d6", "laia", "crossover"):
        assert name in out
    assert "belongs to" in out  # !rouse is v5's: the room is told which rule set has it
    assert all(imported(modules, p) for p in OTHER_RULE_SETS)


def test_the_command_line_alone_imports_no_app():
    probe = textwrap.dedent(
        """
        import sys
        from coterie.ops.cli import build_parser
        build_parser().parse_args(["chat"])
        print(" ".join(sorted(sys.modules)))
        """
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    modules = set(done.stdout.split())
    assert "coterie.ops.parser" in modules
    for heavy in ("coterie.framework", "coterie.play", "coterie_revised", "pydantic", "asyncio"):
        assert not imported(modules, heavy), heavy


# --- the declarations match the plugins --------------------------------------------------------

DISCOVERY_HOOKS = {
    "coterie_variants",
    "coterie_commands",
    "coterie_adapters",
    "coterie_character_templates",
}


def test_every_deferred_plugin_declares_exactly_what_it_provides():
    plugins, _ = _installed()
    host = PluginHost()
    host.load(["*"], defer=True)
    assert set(host.deferred) == {
        "console",
        "slack",
        "telegram",
        "matrix",
        "revised",
        "v5",
        "d6",
        "laia",
        "crossover",
    }, f"the {PROVIDES_GROUP} entry points changed"
    eager = PluginHost()
    eager.load(list(host.deferred))
    app = Coterie(parse_config({"plugins": {"enable": list(host.deferred)}}), host=eager)
    assert list(eager.failures) == []
    for name, (entry_point, declared) in host.deferred.items():
        plugin = eager.pm.get_plugin(name)
        variants = {v.name for _, vs in eager.call_some([name], "coterie_variants") for v in vs}
        adapters = {a.name for _, cs in eager.call_some([name], "coterie_adapters") for a in cs}
        assert set(declared) == {("variant", v) for v in variants} | {
            ("adapter", a) for a in adapters
        }
        assert entry_point.value == plugins[name].value
        # only discovery hooks: a deferred plugin is imported late, so it may not need a start
        hooks = {impl.name for impl in eager.pm.get_hookcallers(plugin) or []}
        assert hooks <= DISCOVERY_HOOKS, (name, hooks - DISCOVERY_HOOKS)
        # its commands are its own rule sets': a room on another one never needs it
        for command in app.commands:
            if command.plugin == name:
                assert command.variants and set(command.variants) <= variants, command.name


@pytest.mark.parametrize("defer", [True, False])
def test_deferred_or_not_the_app_is_the_same(defer):
    host = PluginHost()
    host.load(["*"], defer=defer)
    app = Coterie(parse_config({}), host=host)
    summary = (
        list(app.variants),  # in the same order, too: what iterates them sees no difference
        list(app.adapter_classes),
        [(c.name, c.plugin, c.variants) for c in app.commands],
        sorted(app.character_templates),
        sorted(k for k, v in app.variants.items() if v.character_template is not None),
        sorted((f.plugin, f.where) for f in app.host.failures),
    )
    other = PluginHost()
    other.load(["*"], defer=not defer)
    again = Coterie(parse_config({}), host=other)
    assert summary == (
        list(again.variants),
        list(again.adapter_classes),
        [(c.name, c.plugin, c.variants) for c in again.commands],
        sorted(again.character_templates),
        sorted(k for k, v in again.variants.items() if v.character_template is not None),
        sorted((f.plugin, f.where) for f in again.host.failures),
    )
    assert {"revised", "v5", "d6", "laia", "crossover"} <= set(summary[0])
    assert {"console", "slack", "telegram", "matrix"} <= set(summary[1])


async def test_a_deferred_rule_set_that_fails_to_import_is_reported_when_needed(monkeypatch, say):
    host = PluginHost()
    host.load(["revised", "v5"], defer=True)
    entry_point, provided = host.deferred["v5"]

    class Broken:
        value = entry_point.value
        dist = entry_point.dist

        def load(self) -> object:
            raise ImportError("v5 needs a module that is not installed")

    host.deferred["v5"] = (Broken(), provided)  # type: ignore[assignment]
    app = Coterie(parse_config({"plugins": {"enable": ["revised", "v5"]}}), host=host)
    assert list(host.failures) == []  # nothing needed it yet
    reply = await say(app, "!variant v5")
    assert reply is not None and "there is no rule set `v5`" in reply
    [failure] = host.failures
    assert (failure.plugin, failure.where) == ("v5", "load")
    assert "not installed" in failure.error
    assert "3 dice" in (await say(app, "!roll 3") or "")


def test_a_warm_start_reads_no_distribution_metadata_and_compiles_no_dataclass(tmp_path, cli_env):
    # as an installed coterie starts: bytecode written (here under a prefix of the test's own),
    # so the entry points' index and the dataclasses' methods are kept beside it
    # (coterie.framework.entrypoints, coterie.records); the first start writes them
    (tmp_path / "coterie.toml").write_text("", encoding="utf-8")
    env = cached_env(cli_env, tmp_path)
    work = tmp_path / "work"  # on sys.path (python -c): its times must be settled
    (work / "data").mkdir(parents=True)
    time.sleep(SETTLED + 0.2)
    reports = []
    for _ in range(2):
        out, report = chat_probe(tmp_path, env, ["!roll 3"], cwd=work)
        assert "3 dice, difficulty 6" in out
        reports.append(report)
    cold, warm = reports
    assert "importlib.metadata" in cold["modules"] and cold["compiled"] > 100
    for module in ("importlib.metadata", "email", "zipfile", "csv"):
        assert module not in warm["modules"], module
    assert warm["compiled"] == 0
