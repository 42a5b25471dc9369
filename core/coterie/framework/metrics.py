"""Prometheus metrics of one bot process: what ``/metrics`` of the ops server shows
(:mod:`coterie.ops`, ``docs/deploy.md``).

:class:`Metrics` is created by every :class:`~coterie.app.Coterie` (``app.metrics``) with a
registry of its own, so two apps in one process (tests) never share counters. It records:

* ``coterie_commands_total{platform, command}`` — commands answered (rate-limited ones included);
* ``coterie_command_errors_total{platform, command}`` — of those, the ones answered with an error;
* ``coterie_handle_seconds{platform}`` — a histogram of :meth:`Coterie.handle`'s duration for
  commands;
* ``coterie_adapter_starts_total{adapter}`` and ``coterie_adapter_restarts_total{adapter}`` — an
  adapter (re)started by the supervisor; a restart follows a crash;
* ``coterie_adapter_up{adapter}`` — 1 while the adapter is running (connected or listening, for the
  adapters that say so), else 0.

Command names are the registered commands' names (or ``(unknown)``), so the label sets stay
bounded whatever users type. Recording costs a dictionary look-up and a few additions under a lock.
"""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

#: seconds; a roll takes well under a millisecond, a chart or a slow store up to seconds
LATENCY_BUCKETS = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
)

#: the ``Content-Type`` of :meth:`Metrics.render`'s text
CONTENT_TYPE = CONTENT_TYPE_LATEST


class Metrics:
    """The counters and histogram of one app (see the module docstring)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        self.commands = Counter(
            "coterie_commands",
            "Commands answered, by platform and command",
            ["platform", "command"],
            registry=self.registry,
        )
        self.errors = Counter(
            "coterie_command_errors",
            "Commands answered with an error reply, by platform and command",
            ["platform", "command"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "coterie_handle_seconds",
            "Time to answer one command (Coterie.handle), by platform",
            ["platform"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.starts = Counter(
            "coterie_adapter_starts",
            "Adapter starts by the supervisor",
            ["adapter"],
            registry=self.registry,
        )
        self.restarts = Counter(
            "coterie_adapter_restarts",
            "Adapter restarts after a crash",
            ["adapter"],
            registry=self.registry,
        )
        self.up = Gauge(
            "coterie_adapter_up",
            "1 while the adapter runs (connected or listening), else 0",
            ["adapter"],
            registry=self.registry,
        )
        self._children: dict[tuple[str, str], tuple[Any, Any, Any]] = {}
        #: the adapter object the supervisor runs now, by name
        self.adapters: dict[str, Any] = {}

    def observe(self, *, platform: str, command: str, seconds: float, error: bool) -> None:
        """Count one answered command and its duration."""
        children = self._children.get((platform, command))
        if children is None:
            children = (
                self.commands.labels(platform, command),
                self.errors.labels(platform, command),
                self.latency.labels(platform),
            )
            self._children[(platform, command)] = children
        total, errors, latency = children
        total.inc()
        if error:
            errors.inc()
        latency.observe(seconds)

    def adapter_started(self, name: str, adapter: Any) -> None:
        """The supervisor starts ``adapter`` (a restart when one ran before under ``name``)."""
        if name in self.adapters:
            self.restarts.labels(name).inc()
        else:
            self.restarts.labels(name)  # shown as 0 from the start
            self.up.labels(name).set_function(lambda: 1.0 if self.adapter_running(name) else 0.0)
        self.starts.labels(name).inc()
        self.adapters[name] = adapter

    def adapter_running(self, name: str) -> bool:
        """Whether the adapter last started under ``name`` runs: its ``ready`` event is set
        (Slack, Telegram, Matrix), or, for an adapter without one, it was started."""
        adapter = self.adapters.get(name)
        if adapter is None:
            return False
        ready = getattr(adapter, "ready", None)
        is_set = getattr(ready, "is_set", None)
        return bool(is_set()) if callable(is_set) else True

    def render(self) -> bytes:
        """The Prometheus text exposition of every metric."""
        return generate_latest(self.registry)
