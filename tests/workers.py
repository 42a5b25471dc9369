"""Several ``coterie run`` worker processes behind nginx, sharing one PostgreSQL store: what
``tests/test_scale.py`` and ``bench/scale.py`` run.

:class:`Cluster` writes one config (Slack in HTTP mode against the recording fake Slack, Telegram
in webhook mode against the fake Bot API, ``[ops]`` on), starts N workers from it with
``COTERIE_PORT_OFFSET=1..N`` — exactly as ``deploy/coterie@.service`` does — waits for each
worker's ``/healthz``, and puts :func:`nginx.running_nginx` (``deploy/nginx.conf``) in front.
Everything listens on 127.0.0.1. :class:`Player` plays Slack and Telegram: it signs and posts
events and updates through nginx (or straight to one worker) and counts the replies the fakes
recorded, by a marker each request carries in its comment.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from nginx import LOOPBACK, Nginx, running_nginx
from slack_fake import BOT_TOKEN, SIGNING_SECRET, FakeSlack, message_event, signed_headers
from telegram_fake import BOT_TOKEN as TELEGRAM_TOKEN
from telegram_fake import FakeTelegram

ROOT = Path(__file__).resolve().parents[1]
COTERIE = str(Path(sys.executable).with_name("coterie"))
TELEGRAM_SECRET = "scale-test_Secret-1"
PUBLIC_URL = "https://bot.example.org"
SLACK_PATH = "/slack/events"
TELEGRAM_PATH = "/telegram/webhook"
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
GROUP = -100555


def _free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind((LOOPBACK, port))
        except OSError:
            return False
    return True


def free_block(size: int, *, avoid: set[int] | None = None) -> int:
    """A base port such that base+1 .. base+size are free on 127.0.0.1."""
    taken = avoid or set()
    for _ in range(200):
        with socket.socket() as sock:
            sock.bind((LOOPBACK, 0))
            base = int(sock.getsockname()[1])
        ports = range(base + 1, base + size + 1)
        if base + size < 65000 and all(p not in taken and _free(p) for p in ports):
            taken.update(ports)
            return base
    raise RuntimeError("no free block of ports on 127.0.0.1")


def config_text(slack: FakeSlack, telegram: FakeTelegram, bases: Mapping[str, int]) -> str:
    return f"""\
data_dir = "data"
log_level = "WARNING"

[plugins]
enable = ["revised", "slack", "telegram"]

[defaults]
variant = "revised"

[defaults.house_rules]
botch_wipes_extended = false

[limits.rate]
enabled = false

[ops]
enabled = true
port = {bases["ops"]}

[adapters.slack]
enabled = true
mode = "http"
host = "{LOOPBACK}"
port = {bases["slack"]}
path = "{SLACK_PATH}"
api_url = "{slack.api_url}"

[adapters.telegram]
enabled = true
mode = "webhook"
webhook_url = "{PUBLIC_URL}{TELEGRAM_PATH}"
host = "{LOOPBACK}"
port = {bases["telegram"]}
path = "{TELEGRAM_PATH}"
api_url = "{telegram.api_url}"
"""


@dataclass
class Worker:
    number: int
    process: subprocess.Popen[bytes]
    slack_port: int
    telegram_port: int
    ops_port: int
    log: Path

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self, timeout: float = 15.0) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


@dataclass
class Cluster:
    directory: Path
    config: Path
    env: dict[str, str]
    bases: dict[str, int]
    workers: list[Worker] = field(default_factory=list)
    nginx: Nginx | None = None
    #: how a worker is started (a profiler may wrap it)
    command: list[str] = field(default_factory=lambda: [COTERIE])

    def start_worker(self, number: int) -> Worker:
        log = self.directory / f"worker{number}.log"
        process = subprocess.Popen(
            [*self.command, "run", "--config", str(self.config)],
            env={**self.env, "COTERIE_PORT_OFFSET": str(number)},
            stdout=subprocess.DEVNULL,
            stderr=log.open("wb"),
            cwd=self.directory,
        )
        worker = Worker(
            number,
            process,
            self.bases["slack"] + number,
            self.bases["telegram"] + number,
            self.bases["ops"] + number,
            log,
        )
        self.workers.append(worker)
        return worker

    def url(self, path: str) -> str:
        assert self.nginx is not None
        return self.nginx.url(path)

    def logs(self) -> str:
        return "\n".join(
            f"--- worker {w.number}:\n{w.log.read_text(errors='replace')[-3000:]}"
            for w in self.workers
        )


async def wait_healthy(session: aiohttp.ClientSession, worker: Worker, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    url = f"http://{LOOPBACK}:{worker.ops_port}/healthz"
    last = "no answer"
    while time.monotonic() < deadline:
        if not worker.alive():
            raise AssertionError(f"worker {worker.number} exited: {worker.log.read_text()}")
        try:
            async with session.get(url) as response:
                last = f"{response.status} {await response.text()}"
                if response.status == 200:
                    return
        except (aiohttp.ClientError, TimeoutError) as error:
            last = repr(error)
        await asyncio.sleep(0.1)
    raise AssertionError(f"worker {worker.number} not healthy: {last}\n{worker.log.read_text()}")


def worker_env(database_url: str) -> dict[str, str]:
    """The workers' environment: the secrets and the shared database, nothing of the test's."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("COTERIE_", "SLACK_", "TELEGRAM_", "PYTEST_"))
    }
    env.update(
        {
            "COTERIE_DATABASE_URL": database_url,
            "SLACK_BOT_TOKEN": BOT_TOKEN,
            "SLACK_SIGNING_SECRET": SIGNING_SECRET,
            "TELEGRAM_BOT_TOKEN": TELEGRAM_TOKEN,
            "TELEGRAM_WEBHOOK_SECRET": TELEGRAM_SECRET,
        }
    )
    return env


