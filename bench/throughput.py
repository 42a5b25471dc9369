"""Throughput: commands per second one `coterie` process sustains through each adapter's real
entry point on loopback, with p50/p99 latency, against the bare framework answering a fixed text.

* Slack: signed Events API callbacks POSTed to ``coterie run`` (Slack adapter, HTTP mode); the
  replies (``chat.postMessage``) land at the recording fake Web API of ``tests/slack_fake.py``.
  Peer: a slack-bolt ``AsyncApp`` whose one listener says ``ok`` + the message text.
* Telegram: webhook updates POSTed with the secret token to ``coterie run`` (Telegram adapter,
  webhook mode); replies (``sendMessage``) land at the fake Bot API of ``tests/telegram_fake.py``.
  Peer: a python-telegram-bot ``Application`` in webhook mode (``concurrent_updates``) whose one
  handler replies ``ok`` + the text.
* Console: ``coterie chat`` through a pipe (stdin/stdout). Peer: ``cat``.

Every command is ``!roll 7 6 # nK`` with a unique K; a reply counts for K when it carries
``nK``: latency is from sending K until its reply reaches the fake (or the pipe). Lost (no
reply) and duplicated (more than one) replies are counted per K. The load is closed-loop:
``--concurrency`` senders (the console: that many commands in flight), each sending its next
command once the last one was answered; every run stops after ``--count`` commands or
``--seconds``, whichever comes first, after 20 warm-up commands. Each line gives the server's CPU
per command, how busy it kept its core (``busy``), and the CPU this process spent per command
(``load``: senders and fake API); a run whose server was busy for less than 85% of its core was
paced by something else, and the summary names it. Each server is a subprocess, so
it has a core of its own while this process (load, fakes) has the other. coterie keeps its state
in SQLite (the default store) in a temporary directory, and runs a second time with the
in-process store (``memory://``) to show what the store costs (``--sqlite-only`` skips that); it
logs its INFO chat lines to a file. With ``--rounds N`` every side runs N times, the sides taking
turns, each round on a fresh database; a ratio is then the median of the rounds' ratios (this
machine's speed drifts by a third over minutes: one round's ratio says little). Their order
rotates by one place a round (coterie, memory, peer; then memory, peer, coterie; ...), so that no
side always runs first; each round's lines are printed in the first order all the same.

Run: make bench   (or .venv/bin/python bench/throughput.py [--count N] [--seconds S] [--rounds N]
[--quick])
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import aiohttp  # noqa: E402
from common import BENCH_RATE, cpu_seconds, header, median, percentile  # noqa: E402

import slack_fake  # noqa: E402
import telegram_fake  # noqa: E402
from coterie.framework.configbase import DATABASE_URL_ENV  # noqa: E402

LOOPBACK = "127.0.0.1"
PYTHON = sys.executable
COTERIE = str(Path(PYTHON).with_name("coterie"))
MARK = re.compile(r"\bn(\d+)\b")
TG_PUBLIC_URL = "https://coterie.example/telegram/hook"
TG_PATH = "/telegram/hook"
SLACK_PATH = "/slack/events"
SLACK_ENV = {
    "BENCH_SLACK_BOT": slack_fake.BOT_TOKEN,
    "BENCH_SLACK_APP": slack_fake.APP_TOKEN,
    "BENCH_SLACK_SIGNING": slack_fake.SIGNING_SECRET,
}
TG_ENV = {
    "BENCH_TELEGRAM_TOKEN": telegram_fake.BOT_TOKEN,
    "BENCH_TELEGRAM_SECRET": telegram_fake.WEBHOOK_SECRET,
}
CHANNELS = 10
USERS = 50
REPLY_TIMEOUT = 15.0
#: the coterie runs with the in-process store (``[state] url = "memory://"``)
MEMORY = "coterie memory"
#: Telegram update ids: never reused within a process (the adapter drops a re-delivered id)
UPDATE_IDS = itertools.count(500_001)
#: commands answered before the timed run (first-use costs: imports, caches, connections)
WARMUP = 20


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


async def wait_port(port: int, process: subprocess.Popen[bytes], seconds: float = 30.0) -> None:
    """Wait until something accepts connections on ``port`` (or the process died)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode} before listening")
        try:
            _, writer = await asyncio.open_connection(LOOPBACK, port)
        except OSError:
            await asyncio.sleep(0.05)
            continue
        writer.close()
        return
    raise RuntimeError(f"nothing listens on port {port} after {seconds:g} s")


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGINT (a clean shutdown), then SIGKILL if it does not go within 10 s."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# --- results ---------------------------------------------------------------------------------


