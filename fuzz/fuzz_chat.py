"""Long-running fuzzing of the chat path with atheris (libFuzzer): ``make fuzz``.

Each input is a short binary header and UTF-8 text (invalid bytes replaced)::

    byte 0   the room's rule set (index into RULE_SETS, modulo)
    byte 1   bit 0: the bot was addressed (mention, slash command, private chat)
             bits 1-2: which of four users speaks
             bits 4-5: how many messages (1-4) the text is split into, on newlines
    rest     the message text

Every input starts from an empty :class:`MemoryStore` and the same seeded dice, so a crash replays
exactly. For every message the harness checks the properties of issue #10: a reply, a clear error
or nothing; never an unhandled exception (no "something went wrong" reply, no plugin failure); an
error (or silence) rolls no dice and changes no state; every message is answered quickly; a reply
is never longer than the reply limit (plus its note).

Run it through ``make fuzz`` (``FUZZ_SECONDS=600 make fuzz``) or directly:
``.venv/bin/python fuzz/fuzz_chat.py -max_total_time=60 fuzz/corpus fuzz/seeds``.
Without atheris installed, ``check_input`` still works (the test suite replays the seeds with it).
"""

from __future__ import annotations

import asyncio
import copy
import importlib
import logging
import re
import sys
import time
import traceback
from pathlib import Path
from typing import Any

try:
    import atheris  # type: ignore[import-untyped, import-not-found, unused-ignore]
except ImportError:  # the test suite replays seeds without it
    atheris = None

RULE_SETS = ("revised", "v5", "d6", "laia", "crossover")
#: seconds one message may take (generous: instrumentation slows everything down)
MAX_SECONDS = 2.0
#: bytes of text the fuzzer may feed (the message-length limit cuts in well before)
MAX_INPUT = 8192
HERE = Path(__file__).resolve().parent


def _import_instrumented() -> None:
    """Import core and the rule-set plugins, instrumented for coverage when atheris is there."""
    modules = ["coterie.framework.app", "coterie.play", *(f"coterie_{name}" for name in RULE_SETS)]
    if atheris is None:
        for name in modules:
            importlib.import_module(name)
        return
    with atheris.instrument_imports(include=["coterie", *(f"coterie_{n}" for n in RULE_SETS)]):
        for name in modules:
            importlib.import_module(name)


_import_instrumented()

from coterie.dice.sources import SeededDice  # noqa: E402
from coterie.framework.app import Coterie  # noqa: E402  (imported above, instrumented)
from coterie.framework.config import Config  # noqa: E402
from coterie.framework.message import Message  # noqa: E402
from coterie.render.encode import to_plain  # noqa: E402
from coterie.storage.state import MemoryStore  # noqa: E402


class CountingDice(SeededDice):
    """Seeded dice that count how often they were asked for faces."""

    def __init__(self) -> None:
        super().__init__(7)
        self.calls = 0

    def roll(self, count: int, sides: int) -> list[int]:
        self.calls += 1
        return super().roll(count, sides)


class _Failures(logging.Handler):
    """Keeps every error logged while a message is handled: an unhandled exception in a command
    is logged by core with its traceback before the "something went wrong" reply."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


FAILURES = _Failures()

APPS: dict[str, Coterie] = {}
for _name in RULE_SETS:
    _config = Config.model_validate(
        {
            "plugins": {"enable": list(RULE_SETS)},
            "defaults": {"variant": _name},
            # the fuzzer sends thousands of commands a second from four users
            "limits": {"rate": {"enabled": False}},
        }
    )
    APPS[_name] = Coterie(_config, dice=CountingDice(), store=MemoryStore())
LOOP = asyncio.new_event_loop()


#: the error of a dice expression whose explosions or re-rolls took it past the dice limit
_GREW = re.compile(r"^⚠ that roll grew past [0-9]+ dice")


class PropertyViolation(AssertionError):
    """A message broke one of the harness's properties."""


def _snapshot(store: MemoryStore) -> Any:
    return copy.deepcopy(store._data), len(store._log)


def decode(data: bytes) -> tuple[str, bool, str, list[str]]:
    """The rule set, addressed flag, user and messages an input stands for."""
    variant = RULE_SETS[data[0] % len(RULE_SETS)] if data else RULE_SETS[0]
    flags = data[1] if len(data) > 1 else 0
    text = data[2:MAX_INPUT].decode("utf-8", errors="replace")
    count = ((flags >> 4) & 3) + 1
    messages = text.split("\n", count - 1) if count > 1 else [text]
    return variant, bool(flags & 1), f"user{(flags >> 1) & 3}", messages


def check_input(data: bytes) -> None:
    """Run one input through the chat path and check every property; raise on a violation."""
    variant, addressed, user, messages = decode(data)
    app = APPS[variant]
    store = MemoryStore()
    dice = CountingDice()
    app.state = store
    app.dice = dice
    app.host.failures.clear()
    limit = app.config.limits.max_reply_length
    logger = logging.getLogger("coterie")
    logger.addHandler(FAILURES)
    try:
        for text in messages:
            _check_message(app, store, dice, limit, text, user, addressed)
    finally:
        logger.removeHandler(FAILURES)


