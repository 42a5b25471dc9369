"""Core app behaviour not tied to a rule set: reply hooks, name clashes, config cross-checks,
handler results, bounded failure records."""

from __future__ import annotations

from typing import Any

import pytest

from conftest import without_roll_id
from coterie import hookimpl
from coterie.dice.sources import FixedDice
from coterie.errors import ConfigError
from coterie.framework.adapter import Adapter
from coterie.framework.app import Coterie
from coterie.framework.commands import Command
from coterie.framework.config import Config
from coterie.framework.grammar import Grammar, Positional
from coterie.framework.message import Message
from coterie.framework.plugins import MAX_FAILURES_KEPT, PluginHost
from coterie.framework.variant import Outcome, RoomSettings, Variant
from coterie.render.elements import BR, Bold, Node, Reply, Text
from coterie.render.encode import to_plain
from coterie_revised import RevisedVariant


def app_with(*plugins: object, config: Config | None = None) -> Coterie:
    host = PluginHost()
    host.load(["revised"])
    for index, plugin in enumerate(plugins):
        host.register(plugin, f"test-plugin-{index}")
    return Coterie(config or Config(), host=host)


async def ask(app: Coterie, text: str) -> Reply:
    reply = await app.handle(Message(platform="test", room="r", user="u", text=text))
    assert reply is not None
    return without_roll_id(reply)


class ReplyRecorder:
    def __init__(self) -> None:
        self.seen: list[str] = []

    @hookimpl
    def coterie_before_reply(self, reply: Reply) -> None:
        self.seen.append(reply.kind)
        reply.body.append(Text(" [checked]"))


@pytest.mark.parametrize("text", ["!roll 5", "!rol 5", "!roll 5 # " + "c" * 400, "!" + "x" * 3000])
async def test_before_reply_sees_every_reply_errors_included(text: str) -> None:
    recorder = ReplyRecorder()
    app = app_with(recorder)
    reply = await ask(app, text)
    assert len(recorder.seen) == 1 and to_plain(reply.body).endswith("[checked]")


async def test_before_reply_not_called_when_there_is_no_reply() -> None:
    recorder = ReplyRecorder()
    app = app_with(recorder)
    assert await app.handle(Message(platform="test", room="r", user="u", text="hi")) is None
    assert recorder.seen == []


class Console2(Adapter):
    name = "console"

    async def run(self) -> None:
        return None


class DuplicateAdapter:
    @hookimpl
    def coterie_adapters(self) -> list[type[Adapter]]:
        return [Console2]


def test_duplicate_adapter_name_is_reported_and_the_first_kept() -> None:
    host = PluginHost()
    host.load(["console", "revised"])
    host.register(DuplicateAdapter(), "dup")
    app = Coterie(Config(), host=host)
    assert app.adapter_classes["console"] is not Console2
    [failure] = host.failures
    assert failure.plugin == "dup" and "adapter 'console' exists" in failure.error


def _command(name: str, variants: tuple[str, ...] = (), reply: str = "mine") -> Command:
    return Command(
        name=name,
        summary="s",
        usage=f"!{name}",
        handler=lambda ctx: [Text(reply)],
        variants=variants,
    )


class Commands:
    def __init__(self, *commands: Command) -> None:
        self.commands = list(commands)

    @hookimpl
    def coterie_commands(self) -> list[Command]:
        return self.commands


async def test_a_second_unrestricted_command_with_a_taken_name_is_reported() -> None:
    app = app_with(Commands(_command("roll"), _command("fresh")))
    [failure] = app.host.failures
    assert "command 'roll' is taken by plugin 'coterie.play.roll'" in failure.error
    assert "mine" not in to_plain((await ask(app, "!roll 5")).body)
    assert to_plain((await ask(app, "!fresh")).body) == "mine"


async def test_a_command_restricted_to_a_rule_set_takes_over_there() -> None:
    app = app_with(Commands(_command("roll", variants=("revised",), reply="house roll")))
    assert list(app.host.failures) == []
    assert to_plain((await ask(app, "!roll 5")).body) == "house roll"


def test_command_clash_rules() -> None:
    assert _command("a").clashes_with(_command("a"))
    assert not _command("a").clashes_with(_command("b"))
    assert not _command("a").clashes_with(_command("a", ("revised",)))
    assert _command("a", ("revised", "v5")).clashes_with(_command("a", ("v5",)))
    assert not _command("a", ("revised",)).clashes_with(_command("a", ("v5",)))


def test_unknown_house_rule_in_config_is_refused_with_a_suggestion() -> None:
    config = Config.model_validate({"defaults": {"house_rules": {"first_botch_fre": True}}})
    with pytest.raises(
        ConfigError,
        match=r"defaults\.house_rules\.first_botch_fre: .*"
        r"did you mean 'first_botch_free'",
    ):
        app_with(config=config)
    config = Config.model_validate({"rooms": {"t:r": {"house_rules": {"first_botch_free": 1}}}})
    assert app_with(config=config)  # a declared rule is fine


