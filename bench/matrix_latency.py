"""Matrix round trip: a player's `!roll 7 6` -> the bot's reply, through one local Synapse.

coterie: the Matrix adapter (matrix-nio) running the whole command path (parse, roll, render,
HTML + plain bodies, reply relation, de-duplication and sync-token bookkeeping). Floor: a
do-nothing echo bot on bare matrix-nio (``sync_forever`` + a callback that answers every
``!roll`` with a fixed notice as a reply). Both answer in their own unencrypted room; rounds
alternate between the two so drift in the homeserver's speed hits both alike.

The player measures from just before its send until its sync delivers the reply. Prints the
medians, the 95th percentiles and the ratio coterie / echo.

It starts and stops its own Synapse on 127.0.0.1 (tests/matrix_synapse.py, the tests' helper;
``make peers`` installs it). Run: .venv/bin/python bench/matrix_latency.py [--rounds N]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import nio  # type: ignore[import-untyped]  # noqa: E402

from coterie.framework.app import Coterie  # noqa: E402
from coterie.framework.config import Config  # noqa: E402
from coterie_matrix import MatrixAdapter  # noqa: E402
from matrix_synapse import Account, Synapse, running_synapse, synapse_version  # noqa: E402

COMMAND = "!roll 7 6"
WARMUP = 5
#: one round may take at most this long
ROUND_SECONDS = 30.0
MAX_ROUNDS = 1000


class EchoBot:
    """The floor: bare matrix-nio, answering each ``!roll`` with a fixed notice."""

    def __init__(self, server: Synapse, account: Account) -> None:
        self.client = nio.AsyncClient(server.url, account.user_id)
        self.account = account
        self.ready = asyncio.Event()

    async def run(self) -> None:
        self.client.restore_login(
            self.account.user_id, self.account.device_id, self.account.access_token
        )
        self.client.add_event_callback(self.on_message, nio.RoomMessageText)
        self.client.add_event_callback(self.on_invite, nio.InviteMemberEvent)
        first = await self.client.sync(timeout=0)
        assert isinstance(first, nio.SyncResponse), first
        self.ready.set()
        await self.client.sync_forever(timeout=30_000)

    async def on_invite(self, room: Any, event: Any) -> None:
        if event.state_key == self.client.user_id and event.membership == "invite":
            await self.client.join(room.room_id)

    async def on_message(self, room: Any, event: Any) -> None:
        if event.sender == self.client.user_id or not event.body.startswith("!roll"):
            return
        await self.client.room_send(
            room.room_id,
            "m.room.message",
            {
                "msgtype": "m.notice",
                "body": "echo",
                "m.relates_to": {"m.in_reply_to": {"event_id": event.event_id}},
            },
        )


class Player:
    """Sends commands and waits, syncing continuously, for the reply to each."""

    def __init__(self, server: Synapse, account: Account) -> None:
        self.client = nio.AsyncClient(server.url, account.user_id)
        self.client.restore_login(account.user_id, account.device_id, account.access_token)
        self.waiting: dict[str, asyncio.Future[float]] = {}
        self.joined: dict[str, set[str]] = {}

    async def run(self) -> None:
        while True:
            response = await self.client.sync(timeout=30_000)
            if not isinstance(response, nio.SyncResponse):
                await asyncio.sleep(0.1)
                continue
            arrived = time.perf_counter()
            for room_id, info in response.rooms.join.items():
                for event in info.timeline.events:
                    source = event.source
                    content = source.get("content") or {}
                    if (
                        source.get("type") == "m.room.member"
                        and content.get("membership") == "join"
                    ):
                        self.joined.setdefault(room_id, set()).add(source.get("state_key"))
                    target = ((content.get("m.relates_to") or {}).get("m.in_reply_to") or {}).get(
                        "event_id"
                    )
                    future = self.waiting.pop(target, None) if target else None
                    if future is not None and not future.done():
                        future.set_result(arrived)

    async def room_with(self, bot: str) -> str:
        response = await self.client.room_create(name=f"bench {bot}", invite=[bot])
        assert isinstance(response, nio.RoomCreateResponse), response
        deadline = time.monotonic() + ROUND_SECONDS
        while bot not in self.joined.get(response.room_id, set()):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{bot} did not join")
            await asyncio.sleep(0.02)
        return str(response.room_id)

    async def round_trip(self, room_id: str) -> float:
        """Seconds from the send until the reply arrived."""
        loop = asyncio.get_running_loop()
        started = time.perf_counter()
        sent = await self.client.room_send(
            room_id, "m.room.message", {"msgtype": "m.text", "body": COMMAND}
        )
        assert isinstance(sent, nio.RoomSendResponse), sent
        future = self.waiting.setdefault(sent.event_id, loop.create_future())
        arrived = await asyncio.wait_for(future, ROUND_SECONDS)
        return arrived - started


@contextlib.asynccontextmanager
async def running(*coroutines: Any) -> AsyncIterator[list[asyncio.Task[Any]]]:
    tasks = [asyncio.create_task(c) for c in coroutines]
    try:
        yield tasks
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


def p95(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=20, method="inclusive")[-1]


async def measure(
    server: Synapse, rounds: int, *, encryption: bool
) -> tuple[list[float], list[float]]:
    player_account, coterie_account, echo_account = [
        await asyncio.to_thread(server.register, name) for name in ("player", "coterie", "echo")
    ]
    with tempfile.TemporaryDirectory(prefix="coterie-bench-") as store:
        app = Coterie(Config.model_validate({"plugins": {"enable": ["revised", "matrix"]}}))
        adapter = MatrixAdapter(
            app,
            {
                "enabled": True,
                "homeserver": server.url,
                "user_id": coterie_account.user_id,
                "password_env": "BENCH_MATRIX_PASSWORD",
                "store_path": store,
                "encryption": encryption,
            },
            environ={"BENCH_MATRIX_PASSWORD": coterie_account.password},
        )
        echo = EchoBot(server, echo_account)
        player = Player(server, player_account)
        try:
            async with running(adapter.run(), echo.run(), player.run()) as tasks:
                ready = asyncio.gather(adapter.ready.wait(), echo.ready.wait())
                await asyncio.wait_for(ready, ROUND_SECONDS)
                coterie_room = await player.room_with(coterie_account.user_id)
                echo_room = await player.room_with(echo_account.user_id)
                ours: list[float] = []
                floor: list[float] = []
                for index in range(WARMUP + rounds):
                    for room, samples in ((coterie_room, ours), (echo_room, floor)):
                        elapsed = await player.round_trip(room)
                        if index >= WARMUP:
                            samples.append(elapsed)
                    for task in tasks:
                        if task.done():
                            task.result()  # a crash ends the benchmark with its error
                await adapter.stop()
        finally:
            await echo.client.close()
            await player.client.close()
    return ours, floor


def report(name: str, seconds: list[float]) -> tuple[str, float]:
    ms = [s * 1000 for s in seconds]
    median = statistics.median(ms)
    return (
        f"{name:<9}{COMMAND!r} -> reply:  median {median:7.2f} ms   p95 {p95(ms):7.2f} ms",
        median,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=100, help="measured rounds per bot")
    parser.add_argument(
        "--no-encryption",
        action="store_true",
        help="run coterie's bot without end-to-end encryption support (the rooms are never "
        "encrypted; by default it runs as deployed, with its key store)",
    )
    args = parser.parse_args()
    if not 1 <= args.rounds <= MAX_ROUNDS:
        parser.error(f"--rounds must be between 1 and {MAX_ROUNDS}")
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("nio").setLevel(logging.ERROR)
    with running_synapse() as server:
        ours, floor = asyncio.run(measure(server, args.rounds, encryption=not args.no_encryption))
    ours_line, median_ours = report("coterie", ours)
    floor_line, median_floor = report("echo bot", floor)
    print(f"# Matrix round trip — {datetime.now(UTC):%Y-%m-%d %H:%M} UTC")
    print(
        f"# {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"Python {sys.version.split()[0]}, matrix-nio {metadata.version('matrix-nio')}, "
        f"Synapse {synapse_version()} (SQLite, 127.0.0.1)"
    )
    print(
        f"# {args.rounds} rounds per bot after {WARMUP} warm-up rounds, alternating; coterie "
        f"{'without' if args.no_encryption else 'with'} its encryption store"
    )
    print(ours_line)
    print(floor_line)
    print(f"ratio coterie / echo (medians): {median_ours / median_floor:.2f}x (target <= 1.1x)")


if __name__ == "__main__":
    main()
