"""Scale-out load test: 1 worker, then 2 workers behind nginx, the same offered load.

Each run starts a fresh database on a throwaway PostgreSQL (tests/pg.py), the recording fakes of
Slack and Telegram (tests/slack_fake.py, tests/telegram_fake.py) in this process, N ``coterie
run`` workers (tests/workers.py: one config, ``COTERIE_PORT_OFFSET``, ``[ops]`` on) and nginx with
``deploy/nginx.conf`` (tests/nginx.py). The load: signed Slack Events API callbacks and Telegram
webhook updates (half each), ``!roll 5 6`` spread over many rooms, posted through nginx by a
closed loop of ``--concurrency`` clients, after a warm-up. A request is done when its reply has
reached the fake (Slack answers the HTTP request after posting; Telegram before). Printed per
run: throughput (requests answered per second), p50 and p99 of send → reply, and the count of
lost and duplicated replies at the fakes, which must be zero; then the ratio 2 workers / 1.

The load generator and both fakes run in this one Python process, on the same cores as the
workers, nginx and PostgreSQL: on a 2-core machine they take a good part of one core.

Run: make bench   (or .venv/bin/python bench/scale.py [--requests N] [--concurrency C])
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import aiohttp
from common import header, percentile

from pg import Postgres, running_postgres
from slack_fake import Call as SlackCall
from slack_fake import FakeSlack, message_event
from telegram_fake import Call as TelegramCall
from telegram_fake import FakeTelegram
from workers import Player, start_cluster

ROOMS = 40
#: "slack" or "telegram" to offer only one kind of request (``--only``)
ONLY = ""
TARGET = 1.7


class TimedSlack(FakeSlack):
    """Records when each reply arrived."""

    def __init__(self) -> None:
        super().__init__()
        self.arrived: list[float] = []

    async def _record(self, call: SlackCall) -> None:
        self.arrived.append(time.perf_counter())
        await super()._record(call)


class TimedTelegram(FakeTelegram):
    def __init__(self) -> None:
        super().__init__()
        self.arrived: list[float] = []

    async def _record(self, call: TelegramCall) -> None:
        self.arrived.append(time.perf_counter())
        await super()._record(call)


@dataclass
class Result:
    workers: int
    requests: int
    seconds: float
    latencies: list[float]
    lost: int
    duplicated: int
    failed: int

    @property
    def throughput(self) -> float:
        return self.requests / self.seconds


async def run(postgres: Postgres, workers: int, requests: int, concurrency: int) -> Result:
    url = postgres.createdb(f"coterie_scale_{workers}_{time.monotonic_ns()}")
    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="coterie-scale-") as tmp:
        slack, telegram = TimedSlack(), TimedTelegram()
        async with slack, telegram:
            cluster = await start_cluster(stack, Path(tmp), url, slack, telegram, workers=workers)
            timeout = aiohttp.ClientTimeout(total=30)
            connector = aiohttp.TCPConnector(limit=concurrency * 2)
            async with aiohttp.ClientSession(timeout=timeout, connector=connector) as session:
                player = Player(cluster, slack, telegram, session)
                chats = [-200_000 - n for n in range(ROOMS)]
                for chat in chats:
                    telegram.add_chat(chat, "supergroup", title=f"Room {chat}")
                update_ids = itertools.count(1)
                sent: dict[str, float] = {}
                failed = 0

                async def one(n: int, key: str) -> None:
                    nonlocal failed
                    if (n % 2 and ONLY != "telegram") or ONLY == "slack":
                        event = message_event(
                            f"!roll 5 6 # {key}", channel=f"C0ROOM{n % ROOMS:03d}"
                        )
                        sent[key] = time.perf_counter()
                        status = await player.slack_event(event)
                    else:
                        message = telegram._message(
                            chats[n % ROOMS], player.lynn, text=f"!roll 5 6 # {key}"
                        )
                        sent[f"tg:{chats[n % ROOMS]}:{message['message_id']}"] = time.perf_counter()
                        update = {"update_id": next(update_ids), "message": message}
                        status = await player.telegram_update(update)
                    if status != 200:
                        failed += 1

                async def drive(prefix: str, count: int) -> None:
                    queue = iter(range(count))

                    async def client() -> None:
                        for n in queue:
                            await one(n, f"{prefix}-{n}")

                    await asyncio.gather(*(client() for _ in range(concurrency)))

                def answered() -> int:
                    return len(slack.replies()) + len(telegram.sent())

                # warm-up: connections, caches, users.info, the first rolls of each room
                await drive("warm", 200)
                await _until(lambda: answered() >= 200, 30)
                slack.calls.clear()
                telegram.calls.clear()
                slack.arrived.clear()
                telegram.arrived.clear()
                sent.clear()
                failed = 0

                began = time.perf_counter()
                await drive("load", requests)
                await _until(lambda: answered() >= requests, 60)
                await asyncio.sleep(0.5)  # late duplicates, if any, would arrive now
                ended = max([*_reply_times(slack, telegram), began])

                latencies, lost, duplicated = _match(slack, telegram, sent)
                for worker in cluster.workers:
                    worker.stop()
            return Result(workers, requests, ended - began, latencies, lost, duplicated, failed)


def _reply_times(slack: TimedSlack, telegram: TimedTelegram) -> list[float]:
    times = [
        t
        for t, c in zip(slack.arrived, slack.calls, strict=False)
        if c.method == "chat.postMessage"
    ]
    times += [
        t
        for t, c in zip(telegram.arrived, telegram.calls, strict=False)
        if c.method == "sendMessage"
    ]
    return times


def _match(
    slack: TimedSlack, telegram: TimedTelegram, sent: dict[str, float]
) -> tuple[list[float], int, int]:
    """Latency of each request (send → its reply), and the lost and duplicated replies."""
    replies: dict[str, list[float]] = {}
    for at, call in zip(slack.arrived, slack.calls, strict=False):
        if call.method == "chat.postMessage" and call.ok:
            text = str(call.params.get("text", ""))
            key = text.split(" — ", 1)[1].split("\n", 1)[0] if " — " in text else text
            replies.setdefault(key, []).append(at)
    for at, sent_call in zip(telegram.arrived, telegram.calls, strict=False):
        if sent_call.method == "sendMessage" and sent_call.ok:
            reply_to = (sent_call.result.get("reply_to_message") or {}).get("message_id")
            key = f"tg:{sent_call.result['chat']['id']}:{reply_to}"
            replies.setdefault(key, []).append(at)
    latencies = [replies[k][0] - t for k, t in sent.items() if k in replies]
    lost = sum(1 for k in sent if k not in replies)
    duplicated = sum(len(v) - 1 for k, v in replies.items() if k in sent)
    return latencies, lost, duplicated


async def _until(predicate: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not predicate() and time.monotonic() < deadline:
        await asyncio.sleep(0.05)


def report(result: Result) -> str:
    return (
        f"{result.workers} worker{'s' if result.workers > 1 else ' '}: "
        f"{result.requests} requests in {result.seconds:6.2f} s  "
        f"{result.throughput:7.1f} req/s  "
        f"p50 {percentile(result.latencies, 0.5) * 1000:6.1f} ms  "
        f"p99 {percentile(result.latencies, 0.99) * 1000:7.1f} ms  "
        f"lost {result.lost}  duplicated {result.duplicated}  non-200 {result.failed}"
    )


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--only", choices=["slack", "telegram"], default="")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    global ONLY
    ONLY = args.only
    print(
        header(
            "scale-out benchmark",
            f"{args.requests} requests (half Slack events, half Telegram updates) over "
            f"{ROOMS} rooms, {args.concurrency} concurrent clients, through nginx, PostgreSQL",
        ),
        flush=True,
    )
    with running_postgres() as postgres:
        results = []
        for workers in args.workers:
            result = await run(postgres, workers, args.requests, args.concurrency)
            print(report(result), flush=True)
            results.append(result)
    if len(results) == 2:
        ratio = results[1].throughput / results[0].throughput
        print(f"ratio 2 workers / 1 worker: {ratio:.2f}x (target >= {TARGET}x)")
    bad = [r for r in results if r.lost or r.duplicated]
    if bad:
        print("FAILED: replies were lost or duplicated")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
