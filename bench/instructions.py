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

With ``--syscalls`` each side runs under ``strace -f -c`` instead, counting the system calls a
message makes, by kind: the kernel's work the instruction counts leave out. Beside them the
benchmark times, on this machine, what one of the SQLite store's calls costs (a one-byte lock and
its unlock on the WAL's shared-memory file, a WAL frame's two writes), and prints what the SQLite
store's extra calls take a message at those prices.

Run: .venv/bin/python bench/instructions.py [--low N] [--high N] [--warm N] [--caches | --syscalls]
(needs valgrind; ``--syscalls`` needs strace instead)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
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


#: what each side runs under: valgrind counting instructions, valgrind simulating caches and
#: branches too, or strace counting system calls (its table goes to the process's stderr)
TOOLS = {
    "instructions": ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"],
    "caches": [
        "valgrind",
        "--tool=cachegrind",
        "--cache-sim=yes",
        "--branch-sim=yes",
        "--cachegrind-out-file=/dev/null",
    ],
    "syscalls": ["strace", "-f", "-c"],
}

#: a row of ``strace -c``'s table: % time, seconds, usecs/call, calls, [errors,] the call's name
STRACE_ROW = re.compile(r"^\s*[0-9.]+\s+[0-9.]+\s+[0-9]+\s+([0-9]+)\s+(?:[0-9]+\s+)?([a-z_0-9]+)$")

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


