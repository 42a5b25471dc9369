"""Plugins: found through entry points, only enabled ones load, failures are isolated."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import threading

import pytest

from coterie import hookimpl
from coterie.dice.sources import FixedDice, SeededDice
from coterie.errors import ConfigError, UsageError
from coterie.framework import plugins as plugin_host
from coterie.framework.adapter import Adapter
from coterie.framework.app import Coterie
from coterie.framework.commands import Command
from coterie.framework.config import Config, parse_config
from coterie.framework.plugins import PluginHost, installed_plugins
from coterie.ops.cli import main
from coterie.render.elements import Text
from coterie.render.encode import to_plain

#: coterie's own chat features: built-in plugins from the ``coterie.builtins`` entry points
BUILTINS = [
    "coterie.play.byname",
    "coterie.play.characters",
    "coterie.play.chronicles",
    "coterie.play.clauses",
    "coterie.play.contests",
    "coterie.play.dice",
    "coterie.play.extended",
    "coterie.play.help",
    "coterie.play.humanity",
    "coterie.play.initiative",
    "coterie.play.macros",
    "coterie.play.roll",
    "coterie.play.rolllog",
    "coterie.play.rooms",
    "coterie.play.scenes",
    "coterie.play.sessions",
    "coterie.play.storyteller",
    "coterie.play.teamwork",
    "coterie.play.trackers",
]


# --- only enabled plugins load ------------------------------------------------------------------


def test_the_example_distribution_is_installed():
    plugins = installed_plugins()
    assert {"console", "revised", "house-rules"} <= set(plugins)
    assert plugins["house-rules"].value == "coterie_house_rules"
    assert plugins["house-rules"].dist is not None
    assert plugins["house-rules"].dist.name == "coterie-house-rules"


def test_only_enabled_plugins_are_imported(cli_env, root):
    probe = textwrap.dedent(
        """
        import sys
        from coterie.framework.app import Coterie
        from coterie.framework.config import parse_config
        app = Coterie(parse_config({"plugins": {"enable": ["revised", "console"]}}))
        print(sorted(app.variants), sorted(app.adapter_classes))
        print("coterie_house_rules" in sys.modules)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        env=cli_env,
        cwd=root,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["['revised'] ['console']", "False"]


def test_enabled_list_decides_what_is_registered(make_app):
    app = make_app(plugins={"enable": ["revised", "console"]})
    assert set(app.variants) == {"revised"}
    assert "house-rules" not in app.host.plugin_names
    assert {"revised", "console"} <= set(app.host.plugin_names)


def test_star_loads_the_example_distribution_through_its_entry_point(make_app):
    app = make_app(plugins={"enable": ["*"]})
    assert "house-rules" in app.host.plugin_names
    nobotch = app.variants["nobotch"]
    assert type(nobotch).__module__ == "coterie_house_rules"
    assert app.host.pm.get_plugin("house-rules") is sys.modules["coterie_house_rules"]
    assert list(app.host.failures) == []


async def test_nobotch_variant_rolls_in_chat(make_app, say):
    faces = [1, 3, 4, 3, 7, 1, 3, 4, 3, 7]
    app = make_app(plugins={"enable": ["revised", "house-rules"]}, dice=FixedDice(faces))
    botch = await say(app, "!roll 5 8")
    assert botch is not None and "Botch!" in botch
    assert "This room now plays" in (await say(app, "!variant nobotch") or "")
    plain = await say(app, "!roll 5 8")
    assert plain is not None
    assert "Botch" not in plain
    assert "Failure" in plain


def test_unknown_plugin_name_lists_installed_ones():
    config = parse_config({"plugins": {"enable": ["revised", "house_rules"]}})
    with pytest.raises(ConfigError) as caught:
        Coterie(config)
    message = str(caught.value)
    assert "plugins.enable" in message
    assert "'house_rules'" in message
    for name in ("console", "house-rules", "revised"):
        assert name in message


def test_unknown_plugin_is_refused_before_anything_is_imported():
    host = PluginHost()
    with pytest.raises(ConfigError):
        host.load(["revised", "nosuch"])
    assert host.plugin_names == BUILTINS


# --- a broken plugin found through a real entry point -------------------------------------------