@dataclass
class Result:
    name: str
    sent: int = 0
    elapsed: float = 0.0
    latencies: list[float] = field(default_factory=list)
    replies: Counter[int] = field(default_factory=Counter)
    failed_requests: int = 0
    #: the number of the run's first command
    first: int = 0
    #: CPU seconds (user + system) the server process spent during the timed run
    cpu: float = 0.0
    #: CPU seconds this process (the senders and the fake platform API) spent meanwhile
    client_cpu: float = 0.0

    @property
    def answered(self) -> int:
        return len(self.latencies)

    @property
    def rate(self) -> float:
        return self.answered / self.elapsed if self.elapsed else 0.0

    @property
    def lost(self) -> int:
        return sum(1 for k in range(self.first, self.first + self.sent) if self.replies[k] == 0)

    @property
    def duplicated(self) -> int:
        return sum(count - 1 for count in self.replies.values() if count > 1)

    @property
    def cpu_per_command(self) -> float:
        """Server CPU seconds per answered command (0 when not measured)."""
        return self.cpu / self.answered if self.answered else 0.0

    @property
    def busy(self) -> float:
        """How much of one core the server used over the timed run (0 when not measured)."""
        return self.cpu / self.elapsed if self.elapsed else 0.0

    @property
    def load_per_command(self) -> float:
        """CPU seconds this process (senders, fake platform API) spent per answered command."""
        return self.client_cpu / self.answered if self.answered else 0.0

    def line(self) -> str:
        p50 = median(self.latencies) * 1000
        p99 = percentile(self.latencies, 0.99) * 1000
        return (
            f"{self.name:<34} {self.rate:8.0f}/s  p50 {p50:7.1f} ms  p99 {p99:7.1f} ms  "
            f"cpu {self.cpu_per_command * 1000:5.2f} ms/cmd  busy {self.busy:4.0%}  "
            f"load {self.load_per_command * 1000:4.2f} ms/cmd  "
            f"sent {self.sent:5d}  lost {self.lost}  dup {self.duplicated}"
            + (f"  failed requests {self.failed_requests}" if self.failed_requests else "")
        )


class Waiters:
    """Futures for replies by command number K; counts every reply seen."""

    def __init__(self, result: Result) -> None:
        self.result = result
        self.pending: dict[int, asyncio.Future[float]] = {}

    def expect(self, k: int) -> asyncio.Future[float]:
        future: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self.pending[k] = future
        return future

    def seen(self, text: str) -> None:
        match = MARK.search(text)
        if match is None:
            return
        k = int(match.group(1))
        self.result.replies[k] += 1
        future = self.pending.pop(k, None)
        if future is not None and not future.done():
            future.set_result(time.perf_counter())


async def closed_loop(
    result: Result,
    waiters: Waiters,
    send: Callable[[int], Awaitable[bool]],
    *,
    count: int,
    seconds: float,
    concurrency: int,
    first: int = 0,
    warmup: int = 0,
    pid: int | None = None,
) -> None:
    """``concurrency`` senders, each sending its next command once the last one was answered,
    until ``count`` commands are sent or ``seconds`` have passed. Commands are numbered from
    ``first``; ``warmup`` commands before them (numbered from 10**8) are answered first and
    not counted. With ``pid``, the CPU time that process spent in the timed run is recorded."""
    for k in range(10**8, 10**8 + warmup):
        future = waiters.expect(k)
        if await send(k):
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(future, REPLY_TIMEOUT)
    result.first = first
    numbers = itertools.count(first)
    started = time.perf_counter()
    cpu_before = cpu_seconds(pid)
    client_before = time.process_time()
    deadline = started + seconds

    async def sender() -> None:
        while time.perf_counter() < deadline:
            k = next(numbers)
            if k >= first + count:
                return
            result.sent = max(result.sent, k + 1 - first)
            future = waiters.expect(k)
            sent_at = time.perf_counter()
            if not await send(k):
                result.failed_requests += 1
                continue
            try:
                answered_at = await asyncio.wait_for(future, REPLY_TIMEOUT)
            except TimeoutError:
                continue
            result.latencies.append(answered_at - sent_at)

    await asyncio.gather(*(sender() for _ in range(concurrency)))
    result.elapsed = time.perf_counter() - started
    result.cpu = cpu_seconds(pid) - cpu_before
    result.client_cpu = time.process_time() - client_before
    await asyncio.sleep(0.5)  # late duplicates still count