def test_default_difficulty_must_fit_the_rooms_rule_set() -> None:
    config = Config.model_validate({"rooms": {"t:r": {"default_difficulty": 12}}})
    with pytest.raises(
        ConfigError,
        match=r'rooms\."t:r"\.default_difficulty: 12 is outside '
        r"revised's difficulties 2-10",
    ):
        app_with(config=config)


def test_room_difficulty_falls_back_to_the_rule_sets_own() -> None:
    variant = RevisedVariant()
    assert variant.room_difficulty(RoomSettings(variant="revised", default_difficulty=8)) == 8
    assert variant.room_difficulty(RoomSettings(variant="revised", default_difficulty=12)) == 6
    assert variant.room_difficulty(RoomSettings(variant="revised")) == 6


async def test_handler_results_strings_become_text_and_junk_is_a_plugin_error() -> None:
    good = Command(
        name="good",
        summary="s",
        usage="!good",
        handler=lambda ctx: ["plain ", Bold((Text("bold"),))],
    )
    bad = Command(name="bad", summary="s", usage="!bad", handler=lambda ctx: [42])
    app = app_with(Commands(good, bad))
    assert to_plain((await ask(app, "!good")).body) == "plain bold"
    reply = await ask(app, "!bad")
    assert reply.is_error and "something went wrong while running `!bad`" in to_plain(reply.body)


def test_failure_records_are_bounded() -> None:
    host = PluginHost()
    for _ in range(MAX_FAILURES_KEPT + 50):
        host._fail("noisy", "coterie_after_roll", RuntimeError("again"))
    assert len(host.failures) == MAX_FAILURES_KEPT
    assert host.failure_counts["noisy"] == MAX_FAILURES_KEPT + 50


class Wrapper:
    @hookimpl(wrapper=True)
    def coterie_before_reply(self, reply: Reply):  # type: ignore[no-untyped-def]
        return (yield)


def test_hook_wrappers_are_refused_at_registration() -> None:
    app = app_with(Wrapper())
    [failure] = app.host.failures
    assert failure.where == "register" and "hook wrappers are not supported" in failure.error
    assert "test-plugin-0" not in app.host.plugin_names


class Coin(Variant[int, "CoinOutcome"]):
    """A toy rule set to exercise the core extension points."""

    name = "coin"
    title = "Coin"
    sides = 2
    grammar = Grammar(usage="!roll N", positionals=(Positional("pool", "coins", kind="pool"),))
    extra_prefixes = ("?",)

    def build(self, parsed, settings):  # type: ignore[no-untyped-def]
        pool = parsed.pool()
        return pool.total if pool else 1

    def dice_count(self, request: int) -> int:
        return request

    def evaluate(self, request: int, faces):  # type: ignore[no-untyped-def]
        return CoinOutcome(tuple(faces))

    def compose(self, outcomes, who, comment):  # type: ignore[no-untyped-def]
        return [Text(f"# {sum(o.successes for o in outcomes)}"), BR, Text(f"by {who}")]


class CoinOutcome(Outcome):
    variant = "coin"
    outcome = "done"
    degree = None

    def __init__(self, faces: tuple[int, ...]) -> None:
        self.faces = faces
        self.successes = faces.count(2)

    def render(self) -> list[Node]:
        return [Text(" ".join(map(str, self.faces)))]


class CoinPlugin:
    @hookimpl
    def coterie_variants(self) -> list[Variant[Any, Any]]:
        return [Coin()]


def coin_app() -> Coterie:
    host = PluginHost()
    host.load(["revised"])
    host.register(CoinPlugin(), "coin")
    config = Config.model_validate({"rooms": {"test:r": {"variant": "coin"}}})
    return Coterie(config, host=host, dice=FixedDice([2, 1, 2, 2, 2, 2]))


async def test_a_rule_set_can_add_a_prefix_and_lay_out_its_reply() -> None:
    app = coin_app()
    assert to_plain((await ask(app, "?roll 3")).body) == "# 2\nby u"
    assert to_plain((await ask(app, "!roll 1")).body) == "# 1\nby u"
    other_room = Message(platform="test", room="elsewhere", user="u", text="?roll 3")
    assert await app.handle(other_room) is None  # "?" only works in rooms on that rule set


async def test_team_in_a_rule_set_without_teamwork_is_a_friendly_error() -> None:
    app = coin_app()
    reply = await ask(app, "!team 1; 1")
    assert reply.is_error and "the coin rules have no teamwork" in to_plain(reply.body)
    assert app.dice.remaining == 6  # type: ignore[attr-defined]
