"""Exact odds benchmark: coterie's `Variant.odds` against the icepool models of the tests.

Both sides compute the same thing from scratch — the exact probability of every
``(outcome, successes)`` of a request — and the two answers are checked to agree before anything
is timed. coterie runs with its caches cleared before every repeat (cold), icepool with the
models' caches cleared. Medians of repeats; the repeats are bounded by a time budget per side.
Targets (issue 4): every request up to 100 dice under 10 ms; at least 100x faster than icepool for
pools of 15 dice and more.
Run: .venv/bin/python bench/odds.py   (the lead wires it into `make bench` as bench-odds)
"""

from __future__ import annotations

import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from fractions import Fraction
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import test_odds_icepool as models  # the icepool models of the tests
from coterie.dice import odds
from coterie.framework.grammar import parse, tokens
from coterie.framework.variant import RoomSettings, Variant
from coterie_laia.variant import LaiaVariant
from coterie_revised.variant import RevisedVariant
from coterie_v5.variant import V5Variant

#: at most this many repeats, and no new repeat once a side has spent this many seconds
REPEATS = 31
BUDGET = {"coterie": 2.0, "icepool": 20.0}
TARGET_MS = 10.0
TARGET_RATIO = 100.0

Table = dict[Any, Fraction]


def cases() -> list[tuple[str, int, Variant[Any, Any], str, Callable[[], Table]]]:
    """(label, dice, variant, chat words, icepool model) for each benchmarked request."""
    revised, v5, laia = RevisedVariant(), V5Variant(), LaiaVariant()
    out: list[tuple[str, int, Variant[Any, Any], str, Callable[[], Table]]] = []
    for pool in (10, 30, 100):
        out.append(
            (
                f"revised {pool} dice, difficulty 6",
                pool,
                revised,
                f"{pool} 6",
                partial(models.revised_model, pool, 6),
            )
        )
    for pool in (7, 15, 25):
        out.append(
            (
                f"v5 {pool} dice, Hunger 5, Difficulty 3",
                pool,
                v5,
                f"{pool} 5 3",
                partial(models.v5_model, pool - 5, 5, 3),
            )
        )
    for pool in (10, 30):
        out.append(
            (
                f"laia {pool} dice, difficulty 6, specialty",
                pool,
                laia,
                f"{pool} 6 spec",
                partial(models.laia_model, pool, 6, True),
            )
        )
    return out


def clear_icepool_models() -> None:
    for cached in (models.d10_counts, models.v5_counts, models.laia_model):
        cached.cache_clear()


def timed(run: Callable[[], object], clear: Callable[[], None], budget: float) -> list[float]:
    """Seconds per cold run, at most REPEATS of them, stopping once ``budget`` is spent."""
    samples: list[float] = []
    spent = 0.0
    while len(samples) < REPEATS and (not samples or spent < budget):
        clear()
        start = time.perf_counter()
        run()
        samples.append(time.perf_counter() - start)
        spent += samples[-1]
    return samples


def main() -> None:
    print(f"# exact odds benchmark — {datetime.now(UTC):%Y-%m-%d %H:%M} UTC")
    print(
        f"# {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"Python {sys.version.split()[0]}; cold caches; median of up to {REPEATS} runs "
        f"(coterie <= {BUDGET['coterie']:.0f} s, icepool <= {BUDGET['icepool']:.0f} s per request)"
    )
    print(f"{'request':<40} {'coterie':>11} {'icepool':>12} {'ratio':>9}  runs")
    missed: list[str] = []
    for label, dice, variant, words, model in cases():
        request = variant.build(parse(tokens(words), variant.grammar), RoomSettings(variant.name))
        ours = variant.odds(request).table
        theirs = model()
        zero = Fraction(0)
        worst = max(abs(ours.get(k, zero) - theirs.get(k, zero)) for k in set(ours) | set(theirs))
        assert worst <= 1e-9, f"{label}: coterie and icepool disagree by {float(worst)}"

        def ours_cold(variant: Variant[Any, Any] = variant, request: Any = request) -> Table:
            return variant.odds(request).table

        fast = timed(ours_cold, odds.clear_cache, BUDGET["coterie"])
        slow = timed(model, clear_icepool_models, BUDGET["icepool"])
        a, b = statistics.median(fast), statistics.median(slow)
        ratio = b / a
        print(
            f"{label:<40} {a * 1e3:8.3f} ms {b * 1e3:9.1f} ms {ratio:8.0f}x  "
            f"{len(fast)}/{len(slow)}"
        )
        if dice <= 100 and a * 1e3 > TARGET_MS:
            missed.append(f"{label}: {a * 1e3:.2f} ms > {TARGET_MS:.0f} ms")
        if dice >= 15 and ratio < TARGET_RATIO:
            missed.append(f"{label}: {ratio:.0f}x < {TARGET_RATIO:.0f}x")
    verdict = "every target met" if not missed else "targets missed: " + "; ".join(missed)
    print(
        f"# targets: <= {TARGET_MS:.0f} ms up to 100 dice, >= {TARGET_RATIO:.0f}x icepool "
        f"from 15 dice — {verdict}"
    )


if __name__ == "__main__":
    main()
