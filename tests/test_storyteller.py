"""The Storyteller's tools through the core API (issue 20): secret rolls and ``!reveal``, a hidden
Difficulty (``!ask`` / ``!answer``), quick NPC rolls, and the roll log's view of secrets. What the
room sees is the reply's body; what a single user sees is a private part of the reply. Delivery of
private parts on each platform is tested against that platform's peer in the adapter tests."""

from __future__ import annotations

import copy

import pytest

from coterie.render.elements import Reply
from coterie.render.encode import to_plain
from coterie.render.serialize import reply_from_json, reply_to_json
from test_play import ALL, Table


def private_text(reply: Reply | None, user: str) -> str:
    assert reply is not None
    parts = [p for p in reply.private if p.user == user]
    assert len(parts) <= 1, [p.user for p in reply.private]
    return to_plain(parts[0].body) if parts else ""


async def claimed(variant: str = "revised") -> Table:
    t = Table(variant)
    await t.ok("st", "!storyteller claim")
    return t


# --- secret rolls -------------------------------------------------------------------------------


async def test_a_secret_roll_shows_the_room_nothing_but_that_it_happened() -> None:
    t = await claimed()
    t.faces(10, 7, 1, 3, 6)
    room = await t.ok("alice", "!roll 5 6 secret # sneaking")
    reply = t.last
    assert reply is not None
    assert room == "Alice made a secret roll."
    roll_id = reply.meta["roll_id"]
    assert "10" not in to_plain(reply.body) and "success" not in room
    mine = private_text(reply, "alice")
    storyteller = private_text(reply, "st")
    for seen in (mine, storyteller):
        assert "10 7 1 3 6" in seen and "2 successes" in seen and "sneaking" in seen
    assert f"!reveal {roll_id}" in mine
    assert storyteller.startswith("Alice's secret roll")
    assert {p.user for p in reply.private} == {"alice", "st"}


async def test_reveal_posts_the_full_result_once_and_only_for_the_roller_or_storyteller() -> None:
    t = await claimed()
    t.faces(10, 7, 1, 3, 6)
    await t.ok("alice", "!roll 5 6 secret")
    assert t.last is not None
    roll_id = t.last.meta["roll_id"]
    assert "only Alice or the Storyteller can reveal" in await t.error("bob", f"!reveal {roll_id}")
    assert "no secret roll `zzzzzz`" in await t.error("alice", "!reveal zzzzzz")
    shown = await t.ok("alice", f"!reveal {roll_id}")
    assert "Alice reveals Alice's secret roll" in shown and "10 7 1 3 6" in shown
    assert "2 successes" in shown and t.last is not None and not t.last.private
    assert "revealed already" in await t.error("st", f"!reveal {roll_id}")


async def test_the_storyteller_may_reveal_and_secret_works_with_actions() -> None:
    t = await claimed()
    await t.ok("alice", "!extended start vigil 5")
    t.faces(9, 9, 2)
    room = await t.ok("alice", "!roll 3 for vigil secret")
    assert room == "Alice made a secret roll."
    assert t.last is not None
    assert "vigil: 2/5" in private_text(t.last, "alice")
    shown = await t.ok("st", f"!reveal {t.last.meta['roll_id']}")
    assert "St reveals Alice's secret roll" in shown and "vigil: 2/5" in shown


@pytest.mark.parametrize("variant", ALL)
async def test_every_rule_set_rolls_in_secret(variant: str) -> None:
    t = await claimed(variant)
    t.faces(*([6] * 12))
    pool = {"d6": "physical 3", "v5": "3 1"}.get(variant, "3")
    assert await t.ok("alice", f"!roll {pool} secret") == "Alice made a secret roll."
    assert t.last is not None and "6 6" in private_text(t.last, "alice")


async def test_an_open_room_shows_a_secret_to_the_roller_only() -> None:
    t = Table()
    t.faces(8, 8)
    await t.ok("alice", "!roll 2 6 secret")
    assert t.last is not None and [p.user for p in t.last.private] == ["alice"]


async def test_a_bad_secret_roll_is_an_ordinary_error_and_changes_nothing() -> None:
    t = await claimed()
    assert "Usage" in await t.error("alice", "!roll secret")
    assert "difficulty" in (await t.error("alice", "!roll 5 99 secret")).lower()


# --- the log --------------------------------------------------------------------------------------


