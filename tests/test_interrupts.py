"""A Ctrl-C Python cannot raise (it lands in a finalizer: "Exception ignored in …") is still
heard: the chat does not start, the one clean line is written, nothing else. CI once saw the
chat start after a Ctrl-C sent while it was still starting."""

from __future__ import annotations

import gc
import signal
import sys
from collections.abc import Iterator

import pytest

from coterie.ops import interrupts
from coterie.ops.lifecycle import until_interrupted


@pytest.fixture
def ignored() -> Iterator[list[BaseException]]:
    """What Python reports as "Exception ignored in …" (``sys.unraisablehook``) meanwhile."""
    seen: list[BaseException] = []
    previous = sys.unraisablehook
    sys.unraisablehook = lambda unraisable: seen.append(unraisable.exc_value)
    try:
        yield seen
    finally:
        sys.unraisablehook = previous


@pytest.fixture
def installed(ignored: list[BaseException]) -> Iterator[None]:
    undo = interrupts.install()
    try:
        yield
    finally:
        undo()


class InterruptedWhileCollected:
    """An object whose finalizer is running when SIGINT arrives."""

    def __del__(self) -> None:
        signal.raise_signal(signal.SIGINT)  # the handler runs here, inside the finalizer


def a_ctrl_c_lands_in_a_finalizer() -> None:
    InterruptedWhileCollected()  # collected at once: its __del__ takes the KeyboardInterrupt
    gc.collect()


def test_a_ctrl_c_python_could_not_raise_stops_the_start_cleanly(installed, ignored, capsys):
    started = []

    async def chat() -> None:
        started.append(True)

    a_ctrl_c_lands_in_a_finalizer()  # no exception reaches us: Python could not raise it
    assert interrupts.pending()
    assert ignored == []  # and nothing was reported as ignored
    assert until_interrupted(chat) == 0
    assert started == []  # the chat never started
    assert capsys.readouterr().err == "coterie: interrupted, stopped cleanly\n"


def test_without_the_remembering_handler_the_interrupt_is_lost(ignored, capsys):
    """The control: with Python's own handler the Ctrl-C is reported as ignored and the chat
    runs as if nothing had been pressed."""
    started = []

    async def chat() -> None:
        started.append(True)

    a_ctrl_c_lands_in_a_finalizer()
    assert [type(e) for e in ignored] == [KeyboardInterrupt]
    assert not interrupts.pending()
    assert until_interrupted(chat) == 0
    assert started == [True]
    assert capsys.readouterr().err == ""


def test_an_ordinary_ctrl_c_still_raises(installed) -> None:
    with pytest.raises(KeyboardInterrupt):
        signal.raise_signal(signal.SIGINT)
    assert interrupts.pending()


def test_undo_restores_python_s_handler() -> None:
    undo = interrupts.install()
    assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    undo()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert not interrupts.pending()
