"""Helpers the benchmarks share: the run's header, medians and percentiles, a process's CPU time,
and a config whose rate limits let a benchmark's thousands of commands through (the limiter
still runs)."""

from __future__ import annotations

import os
import platform
import statistics
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

#: ``[limits.rate]`` for benchmarks: the buckets still take a token per command, but hold enough
#: for a benchmark's load (users' buckets are spread over many user ids by the benchmarks)
BENCH_RATE: dict[str, Any] = {
    "user_burst": 10_000,
    "user_per_minute": 100_000,
    "room_burst": 100_000,
    "room_per_minute": 1_000_000,
}


def cpu_seconds(pid: int | None) -> float:
    """User + system CPU seconds of process ``pid`` so far (Linux ``/proc``; 0 elsewhere)."""
    if pid is None:
        return 0.0
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_model() -> str:
    """The processor's model name (from /proc/cpuinfo on Linux), else the machine type."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def header(title: str, detail: str = "") -> str:
    """``# title — date`` and ``# machine, cores, Python[, detail]`` lines for a run's output."""
    load = ""
    if hasattr(os, "getloadavg"):
        load = f", load average {os.getloadavg()[0]:.2f}"
    machine = (
        f"# {cpu_model()}, {os.cpu_count()} cores, Python {sys.version.split()[0]}, "
        f"{platform.system()} {platform.release()}{load}"
    )
    lines = [f"# {title} — {datetime.now(UTC):%Y-%m-%d %H:%M} UTC", machine]
    if detail:
        lines.append(f"# {detail}")
    return "\n".join(lines)


def percentile(values: Sequence[float], fraction: float) -> float:
    """The ``fraction`` quantile (0..1) of ``values``, nearest rank; 0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(fraction * len(ordered) + 0.5) - 1))
    return ordered[rank]


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else 0.0
