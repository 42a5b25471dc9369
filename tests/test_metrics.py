"""/healthz and Prometheus /metrics (coterie.ops, coterie.metrics): scraped from a running ops
server in front of an app whose Slack adapter (HTTP mode, against the recording fake of
tests/slack_fake.py) answers real signed requests, and the [ops] / port-offset configuration."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any, ClassVar

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from coterie import hookimpl
from coterie.dice.sources import SeededDice
from coterie.errors import ConfigError
from coterie.framework.adapter import Adapter
from coterie.framework.app import Coterie
from coterie.framework.config import Config, parse_config
from coterie.framework.metrics import Metrics
from coterie.framework.plugins import PluginHost
from coterie.ops.health import OpsServer, apply_port_offset
from coterie.storage.state import MemoryStore
from slack_fake import (
    BOT_TOKEN,
    SIGNING_SECRET,
    FakeSlack,
    message_event,
    post_event,
    settings_for,
)

SLACK_ENV = {
    "COTERIE_TEST_SLACK_BOT": BOT_TOKEN,
    "COTERIE_TEST_SLACK_SIGNING": SIGNING_SECRET,
    "COTERIE_TEST_SLACK_APP": "xapp-unused",
}


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a Prometheus text exposition, by name and sorted labels."""
    found: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


