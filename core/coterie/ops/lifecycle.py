"""How the long-running commands (``coterie chat``, ``coterie run``) start and stop: the one start
line naming the store, Ctrl-C as a clean exit, and SIGINT/SIGTERM as a graceful stop."""

from __future__ import annotations

import asyncio
import contextlib
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
