"""The memo of built roll requests (coterie.framework.requestcache): a remembered request is the
one the grammar and the rule set would build again, for every rule set; a change to anything a
request depends on (the room's default difficulty, a house rule, the rule set, a character's
sheet) shows in the very next roll of the same text; a rule set that does not declare its build
pure is never memoised."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import without_roll_id
from coterie.dice.sources import FixedDice
from coterie.errors import UsageError
from coterie.framework import requestcache
from coterie.framework.app import Coterie
from coterie.framework.commands import CommandContext, parse_requests
from coterie.framework.config import parse_config
from coterie.framework.grammar import split_command
from coterie.framework.message import Message
from coterie.framework.variant import RoomSettings, Variant
from coterie.render.elements import Actions
from coterie.render.encode import to_plain
from coterie_revised import RevisedVariant

RULE_SETS = ("revised", "v5", "d6", "laia", "crossover")
_apps: dict[str, Coterie] = {}


def app_with(variant: str, faces: list[int] | None = None) -> Coterie:
    config = {
        "plugins": {"enable": [variant]},
        "defaults": {"variant": variant, "storytellers": ["st"]},
        "limits": {"rate": {"enabled": False}},
    }
    return Coterie(parse_config(config, "test config"), dice=FixedDice(faces or [6] * 200))


async def say(app: Coterie, text: str, user: str = "st") -> str:
    reply = await app.handle(
        Message(platform="test", room="r", user=user, text=text, user_name=user.title())
    )
    assert reply is not None
    return to_plain([n for n in without_roll_id(reply).body if not isinstance(n, Actions)])


def _outcome(build: Any) -> tuple[str, Any]:
    try:
        return "ok", build()
    except UsageError as error:
        return "error", (error.message, error.usage, error.hint)


def _words(variant: Variant[Any, Any]) -> st.SearchStrategy[str]:
    vocabulary = [*variant.grammar.vocabulary(), "vs", "x", "7d10", "five", "-2"]
    numbers = [str(n) for n in range(13)] + ["3+4", "3+4-1", "2+2+2", "1000000"]
    return st.sampled_from(vocabulary + numbers)


@pytest.mark.parametrize("name", RULE_SETS)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_remembered_request_is_the_one_the_grammar_builds(name: str, data: Any) -> None:
    app = _apps.setdefault(name, app_with(name))
    variant = app.variants[name]
    segments = data.draw(
        st.lists(st.lists(_words(variant), min_size=1, max_size=6), min_size=1, max_size=2)
    )
    args = "; ".join(" ".join(words) for words in segments)
    comment = data.draw(st.sampled_from([None, "aim", "the lock"]))
    low, high = variant.difficulty_range
    house = {
        rule.name: data.draw(st.booleans())
        if isinstance(rule.default, bool)
        else data.draw(st.integers(rule.minimum or 0, rule.maximum or 5))
        for rule in variant.house_rules
    }
    room = RoomSettings(
        variant=name,
        default_difficulty=data.draw(st.one_of(st.none(), st.integers(low, high))),
        house_rules=data.draw(st.sampled_from([{}, house])),
    )
    text = f"!roll {args}" + (f" # {comment}" if comment else "")
    line = split_command(text, ("!",))
    assert line is not None
    message = Message(platform="test", room="r", user="u", text=text)

    def requests() -> list[Any]:
        return parse_requests(CommandContext(app, message, line, room, variant, app.dice))

    requestcache.clear()
    vars(variant)["pure_build"] = False  # the grammar and build, every time
    try:
        slow = _outcome(requests)
    finally:
        del vars(variant)["pure_build"]
    first = _outcome(requests)  # remembered now (when it built)
    again = _outcome(requests)  # from the memo
    assert first == slow
    assert again == slow


@pytest.fixture(autouse=True)
def _fresh_memo() -> None:
    requestcache.clear()


async def test_a_new_default_difficulty_shows_in_the_next_identical_roll() -> None:
    app = app_with("revised")
    assert "7 dice, difficulty 6" in await say(app, "!roll 7")
    assert "7 dice, difficulty 6" in await say(app, "!roll 7")  # remembered
    await say(app, "!set difficulty 8")
    assert "7 dice, difficulty 8" in await say(app, "!roll 7")
    await say(app, "!set difficulty 5")
    assert "7 dice, difficulty 5" in await say(app, "!roll 7")


async def test_a_house_rule_change_shows_in_the_next_identical_roll() -> None:
    app = app_with("revised")
    assert "+1" in await say(app, "!roll 3 6 wp retry 1")  # trying again is on by default
    await say(app, "!set trying_again off")
    assert "does not raise the difficulty" in await say(app, "!roll 3 6 wp retry 1")
    await say(app, "!set trying_again on")
    assert "+1 for trying again" in await say(app, "!roll 3 6 wp retry 1")


async def test_another_rule_set_reads_the_same_text_its_own_way() -> None:
    app = Coterie(
        parse_config(
            {
                "plugins": {"enable": ["revised", "v5"]},
                "defaults": {"variant": "revised", "storytellers": ["st"]},
                "limits": {"rate": {"enabled": False}},
            },
            "test config",
        ),
        dice=FixedDice([6] * 200),
    )
    assert "7 dice, difficulty 6" in await say(app, "!roll 7 6")
    await say(app, "!variant v5")
    v5 = await say(app, "!roll 7 2")
    assert "difficulty 6" not in v5 and "Hunger" in v5  # v5 reads 2 as Hunger
    await say(app, "!variant revised")
    assert "7 dice, difficulty 2" in await say(app, "!roll 7 2")


async def test_a_sheet_change_shows_in_the_next_roll_by_name() -> None:
    app = app_with("revised")
    await say(app, "!char new Al", user="ana")
    await say(app, "!char set Strength 3 Brawl 2", user="ana")
    assert "5 dice, difficulty 6" in await say(app, "!roll Strength+Brawl 6", user="ana")
    await say(app, "!char set Strength 4", user="ana")
    assert "6 dice, difficulty 6" in await say(app, "!roll Strength+Brawl 6", user="ana")


async def test_a_rule_set_without_a_pure_build_is_built_every_time() -> None:
    built: list[int] = []

    class Counting(RevisedVariant):
        def build(self, parsed: Any, settings: RoomSettings) -> Any:
            built.append(1)
            return super().build(parsed, settings)

    app = app_with("revised")
    variant = Counting()
    vars(variant)["pure_build"] = False
    line = split_command("!roll 7 6", ("!",))
    assert line is not None
    settings = await app.room_settings("test:r")
    message = Message(platform="test", room="r", user="u", text="!roll 7 6")
    for _ in range(3):
        parse_requests(CommandContext(app, message, line, settings, variant, app.dice))
    assert len(built) == 3
    vars(variant)["pure_build"] = True
    for _ in range(3):
        parse_requests(CommandContext(app, message, line, settings, variant, app.dice))
    assert len(built) == 4  # built once, then remembered


def test_the_memo_is_bounded() -> None:
    app = app_with("revised")
    variant = app.variants["revised"]
    message = Message(platform="test", room="r", user="u", text="!roll 7 6")
    settings = RoomSettings(variant="revised")
    for pool in range(requestcache.REQUEST_CACHE_SIZE + 50):
        line = split_command(f"!roll 7 6 # aim {pool}", ("!",))  # each comment its own key
        assert line is not None
        parse_requests(CommandContext(app, message, line, settings, variant, app.dice))
    assert len(requestcache._cache) == requestcache.REQUEST_CACHE_SIZE


def test_a_settings_key_is_kept_per_settings_object_and_bounded() -> None:
    requestcache.clear()
    first = RoomSettings(variant="revised", default_difficulty=7, house_rules={"b": True})
    key = requestcache.settings_key(first)
    assert requestcache.settings_key(first) is key  # worked out once per object
    # another object, equal or not, has its own key, equal exactly when the settings are
    assert requestcache.settings_key(RoomSettings(**vars(first))) == key
    for other in (
        RoomSettings(variant="revised", default_difficulty=8, house_rules={"b": True}),
        RoomSettings(variant="revised", default_difficulty=7, house_rules={"b": False}),
        RoomSettings(variant="v5", default_difficulty=7, house_rules={"b": True}),
    ):
        assert requestcache.settings_key(other) != key
    many = [RoomSettings(variant="revised", prefix=str(n)) for n in range(5000)]
    keys = [requestcache.settings_key(s) for s in many]
    assert len(set(keys)) == len(many)
    assert len(requestcache._keys) <= requestcache.REQUEST_CACHE_SIZE
    assert all(requestcache.settings_key(s) == k for s, k in zip(many, keys, strict=True))
