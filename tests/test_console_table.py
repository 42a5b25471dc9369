"""A console for the whole table (issue 22): one console speaking as several users, the
Storyteller's rights for a chosen user, whose turn in the prompt; Ctrl-C leaves cleanly in
``coterie chat`` (at a prompt_toolkit prompt on a terminal, or piped) and in ``coterie run``; the
prompt completes command names; NO_COLOR turns colour off."""

from __future__ import annotations

import asyncio
import fcntl
import io
import os
import re
import select
import signal
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from coterie_console import ConsoleAdapter
from coterie_console.early import ERASE_LINE, prompt_while_loading


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def run_lines(app, text: str, **settings) -> str:
    stdout = io.StringIO()
    adapter = ConsoleAdapter(
        app, {"user": "alice", **settings}, stdin=io.StringIO(text), stdout=stdout
    )
    asyncio.run(adapter.run())
    return stdout.getvalue()


def test_one_console_runs_a_contest_between_two_users(make_app):
    app = make_app(faces=[8, 8, 8, 2, 2, 1])
    out = run_lines(app, "!contest @bob 3\nbob: !resist 3\n")
    assert "Traceback" not in out and "⚠" not in out, out
    assert "alice" in out and "bob" in out
    assert "wins" in out.lower() or "won" in out.lower(), out


def test_as_switches_the_speaker_and_the_prompt_shows_whose_turn(make_app):
    app = make_app(seed=1)
    stdout = io.StringIO()
    adapter = ConsoleAdapter(
        app, {"user": "alice", "storyteller": "alice"}, stdin=io.StringIO(""), stdout=stdout
    )
    assert adapter.prompt() == "alice (Storyteller)> "
    asyncio.run(adapter.say("/as bob"))
    assert adapter.prompt() == "bob> " and adapter.user == "bob"
    asyncio.run(adapter.say("!roll 3 6"))
    assert stdout.getvalue().splitlines()[1] == "bob"
    asyncio.run(adapter.say("/as not a name"))
    assert "⚠ /as NAME" in stdout.getvalue()


def test_storyteller_rights_follow_the_chosen_user(make_app):
    app = make_app(seed=1)
    # the room is claimed by carol: only a Storyteller may change its settings
    out = run_lines(
        app,
        "carol: !storyteller claim\n"
        "bob: !set difficulty 7\n"
        "/storyteller bob\n"
        "bob: !set difficulty 7\n"
        "/storyteller off\n"
        "bob: !set difficulty 8\n",
    )
    lines = out.splitlines()
    refused = [line for line in lines if line.startswith("⚠ only the Storyteller")]
    assert len(refused) == 2, out
    assert "(bob has the Storyteller's rights)" in lines
    assert any("difficulty" in line and "7" in line and not line.startswith("⚠") for line in lines)


def test_a_speaker_prefix_needs_a_command_after_it(make_app):
    out = run_lines(make_app(seed=1), "note: remember the ghoul\n!roll 2 6\n")
    assert out.splitlines()[0] == "alice"  # the note was ordinary talk, no reply


def test_no_color_turns_colour_off(make_app, monkeypatch):
    app = make_app(seed=1)
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert ConsoleAdapter(app, {}, stdin=FakeTTY(), stdout=FakeTTY()).color
    monkeypatch.setenv("NO_COLOR", "1")
    assert not ConsoleAdapter(app, {}, stdin=FakeTTY(), stdout=FakeTTY()).color
    assert ConsoleAdapter(app, {"color": "always"}, stdin=FakeTTY(), stdout=FakeTTY()).color


#: #17 in a v5 room: a remorse roll, `vs` another character of the same player and the
#: Storyteller's NPC against a player's character by Trait names, a macro in abbreviations
CHARACTER_SCRIPT = """/storyteller carol
carol: !variant v5
!char new Lise
!char set Strength 3 Brawl 2 Wits 2 Streetwise 1
!stains 1
!remorse
!char new Cid
!char set Wits 2 Awareness 1
!char use Lise
!roll Strength+Brawl vs Cid Wits+Awareness
!macro add hunt = wits+street 4
!hunt
carol: !npc new Guard
carol: !npc set Guard Wits 3 Awareness 2
carol: !npc secret off
carol: !npc roll Guard Wits+Awareness vs Lise Strength+Brawl
!sheet
"""
CHARACTER_FACES = [2, 5, *[8, 8, 8, 3, 2], *[6, 4, 1], *[7, 7, 3], *[9, 9, 2, 1, 6], *[6] * 5]


