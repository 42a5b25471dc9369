"""Core command path benchmark: coterie's whole `!roll 7 6` against d20.roll("7d10").

coterie: parse the message -> build the request -> roll (OS RNG) -> evaluate -> render the reply
tree -> encode it as plain text and as Markdown. Peer: Avrae's d20 library, which only parses and
rolls. Floor: os.urandom for 7 bytes. Prints medians of repeated timed batches and the ratio.
Run: make bench
"""

from __future__ import annotations

import asyncio
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime

import d20

from coterie.app import Coterie
from coterie.config import Config
from coterie.encode import to_markdown, to_plain
from coterie.message import Message

BATCH = 2000
REPEATS = 15


def per_call(fn: Callable[[], object]) -> float:
    """Median seconds per call over REPEATS batches of BATCH calls."""
    samples = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        for _ in range(BATCH):
            fn()
        samples.append((time.perf_counter() - start) / BATCH)
    return statistics.median(samples)


def main() -> None:
    app = Coterie(Config.model_validate({"plugins": {"enable": ["revised"]}}))
    message = Message(platform="bench", room="r", user="u", text="!roll 7 6")
    loop = asyncio.new_event_loop()

    def coterie_roll() -> str:
        reply = loop.run_until_complete(app.handle(message))
        assert reply is not None and not reply.is_error
        return to_plain(reply.body) + to_markdown(reply.body)

    def d20_roll() -> object:
        return d20.roll("7d10")

    def floor() -> bytes:
        return os.urandom(7)

    coterie_roll()  # warm up caches and imports
    ours, peer, entropy = per_call(coterie_roll), per_call(d20_roll), per_call(floor)
    print(f"# core roll benchmark — {datetime.now(UTC):%Y-%m-%d %H:%M} UTC")
    print(
        f"# {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"Python {sys.version.split()[0]}, median of {REPEATS} batches x {BATCH} calls"
    )
    print(f"coterie !roll 7 6 (parse+roll+render+2 encodings): {ours * 1e6:8.1f} µs")
    print(f"d20.roll('7d10') (parse+roll):                     {peer * 1e6:8.1f} µs")
    print(f"os.urandom(7) (entropy floor):                      {entropy * 1e6:8.1f} µs")
    print(f"ratio coterie / d20: {ours / peer:.2f}x (target <= 1.0x)")
    loop.close()


if __name__ == "__main__":
    main()
