"""What the command time limit (coterie.framework.guard) costs on the usual path: `!roll 7 6`
through ``Coterie.handle`` (built-in command, default in-memory store and in-process rate limiter)
with the guard, against the same app with the guard bypassed (the handler called as before the
time limit existed), their batches taking turns in one process so machine load hits both alike.

Run: .venv/bin/python bench/guard_overhead.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import BENCH_RATE, header

from coterie.framework.app import Coterie
from coterie.framework.config import Config
from coterie.framework.message import Message
from coterie.framework.replies import check_elements
from coterie.render.elements import Reply, Text

USERS = 100


def unguarded(app: Coterie) -> Coterie:
    """``app`` with the guard taken out of the message path (the code before it existed)."""

    async def call(command: Any, context: Any) -> Reply:
        result = command.handler(context)
        if inspect.isawaitable(result):
            result = await result
        reply = result if isinstance(result, Reply) else Reply(list(result))
        reply.body = [Text(node) if isinstance(node, str) else node for node in reply.body]
        check_elements(reply.body)
        return reply

    async def run(command: Any, context: Any, _call: Any) -> Reply:
        return await call(command, context)

    app.guard.run = run  # type: ignore[method-assign, assignment]
    return app


async def main(batch: int, repeats: int) -> None:
    config = Config.model_validate(
        {"plugins": {"enable": ["revised"]}, "limits": {"rate": BENCH_RATE}}
    )
    guarded, bare = Coterie(config), unguarded(Coterie(config))
    messages = [
        Message(platform="bench", room="r", user=f"u{i % USERS}", text="!roll 7 6")
        for i in range(batch)
    ]
    samples: dict[str, list[float]] = {"guarded": [], "bare": []}
    sides = [("bare", bare), ("guarded", guarded)]
    for round_ in range(repeats):
        for name, app in sides if round_ % 2 else sides[::-1]:
            start = time.perf_counter()
            for message in messages:
                await app.handle(message)
            samples[name].append((time.perf_counter() - start) / batch)
    ours, peer = statistics.median(samples["guarded"]), statistics.median(samples["bare"])
    print(header("guard overhead", f"median of {repeats} batches x {batch} calls, taking turns"))
    print(f"!roll 7 6 through Coterie.handle, with the guard:    {ours * 1e6:8.1f} µs")
    print(f"!roll 7 6 through Coterie.handle, guard bypassed:    {peer * 1e6:8.1f} µs")
    print(f"ratio guarded / bypassed: {ours / peer:.3f}x")
    await guarded.stop()
    await bare.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    asyncio.run(main(*((200, 5) if args.quick else (1000, 21))))