def _check_message(
    app: Coterie,
    store: MemoryStore,
    dice: CountingDice,
    limit: int,
    text: str,
    user: str,
    addressed: bool,
) -> None:
    message = Message(platform="fuzz", room="room", user=user, text=text, addressed=addressed)
    before, rolls = _snapshot(store), dice.calls
    FAILURES.records.clear()
    started = time.perf_counter()
    reply = LOOP.run_until_complete(app.handle(message))
    elapsed = time.perf_counter() - started
    if elapsed > MAX_SECONDS:
        raise PropertyViolation(f"{elapsed:.2f} s for {text!r}")
    if app.host.failures:
        raise PropertyViolation(f"a plugin hook failed: {list(app.host.failures)!r}")
    if reply is None:
        if dice.calls != rolls or _snapshot(store) != before:
            raise PropertyViolation(f"an ignored message rolled or changed state: {text!r}")
        return
    plain = to_plain(reply.body)
    if not plain.strip():
        raise PropertyViolation(f"an empty reply to {text!r}")
    if "something went wrong" in plain or FAILURES.records:
        record = FAILURES.records[0] if FAILURES.records else None
        cause = record.exc_info[1] if record and record.exc_info else None
        trace = "".join(traceback.format_exception(cause)) if cause else ""
        raise PropertyViolation(f"unhandled error for {text!r}: {plain}\n{trace}") from cause
    if "Traceback" in plain:
        raise PropertyViolation(f"a traceback in the reply to {text!r}")
    if len(plain) > limit + 100:
        raise PropertyViolation(f"a reply of {len(plain)} characters to {text!r}")
    if reply.is_error:
        if not plain.startswith("⚠ "):
            raise PropertyViolation(f"an error without its mark: {plain!r}")
        if dice.calls != rolls and not _GREW.search(plain):
            # (the one error that comes after dice were drawn: a dice expression whose rolled
            # faces added dice, exploding or re-rolled, past the limit; coterie.play.dice)
            raise PropertyViolation(f"an error rolled dice: {text!r}")
        if _snapshot(store) != before:
            raise PropertyViolation(f"an error changed state: {text!r}")


def test_one_input(data: bytes) -> None:
    """atheris entry point."""
    check_input(data)


# --- the seed corpus: every command's usage line, as written and with numbers filled in ---------

_PLACEHOLDER = re.compile(r"\b[A-Z][A-Z_]*\b")


def _concrete(usage: str) -> str:
    filled = _PLACEHOLDER.sub("6", usage)
    return re.sub(r"[\[\]]", "", filled.replace("|", " ")).replace("…", "")


def seed_texts(app: Coterie, variant: str) -> list[str]:
    """Usage lines of every command in a room on ``variant``, literal and filled in."""
    texts: list[str] = []
    for command in app.room_commands(variant):
        usages = [command.usage]
        if command.name == "roll":
            usages.append(app.variants[variant].grammar.usage)
        for usage in usages:
            texts += [usage, _concrete(usage)]
        texts.append(f"!help {command.name}")
    texts += ["!roll 7 6 # Wits + Finance", "!roll 5 8; 3 6; 2 4", "!roll 99999999999", "!rol 5"]
    return list(dict.fromkeys(texts))


def write_seeds(directory: Path) -> int:
    """Write the seed corpus; returns how many seeds there are."""
    directory.mkdir(parents=True, exist_ok=True)
    count = 0
    for index, variant in enumerate(RULE_SETS):
        for number, text in enumerate(seed_texts(APPS[variant], variant)):
            for flags in (0, 0x10):  # one message; the same text as the first of two
                body = text if flags == 0 else f"{text}\n!roll 3 6"
                (directory / f"{variant}-{number:03d}-{flags:02x}").write_bytes(
                    bytes([index, flags]) + body.encode()
                )
                count += 1
    return count


def write_dictionary(path: Path) -> int:
    """A libFuzzer dictionary of the words the chat knows (commands, options, Trait names)."""
    words: set[str] = {"!", "?", "#", ";", "vs", "+", "-", "99999999999"}
    for variant, app in APPS.items():
        words.update(name for command in app.room_commands(variant) for name in command.names)
        grammar = app.variants[variant].grammar
        words.update(grammar.vocabulary())
        if grammar.versus is not None:
            words.update(grammar.versus.vocabulary())
    lines = []
    for word in sorted(words):
        escaped = "".join(
            f"\\x{byte:02x}" if byte < 0x20 or byte > 0x7E or byte in b'"\\' else chr(byte)
            for byte in word.encode()
        )
        lines.append(f'"{escaped}"')
    path.write_text("\n".join(lines) + "\n", encoding="ascii")
    return len(lines)


def main() -> None:
    if atheris is None:
        sys.exit("atheris is not installed: `make fuzz` installs the fuzz extra")
    logging.getLogger("coterie").propagate = False  # the fuzzer's output stays readable
    write_seeds(HERE / "seeds")
    write_dictionary(HERE / "chat.dict")
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