def test_v5_remorse_vs_by_name_and_a_macro_in_colour_and_plain(make_app):
    """#17 through the console adapter, once in colour (the native rendering: ANSI bold names
    and dice) and once plain (piped): the same words, line for line."""
    outputs = {}
    for color in ("always", "never"):
        app = make_app(
            faces=CHARACTER_FACES,
            plugins={"enable": ["revised", "v5"]},
            limits={"rate": {"enabled": False}},
        )
        outputs[color] = run_lines(app, CHARACTER_SCRIPT, color=color)
    colour, plain = outputs["always"], outputs["never"]
    assert "Traceback" not in plain and "⚠" not in plain, plain
    bold, reset, green = "\x1b[1m", "\x1b[0m", "\x1b[1;32m"
    # remorse: 2 empty boxes, 2 dice, no success: Humanity 7 → 6 and the Stains cleared
    change = "loses a point of Humanity (remorse, 2 dice): Humanity 7 → 6; Stains 1/3 → 0/4"
    assert (
        "\nalice\n2 dice (humanity 2), Difficulty 1: 2 5\nTotal failure — no successes at all.\n"
        f"Lise {change}\nroll "
    ) in plain
    assert f"\n{bold}Lise{reset} {change}\n" in colour
    assert "Humanity 6 · Stains 0/4" in plain
    # vs another character: both pools by name, the result, then the options
    assert (
        "5 dice (strength 3+brawl 2), Hunger 1: 8 8 8 3 | Hunger 2\n"
        "Opposition, 3 dice (wits 2+awareness 1), Hunger 1: 6 4 | Hunger 1 — 1 success\n"
        "Win — 3 successes against 1, margin 2\n"
        "Lise: Strength 3 + Brawl 2 = 5 dice\n"
        "Cid: Wits 2 + Awareness 1 = 3 dice\n"
        "Options: !reroll failures | !reroll crits\n"
    ) in plain
    assert f"Hunger 1: {green}8{reset} {green}8{reset} {green}8{reset}" in colour
    assert f"\n{bold}Win{reset} — 3 successes against 1, margin 2\n" in colour
    # the Storyteller's NPC against the player's character, both sheets read
    assert (
        "\nGuard\n5 dice (wits 3+awareness 2), Hunger 1: 9 9 2 1 | Hunger 6\n"
        "Opposition, 5 dice (strength 3+brawl 2), Hunger 1: 6 6 6 6 | Hunger 6 — 5 successes\n"
        "Failure — 3 successes against 5, 2 short."
    ) in plain
    assert "Guard: Wits 3 + Awareness 2 = 5 dice\nLise: Strength 3 + Brawl 2 = 5 dice\n" in plain
    # the macro: kept and shown by the sheet's names, run with the same rules
    assert "\nLise: macro !hunt = Wits+Streetwise 4\n" in plain
    assert f"\n{bold}Lise{reset}: macro !hunt = Wits+Streetwise 4\n" in colour
    assert (
        "\nhunt: alice\n3 dice (wits 2+streetwise 1), Hunger 1, Difficulty 4: 7 7 | Hunger 3\n"
        "Failure — 2 successes, 2 short. The Storyteller may offer a win at a cost.\n"
        "Lise: Wits 2 + Streetwise 1 = 3 dice\nOptions: !reroll crits\n"
    ) in plain
    # the same words: the colour output without its codes is the plain one (but the roll ids)
    ids = re.compile(r"^roll \w+$", re.M)
    assert ids.sub("roll ID", re.sub(r"\x1b\[[0-9;]*m", "", colour)) == ids.sub("roll ID", plain)


def test_prompt_toolkit_is_imported_only_for_a_terminal(coterie_cli, cli_env, root):
    probe = (
        "import sys, io, asyncio\n"
        "from coterie.framework.app import Coterie\n"
        "from coterie.framework.config import Config\n"
        "from coterie_console import ConsoleAdapter\n"
        "app = Coterie(Config())\n"
        "out = io.StringIO()\n"
        "asyncio.run(ConsoleAdapter(app, {}, stdin=io.StringIO('!roll 2\\n'), stdout=out).run())\n"
        "assert out.getvalue()\n"
        "print('prompt_toolkit' in sys.modules)\n"
    )
    done = subprocess.run(
        [str(root / ".venv/bin/python"), "-c", probe],
        capture_output=True,
        text=True,
        env={**cli_env, "COTERIE_DATABASE_URL": "memory://"},
        timeout=120,
    )
    assert done.stdout.strip() == "False", done.stderr


# --- real processes: a terminal (pty) and Ctrl-C -----------------------------------------------


