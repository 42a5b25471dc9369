"""How the long-running commands (``coterie chat``, ``coterie run``) start and stop: the one start
line naming the store, Ctrl-C as a clean exit, and SIGINT/SIGTERM as a graceful stop."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import signal
import sys
from typing import TYPE_CHECKING, Any

from coterie.ops.interrupts import pending

if TYPE_CHECKING:
    from coterie.framework.config import Config


def describe_store(config: Config) -> str:
    """Which store the config's state is in, for the one start line."""
    from coterie.storage.migrate import describe_store as describe

    return describe(config.database_url())


#: net allocations between two collections of the youngest generation (CPython's default: 700)
YOUNG_GC_THRESHOLD = 10_000


def settle_memory() -> None:
    """Once a serving process is up: what start-up made (modules, plugins, the config, the
    store) is kept for good, so a full collection no longer walks it (:func:`gc.freeze`), and the
    youngest generation is collected every :data:`YOUNG_GC_THRESHOLD` net allocations instead of
    700. Sixteen messages in flight hold thousands of objects: at 700, each young collection
    walked them and moved the survivors to older generations, whose collections then came often
    and walked everything (a full one took ~0.1 s, stalling every message in flight). Measured
    with ``bench/throughput.py`` (Slack, 3000 commands): ~390 young and 2 full collections
    during the run became ~35 and none, and the time in the collector fell from ~0.17 to
    ~0.03 ms per command."""
    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_GC_THRESHOLD, older, oldest)


def until_interrupted(main: Any) -> int:
    """Run ``main()``; Ctrl-C ends it cleanly: one line, exit status 0.

    The line is written whenever SIGINT arrived, even when something on the way (a start-up step
    that outlives a cancellation) swallowed it and ``main()`` then ended on its own."""
    interrupted = False

    async def watched() -> None:
        nonlocal interrupted
        if pending():  # a Ctrl-C Python could not raise during the start: do not start
            return
        task = asyncio.current_task()

        def on_sigint() -> None:
            nonlocal interrupted
            interrupted = True
            if task is not None:
                task.cancel()

        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            asyncio.get_running_loop().add_signal_handler(signal.SIGINT, on_sigint)
        try:
            await main()
        except asyncio.CancelledError:
            if not interrupted:
                raise

    try:
        asyncio.run(watched())
    except KeyboardInterrupt:
        interrupted = True
    if interrupted or pending():
        sys.stderr.write("coterie: interrupted, stopped cleanly\n")
    return 0


def stop_on_signal(stopping: asyncio.Event, signum: int) -> None:
    if not stopping.is_set():  # a warning: it shows at every log level but ERROR
        logging.getLogger("coterie").warning(
            "%s: stopping (commands in flight are finished first)", signal.Signals(signum).name
        )
    stopping.set()
