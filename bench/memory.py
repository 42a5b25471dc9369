"""Memory: resident set size of one `coterie run` with the Slack (HTTP mode), Telegram (webhook
mode) and Matrix adapters enabled — idle, then after 10,000 and after 20,000 commands through the
HTTP entry points (half as signed Slack Events API callbacks, half as Telegram webhook updates,
16 in flight each; the replies go to the recording fakes of ``tests/``, and every one is
counted).

Matrix runs against a real Synapse on 127.0.0.1 (``tests/matrix_synapse.py``; ``make peers``
installs it) with end-to-end encryption on, as the example config has it; ``--no-matrix`` leaves
it out. State is in SQLite (the default store) in a temporary directory.

Target: <= 120 MB, and no growth beyond the caches' bounds (RSS after 20k ~ RSS after 10k).
Run: make bench   (or .venv/bin/python bench/memory.py [--commands N] [--no-matrix])
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import aiohttp
import psutil  # type: ignore[import-untyped]
from common import header
from throughput import (
    COTERIE,
    LOOPBACK,
    SLACK_ENV,
    TG_ENV,
    TG_PATH,
    TG_PUBLIC_URL,
    Result,
    SlackFake,
    TelegramFake,
    Waiters,
    closed_loop,
    coterie_config,
    free_port,
    slack_sender,
    slack_settings,
    slack_users,
    spawn,
    stop,
    telegram_people,
    telegram_sender,
    telegram_settings,
    wait_port,
)

TARGET_MB = 120.0
SETTLE_SECONDS = 3.0


def rss_mb(process: psutil.Process) -> tuple[float, float]:
    """(current RSS, peak RSS) in MB (the peak from /proc's VmHWM where there is one)."""
    rss = process.memory_info().rss / 2**20
    peak = rss
    with contextlib.suppress(OSError, ValueError):
        for line in Path(f"/proc/{process.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                peak = int(line.split()[1]) / 1024
    return rss, peak


@contextlib.contextmanager
def homeserver(enabled: bool) -> Iterator[Any]:
    if not enabled:
        yield None
        return
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from matrix_synapse import running_synapse

    with running_synapse() as server:
        yield server


async def drive(
    session: aiohttp.ClientSession,
    slack: SlackFake,
    telegram: TelegramFake,
    ports: tuple[int, int],
    people: tuple[list[str], list[int], list[dict[str, Any]]],
    commands: int,
    offset: int,
) -> tuple[Result, Result]:
    """``commands`` commands, half through each adapter at once; numbering starts at
    ``offset`` so every command of the run has its own number."""
    users, chats, tg_users = people
    half = commands // 2
    results = (Result("slack"), Result("telegram"))
    slack.waiters = Waiters(results[0])
    telegram.waiters = Waiters(results[1])
    slack_send = slack_sender(session, ports[0], users)
    telegram_send = telegram_sender(session, telegram, ports[1], chats, tg_users)
    await asyncio.gather(
        closed_loop(
            results[0],
            slack.waiters,
            slack_send,
            count=half,
            seconds=1e9,
            concurrency=16,
            first=offset,
        ),
        closed_loop(
            results[1],
            telegram.waiters,
            telegram_send,
            count=half,
            seconds=1e9,
            concurrency=16,
            first=offset,
        ),
    )
    return results


async def run(args: argparse.Namespace) -> int:
    with homeserver(args.matrix) as server, tempfile.TemporaryDirectory(prefix="coterie-mem-") as d:
        tmp = Path(d)
        slack, telegram = SlackFake(), TelegramFake()
        async with slack, telegram:
            people = (slack_users(slack), *telegram_people(telegram))
            ports = (free_port(), free_port())
            telegram.proxies[TG_PUBLIC_URL] = f"http://{LOOPBACK}:{ports[1]}{TG_PATH}"
            adapters: dict[str, dict[str, Any]] = {
                "slack": slack_settings(slack, ports[0]),
                "telegram": telegram_settings(telegram, ports[1]),
            }
            env = {**SLACK_ENV, **TG_ENV}
            if server is not None:
                account = await asyncio.to_thread(server.register, "coterie")
                adapters["matrix"] = {
                    "enabled": True,
                    "homeserver": server.url,
                    "user_id": account.user_id,
                    "password_env": "BENCH_MATRIX_PASSWORD",
                    "store_path": str(tmp / "matrix"),
                    "encryption": True,
                }
                env["BENCH_MATRIX_PASSWORD"] = account.password
            config = coterie_config(tmp, adapters)
            log = tmp / "coterie.log"
            child = spawn([COTERIE, "run", "--config", str(config)], env, log)
            process = psutil.Process(child.pid)
            rows: list[tuple[str, float, float]] = []
            bad = 0
            try:
                for port in ports:
                    await wait_port(port, child)
                await asyncio.sleep(args.settle + (5.0 if server is not None else 0.0))
                rows.append(("idle, all adapters started", *rss_mb(process)))
                async with aiohttp.ClientSession() as session:
                    done = 0
                    for step in (args.commands, args.commands):
                        started = time.perf_counter()
                        results = await drive(
                            session, slack, telegram, ports, people, step, offset=done
                        )
                        seconds = time.perf_counter() - started
                        for result in results:
                            lost, dup = result.lost, result.duplicated
                            bad += lost + dup
                            print(
                                f"# {result.name}: {result.sent} sent, {result.answered} "
                                f"answered, lost {lost}, dup {dup}",
                                flush=True,
                            )
                        done += step
                        await asyncio.sleep(args.settle)
                        rows.append(
                            (f"after {done:,} commands ({seconds:.0f} s)", *rss_mb(process))
                        )
            finally:
                stop(child)
                text = log.read_text(errors="replace")
                crashes = text.count("crashed; restarting") + text.count("Traceback")
                if args.verbose:  # coterie's log without the per-command lines
                    print("\n".join(x for x in text.splitlines() if "coterie.chat" not in x))
    if crashes:
        print(f"# WARNING: coterie's log shows {crashes} crashes or tracebacks (--verbose)")
    matrix = "Matrix (Synapse, E2E on)" if args.matrix else "no Matrix"
    print(
        header(
            "memory benchmark",
            f"coterie run: Slack HTTP + Telegram webhook + {matrix}; SQLite state",
        )
    )
    for label, rss, peak in rows:
        print(f"{label:<40} RSS {rss:7.1f} MB   peak {peak:7.1f} MB")
    growth = rows[-1][1] - rows[-2][1]
    print(f"growth from {args.commands:,} to {2 * args.commands:,} commands: {growth:+.1f} MB")
    worst = max(rss for _, rss, _ in rows)
    verdict = "met" if worst <= TARGET_MB else "NOT met"
    print(f"# target <= {TARGET_MB:.0f} MB: {verdict}; lost or duplicated replies: {bad}")
    return 1 if bad else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--commands", type=int, default=10_000, help="commands per step (10000)")
    parser.add_argument("--no-matrix", dest="matrix", action="store_false", help="no Synapse")
    parser.add_argument(
        "--settle", type=float, default=SETTLE_SECONDS, help="seconds before each measurement"
    )
    parser.add_argument("--verbose", action="store_true", help="show coterie's log on failure")
    return asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
