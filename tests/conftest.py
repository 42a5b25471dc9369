"""Shared fixtures for the coterie tests.

* ``make_app(...)`` builds a :class:`~coterie.app.Coterie` from a config with deterministic dice.
* ``say(app, text)`` sends one chat message through ``app.handle`` and returns the plain-text reply
  (``None`` when the bot ignores the message); ``send`` returns the :class:`Reply` itself.
* :class:`RecordingDice` wraps any dice source and counts ``roll()`` calls, to prove that nothing
  was rolled (e.g. on an error); the ``recording_dice`` fixture makes one.
* ``root`` is the repository root; ``coterie_cli`` the argv prefix of the installed CLI and
  ``cli_env`` an environment for running it (no ``COTERIE_CONFIG`` inherited).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from coterie.dice.sources import DiceSource, FixedDice, SeededDice
from coterie.framework.app import Coterie
from coterie.framework.config import Config, parse_config
from coterie.framework.message import Message
from coterie.render.elements import BR, Reply, italic
from coterie.render.encode import to_plain

# Property tests: no per-example deadline (CI machines are slow and shared), a bounded example
# count so the suite stays fast, and a fixed derandomised run in CI for reproducible failures.
settings.register_profile("coterie", deadline=None, max_examples=100)
settings.register_profile("ci", deadline=None, max_examples=100, derandomize=True)
settings.load_profile("ci" if os.environ.get("CI") else "coterie")

ROOT = Path(__file__).resolve().parents[1]
pytest_plugins = ["pg_fixture"]  # throwaway PostgreSQL; COTERIE_DATABASE_URL=memory:// by default


@pytest.fixture
def root() -> Path:
    """The repository root (where ``config/`` lives)."""
    return ROOT


class RecordingDice:
    """A :class:`~coterie.dice.DiceSource` that records every ``roll(count, sides)`` call and
    delegates to ``inner`` (default: ``SeededDice(0)``). ``calls`` lists ``(count, sides)``."""

    def __init__(self, inner: DiceSource | None = None) -> None:
        self.inner: DiceSource = inner if inner is not None else SeededDice(0)
        self.calls: list[tuple[int, int]] = []

    def roll(self, count: int, sides: int) -> list[int]:
        self.calls.append((count, sides))
        return self.inner.roll(count, sides)

    @property
    def rolls(self) -> int:
        """How many times ``roll`` was called."""
        return len(self.calls)


@pytest.fixture
def make_app() -> Callable[..., Coterie]:
    """A factory: ``make_app(config=None, *, dice=None, seed=0, faces=None, **tables)``.

    * ``config``: a ready :class:`Config`; otherwise one is built from ``tables`` (top-level
      config keys as plain dicts, e.g. ``limits={"max_dice": 10}``), with
      ``plugins.enable = ["revised"]`` unless ``plugins`` is given, so only the built-in rule set
      loads whatever else is installed.
    * dice: ``dice`` if given, else ``FixedDice(faces)`` if ``faces`` is given, else
      ``SeededDice(seed)``.
    """

    def factory(
        config: Config | None = None,
        *,
        dice: DiceSource | None = None,
        seed: int = 0,
        faces: Iterable[int] | None = None,
        **tables: Any,
    ) -> Coterie:
        if config is None:
            tables.setdefault("plugins", {"enable": ["revised"]})
            config = parse_config(tables, "test config")
        elif tables:
            raise TypeError("give either config or tables, not both")
        if dice is None:
            dice = FixedDice(faces) if faces is not None else SeededDice(seed)
        return Coterie(config, dice=dice)

    return factory


@pytest.fixture
def recording_dice() -> RecordingDice:
    """A :class:`RecordingDice` around ``SeededDice(0)``; pass it as ``make_app(dice=...)``."""
    return RecordingDice()


def without_roll_id(reply: Reply) -> Reply:
    """``reply`` without its roll-id footer (tested on its own in ``tests/test_play.py``), so
    that tests of a rule set's reply read only what the rule set wrote. Checks the footer first:
    a reply whose meta names a roll must end with it."""
    roll_id = reply.meta.get("roll_id")
    if roll_id:
        footer = [BR, italic(f"roll {roll_id}")]
        at = next((i for i in range(len(reply.body) - 1) if reply.body[i : i + 2] == footer), None)
        assert at is not None, f"no roll-id footer in {reply.body}"
        reply.body = reply.body[:at] + reply.body[at + 2 :]
    return reply


ROLL_ID_LINE = re.compile(r"roll [a-z2-9]{6}")


def drop_roll_ids(lines: list[str]) -> list[str]:
    """Chat output lines without the roll-id footers (there must be some)."""
    kept = [line for line in lines if not ROLL_ID_LINE.fullmatch(line.strip())]
    assert len(kept) < len(lines), "no roll-id footer in the output"
    return kept


async def _send(
    app: Coterie,
    text: str,
    *,
    user: str = "alice",
    room: str = "r1",
    platform: str = "test",
    addressed: bool = False,
) -> Reply | None:
    message = Message(platform=platform, room=room, user=user, text=text, addressed=addressed)
    reply = await app.handle(message)
    return None if reply is None else without_roll_id(reply)


async def _say(
    app: Coterie,
    text: str,
    *,
    user: str = "alice",
    room: str = "r1",
    platform: str = "test",
    addressed: bool = False,
) -> str | None:
    reply = await _send(app, text, user=user, room=room, platform=platform, addressed=addressed)
    return None if reply is None else to_plain(reply.body)


@pytest.fixture
def send() -> Callable[..., Awaitable[Reply | None]]:
    """``await send(app, text, user="alice", room="r1", platform="test", addressed=False)``:
    the :class:`Reply` of ``app.handle`` for that message (``None`` when ignored)."""
    return _send


@pytest.fixture
def say() -> Callable[..., Awaitable[str | None]]:
    """``await say(app, text, user="alice", room="r1", platform="test", addressed=False)``:
    the reply as plain text (:func:`coterie.encode.to_plain`), ``None`` when ignored."""
    return _say


@pytest.fixture
def coterie_cli() -> list[str]:
    """The argv prefix that runs the installed ``coterie`` script of this interpreter's
    environment (falls back to ``python -m coterie``)."""
    script = Path(sys.executable).with_name("coterie")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "coterie"]


@pytest.fixture
def cli_env() -> dict[str, str]:
    """Environment for CLI subprocesses: no ``COTERIE_CONFIG`` from the caller, UTF-8 output."""
    env = {k: v for k, v in os.environ.items() if k != "COTERIE_CONFIG"}
    env["PYTHONIOENCODING"] = "utf-8"
    return env


@pytest.fixture(autouse=True)
def _no_config_from_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """In-process CLI calls must not pick up a developer's ``COTERIE_CONFIG``, and without a
    config file write under the test's own directory, not the user's data directory."""
    monkeypatch.delenv("COTERIE_CONFIG", raising=False)
    monkeypatch.setenv("COTERIE_DATA_DIR", str(tmp_path / "user-data"))
