"""The console adapter: a scripted session through a real process, and in-process with StringIO."""

from __future__ import annotations

import io
import re
import subprocess

from conftest import drop_roll_ids
from coterie.ops.cli import main
from coterie_console import ConsoleAdapter

ANSI = re.compile(r"\x1b\[")
USAGE = "Usage: !roll POOL"
DICE_LINE = re.compile(
    r"^5 dice, difficulty (\d+) \(\w[\w ]*\): ((?:10|[1-9])(?: (?:10|[1-9])){4})$"
)
RESULT_LINE = re.compile(r"^(Botch!|Failure|\d+ success(es)? — \w+)")


def test_scripted_session_in_a_real_process(coterie_cli, cli_env, root):
    script = "\n".join(
        [
            "!roll 5 6 # first",
            "!roll 0",
            "!help",
            "just chatting, not a command",
            "",
            "!variant nobotch",
            "!roll 5 8",
            "!variant",
        ]
    )
    done = subprocess.run(
        [*coterie_cli, "chat", "--config", "config/coterie.toml", "--seed", "7", "--user", "Lynn"],
        input=script + "\n",
        capture_output=True,
        text=True,
        env=cli_env,
        cwd=root,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert not ANSI.search(done.stdout), "piped output must be plain text"
    # one line at start says which store the room's state is in, and nothing else is said there
    assert done.stderr.splitlines() == ["coterie: state in memory (lost when the process ends)"]
    lines = drop_roll_ids(done.stdout.splitlines())
    # 1. the roll, with the caller's name and comment
    assert lines[0] == "Lynn — first"
    first = DICE_LINE.match(lines[1])
    assert first is not None and first.group(1) == "6", lines[1]
    assert RESULT_LINE.match(lines[2]), lines[2]
    # 2. the error with its usage line
    assert lines[3].startswith("⚠ ") and "pool of 0" in lines[3]
    assert lines[4].startswith(USAGE)
    # 3. help: the command list
    assert lines[5].startswith("coterie — rules:") and "(revised)" in lines[5]
    help_end = next(i for i, line in enumerate(lines) if line.startswith("!help COMMAND"))
    assert any(line.startswith("!roll — ") for line in lines[5:help_end])
    # 4. the chat line and the empty line got no reply; the switch did
    switched = lines[help_end + 1]
    assert switched.startswith("This room now plays") and switched.endswith("(nobotch).")
    # 5. the roll under the new rules
    assert lines[help_end + 2] == "Lynn"
    second = DICE_LINE.match(lines[help_end + 3])
    assert second is not None and second.group(1) == "8"
    assert RESULT_LINE.match(lines[help_end + 4])
    # 6. the listing marks nobotch as the room's rules
    assert lines[help_end + 5].startswith("This room plays")
    assert any(line.startswith("• nobotch") for line in lines[help_end + 6 :])
    assert "not a command" not in done.stdout

    # the same seed gives the same session
    again = subprocess.run(
        [*coterie_cli, "chat", "--config", "config/coterie.toml", "--seed", "7", "--user", "Lynn"],
        input=script + "\n",
        capture_output=True,
        text=True,
        env=cli_env,
        cwd=root,
        timeout=60,
    )
    # the same seed rolls the same dice; roll ids are random and differ
    assert drop_roll_ids(again.stdout.splitlines()) == drop_roll_ids(done.stdout.splitlines())


def run_console(make_app, text: str, **settings) -> str:
    import asyncio

    app = make_app(seed=7)
    stdin, stdout = io.StringIO(text), io.StringIO()
    adapter = ConsoleAdapter(app, {"user": "Ana", **settings}, stdin=stdin, stdout=stdout)
    assert not adapter.interactive
    asyncio.run(adapter.run())
    return stdout.getvalue()


def test_console_adapter_in_process(make_app):
    out = run_console(make_app, "!roll 3 6\r\nhello\n\n!rol 3\n!roll 3 6 wpp")
    assert not ANSI.search(out)
    lines = drop_roll_ids(out.splitlines())
    assert lines[0] == "Ana"
    assert lines[1].startswith("3 dice, difficulty 6")
    assert RESULT_LINE.match(lines[2])
    assert lines[3] == "⚠ unknown command `!rol`."
    assert lines[4] == "Did you mean `!roll`?"
    assert lines[5] == "⚠ unknown option `wpp`. Did you mean `wp`?"
    assert lines[6].startswith(USAGE)
    assert len(lines) == 7
    assert out.endswith("\n")


def test_console_adapter_uses_the_room_setting(make_app):
    import asyncio

    app = make_app(rooms={"console:den": {"prefix": "?"}})
    stdout = io.StringIO()
    adapter = ConsoleAdapter(
        app, {"user": "Ana", "room": "den"}, stdin=io.StringIO("!roll 3\n?roll 3\n"), stdout=stdout
    )
    asyncio.run(adapter.run())
    assert stdout.getvalue().splitlines()[0] == "Ana"
    assert stdout.getvalue().count("3 dice") == 1


def test_console_adapter_color_always_uses_ansi(make_app):
    out = run_console(make_app, "!roll 3 6\n", color="always")
    assert ANSI.search(out)


def test_a_person_named_in_a_reply_is_bold_in_colour_and_bare_when_piped(make_app):
    out = run_console(make_app, "!contest @bob 3 6\n", color="always")
    assert "challenges \x1b[1mbob\x1b[0m (a resisted roll)" in out
    assert "challenges bob (a resisted roll)" in run_console(make_app, "!contest @bob 3 6\n")
    # the label is text from the chat: no escape sequence of its own reaches the terminal
    assert "\x1b[1mb?b\x1b[0m" in run_console(make_app, "!contest @b\x1bb 3 6\n", color="always")


def test_a_v5_reroll_of_the_dice_the_player_names_in_the_terminal(make_app):
    import asyncio

    app = make_app(
        faces=[3, 8, 2, 1, 10, 9, 6], plugins={"enable": ["v5"]}, defaults={"variant": "v5"}
    )
    stdout = io.StringIO()
    stdin = io.StringIO("!roll 5 1 3\n!reroll 8 1\n")
    asyncio.run(
        ConsoleAdapter(app, {"user": "Ana", "color": "always"}, stdin=stdin, stdout=stdout).run()
    )
    out = stdout.getvalue()
    green, reset = "\x1b[1;32m", "\x1b[0m"
    assert f"Difficulty 3: \x1b[2m3{reset} {green}9{reset} \x1b[2m2{reset} {green}6{reset}" in out
    assert "Willpower re-roll (your choice): 8 1 → 9 6." in out


def test_console_adapter_stops_at_eof_with_no_input(make_app):
    assert run_console(make_app, "") == ""


def test_chat_command_in_process(capsys, monkeypatch, root):
    monkeypatch.setattr("sys.stdin", io.StringIO("!roll 4 6\n!roll 0\n"))
    code = main(
        ["chat", "--config", str(root / "config" / "coterie.toml"), "--seed", "1", "--user", "Bo"]
    )
    out = capsys.readouterr().out
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "Bo"
    assert lines[1].startswith("4 dice, difficulty 6")
    assert any(line.startswith("⚠ a pool of 0") for line in lines)
    assert not ANSI.search(out)
