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

With ``--caches`` each side runs under valgrind's ``cachegrind`` instead, simulating the
processor's caches and branch predictor (valgrind's own models, with this machine's cache
sizes: a guide to how the sides differ, not the processor's real counts): first-level
instruction and data cache misses and mispredicted branches per message, each as a ratio to
d20's. Where those ratios exceed the instruction ratio, each of coterie's instructions costs more
than one of d20's.

Run: .venv/bin/python bench/instructions.py [--low N] [--high N] [--warm N] [--caches]
(needs valgrind)
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


#: valgrind's tool and options: counting instructions, or simulating caches and branches too
TOOLS = {
    False: ["--tool=callgrind", "--callgrind-out-file=/dev/null"],
    True: [
        "--tool=cachegrind",
        "--cache-sim=yes",
        "--branch-sim=yes",
        "--cachegrind-out-file=/dev/null",
    ],
}

#: what valgrind's summary says, by name (cachegrind's figures, or callgrind's one)
EVENTS = {
    "instructions": r"I\s+refs:\s+([0-9,]+)",
    "I1 misses": r"I1\s+misses:\s+([0-9,]+)",
    "D1 misses": r"D1\s+misses:\s+([0-9,]+)",
    "branches": r"Branches:\s+([0-9,]+)",
    "mispredicted": r"Mispredicts:\s+([0-9,]+)",
    "conditional mispredicted": r"Mispredicts:\s+[0-9,]+\s+\(\s*([0-9,]+) cond",
    "indirect mispredicted": r"Mispredicts:.*\+\s*([0-9,]+) ind",
}


def counting(side: str, count: int, warm: int, caches: bool = False) -> subprocess.Popen[str]:
    """A process running ``work(side, count, warm)`` under valgrind (started, not waited for)."""
    return subprocess.Popen(
        [
            "valgrind",
            *TOOLS[caches],
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


def counted(process: subprocess.Popen[str], caches: bool = False) -> dict[str, int]:
    """What valgrind counted for a whole process: its instructions, and with ``caches`` its
    simulated cache misses and mispredicted branches (:data:`EVENTS`)."""
    _, err = process.communicate()
    assert process.returncode == 0, err[-2000:]
    figures = {}
    for name, pattern in EVENTS.items() if caches else [("instructions", r"refs:\s+([0-9,]+)")]:
        found = re.search(pattern, err)
        assert found, (name, err[-2000:])
        figures[name] = int(found.group(1).replace(",", ""))
    return figures


def per_run(
    sides: list[str], low: int, high: int, warm: int, caches: bool = False
) -> list[dict[str, float]]:
    """Each side's figures per repetition: its ``high`` and ``low`` runs (every process at
    once, together) told apart."""
    running = {
        (side, count): counting(side, count, warm, caches)
        for side in sides
        for count in (low, high)
    }
    totals = {key: counted(process, caches) for key, process in running.items()}
    return [
        {
            name: (totals[side, high][name] - totals[side, low][name]) / (high - low)
            for name in totals[side, low]
        }
        for side in sides
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--low", type=int, default=100)
    parser.add_argument("--high", type=int, default=400)
    parser.add_argument("--warm", type=int, default=WARM, help="repetitions to warm up (300)")
    parser.add_argument(
        "--caches",
        action="store_true",
        help="simulate caches and branches too (cachegrind): misses per message",
    )
    parser.add_argument("--work", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.work:
        work(args.work[0], int(args.work[1]), int(args.work[2]))
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("bench/instructions.py needs valgrind (apt-get install valgrind)")
    tool = "cachegrind, caches and branches simulated" if args.caches else "callgrind"
    detail = f"{tool}, {args.high} - {args.low} repetitions after {args.warm} to warm up"
    print(header("instructions per message", detail))
    import tempfile

    from core_roll import sqlite_store

    with tempfile.TemporaryDirectory(prefix="coterie-bench-") as folder:
        loop = asyncio.new_event_loop()
        loop.run_until_complete(sqlite_store(loop, folder).close())  # the file, migrated
        loop.close()
        os.environ[SCHEMA] = f"{folder}/coterie.db"
        sides = ["coterie", "d20", "sqlite"]
        figures = per_run(sides, args.low, args.high, args.warm, args.caches)
    ours, peer, lite = (side["instructions"] for side in figures)
    print(f"coterie !roll 7 6 on the memory store, with both encodings: {ours:10.0f} instructions")
    print(f"d20.roll('7d10'):                                           {peer:10.0f} instructions")
    print(f"coterie !roll 7 6 on the SQLite store (a file, WAL):       {lite:10.0f} instructions")
    print(f"ratio coterie / d20 in instructions: {ours / peer:.2f}x")
    print(
        f"ratio SQLite / memory store in instructions: {lite / ours:.2f}x (the process's own: "
        "the kernel's work for SQLite's system calls is not counted)"
    )
    if args.caches:
        print_caches(*figures)


def print_caches(ours: dict[str, float], peer: dict[str, float], lite: dict[str, float]) -> None:
    """The simulated figures per message, each side's, and the ratios to d20 and between the
    stores (a ratio of 0 where d20 has none)."""
    print("# simulated per message (valgrind's cache and branch models), and the ratios:")
    print(f"  {'':26} {'coterie':>10} {'d20':>10} {'SQLite':>10} {'/ d20':>7} {'SQLite/mem':>10}")
    for name in EVENTS:
        to_peer = ours[name] / peer[name] if peer[name] > 0 else 0.0
        to_ours = lite[name] / ours[name] if ours[name] > 0 else 0.0
        print(
            f"  {name:26} {ours[name]:10.0f} {peer[name]:10.0f} {lite[name]:10.0f}"
            f" {to_peer:6.2f}x {to_ours:9.2f}x"
        )


if __name__ == "__main__":
    main()