def coterie_config(tmp: Path, adapters: dict[str, dict[str, Any]], *, memory: bool = False) -> Path:
    """A config file for ``coterie run`` with these adapters; state in SQLite under ``tmp``
    (the default store), or with ``memory`` in the process (``memory://``)."""
    lines = [
        f"data_dir = {json.dumps(str(tmp / 'data'))}",
        "[plugins]",
        f"enable = {json.dumps(['revised', *adapters])}",
        "[limits.rate]",
        *(f"{key} = {value}" for key, value in BENCH_RATE.items()),
    ]
    if memory:
        lines += ["[state]", 'url = "memory://"']
    for name, table in adapters.items():
        lines.append(f"[adapters.{name}]")
        lines += [f"{key} = {json.dumps(value)}" for key, value in table.items()]
    path = tmp / f"coterie-{'-'.join(adapters)}{'-memory' if memory else ''}.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def spawn(args: Sequence[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    # the variable that would override a config's store is not passed on: a server here keeps
    # its state where the benchmark's config says, whatever the shell (or the test suite, which
    # sets ``memory://``) exports
    inherited = {name: value for name, value in os.environ.items() if name != DATABASE_URL_ENV}
    with log.open("ab") as out:
        return subprocess.Popen(
            list(args),
            env={**inherited, **env},
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            cwd=str(ROOT),
        )


# --- Slack -----------------------------------------------------------------------------------


class SlackFake(slack_fake.FakeSlack):
    """The recording fake, telling the waiters about each posted reply."""

    waiters: Waiters | None = None

    async def _record(self, call: slack_fake.Call) -> None:
        self.calls.append(call)  # no Condition: nobody waits on it here
        if self.waiters is not None and call.ok and call.method == "chat.postMessage":
            self.waiters.seen(str(call.params.get("text", "")))


def slack_settings(fake: slack_fake.FakeSlack, port: int) -> dict[str, Any]:
    return {
        "enabled": True,
        "mode": "http",
        "host": LOOPBACK,
        "port": port,
        "path": SLACK_PATH,
        "api_url": fake.api_url,
        "bot_token_env": "BENCH_SLACK_BOT",
        "app_token_env": "BENCH_SLACK_APP",
        "signing_secret_env": "BENCH_SLACK_SIGNING",
    }


def slack_users(fake: slack_fake.FakeSlack) -> list[str]:
    ids = [f"U0P{i:04d}" for i in range(USERS)]
    for uid in ids:
        fake.users[uid] = {"id": uid, "name": uid.lower(), "profile": {"display_name": uid}}
    return ids


def slack_sender(
    session: aiohttp.ClientSession, port: int, users: list[str]
) -> Callable[[int], Awaitable[bool]]:
    url = f"http://{LOOPBACK}:{port}{SLACK_PATH}"

    async def send(k: int) -> bool:
        event = slack_fake.message_event(
            f"!roll 7 6 # n{k}", user=users[k % len(users)], channel=f"C0CH{k % CHANNELS:03d}"
        )
        body = json.dumps(event)
        headers = {"Content-Type": "application/json", **slack_fake.signed_headers(body)}
        try:
            async with session.post(url, data=body.encode(), headers=headers) as response:
                await response.read()
                return response.status == 200
        except aiohttp.ClientError:
            return False

    return send


async def run_slack(which: str, tmp: Path, args: argparse.Namespace) -> Result:
    result = Result(f"slack {which}")
    fake = SlackFake()
    async with fake:
        users = slack_users(fake)
        port = free_port()
        log = tmp / f"slack-{which.replace(' ', '-')}.log"
        if which != "peer":
            settings = {"slack": slack_settings(fake, port)}
            config = coterie_config(tmp, settings, memory=which == MEMORY)
            command = [COTERIE, "run", "--config", str(config)]
        else:
            command = [PYTHON, __file__, "--peer", "slack", "--port", str(port)]
            command += ["--api-url", fake.api_url]
        process = spawn(command, SLACK_ENV, log)
        try:
            await wait_port(port, process)
            fake.waiters = Waiters(result)
            async with aiohttp.ClientSession() as session:
                send = slack_sender(session, port, users)
                await closed_loop(
                    result,
                    fake.waiters,
                    send,
                    count=args.count,
                    seconds=args.seconds,
                    concurrency=args.concurrency,
                    warmup=args.warmup,
                    pid=process.pid,
                )
        finally:
            stop(process)
    return result