async def start_cluster(
    stack: ExitStack,
    directory: Path,
    database_url: str,
    slack: FakeSlack,
    telegram: FakeTelegram,
    *,
    workers: int,
    nginx_workers: int = 1,
    timeout: float = 30.0,
) -> Cluster:
    """Start ``workers`` workers and nginx; everything is stopped when ``stack`` closes."""
    avoid: set[int] = set()
    bases = {name: free_block(workers, avoid=avoid) for name in ("slack", "telegram", "ops")}
    config, env = directory / "coterie.toml", worker_env(database_url)
    config.write_text(config_text(slack, telegram, bases))
    cluster = Cluster(directory, config, env, bases)
    stack.callback(lambda: [w.stop() for w in cluster.workers])
    # one worker first: it migrates the database, so the others do not queue on the lock
    first = cluster.start_worker(1)
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as session:
        await wait_healthy(session, first, timeout)
        for number in range(2, workers + 1):
            cluster.start_worker(number)
        for worker in cluster.workers[1:]:
            await wait_healthy(session, worker, timeout)
    cluster.nginx = stack.enter_context(
        running_nginx(
            {
                "coterie_slack": [w.slack_port for w in cluster.workers],
                "coterie_telegram": [w.telegram_port for w in cluster.workers],
            },
            workers=nginx_workers,
        )
    )
    return cluster


class Player:
    """Plays Slack and Telegram against a cluster (through nginx unless told a worker)."""

    def __init__(
        self,
        cluster: Cluster,
        slack: FakeSlack,
        telegram: FakeTelegram,
        session: aiohttp.ClientSession,
    ) -> None:
        self.cluster = cluster
        self.slack = slack
        self.telegram = telegram
        self.session = session
        if GROUP not in telegram.chats:
            telegram.add_chat(GROUP, "supergroup", title="The coterie")
        self.lynn = telegram.user(11, "Lynn", username="lynn")

    def _slack_url(self, worker: Worker | None) -> str:
        if worker is None:
            return self.cluster.url(SLACK_PATH)
        return f"http://{LOOPBACK}:{worker.slack_port}{SLACK_PATH}"

    async def slack_event(
        self,
        event: Mapping[str, Any],
        *,
        worker: Worker | None = None,
        retry: int = 0,
    ) -> int:
        """POST a signed Events API callback; the HTTP status (0: the connection failed)."""
        body = json.dumps(event)
        headers = {"Content-Type": "application/json", **signed_headers(body)}
        if retry:
            headers.update({"X-Slack-Retry-Num": str(retry), "X-Slack-Retry-Reason": "timeout"})
        try:
            async with self.session.post(
                self._slack_url(worker), data=body.encode(), headers=headers
            ) as response:
                await response.read()
                return response.status
        except (aiohttp.ClientError, TimeoutError):
            return 0

    def new_slack_event(self, text: str, **kw: Any) -> dict[str, Any]:
        """A player's message: in the channel (Slack keeps it) and its event to deliver."""
        event = message_event(text, **kw)
        self.slack.user_posted(event)
        return event

    def slack_replies(self, marker: str) -> list[dict[str, Any]]:
        """The replies whose text carries ``marker`` (a whole word: ``m-1`` is not ``m-10``)."""
        word = re.compile(rf"{re.escape(marker)}(?![\w-])")
        return [
            call.params
            for call in self.slack.replies()
            if word.search(str(call.params.get("text", "")))
        ]

    def new_update(self, text: str, update_id: int) -> dict[str, Any]:
        message = self.telegram._message(GROUP, self.lynn, text=text)
        return {"update_id": update_id, "message": message}

    async def telegram_update(
        self, update: Mapping[str, Any], *, worker: Worker | None = None
    ) -> int:
        if worker is None:
            url = self.cluster.url(TELEGRAM_PATH)
        else:
            url = f"http://{LOOPBACK}:{worker.telegram_port}{TELEGRAM_PATH}"
        headers = {"Content-Type": "application/json", SECRET_HEADER: TELEGRAM_SECRET}
        try:
            async with self.session.post(
                url, data=json.dumps(update).encode(), headers=headers
            ) as response:
                await response.read()
                return response.status
        except (aiohttp.ClientError, TimeoutError):
            return 0

    def telegram_replies(self, message_id: int) -> list[dict[str, Any]]:
        return [
            sent
            for sent in self.telegram.sent(GROUP)
            if (sent.get("reply_to_message") or {}).get("message_id") == message_id
        ]

    async def metrics(self, worker: Worker) -> str:
        url = f"http://{LOOPBACK}:{worker.ops_port}/metrics"
        async with self.session.get(url) as response:
            return await response.text()
