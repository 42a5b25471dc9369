"""Proof of issue 22: the README's quick start replayed on a fresh checkout, and a newcomer's first
hour in one console — make a room, roll, make a typo and follow the suggestion, run a contest
between two console users — with no traceback and no error the user can't act on."""

from __future__ import annotations

import asyncio
import io
import re
import subprocess
from pathlib import Path

import pytest

from coterie_console import ConsoleAdapter

ROOT = Path(__file__).resolve().parent.parent
ROLL_ID = re.compile(r"roll [a-z2-9]{6}")
#: a command the user can copy from an error's hint: `!roll 7 2 3`
SUGGESTED = re.compile(r"`((?:\w+: )?[!?][a-z]+[^`]*)`")


def readme_demo() -> tuple[str, list[str], list[str]]:
    """The README's 30-second demo: the banner, the lines typed, and the replies shown."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("## 30-second demo", 1)[1].split("```", 2)[1]
    lines = [line for line in block.splitlines()[1:] if line.strip()]
    assert lines[0] == "$ make run"
    banner = lines[1]
    typed = [line.split("> ", 1)[1] for line in lines[2:] if line.startswith("lynn> ")]
    shown = [line for line in lines[2:] if not line.startswith("lynn> ")]
    return banner, typed, shown


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A fresh clone of the committed tree, as CI starts from."""
    target = tmp_path / "coterie"
    subprocess.run(
        ["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(target)],
        check=True,
        timeout=120,
    )
    return target


def test_readme_quick_start_on_a_fresh_checkout(checkout, coterie_cli, cli_env):
    _, typed, shown = readme_demo()
    assert typed and shown
    makefile = (checkout / "Makefile").read_text(encoding="utf-8")
    run_line = re.search(r"^run:.*\n\t(.*)$", makefile, re.M)
    assert run_line and "chat --config $(CONFIG)" in run_line.group(1)
    env = {k: v for k, v in cli_env.items() if k != "COTERIE_DATABASE_URL"}
    # `make run` is `coterie chat --config config/coterie.toml` in the venv it installs; the
    # README's replies are those of --seed 3 --user lynn
    done = subprocess.run(
        [*coterie_cli, "chat", "--config", "config/coterie.toml", "--seed", "3", "--user", "lynn"],
        input="\n".join(typed) + "\n",
        capture_output=True,
        text=True,
        env=env,
        cwd=checkout,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    replies = [line for line in done.stdout.splitlines() if not ROLL_ID.fullmatch(line)]
    assert replies == shown
    # the state lands where the README says, and the one start line says so
    database = checkout / "config" / "data" / "coterie.db"
    assert database.exists()
    assert done.stderr.splitlines() == [f"coterie: state in SQLite {database}"]
    assert "Traceback" not in done.stdout + done.stderr


async def test_readme_banner_is_the_consoles(make_app):
    banner, _, _ = readme_demo()

    class TTY(io.StringIO):
        def isatty(self) -> bool:
            return True

    out = TTY()
    adapter = ConsoleAdapter(make_app(), {"user": "lynn"}, stdin=TTY(), stdout=out)
    await adapter._banner()
    assert out.getvalue().strip() == banner


class Console:
    """One console for the table, driven line by line: what each line answered."""

    def __init__(self, app) -> None:
        self.out = io.StringIO()
        self.adapter = ConsoleAdapter(
            app, {"user": "ana", "room": "first-hour"}, stdin=io.StringIO(), stdout=self.out
        )
        self.typed: list[str] = []

    def __call__(self, line: str) -> str:
        start = len(self.out.getvalue())
        asyncio.run(self.adapter.say(line))
        self.typed.append(line)
        answer = self.out.getvalue()[start:]
        assert "Traceback" not in answer and "something went wrong" not in answer, answer
        if answer.startswith("⚠"):  # every error says what to do: a command to copy or usage
            assert SUGGESTED.search(answer) or "Usage: " in answer, answer
        return answer


def follow(answer: str) -> str:
    """The first command an error suggests."""
    hint = answer.split("\n", 1)[1]
    found = SUGGESTED.search(hint)
    assert found, answer
    return found.group(1)


def test_a_scripted_first_hour_in_the_console(make_app, coterie_cli, cli_env, root):
    app = make_app(plugins={"enable": ["*"]}, seed=5, limits={"rate": {"enabled": False}})
    say = Console(app)
    # make a room: claim it, pick the rule set
    assert "Storyteller" in say("!storyteller claim")
    assert "now plays" in say("!variant v5")
    help_text = say("!help")
    assert "Try !roll 7 2 3" in help_text
    # roll the way other bots do: the error shows this rule set's way, and it works
    taught = say("!roll 7d10")
    assert taught.startswith("⚠") and "`!roll 7 2 3`" in taught
    assert not say(follow(taught)).startswith("⚠")
    # a typo in the command name
    typo = say("!rol 5 1")
    assert typo.startswith("⚠") and "`!roll`" in typo
    assert not say("!roll 5 1").startswith("⚠")
    # a command from another rule set
    other = say("!multi 6 6; 6 7")
    assert "(revised)" in other or "crossover" in other
    # generic dice for damage
    assert "2d6" in say("!r 2d6+3 # claws")
    # a contest between two console users: ana challenges, bob resists
    challenge = say("!contest @bob 5")
    assert not challenge.startswith("⚠"), challenge
    assert not say("bob: !resist 4").startswith("⚠")
    # bob takes over the console; the Storyteller's rights stay with ana
    assert say("/as bob") == "(speaking as bob)\n"
    assert say("!set difficulty 3").startswith("⚠ only the Storyteller")
    assert "/storyteller" in say("/help")
    say("/storyteller bob")
    assert not say("!set difficulty 3").startswith("⚠")
    log = say("!log")
    assert "ana" in log and "bob" in log

    # the same hour in a real process: no traceback, one start line on stderr
    config = root / "config" / "coterie.toml"
    done = subprocess.run(
        [*coterie_cli, "chat", "--config", str(config), "--room", "first-hour", "--user", "ana"],
        input="\n".join(say.typed) + "\n",
        capture_output=True,
        text=True,
        env={**cli_env, "COTERIE_DATABASE_URL": "memory://"},
        cwd=root,
        timeout=120,
    )
    assert done.returncode == 0
    assert "Traceback" not in done.stdout + done.stderr
    assert done.stderr.splitlines() == ["coterie: state in memory (lost when the process ends)"]