async def test_log_and_stats_hide_a_secret_until_it_is_revealed() -> None:
    t = await claimed()
    t.faces(10, 10, 10)
    await t.ok("alice", "!roll 3 6 secret")
    assert t.last is not None
    roll_id = t.last.meta["roll_id"]
    t.faces(2, 2)
    await t.ok("bob", "!roll 2 6")
    listing = await t.ok("bob", "!log")
    assert f"{roll_id}" in listing and "Alice rolled in secret" in listing
    assert "10 10 10" not in listing and t.last is not None and not t.last.private
    await t.ok("st", "!log")
    assert t.last is not None and "10 10 10" in private_text(t.last, "st")
    assert "10 10 10" not in to_plain(t.last.body)
    one = await t.ok("bob", f"!log {roll_id}")
    assert "rolled in secret" in one and "10 10 10" not in one
    stats = await t.ok("bob", "!stats")
    assert "Alice" not in stats and "Bob" in stats
    await t.ok("alice", f"!reveal {roll_id}")
    assert "10 10 10" in await t.ok("bob", f"!log {roll_id}")
    assert "Alice" in await t.ok("bob", "!stats")


# --- a hidden Difficulty --------------------------------------------------------------------------


async def test_ask_judges_the_answer_against_the_hidden_difficulty() -> None:
    t = await claimed()
    asked = await t.ok("st", "!ask @alice 4 8 secret")
    assert "St asks alice to roll 4 against a hidden Difficulty" in asked
    assert "8" not in asked.replace("4 against", "")
    assert "nobody asked you" in await t.error("bob", "!answer")
    t.faces(9, 8, 7, 3)  # two successes at difficulty 8 (none would be at 10)
    room = await t.ok("alice", "!answer")
    assert room.startswith("Alice rolls 4 against a hidden Difficulty and succeeds.")
    assert "9 8 7 3" not in room and "margin" not in room
    assert t.last is not None
    full = private_text(t.last, "st")
    assert "9 8 7 3" in full and "hidden Difficulty 8" in full
    assert private_text(t.last, "alice") == ""
    assert "nobody asked you" in await t.error("alice", "!answer")  # answered once


async def test_ask_with_margin_and_a_failure_in_v5() -> None:
    t = await claimed("v5")
    await t.ok("st", "!ask @alice 3 2 secret margin")
    t.faces(7, 2, 3)  # one success against Difficulty 2: a failure
    room = await t.ok("alice", "!answer")
    assert "fails (margin -1)." in room


async def test_a_d6_ask_above_6_is_rolled_at_6_as_every_d6_roll_is() -> None:
    # 001 Difficulties: a difficulty worked out above 6 is lowered to 6, never refused
    t = await claimed("d6")
    await t.ok("st", "!ask @alice 3 8 secret")
    t.faces(6, 6, 2)  # two successes at 6 (none could be at 8)
    assert "succeeds" in await t.ok("alice", "!answer")
    assert t.last is not None and "difficulty 6" in private_text(t.last, "st").lower()
    assert "from 2 to 6 (more counts as 6), not 1" in await t.error("st", "!ask @alice 3 1 secret")


async def test_ask_errors_change_nothing() -> None:
    t = await claimed()
    assert "only the room's Storyteller" in await t.error("alice", "!ask @bob 4 6 secret")
    assert "say `secret`" in await t.error("st", "!ask @bob 4 6")
    assert "Start with their @name" in await t.error("st", "!ask bob 4 6 secret")
    assert "goes from 2 to 10" in await t.error("st", "!ask @bob 4 12 secret")
    await t.ok("st", "!ask @alice 4 6 secret")
    assert "only the pool" in await t.error("alice", "!answer 4 3")
    assert "cancelled" in await t.ok("st", "!ask cancel @alice")
    assert "nobody asked you" in await t.error("alice", "!answer")


# --- NPCs -----------------------------------------------------------------------------------------


async def test_each_npc_has_its_own_free_first_botch() -> None:
    # 000 Botches, the optional rule: everyone, player and Storyteller character alike
    t = await claimed()
    await t.ok("st", "!set first_botch_free on")
    for who in ("Guard", "Thug", "guard"):
        t.faces(1, 2, 2)
        await t.ok("st", f"!npc roll {who} 3 6 public")
    log = await t.store.rolls("test:r", limit=3)
    assert [r.outcome for r in reversed(log)] == ["failure", "failure", "botch"]
    t.faces(1, 2, 2)  # the Storyteller's own first botch is still theirs
    assert "the first of the session is free" in await t.ok("st", "!roll 3 6")


