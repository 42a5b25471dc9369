"""Ctrl-C during a start is never lost.

Python's own SIGINT handler raises ``KeyboardInterrupt`` wherever the main thread happens to be.
Inside a finalizer (``__del__``), a weakref or garbage-collector callback, Python cannot raise it:
it prints "Exception ignored in …" and carries on — so a Ctrl-C pressed while ``coterie chat`` was
still starting could be dropped, and the chat start anyway (a CI run caught exactly that).
:func:`install` (called first by the ``coterie`` command) keeps Python's behaviour but remembers
every SIGINT, and keeps quiet about one it could not raise; the long-running commands ask
:func:`pending` before they start and stop cleanly instead (:mod:`coterie.ops.lifecycle`)."""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

_seen = False


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    global _seen
    _seen = True
    raise KeyboardInterrupt


def _quiet_about_interrupts(previous: Callable[[Any], object]) -> Callable[[Any], None]:
    def hook(unraisable: Any) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt) and _seen:
            return  # remembered: the command stops at its next step
        previous(unraisable)

    return hook


def install() -> Callable[[], None]:
    """Remember SIGINT from now on (still raising ``KeyboardInterrupt`` as Python does); the
    function that undoes it (for tests)."""
    global _seen
    _seen = False
    old_handler = signal.getsignal(signal.SIGINT)
    old_hook = sys.unraisablehook
    if old_handler is signal.default_int_handler:
        signal.signal(signal.SIGINT, _on_sigint)
    sys.unraisablehook = _quiet_about_interrupts(old_hook)

    def undo() -> None:
        global _seen
        if signal.getsignal(signal.SIGINT) is _on_sigint:
            signal.signal(signal.SIGINT, old_handler)
        sys.unraisablehook = old_hook
        _seen = False

    return undo


def pending() -> bool:
    """Whether a SIGINT arrived since :func:`install`."""
    return _seen
