"""Play across messages through the console adapter: scripted stdin to real ``coterie chat``
processes sharing one SQLite data directory, one process per player."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest


@pytest.fixture
def chat(coterie_cli: list[str], cli_env: dict[str, str], root: Path, tmp_path: Path):
    config = tmp_path / "coterie.toml"
    config.write_text(
        'data_dir = "data"\n[plugins]\nenable = ["revised", "v5", "console"]\n'
        '[defaults]\nvariant = "revised"\n'
    )
    env = {k: v for k, v in cli_env.items() if k != "COTERIE_DATABASE_URL"}

    def run(user: str, *lines: str, seed: int = 1) -> str:
        done = subprocess.run(
            [*coterie_cli, "chat", "--config", str(config), "--user", user, "--seed", str(seed)],
            input="\n".join(lines) + "\n",
            capture_output=True,
            text=True,
            env=env,
            cwd=root,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stdout + done.stderr
        return done.stdout

    return run


def test_a_chronicle_across_processes_and_players(chat) -> None:
    out = chat(
        "alice",
        "!storyteller claim",
        "!set trying_again on",
        "!session start Night one",
        "!extended start library 30 6",
        "!roll 5 for library",
        "!roll 5 for",
    )
    assert "Storyteller of this room: alice" in out
    assert "Session " in out and "(Night one) starts" in out
    progress = [int(p) for p in re.findall(r"library: (\d+)/30", out)]
    assert len(progress) == 2 and progress[0] <= progress[1]
    # another player, another process: the room remembers all of it
    out = chat("bob", "!set difficulty 4", "!extended", "!roll 5 for library", "!session")
    assert "only the Storyteller (alice) can change the settings" in out
    assert f"library: {progress[1]}/30" in out and "— alice, 2 rolls" in out
    assert "belongs to alice" in out and "Night one" in out
    # a contest between the two, one process each
    out = chat("alice", "!contest @bob 5 6")
    assert "alice challenges bob" in out
    out = chat("bob", "!resist 4 6", seed=2)
    assert "alice vs bob" in out and "Contest over:" in out
    out = chat("alice", "!log 5", "!stats", "!session end")
    # the contest is two records, each side's dice under its own player (issue 16)
    assert len(re.findall(r"^[a-z2-9]{6}(?:-\d+)? \d\d-\d\d", out, re.M)) == 4
    assert re.search(r"^\w{6} \S+ \S+ alice !contest @bob 5 6 → ", out, re.M), out
    assert re.search(r"^\w{6}-2 \S+ \S+ bob !resist 4 6 → ", out, re.M), out
    assert "alice: 3 rolls" in out and "bob: 1 roll," in out
    assert "(Night one) ends after" in out


def test_a_v5_reroll_after_a_restart_uses_the_last_roll_kept(chat) -> None:
    out = chat("ana", "!variant v5", "!roll 6 1 diff 3")
    assert "This room now plays" in out and "6 dice, Hunger 1, Difficulty 3" in out
    out = chat("ana", "!reroll failures", seed=5)
    assert "no roll in this room to re-roll" not in out, out
    assert out.startswith("ana") and "Willpower re-roll (failures)" in out, out
