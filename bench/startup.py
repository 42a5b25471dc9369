"""Start-up benchmark: from starting ``coterie chat`` to its prompt and its first answer, on a
current schema.

``coterie chat`` (piped) is started on a config whose SQLite database already exists at the
newest schema (the usual restart), is sent ``!roll 3`` and timed until the roll's footer line
comes back: the interpreter, the imports, the plugins, opening the store, the first command.
Peers in the same run: the bare interpreter (``python -c pass``) and ``coterie chat`` on the
memory store (``memory://``: no database at all). The same ``coterie chat`` also starts on a
pseudo-terminal (answered as a terminal answers), timed to its prompt and to its line editor's
own prompt: issue 18's target, <= 200 ms to the chat prompt with a current schema. The first run
(which creates and migrates the database) is timed and shown apart, after an untimed first start
in another folder has compiled the bytecode. ``--before BIN`` adds another install's ``coterie``
script (e.g. the main branch's checkout) as a side taking turns with the others, on the same
database, piped and on a terminal.

Each start's CPU time (user + system, read from ``/proc`` when the answer arrives) is shown beside
its wall time: on a shared machine it moves less with the load.

Bytecode: an installed coterie has its modules compiled (pip writes the ``.pyc`` files), but an
editable install under ``PYTHONDONTWRITEBYTECODE=1`` compiles every module of the project on every
start (~40% of the start here). So the starts run with a bytecode cache of their own
(``PYTHONPYCACHEPREFIX`` in a temporary directory, filled by a first start that is not timed), as
an installed coterie would; ``--no-bytecode-cache`` times them with whatever the environment says.

``--all-plugins`` starts on the default config (``enable = ["*"]``) instead of one enabling revised,
v5 and the console.

Run: .venv/bin/python bench/startup.py [--runs N] [--before PATH/TO/coterie] [--all-plugins]
[--no-bytecode-cache]
"""

from __future__ import annotations

import argparse
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import cpu_seconds, header

BIN = Path(sys.executable).parent


def first_answer(argv: list[str], env: dict[str, str], cwd: str) -> tuple[float, float]:
    """Seconds from starting ``argv`` to the footer of its answer to ``!roll 3``, and the CPU
    seconds it had used then."""
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
    cpu = cpu_seconds(process.pid)
    process.stdin.close()
    process.wait(timeout=30)
    return elapsed, cpu


#: what prompt_toolkit writes when its prompt starts (bracketed paste on)
EDITOR_STARTS = b"\x1b[?2004h"
#: a cursor position request, and a terminal's answer to it (prompt_toolkit asks one)
WHERE_AM_I, HERE = b"\x1b[6n", b"\x1b[1;1R"


def on_terminal(argv: list[str], env: dict[str, str], cwd: str) -> tuple[float, float, float]:
    """``argv`` (a chat) on a pseudo-terminal, answered as a terminal answers: seconds from its
    start to its prompt (``lynn>`` written: from then on, keys typed are kept), to its line
    editor's own prompt (history and completion work from then on), and the CPU seconds used
    by then. Left with Ctrl-D."""
    master, slave = os.openpty()
    began = time.perf_counter()
    process = subprocess.Popen(
        argv, stdin=slave, stdout=slave, stderr=slave, env={**env, "TERM": "xterm"}, cwd=cwd
    )
    os.close(slave)
    out = b""
    prompt = editor = None
    try:
        while editor is None and time.perf_counter() - began < 30:
            ready, _, _ = select.select([master], [], [], 0.5)
            if not ready:
                continue
            chunk = os.read(master, 65536)
            now = time.perf_counter() - began
            out += chunk
            if WHERE_AM_I in chunk:
                os.write(master, HERE)
            if prompt is None and b"lynn>" in out:
                prompt = now
            started = out.find(EDITOR_STARTS)
            if started >= 0 and b"lynn>" in out[started:]:
                editor = now
        assert prompt is not None and editor is not None, out[-500:]
        cpu = cpu_seconds(process.pid)
        os.write(master, b"\x04")  # Ctrl-D: bye
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
        os.close(master)
    return prompt, editor, cpu