BROKEN_HOOKS = """
from coterie import hookimpl
from coterie.framework.commands import Command

IMPORTED = True


def _explode(ctx):
    raise RuntimeError("broken command internals")


@hookimpl
def coterie_variants():
    raise RuntimeError("broken variants")


@hookimpl
def coterie_commands():
    return [Command(name="explode", summary="x", usage="!explode", handler=_explode)]


@hookimpl
def coterie_startup(app):
    raise RuntimeError("broken startup")


@hookimpl
def coterie_after_roll(app, message, variant, outcome):
    raise RuntimeError("broken after roll")


@hookimpl
def coterie_before_reply(app, message, reply):
    raise RuntimeError("broken before reply")
"""

BROKEN_IMPORT = """
from coterie import hookimpl
from coterie_revised import RevisedVariant


class Broken(RevisedVariant):
    name = "broken"


raise ImportError("this rule set needs a module that is not installed")


@hookimpl
def coterie_variants():
    return [Broken()]
"""

BROKEN_MODULES = ("broken_coterie_plugin", "broken_coterie_import")


@pytest.fixture
def broken_distribution(tmp_path, monkeypatch):
    """A fake installed distribution with two ``coterie`` entry points: ``broken`` (hooks raise)
    and ``broken-import`` (raises on import)."""
    info = tmp_path / "broken_coterie_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: broken-coterie-plugin\nVersion: 0.1\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(
        "[coterie]\nbroken = broken_coterie_plugin\nbroken-import = broken_coterie_import\n",
        encoding="utf-8",
    )
    (tmp_path / "broken_coterie_plugin.py").write_text(BROKEN_HOOKS, encoding="utf-8")
    (tmp_path / "broken_coterie_import.py").write_text(BROKEN_IMPORT, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in BROKEN_MODULES:
        sys.modules.pop(name, None)


ENABLE_BROKEN = ["revised", "console", "broken", "broken-import"]


def test_fake_distribution_is_seen_through_entry_points(broken_distribution):
    plugins = installed_plugins()
    assert plugins["broken"].value == "broken_coterie_plugin"
    assert plugins["broken-import"].value == "broken_coterie_import"


def test_broken_plugins_are_not_loaded_unless_enabled(broken_distribution, make_app):
    app = make_app()
    assert list(app.host.failures) == []
    assert "broken_coterie_plugin" not in sys.modules


async def test_broken_plugins_are_reported_and_isolated(broken_distribution, make_app, send):
    app = make_app(plugins={"enable": ENABLE_BROKEN}, dice=SeededDice(1))
    failed = {(f.plugin, f.where) for f in app.host.failures}
    assert ("broken-import", "load") in failed
    assert ("broken", "coterie_variants") in failed
    assert all(f.plugin in {"broken", "broken-import"} for f in app.host.failures)
    message = next(f.error for f in app.host.failures if f.plugin == "broken-import")
    assert "not installed" in message
    assert set(app.variants) == {"revised"}
    assert "broken" in app.host.plugin_names  # its working hooks still count

    await app.start()
    assert ("broken", "coterie_startup") in {(f.plugin, f.where) for f in app.host.failures}

    reply = await send(app, "!roll 5 6")
    assert reply is not None and not reply.is_error
    assert "5 dice, difficulty 6" in to_plain(reply.body)
    failed = {(f.plugin, f.where) for f in app.host.failures}
    assert ("broken", "coterie_after_roll") in failed
    assert ("broken", "coterie_before_reply") in failed

    reply = await send(app, "!explode")
    assert reply is not None and reply.is_error
    plain = to_plain(reply.body)
    assert "!explode" in plain and "incident" in plain
    assert "broken command internals" not in plain
    assert "Traceback" not in plain and "RuntimeError" not in plain

    reply = await send(app, "!roll 3 6")  # still working after all that
    assert reply is not None and not reply.is_error
    await app.stop()


def test_broken_plugins_in_coterie_plugins_and_config_check(broken_distribution, tmp_path, capsys):
    path = tmp_path / "broken.toml"
    path.write_text(f"[plugins]\nenable = {ENABLE_BROKEN!r}\n", encoding="utf-8")
    assert main(["plugins", "--config", str(path)]) == 0
    out = capsys.readouterr().out
    problems = out.split("Problems:")[1]
    assert "broken-import: load" in problems
    assert "broken: coterie_variants" in problems
    assert main(["config", "check", str(path)]) == 1
    captured = capsys.readouterr()
    assert "plugin broken-import: load" in captured.err
    assert "2 plugin problem(s)" in captured.out and "OK" not in captured.out


# --- a plugin registered in-process whose every hook raises -------------------------------------


class Exploding:
    """Every hook raises."""

    @hookimpl
    def coterie_variants(self):
        raise RuntimeError("variants")

    @hookimpl
    def coterie_commands(self):
        raise RuntimeError("commands")

    @hookimpl
    def coterie_adapters(self):
        raise RuntimeError("adapters")

    @hookimpl
    def coterie_startup(self, app):
        raise RuntimeError("startup")

    @hookimpl
    def coterie_shutdown(self, app):
        raise RuntimeError("shutdown")

    @hookimpl
    def coterie_after_roll(self, app, message, variant, outcome):
        raise RuntimeError("after roll")

    @hookimpl
    def coterie_before_reply(self, app, message, reply):
        raise RuntimeError("before reply")


def app_with(*plugins: tuple[object, str], seed: int = 0, config: Config | None = None) -> Coterie:
    host = PluginHost()
    host.load(["revised"])
    for plugin, name in plugins:
        host.register(plugin, name)
    return Coterie(config or Config(), host=host, dice=SeededDice(seed))


async def test_every_hook_raising_is_isolated(say):
    app = app_with((Exploding(), "exploding"))
    assert {f.where for f in app.host.failures} == {
        "coterie_variants",
        "coterie_commands",
        "coterie_adapters",
    }
    await app.start()
    for _ in range(2):
        plain = await say(app, "!roll 4 6")
        assert plain is not None and "4 dice, difficulty 6" in plain
    assert await say(app, "!help") is not None
    await app.stop()
    assert all(f.plugin == "exploding" for f in app.host.failures)
    assert {f.where for f in app.host.failures} == {
        "coterie_variants",
        "coterie_commands",
        "coterie_adapters",
        "coterie_startup",
        "coterie_shutdown",
        "coterie_after_roll",
        "coterie_before_reply",
    }
    after_roll = [f for f in app.host.failures if f.where == "coterie_after_roll"]
    assert len(after_roll) == 2
    assert after_roll[0].error == "RuntimeError: after roll"


class BadResults:
    """Hooks that return the wrong things instead of raising."""

    @hookimpl
    def coterie_variants(self):
        return 5  # not a list

    @hookimpl
    def coterie_commands(self):
        yield Command(name="fine", summary="ok", usage="!fine", handler=lambda ctx: [])
        raise RuntimeError("generator broke half-way")

    @hookimpl
    def coterie_adapters(self):
        return [object, "console"]


def test_hooks_returning_the_wrong_things_are_isolated():
    app = app_with((BadResults(), "bad-results"))
    assert set(app.variants) == {"revised"}
    assert app.adapter_classes == {}
    problems = [(f.plugin, f.where) for f in app.host.failures]
    assert ("bad-results", "coterie_variants") in problems
    assert ("bad-results", "coterie_commands") in problems
    assert problems.count(("bad-results", "coterie_adapters")) == 2


def test_duplicate_variant_is_refused():
    from coterie_revised import RevisedVariant

    class Impostor(RevisedVariant):
        title = "an impostor"

    class Twice:
        @hookimpl
        def coterie_variants(self):
            return [Impostor()]

    app = app_with((Twice(), "twice"))
    assert list(app.variants) == ["revised"]
    # the plugin registered first (the built-in) keeps the name; the later one is reported
    assert app.variants["revised"].title != "an impostor"
    [failure] = app.host.failures
    assert failure.plugin == "twice"
    assert failure.where == "coterie_variants"
    assert "variant 'revised' exists" in failure.error


def test_hook_with_a_wrong_signature_is_refused_at_registration():
    class WrongSignature:
        @hookimpl
        def coterie_startup(self, app, surprise):
            return None

    app = app_with((WrongSignature(), "wrong"))
    assert [(f.plugin, f.where) for f in app.host.failures] == [("wrong", "register")]
    assert "wrong" not in app.host.plugin_names


class Hanging:
    """Hooks that return awaitables which never finish."""

    @hookimpl
    def coterie_startup(self, app):
        return asyncio.Event().wait()

    @hookimpl
    def coterie_after_roll(self, app, message, variant, outcome):
        return asyncio.Event().wait()

    @hookimpl
    def coterie_before_reply(self, app, message, reply):
        async def hang():
            await asyncio.sleep(3600)

        return hang()


async def test_hanging_awaitable_is_cut_off_by_the_timeout(monkeypatch, say):
    monkeypatch.setattr(plugin_host, "HOOK_TIMEOUT", 0.05)
    app = app_with((Hanging(), "hanging"))
    loop = asyncio.get_running_loop()
    started = loop.time()
    await asyncio.wait_for(app.start(), 5)
    plain = await asyncio.wait_for(say(app, "!roll 3 6"), 5)
    assert plain is not None and "3 dice, difficulty 6" in plain
    assert loop.time() - started < 3
    timeouts = {f.where: f.error for f in app.host.failures if f.plugin == "hanging"}
    assert set(timeouts) == {"coterie_startup", "coterie_after_roll", "coterie_before_reply"}
    assert all("timed out after 0.05 s" in error for error in timeouts.values())


class AsyncFailing:
    @hookimpl
    def coterie_after_roll(self, app, message, variant, outcome):
        async def fail():
            raise ValueError("late failure")

        return fail()


async def test_awaitable_that_raises_is_isolated(say):
    app = app_with((AsyncFailing(), "async-failing"))
    plain = await say(app, "!roll 3 6")
    assert plain is not None and "3 dice" in plain
    assert [(f.plugin, f.where, f.error) for f in app.host.failures] == [
        ("async-failing", "coterie_after_roll", "ValueError: late failure")
    ]


# --- synchronous hooks that hang ----------------------------------------------------------------


class SyncHanging:
    """Plain (not async) per-message hooks that block until the test lets them go."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.calls = 0

    @hookimpl
    def coterie_after_roll(self, app, message, variant, outcome):
        self.calls += 1
        self.release.wait(30)

    @hookimpl
    def coterie_before_reply(self, app, message, reply):
        self.calls += 1
        self.release.wait(30)


class Recorder:
    """A well-behaved plugin: it must keep working whatever its neighbours do."""

    def __init__(self) -> None:
        self.rolls = 0

    @hookimpl
    def coterie_after_roll(self, app, message, variant, outcome):
        self.rolls += 1

    @hookimpl
    def coterie_before_reply(self, app, message, reply):
        reply.body.append(Text(" [seen]"))

    @hookimpl
    def coterie_commands(self):
        def boom(ctx):
            raise RuntimeError("secret internals of boom")

        return [Command(name="boom", summary="fails", usage="!boom", handler=boom)]


async def test_a_hanging_sync_hook_is_cut_off_and_then_skipped(monkeypatch, say):
    monkeypatch.setattr(plugin_host, "HOOK_TIMEOUT", 0.2)
    hanging, recorder = SyncHanging(), Recorder()
    app = app_with((hanging, "hanging"), (recorder, "recorder"))
    loop = asyncio.get_running_loop()
    try:
        started = loop.time()
        plain = await asyncio.wait_for(say(app, "!roll 3 6"), 5)
        first = loop.time() - started
        assert plain is not None and "3 dice, difficulty 6" in plain and "[seen]" in plain
        assert 0.2 <= first < 2  # both hanging hooks waited for, once each
        timeouts = [f for f in app.host.failures if f.plugin == "hanging"]
        assert {f.where for f in timeouts} == {"coterie_after_roll", "coterie_before_reply"}
        assert all(f.error == "TimeoutError: timed out after 0.2 s" for f in timeouts)
        assert set(app.host.hung) == {
            ("hanging", "coterie_after_roll"),
            ("hanging", "coterie_before_reply"),
        }

        # while they still hang, they are skipped at once: no more waiting, no more threads
        started = loop.time()
        plain = await asyncio.wait_for(say(app, "!roll 2 6"), 5)
        assert loop.time() - started < 0.2
        assert plain is not None and "2 dice" in plain and "[seen]" in plain
        assert hanging.calls == 2 and recorder.rolls == 2
        skipped = [f.error for f in app.host.failures if f.plugin == "hanging"][2:]
        assert len(skipped) == 2 and all("has not returned" in e for e in skipped)
    finally:
        hanging.release.set()
    for _ in range(100):  # the threads return; the hooks are called again from now on
        if not app.host.hung:
            break
        await asyncio.sleep(0.02)
    assert app.host.hung == {}
    plain = await asyncio.wait_for(say(app, "!roll 1 6"), 5)
    assert plain is not None and "[seen]" in plain and hanging.calls == 4
    assert all(f.plugin == "hanging" for f in app.host.failures)


async def test_raising_and_hanging_plugins_together_leave_the_bot_working(monkeypatch, say):
    monkeypatch.setattr(plugin_host, "HOOK_TIMEOUT", 0.1)
    hanging, recorder = SyncHanging(), Recorder()
    app = app_with((Exploding(), "exploding"), (hanging, "hanging"), (recorder, "recorder"))
    try:
        await asyncio.wait_for(app.start(), 5)
        for text, expected in [("!roll 4 6", "4 dice"), ("!help", "!roll"), ("!roll 2", "2 dice")]:
            plain = await asyncio.wait_for(say(app, text), 5)
            assert plain is not None and expected in plain and "[seen]" in plain
            assert "something went wrong" not in plain and "Traceback" not in plain
        # only a command that itself fails says so, with an incident id and no internals
        plain = await asyncio.wait_for(say(app, "!boom"), 5)
        assert plain is not None and plain.startswith("⚠ something went wrong")
        assert "incident" in plain and "secret internals" not in plain
        assert "Traceback" not in plain and "RuntimeError" not in plain
        await asyncio.wait_for(app.stop(), 5)
    finally:
        hanging.release.set()
    assert recorder.rolls == 2
    failed = {(f.plugin, f.where) for f in app.host.failures}
    assert ("exploding", "coterie_after_roll") in failed
    assert ("hanging", "coterie_before_reply") in failed
    assert not any(f.plugin == "recorder" for f in app.host.failures)


# --- commands from plugins ----------------------------------------------------------------------


class Commands:
    @hookimpl
    def coterie_commands(self):
        async def crash(ctx):
            raise KeyError("secret-internal-detail")

        def misuse(ctx):
            raise UsageError("that is not how it works")

        def hello(ctx):
            return [f"hello {ctx.message.user}"]  # a str is not a Node, but to_plain skips it

        return [
            Command(name="crash", summary="raises", usage="!crash", handler=crash),
            Command(name="misuse", summary="usage error", usage="!misuse THING", handler=misuse),
            Command(name="hello", summary="greets", usage="!hello", handler=hello),
        ]


async def test_plugin_command_that_raises_gives_an_error_without_traceback(send):
    app = app_with((Commands(), "commands"))
    assert app.find_command("crash", "revised").plugin == "commands"  # type: ignore[union-attr]
    reply = await send(app, "!crash now")
    assert reply is not None and reply.is_error
    plain = to_plain(reply.body)
    assert "`!crash`" in plain and "incident" in plain and "keeps working" in plain
    for leak in ("secret-internal-detail", "KeyError", "Traceback", "File "):
        assert leak not in plain
    reply = await send(app, "!roll 3 6")
    assert reply is not None and not reply.is_error


async def test_plugin_command_usage_error_uses_its_usage_line(send):
    app = app_with((Commands(), "commands"))
    reply = await send(app, "!misuse")
    assert reply is not None and reply.is_error
    plain = to_plain(reply.body)
    assert "that is not how it works" in plain
    assert "Usage: !misuse THING" in plain


# --- the adapter supervisor ---------------------------------------------------------------------


async def test_supervisor_restarts_a_crashed_adapter_while_another_keeps_running(monkeypatch):
    events: list[str] = []
    delays: list[float] = []
    crashed_twice = asyncio.Event()
    real_sleep = asyncio.sleep

    async def quick_sleep(delay, *args, **kwargs):
        delays.append(delay)
        await real_sleep(0)

    class Flaky(Adapter):
        name = "flaky"
        runs = 0

        async def run(self):
            type(self).runs += 1
            events.append(f"flaky run {self.runs}")
            if self.runs <= 2:
                raise ConnectionError("network went away")
            crashed_twice.set()

    class Steady(Adapter):
        name = "steady"
        instances = 0

        def __init__(self, app, settings):
            super().__init__(app, settings)
            type(self).instances += 1

        async def run(self):
            events.append("steady started")
            await asyncio.wait_for(crashed_twice.wait(), 5)
            events.append("steady finished")

    class Adapters:
        @hookimpl
        def coterie_adapters(self):
            return [Flaky, Steady]

    app = app_with((Adapters(), "adapters"))
    assert set(app.adapter_classes) == {"flaky", "steady"}
    monkeypatch.setattr(asyncio, "sleep", quick_sleep)
    await asyncio.wait_for(app.run_adapters(["steady", "flaky"]), 10)
    assert Flaky.runs == 3
    assert Steady.instances == 1
    # exponential back-off (coterie.retry), each wait stretched by at most 20 % of jitter
    assert len(delays) == 2 and 1.0 <= delays[0] <= 1.2 and 2.0 <= delays[1] <= 2.4
    assert events.index("steady started") < events.index("flaky run 1")
    assert events[-1] == "steady finished"


async def test_cancelling_the_supervisor_stops_the_adapter():
    stopped = asyncio.Event()
    running = asyncio.Event()

    class Forever(Adapter):
        name = "forever"

        async def run(self):
            running.set()
            await asyncio.Event().wait()

        async def stop(self):
            stopped.set()

    class Adapters:
        @hookimpl
        def coterie_adapters(self):
            return [Forever]

    app = app_with((Adapters(), "adapters"))
    task = asyncio.ensure_future(app.run_adapters(["forever"]))
    await asyncio.wait_for(running.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert stopped.is_set()


async def test_a_cancellation_arriving_as_an_async_hook_finishes_is_not_lost():
    """Shutdown cancels an adapter's task; when the cancellation lands just as an async hook
    (every roll awaits ``coterie_after_roll``) finishes, it must still cancel the caller.
    ``asyncio.wait_for`` on Python 3.11 returned the hook's result and dropped the cancellation, so
    an adapter's loop went on for ever after a stop (tests/test_supervise.py hung 1 run in 4)."""
    host = PluginHost()
    caller: asyncio.Task[str] | None = None

    class CancelsItsCaller:
        @hookimpl
        async def coterie_after_roll(self, app, message, variant, outcome):
            assert caller is not None
            caller.cancel()  # the stop arrives as the hook returns
            return "noted"

    host.register(CancelsItsCaller(), "cancels-its-caller")

    async def roll_then_go_on() -> str:
        results = await host.call_async(
            "coterie_after_roll", app=None, message=None, variant=None, outcome=None
        )
        assert ("cancels-its-caller", "noted") in results
        return "went on after the stop"

    caller = asyncio.create_task(roll_then_go_on())
    with pytest.raises(asyncio.CancelledError):
        await caller


def test_a_plugin_registered_or_unregistered_after_a_hook_was_called_is_seen_at_once():
    # the host keeps each hook's implementations between calls (pluggy copies its list on each
    # ask); registering or unregistering a plugin must show on the very next call
    class Late:
        @hookimpl
        def coterie_settings(self):
            return {"late": {}}

    host = PluginHost()
    before = dict(host.call("coterie_settings"))
    assert "late" not in before
    late = Late()
    host.register(late, "late")
    assert dict(host.call("coterie_settings"))["late"] == {"late": {}}
    host.pm.unregister(late)
    assert dict(host.call("coterie_settings")) == before
    host.pm.register(late, name="late-again")  # straight through pluggy's manager, too
    assert "late-again" in dict(host.call("coterie_settings"))


class Shapes:
    """Commands answering replies of every shape a handler may give, and some it may not."""

    @hookimpl
    def coterie_commands(self):
        from coterie.render.elements import BR, Bold, Die, Italic, Role

        class Shout(Text):
            pass

        replies = {
            "strings": lambda ctx: ["plain ", Bold((Text("bold"),)), BR, "tail"],
            "nested": lambda ctx: [Italic((Bold((Die(7, Role.SUCCESS, 10),)),)), Shout("!")],
            "number": lambda ctx: [Text("a"), 42],
            "deep": lambda ctx: [Bold((Italic((Text("x"), object())),))],
        }
        return [
            Command(name=name, summary=name, usage=f"!{name}", handler=handler)
            for name, handler in replies.items()
        ]


async def test_a_handler_may_answer_strings_and_elements_and_nothing_else(send):
    app = app_with((Shapes(), "shapes"))
    reply = await send(app, "!strings")
    assert reply is not None and not reply.is_error
    assert [type(node).__name__ for node in reply.body] == ["Text", "Bold", "LineBreak", "Text"]
    assert to_plain(reply.body) == "plain bold\ntail"
    reply = await send(app, "!nested")
    assert reply is not None and not reply.is_error and to_plain(reply.body) == "7!"
    for name in ("number", "deep"):  # refused at any depth: the command's incident, no crash
        reply = await send(app, f"!{name}")
        assert reply is not None and reply.is_error, name
        assert "incident" in to_plain(reply.body) and "keeps working" in to_plain(reply.body)
