"""Prometheus metrics of one bot process: what ``/metrics`` of the ops server shows
(:mod:`coterie.ops`, ``docs/deploy.md``).

:class:`Metrics` is created by every :class:`~coterie.app.Coterie` (``app.metrics``) with
counters of its own (rendered through a registry made for each scrape), so two apps in one
process (tests) never share counters. It records:

* ``coterie_commands_total{platform, command}`` — commands answered (rate-limited ones included);
* ``coterie_command_errors_total{platform, command}`` — of those, the ones answered with an error;
* ``coterie_handle_seconds{platform}`` — a histogram of :meth:`Coterie.handle`'s duration for
  commands;
* ``coterie_adapter_starts_total{adapter}`` and ``coterie_adapter_restarts_total{adapter}`` — an
  adapter (re)started by the supervisor; a restart follows a crash;
* ``coterie_adapter_up{adapter}`` — 1 while the adapter is running (connected or listening, for the
  adapters that say so), else 0.

Command names are the registered commands' names (or ``(unknown)``), so the label sets stay
bounded whatever users type. Recording is plain counting in dictionaries (a look-up, two additions
and a bisect: no lock, the event loop is one thread); ``prometheus_client`` is imported only when
``/metrics`` is rendered, so a bot without the ops server never loads it.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator
from typing import Any

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


class _Latency:
    """One platform's latency histogram: a count per bucket (the last one is ``+Inf``)."""

    __slots__ = ("buckets", "total")

    def __init__(self) -> None:
        self.buckets = [0] * (len(LATENCY_BUCKETS) + 1)
        self.total = 0.0


class Metrics:
    """The counters and histogram of one app (see the module docstring)."""

    def __init__(self) -> None:
        #: commands answered and, of those, errors, by ``(platform, command)``
        self._commands: dict[tuple[str, str], list[int]] = {}
        self._latency: dict[str, _Latency] = {}
        self._starts: dict[str, int] = {}
        self._restarts: dict[str, int] = {}
        #: the adapter object the supervisor runs now, by name
        self.adapters: dict[str, Any] = {}

    def observe(self, *, platform: str, command: str, seconds: float, error: bool) -> None:
        """Count one answered command and its duration."""
        counts = self._commands.get((platform, command))
        if counts is None:
            counts = self._commands[(platform, command)] = [0, 0]
        counts[0] += 1
        if error:
            counts[1] += 1
        latency = self._latency.get(platform)
        if latency is None:
            latency = self._latency[platform] = _Latency()
        # ``le`` buckets: a duration equal to a bound counts in that bound's bucket
        latency.buckets[bisect_left(LATENCY_BUCKETS, seconds)] += 1
        latency.total += seconds

    def adapter_started(self, name: str, adapter: Any) -> None:
        """The supervisor starts ``adapter`` (a restart when one ran before under ``name``)."""
        if name in self.adapters:
            self._restarts[name] = self._restarts.get(name, 0) + 1
        else:
            self._restarts.setdefault(name, 0)  # shown as 0 from the start
        self._starts[name] = self._starts.get(name, 0) + 1
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

    def collect(self) -> Iterator[Any]:
        """The metric families as of now (a ``prometheus_client`` collector's ``collect``)."""
        from prometheus_client.core import (
            CounterMetricFamily,
            GaugeMetricFamily,
            HistogramMetricFamily,
        )

        commands = CounterMetricFamily(
            "coterie_commands",
            "Commands answered, by platform and command",
            labels=["platform", "command"],
        )
        errors = CounterMetricFamily(
            "coterie_command_errors",
            "Commands answered with an error reply, by platform and command",
            labels=["platform", "command"],
        )
        for (platform, command), (total, failed) in list(self._commands.items()):
            commands.add_metric([platform, command], total)
            errors.add_metric([platform, command], failed)
        latency = HistogramMetricFamily(
            "coterie_handle_seconds",
            "Time to answer one command (Coterie.handle), by platform",
            labels=["platform"],
        )
        for platform, histogram in list(self._latency.items()):
            cumulative, running = [], 0
            for bound, count in zip(
                (*LATENCY_BUCKETS, float("inf")), histogram.buckets, strict=True
            ):
                running += count
                cumulative.append((_bound(bound), running))
            latency.add_metric([platform], cumulative, histogram.total)
        starts = CounterMetricFamily(
            "coterie_adapter_starts", "Adapter starts by the supervisor", labels=["adapter"]
        )
        restarts = CounterMetricFamily(
            "coterie_adapter_restarts", "Adapter restarts after a crash", labels=["adapter"]
        )
        up = GaugeMetricFamily(
            "coterie_adapter_up",
            "1 while the adapter runs (connected or listening), else 0",
            labels=["adapter"],
        )
        for name in list(self.adapters):
            starts.add_metric([name], self._starts.get(name, 0))
            restarts.add_metric([name], self._restarts.get(name, 0))
            up.add_metric([name], 1.0 if self.adapter_running(name) else 0.0)
        yield from (commands, errors, latency, starts, restarts, up)

    def content_type(self) -> str:
        """The ``Content-Type`` of :meth:`render`'s text (``prometheus_client``'s own)."""
        from prometheus_client.exposition import CONTENT_TYPE_LATEST

        return str(CONTENT_TYPE_LATEST)

    def render(self) -> bytes:
        """The Prometheus text exposition of every metric."""
        from prometheus_client import CollectorRegistry
        from prometheus_client.exposition import generate_latest

        registry = CollectorRegistry(auto_describe=False)
        registry.register(self)
        return generate_latest(registry)


def _bound(bound: float) -> str:
    return "+Inf" if bound == float("inf") else repr(bound)
