"""The chat log line: what one answered command's ``coterie.chat`` record costs through
``coterie run``'s logging (:func:`coterie.ops.logs.setup_logging`: the redacting filter, then the
text or JSON formatter, to a stream), against its peer, the standard library's own
``logging.Formatter`` writing the same record to the same stream with no filter, in the same run.

The sides take turns in batches (a change in the machine's load hits both alike); medians of the
batches. The stream is ``os.devnull``, so the write itself costs what a write costs.

Run: .venv/bin/python bench/log_line.py [--batches N] [--lines N]
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import header

from coterie.framework.chatlog import chat_log, chat_record
from coterie.ops.logs import setup_logging


def fields() -> dict[str, object]:
    """A chat line's extra fields, as ``Coterie.handle`` gives them."""
    return {
        "platform": "slack",
        "room": "C0CH001",
        "user": "U0LYNN",
        "command": "roll",
        "duration_ms": 1.23,
        "error": False,
        "rate_limited": False,
    }


def per_line(write: Callable[[], None], lines: int) -> float:
    began = time.perf_counter()
    for _ in range(lines):
        write()
    return (time.perf_counter() - began) / lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batches", type=int, default=9)
    parser.add_argument("--lines", type=int, default=10_000)
    args = parser.parse_args()
    sink = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 (open for the whole run)
    coterie = {
        name: setup_logging(None, log_format=name, level="INFO", stream=sink)
        for name in ("text", "json")
    }
    root = logging.getLogger()
    for handler in coterie.values():
        root.removeHandler(handler)
    plain = logging.StreamHandler(sink)
    plain.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))

    def ours() -> None:
        chat_record(logging.INFO, "roll", fields())

    def peer() -> None:
        chat_log.log(logging.INFO, "command %s", "roll", extra=fields())

    sides = {
        "coterie, text": (coterie["text"], ours),
        "coterie, JSON": (coterie["json"], ours),
        "logging.Formatter, no filter (peer)": (plain, peer),
    }
    samples: dict[str, list[float]] = {name: [] for name in sides}
    for _ in range(args.batches + 1):  # the first round warms up and is dropped
        for name, (handler, write) in sides.items():
            root.addHandler(handler)
            try:
                samples[name].append(per_line(write, args.lines))
            finally:
                root.removeHandler(handler)
    medians = {name: statistics.median(values[1:]) for name, values in samples.items()}
    print(header("chat log line", f"median of {args.batches} batches x {args.lines} lines"))
    for name, seconds in medians.items():
        print(f"{name + ':':<40} {seconds * 1e6:6.1f} µs per line")
    peer_time = medians["logging.Formatter, no filter (peer)"]
    print(
        f"ratio coterie / peer: text {medians['coterie, text'] / peer_time:.2f}x, "
        f"JSON {medians['coterie, JSON'] / peer_time:.2f}x"
    )
    sink.close()


if __name__ == "__main__":
    main()
