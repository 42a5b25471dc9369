"""Play across messages through the core API: roles, settings, sessions, extended actions,
teamwork, contests between chat users, trying again, the roll log and statistics."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from conftest import without_roll_id
from coterie.dice.sources import FixedDice
from coterie.framework.app import Coterie
from coterie.framework.commands import shown_id
from coterie.framework.config import Config
from coterie.framework.message import Message
from coterie.play import clauses, contests, extended
from coterie.render.elements import Mention, Reply, walk
from coterie.render.encode import to_plain
from coterie.storage.state import MemoryStore

ALL = ["revised", "v5", "d6", "laia", "crossover"]


class Table:
    """A chat room with a script of dice: ``await t("alice", "!roll 3")`` is the reply text."""

    def __init__(self, variant: str = "revised", dice: Any = None, **config: Any) -> None:
        config.setdefault("plugins", {"enable": ALL})
        config.setdefault("limits", {}).setdefault("rate", {"enabled": False})
        config.setdefault("defaults", {}).setdefault("variant", variant)
        self.dice = FixedDice([]) if dice is None else dice
        self.store = MemoryStore()
        self.app = Coterie(Config.model_validate(config), dice=self.dice, store=self.store)
        self.last: Reply | None = None

    def faces(self, *faces: int) -> None:
        self.dice._faces.extend(faces)

    async def __call__(self, user: str, text: str, room: str = "r", **extra: Any) -> str:
        message = Message(
            platform="test", room=room, user=user, user_name=user.title(), text=text, **extra
        )
        reply = await self.app.handle(message)
        assert reply is not None, text
        self.last = reply
        return to_plain(without_roll_id(copy.deepcopy(reply)).body)

    async def ok(self, user: str, text: str, room: str = "r", **extra: Any) -> str:
        out = await self(user, text, room, **extra)
        assert self.last is not None and not self.last.is_error, out
        return out

    async def error(self, user: str, text: str, room: str = "r", **extra: Any) -> str:
        """An error reply, and nothing changed: no state, no log entry, no dice."""
        data, log = copy.deepcopy(self.store._data), list(self.store._log)
        position = getattr(self.dice, "_position", None)
        out = await self(user, text, room, **extra)
        assert self.last is not None and self.last.is_error, out
        assert self.store._data == data, f"{text!r} changed state"
        assert self.store._log == log and getattr(self.dice, "_position", None) == position
        assert "something went wrong" not in out
        return out


# --- roles and settings ---------------------------------------------------------------------------


async def test_an_open_room_until_someone_claims_it() -> None:
    t = Table()
    assert "open" in await t.ok("bob", "!storyteller")
    await t.ok("bob", "!set difficulty 7")  # nobody runs the room yet
    assert "Alice" not in await t.ok("alice", "!storyteller claim") or True
    assert "this room already has a Storyteller (Alice)" in await t.error(
        "bob", "!storyteller claim"
    )
    message = await t.error("bob", "!set difficulty 5")
    assert "only the Storyteller (Alice) can change the settings" in message
    assert "only the Storyteller" in await t.error("bob", "!variant v5")
    assert "only the Storyteller" in await t.error("bob", "!session start")
    await t.ok("alice", "!storyteller add @bob")
    await t.ok("bob", "!set difficulty 5")
    await t.ok("alice", "!storyteller remove @bob")
    await t.error("bob", "!set difficulty 4")
    await t.ok("alice", "!storyteller release")
    await t.ok("bob", "!set difficulty 4")  # open again


async def test_configured_storytellers_and_room_admins() -> None:
    t = Table(rooms={"test:r": {"storytellers": ["carol"]}})
    assert "Storyteller of this room: carol" in await t.ok("bob", "!storyteller")
    await t.error("alice", "!storyteller claim")
    await t.error("bob", "!set prefix ?")
    await t.ok("carol", "!set prefix ?")
    await t.ok("dave", "?set prefix !", admin=True)  # a room admin the adapter vouches for
    # a handle (a Telegram @username, say) or a display name are mentions of the same person
    t2 = Table(rooms={"test:r": {"storytellers": ["@Zed"]}})
    await t2.ok("u42", "!set difficulty 8", handles=("zed",))


async def test_set_each_kind_of_setting_and_reset_it() -> None:
    t = Table(defaults={"variant": "revised", "house_rules": {"first_botch_free": True}})
    listing = await t.ok("alice", "!settings")
    for rule in (
        "first_botch_free",
        "trying_again",
        "auto_success",
        "botch_wipes_extended",
        "willpower_cancellable",
    ):
        assert rule in listing
    assert "first_botch_free on" in listing
    await t.ok("alice", "!set first_botch_free off")
    assert "first_botch_free off" in await t.ok("alice", "!settings")
    await t.ok("alice", "!set first_botch_free default")
    assert "first_botch_free on" in await t.ok("alice", "!settings")
    await t.ok("alice", "!set difficulty 8")
    t.faces(8, 7, 9)
    assert "difficulty 8" in await t.ok("alice", "!roll 3")
    await t.ok("alice", "!set prefix ?")
    t.faces(8, 7, 9)
    assert "difficulty 8" in await t.ok("alice", "?roll 3")
    await t.ok("alice", "?set variant v5")
    assert "variant v5" in await t.ok("alice", "?settings")
    assert "difficulty 8" not in await t.ok("alice", "?settings")  # it belonged to revised


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("!set", "give a setting and its value"),
        ("!set difficulty 11", "difficulties go from 2 to 10"),
        ("!set difficulty x", "difficulties go from 2 to 10"),
        ("!set variant chess", "there is no rule set `chess`"),
        ("!set prefix abc", "a prefix is one to three symbols"),
        ("!set trying_again maybe", "`trying_again` is on or off"),
        ("!set tryng_again off", "Did you mean `trying_again`?"),
        ("!settings now", "`!settings` takes nothing"),
        ("!storyteller dance", "unknown `dance`"),
        ("!storyteller add bob", "whom?"),
        ("!session pause", "unknown `pause`"),
        ("!session end", "no session is open"),
    ],
)
async def test_bad_settings_change_nothing(text: str, message: str) -> None:
    t = Table()
    assert message in await t.error("alice", text)


# --- sessions and the free first botch ------------------------------------------------------------


async def test_the_free_first_botch_hangs_on_the_session() -> None:
    t = Table(defaults={"variant": "revised", "house_rules": {"first_botch_free": True}})
    await t.ok("st", "!session start The first night")
    t.faces(1, 2, 1, 2)
    assert "the first of the session is free" in await t.ok("lynn", "!roll 2")
    assert "Botch" in await t.ok("lynn", "!roll 2")  # the second is a botch
    status = await t.ok("st", "!session")
    assert "The first night" in status and "started by" in status
    await t.ok("st", "!session end")
    await t.ok("st", "!session start")
    t.faces(1, 2)
    assert "the first of the session is free" in await t.ok("lynn", "!roll 2")
    sessions = await t.store.get("coterie.sessions", "test:r")
    assert len(sessions["history"]) == 1 and sessions["current"]["id"]
    log = await t.store.rolls("test:r", limit=None)
    assert [r.session for r in log][:1] == [sessions["current"]["id"]]
    assert log[-1].session == sessions["history"][0]["id"]
    assert "still open" in await t.error("st", "!session start")


# --- extended actions -----------------------------------------------------------------------------


async def test_the_documents_extended_example_across_messages() -> None:
    """Veronica's 18 successes on Wits + Finance at difficulty 7 (000_*.txt): 3, then 2, then a
    botch (3 4 1 6 4 1 6) that throws the progress away."""
    t = Table()
    await t.ok("lynn", "!extended start finance 18 7")
    t.faces(7, 8, 9, 2, 3, 4, 5)
    assert "finance: 3/18" in await t.ok("lynn", "!roll 3+4 for finance")
    t.faces(7, 8, 2, 2, 3, 4, 5)
    assert "finance: 5/18" in await t.ok("lynn", "!roll 3+4 for")  # her last open action
    t.faces(3, 4, 1, 6, 4, 1, 6)
    out = await t.ok("lynn", "!roll 3+4 for finance")
    assert "finance: 0/18" in out and "threw the progress away" in out
    assert "finance: 0/18" in await t.ok("lynn", "!extended status")


async def test_a_room_toggle_keeps_progress_on_a_botch_and_the_action_ends_at_the_target() -> None:
    t = Table(defaults={"variant": "revised", "house_rules": {"botch_wipes_extended": False}})
    await t.ok("lynn", "!extended start lock 3")
    t.faces(9, 9, 2)
    assert "lock: 2/3" in await t.ok("lynn", "!roll 3 for lock")
    t.faces(1, 2, 3)
    assert "lock: 2/3" in await t.ok("lynn", "!roll 3 for lock")
    t.faces(9, 2, 3)
    assert "done in 3 rolls" in await t.ok("lynn", "!roll 3 for lock")
    assert "there is no open action `lock`" in await t.error("lynn", "!roll 3 for lock")


async def test_crossover_botches_always_wipe() -> None:
    t = Table("crossover")
    await t.ok("kim", "!extended start door 15")
    t.faces(9, 9, 9)
    assert "door: 3/15" in await t.ok("kim", "!roll 3 for door")
    t.faces(1, 2, 3)
    assert "door: 0/15" in await t.ok("kim", "!roll 3 for door")


async def test_extended_actions_belong_to_their_player_and_are_limited_per_room() -> None:
    t = Table(limits={"max_extended_per_room": 2} if _has_limit() else {"rate": {"enabled": False}})
    await t.ok("lynn", "!extended start one 5")
    await t.ok("mia", "!extended start two 5")
    limit = 2 if _has_limit() else extended.DEFAULT_MAX_EXTENDED
    for number in range(3, limit + 1):
        await t.ok("mia", f"!extended start a{number} 5")
    assert "the most allowed" in await t.error("mia", "!extended start extra 5")
    assert "belongs to Lynn" in await t.error("mia", "!roll 3 for one")
    assert "belongs to Lynn" in await t.error("mia", "!extended cancel one")
    assert "already open" in await t.error("lynn", "!extended start one 5")
    await t.ok("st", "!storyteller claim")
    t.faces(9, 9, 9)
    await t.ok("st", "!roll 3 for one")  # the Storyteller may roll for anyone's action
    assert "cancelled at 3/5" in await t.ok("lynn", "!extended cancel one")
    status = await t.ok("lynn", "!extended")
    assert "two: 0/5" in status and "one" not in status.replace("done", "")


def _has_limit() -> bool:
    from coterie.framework.config import Limits

    return "max_extended_per_room" in Limits.model_fields


@pytest.mark.parametrize(
    ("variant", "text", "message"),
    [
        ("revised", "!extended start", "give a name and the successes needed"),
        ("revised", "!extended start 9lives 5", "can't name an action"),
        ("revised", "!extended start x 0", "TARGET must be between 1 and 1000"),
        ("revised", "!extended start x 5 11", "DIFFICULTY must be between 2 and 10"),
        ("v5", "!extended start x 5", "the v5 rules have no extended actions"),
        ("d6", "!extended start x 5", "the d6 rules have no extended actions"),
        ("revised", "!roll 3 for nothing", "there is no open action `nothing`"),
        ("revised", "!roll 3 for", "you have no open action"),
        ("revised", "!extended cancel", "which one?"),
    ],
)
async def test_extended_errors(variant: str, text: str, message: str) -> None:
    t = Table(variant)
    assert message in await t.error("lynn", text)


async def test_a_roll_toward_an_action_cannot_also_say_ext_or_vs() -> None:
    t = Table()
    await t.ok("lynn", "!extended start x 5")
    assert "leave out `ext`" in await t.error("lynn", "!roll 3 ext 4 for x")
    assert "use `!contest`" in await t.error("lynn", "!roll 3 vs 3 for x")


# --- teamwork -------------------------------------------------------------------------------------


async def test_teamwork_adds_each_members_successes() -> None:
    t = Table()
    await t.ok("mia", "!team start research 6")
    t.faces(9, 9, 2)
    out = await t.ok("lynn", "!roll 3 for research")
    assert "2/6" in out and "(Lynn 2) — 4 short of the target" in out
    t.faces(1, 2, 3)
    out = await t.ok("kim", "!roll 3 for research")
    assert "Kim botched" in out  # flagged by name, as the rule set says
    t.faces(9, 9, 9, 9)
    assert "the target is reached" in await t.ok("mia", "!roll 4 for research")
    assert "there is no open teamwork" in await t.error("mia", "!team end research")
    await t.ok("mia", "!team start watch")
    t.faces(9, 9)
    await t.ok("lynn", "!roll 2 for watch")
    assert "only the leader" in await t.error("lynn", "!team end watch")
    out = await t.ok("mia", "!team end watch")
    assert "ends after 1 roll by 1 member: Teamwork: 2 successes (Lynn 2) — Moderate" in out


async def test_a_members_free_first_botch_spoils_no_teamwork() -> None:
    # 000 Botches, the optional rule: the first botch of the session (each player's) does not count
    t = Table(defaults={"variant": "revised", "house_rules": {"first_botch_free": True}})
    await t.ok("mia", "!team start research 6")
    t.faces(1, 2, 3)
    out = await t.ok("kim", "!roll 3 for research")
    assert "the first of the session is free" in out and "botched" not in out
    t.faces(1, 2, 3)
    assert "Kim botched" in await t.ok("kim", "!roll 3 for research")  # the second one counts
    t.faces(1, 2, 2, 2, 2, 7, 7, 7)  # one message: member 1's first botch is free
    out = await t.ok("lynn", "!team 5 6; 3 6")
    assert "Teamwork: 3 successes" in out and "botched" not in out
    t.faces(1, 2, 2, 2, 2, 7, 7, 7)
    assert "but member 1 botched" in await t.ok("lynn", "!team 5 6; 3 6")


async def test_v5_teamwork_adds_a_die_per_helper_to_the_leaders_roll() -> None:
    t = Table("v5")
    await t.ok("ana", "!team start heist")
    await t.ok("bo", "!team join heist")
    await t.ok("cy", "!team join heist")
    assert "the leader rolls" in await t.error("ana", "!team join heist")
    assert "only the leader" in await t.error("bo", "!roll 3 for heist")
    t.faces(6, 6, 6, 6, 6)
    out = await t.ok("ana", "!roll 3 diff 2 for heist")
    assert "5 dice (3, +2 for 2 helpers)" in out and "2 helpers added a die each" in out
    assert "leave out TARGET" in await t.error("ana", "!team start heist 5")


# --- contests between chat users ------------------------------------------------------------------


async def test_an_extended_contest_keeps_its_tallies_until_someone_reaches_the_goal() -> None:
    t = Table()
    await t.ok("alice", "!contest @bob 3 6 to 3")
    assert "waiting for bob" in await t.ok("carol", "!contest")
    assert "nobody has challenged you" in await t.error("carol", "!resist 3 6")
    t.faces(9, 9, 2, 2, 2, 2)
    assert "The contest goes on: 2/3 vs 0/3" in await t.ok("bob", "!resist 3 6")
    t.faces(2, 2, 2, 9, 9, 9)
    out = await t.ok("bob", "!resist 3 6")
    assert "Contest over: Bob wins" in out
    assert "nobody has challenged you" in await t.error("bob", "!resist 3 6")


def _mentions(reply: Reply | None) -> list[Mention]:
    assert reply is not None
    return [node for node in walk(reply.body) if isinstance(node, Mention)]


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        ("@U024BE7LH", Mention("U024BE7LH", "U024BE7LH", True)),  # Slack, as its adapter decodes
        ("<@U024BE7LH>", Mention("U024BE7LH", "U024BE7LH", True)),
        ("@mark:example.org", Mention("@mark:example.org", "mark", True)),  # a Matrix id
        ("@Bob", Mention("Bob", "Bob", True)),  # a name or a Telegram @username, as written
    ],
)
async def test_the_person_challenged_or_asked_is_a_mention_that_notifies(
    written: str, expected: Mention
) -> None:
    t = Table()
    await t.ok("alice", f"!contest {written} 3 6")
    assert _mentions(t.last) == [expected]
    listed = await t.ok("carol", "!contest")
    quiet = Mention(expected.user, expected.label)  # named in passing: nobody is paged again
    assert _mentions(t.last) == [quiet, quiet] and f"waiting for {expected.label} to" in listed
    await t.ok("alice", "!contest cancel")
    assert _mentions(t.last) == [quiet]
    await t.ok("st", "!storyteller claim")
    await t.ok("st", f"!ask {written} 4 7 secret")
    assert _mentions(t.last) == [expected]


async def test_a_simple_contest_and_its_target_as_a_last_number() -> None:
    t = Table()
    await t.ok("alice", "!contest @bob 3 6")
    t.faces(9, 9, 9, 2, 2, 2)
    assert "Contest over: Alice wins" in await t.ok("bob", "!resist 3 6")
    await t.ok("alice", "!contest @bob 3 6 4")  # POOL DIFF TARGET
    assert "extended to 4" in await t.ok("alice", "!contest status")


async def test_v5_contest_ties_go_to_the_actor() -> None:
    t = Table("v5")
    await t.ok("ana", "!contest @bo 2")
    t.faces(6, 6, 6, 6)
    assert "Contest over: Ana wins" in await t.ok("bo", "!resist 2")


async def test_a_d6_seesaw_contest_goes_on_turn_by_turn() -> None:
    t = Table("d6")
    await t.ok("max", "!contest @eve 2 to 2")
    t.faces(6, 1, 1, 1)
    out = await t.ok("eve", "!resist 2")
    assert "No winner yet: Max 1 ahead" in out and "The contest goes on: 1/2 vs 0/2" in out
    t.faces(6, 6, 6, 1)
    assert "Contest over: Max wins" in await t.ok("eve", "!resist 2")


async def test_a_d6_contest_is_rolled_at_the_challengers_difficulty_only() -> None:
    # 001 Contests: the opponent rolls against the same difficulty as the player who acts
    t = Table("d6")
    await t.ok("max", "!contest @eve 2")  # the default difficulty, 4
    assert "the challenger's difficulty" in await t.error("eve", "!resist 2 6")
    t.faces(4, 4, 1, 1)
    out = await t.ok("eve", "!resist 2")
    assert "difficulty 4" in out and "Contest over: Max wins" in out
    await t.ok("max", "!contest @eve 2 5")
    t.faces(1, 1, 5, 5)
    assert "Contest over: Eve wins" in await t.ok("eve", "!resist 2 5")  # the same, said again


async def test_contests_lapse_can_be_cancelled_and_need_the_right_person(monkeypatch) -> None:
    t = Table()
    await t.ok("alice", "!contest @bob 3 6")
    assert "you can't contest yourself" in await t.error("alice", "!contest @alice 3 6")
    assert "Start with their @name" in await t.error("alice", "!contest 3 6")
    assert "cancelled" in await t.ok("bob", "!contest cancel")
    await t.ok("alice", "!contest @bob 3 6")
    monkeypatch.setattr(contests, "CONTEST_TIMEOUT", -1)
    assert "nobody has challenged you" in await t(("bob"), "!resist 3 6")


async def test_a_contest_needs_rules_that_have_one() -> None:
    t = Table("v5")
    assert "no extended contests" in await t.error("ana", "!contest @bo 3 to 4")


# --- trying again ---------------------------------------------------------------------------------


async def test_retry_raises_the_difficulty_after_each_failure_of_the_task() -> None:
    t = Table()
    t.faces(2, 3, 4)
    assert "1 failed attempt;" in await t.ok("lynn", "!roll 3 6 retry lock")
    t.faces(2, 3, 4)
    out = await t.ok("lynn", "!roll 3 6 retry lock")
    assert "difficulty 7" in out and "2 failed attempts" in out
    t.faces(9, 9, 9)
    out = await t.ok("lynn", "!roll 3 6 retry lock")
    assert "difficulty 8" in out and "done after 2 failed attempts" in out
    t.faces(9, 9, 9)
    assert "difficulty 6" in await t.ok("lynn", "!roll 3 6 retry lock")  # a new attempt


async def test_retry_needs_the_room_rule_and_a_schedule() -> None:
    t = Table(defaults={"variant": "revised", "house_rules": {"trying_again": False}})
    assert "does not raise the difficulty" in await t.error("lynn", "!roll 3 retry lock")
    t = Table("crossover")
    assert "no difficulty schedule" in await t.error("kim", "!roll 3 retry lock")


# --- roll log and statistics ----------------------------------------------------------------------


async def test_every_roll_is_logged_with_the_id_its_reply_carries() -> None:
    t = Table()
    t.faces(9, 9, 1, 2)
    await t.ok("lynn", "!roll 4 # first")
    assert t.last is not None
    roll_id = t.last.meta["roll_id"]
    assert to_plain(t.last.body).splitlines()[-1] == f"roll {roll_id}"
    [record] = await t.store.rolls("test:r")
    assert (shown_id(record.id), record.user, record.variant, record.faces) == (
        roll_id,
        "lynn",
        "revised",
        [9, 9, 1, 2],
    )
    assert record.request == "!roll 4 # first" and record.successes == 1
    assert record.expected is not None and 0 < record.expected < 4
    t.faces(9, 9, 9, 9)
    await t.ok("lynn", "!roll 2; 2")
    two = await t.store.rolls("test:r", limit=2)
    assert [shown_id(r.id) for r in two] == [
        f"{t.last.meta['roll_id']}-2",
        t.last.meta["roll_id"],
    ]
    listing = await t.ok("mia", "!log")
    assert roll_id in listing and "Lynn" in listing and "9 9 1 2" in listing
    assert "Faces: 9 9 1 2" in await t.ok("mia", f"!log {roll_id}")
    # a room's log is read only in that room
    assert "No rolls are logged" in await t.ok("mia", "!log", room="elsewhere")
    assert "no roll" in await t.error("mia", f"!log {roll_id}", room="elsewhere")


async def test_stats_count_rolls_successes_against_expected_and_botches() -> None:
    t = Table()
    t.faces(9, 9, 9, 1, 2, 3, 9, 9)
    await t.ok("lynn", "!roll 3")
    await t.ok("lynn", "!roll 3")
    await t.ok("mia", "!roll 2")
    stats = await t.ok("mia", "!stats")
    assert "Lynn: 2 rolls, 3 successes" in stats and "1 botch" in stats
    assert "Mia: 1 roll, 2 successes" in stats
    expected = sum(r.expected or 0 for r in await t.store.rolls("test:r", user="lynn"))
    assert f"vs {expected:.1f} expected" in stats
    only = await t.ok("lynn", "!stats @mia")
    assert "Mia" in only and "Lynn" not in only
    assert "no rolls by @zed" in await t.error("lynn", "!stats @zed")


async def test_d6_stats_count_no_botches_since_001_has_none() -> None:
    t = Table("d6")
    t.faces(6, 1, 1)
    await t.ok("max", "!roll 3")
    stats = await t.ok("max", "!stats")
    assert "Max: 1 roll, 1 success" in stats and "botch" not in stats
    assert not stats.rstrip().endswith(",")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("!log 0", "between 1 and 25"),
        ("!log 9 9", "give a number"),
        ("!log ?!", "neither"),
        ("!stats bob", "name at most one player"),
    ],
)
async def test_log_errors(text: str, message: str) -> None:
    t = Table()
    assert message in await t.error("lynn", text)


async def test_an_error_inside_a_stateful_command_rolls_its_changes_back(monkeypatch) -> None:
    """A command that logged a roll and wrote progress, then failed, leaves the room as it was."""
    t = Table()
    await t.ok("lynn", "!extended start x 5")
    before, log = copy.deepcopy(t.store._data), list(t.store._log)
    original = clauses.extended_after

    async def then_fail(*args: Any) -> Any:
        await original(*args)
        raise RuntimeError("a bug after the writes")

    monkeypatch.setattr(clauses, "extended_after", then_fail)
    t.faces(9, 9, 9)
    assert "something went wrong" in await t("lynn", "!roll 3 for x")
    assert t.store._data == before and t.store._log == log


async def test_v5_max_hunger_caps_rolls_and_rouse_checks() -> None:
    t = Table("v5")
    await t.ok("st", "!set max_hunger 4")
    assert "Hunger goes up to 4" in await t.error("ana", "!roll 5 5 diff 2")
    t.faces(2, 2)
    assert "Hunger stays at 4 (it cannot rise above 4)" in await t.ok("ana", "!rouse 2 h4")
    assert "max_hunger goes from 1 to 5, not 9" in await t.error("st", "!set max_hunger 9")


def test_a_house_rule_value_out_of_range_in_the_config_is_refused() -> None:
    from coterie.errors import ConfigError

    with pytest.raises(ConfigError, match=r"defaults.house_rules.max_hunger: .* not 7"):
        Table("v5", defaults={"variant": "v5", "house_rules": {"max_hunger": 7}})
    with pytest.raises(ConfigError, match="trying_again is true or false"):
        Table(defaults={"variant": "revised", "house_rules": {"trying_again": 3}})


async def test_a_storyteller_added_by_handle_is_recognised_by_it() -> None:
    t = Table()
    await t.ok("alice", "!storyteller claim")
    await t.ok("alice", "!storyteller add @zed")
    await t.ok("u42", "!set difficulty 7", handles=("Zed",))  # a Telegram @username, say
    await t.ok("u42", "!storyteller release", handles=("zed",))
    assert "only the Storyteller" in await t.error("u42", "!set difficulty 6", handles=("zed",))