def bare(argv: list[str], env: dict[str, str], cwd: str) -> tuple[float, float]:
    began = time.perf_counter()
    used = os.times()
    subprocess.run(argv, env=env, cwd=cwd, check=True, capture_output=True)
    now = os.times()
    cpu = now.children_user + now.children_system - used.children_user - used.children_system
    return time.perf_counter() - began, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=9, help="timed starts of each side")
    parser.add_argument(
        "--before", metavar="BIN", help="another install's coterie script, timed too"
    )
    parser.add_argument(
        "--all-plugins",
        action="store_true",
        help='the default config (enable = ["*"]) instead of revised, v5 and console',
    )
    parser.add_argument(
        "--no-bytecode-cache",
        action="store_true",
        help="no bytecode cache of the benchmark's own (PYTHONDONTWRITEBYTECODE=1 recompiles)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="coterie-startup-") as folder:
        config = Path(folder) / "coterie.toml"
        enable = "" if args.all_plugins else '[plugins]\nenable = ["revised", "v5", "console"]\n'
        config.write_text(enable, encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if k != "COTERIE_DATABASE_URL"}
        if not args.no_bytecode_cache:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = str(Path(folder) / "pycache")
        chat = [str(BIN / "coterie"), "chat", "--config", str(config), "--user", "lynn"]
        # a first start elsewhere fills the bytecode cache (Alembic's and SQLAlchemy's modules
        # included, which only a migration imports), as installing does: not timed
        warm = Path(folder) / "warm"
        warm.mkdir()
        first_answer(chat, env, str(warm))
        first, _ = first_answer(chat, env, folder)  # creates and migrates data/coterie.db
        assert (Path(folder) / "data" / "coterie.db").exists()
        memory_env = {**env, "COTERIE_DATABASE_URL": "memory://"}
        commands = {"sqlite": (chat, env), "memory": (chat, memory_env)}
        if args.before:
            commands["before"] = ([args.before, *chat[1:]], env)
            first_answer(commands["before"][0], env, folder)  # its bytecode, not timed
        sides: dict[str, list[tuple[float, float]]] = {name: [] for name in [*commands, "python"]}
        terminal: dict[str, list[tuple[float, float, float]]] = {"sqlite": []}
        if args.before:
            terminal["before"] = []
        for _ in range(args.runs):  # the sides take turns, so load changes hit them alike
            for name, (argv, side_env) in commands.items():
                sides[name].append(first_answer(argv, side_env, folder))
                if name in terminal:
                    terminal[name].append(on_terminal(argv, side_env, folder))
            sides["python"].append(bare([sys.executable, "-c", "pass"], env, folder))
    wall = {k: statistics.median(w for w, _ in v) for k, v in sides.items()}
    cpu = {k: statistics.median(c for _, c in v) for k, v in sides.items()}
    cache = "no bytecode cache" if args.no_bytecode_cache else "modules' bytecode cached"
    plugins = "every installed plugin" if args.all_plugins else "revised, v5, console"
    detail = f"median of {args.runs} starts per side, taking turns; {cache}; plugins: {plugins}"
    print(header("start-up benchmark", detail))
    rows = [
        ("sqlite", "coterie chat, SQLite at the current schema, to first answer"),
        ("memory", "coterie chat, memory store (no database), to first answer"),
        ("before", f"{args.before} (before), SQLite, to first answer"),
        ("python", "python -c pass (interpreter floor)"),
    ]
    for key, label in rows:
        if key in wall:
            print(f"{label + ':':<62} {wall[key] * 1e3:7.1f} ms  (CPU {cpu[key] * 1e3:6.1f} ms)")
    for key, who in (("sqlite", "coterie chat"), ("before", f"{args.before} (before)")):
        if key not in terminal:
            continue
        prompt, editor, used = (
            statistics.median(run[i] for run in terminal[key]) for i in range(3)
        )
        print(f"{who + ' on a terminal, SQLite, to the prompt:':<62} {prompt * 1e3:7.1f} ms")
        print(
            f"{who + ' on a terminal, to the line editor:':<62} {editor * 1e3:7.1f} ms"
            f"  (CPU {used * 1e3:6.1f} ms)"
        )
    print(f"{'first start (creates and migrates the database):':<62} {first * 1e3:7.1f} ms")
    sqlite, memory, python = wall["sqlite"], wall["memory"], wall["python"]
    to_prompt = statistics.median(run[0] for run in terminal["sqlite"])
    print(
        f"ratio SQLite / memory store: {sqlite / memory:.2f}x; SQLite / bare interpreter: "
        f"{sqlite / python:.1f}x"
    )
    print(f"to the chat prompt on a terminal: {to_prompt * 1e3:.1f} ms   # target: <= 200 ms")
    if "before" in wall:
        print(
            f"ratio after / before: {sqlite / wall['before']:.2f}x wall, "
            f"{cpu['sqlite'] / cpu['before']:.2f}x CPU"
        )


if __name__ == "__main__":
    main()
