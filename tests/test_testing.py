"""coterie.testing, the pytest plugin for plugin authors (issue 21): its fixtures are loaded by
pytest through the ``pytest11`` entry point, so these tests use them without importing them."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from coterie.errors import UsageError
from coterie.render.elements import Die, Role, Text, bold
from coterie.testing import FaceQueue, Table, encode


def test_several_users_in_several_rooms(coterie_table) -> None:
    table: Table = coterie_table(["revised"], faces=[8, 3, 6, 1, 1])
    said = table.say("!roll 3 # the lock", user="ana")
    assert said.lines == [
        "ana — the lock",
        "3 dice, difficulty 6 (Standard): 8 3 6",
        "2 successes — Moderate",
    ]
    assert said.roll_id and f"roll {said.roll_id}" not in said.text
    assert said.full_text.endswith(f"roll {said.roll_id}")
    other = table.say("!roll 2", user="ben", room="cellar")
    assert other.lines[0] == "ben"
    table.assert_rolled({"user": "ana", "faces": [8, 3, 6], "successes": 2})
    table.assert_rolled({"user": "ben", "faces": [1, 1], "outcome": "botch"}, room="cellar")
    with pytest.raises(AssertionError, match="1 roll\\(s\\) logged, 2 expected"):
        table.assert_rolled({}, {})
    with pytest.raises(AssertionError, match="successes is 2, not 3"):
        table.assert_rolled({"successes": 3})


def test_replies_per_platform(coterie_table) -> None:
    table = coterie_table(["revised"], faces=[10, 1])
    said = table.say("!roll 2")
    slack, telegram, matrix = (said.encoded(p) for p in ("slack", "telegram", "matrix"))
    assert (
        slack
        == "*ana*\n2 dice, difficulty 6 (Standard): ~10~ ~1~\n*Failure* (1 one cancelled 1 of 1)"
    )
    assert telegram.startswith("<b>ana</b>\n2 dice, difficulty 6 (Standard): <s>10</s> <s>1</s>\n")
    assert matrix.startswith("<strong>ana</strong><br>2 dice, difficulty 6 (Standard): <del>")
    assert said.encoded("console").startswith("\x1b[1mana\x1b[0m")
    assert said.roll_id not in slack and said.roll_id in said.encoded("slack", footer=True)
    assert said.encoded("plain") == said.text
    assert encode([bold("a<b")], "telegram") == "<b>a&lt;b</b>"
    assert encode([Die(10, Role.SUCCESS), Text(" & ")], "slack") != encode(
        [Die(10, Role.SUCCESS), Text(" & ")], "plain"
    )
    with pytest.raises(LookupError, match="no coterie plugin 'nope'"):
        encode([Text("x")], "nope")


def test_an_error_reply_changes_nothing(coterie_table) -> None:
    table = coterie_table(["revised"], faces=[])
    said = table.say("!roll 3 11")
    assert said.is_error and "difficulty" in said.text
    assert table.rolls() == []


def test_the_face_queue_feeds_rolls_between_messages(coterie_table, coterie_faces) -> None:
    table = coterie_table(["revised"], dice=coterie_faces)
    coterie_faces.give(6, 6)
    assert table.say("!roll 2").lines[-1].startswith("2 successes")
    with pytest.raises(AssertionError, match="did not answer"):
        table.say("just chatting")
    said = table.say("!roll 2")  # nothing queued: the replay error, not a random roll
    assert "the faces ran out" in said.text
    coterie_faces.give(3)
    with pytest.raises(UsageError, match="never rolled"):
        coterie_faces.finish()


def test_the_default_rule_set_is_the_plugins_own(coterie_table) -> None:
    table = coterie_table(["d6"], faces=[4, 1])
    assert "d6" in table.app.variants and "revised" not in table.app.variants
    assert table.say("!roll 2").lines[1].startswith("2 dice")


def test_a_plugin_module_that_is_not_installed(coterie_table) -> None:
    import coterie_house_rules

    table = coterie_table(
        ["revised", ("house", coterie_house_rules)], variant="nobotch", faces=[1, 2]
    )
    assert "Botch" not in table.say("!roll 2").text


async def test_async_tests_await_the_table(coterie_table) -> None:
    table = coterie_table(["revised"], faces=[9])
    said = await table.asay("!roll 1 7")
    assert said.lines[-1].startswith("1 success")
    assert [r.faces for r in await table.arolls()] == [[9]]


def test_the_plugin_loads_in_a_fresh_pytest(tmp_path: Path) -> None:
    """A plugin author's test directory with no conftest: the fixtures come from the entry
    point."""
    (tmp_path / "test_author.py").write_text(
        textwrap.dedent("""
        def test_roll(coterie_table):
            table = coterie_table(["revised"], faces=[7, 7])
            assert table.say("!roll 2").lines[-1].startswith("2 successes")
            table.assert_rolled({"faces": [7, 7]})
    """)
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout


def test_face_queue_alone() -> None:
    queue = FaceQueue([1, 2]).give(3)
    assert queue.roll(2, 6) == [1, 2] and queue.remaining == 1
    with pytest.raises(UsageError, match="needs at least 2 dice, but 1"):
        queue.roll(2, 6)
    assert queue.served == [1, 2]
