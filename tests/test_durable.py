"""State that must survive: concurrent rolls toward one extended action from two workers (SQLite
and a real PostgreSQL), and ``kill -9`` of a ``coterie chat`` process amid a run of rolls."""

from __future__ import annotations

import asyncio
import json
import os
import queue
import re
import secrets
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from coterie.dice.sources import SeededDice
from coterie.framework.app import Coterie
from coterie.framework.commands import shown_id
from coterie.framework.config import Config
from coterie.framework.message import Message
from coterie.render.encode import to_plain
from coterie.storage.migrate import upgrade
from coterie.storage.sql import SQLStore, create_engine

ROLLS = 40
CONFIG = {
    "plugins": {"enable": ["revised"]},
    # progress is then exactly the sum of the successes rolled toward it
    "defaults": {"variant": "revised", "house_rules": {"botch_wipes_extended": False}},
    "limits": {"rate": {"enabled": False}},
}


async def _worker(url: str, seed: int) -> Coterie:
    engine = create_engine(url)
    await upgrade(engine)
    return Coterie(Config.model_validate(CONFIG), dice=SeededDice(seed), store=SQLStore(engine))


async def _concurrent_rolls(url: str) -> None:
    first, second = await _worker(url, 1), await _worker(url, 2)
    try:

        async def say(app: Coterie, user: str, text: str) -> str:
            reply = await app.handle(Message(platform="t", room="r", user=user, text=text))
            assert reply is not None and not reply.is_error, reply and to_plain(reply.body)
            return to_plain(reply.body)

        await say(first, "st", "!storyteller claim")
        await say(first, "st", "!extended start vigil 1000")
        # the Storyteller rolls for the action from both workers at once
        await asyncio.gather(
            *(say(first if n % 2 else second, "st", "!roll 4 for vigil") for n in range(ROLLS))
        )
        rolls = await first.state.rolls("t:r", limit=None)
        assert len(rolls) == ROLLS
        assert len({r.id for r in rolls}) == ROLLS
        total = sum(max(0, r.successes) for r in rolls)
        status = await say(second, "st", "!extended status vigil")
        assert f"vigil: {total}/1000" in status, status
        record = await second.state.get("coterie.actions:t:r", "extended:vigil")
        assert record["rolls"] == ROLLS
    finally:
        await first.stop()
        await second.stop()


async def test_concurrent_rolls_from_two_workers_on_sqlite(tmp_path: Path) -> None:
    await _concurrent_rolls(f"sqlite+aiosqlite:///{tmp_path / 'coterie.db'}")


async def test_concurrent_rolls_from_two_workers_on_postgresql(pg_url: str) -> None:
    await _concurrent_rolls(pg_url)


# --- kill -9 --------------------------------------------------------------------------------------

FOOTER = re.compile(r"^roll ([a-z2-9]{6})$", re.M)


