"""Tracker changes in the roll log, grouped by scene (issue 20), and NPC trackers and macros.

A tracker change is an entry of kind ``"tracker"`` in the room's roll log (no dice, outcome
``tracker``), written in the command's transaction, tagged with its scene and session; ``!log``
shows it, ``!stats`` never counts it, ``coterie export`` lists it among the rolls of its scene.
NPC trackers move with ``!npc hunger|wp|damage|heal … NAME``, privately while NPCs are hidden.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from coterie.ops.export import room_log, to_json, to_markdown
from coterie.storage.migrate import upgrade
from coterie.storage.sql import SQLStore
from coterie.storage.state import RollRecord
from test_characters_store import app_on
from test_characters_store import say as store_say
from test_play import Table
from test_storyteller import claimed, private_text

ROOM = "test:r"


async def entries(t: Table) -> list[RollRecord]:
    return list(reversed(await t.app.state.rolls(ROOM, limit=None)))


async def changes(t: Table) -> list[RollRecord]:
    return [r for r in await entries(t) if r.kind == "tracker"]


# --- the log entries ------------------------------------------------------------------------------


async def test_a_tracker_change_is_a_log_entry_with_its_scene_and_session() -> None:
    t = await claimed("v5")
    await t.ok("st", "!session start night")
    await t.ok("st", "!scene start Docks")
    await t.ok("alice", "!char new Alex")
    assert await t.ok("alice", "!hunger +1") == "Alex: Hunger 1/5 → 2/5"
    [entry] = await entries(t)
    assert entry.kind == "tracker" and not entry.is_roll
    assert entry.faces == [] and entry.outcome == "tracker" and entry.successes == 0
    assert entry.session is not None and entry.user == "alice"
    assert entry.request == "!hunger +1"
    detail = entry.detail
    assert detail["scene"] == "Docks"
    assert (detail["character"], detail["tracker"], detail["old"], detail["new"]) == (
        "Alex",
        "Hunger",
        "1/5",
        "2/5",
    )
    assert detail["roll"] is None and detail["reason"] is None and not detail.get("secret")
    # the change remembered for !undo carries its scene now
    from coterie.storage import characters as store

    [change] = await store.changes(t.app.state, ROOM, "alice")
    assert change["scene"] == "Docks"


async def test_a_refused_change_logs_nothing() -> None:
    t = await claimed("v5")
    await t.ok("alice", "!char new Alex")
    await t.error("alice", "!hunger +9")  # Table.error: no state, no log entry
    await t.error("alice", "!damage 0")
    assert await entries(t) == []


async def test_v5_rouse_and_reroll_log_the_roll_then_what_it_moved() -> None:
    t = await claimed("v5")
    await t.ok("alice", "!char new Lise")
    await t.ok("alice", "!char set Strength 3 Composure 2 Resolve 3")
    t.faces(9)
    await t.ok("alice", "!rouse")  # a success moves nothing
    t.faces(3)
    assert (await t.ok("alice", "!rouse")).endswith("Lise: Hunger 1/5 → 2/5")
    t.faces(1, 1, 1, 6, 6, 6, 6, 6)
    await t.ok("alice", "!roll Strength 3")
    await t.ok("alice", "!reroll")
    log = await entries(t)
    kinds = [r.kind for r in log]
    assert kinds == ["roll", "roll", "tracker", "roll", "roll", "tracker"]
    hunger, willpower = (r for r in log if r.kind == "tracker")
    assert hunger.detail["roll"] == log[1].id and hunger.detail["reason"] == "rouse"
    assert hunger.detail["change"] == "Hunger 1/5 → 2/5"
    assert willpower.detail["roll"] == log[4].id
    assert willpower.detail["change"] == "Willpower [.....] → [/....]"
    assert willpower.detail["reason"] == "Willpower re-roll"


@pytest.mark.parametrize("variant", ["revised", "crossover"])
async def test_wp_on_a_roll_logs_the_spent_point(variant: str) -> None:
    t = await claimed(variant)
    await t.ok("alice", "!char new Al")
    await t.ok("alice", "!char set Willpower 2 Strength 2")
    t.faces(6, 6)
    assert "Al: Willpower points 2/2 → 1/2" in await t.ok("alice", "!roll Strength 6 wp")
    roll, spent = await entries(t)
    assert roll.is_roll and spent.kind == "tracker"
    assert spent.detail["change"] == "Willpower points 2/2 → 1/2"
    assert spent.detail["roll"] == roll.id


@pytest.mark.parametrize(
    ("variant", "command", "change"),
    [
        ("revised", "!blood -2", "Blood Pool"),
        ("laia", "!wp -1", "Willpower"),
        ("crossover", "!damage 2 lethal", "Health"),
        ("v5", "!stains +1", "Stains"),
    ],
)
async def test_every_rule_set_with_trackers_logs_a_change_by_hand(
    variant: str, command: str, change: str
) -> None:
    t = await claimed(variant)
    await t.ok("alice", "!char new Al")
    shown = await t.ok("alice", command)
    [entry] = await changes(t)
    assert entry.detail["tracker"].startswith(change)
    assert entry.detail["change"] in shown


async def test_d6_keeps_no_trackers_and_logs_none() -> None:
    t = await claimed("d6")
    await t.ok("alice", "!char new Al")
    await t.error("alice", "!damage 1")
    assert await entries(t) == []


# --- the readers ----------------------------------------------------------------------------------


async def test_stats_counts_no_tracker_change_as_a_roll() -> None:
    t = await claimed("v5")
    await t.ok("alice", "!char new Alex")
    t.faces(3)
    await t.ok("alice", "!rouse")  # a roll (failure) and a tracker change
    await t.ok("alice", "!hunger +1")
    await t.ok("alice", "!damage 1")
    assert len(await entries(t)) == 4
    stats = await t.ok("bob", "!stats")
    assert stats == (
        "Dice statistics (1 rolls in this room)\n"
        "Alice: 1 roll, 0 successes; 0 vs 0.5 expected over 1 roll (0% of expected), "
        "0 bestial failures, 0 messy criticals, 0 total failures"
    )
    # a roll that spent a point (wp: an automatic success) is one roll; the spend is no roll
    t3 = await claimed("revised")
    await t3.ok("alice", "!char new Alex")
    await t3.ok("alice", "!char set Willpower 2")
    t3.faces(1, 1, 1)
    await t3.ok("alice", "!roll 3 6 wp")
    assert len(await changes(t3)) == 1
    assert await t3.ok("bob", "!stats") == (
        "Dice statistics (1 rolls in this room)\n"
        "Alice: 1 roll, 1 success; 1 vs 2.3 expected over 1 roll (44% of expected), 0 botches"
    )
    # a tracker change alone is no roll to count
    t2 = await claimed("v5")
    await t2.ok("alice", "!char new Alex")
    await t2.ok("alice", "!hunger +1")
    assert await t2.ok("bob", "!stats") == "No rolls are logged in this room yet."
    assert "no rolls by @alice" in await t2.error("bob", "!stats @alice")


async def test_log_shows_tracker_lines_and_one_by_its_id() -> None:
    t = await claimed("v5")
    await t.ok("st", "!scene start Elysium")
    await t.ok("alice", "!char new Alex")
    t.faces(2)
    await t.ok("alice", "!rouse # feeding")
    shown = await t.ok("bob", "!log")
    assert shown.startswith("Last 2 entries")
    assert "Alice !rouse # feeding → failure (2)" in shown
    assert "Alice Alex: Hunger 1/5 → 2/5 (rouse)" in shown
    _, entry = await entries(t)
    one = await t.ok("bob", f"!log {entry.id[:6]}")
    assert one.startswith(f"Tracker change {entry.id}")
    assert "Alex: Hunger 1/5 → 2/5 (rouse)" in one and "Scene: Elysium" in one
    assert f"By roll {entry.detail['roll'][:6]}" in one


async def test_export_lists_changes_among_the_rolls_scene_by_scene_and_json_keeps_all() -> None:
    t = await claimed("v5")
    await t.ok("st", "!session start")
    await t.ok("alice", "!char new Alex")
    await t.ok("alice", "!hunger 2")
    await t.ok("st", "!scene start Docks")
    t.faces(4)
    await t.ok("alice", "!rouse")
    await t.ok("st", "!scene start Haven")
    await t.ok("alice", "!damage 1")
    log = await room_log(t.app.state, ROOM)
    markdown = to_markdown(log)
    docks, haven = markdown.index("### Scene: Docks"), markdown.index("### Scene: Haven")
    first = markdown.index("Alex: Hunger 1/5 → 2/5")
    rouse = markdown.index("| !rouse | 4 |")
    raised = markdown.index("Alex: Hunger 2/5 → 3/5 (rouse)")
    hurt = markdown.index("Alex: Health \\[....\\] → \\[/...\\]")
    assert first < docks < rouse < raised < haven < hurt
    assert "1 roll(s), 3 tracker change(s) in 1 session(s)." in markdown
    again = json.loads(to_json(log))
    assert [r["detail"].get("kind", "roll") for r in again["rolls"]] == [
        "tracker",
        "roll",
        "tracker",
        "tracker",
    ]
    assert [RollRecord.from_json(r) for r in again["rolls"]] == await entries(t)


async def test_undo_logs_the_change_back_as_its_own_entry() -> None:
    t = await claimed("v5")
    await t.ok("alice", "!char new Alex")
    await t.ok("alice", "!hunger +2")
    assert (await t.ok("alice", "!undo")).startswith("Undone: Alex: Hunger 1/5 → 3/5")
    _, back = await changes(t)
    assert back.detail["undo"] is True and back.detail["change"] == "Hunger 3/5 → 1/5"
    assert "Alex: Hunger 3/5 → 1/5 (undone)" in await t.ok("bob", "!log")


# --- NPC trackers ---------------------------------------------------------------------------------


async def test_npc_trackers_move_privately_are_logged_secret_and_undone() -> None:
    t = await claimed("revised")
    await t.ok("st", "!npc new Guard")
    await t.ok("st", "!npc set Guard Willpower 4 Stamina 2")
    room = await t.ok("st", "!npc damage Guard 2 lethal")
    assert room == "An NPC's tracker changed." and "Guard" not in room
    assert private_text(t.last, "st") == "Guard: Health [.......] Healthy → [XX.....] Hurt (-1)"
    await t.ok("st", "!npc wp Guard -1")
    assert private_text(t.last, "st") == "Guard: Willpower points 4/4 → 3/4"
    assert await t.ok("st", "!npc wp Guard") == "An NPC's tracker was sent privately."
    assert private_text(t.last, "st") == "Guard: Willpower points 3/4"
    log = await changes(t)
    # (a rating set with `!npc set` moves no kept tracker state: only the two moves are logged)
    assert [r.detail["tracker"] for r in log] == ["Health", "Willpower points"]
    assert all(r.detail["secret"] and r.detail["npc"] for r in log)
    # the players' log never shows a hidden NPC's tracker; the Storyteller's private part does
    shown = await t.ok("bob", "!log")
    assert "Guard" not in shown and "St changed a tracker in secret" in shown
    assert t.last is not None and not t.last.private
    await t.ok("st", "!log")
    assert "Guard: Willpower points 4/4 → 3/4" in private_text(t.last, "st")
    # !undo takes the last change back, privately, and logs the way back (secret too)
    assert await t.ok("st", "!undo") == "A secret change was undone (sent privately)."
    assert "Willpower points 4/4 → 3/4" in private_text(t.last, "st")
    back = (await changes(t))[-1]
    assert back.detail["undo"] and back.detail["secret"]
    export = to_markdown(await room_log(t.app.state, ROOM))
    assert "Guard: Willpower points 3/4 → 4/4 (undone) — secret" in export


async def test_npc_trackers_show_in_the_room_when_npcs_are_not_hidden() -> None:
    t = await claimed("v5")
    await t.ok("st", "!npc new Guard")
    assert await t.ok("st", "!npc hunger Guard +2 public") == "Guard: Hunger 1/5 → 3/5"
    await t.ok("st", "!npc secret off")
    assert await t.ok("st", "!npc damage Guard 1 superficial") == "Guard: Health [....] → [/...]"
    assert await t.ok("st", "!npc heal Guard 1") == "Guard: Health [/...] → [....]"
    assert t.last is not None and not t.last.private
    assert all(not r.detail.get("secret") for r in await changes(t))
    assert "Guard: Hunger 1/5 → 3/5" in await t.ok("bob", "!log")
    # `secret` keeps one change private even then
    assert await t.ok("st", "!npc hunger Guard -1 secret") == "An NPC's tracker changed."


async def test_players_cannot_move_npc_trackers_or_macros_and_nothing_changes() -> None:
    t = await claimed("v5")
    await t.ok("st", "!npc new Guard")
    for text in (
        "!npc hunger Guard +1",
        "!npc wp Guard -1",
        "!npc damage Guard 2",
        "!npc heal Guard 1",
        "!npc macro Guard add spot = Wits+Awareness 3",
        "!npc macro Guard list",
    ):
        assert "only" in await t.error("alice", text), text
    # the players' commands never reach an NPC: not even its existence shows to a player
    for text in ("!hunger +1 for Guard", "!sheet Guard", "!damage 1 for Guard"):
        assert 'no character "Guard"' in await t.error("alice", text), text
    # nor do they show it to the room for the Storyteller: the `!npc` commands keep it private
    assert "Guard is an NPC: `!npc sheet NAME`" in await t.error("st", "!sheet Guard")
    assert "is an NPC" in await t.error("st", "!hunger +1 for Guard")
    await t.ok("alice", "!char new Alex")
    listed = await t.ok("st", "!char list")
    assert "Alex" in listed and "Guard" not in listed
    assert "no NPC" in await t.error("st", "!npc hunger Nobody +1")
    # a refusal about a hidden NPC tells the room nothing of it (its Hunger is 1 here)
    refused = "⚠ That NPC command was refused: the reason was sent privately."
    for text, why in (
        ("!npc hunger Guard lots", "is not a change"),
        ("!npc damage Guard", "how much?"),
        ("!npc hunger Guard +9", "Guard's Hunger goes from 0 to 5: 1 + 9 would be 10"),
    ):
        assert await t.error("st", text) == refused, text
        assert why in private_text(t.last, "st"), text
    # with NPCs shown openly, the refusal is an ordinary one
    assert "1 + 9 would be 10" in await t.error("st", "!npc hunger Guard +9 public")
    t2 = await claimed("revised")
    await t2.ok("st", "!npc new Guard")
    assert await t2.error("st", "!npc hunger Guard +1") == refused
    assert "no Hunger track" in private_text(t2.last, "st")


async def test_a_secret_npc_roll_moves_its_trackers_in_secret_until_revealed() -> None:
    t = await claimed("revised")
    await t.ok("st", "!npc new Guard")
    await t.ok("st", "!npc set Guard Willpower 3 Strength 2")
    t.faces(7, 7)
    room = await t.ok("st", "!npc roll Guard Strength 6 wp")
    assert room == "Guard made a secret NPC roll."  # nothing of its Willpower
    assert t.last is not None
    roll_id = t.last.meta["roll_id"]
    assert "Guard: Willpower points 3/3 → 2/3" in private_text(t.last, "st")
    roll, spent = (await entries(t))[-2:]
    assert spent.detail["secret"] and spent.detail["roll"] == roll.id
    assert "Guard" not in await t.ok("bob", "!log")
    await t.ok("st", f"!reveal {roll_id}")
    assert "Guard: Willpower points 3/3 → 2/3" in await t.ok("bob", "!log")
    # a quick NPC without a sheet spends nothing and logs no change
    t.faces(8)
    await t.ok("st", "!npc roll Ghoul 1 6 wp")
    assert len(await changes(t)) == 1


@pytest.mark.parametrize(
    ("variant", "pool", "sheet", "faces", "dice", "shown"),
    [
        ("revised", "Wits+Alertness 6", "Wits 3 Alertness 2", (8, 8, 8, 2, 1), "5 dice", ""),
        # v5: the NPC's Hunger (1 at first) is read from its sheet too
        ("v5", "Wits+Awareness 3", "Wits 3 Awareness 2", (8, 8, 8, 2, 1), "5 dice", "Hunger 1"),
        ("laia", "Wits+Awareness 6", "Wits 3 Awareness 2", (8, 8, 8, 2, 1), "5 dice", ""),
        ("crossover", "Wits+Alertness 6", "Wits 3 Alertness 2", (8, 8, 8, 2, 1), "5 dice", ""),
        ("d6", "Mental 4", "Mental 3", (5, 5, 5), "Mental 3: 3 dice", ""),
    ],
)
async def test_npc_rolls_read_trait_names_from_the_sheet_in_every_rule_set(
    variant: str, pool: str, sheet: str, faces: tuple[int, ...], dice: str, shown: str
) -> None:
    t = await claimed(variant)
    await t.ok("st", "!npc new Guard")
    await t.ok("st", f"!npc set Guard {sheet}")
    t.faces(*faces)
    await t.ok("st", f"!npc roll Guard {pool}")
    assert t.last is not None
    seen = private_text(t.last, "st")
    assert dice in seen and " ".join(map(str, faces[:4])) in seen and shown in seen, seen


# --- NPC macros -----------------------------------------------------------------------------------


async def test_npc_macros_are_kept_privately_and_rolled_by_name() -> None:
    t = await claimed("revised")
    await t.ok("st", "!npc new Guard")
    await t.ok("st", "!npc set Guard Wits 3 Alertness 2")
    made = await t.ok("st", "!npc macro Guard add spot = Wits+Alertness 6 # on watch")
    assert made == "An NPC's macros changed."
    assert private_text(t.last, "st") == "Guard: macro spot = Wits+Alertness 6 # on watch"
    await t.ok("st", "!npc macro Guard list")
    assert "spot = Wits+Alertness 6 # on watch" in private_text(t.last, "st")
    t.faces(8, 8, 8, 2, 1, 9)
    assert await t.ok("st", "!npc roll Guard spot +1") == "Guard made a secret NPC roll."
    seen = private_text(t.last, "st")
    assert "on watch" in seen and "6 dice" in seen and "8 8 8 2 1 9" in seen
    t.faces(8, 8, 8, 2, 1)
    shown = await t.ok("st", "!npc roll Guard spot diff 8 public")
    assert "difficulty 8" in shown and "Guard" in shown
    # a macro obeys the rules when it is made; a Trait's name can't be one
    assert "refused" in await t.error("st", "!npc macro Guard add x = Witts 6")
    assert "did you mean" in private_text(t.last, "st").lower()
    assert "reads as a Trait" in await t.error("st", "!npc macro Guard add wits = Wits 6")
    await t.ok("st", "!npc macro Guard del spot")
    await t.ok("st", "!npc macro Guard list")
    assert "Guard has no macros" in private_text(t.last, "st")
    # the player's macros are theirs: an NPC's macro is no command of the room
    assert "unknown command" in await t.error("alice", "!spot")


async def test_npc_sheet_edits_are_undoable_by_the_storyteller_privately() -> None:
    t = await claimed("v5")
    await t.ok("st", "!npc new Guard")
    await t.ok("st", "!npc set Guard Composure 2 Resolve 2")
    await t.ok("st", "!npc damage Guard 1 superficial wp")
    assert private_text(t.last, "st") == "Guard: Willpower [....] → [/...]"
    await t.ok("st", "!undo")
    await t.ok("st", "!undo")
    assert "Composure 1 → 2, Resolve 1 → 2" in private_text(t.last, "st")
    await t.ok("st", "!npc sheet Guard")
    assert "Willpower [..]" in private_text(t.last, "st")  # Composure 1 + Resolve 1, unmarked
    assert "nothing of yours to undo" in await t.error("st", "!undo")
    # the way back is logged, secret: the damage and its undo
    assert [(r.detail["change"], r.detail["undo"]) for r in await changes(t)] == [
        ("Willpower [....] → [/...]", False),
        ("Willpower [/...] → [....]", True),
    ]


# --- on the SQL stores ---------------------------------------------------------------------------


@pytest.fixture(params=["sqlite", "postgresql"])
async def url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    if request.param == "sqlite":
        found = f"sqlite+aiosqlite:///{tmp_path / 'state.db'}"
    else:
        found = request.getfixturevalue("pg_url")
    await upgrade(found)
    yield found


async def test_tracker_entries_on_sqlite_and_postgresql_chain_under_concurrency(url: str) -> None:
    """Ten concurrent changes of one sheet from two stores: ten tracker entries, whose old → new
    values chain 0 → 10 (each written in its change's transaction, none lost), read back equal
    (the entry kind survives the JSON column); a refused change logs nothing."""
    one, two = SQLStore(url), SQLStore(url)
    try:
        first, second = app_on(one), app_on(two)
        await store_say(first, "!char new Lise")
        await store_say(first, "!stains 0")
        await store_say(first, "!humanity 0")  # ten boxes free for Stains (v5: they share it)
        jobs = [store_say(first if i % 2 else second, "!stains +1") for i in range(10)]
        replies = await asyncio.wait_for(asyncio.gather(*jobs), timeout=90)
        assert all(r.startswith("Lise: Stains") for r in replies), replies
        assert "goes from 0 to 10" in await store_say(first, "!stains +1")
        log = [r for r in reversed(await one.rolls("test:a", limit=None)) if r.kind == "tracker"]
        assert [r.detail["tracker"] for r in log] == ["Humanity"] + ["Stains"] * 10
        pairs = [(int(r.detail["old"][:-3]), int(r.detail["new"][:-3])) for r in log[1:]]
        assert sorted(pairs) == [(n, n + 1) for n in range(10)]
        assert all(r.faces == [] and r.outcome == "tracker" and not r.is_roll for r in log)
        assert [r.as_json() for r in await two.rolls("test:a", limit=None)] == [
            r.as_json() for r in await one.rolls("test:a", limit=None)
        ]
    finally:
        await one.close()
        await two.close()


# --- re-rolls of secret and NPC rolls -------------------------------------------------------------


async def test_a_reroll_of_a_secret_roll_is_refused_until_revealed() -> None:
    t = await claimed("v5")
    t.faces(1, 1, 1)
    await t.ok("alice", "!roll 3 0 2 secret")
    assert t.last is not None
    roll_id = t.last.meta["roll_id"]
    logged = await entries(t)
    t.faces(9, 9, 9)
    refused = await t("alice", "!reroll")
    assert t.last is not None and t.last.is_error
    assert f"your last roll ({roll_id}) is secret" in refused and "9 9" not in refused
    assert await entries(t) == logged  # nothing rolled into the log, nothing changed
    await t.ok("alice", f"!reveal {roll_id}")
    t.faces(9, 9, 9)  # (the refused re-roll drew its dice before it was refused)
    assert "Willpower re-roll" in await t.ok("alice", "!reroll")
    # an NPC's secret roll likewise: its dice never reach the room through a re-roll
    await t.ok("st", "!npc new Guard")
    t.faces(1, 1, 9)
    await t.ok("st", "!npc roll Guard 3 0 2")
    t.faces(9, 9)
    assert "is secret" in await t("st", "!reroll") and t.last is not None and t.last.is_error


async def test_a_reroll_of_an_npc_roll_marks_the_npcs_willpower_not_the_storytellers() -> None:
    t = await claimed("v5")
    await t.ok("st", "!char new Mentor")
    await t.ok("st", "!npc new Guard")
    await t.ok("st", "!npc secret off")
    t.faces(1, 1, 9)
    await t.ok("st", "!npc roll Guard 3 0 2")
    t.faces(9, 9)
    shown = await t.ok("st", "!reroll")
    assert "Guard: Willpower [..] → [/.]" in shown and "Mentor" not in shown
    [marked] = await changes(t)
    assert marked.detail["character"] == "Guard" and marked.detail["npc"]
    assert marked.detail["reason"] == "Willpower re-roll"
    # a quick NPC (no sheet) has no Willpower to mark, and the Storyteller's own is untouched
    t.faces(1, 9, 9)
    await t.ok("st", "!npc roll Ghoul 3 0 2")
    t.faces(9)
    assert "Willpower [" not in await t.ok("st", "!reroll")
    await t.ok("st", "!sheet Mentor")
    assert "Willpower [..]" in await t.ok("st", "!sheet Mentor")


async def test_a_secret_npc_roll_its_wounds_forbid_is_refused_privately() -> None:
    t = await claimed("revised")
    await t.ok("st", "!npc new Guard")
    await t.ok("st", "!npc damage Guard 7 lethal")
    room = await t.error("st", "!npc roll Guard Strength 6")
    assert room == "⚠ That NPC command was refused: the reason was sent privately."
    assert "Guard is Incapacitated" in private_text(t.last, "st")
    assert "Guard is Incapacitated" in await t.error("st", "!npc roll Guard Strength 6 public")
    # a quick NPC's error tells nothing of a sheet: an ordinary one
    assert "refused" not in await t.error("st", "!npc roll Ghoul x 6")


async def test_the_storyteller_deletes_an_npc_after_confirming_privately() -> None:
    t = await claimed("revised")
    await t.ok("st", "!npc new Guard")
    asked = await t.ok("st", "!npc delete Guard")
    assert "Guard" not in asked and "!npc delete Guard confirm" in private_text(t.last, "st")
    assert await t.ok("st", "!npc delete guard confirm") == "An NPC was deleted."
    assert "no NPC" in await t.error("st", "!npc sheet Guard")
    assert "only the Storyteller" in await t.error("alice", "!npc delete Guard confirm")


async def test_the_storyteller_rouses_an_npc_whose_hunger_moves() -> None:
    t = await claimed("v5")
    await t.ok("st", "!npc new Guard")
    await t.ok("st", "!npc hunger Guard 2")
    t.faces(3)  # a failed check: the Guard's Hunger rises, in secret while NPCs are hidden
    assert await t.ok("st", "!npc rouse Guard") == "Guard made a secret NPC rouse."
    seen = private_text(t.last, "st")
    assert "Rouse check: 3 — failed\nHunger 2 → 3." in seen
    assert "Guard: Hunger 2/5 → 3/5" in seen
    assert "Guard" not in await t.ok("bob", "!log")
    t.faces(7, 2)  # in the open: two checks, one fails
    shown = await t.ok("st", "!npc rouse Guard 2 public")
    assert shown.startswith("Guard\n2 rouse checks: 7 2 — 1 passed, 1 failed")
    assert "Guard: Hunger 3/5 → 4/5" in shown
    await t.ok("st", "!npc secret off")
    t.faces(9)
    assert "Guard: Hunger" not in await t.ok("st", "!npc rouse Gu")  # passed: nothing moves
    [sheet] = [r for r in await changes(t) if r.detail["new"] == "4/5"]
    assert sheet.detail["character"] == "Guard" and sheet.detail["reason"] == "rouse"
    # the Storyteller's own character is not the one that moves
    await t.ok("st", "!char new Mira")
    t.faces(1)
    out = await t.ok("st", "!npc rouse Guard public")
    assert "Mira" not in out and "Guard: Hunger 4/5 → 5/5" in out


async def test_only_the_storyteller_rouses_an_npc_and_only_where_rouse_is_a_command() -> None:
    t = await claimed("v5")
    await t.ok("st", "!npc new Guard")
    assert "only" in await t.error("alice", "!npc rouse Guard")
    assert "no NPC" in await t.error("st", "!npc rouse Nobody")
    assert "which NPC?" in await t.error("st", "!npc rouse")
    refused = await t.error("st", "!npc rouse Guard 99 public")
    assert "checks must be between 1 and 20" in refused
    assert "Usage: !npc rouse NAME [N] [h H] [# comment]" in refused
    assert "That NPC command was refused" in await t.error("st", "!npc rouse Guard 99")
    assert "Usage: !npc rouse NAME [N]" in private_text(t.last, "st")
    t2 = await claimed("revised")
    await t2.ok("st", "!npc new Guard")
    assert "roll for whom?" in await t2.error("st", "!npc rouse Guard")
    assert [r for r in await entries(t) if r.is_roll] == []
