"""PostgreSQL round trips per message: ``!roll 7 6`` through ``Coterie.handle`` on a throwaway
PostgreSQL (``tests/pg.py``: initdb in a temporary directory, 127.0.0.1), every database call of
the store counted (asyncpg's ``fetch``/``fetchval``/``fetchrow``/``execute``: one round trip
each). Issue 18's target: one where it can, never more than two. The median latency per message
is printed beside the same messages on SQLite and on the memory store.

Then the same through the adapters a worker runs, where each delivery is also claimed (so that
two deliveries of one event are answered once) and marked answered once its reply is out: signed
Slack message events over HTTP and Telegram webhook updates, against the recording fakes of
``tests/`` on loopback, one message at a time and 16 in flight.

Run: .venv/bin/python bench/pg_round_trips.py [--messages N]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from asyncpg.connection import Connection  # type: ignore[import-untyped]
from common import BENCH_RATE, header

from coterie.framework.app import Coterie
from coterie.framework.config import Config
from coterie.framework.message import Message
from coterie.storage.migrate import upgrade
from coterie.storage.sql import SQLStore
from pg import running_postgres

TRIPS = {"n": 0}


def _counted(method: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    async def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        TRIPS["n"] += 1
        return await method(self, *args, **kwargs)

    return call


for _name in ("fetch", "fetchval", "fetchrow", "execute"):
    setattr(Connection, _name, _counted(getattr(Connection, _name)))


async def run(store: Any, count: int, *, rate: bool = False) -> tuple[float, float]:
    """(round trips per message, median seconds per message) over ``count`` messages; with
    ``rate``, the rate limits are on (shared by the workers of a PostgreSQL store)."""
    limits = BENCH_RATE if rate else {"enabled": False}
    config = {"plugins": {"enable": ["revised"]}, "limits": {"rate": limits}}
    app = Coterie(Config.model_validate(config), store=store)
    messages = [
        Message(platform="bench", room="r", user=f"u{i}", text="!roll 7 6") for i in range(20)
    ]
    for message in messages[:5]:  # warm up: connections, prepared statements, read-ahead
        await app.handle(message)
    before = TRIPS["n"]
    times = []
    for n in range(count):
        began = time.perf_counter()
        reply = await app.handle(messages[n % len(messages)])
        times.append(time.perf_counter() - began)
        assert reply is not None and not reply.is_error
    trips = (TRIPS["n"] - before) / count
    await app.stop()
    return trips, statistics.median(times)


async def main(url: str, folder: str, count: int) -> None:
    await upgrade(url)
    pg_trips, pg_time = await run(SQLStore(url), count)
    limited_trips, limited_time = await run(SQLStore(url), count, rate=True)
    lite_url = f"sqlite:///{folder}/coterie.db"
    await upgrade(lite_url)
    _, lite_time = await run(SQLStore(lite_url), count)
    _, memory_time = await run(None, count)
    print(header("PostgreSQL round trips", f"{count} messages '!roll 7 6', one room, 20 users"))
    print(f"round trips per message on PostgreSQL: {pg_trips:.2f}   # target: <= 2")
    print(
        f"with rate limits shared by the workers: {limited_trips:.2f} round trips, "
        f"{limited_time * 1e3:.2f} ms per message   # target: <= 2"
    )
    print(
        f"median per message: PostgreSQL {pg_time * 1e3:.2f} ms, SQLite {lite_time * 1e3:.2f} ms,"
        f" memory {memory_time * 1e3:.2f} ms"
    )
    print(
        f"ratio PostgreSQL / memory store: {pg_time / memory_time:.1f}x; "
        f"SQLite / memory store: {lite_time / memory_time:.2f}x"
    )
    await through_adapters(url, count)


async def through_adapters(url: str, count: int) -> None:
    """Round trips per message through the Slack HTTP adapter and the Telegram webhook."""
    import adapter_work

    senders = (("slack", adapter_work.slack_sender), ("telegram", adapter_work.telegram_sender))
    shared = {"rate": BENCH_RATE}
    for (name, sender), limits in itertools.product(senders, (adapter_work.NO_LIMITS, shared)):
        async with sender(url, limits) as (send, settle, _):
            for in_flight in (1, 16):
                await adapter_work.in_flight(send, 20, in_flight)
                await settle()
                before = TRIPS["n"]
                await adapter_work.in_flight(send, count, in_flight)
                await settle()  # the last answered marks included
                trips = (TRIPS["n"] - before) / count
                said = ", rate limits shared" if limits is shared else ""
                print(
                    f"through the {name} adapter, {in_flight:2d} in flight{said}: "
                    f"{trips:.2f} round trips per message (claim and answered mark included)"
                )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=500)
    args = parser.parse_args()
    with running_postgres() as server, tempfile.TemporaryDirectory() as tmp:
        asyncio.run(main(server.createdb("bench"), tmp, args.messages))
