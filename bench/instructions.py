"""Instructions per message: coterie's whole ``!roll 7 6`` against ``d20.roll("7d10")``, counted
by valgrind (``callgrind``), not timed.

Counted instructions do not move with the machine's load, so this ratio says what a change did
to the work of a message when the timed ratio (``bench/core_roll.py``) is lost in a noisy minute.
Each side runs in a process of its own under valgrind twice, with ``--low`` and ``--high``
repetitions after the same warm-up; the difference over the extra repetitions is one message's
(or one roll's) instructions, start-up and warm-up cancelled out. The coterie side is what
``core_roll.py`` times (``Coterie.handle`` on the memory store, 100 users, then the plain and
Markdown encodings); a third side runs the same on the default store, SQLite (a fresh file,
migrated before), whose count leaves out what the kernel does for SQLite's system calls (its
writes to the WAL, its locks): its ratio to the memory store is what the SQLite store's own code
and SQLite's add, and the timed ratio's excess over it is the system calls and the caches. Wall
time is not instructions: a message that runs more distinct code runs each instruction slower
(the caches hold less of it), so the timed ratio is the higher one
(``core_roll.py`` prints how many Python functions each side runs).

Run: .venv/bin/python bench/instructions.py [--low N] [--high N] [--warm N]   (needs valgrind)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import header

WARM = 300


def work(side: str, count: int, warm: int = WARM) -> None:
    """``count`` messages (or rolls) after ``warm`` to warm up: what valgrind counts."""
    if side == "d20":
        import random

        import d20

        random.seed(0)  # (d20 rolls with :mod:`random`: the same faces in every process)
        for _ in range(warm):
            d20.roll("7d10")
        for _ in range(count):
            d20.roll("7d10")
        return
    import tempfile

    from core_roll import answered, make_app

    from coterie.storage.sql import SQLStore

    loop = asyncio.new_event_loop()
    folder = tempfile.TemporaryDirectory(prefix="coterie-bench-")
    store = None
    if side == "sqlite":  # a copy of the file migrated before (no Alembic under valgrind)
        shutil.copy(os.environ[SCHEMA], f"{folder.name}/coterie.db")
        store = SQLStore(f"sqlite:///{folder.name}/coterie.db")
    app = make_app(store)
    loop.run_until_complete(answered(app, warm))
    loop.run_until_complete(answered(app, count))
    loop.run_until_complete(app.stop())
    loop.close()
    folder.cleanup()


#: the environment variable naming the migrated, empty SQLite file the SQLite side copies
SCHEMA = "COTERIE_BENCH_SCHEMA"


def counting(side: str, count: int, warm: int) -> subprocess.Popen[str]:
    """A process running ``work(side, count, warm)`` under valgrind (started, not waited for)."""
    return subprocess.Popen(
        [
            "valgrind",
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            sys.executable,
            __file__,
            "--work",
            side,
            str(count),
            str(warm),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        # the same hashes in every process: the same dictionaries, the same instructions
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )


def counted(process: subprocess.Popen[str]) -> int:
    """The instructions valgrind counted for a whole process."""
    _, err = process.communicate()
    assert process.returncode == 0, err[-2000:]
    found = re.search(r"refs:\s+([0-9,]+)", err)
    assert found, err[-2000:]
    return int(found.group(1).replace(",", ""))


def per_run(sides: list[str], low: int, high: int, warm: int) -> list[float]:
    """Each side's instructions per repetition: its ``high`` and ``low`` runs (every process at
    once, together) told apart."""
    running = {
        (side, count): counting(side, count, warm) for side in sides for count in (low, high)
    }
    totals = {key: counted(process) for key, process in running.items()}
    return [(totals[side, high] - totals[side, low]) / (high - low) for side in sides]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--low", type=int, default=100)
    parser.add_argument("--high", type=int, default=400)
    parser.add_argument("--warm", type=int, default=WARM, help="repetitions to warm up (300)")
    parser.add_argument("--work", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.work:
        work(args.work[0], int(args.work[1]), int(args.work[2]))
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("bench/instructions.py needs valgrind (apt-get install valgrind)")
    detail = f"callgrind, {args.high} - {args.low} repetitions after {args.warm} to warm up"
    print(header("instructions per message", detail))
    import tempfile

    from core_roll import sqlite_store

    with tempfile.TemporaryDirectory(prefix="coterie-bench-") as folder:
        loop = asyncio.new_event_loop()
        loop.run_until_complete(sqlite_store(loop, folder).close())  # the file, migrated
        loop.close()
        os.environ[SCHEMA] = f"{folder}/coterie.db"
        ours, peer, lite = per_run(["coterie", "d20", "sqlite"], args.low, args.high, args.warm)
    print(f"coterie !roll 7 6 on the memory store, with both encodings: {ours:10.0f} instructions")
    print(f"d20.roll('7d10'):                                           {peer:10.0f} instructions")
    print(f"coterie !roll 7 6 on the SQLite store (a file, WAL):       {lite:10.0f} instructions")
    print(f"ratio coterie / d20 in instructions: {ours / peer:.2f}x")
    print(
        f"ratio SQLite / memory store in instructions: {lite / ours:.2f}x (the process's own: "
        "the kernel's work for SQLite's system calls is not counted)"
    )


if __name__ == "__main__":
    main()