async def test_quick_npc_rolls_are_secret_by_default_and_can_be_public() -> None:
    t = await claimed()
    t.faces(9, 9, 1)
    room = await t.ok("st", "!npc roll Guard 3 6")
    assert room == "Guard made a secret NPC roll."
    assert t.last is not None and "9 9 1" in private_text(t.last, "st")
    t.faces(9, 2)
    assert "9 2" in await t.ok("st", "!npc roll Guard 2 6 public")
    await t.ok("st", "!npc secret off")
    t.faces(3)
    assert "Guard" in await t.ok("st", "!npc roll Guard 1 6") and t.last and not t.last.private
    assert "only the Storyteller" in await t.error("alice", "!npc roll Guard 3 6")


# --- the reply keeps as JSON ----------------------------------------------------------------------


async def test_a_reply_with_private_parts_survives_json() -> None:
    t = await claimed("v5")
    t.faces(10, 10, 6, 1)
    await t.ok("alice", "!roll 4 1 secret")
    assert t.last is not None
    again = reply_from_json(reply_to_json(t.last))
    assert again == t.last and again is not t.last
    broken = reply_to_json(copy.deepcopy(t.last))
    broken["body"][0] = {"t": "script"}
    with pytest.raises(ValueError, match="unknown node type"):
        reply_from_json(broken)


# --- scenes ---------------------------------------------------------------------------------------


async def test_scenes_group_the_log_and_the_export() -> None:
    from coterie.ops.export import room_log, to_json, to_markdown

    t = await claimed()
    assert "No scene is being played" in await t.ok("bob", "!scene")
    assert "only the Storyteller" in await t.error("bob", "!scene start Elysium")
    await t.ok("st", "!session start night one")
    t.faces(9)
    await t.ok("alice", "!roll 1 6")  # before any scene
    assert "Scene Elysium begins" in await t.ok("st", "!scene start Elysium")
    assert "Scene: Elysium" in await t.ok("bob", "!scene")
    t.faces(8, 8)
    await t.ok("alice", "!roll 2 6")
    t.faces(3)
    await t.ok("bob", "!roll 1 6 secret")
    shown = await t.ok("st", "!scene start The Docks")
    assert "Scene Elysium ends. Scene The Docks begins" in shown
    t.faces(10)
    await t.ok("bob", "!roll 1 6")
    assert "Scene The Docks ends after" in await t.ok("st", "!scene end")
    assert "no scene is being played" in await t.error("st", "!scene end")
    await t.ok("st", "!session end")  # the session record keeps its scenes
    log = await room_log(t.app.state, "test:r")
    scenes = [r["detail"].get("scene") for r in log["rolls"]]
    assert scenes == [None, "Elysium", "Elysium", "The Docks"]
    markdown = to_markdown(log)
    elysium, docks = markdown.index("### Scene: Elysium"), markdown.index("### Scene: The Docks")
    assert markdown.index("| 9 |") < elysium < markdown.index("| 8 8 |") < docks
    assert (
        markdown.index("| 3 | 0 successes (failure) — secret |") < docks < markdown.index("| 10 |")
    )
    assert '"scene": "The Docks"' in to_json(log)


async def test_sessions_and_scenes_share_the_record_without_losing_each_other() -> None:
    t = await claimed()
    await t.ok("st", "!scene start Prelude")
    await t.ok("st", "!session start")
    await t.ok("st", "!session end")
    assert "Scene: Prelude" in await t.ok("bob", "!scene")
    await t.ok("st", "!session start")
    assert "Session" in await t.ok("bob", "!session") and "Prelude" in await t.ok("bob", "!scene")


# --- initiative -----------------------------------------------------------------------------------