def _chat(coterie_cli: list[str], config: Path, env: dict[str, str], root: Path) -> Any:
    return subprocess.Popen(
        [*coterie_cli, "chat", "--config", str(config), "--user", "lynn"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=root,
        bufsize=1,
    )


class Lines:
    """A process's stdout, read by a thread so that waiting for a line can time out."""

    def __init__(self, process: Any) -> None:
        self.queue: queue.Queue[str] = queue.Queue()
        self.text = ""
        threading.Thread(target=self._pump, args=(process.stdout,), daemon=True).start()

    def _pump(self, stream: Any) -> None:
        for line in stream:
            self.queue.put(line)
        self.queue.put("")

    def until(self, pattern: re.Pattern[str], count: int, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while len(pattern.findall(self.text)) < count:
            line = self.queue.get(timeout=max(0.01, deadline - time.monotonic()))
            if not line:
                raise AssertionError(f"the chat ended early:\n{self.text}")
            self.text += line

    def rest(self, timeout: float = 10) -> None:
        deadline = time.monotonic() + timeout
        while (line := self.queue.get(timeout=max(0.01, deadline - time.monotonic()))) != "":
            self.text += line


@pytest.mark.timeout(120)
def test_kill_9_in_the_middle_of_rolls_loses_at_most_the_roll_in_flight(
    coterie_cli: list[str], cli_env: dict[str, str], root: Path, tmp_path: Path
) -> None:
    config = tmp_path / "coterie.toml"
    config.write_text(
        'data_dir = "data"\n'
        '[plugins]\nenable = ["revised", "console"]\n'
        '[defaults]\nvariant = "revised"\n'
        "[defaults.house_rules]\nbotch_wipes_extended = false\n"
    )
    env = {k: v for k, v in cli_env.items() if k != "COTERIE_DATABASE_URL"}
    process = _chat(coterie_cli, config, env, root)
    out = Lines(process)
    process.stdin.write("!extended start vigil 1000\n")
    process.stdin.flush()
    out.until(re.compile("^Extended action vigil", re.M), 1)
    for answered in range(1, 13):  # one roll at a time: each answer is a roll kept
        process.stdin.write("!roll 6 for vigil\n")
        process.stdin.flush()
        out.until(FOOTER, answered)
    # then a burst, and the kill lands while some of it is being rolled
    process.stdin.write("!roll 6 for vigil\n" * 6)
    process.stdin.flush()
    time.sleep(secrets.randbelow(20) / 1000)
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=10)
    out.rest()  # every reply it wrote before it died
    answered_ids = FOOTER.findall(out.text)
    assert 12 <= len(answered_ids) <= 18, out.text
    assert (tmp_path / "data" / "coterie.db").exists()

    again = subprocess.run(
        [*coterie_cli, "chat", "--config", str(config), "--user", "lynn"],
        input="!extended status vigil\n!log 25\n",
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
        timeout=60,
    )
    assert again.returncode == 0, again.stderr
    found = re.search(r"vigil: (\d+)/1000", again.stdout)
    assert found is not None, again.stdout
    progress = int(found.group(1))
    exported = subprocess.run(
        [*coterie_cli, "export", "console:table", "--format", "json", "--config", str(config)],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
        timeout=60,
    )
    assert exported.returncode == 0, exported.stderr

    rolls = json.loads(exported.stdout)["rolls"]
    logged = [shown_id(r["id"]) for r in rolls]  # the log keeps whole ids; replies show them short
    assert len(set(logged)) == len(logged)
    # every roll whose reply was printed was kept; at most the one in flight is also there
    assert set(answered_ids) <= set(logged)
    assert len(logged) - len(answered_ids) in (0, 1)
    # and the tally agrees with the log: the roll and its progress were one transaction
    assert progress == sum(max(0, r["successes"]) for r in rolls)


class CountingPlugin:
    """A third-party hook that keeps its own tally in ``app.state`` on every roll."""

    from coterie import hookimpl

    @hookimpl
    def coterie_after_roll(self, app: Any, message: Any, variant: Any, outcome: Any) -> Any:
        async def count() -> None:
            from coterie.storage.state import RoomState

            state = RoomState(app.state, "counter", message.room_key)
            await state.set("rolls", int(await state.get("rolls", 0)) + 1)

        return count()


async def test_a_hook_writing_state_joins_the_commands_transaction(tmp_path: Path) -> None:
    """On SQLite a write outside the command's transaction would wait for that transaction; the
    hook's write goes through it instead, and lands (or not) with the command."""
    from coterie.framework.plugins import PluginHost

    host = PluginHost()
    host.load(["revised"])
    host.register(CountingPlugin(), "counter")
    engine = create_engine(f"sqlite+aiosqlite:///{tmp_path / 'c.db'}")
    await upgrade(engine)
    app = Coterie(
        Config.model_validate(CONFIG), host=host, dice=SeededDice(3), store=SQLStore(engine)
    )
    try:
        for _ in range(3):
            reply = await app.handle(Message(platform="t", room="r", user="u", text="!roll 3"))
            assert reply is not None and not reply.is_error
        assert await app.state.get("counter:t:r", "rolls") == 3
        assert host.failures == type(host.failures)(), list(host.failures)
    finally:
        await app.stop()