def counting(side: str, count: int, warm: int, mode: str = "instructions") -> subprocess.Popen[str]:
    """A process running ``work(side, count, warm)`` under ``mode``'s tool (:data:`TOOLS`;
    started, not waited for)."""
    return subprocess.Popen(
        [
            *TOOLS[mode],
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


def counted(process: subprocess.Popen[str], mode: str = "instructions") -> dict[str, int]:
    """What the tool counted for a whole process: its instructions; in ``caches`` mode also its
    simulated cache misses and mispredicted branches (:data:`EVENTS`); in ``syscalls`` mode its
    system calls by name."""
    _, err = process.communicate()
    assert process.returncode == 0, err[-2000:]
    if mode == "syscalls":
        calls = {}
        for line in err.splitlines():
            row = STRACE_ROW.match(line)
            if row and row.group(2) != "total":
                calls[row.group(2)] = int(row.group(1))
        assert calls, err[-2000:]
        return calls
    figures = {}
    caches = mode == "caches"
    for name, pattern in EVENTS.items() if caches else [("instructions", r"refs:\s+([0-9,]+)")]:
        found = re.search(pattern, err)
        assert found, (name, err[-2000:])
        figures[name] = int(found.group(1).replace(",", ""))
    return figures


def per_run(
    sides: list[str], low: int, high: int, warm: int, mode: str = "instructions"
) -> list[dict[str, float]]:
    """Each side's figures per repetition: its ``high`` and ``low`` runs (every process at
    once, together) told apart (a figure one of the two runs lacks counts 0 there)."""
    running = {
        (side, count): counting(side, count, warm, mode) for side in sides for count in (low, high)
    }
    totals = {key: counted(process, mode) for key, process in running.items()}
    return [
        {
            name: (totals[side, high].get(name, 0) - totals[side, low].get(name, 0)) / (high - low)
            for name in sorted({*totals[side, low], *totals[side, high]})
        }
        for side in sides
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--low", type=int, default=100)
    parser.add_argument("--high", type=int, default=400)
    parser.add_argument("--warm", type=int, default=WARM, help="repetitions to warm up (300)")
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument(
        "--caches",
        action="store_true",
        help="simulate caches and branches too (cachegrind): misses per message",
    )
    modes.add_argument(
        "--syscalls",
        action="store_true",
        help="count system calls instead (strace): calls per message, and their price here",
    )
    parser.add_argument("--work", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.work:
        work(args.work[0], int(args.work[1]), int(args.work[2]))
        return
    mode = "caches" if args.caches else "syscalls" if args.syscalls else "instructions"
    program = TOOLS[mode][0]
    if shutil.which(program) is None:
        raise SystemExit(f"bench/instructions.py needs {program} (apt-get install {program})")
    tool = {
        "instructions": "callgrind",
        "caches": "cachegrind, caches and branches simulated",
        "syscalls": "strace -f -c",
    }[mode]
    detail = f"{tool}, {args.high} - {args.low} repetitions after {args.warm} to warm up"
    title = "system calls per message" if args.syscalls else "instructions per message"
    print(header(title, detail))
    import tempfile

    from core_roll import sqlite_store

    with tempfile.TemporaryDirectory(prefix="coterie-bench-") as folder:
        loop = asyncio.new_event_loop()
        loop.run_until_complete(sqlite_store(loop, folder).close())  # the file, migrated
        loop.close()
        os.environ[SCHEMA] = f"{folder}/coterie.db"
        sides = ["coterie", "d20", "sqlite"]
        figures = per_run(sides, args.low, args.high, args.warm, mode)
    if args.syscalls:
        print_syscalls(*figures)
        print_prices(figures[0], figures[2], call_prices())
        return
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


#: system calls a side must make at least this often a message to get a line of its own
SHOWN = 0.05


def print_syscalls(ours: dict[str, float], peer: dict[str, float], lite: dict[str, float]) -> None:
    """System calls per message, by name, each side's, and what the SQLite store adds."""
    print("# system calls per message (strace -f -c: the process and its threads), by name:")
    print(f"  {'':16} {'coterie':>8} {'d20':>8} {'SQLite':>8} {'SQLite - memory':>16}")
    names = sorted({*ours, *peer, *lite}, key=lambda name: -lite.get(name, 0.0))
    for name in names:
        # (rounded first: the difference is that of the printed figures, and no "-0.00")
        figures = [round(side.get(name, 0.0), 2) + 0.0 for side in (ours, peer, lite)]
        if max(figures) >= SHOWN:
            print(
                f"  {name:16} {figures[0]:8.2f} {figures[1]:8.2f} {figures[2]:8.2f}"
                f" {figures[2] - figures[0]:+16.2f}"
            )
    totals = [sum(side.values()) for side in (ours, peer, lite)]
    print(
        f"  {'all':16} {totals[0]:8.2f} {totals[1]:8.2f} {totals[2]:8.2f}"
        f" {totals[2] - totals[0]:+16.2f}"
    )


def call_prices() -> dict[str, float]:
    """What one system call of the kinds SQLite's store makes costs on this machine, in µs: a
    lock or an unlock of one byte (``fcntl``, as SQLite takes the WAL index's locks), one of
    a WAL frame's two writes (``pwrite64``: its 24-byte header, then a 4,096-byte page, into a
    file in a temporary folder, where the SQLite side's database is too), and ``getpid`` (the
    cheapest call there is)."""
    import fcntl
    import itertools
    import struct
    import tempfile

    from core_roll import per_call

    def micros(call: Callable[[], object]) -> float:
        return per_call(call, 50_000, 3) * 1e6

    with tempfile.TemporaryDirectory(prefix="coterie-bench-") as folder:
        fd = os.open(f"{folder}/calls", os.O_RDWR | os.O_CREAT)
        try:
            os.pwrite(fd, bytes(64 * 4120), 0)
            byte = 120  # (where SQLite's locks on the WAL index file begin)
            lock = struct.pack("hhqqi", fcntl.F_WRLCK, os.SEEK_SET, byte, 1, 0)
            unlock = struct.pack("hhqqi", fcntl.F_UNLCK, os.SEEK_SET, byte, 1, 0)

            def locked() -> None:
                fcntl.fcntl(fd, fcntl.F_SETLK, lock)
                fcntl.fcntl(fd, fcntl.F_SETLK, unlock)

            frame_header, page = bytes(24), bytes(4096)
            frames = itertools.count()

            def frame() -> None:
                at = 32 + next(frames) % 64 * 4120
                os.pwrite(fd, frame_header, at)
                os.pwrite(fd, page, at + 24)

            return {
                "fcntl": micros(locked) / 2,
                "pwrite64": micros(frame) / 2,
                "getpid": micros(os.getpid),
            }
        finally:
            os.close(fd)


def print_prices(ours: dict[str, float], lite: dict[str, float], prices: dict[str, float]) -> None:
    """What one call costs here, and the SQLite store's extra calls at those prices (the calls
    not timed priced as ``getpid``, the cheapest: a floor)."""
    print(
        f"# one call here, timed from Python: fcntl (a one-byte lock or unlock) "
        f"{prices['fcntl']:.2f} µs, pwrite64 (a WAL frame is two) {prices['pwrite64']:.2f} µs, "
        f"getpid {prices['getpid']:.2f} µs"
    )
    extra = {name: lite.get(name, 0.0) - ours.get(name, 0.0) for name in {*ours, *lite}}
    priced = {name: extra.get(name, 0.0) * price for name, price in prices.items()}
    # (the memory store may make a few more of the calls not priced: the rest can be negative)
    rest = sum(calls for name, calls in extra.items() if name not in prices) * prices["getpid"]
    rest = round(rest, 1) + 0.0  # (no "-0.0")
    parts = ", ".join(f"{name} {micros:.1f}" for name, micros in priced.items())
    print(
        f"# the SQLite store's extra calls at those prices: {sum(priced.values()) + rest:.1f} µs "
        f"a message ({parts}, the rest {rest:.1f} at getpid's)"
    )


if __name__ == "__main__":
    main()
