"""``coterie export ROOM --format md|json``: a room's roll log as a session log."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from coterie.framework.config import DATABASE_URL_ENV, load_config
from coterie.ops import cli
from coterie.ops.export import SESSIONS, iso, room_log, to_markdown
from coterie.storage.migrate import open_store
from coterie.storage.state import MemoryStore, RollRecord, StateStore

ROOM = "console:table"
T0 = 1_795_000_000.0  # 2026-11-18T11:06:40Z


def roll(n: int, session: str | None, **changes: Any) -> RollRecord:
    data: dict[str, Any] = {
        "id": f"id{n}",
        "room": ROOM,
        "user": "u-lynn",
        "display_name": "Lynn",
        "variant": "revised",
        "request": f"!roll {n + 4} 6",
        "faces": [10, 6, 1][: n % 3 + 1],
        "outcome": "success",
        "successes": n % 3 + 1,
        "session": session,
        "time": T0 + 60 * n,
        "detail": {"n": n},
    }
    data.update(changes)
    return RollRecord(**data)


SESSIONS_VALUE = {
    "current": {"id": "s2", "started": T0 + 1000, "started_by": "st"},
    "history": [{"id": "s1", "started": T0 + 100, "ended": T0 + 500, "started_by": "st"}],
}


async def fill(store: StateStore) -> list[RollRecord]:
    records = [
        roll(1, None),
        roll(2, "s1"),
        roll(3, "s1", outcome="botch", successes=-1, botch=True, user="u-mara", display_name=""),
        roll(20, "s2", request="!roll 5 6 # the | pipe", outcome="failure", successes=0),
        roll(21, None),
        roll(9, "other-room-session", room="console:elsewhere"),
    ]
    for record in records:
        await store.log_roll(record)
    await store.set(SESSIONS, ROOM, SESSIONS_VALUE)
    return [r for r in records if r.room == ROOM]


async def test_json_export_structure() -> None:
    store = MemoryStore()
    mine = await fill(store)
    log = await room_log(store, ROOM)
    assert log["room"] == ROOM
    assert [r["id"] for r in log["rolls"]] == ["id1", "id2", "id3", "id20", "id21"]  # oldest first
    assert [RollRecord.from_json(r) for r in log["rolls"]] == mine
    assert log["sessions"] == [
        {"id": "s1", "started": T0 + 100, "ended": T0 + 500, "started_by": "st"},
        {"id": "s2", "started": T0 + 1000, "ended": None, "started_by": "st"},
    ]
    json.dumps(log, allow_nan=False)  # plain JSON


async def test_markdown_export() -> None:
    store = MemoryStore()
    await fill(store)
    text = to_markdown(await room_log(store, ROOM))
    lines = text.splitlines()
    assert lines[0] == f"# Roll log of {ROOM}"
    headings = [line for line in lines if line.startswith("## ")]
    assert headings == [
        f"## Session s1 — started {iso(T0 + 100)} by st ended {iso(T0 + 500)}",
        f"## Session s2 — started {iso(T0 + 1000)} by st still open",
        "## Outside sessions",
    ]
    assert iso(T0) == "2026-11-18T11:06:40Z"
    assert f"| {iso(T0 + 120)} | id2 | Lynn | !roll 6 6 | 10 6 1 | 3 successes (success) |" in lines
    # no display name: the user id; a botch is named; a pipe in a request does not break the row
    assert f"| {iso(T0 + 180)} | id3 | u-mara | !roll 7 6 | 10 | -1 successes (botch) |" in lines
    assert any(
        "!roll 5 6 # the \\| pipe" in line and "0 successes (failure)" in line for line in lines
    )
    outside = lines[lines.index("## Outside sessions") :]
    assert [line.split(" | ")[1] for line in outside if line.startswith("| 20")] == ["id1", "id21"]
    assert lines[-1] == "5 roll(s) in 2 session(s)."
    assert "id9" not in text  # another room's roll


async def test_rolls_of_an_unrecorded_session_still_grouped() -> None:
    store = MemoryStore()
    await store.log_roll(roll(1, "lost"))
    log = await room_log(store, ROOM)  # no sessions value in the store at all
    assert log["sessions"] == [
        {"id": "lost", "started": T0 + 60, "ended": None, "started_by": None}
    ]
    assert "## Session lost — started" in to_markdown(log)


@pytest.fixture
def config_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv(DATABASE_URL_ENV, raising=False)
    path = tmp_path / "coterie.toml"
    path.write_text('data_dir = "data"\n', encoding="utf-8")
    return path


async def _filled_sqlite(config_path: Path) -> None:
    store = await open_store(load_config(config_path))
    try:
        await fill(store)
    finally:
        await store.close()


async def test_cli_export_md_and_json(
    config_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    await _filled_sqlite(config_path)
    # cli.main runs its own event loop: call it from a thread, not from inside this test's loop
    code = await asyncio.to_thread(cli.main, ["export", ROOM, "--config", str(config_path)])
    assert code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"# Roll log of {ROOM}\n")
    assert "| id20 |" in out
    target = tmp_path / "log.json"
    args = ["export", ROOM, "--format", "json", "-o", str(target), "--config", str(config_path)]
    assert await asyncio.to_thread(cli.main, args) == 0
    assert "5 roll(s) of console:table written to" in capsys.readouterr().out
    data = json.loads(target.read_text(encoding="utf-8"))
    assert [r["id"] for r in data["rolls"]] == ["id1", "id2", "id3", "id20", "id21"]
    assert [s["id"] for s in data["sessions"]] == ["s1", "s2"]


async def test_cli_export_unknown_room(
    config_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    await _filled_sqlite(config_path)
    args = ["export", "console:nowhere", "--config", str(config_path)]
    assert await asyncio.to_thread(cli.main, args) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "no rolls logged in room 'console:nowhere'" in captured.err
    assert "rooms with rolls: console:elsewhere, console:table" in captured.err


def test_cli_export_without_database(config_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["export", ROOM, "--config", str(config_path)]) == 1
    assert "no state database at" in capsys.readouterr().err
    assert not (config_path.parent / "data").exists()  # nothing created


def test_cli_export_bad_format(config_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        cli.main(["export", ROOM, "--format", "pdf", "--config", str(config_path)])
    assert caught.value.code == 2
    assert "invalid choice: 'pdf'" in capsys.readouterr().err


HOSTILE = [
    "<script>alert('x')</script>",
    "<img src=x onerror=alert(1)>",
    "[click me](javascript:alert(1))",
    "![pixel](https://tracker.example/p.png)",
    "<javascript:alert(1)>",
    "**loud** _soft_ `code` ~~gone~~ &amp; &#60;b&#62;",
    "cell | break \\| and \\ backslash",
]


async def test_markdown_export_escapes_player_text_and_json_stays_lossless() -> None:
    """Player text (names, requests, comments) is shown as typed in the Markdown log, never as
    raw HTML, a link, an image or formatting; the JSON export keeps it byte for byte."""
    from markdown_it import MarkdownIt

    store = MemoryStore()
    for n, text in enumerate(HOSTILE):
        await store.log_roll(roll(n, "s<1>", display_name=text, request=f"!roll 3 # {text}"))
    await store.set(
        SESSIONS, ROOM, {"current": {"id": "s<1>", "started": T0, "started_by": "[st](x:y)"}}
    )
    log = await room_log(store, ROOM)
    assert [r["display_name"] for r in log["rolls"]] == HOSTILE  # JSON: lossless
    assert json.loads(json.dumps(log))["rolls"][0]["request"] == f"!roll 3 # {HOSTILE[0]}"

    parser = MarkdownIt("commonmark").enable(["table", "strikethrough"])
    tokens = parser.parse(to_markdown(log))
    kinds = {t.type for t in tokens} | {c.type for t in tokens for c in t.children or []}
    for unsafe in ("html_inline", "html_block", "link_open", "image", "autolink"):
        assert unsafe not in kinds
    for formatting in ("strong_open", "em_open", "code_inline", "s_open"):
        assert formatting not in kinds
    rows, cells = [], 0
    for token in tokens:
        if token.type == "tr_open":
            cells = 0
        elif token.type in ("td_open", "th_open"):
            cells += 1
        elif token.type == "tr_close":
            rows.append(cells)
    assert len(rows) == 1 + len(HOSTILE) and set(rows) == {6}  # no | split a cell
    inline = [t.content for t in tokens if t.type == "inline"]
    for text in HOSTILE:  # shown as typed (whitespace kept to single spaces)
        assert any(text in _plain(parser, cell) for cell in inline), text
    html = parser.render(to_markdown(log))
    assert "<script" not in html and "<img" not in html and "<a " not in html


def _plain(parser: Any, cell: str) -> str:
    """The text a cell shows (its inline tokens' text, entities decoded)."""
    [paragraph] = [t for t in parser.parse(cell) if t.type == "inline"]
    return "".join(c.content for c in paragraph.children or [] if c.type == "text")