# --- Telegram --------------------------------------------------------------------------------


class TelegramFake(telegram_fake.FakeTelegram):
    waiters: Waiters | None = None

    async def _record(self, call: telegram_fake.Call) -> None:
        self.calls.append(call)
        if self.waiters is not None and call.ok and call.method == "sendMessage":
            self.waiters.seen(str(call.params.get("text", "")))


def telegram_settings(fake: telegram_fake.FakeTelegram, port: int) -> dict[str, Any]:
    return {
        "enabled": True,
        "mode": "webhook",
        "webhook_url": TG_PUBLIC_URL,
        "host": LOOPBACK,
        "port": port,
        "path": TG_PATH,
        "api_url": fake.api_url,
        "bot_token_env": "BENCH_TELEGRAM_TOKEN",
        "webhook_secret_env": "BENCH_TELEGRAM_SECRET",
    }


def telegram_people(fake: telegram_fake.FakeTelegram) -> tuple[list[int], list[dict[str, Any]]]:
    chats = [-1_000_100 - i for i in range(CHANNELS)]
    for chat in chats:
        fake.add_chat(chat, "group", title=f"Game {chat}")
    users = [fake.user(100 + i, f"Player{i}") for i in range(USERS)]
    return chats, users


def telegram_sender(
    session: aiohttp.ClientSession,
    fake: telegram_fake.FakeTelegram,
    port: int,
    chats: list[int],
    users: list[dict[str, Any]],
) -> Callable[[int], Awaitable[bool]]:
    """Posts updates to the webhook as Telegram does (several connections at once; the fake's
    own deliverer sends one update at a time, as a test wants, so it is bypassed here)."""
    url = f"http://{LOOPBACK}:{port}{TG_PATH}"
    headers = {
        "Content-Type": "application/json",
        telegram_fake.SECRET_HEADER: telegram_fake.WEBHOOK_SECRET,
    }

    async def send(k: int) -> bool:
        message = fake._message(
            chats[k % len(chats)], users[k % len(users)], text=f"!roll 7 6 # n{k}"
        )
        update = {"update_id": next(UPDATE_IDS), "message": message}
        try:
            async with session.post(url, data=json.dumps(update), headers=headers) as response:
                await response.read()
                return response.status == 200
        except aiohttp.ClientError:
            return False

    return send


async def run_telegram(which: str, tmp: Path, args: argparse.Namespace) -> Result:
    result = Result(f"telegram {which}")
    fake = TelegramFake()
    async with fake:
        chats, users = telegram_people(fake)
        port = free_port()
        fake.proxies[TG_PUBLIC_URL] = f"http://{LOOPBACK}:{port}{TG_PATH}"
        log = tmp / f"telegram-{which.replace(' ', '-')}.log"
        if which != "peer":
            settings = {"telegram": telegram_settings(fake, port)}
            config = coterie_config(tmp, settings, memory=which == MEMORY)
            command = [COTERIE, "run", "--config", str(config)]
        else:
            command = [PYTHON, __file__, "--peer", "telegram", "--port", str(port)]
            command += ["--api-url", fake.api_url]
        process = spawn(command, TG_ENV, log)
        try:
            await wait_port(port, process)
            fake.waiters = Waiters(result)
            async with aiohttp.ClientSession() as session:
                send = telegram_sender(session, fake, port, chats, users)
                await closed_loop(
                    result,
                    fake.waiters,
                    send,
                    count=args.count,
                    seconds=args.seconds,
                    concurrency=args.concurrency,
                    warmup=args.warmup,
                    pid=process.pid,
                )
        finally:
            stop(process)
    return result


# --- console ---------------------------------------------------------------------------------


