"""Characters on the persistent stores (#17): two concurrent tracker changes to one sheet from
two rooms of one chronicle lose none, on SQLite (two stores on one file) and PostgreSQL (two
engines), with a negative control; sheets survive a restart; the scripted ``coterie chat``
session of every rule set (new → set → roll by name → trackers move → restart → still there)."""

from __future__ import annotations

import asyncio
import re
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from coterie.dice.sources import FixedDice
from coterie.framework.app import Coterie
from coterie.framework.config import DATABASE_URL_ENV, parse_config
from coterie.framework.message import Message
from coterie.render.encode import to_plain
from coterie.storage import characters as store
from coterie.storage.migrate import upgrade
from coterie.storage.postgres import PGTransaction
from coterie.storage.sql import SQLStore
from coterie.storage.sqlite import LiteTransaction
from coterie.storage.state import StateStore

TASKS = 12


def app_on(url_store: StateStore, variant: str = "v5") -> Coterie:
    config = {
        "plugins": {"enable": [variant]},
        "defaults": {"variant": variant, "storytellers": ["st"]},
        "limits": {"rate": {"enabled": False}},
    }
    app = Coterie(parse_config(config, "test"), dice=FixedDice([6] * 100))
    app.state = url_store
    return app


async def say(app: Coterie, text: str, user: str = "ana", room: str = "a") -> str:
    reply = await app.handle(
        Message(platform="test", room=room, user=user, text=text, user_name=user.title())
    )
    assert reply is not None
    return to_plain(reply.body)


@pytest.fixture(params=["sqlite", "postgresql"])
async def url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    if request.param == "sqlite":
        found = f"sqlite+aiosqlite:///{tmp_path / 'state.db'}"
    else:
        found = request.getfixturevalue("pg_url")
    await upgrade(found)
    yield found


async def _stains(app: Coterie) -> int:
    record = await store.load_player(app.state, "test:a", "ana")
    return int(record["chars"]["lise"]["trackers"]["Stains"]["value"])


