"""Rolls by Trait name against rolls by number (#17): ``!roll Strength+Brawl 6`` from an active
character's sheet against ``!roll 5 6``, through ``Coterie.handle`` on the same store, in the
same run, batches taking turns. Prints the medians and the ratio (the target is at most 1.2x).

The store is SQLite on a temporary file by default (``--memory`` for the memory store); the
character and its chronicle are made first through chat. Each message comes from one of
``USERS`` players (each with a sheet), as in a room in play.

A roll on a sheet that did not change since the last one reuses the pool read from it (the
sheet is the store's shared read-only copy); ``--fresh`` empties those caches (and the SQL stores'
parsed sheets) before every message, both kinds alike, to show what the first roll after a change
costs.

Run: .venv/bin/python bench/characters.py [--quick] [--memory] [--fresh]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import header

from coterie.framework.app import Coterie
from coterie.framework.config import parse_config
from coterie.framework.message import Message
from coterie.play import byname
from coterie.storage import character_rows
from coterie.storage.migrate import upgrade
from coterie.storage.sql import SQLStore

USERS = 20


def forget() -> None:
    """Empty the caches a roll by name reads through (``--fresh``)."""
    byname._pools.clear()
    character_rows._shared.clear()


async def measure(
    memory: bool, batch: int, repeats: int, fresh: bool = False
) -> tuple[float, float]:
    config = {
        "plugins": {"enable": ["revised"]},
        "defaults": {"variant": "revised"},
        "limits": {"rate": {"enabled": False}},
    }
    app = Coterie(parse_config(config, "bench"))
    folder = tempfile.TemporaryDirectory()
    store = None
    if not memory:
        url = f"sqlite+aiosqlite:///{Path(folder.name) / 'state.db'}"
        await upgrade(url)
        store = SQLStore(url)
        app.state = store

    def message(user: int, text: str) -> Message:
        return Message(platform="bench", room="table", user=f"u{user}", text=text)

    for user in range(USERS):
        await app.handle(message(user, f"!char new Hero{user}"))
        reply = await app.handle(message(user, "!char set Strength 3 Brawl 2"))
        assert reply is not None and not reply.is_error
    by_name = [message(u, "!roll Strength+Brawl 6") for u in range(USERS)]
    by_number = [message(u, "!roll 5 6") for u in range(USERS)]
    for probe in (by_name[0], by_number[0]):
        reply = await app.handle(probe)
        assert reply is not None and not reply.is_error, reply

    async def run(messages: list[Message]) -> float:
        start = time.perf_counter()
        for index in range(batch):
            if fresh:
                forget()
            await app.handle(messages[index % USERS])
        return (time.perf_counter() - start) / batch

    names: list[float] = []
    numbers: list[float] = []
    for _ in range(repeats):  # batches take turns: a change of load slows both alike
        numbers.append(await run(by_number))
        names.append(await run(by_name))
    if store is not None:
        await store.close()
    folder.cleanup()
    return statistics.median(names), statistics.median(numbers)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a short run (smoke test)")
    parser.add_argument("--memory", action="store_true", help="the memory store, not SQLite")
    parser.add_argument(
        "--fresh", action="store_true", help="every pool read afresh (no cache), both kinds"
    )
    args = parser.parse_args()
    # short batches taking turns often: a burst of load on the shared machine falls on both
    batch, repeats = (20, 3) if args.quick else (100, 45)
    print(header("rolls by Trait name vs by number"))
    names, numbers = asyncio.run(measure(args.memory, batch, repeats, args.fresh))
    store = "memory" if args.memory else "SQLite"
    fresh = ", every pool read afresh" if args.fresh else ""
    print(f"store: {store}{fresh}; {repeats} batches of {batch} messages, medians")
    print(f"!roll 5 6                 {numbers * 1e6:9.1f} µs")
    print(f"!roll Strength+Brawl 6    {names * 1e6:9.1f} µs")
    print(f"ratio by name / by number: {names / numbers:.2f}x (target <= 1.2x)")


if __name__ == "__main__":
    main()