async def wait_until(predicate: Any, what: str, timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


class BrokenStore(MemoryStore):
    async def get(self, namespace: str, key: str) -> Any | None:
        raise OSError("the database is gone")


class Crashing(Adapter):
    name = "crashing"
    runs: ClassVar[int] = 0

    async def run(self) -> None:
        Crashing.runs += 1
        raise RuntimeError("boom")

    async def stop(self) -> None:
        return None


class CrashingPlugin:
    @hookimpl
    def coterie_adapters(self) -> list[type[Adapter]]:
        return [Crashing]


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as client:
        yield client


async def scrape(session: aiohttp.ClientSession, ops: OpsServer, path: str) -> tuple[int, str]:
    assert ops.address is not None
    host, port = ops.address
    async with session.get(f"http://{host}:{port}{path}") as response:
        return response.status, await response.text()


def test_observe_counts_by_platform_and_command():
    metrics = Metrics()
    metrics.observe(platform="slack", command="roll", seconds=0.002, error=False)
    metrics.observe(platform="slack", command="roll", seconds=0.004, error=True)
    metrics.observe(platform="telegram", command="(unknown)", seconds=0.0001, error=True)
    found = samples(metrics.render().decode())
    roll = (("command", "roll"), ("platform", "slack"))
    assert found[("coterie_commands_total", roll)] == 2
    assert found[("coterie_command_errors_total", roll)] == 1
    unknown = (("command", "(unknown)"), ("platform", "telegram"))
    assert found[("coterie_command_errors_total", unknown)] == 1
    slack = (("platform", "slack"),)
    assert found[("coterie_handle_seconds_count", slack)] == 2
    assert found[("coterie_handle_seconds_sum", slack)] == pytest.approx(0.006)
    assert found[("coterie_handle_seconds_bucket", (("le", "0.0025"), *slack))] == 1
    assert found[("coterie_handle_seconds_bucket", (("le", "0.005"), *slack))] == 2
    # two apps never share counters
    assert ("coterie_commands_total", roll) not in samples(Metrics().render().decode())


async def test_healthz_and_metrics_of_a_running_slack_worker(monkeypatch, session):
    for name, value in SLACK_ENV.items():
        monkeypatch.setenv(name, value)
    async with FakeSlack() as fake:
        config = Config.model_validate(
            {
                "plugins": {"enable": ["revised", "slack"]},
                "adapters": {"slack": settings_for(fake)},
                "limits": {"rate": {"enabled": False}},
            }
        )
        app = Coterie(config, dice=SeededDice(3))
        running = asyncio.create_task(app.run_adapters())
        try:
            async with OpsServer(app, host="127.0.0.1", port=0) as ops:
                await wait_until(lambda: app.metrics.adapter_running("slack"), "the adapter")
                status, body = await scrape(session, ops, "/healthz")
                assert status == 200, body
                health = await _json(session, ops)
                assert health["adapters"] == {"slack": "up"} and health["state"] == "ok"

                adapter = app.metrics.adapters["slack"]
                for text in ("!roll 5 6", "!roll 3", "!roll banana"):
                    assert await post_event(session, adapter, message_event(text)) == (200, "")
                await wait_until(lambda: len(fake.replies()) == 3, "three replies")

                status, text = await scrape(session, ops, "/metrics")
                assert status == 200
                found = samples(text)
                roll = (("command", "roll"), ("platform", "slack"))
                assert found[("coterie_commands_total", roll)] == 3
                assert found[("coterie_command_errors_total", roll)] == 1
                assert found[("coterie_handle_seconds_count", (("platform", "slack"),))] == 3
                assert found[("coterie_adapter_up", (("adapter", "slack"),))] == 1
                assert found[("coterie_adapter_starts_total", (("adapter", "slack"),))] == 1
                assert found[("coterie_adapter_restarts_total", (("adapter", "slack"),))] == 0

                # the adapter stops listening: unhealthy
                await adapter.stop()
                await wait_until(lambda: not app.metrics.adapter_running("slack"), "the stop")
                status, body = await scrape(session, ops, "/healthz")
                assert status == 503, body
                assert (await _json(session, ops))["adapters"] == {"slack": "down"}
        finally:
            running.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await running


async def _json(session: aiohttp.ClientSession, ops: OpsServer) -> dict[str, Any]:
    assert ops.address is not None
    host, port = ops.address
    async with session.get(f"http://{host}:{port}/healthz") as response:
        data: dict[str, Any] = await response.json()
        return data


async def test_an_unreachable_state_store_is_unhealthy(session):
    app = Coterie(Config.model_validate({"plugins": {"enable": ["revised"]}}), store=BrokenStore())
    async with OpsServer(app, host="127.0.0.1", port=0, adapters=[]) as ops:
        status, _ = await scrape(session, ops, "/healthz")
        assert status == 503
        assert (await _json(session, ops))["state"] == "error: OSError"
    healthy = Coterie(Config.model_validate({"plugins": {"enable": ["revised"]}}))
    async with OpsServer(healthy, host="127.0.0.1", port=0, adapters=[]) as ops:
        assert (await scrape(session, ops, "/healthz"))[0] == 200


async def test_adapter_restarts_are_counted(session):
    host = PluginHost()
    host.load(["revised"])
    host.register(CrashingPlugin(), "crashing")
    config = Config.model_validate(
        {"plugins": {"enable": ["revised"]}, "adapters": {"crashing": {"enabled": True}}}
    )
    app = Coterie(config, host=host)
    app.restart_delay = 0.01
    Crashing.runs = 0
    running = asyncio.create_task(app.run_adapters())
    try:
        await wait_until(lambda: Crashing.runs >= 3, "three crashes")
        async with OpsServer(app, host="127.0.0.1", port=0) as ops:
            found = samples((await scrape(session, ops, "/metrics"))[1])
            restarts = found[("coterie_adapter_restarts_total", (("adapter", "crashing"),))]
            starts = found[("coterie_adapter_starts_total", (("adapter", "crashing"),))]
            assert restarts >= 2 and starts == restarts + 1
    finally:
        running.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await running


async def test_the_ops_port_is_refused_with_a_friendly_error_when_taken():
    app = Coterie(Config.model_validate({"plugins": {"enable": ["revised"]}}))
    async with OpsServer(app, host="127.0.0.1", port=0, adapters=[]) as first:
        assert first.address is not None
        second = OpsServer(app, host="127.0.0.1", port=first.address[1], adapters=[])
        with pytest.raises(ConfigError, match=r"ops\.port: cannot listen on 127\.0\.0\.1:"):
            await second.start()


def test_ops_config_defaults_off_on_loopback_and_port_offset():
    config = parse_config({})
    assert not config.ops.enabled and config.ops.host == "127.0.0.1"
    with pytest.raises(ConfigError, match=r"ops\.port"):
        parse_config({"ops": {"port": 70000}})
    config = parse_config(
        {
            "ops": {"enabled": True, "port": 9464},
            "adapters": {
                "slack": {"enabled": True, "mode": "http", "port": 3000},
                "telegram": {"enabled": True, "mode": "webhook", "port": 8443},
                "console": {"enabled": False},
            },
        }
    )
    assert apply_port_offset(config, {"COTERIE_PORT_OFFSET": "2"}) == 2
    assert config.adapters["slack"]["port"] == 3002
    assert config.adapters["telegram"]["port"] == 8445
    assert "port" not in config.adapters["console"]
    assert apply_port_offset(config, {}) == 0
    with pytest.raises(ConfigError, match="COTERIE_PORT_OFFSET"):
        apply_port_offset(config, {"COTERIE_PORT_OFFSET": "two"})


def test_the_shipped_deploy_files_agree(root):
    """deploy/coterie.toml with COTERIE_PORT_OFFSET=1 and 2 gives the ports deploy/nginx.conf's
    upstreams name, and the config is valid."""
    import re

    from coterie.framework.config import load_config

    nginx = (root / "deploy" / "nginx.conf").read_text()
    upstreams = {
        name: [int(p) for p in re.findall(r"server 127\.0\.0\.1:(\d+)", body)]
        for name, body in re.findall(r"upstream (\w+) \{(.*?)\}", nginx, re.S)
    }
    slack, telegram = [], []
    for offset in (1, 2):
        config = load_config(root / "deploy" / "coterie.toml")
        assert config.ops.enabled and config.ops.host == "127.0.0.1"
        apply_port_offset(config, {"COTERIE_PORT_OFFSET": str(offset)})
        slack.append(config.adapters["slack"]["port"])
        telegram.append(config.adapters["telegram"]["port"])
        assert (
            config.adapters["slack"]["host"] == config.adapters["telegram"]["host"] == ("127.0.0.1")
        )
    assert upstreams == {"coterie_slack": slack, "coterie_telegram": telegram}
    unit = (root / "deploy" / "coterie@.service").read_text()
    assert "Environment=COTERIE_PORT_OFFSET=%i" in unit and "KillSignal=SIGINT" in unit


def test_prometheus_client_is_imported_only_to_render():
    """Counting needs no prometheus_client (start-up and the command path stay lighter); the
    first render imports it, and its exposition carries the library's own Content-Type."""
    import subprocess
    import sys

    script = (
        "import asyncio, sys\n"
        "from coterie.dice.sources import SeededDice\n"
        "from coterie.framework.app import Coterie\n"
        "from coterie.framework.config import Config\n"
        "from coterie.framework.message import Message\n"
        "async def main():\n"
        "    app = Coterie(Config(), dice=SeededDice(1))\n"
        "    await app.start()\n"
        "    await app.handle(Message(platform='console', room='r', user='u', text='!roll 3 6'))\n"
        "    print('prometheus_client' in sys.modules)\n"
        "    text = app.metrics.render().decode()\n"
        "    print('prometheus_client' in sys.modules, 'coterie_commands_total{' in text)\n"
        "    from prometheus_client.exposition import CONTENT_TYPE_LATEST\n"
        "    print(app.metrics.content_type() == CONTENT_TYPE_LATEST)\n"
        "    await app.stop()\n"
        "asyncio.run(main())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:3] == ["False", "True True", "True"]