async def run_console(which: str, tmp: Path, args: argparse.Namespace) -> Result:
    """``--concurrency`` commands in flight through the pipe; a coterie reply is complete at its
    ``roll ID`` footer line, cat's at the echoed line."""
    result = Result(f"console {which}")
    if which != "peer":
        settings = {"console": {"enabled": True, "room": "bench"}}
        config = coterie_config(tmp, settings, memory=which == MEMORY)
        command = [COTERIE, "chat", "--config", str(config), "--user", "bench"]
    else:
        command = ["cat"]
    process = await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        cwd=str(ROOT),
    )
    assert process.stdin is not None and process.stdout is not None
    stdin, stdout = process.stdin, process.stdout
    waiters = Waiters(result)

    async def reader() -> None:
        current: str | None = None
        while True:
            raw = await stdout.readline()
            if not raw:
                return
            line = raw.decode(errors="replace").rstrip("\n")
            if which == "peer":
                waiters.seen(line)
            elif MARK.search(line) and current is None:
                current = line
            elif line.startswith("roll ") and current is not None:
                waiters.seen(current)
                current = None

    async def send(k: int) -> bool:
        stdin.write(f"!roll 7 6 # n{k}\n".encode())
        await stdin.drain()
        return True

    reading = asyncio.create_task(reader())
    try:
        await closed_loop(
            result,
            waiters,
            send,
            count=args.count,
            seconds=args.seconds,
            concurrency=args.concurrency,
            warmup=args.warmup,
        )
    finally:
        stdin.close()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.wait(), 10)
        if process.returncode is None:
            process.kill()
            await process.wait()
        reading.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reading
    return result


# --- peers (run as subprocesses of this script) ----------------------------------------------


def slack_peer(port: int, api_url: str) -> None:
    """The bare framework: a slack-bolt app answering every message with a fixed text."""
    import logging

    from slack_bolt.async_app import AsyncApp
    from slack_sdk.web.async_client import AsyncWebClient

    logging.basicConfig(level=logging.WARNING)
    token = os.environ["BENCH_SLACK_BOT"]
    app = AsyncApp(
        signing_secret=os.environ["BENCH_SLACK_SIGNING"],
        client=AsyncWebClient(token=token, base_url=api_url),
    )

    @app.event("message")
    async def on_message(event: dict[str, Any], say: Any) -> None:
        await say("ok " + str(event.get("text", "")))

    app.start(port=port, path=SLACK_PATH, host=LOOPBACK)


