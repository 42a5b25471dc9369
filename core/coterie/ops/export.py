"""``coterie export``: a room's roll log as a session log (Markdown or JSON).

Sessions come from the key-value store (namespace :data:`SESSIONS`, key = the room key, kept by
``!session start/end``); every logged roll carries the id of the session it was rolled in, or none,
and the scene it was rolled in (``!scene start``), if any: within a session the Markdown recaps the
rolls scene by scene. Tracker changes (``!hunger``, ``!damage``, a failed rouse check …) are
entries of the roll log too (``detail["kind"] == "tracker"``): they appear among the rolls in time
order, under their scene. Secret rolls and changes are marked so (this is the operator's view).
See ``docs/storage.md`` for both formats.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from coterie.framework.sessions import SESSIONS
from coterie.play.changelog import change_line
from coterie.storage.state import RollRecord, StateStore, faces_text

OUTSIDE = "Outside sessions"


def iso(seconds: float | None) -> str:
    """``2026-11-22T13:05:57Z`` (UTC, whole seconds); empty for ``None``."""
    if seconds is None:
        return ""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


async def room_log(store: StateStore, room: str) -> dict[str, Any]:
    """The export of ``room`` as a JSON-compatible object: ``room``, ``sessions`` (each ``id``,
    ``started``, ``ended``, ``started_by``; oldest first, the open one with ``ended: null``) and
    ``rolls`` (every logged roll as :meth:`RollRecord.as_json`, oldest first)."""
    records = list(reversed(await store.rolls(room, limit=None)))
    stored = await store.get(SESSIONS, room)
    sessions: list[dict[str, Any]] = []
    if isinstance(stored, dict):
        for item in stored.get("history") or []:
            if isinstance(item, dict) and "id" in item:
                sessions.append(_session(item))
        current = stored.get("current")
        if isinstance(current, dict) and "id" in current:
            sessions.append(_session({**current, "ended": None}))
    known = {s["id"] for s in sessions}
    for record in records:  # a roll of a session the store no longer describes
        if record.session is not None and record.session not in known:
            known.add(record.session)
            sessions.append(_session({"id": record.session, "started": record.time}))
    sessions.sort(key=lambda s: (s["started"] is None, s["started"] or 0.0))
    return {"room": room, "sessions": sessions, "rolls": [r.as_json() for r in records]}


def _session(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": str(item["id"]),
        "started": item.get("started"),
        "ended": item.get("ended"),
        "started_by": item.get("started_by"),
    }


#: what player text must not be able to do in the Markdown log: raw HTML, ``<…>`` autolinks and
#: entities (``<``, ``>``, ``&`` become character references), and inline Markdown (emphasis,
#: code, links and images such as ``[x](javascript:…)``, table cells, strikethrough: a backslash
#: before each of those characters). Block syntax (``#``, ``-``, ``1.``) only counts at the start
#: of a line, and player text never starts one.
_MARKDOWN_ESCAPES = str.maketrans(
    {
        "&": "&amp;",
        "<": "&lt;",
        ">": "&gt;",
        **{ch: "\\" + ch for ch in "\\`*_[]|~"},
    }
)


def _cell(text: str) -> str:
    """Player text as inert Markdown on one line: it shows as typed, never as HTML, a link, an
    image or formatting, and cannot break out of its table cell."""
    return " ".join(text.split()).translate(_MARKDOWN_ESCAPES)


def result_text(record: RollRecord) -> str:
    """``3 successes (success)``, ``botch``-flagged when the roll botched, and with the rule
    set's other outcome flags its word does not already say (``critical``, ``exceptional`` …);
    for a tracker change, the change (``Alex: Hunger 2 → 3 (failed rouse check)``)."""
    if not record.is_roll:
        return change_line(record)
    count = f"{record.successes} success" + ("" if record.successes == 1 else "es")
    text = f"{count} ({record.outcome})"
    if record.botch and "botch" not in record.outcome:
        text += ", botch"
    for flag in record.detail.get("flags", ()):
        if flag != "botch" and flag not in record.outcome:
            text += f", {flag}"
    return text


def to_markdown(log: dict[str, Any]) -> str:
    """The Markdown session log of :func:`room_log`'s object."""
    records = [RollRecord.from_json(r) for r in log["rolls"]]
    lines = [f"# Roll log of {_cell(log['room'])}", ""]
    groups: list[tuple[str, list[RollRecord]]] = []
    for session in log["sessions"]:
        mine = [r for r in records if r.session == session["id"]]
        title = f"Session {session['id']}"
        details = []
        if session["started"] is not None:
            details.append(f"started {iso(session['started'])}")
        if session["started_by"]:
            details.append(f"by {session['started_by']}")
        if session["ended"] is not None:
            details.append(f"ended {iso(session['ended'])}")
        elif session["started"] is not None:
            details.append("still open")
        if details:
            title += " — " + " ".join(details)
        groups.append((title, mine))
    outside = [r for r in records if r.session is None]
    if outside:
        groups.append((OUTSIDE, outside))
    for title, mine in groups:
        lines += [f"## {_cell(title)}", ""]
        if not mine:
            lines += ["No rolls.", ""]
            continue
        for scene, rolls in _by_scene(mine):
            if scene is not None:
                lines += [f"### Scene: {_cell(scene)}", ""]
            lines += _table(rolls)
    rolled = sum(1 for r in records if r.is_roll)
    changes = len(records) - rolled
    tracked = f", {changes} tracker change(s)" if changes else ""
    lines.append(f"{rolled} roll(s){tracked} in {len(log['sessions'])} session(s).")
    return "\n".join(lines) + "\n"


def _by_scene(records: list[RollRecord]) -> list[tuple[str | None, list[RollRecord]]]:
    """Consecutive runs of rolls in the same scene (``None``: outside any scene), in order."""
    runs: list[tuple[str | None, list[RollRecord]]] = []
    for record in records:
        scene = record.detail.get("scene")
        scene = scene if isinstance(scene, str) else None
        if runs and runs[-1][0] == scene:
            runs[-1][1].append(record)
        else:
            runs.append((scene, [record]))
    return runs


def _table(records: list[RollRecord]) -> list[str]:
    lines = [
        "| time (UTC) | id | who | request | faces | result |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in records:
        who = r.display_name or r.user
        faces = _cell(faces_text(r)) if r.is_roll else "—"
        result = result_text(r) + (" — secret" if r.detail.get("secret") else "")
        lines.append(
            f"| {iso(r.time)} | {_cell(r.id)} | {_cell(who)} | {_cell(r.request)} "
            f"| {faces} | {_cell(result)} |"
        )
    return [*lines, ""]


def to_json(log: dict[str, Any]) -> str:
    return json.dumps(log, ensure_ascii=False, indent=2) + "\n"