async def test_d10_initiative_orders_by_dex_wits_and_a_die_with_celerity_after_everyone() -> None:
    t = await claimed()
    t.faces(8)
    shown = await t.ok("alice", "!init add Alice 3+3 celerity 2")
    assert "Alice joins the fight" in shown and "Dex+Wits 6 + 8 = 14" in shown
    t.faces(9)
    await t.ok("st", "!init add Guard 5")  # 5 + 9 = 14: a tie on the total; 6 beats 5
    t.faces(2)
    listing = await t.ok("bob", "!init add Bob 4")
    order = [line.split(". ")[1].split(" (")[0] for line in listing.splitlines() if ". " in line]
    assert order == ["Alice", "Guard", "Bob"]
    assert "then extra actions:" in listing and listing.count("+ Alice") == 2
    assert "▶ 1. Alice" in listing
    moves = [await t.ok("st", "!init next") for _ in range(5)]
    assert [m.split(" acts")[0] for m in moves] == ["Guard", "Bob", "Alice", "Alice", "Alice"]
    assert "(an extra action)" in moves[2] and "(an extra action)" in moves[3]
    assert moves[4].startswith("Alice acts.") and "Round 2" in moves[4]
    assert "only whoever added Guard" in await t.error("bob", "!init remove Guard")
    assert "Guard leaves the fight" in await t.ok("st", "!init remove guard")
    assert "Bob" in await t.ok("alice", "!init")
    assert "over after 2 round(s)" in await t.ok("st", "!init end")
    assert "No fight is being tracked" in await t.ok("bob", "!init")


async def test_ties_are_rolled_off_until_they_break() -> None:
    t = await claimed()
    t.faces(5)
    await t.ok("alice", "!init add Alice 4")
    t.faces(5, 7, 7, 2, 6)  # Bob's die ties Alice exactly; the roll-offs tie once, then 2-6
    listing = await t.ok("bob", "!init add Bob 4")
    first = listing.split("1. ")[1]
    assert first.startswith("Bob (Dex+Wits 4 + 5 = 9, tie roll 7 6)")
    assert "Alice (Dex+Wits 4 + 5 = 9, tie roll 7 2)" in listing


def _order(listing: str) -> list[str]:
    return [line.split(". ")[1].split(" (")[0] for line in listing.splitlines() if ". " in line]


async def test_one_who_joins_a_tie_already_rolled_off_rolls_off_too() -> None:
    # 001 Initiative: sides equal on every comparison roll one die each, again while tied. The
    # newcomer's die is compared with the others' first tie dice; their settled order stands
    t = await claimed("d6")
    await t.ok("st", "!init add A P4 M3 hunter")
    t.faces(2, 5)
    assert _order(await t.ok("st", "!init add B P4 M3 hunter")) == ["B", "A"]
    t.faces(3)
    listing = await t.ok("st", "!init add C P4 M3 hunter")
    assert _order(listing) == ["B", "C", "A"]
    assert "C (P4 M3 Hunter's Instinct, tie roll 3)" in listing
    t.faces(5, 1, 6)  # D ties B's 5: the two roll again, D's 6 beats B's 1
    listing = await t.ok("st", "!init add D P4 M3 hunter")
    assert _order(listing) == ["D", "B", "C", "A"]
    assert "D (P4 M3 Hunter's Instinct, tie roll 5 6)" in listing
    assert "B (P4 M3 Hunter's Instinct, tie roll 5 1)" in listing
    t.faces(1)  # below everyone's first tie die: last, nobody else rolls
    assert _order(await t.ok("st", "!init add E P4 M3 hunter")) == ["D", "B", "C", "A", "E"]


async def test_d6_initiative_follows_the_document_example() -> None:
    t = await claimed("d6")
    # a bare !initiative (or !init) is the tracker's; with sides it is d6's one-message ordering
    assert "No fight is being tracked" in await t.ok("st", "!initiative")
    assert "Jack" in await t.ok("st", "!initiative Jack: P4 M3; Sabbat: P4 M1")
    await t.ok("st", "!init add Jack P4 M3 hunter")
    listing = await t.ok("st", "!init add Sabbat P4 M1 hunter")
    assert listing.index("1. Jack") < listing.index("2. Sabbat")
    t.faces(3, 5)  # the document: equal Traits roll a die, the highest first
    listing = await t.ok("st", "!init add Ghoul P4 M1 hunter")
    assert listing.index("2. Ghoul") < listing.index("3. Sabbat")
    fast = await t.ok("st", "!init add Runner P2 M2 hunter celerity")
    assert fast.index("1. Runner") < fast.index("2. Jack")  # after Hunter, Celerity first
    assert "then extra actions:" in fast and "+ Runner" in fast


async def test_v5_initiative_is_ranged_then_close_then_the_rest() -> None:
    t = await claimed("v5")
    await t.ok("st", "!init add Talker other")
    await t.ok("st", "!init add Brawler close")
    listing = await t.ok("st", "!init add Shooter ranged")
    assert listing.index("Shooter") < listing.index("Brawler") < listing.index("Talker")
    assert "say what they do this turn" in await t.error("st", "!init add Odd 5")


