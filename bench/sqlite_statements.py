"""The SQLite store's statements under load, and the WAL frames each commit writes.

``bench/throughput.py`` runs one round of its load (``--adapter slack`` by default, or
``telegram``) against ``coterie run`` on the default store, with ``bench/statements_site/`` on
the processes' ``PYTHONPATH``: its ``sitecustomize`` times every statement the store's
connections execute (wall time, and the CPU time of the thread that ran it) and, just before the
first WAL checkpoint, copies the database and its WAL aside. Printed:

* each kind of statement (``INSERT INTO kv``, ``COMMIT``...): how many a command, the median
  and mean time of one, and the time and CPU it takes a command, on the event loop's thread
  unless a thread is named (the WAL checkpoints run in one of their own). The timing adds two
  clock reads and a call to each statement, about a microsecond;
* the frames every commit wrote into the WAL until that first checkpoint, by the b-tree each
  page belongs to (table or index, leaf or interior, read with SQLite's ``dbstat``), and how
  many commands a commit held.

What a command costs the server beside these is in ``bench/throughput.py``'s own line, printed
here too. The statements' figures are the server's whole run, start-up and the warm-up commands
included: the count a command divides by the commands the server answered.

Run: .venv/bin/python bench/sqlite_statements.py [--adapter slack|telegram] [--count N] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sqlite3
import statistics
import struct
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import header

BENCH = Path(__file__).resolve().parent
SITE = BENCH / "statements_site"

#: the commands the server answers before the timed ones (throughput.py's ``--warmup``)
WARMUP = 20
#: the WAL file's header, and each frame's header before its page (SQLite's file format)
WAL_HEADER = 32
FRAME_HEADER = 24


@dataclass
class Frames:
    """The committed frames at the start of a WAL file: each frame's page number, and how many
    commits wrote them."""

    page_size: int
    pages: list[int]
    commits: int


def read_wal(path: Path) -> Frames:
    """The committed frames of the WAL at ``path``: those carrying the header's salts (frames
    past them are left from before the WAL started again), up to the last commit's frame."""
    data = path.read_bytes()
    if len(data) < WAL_HEADER:
        return Frames(0, [], 0)
    page_size = struct.unpack(">I", data[8:12])[0]
    salts = data[16:24]
    pages: list[int] = []
    commits = committed = 0
    at = WAL_HEADER
    while at + FRAME_HEADER + page_size <= len(data):
        page, size_after = struct.unpack(">II", data[at : at + 8])
        if data[at + 8 : at + 16] != salts:
            break
        pages.append(page)
        if size_after:  # a commit's last frame
            commits += 1
            committed = len(pages)
        at += FRAME_HEADER + page_size
    return Frames(page_size, pages[:committed], commits)


def owners(database: Path) -> dict[int, str]:
    """Page number → ``name (page type)`` of the b-tree it belongs to, in the database at
    ``database`` (with its WAL beside it), from SQLite's ``dbstat`` table."""
    db = sqlite3.connect(database)
    try:
        rows = db.execute("SELECT pageno, name, pagetype FROM dbstat").fetchall()
    finally:
        db.close()
    return {page: f"{name} ({kind})" for page, name, kind in rows}


def load(out: Path) -> dict[str, list[tuple[float, float]]]:
    """Every process's timed statements (``statements.<pid>.json``), merged by kind."""
    merged: dict[str, list[tuple[float, float]]] = {}
    for path in sorted(out.glob("statements.*.json")):
        for name, runs in json.loads(path.read_text(encoding="utf-8")).items():
            merged.setdefault(name, []).extend((wall, cpu) for wall, cpu in runs)
    return merged


