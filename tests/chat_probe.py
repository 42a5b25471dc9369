"""``coterie chat`` in a subprocess, reporting what a start did: the modules it had imported when
it ended and how many dataclass method texts it compiled (``coterie.records``)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

PROBE = """
import json, sys
from coterie.ops.cli import main
code = main(["chat", "--config", sys.argv[1], "--user", "lynn"])
from coterie.records import compiled_here
with open(sys.argv[2], "w", encoding="utf-8") as out:
    json.dump({"code": code, "modules": sorted(sys.modules), "compiled": compiled_here()}, out)
"""


def cached_env(cli_env: Mapping[str, str], tmp_path: Path) -> dict[str, str]:
    """The environment of an installed coterie's start: bytecode written (under a prefix of the
    test's own, where the start-up caches go too), the state in SQLite."""
    env = {
        k: v
        for k, v in cli_env.items()
        if k not in ("COTERIE_DATABASE_URL", "PYTHONDONTWRITEBYTECODE")
    }
    env["PYTHONPYCACHEPREFIX"] = str(tmp_path / "pycache")
    return env


def chat_probe(
    tmp_path: Path, env: Mapping[str, str], lines: list[str], cwd: Path | None = None
) -> tuple[str, dict[str, Any]]:
    """Run ``coterie chat`` on ``tmp_path/coterie.toml`` with these input lines: its output and
    the report (``code``, ``modules``, ``compiled``)."""
    report = tmp_path / "probe.json"
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path / "coterie.toml"), str(report)],
        input="".join(line + "\n" for line in lines),
        capture_output=True,
        text=True,
        env=dict(env),
        cwd=cwd or tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))
    assert result["code"] == 0, done.stderr
    return done.stdout, result