class Terminal:
    """``coterie ...`` on a pseudo-terminal: what it writes, and keys typed into it."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd, *, controlling=False) -> None:
        """``controlling``: the terminal is the process's controlling terminal, as a shell's is
        (Ctrl-C typed while the terminal itself reads keys is then a SIGINT)."""
        self.master, slave = os.openpty()
        env = {**env, "TERM": "xterm", "PROMPT_TOOLKIT_NO_CPR": "1"}
        self.process = subprocess.Popen(
            argv,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            cwd=cwd,
            close_fds=True,
            start_new_session=controlling,
            preexec_fn=(lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0)) if controlling else None,
        )
        os.close(slave)
        self.out = ""
        self.mark = 0

    def wait_for(self, text: str, timeout: float = 60) -> str:
        """Wait until ``text`` appears in what was written since the last key typed."""
        end = time.monotonic() + timeout
        while text not in self.out[self.mark :] and time.monotonic() < end:
            ready, _, _ = select.select([self.master], [], [], 0.2)
            if ready:
                try:
                    self.out += os.read(self.master, 65536).decode(errors="replace")
                except OSError:
                    break
        assert text in self.out[self.mark :], self.out[-500:]
        return self.out

    def type(self, keys: str) -> None:
        self.mark = len(self.out)
        os.write(self.master, keys.encode())

    def close(self) -> int:
        try:
            return self.process.wait(30)
        finally:
            os.close(self.master)


@pytest.fixture
def chat_env(cli_env):
    return {**cli_env, "COTERIE_DATABASE_URL": "memory://"}


def test_terminal_console_completes_commands_and_ctrl_c_leaves(coterie_cli, chat_env, root):
    term = Terminal([*coterie_cli, "chat", "--seed", "1", "--user", "ana"], chat_env, root)
    term.wait_for("ana>")
    assert "Try !roll 7 6" in term.out
    term.type("!ro")
    term.wait_for("!ro")
    term.type("\t")
    term.wait_for("ll")  # completed to !roll (only the completed part is redrawn)
    term.type(" 3 6\r")
    term.wait_for("3 dice, difficulty 6")
    term.mark = term.out.rindex("3 dice, difficulty 6")
    term.wait_for("ana>")  # the prompt after the reply is back
    term.type("\x03")
    term.wait_for("bye")
    assert term.close() == 0
    assert "Traceback" not in term.out
    assert term.out.count("bye") == 1


#: what prompt_toolkit writes first when its prompt starts (bracketed paste on)
EDITOR_STARTS = "\x1b[?2004h"


def test_the_prompt_shows_before_the_line_editor_and_keys_typed_meanwhile_are_kept(
    coterie_cli, chat_env, root
):
    """Issue 18: a terminal chat writes its prompt before prompt_toolkit (~0.1 s to import) is
    ready. Keys typed meanwhile are not echoed by the terminal; the editor reads them as typed
    ahead, so the command runs, once, and shows once."""
    term = Terminal([*coterie_cli, "chat", "--seed", "1", "--user", "ana"], chat_env, root)
    term.wait_for("ana> ")
    assert EDITOR_STARTS not in term.out  # typed below while the editor is still loading
    term.type("!roll 3 6\r")
    term.wait_for("3 dice, difficulty 6")
    term.mark = term.out.rindex("3 dice, difficulty 6")
    term.wait_for("ana>")
    term.type("\x04")  # Ctrl-D at the prompt: bye
    term.wait_for("bye")
    assert term.close() == 0
    plain = term.out.index("ana> ")
    erased = term.out.index(ERASE_LINE, plain)
    assert plain < erased < term.out.index(EDITOR_STARTS)  # the plain prompt, then the editor's
    assert "!roll" not in term.out[plain:erased]  # the terminal did not echo the keys meanwhile
    assert term.out.count("3 dice, difficulty 6") == 1
    assert "Traceback" not in term.out


@pytest.mark.parametrize(
    ("key", "said"), [("\x04", "bye"), ("\x03", "(interrupted) bye")], ids=["ctrl-d", "ctrl-c"]
)
def test_ctrl_d_or_ctrl_c_typed_before_the_line_editor_is_ready_leaves(
    key, said, coterie_cli, chat_env, root
):
    """Ctrl-D at the plain prompt reaches the editor as typed (the terminal edits no line
    meanwhile, so it is no end of input the editor never sees); Ctrl-C is a SIGINT, as ever.
    Either way: one line, status 0, and the terminal's echo and line editing as they were."""
    argv = [*coterie_cli, "chat", "--seed", "1", "--user", "ana"]
    term = Terminal(argv, chat_env, root, controlling=True)
    term.wait_for("ana> ")
    assert EDITOR_STARTS not in term.out
    term.type(key)
    term.wait_for(said)
    assert term.process.wait(30) == 0
    local = termios.tcgetattr(term.master)[3]
    assert local & termios.ECHO and local & termios.ICANON
    term.close()
    assert term.out.count("bye") == 1 and "Traceback" not in term.out