def telegram_peer(port: int, api_url: str) -> None:
    """The bare framework: a python-telegram-bot webhook app answering every text."""
    from telegram import Update
    from telegram.ext import Application, ContextTypes, MessageHandler, filters

    async def on_text(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        assert update.message is not None
        await update.message.reply_text("ok " + (update.message.text or ""))

    app = (
        Application.builder()
        .token(os.environ["BENCH_TELEGRAM_TOKEN"])
        .base_url(api_url)
        .concurrent_updates(True)
        .build()
    )
    app.add_handler(MessageHandler(filters.TEXT, on_text))
    app.run_webhook(
        listen=LOOPBACK,
        port=port,
        url_path=TG_PATH.lstrip("/"),
        webhook_url=TG_PUBLIC_URL,
        secret_token=os.environ["BENCH_TELEGRAM_SECRET"],
    )


# --- main ------------------------------------------------------------------------------------

RUNS: dict[str, Callable[[str, Path, argparse.Namespace], Awaitable[Result]]] = {
    "slack": run_slack,
    "telegram": run_telegram,
    "console": run_console,
}


async def run_all(args: argparse.Namespace) -> list[list[list[Result]]]:
    """Per adapter, per round: coterie (SQLite), coterie (memory store) unless
    ``--sqlite-only``, peer, in that order in the result. Rounds take turns (every side of round 1,
    then of round 2...), each in a directory of its own (a fresh database), so a machine whose
    speed drifts over minutes slows every side alike; within a round the sides run in
    :func:`turn_order`."""
    adapters = []
    with tempfile.TemporaryDirectory(prefix="coterie-bench-") as name:
        for adapter in args.adapters:
            kinds = ["coterie"] if args.sqlite_only else ["coterie", MEMORY]
            kinds += [] if args.no_peer else ["peer"]
            rounds = []
            for number in range(args.rounds):
                tmp = Path(name) / f"{adapter}-{number}"
                tmp.mkdir()
                row: dict[str, Result] = {}
                for kind in turn_order(kinds, number):
                    row[kind] = await RUNS[adapter](kind, tmp, args)
                rounds.append([row[kind] for kind in kinds])
            adapters.append(rounds)
    return adapters


def turn_order(kinds: Sequence[str], number: int) -> list[str]:
    """The order the sides run in round ``number`` (from 0): the list rotated by one place a
    round, so that over as many rounds as there are sides each runs once in every place (no
    side always runs first in its round, or always right after another)."""
    shift = number % len(kinds) if kinds else 0
    return [*kinds[shift:], *kinds[:shift]]


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=2000, help="commands per run (2000)")
    parser.add_argument("--seconds", type=float, default=20.0, help="time bound per run (20)")
    parser.add_argument("--concurrency", type=int, default=16, help="commands in flight (16)")
    parser.add_argument(
        "--warmup", type=int, default=WARMUP, help=f"untimed commands first ({WARMUP})"
    )
    parser.add_argument(
        "--adapters", nargs="+", default=list(RUNS), choices=list(RUNS), help="which to run"
    )
    parser.add_argument(
        "--sqlite-only", action="store_true", help="leave out the runs with the memory store"
    )
    parser.add_argument(
        "--no-peer", action="store_true", help="leave out the peers (no ratios: for profiling)"
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="run every side this many times, taking turns; ratios per round and their median (1)",
    )
    parser.add_argument("--quick", action="store_true", help="100 commands, 5 s (smoke test)")
    parser.add_argument("--peer", choices=["slack", "telegram"], help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--api-url", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.quick:
        args.count, args.seconds = min(args.count, 100), min(args.seconds, 5.0)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.peer == "slack":
        slack_peer(args.port, args.api_url)
        return 0
    if args.peer == "telegram":
        telegram_peer(args.port, args.api_url)
        return 0
    adapters = asyncio.run(run_all(args))
    print(
        header(
            "throughput benchmark",
            f"closed loop, {args.concurrency} in flight, at most {args.count} commands or "
            f"{args.seconds:g} s per run, {args.rounds} round(s) taking turns, their order "
            "rotating; coterie state in SQLite",
        )
    )
    bad = 0
    for rounds in adapters:
        for row in rounds:
            for result in row:
                print(result.line())
            bad += sum(r.lost + r.duplicated for r in row if not r.name.endswith(" peer"))
        if args.no_peer:
            continue
        for index, label in enumerate(r.name.split(maxsplit=1)[1] for r in rounds[0][:-1]):
            pairs = [(row[index], row[-1]) for row in rounds]
            adapter = rounds[0][index].name.split(maxsplit=1)[0]
            aimed = label == "coterie" and adapter in TARGETED
            print(f"  {label} / peer: {ratio_line(pairs)}" + (f"   # {TARGET}" if aimed else ""))
        idle = unsaturated([result for row in rounds for result in row])
        if idle:
            print(
                f"  # servers used less than {SATURATED:.0%} of their core in {len(idle)} run(s)"
                f" ({', '.join(idle)}): something else (the load, the machine) set their pace,"
                " so their throughput says less than their server CPU per command"
            )
    print(f"# coterie lost or duplicated replies: {bad}")
    return 1 if bad else 0


#: issue 18's target for coterie on its default store (SQLite), and the adapters it is set for
TARGET = "target: throughput >= 0.9x (issue 18)"
TARGETED = frozenset({"slack", "telegram"})


#: a server busy for less of its core than this over a run was not what limited the run: this
#: process (the load and the fake platform API) or the machine was (measured: 95-101% in
#: ordinary runs on 2 cores; 64-76% for every Slack side of a run whose throughput fell by a
#: quarter to a third, docs/performance.md, fourteenth round)
SATURATED = 0.85


def unsaturated(results: Sequence[Result]) -> list[str]:
    """The runs, named by side and round, whose server was busy for less than
    :data:`SATURATED` of a core (runs whose server CPU was not measured are left out)."""
    seen: Counter[str] = Counter()
    idle = []
    for result in results:
        seen[result.name] += 1
        if result.cpu and result.busy < SATURATED:
            idle.append(f"{result.name} #{seen[result.name]}")
    return idle


def ratio_line(pairs: list[tuple[Result, Result]]) -> str:
    """Throughput, p50 latency and server CPU per command of coterie against the peer run in the
    same round: the median over the rounds, with each round's throughput ratio when there are
    several."""

    def ratio(ours: float, theirs: float) -> float:
        return ours / theirs if theirs else 0.0

    rates = [ratio(ours.rate, peer.rate) for ours, peer in pairs]
    p50s = [
        ratio(median(ours.latencies), median(peer.latencies)) if peer.latencies else 0.0
        for ours, peer in pairs
    ]
    cpus = [ratio(ours.cpu_per_command, peer.cpu_per_command) for ours, peer in pairs]
    line = (
        f"throughput {median(rates):.2f}x, p50 latency {median(p50s):.2f}x, "
        f"server CPU per command {median(cpus):.2f}x"
    )
    if len(pairs) > 1:
        line += f"  (median of {len(pairs)} rounds; throughput by round: "
        line += ", ".join(f"{r:.2f}x" for r in rates) + ")"
    return line


if __name__ == "__main__":
    sys.exit(main())