async def test_concurrent_tracker_changes_from_linked_rooms_lose_none(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    one, two = SQLStore(url), SQLStore(url)
    try:
        first, second = app_on(one), app_on(two)
        await say(first, "!char new Lise")
        await say(first, "!stains 0")
        await say(first, "!humanity 0")  # ten boxes free for Stains (v5: they share the track)
        link = await say(first, "!chronicle link", user="st")
        code = re.search(r"join ([A-Z0-9]{6})", link)
        assert code, link
        assert "now shares" in await say(second, f"!chronicle join {code[1]}", user="st", room="b")
        # widen the window between reading the sheet and writing it back (the transaction's
        # read of the active character, on either store)
        reads = 0
        for kind in (LiteTransaction, PGTransaction):
            real = kind.active_character

            async def slow_read(self: Any, *args: Any, real: Any = real) -> Any:
                nonlocal reads
                found = await real(self, *args)
                reads += 1
                await asyncio.sleep(0.002)
                return found

            monkeypatch.setattr(kind, "active_character", slow_read)
        jobs = [
            say(first if i % 2 else second, "!stains +1", room="a" if i % 2 else "b")
            for i in range(10)
        ]
        replies = await asyncio.wait_for(asyncio.gather(*jobs), timeout=90)
        assert all(r.startswith("Lise: Stains") for r in replies), replies
        assert reads >= 10  # the slowed read is the one the tracker change makes
        assert await _stains(first) == 10
        # each change is logged for !undo: ten undos walk it back to 0
        for _ in range(10):
            assert (await say(first, "!undo")).startswith("Undone")
        assert await _stains(first) == 0
    finally:
        await one.close()
        await two.close()


async def test_negative_control_room_locks_alone_lose_updates(pg_url: str) -> None:
    """What the chronicle's lock prevents: the same read-modify-write of one sheet under two
    rooms' locks on PostgreSQL loses updates (SQLite serialises every writer anyway)."""
    await upgrade(pg_url)
    one, two = SQLStore(pg_url), SQLStore(pg_url)
    await one.save_character("c", "ana", "x", {"n": 0})
    await one.set_active("c", "ana", "x")
    barrier = asyncio.Barrier(TASKS)

    async def bump(on: SQLStore, lock: str) -> None:
        async with on.transaction(lock) as tx:
            found = await tx.active_character("c", "ana")
            await barrier.wait()
            found.sheet["n"] += 1
            await tx.save_character("c", "ana", found.key, found.sheet)

    try:
        await asyncio.wait_for(
            asyncio.gather(*(bump(one if i % 2 else two, f"room{i}") for i in range(TASKS))),
            timeout=60,
        )
        found = await one.active_character("c", "ana")
        assert found is not None and 1 <= found.sheet["n"] < TASKS
    finally:
        await one.close()
        await two.close()


async def test_sheets_macros_and_undo_survive_a_restart(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'state.db'}"
    await upgrade(url)
    first = SQLStore(url)
    app = app_on(first, "revised")
    await say(app, "!char new Al")
    await say(app, "!char set Strength 3 Brawl 2")
    await say(app, "!macro add punch = Str+Brawl 6")
    await say(app, "!damage 2")
    await first.close()
    second = SQLStore(url)
    try:
        again = app_on(second, "revised")
        sheet = await say(again, "!sheet")
        assert "Strength 3" in sheet and "Brawl 2" in sheet and "Hurt (-1)" in sheet
        assert "4 dice" in await say(again, "!punch")
        assert (await say(again, "!undo")).startswith("Undone: Al: Health")
        assert "Healthy" in await say(again, "!sheet")
    finally:
        await second.close()


# --- `coterie chat`, in a real process, twice on one database ----------------------------------

SESSIONS = {
    "revised": (
        [
            "!char new Al",
            "!char set Dexterity 3 Firearms 2 Willpower 4",
            "!roll Dex+Firearms 6",
            "!roll Dex+Firearms 6 wp",
            "!damage 2",
            "!roll Dex+Firearms 6",
        ],
        [
            r"Al: Dexterity 3 \+ Firearms 2 = 5 dice",
            r"Al: Willpower points 4/4 → 3/4",
            r"Health \[\.+\] Healthy → \[//\.+\] Hurt \(-1\)",
            r"− 1 \(Hurt\) = 4 dice",
        ],
        ["Willpower points 3/4", r"\[//\.{5}\] Hurt"],
    ),
    "v5": (
        [
            "!char new Lise",
            "!char set Strength 3 Brawl 2",
            "!hunger 2",
            "!roll Str+Brawl 3",
            "!damage 1 aggravated",
            "!stains 4",
        ],
        [
            r"5 dice \(strength 3\+brawl 2\), Hunger 2, Difficulty 3",
            r"Hunger 1/5 → 2/5",
            r"Health \[\.{4}\] → \[X\.{3}\]",
            r"Stains 0/3 → 3/3 overlapping Humanity \(1 Stain past Humanity's boxes",
        ],
        [r"Hunger 2/5", r"Health \[X\.{3}\]", r"Willpower \[X\.\]", r"Stains 3/3 overlapping"],
    ),
    "d6": (
        ["!char new Maxine", "!char set Social 2 Physical 4", "!roll Social 4", "!roll Phys 3"],
        [r"Maxine: Social 2 = 2 dice", r"Maxine: Physical 4 = 4 dice"],
        [r"Physical 4 · Mental 1 · Social 2"],
    ),
    "laia": (
        ["!char new Ana", "!char set Wits 3 Subterfuge 3", "!wp -2", "?throw Wits+Subterfuge 7"],
        [r"Willpower points 5/5 → 3/5", r"Ana: Wits 3 \+ Subterfuge 3 = 6 dice"],
        [r"Willpower points 3/5", r"Subterfuge 3"],
    ),
    "crossover": (
        [
            "!char new Kai",
            "!char set Rage 4 Strength 3 Brawl 2",
            "!rage -1",
            "!roll Rage 6",
            "!roll Str+Brawl 6",
        ],
        [r"Rage points 4/4 → 3/4", r"Kai: Rage 4 = 4 dice", r"Kai: Strength 3 \+ Brawl 2"],
        [r"Rage points 3/4", r"Rage 4"],
    ),
}


@pytest.mark.parametrize("variant", sorted(SESSIONS))
def test_console_session_by_name_survives_a_restart(
    variant: str, tmp_path: Path, coterie_cli: list[str], cli_env: dict[str, str], root: Path
) -> None:
    script, during, after = SESSIONS[variant]
    config = tmp_path / f"{variant}.toml"
    config.write_text(
        f'[plugins]\nenable = ["{variant}", "console"]\n\n[defaults]\nvariant = "{variant}"\n\n'
        "[adapters.console]\nenabled = true\n",
        encoding="utf-8",
    )
    env = {**cli_env, DATABASE_URL_ENV: f"sqlite+aiosqlite:///{tmp_path / 'state.db'}"}

    def chat(lines: list[str]) -> str:
        done = subprocess.run(
            [*coterie_cli, "chat", "--config", str(config), "--seed", "3", "--user", "Lynn"],
            input="\n".join(lines) + "\n",
            capture_output=True,
            text=True,
            env=env,
            cwd=root,
            timeout=90,
        )
        assert done.returncode == 0, done.stderr
        assert "⚠" not in done.stdout, done.stdout
        return done.stdout

    out = chat(script)
    for pattern in during:
        assert re.search(pattern, out), (pattern, out)
    out = chat(["!sheet"])  # a new process on the same database
    for pattern in after:
        assert re.search(pattern, out), (pattern, out)
