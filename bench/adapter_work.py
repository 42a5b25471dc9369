"""Work per message through an adapter, counted rather than timed (so a shared machine's load does
not change the figures): SQLite write transactions, SQL statements, Python function calls
(cProfile) and, with
``--syscalls``, the file system calls SQLite makes (``strace``), for ``!roll 7 6`` sent through
the real Slack HTTP adapter or Telegram webhook, 16 in flight, against the recording fakes of
``tests/`` on loopback, state in SQLite. The client and the fakes run in the same process: their
calls are counted too, the same on both sides of a before/after comparison.

Run: .venv/bin/python bench/adapter_work.py [--count N] [--syscalls]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import itertools
import json
import os
import pstats
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import aiohttp  # noqa: E402
from common import header  # noqa: E402

from coterie.storage.migrate import upgrade  # noqa: E402
from coterie.storage.sql import SQLStore  # noqa: E402

IN_FLIGHT = 16
WARMUP = 20
CHANNELS = 10
NO_LIMITS = {"rate": {"enabled": False}}
#: Telegram update ids (a second sender on the same database must not send the first's again:
#: they would be redeliveries)
UPDATE_IDS = itertools.count(900_001)
#: Telegram senders made so far (each gets chats of its own)
SENDERS = itertools.count()
#: SQLite write transactions begun (each is one ``BEGIN IMMEDIATE``)
BEGUN = [0]
#: SQL statements run, every connection (each is one call into SQLite)
STATEMENTS = [0]
_lite = SQLStore._lite
_traced: set[int] = set()


def _count_statement(statement: str) -> None:
    STATEMENTS[0] += 1
    if statement.startswith("BEGIN IMMEDIATE"):
        BEGUN[0] += 1


def _counting(self: SQLStore, reader: bool = False) -> sqlite3.Connection:
    """The store's connection, its statements traced (once per connection): every write
    transaction begins on the writing one."""
    db = _lite(self, reader)
    if id(db) not in _traced:
        _traced.add(id(db))
        db.set_trace_callback(_count_statement)
    return db


SQLStore._lite = _counting  # type: ignore[method-assign]


async def in_flight(
    send: Callable[[int], Awaitable[None]], count: int, width: int = IN_FLIGHT
) -> None:
    """``send(k)`` for ``k`` in ``range(count)``, ``width`` at a time."""
    gate = asyncio.Semaphore(width)

    async def one(k: int) -> None:
        async with gate:
            await send(k)

    await asyncio.gather(*(one(k) for k in range(count)))


async def counted(
    send: Callable[[int], Awaitable[None]],
    count: int,
    settle: Callable[[], Awaitable[None]],
    replies: Callable[[], int],
) -> dict[str, float]:
    await in_flight(send, WARMUP)
    await settle()
    before, BEGUN[0], STATEMENTS[0] = replies(), 0, 0
    profile = cProfile.Profile()
    profile.enable()
    await in_flight(send, count)
    await settle()  # the last "answered" marks included
    profile.disable()
    calls = pstats.Stats(profile).total_calls  # type: ignore[attr-defined]
    answered = replies() - before
    if answered != count:
        raise SystemExit(f"{answered} of {count} commands answered")
    return {
        "transactions": BEGUN[0] / count,
        "statements": STATEMENTS[0] / count,
        "calls": calls / count,
    }


#: what a sender gives: send message K; wait until every reply and mark is out; replies so far
Sender = tuple[Callable[[int], Awaitable[None]], Callable[[], Awaitable[None]], Callable[[], int]]


@contextlib.asynccontextmanager
async def slack_sender(url: str, limits: dict[str, Any] = NO_LIMITS) -> AsyncIterator[Sender]:
    """Signed ``!roll 7 6 # K`` message events POSTed to the Slack adapter in HTTP mode (its
    state at ``url``, migrated), replies recorded by the fake Web API."""
    from coterie_slack import SlackAdapter
    from slack_fake import (
        ENV,
        FakeSlack,
        make_core,
        message_event,
        post_event,
        serving,
        settings_for,
    )
    from slack_fake import settle as settled

    await upgrade(url)
    async with FakeSlack() as fake, aiohttp.ClientSession() as session:
        adapter = SlackAdapter(make_core(None, limits=limits), settings_for(fake), environ=ENV)
        adapter.app.state = SQLStore(url)
        async with serving(adapter) as running:

            async def send(k: int) -> None:
                event = message_event(f"!roll 7 6 # {k}", channel=f"C0CH{k % CHANNELS:03d}")
                status, _ = await post_event(session, running, event)
                assert status == 200, status

            yield (
                send,
                lambda: settled(running),
                lambda: len(fake.ok_calls("chat.postMessage")),
            )


@contextlib.asynccontextmanager
async def telegram_sender(url: str, limits: dict[str, Any] = NO_LIMITS) -> AsyncIterator[Sender]:
    """``!roll 7 6 # K`` updates POSTed to the Telegram adapter's webhook (its state at ``url``,
    migrated), replies recorded by the fake Bot API."""
    from telegram_fake import SECRET_HEADER, WEBHOOK_SECRET, FakeTelegram, make_adapter, make_core
    from telegram_fake import serving as served
    from telegram_fake import settle as settled

    await upgrade(url)
    public = "https://coterie.example/hook"
    async with FakeTelegram() as fake, aiohttp.ClientSession() as session:
        # chats of their own: a message id is unique only in its chat, and the fake's start at
        # 101 in each (messages again would be redeliveries, answered from their records)
        base = -1_000_100 - 1000 * next(SENDERS)
        chats = [base - i for i in range(CHANNELS)]
        for chat in chats:
            fake.add_chat(chat, "group", title=f"Game {chat}")
        user = fake.user(11, "Lynn")
        adapter = make_adapter(
            fake,
            core=make_core(None, limits=limits),
            mode="webhook",
            webhook_url=public,
            port=0,
            path="/hook",
        )
        adapter.app.state = SQLStore(url)
        ids = UPDATE_IDS  # one count for every sender: a database outlives a sender
        headers = {SECRET_HEADER: WEBHOOK_SECRET, "Content-Type": "application/json"}
        async with served(adapter) as running:
            assert running.address is not None
            host, port = running.address
            hook = f"http://{host}:{port}/hook"
            fake.proxies[public] = hook

            async def send(k: int) -> None:
                message = fake._message(chats[k % CHANNELS], user, text=f"!roll 7 6 # {k}")
                update = {"update_id": next(ids), "message": message}
                async with session.post(hook, data=json.dumps(update), headers=headers) as reply:
                    assert reply.status == 200, reply.status

            yield send, lambda: settled(running), lambda: len(fake.sent())


async def slack(tmp: Path, count: int) -> dict[str, float]:
    async with slack_sender(f"sqlite+aiosqlite:///{tmp / 'slack.db'}") as sender:
        return await counted(sender[0], count, sender[1], sender[2])


async def telegram(tmp: Path, count: int) -> dict[str, float]:
    async with telegram_sender(f"sqlite+aiosqlite:///{tmp / 'telegram.db'}") as sender:
        return await counted(sender[0], count, sender[1], sender[2])


def measure(adapter: str, count: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="coterie-work-") as name:
        run = slack if adapter == "slack" else telegram
        return asyncio.run(run(Path(name), count))


def syscalls(adapter: str, count: int) -> float:
    """SQLite's file system calls per message: ``strace -c`` of this script with ``count`` + 50
    messages and with 50, the difference over ``count``."""
    totals = []
    for n in (50, count + 50):
        with tempfile.NamedTemporaryFile(suffix=".strace") as out:
            subprocess.run(
                [
                    "strace", "-f", "-c", "-o", out.name,
                    "-e", "trace=pwrite64,pread64,fcntl,fsync,fdatasync",
                    sys.executable, __file__, "--only", adapter, "--count", str(n),
                ],
                check=True,
                stdout=subprocess.DEVNULL,
                env={**os.environ, "PYTHONWARNINGS": "ignore"},
            )  # fmt: skip
            lines = Path(out.name).read_text().splitlines()
            totals.append(int(next(line for line in lines if "total" in line).split()[3]))
    return (totals[1] - totals[0]) / count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=300, help="messages per adapter (300)")
    parser.add_argument("--syscalls", action="store_true", help="also count them (needs strace)")
    parser.add_argument("--only", choices=["slack", "telegram"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.only:
        measure(args.only, args.count)
        return 0
    if args.syscalls and shutil.which("strace") is None:
        parser.error("--syscalls needs strace")
    print(header("adapter work per message", f"!roll 7 6, {args.count} messages, SQLite"))
    for adapter in ("slack", "telegram"):
        found = measure(adapter, args.count)
        line = (
            f"{adapter:<9} write transactions {found['transactions']:5.2f}"
            f"  SQL statements {found['statements']:5.2f}"
            f"  function calls {found['calls']:7.0f}"
        )
        if args.syscalls:
            line += f"  file syscalls {syscalls(adapter, args.count):5.1f}"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