async def test_init_errors_change_nothing() -> None:
    t = await claimed()
    assert "no fight is being tracked" in await t.error("bob", "!init next")
    assert "Give a name first" in await t.error("bob", "!init add")
    assert "Dexterity + Wits is 0 to 20" in await t.error("bob", "!init add Bob 25")
    t.faces(4)
    await t.ok("bob", "!init add Bob 3")
    assert "in the fight already" in await t.error("bob", "!init add bob 3")
    assert "nobody called `zed`" in await t.error("bob", "!init remove zed")


# --- NPCs with sheets -----------------------------------------------------------------------------


async def test_npc_sheets_are_the_storytellers_and_roll_by_trait_name_in_secret() -> None:
    t = await claimed()
    made = await t.ok("st", "!npc new Guard")
    assert made == "An NPC was made (its sheet is the Storyteller's)."
    assert t.last is not None and "Guard" in private_text(t.last, "st")
    await t.ok("st", "!npc set Guard Wits 3 Alertness 2")
    t.faces(8, 8, 8, 2, 1)
    room = await t.ok("st", "!npc roll Guard Wits+Alertness 6")
    assert room == "Guard made a secret NPC roll."
    assert t.last is not None
    seen = private_text(t.last, "st")
    assert "5 dice" in seen and "8 8 8 2 1" in seen  # Wits 3 + Alertness 2 from the sheet
    shown = await t.ok("st", "!npc sheet Guard")
    assert "Wits" not in shown and t.last is not None and "Wits" in private_text(t.last, "st")
    assert "Guard" in private_text(t.last, "st")
    await t.ok("st", "!npc list")
    assert t.last is not None and "Guard" in private_text(t.last, "st")


async def test_players_can_neither_see_nor_change_nor_roll_npcs() -> None:
    t = await claimed()
    await t.ok("st", "!npc new Guard")
    for text in ("!npc sheet Guard", "!npc set Guard Wits 5", "!npc roll Guard 3 6", "!npc list"):
        assert "only the Storyteller" in await t.error("alice", text), text
    assert "no NPC" in await t.error("st", "!npc sheet Nobody")
    assert "there is an NPC called Guard" in await t.error("st", "!npc new guard")
    assert "did you mean" in (await t.error("st", "!npc set Guard Witts 3")).lower()


async def test_ask_for_a_pool_of_trait_names_reads_the_asked_players_sheet() -> None:
    t = await claimed()
    await t.ok("alice", "!char new Alex")
    await t.ok("alice", "!char set Wits 3 Alertness 2")
    await t.ok("st", "!ask @alice Wits+Alertness 6 secret")  # the Storyteller has no sheet
    t.faces(9, 8, 7, 2, 1)
    room = await t.ok("alice", "!answer")
    assert room.startswith("Alice rolls Wits+Alertness against a hidden Difficulty and succeeds")
    assert t.last is not None and "9 8 7 2 1" in private_text(t.last, "st")


async def test_d10_initiative_reads_dexterity_and_wits_from_the_sheet() -> None:
    t = await claimed()
    await t.ok("alice", "!char new Alex")
    await t.ok("alice", "!char set Dexterity 3 Wits 4")
    t.faces(5)
    shown = await t.ok("alice", "!init add Alex celerity 1")
    assert "Dex+Wits 7 + 5 = 12" in shown and "+ Alex" in shown
    await t.ok("st", "!npc new Guard")
    await t.ok("st", "!npc set Guard Dexterity 2 Wits 2")
    t.faces(3)
    assert "Dex+Wits 4 + 3 = 7" in await t.ok("st", "!init add Guard")
    t.faces(6)
    assert "Dex+Wits 5 + 6 = 11" in await t.ok("st", "!init add Ghoul 5")  # written wins
    # a player cannot read an NPC's sheet this way, and a name without a sheet needs a rating
    await t.ok("st", "!npc new Watcher")
    await t.ok("st", "!npc set Watcher Dexterity 4 Wits 4")
    before = await t.ok("bob", "!init")
    assert "DEX+WITS" in await t.error("bob", "!init add Watcher")
    assert "DEX+WITS" in await t.error("bob", "!init add Nobody")
    assert await t.ok("bob", "!init") == before
