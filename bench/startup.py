"""Start-up benchmark: from starting ``coterie chat`` to its first answer, on a current schema.

``coterie chat`` (piped) is started on a config whose SQLite database already exists at the
newest schema (the usual restart), is sent ``!roll 3`` and timed until the roll's footer line
comes back: the interpreter, the imports, the plugins, opening the store, the first command.
Peers in the same run: the bare interpreter (``python -c pass``) and ``coterie chat`` on the
memory store (``memory://``: no database at all). Issue 18's target: <= 200 ms with a current
schema. The first run (which creates and migrates the database) is timed and shown apart.

Run: .venv/bin/python bench/startup.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import header

BIN = Path(sys.executable).parent


def first_answer(argv: list[str], env: dict[str, str], cwd: str) -> float:
    """Seconds from starting ``argv`` to the footer of its answer to ``!roll 3``."""
    began = time.perf_counter()
    process = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=cwd,
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write("!roll 3\n")
    process.stdin.flush()
    for line in process.stdout:
        if line.startswith("roll "):
            break
    else:
        raise AssertionError(f"no answer: {process.stderr.read() if process.stderr else ''}")
    elapsed = time.perf_counter() - began
    process.stdin.close()
    process.wait(timeout=30)
    return elapsed


def bare(argv: list[str], env: dict[str, str], cwd: str) -> float:
    began = time.perf_counter()
    subprocess.run(argv, env=env, cwd=cwd, check=True, capture_output=True)
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=9, help="timed starts of each side")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="coterie-startup-") as folder:
        config = Path(folder) / "coterie.toml"
        config.write_text('[plugins]\nenable = ["revised", "v5", "console"]\n', encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if k != "COTERIE_DATABASE_URL"}
        chat = [str(BIN / "coterie"), "chat", "--config", str(config), "--user", "lynn"]
        first = first_answer(chat, env, folder)  # creates and migrates data/coterie.db
        assert (Path(folder) / "data" / "coterie.db").exists()
        memory_env = {**env, "COTERIE_DATABASE_URL": "memory://"}
        sides: dict[str, list[float]] = {"sqlite": [], "memory": [], "python": []}
        for _ in range(args.runs):  # the sides take turns, so load changes hit them alike
            sides["sqlite"].append(first_answer(chat, env, folder))
            sides["memory"].append(first_answer(chat, memory_env, folder))
            sides["python"].append(bare([sys.executable, "-c", "pass"], env, folder))
    sqlite, memory, python = (statistics.median(sides[k]) for k in ("sqlite", "memory", "python"))
    print(header("start-up benchmark", f"median of {args.runs} starts per side, taking turns"))
    print(f"coterie chat, SQLite at the current schema, to first answer: {sqlite * 1e3:7.1f} ms")
    print(f"coterie chat, memory store (no database), to first answer:  {memory * 1e3:7.1f} ms")
    print(f"python -c pass (interpreter floor):                         {python * 1e3:7.1f} ms")
    print(f"first start (creates and migrates the database):            {first * 1e3:7.1f} ms")
    print(
        f"ratio SQLite / memory store: {sqlite / memory:.2f}x; SQLite / bare interpreter: "
        f"{sqlite / python:.1f}x   # target: SQLite <= 200 ms"
    )


if __name__ == "__main__":
    main()