def print_statements(timings: dict[str, list[tuple[float, float]]], commands: int) -> None:
    """Each kind of statement a command, the most time first (start-up's few left out)."""
    print(
        f"# the store's statements in the server ({commands} commands answered), on the event "
        "loop's thread unless named:"
    )
    print(
        f"  {'statement':44} {'a command':>9} {'median':>9} {'mean':>9} {'a command':>10} "
        f"{'CPU':>9}"
    )
    ordered = sorted(timings.items(), key=lambda item: -sum(wall for wall, _ in item[1]))
    for name, runs in ordered:
        walls = [wall for wall, _ in runs]
        each = len(runs) / commands
        if each < 0.01 and sum(walls) / commands < 0.5e-6:  # start-up's few
            continue
        print(
            f"  {name[:44]:44} {each:9.2f} {statistics.median(walls) * 1e6:7.1f}µs "
            f"{statistics.mean(walls) * 1e6:7.1f}µs {sum(walls) / commands * 1e6:8.1f}µs "
            f"{sum(cpu for _, cpu in runs) / commands * 1e6:7.1f}µs"
        )
    loop = [run for name, runs in timings.items() if "(thread" not in name for run in runs]
    print(
        f"  {'all, on the loop':44} {len(loop) / commands:9.2f} {'':9} {'':9} "
        f"{sum(wall for wall, _ in loop) / commands * 1e6:8.1f}µs "
        f"{sum(cpu for _, cpu in loop) / commands * 1e6:7.1f}µs"
    )


def print_frames(copy: Path, commits_a_command: float) -> None:
    """The frames a commit wrote into the WAL copied to ``copy``, by b-tree."""
    wal = copy / "coterie.db-wal"
    if not wal.exists():
        print("# no WAL was copied (no checkpoint and no close was seen)")
        return
    frames = read_wal(wal)
    if not frames.commits:
        print("# the WAL copied held no commit")
        return
    where = owners(copy / "coterie.db")
    count = frames.commits
    per = Counter(where.get(page, "(a page no b-tree holds now)") for page in frames.pages)
    held = f"; {1 / commits_a_command:.1f} commands a commit" if commits_a_command else ""
    print(
        f"# WAL frames a commit wrote, by b-tree ({count} commits before the first checkpoint, "
        f"{frames.page_size}-byte pages{held}):"
    )
    for name, frames_of in per.most_common():
        print(f"  {name:44} {frames_of / count:9.2f}")
    print(f"  {'all':44} {len(frames.pages) / count:9.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--adapter", choices=["slack", "telegram"], default="slack")
    parser.add_argument("--count", type=int, default=4000, help="commands in the run (4000)")
    parser.add_argument("--quick", action="store_true", help="throughput.py's --quick run")
    args = parser.parse_args()
    print(header("SQLite statements under load", f"{args.adapter}, bench/throughput.py"))
    with tempfile.TemporaryDirectory(prefix="coterie-bench-") as folder:
        out = Path(folder)
        path = os.pathsep.join(filter(None, [str(SITE), os.environ.get("PYTHONPATH")]))
        env = {**os.environ, "PYTHONPATH": path, "COTERIE_STATEMENTS_OUT": folder}
        command = [sys.executable, str(BENCH / "throughput.py"), "--rounds", "1"]
        command += ["--adapters", args.adapter, "--sqlite-only", "--warmup", str(WARMUP)]
        command += ["--quick"] if args.quick else ["--count", str(args.count)]
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"bench/throughput.py failed:\n{done.stdout}{done.stderr}")
        runs = [line for line in done.stdout.splitlines() if not line.startswith("#")]
        print("\n".join(runs))
        ours = re.search(rf"^{args.adapter} coterie .* sent +([0-9]+) ", done.stdout, re.M)
        if ours is None:
            raise SystemExit(f"no coterie line in bench/throughput.py's output:\n{done.stdout}")
        commands = int(ours.group(1)) + WARMUP
        timings = load(out)
        if not timings:
            raise SystemExit("the server timed no statement (was its sitecustomize loaded?)")
        print_statements(timings, commands)
        made = len(timings.get("COMMIT", []))
        print_frames(out / "wal-copy", made / commands)


if __name__ == "__main__":
    main()