@pytest.mark.parametrize(
    ("term", "written"), [("xterm", ["ana> ", ERASE_LINE]), ("dumb", []), ("unknown", [])]
)
def test_the_plain_prompt_and_its_erasing_wait_for_a_terminal_that_has_them(
    term, written, monkeypatch
):
    """A dumb terminal understands no erasing: there the prompt waits for the editor, which
    writes its own plain one. Without terminal modes to change (no terminal behind ``stdin``),
    the prompt is still written first."""
    monkeypatch.setenv("TERM", term)
    out: list[str] = []
    with prompt_while_loading(io.StringIO(), out.append, "ana> "):
        assert out == written[:1]
    assert out == written


def test_piped_chat_ctrl_c_while_waiting_for_input(coterie_cli, chat_env, root):
    process = subprocess.Popen(
        [*coterie_cli, "chat", "--seed", "1"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=chat_env,
        cwd=root,
        text=True,
    )
    assert "state in memory" in process.stderr.readline()  # started, waiting for a line
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=30)
    assert process.returncode == 0
    assert err.strip().splitlines() == ["coterie: interrupted, stopped cleanly"], err
    process.stdin.close()


@pytest.mark.parametrize("how", ["script", "module"])
def test_ctrl_c_while_the_command_line_is_still_importing(how, coterie_cli, chat_env, root):
    """SIGINT half-way through the imports (once asyncio's extension is mapped: the command's own
    imports have begun — the app, the plugins — and the chat has not started): the same one line
    and status 0, no traceback (``coterie.__main__.entry`` imports the command line under its own
    guard, and the command runs under ``main``'s)."""
    argv = coterie_cli if how == "script" else [sys.executable, "-m", "coterie"]
    process = subprocess.Popen(
        [*argv, "chat", "--seed", "1"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=chat_env,
        cwd=root,
        text=True,
    )
    maps = Path(f"/proc/{process.pid}/maps")
    deadline = time.monotonic() + 30
    while "_asyncio" not in maps.read_text() and time.monotonic() < deadline:
        time.sleep(0.001)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=30)
    process.stdin.close()
    assert "state in memory" not in err  # it was stopped before the chat started
    assert process.returncode == 0, err
    assert err.strip().splitlines() == ["coterie: interrupted, stopped cleanly"], err


def test_run_ctrl_c_is_one_line(coterie_cli, chat_env, root, tmp_path):
    config = tmp_path / "run.toml"
    config.write_text("[adapters.console]\nenabled = true\n", encoding="utf-8")
    process = subprocess.Popen(
        [*coterie_cli, "run", "--config", str(config)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=chat_env,
        cwd=root,
        text=True,
    )
    line = process.stderr.readline()
    assert "state in memory" in line, line  # the one start line: which store
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "SIGINT: stopping" in lines[0], err  # one line


def test_npc_trackers_are_private_to_the_storyteller_and_the_log_shows_changes(make_app):
    """#20 on the console: a hidden NPC's tracker is shown marked private to the Storyteller;
    `!log` lists a player's tracker change and the NPC's only as a secret line."""
    out = run_lines(
        make_app(seed=1, limits={"rate": {"enabled": False}}),
        "carol: !storyteller claim\n"
        "carol: !npc new Guard\n"
        "carol: !npc macro Guard add look = Perception 6\n"
        "carol: !npc damage Guard 2 lethal\n"
        "!char new Lise\n"
        "!damage 1\n"
        "!log\n",
    )
    lines = out.splitlines()
    assert "An NPC's tracker changed." in lines
    assert "(private to carol) Guard: Health [.......] Healthy → [XX.....] Hurt (-1)" in lines
    assert "(private to carol) Guard: macro look = Perception 6" in lines
    assert not [line for line in lines if "Guard" in line and not line.startswith("(private")]
    log = lines[lines.index("Last 2 entries") :]
    assert log[1].endswith("carol changed a tracker in secret")
    assert log[2].endswith("alice Lise: Health [.......] Healthy → [/......] Bruised")


def test_an_npc_rouse_check_is_private_to_the_storyteller(make_app):
    """v5's ``!npc rouse`` on the console: the table sees that the NPC made a secret check; the
    Storyteller's private lines have the die and the NPC's Hunger rising."""
    app = make_app(faces=[2], plugins={"enable": ["v5"]}, defaults={"variant": "v5"})
    out = run_lines(
        app,
        "carol: !storyteller claim\n"
        "carol: !npc new Guard\n"
        "carol: !npc hunger Guard 1\n"
        "carol: !npc rouse Guard\n",
    )
    assert "Guard made a secret NPC rouse.\n" in out
    assert (
        "(private to carol) Guard\nRouse check: 2 — failed\nHunger 1 → 2.\n"
        "Guard: Hunger 1/5 → 2/5\nsecret: only you and the Storyteller see this"
    ) in out
    assert out.count("Rouse check") == 1  # the room's lines have none of it
