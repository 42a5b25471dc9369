"""``coterie.testing``: pytest fixtures for plugin authors (and coterie's own tests).

Installed with coterie as a pytest plugin (the ``pytest11`` entry point ``coterie``), so a plugin's
tests get these fixtures with no ``conftest.py``:

* ``coterie_table`` — a factory: ``coterie_table(plugins=..., faces=..., variant=..., **config)``
  builds a :class:`Table`, one app with chosen plugins and dice, to talk to as several users in
  several rooms;
* ``coterie_faces`` — a :class:`~coterie.dice.sources.ReplayDice`-like queue of faces to hand to
  a table (``coterie_table(dice=coterie_faces)``), fed between messages with ``give``.

A table's ``say`` is synchronous (it runs the app on the table's own event loop), so tests need no
asyncio plugin; inside ``async def`` tests use ``await table.asay(...)``. Replies come back as
:class:`Said`: plain text (``.text``), the element tree (``.reply``), and each platform's encoding
(``.encoded("slack")``: Slack mrkdwn, ``"telegram"``: Telegram HTML, ``"matrix"``: Matrix HTML,
``"console"``: ANSI) through the adapter's own encoder — found through the ``coterie`` entry
points, never imported by name, so this module depends on no adapter. The roll log is read with
:meth:`Table.rolls` and checked with :meth:`Table.assert_rolled`.

Layering: this module sits above ``coterie.ops`` (import-linter's ``core-layers`` contract) and
uses only the framework, the dice, the storage and the render packages.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import field
from typing import Any

import pytest

from coterie.dice.sources import DiceSource, ReplayDice, SeededDice
from coterie.errors import UsageError
from coterie.framework.adapter import Adapter
from coterie.framework.app import Coterie
from coterie.framework.config import Config, parse_config
from coterie.framework.message import Message
from coterie.framework.plugins import PluginHost, installed_plugins
from coterie.records import dataclass
from coterie.render.elements import Italic, LineBreak, Node, Reply, Text
from coterie.render.encode import to_plain
from coterie.storage.state import RollRecord

__all__ = ["FaceQueue", "Said", "Table", "adapter_class", "encode"]

#: the platform name of messages sent through a :class:`Table`
PLATFORM = "test"


class FaceQueue:
    """A dice source for tests: faces queued with :meth:`give` are served in order, across as
    many draws as the rules make (exploding dice, re-rolls); drawing more than was queued is a
    :class:`UsageError` naming how many were needed. :meth:`finish` refuses faces left over."""

    def __init__(self, faces: Iterable[int] = ()) -> None:
        self._faces: list[int] = list(faces)
        #: every face served so far
        self.served: list[int] = []

    def give(self, *faces: int) -> FaceQueue:
        """Queue more faces (returns the queue, to chain)."""
        self._faces.extend(faces)
        return self

    @property
    def remaining(self) -> int:
        return len(self._faces)

    def roll(self, count: int, sides: int) -> list[int]:
        replay = ReplayDice(self._faces)
        drawn = replay.roll(count, sides)  # the same errors as any replay
        del self._faces[:count]
        self.served.extend(drawn)
        return drawn

    def finish(self) -> None:
        if self._faces:
            raise UsageError(f"{len(self._faces)} queued face(s) were never rolled: {self._faces}")

    def __repr__(self) -> str:
        return f"FaceQueue({self._faces!r})"


def adapter_class(platform: str) -> type[Adapter]:
    """The adapter class of an installed ``coterie`` plugin named ``platform``, found through its
    entry point and ``coterie_adapters`` hook (no adapter is imported by name)."""
    entry_point = installed_plugins().get(platform)
    if entry_point is None:
        raise LookupError(f"no coterie plugin {platform!r} is installed")
    plugin = entry_point.load()
    hook = getattr(plugin, "coterie_adapters", None)
    for cls in hook() if callable(hook) else ():
        if isinstance(cls, type) and issubclass(cls, Adapter) and cls.name == platform:
            return cls
    raise LookupError(f"the coterie plugin {platform!r} provides no adapter {platform!r}")


def encode(body: Sequence[Node], platform: str) -> str:
    """``body`` as ``platform``'s adapter sends it (``plain`` is coterie's plain text)."""
    if platform == "plain":
        return to_plain(body)
    text = adapter_class(platform).encode_text(body)
    if text is None:
        raise LookupError(f"the {platform} adapter does not say how it encodes text")
    return text


def _without_footer(body: list[Node], roll_id: str | None) -> list[Node]:
    """``body`` without its ``roll ID`` footer line (when the reply names a roll)."""
    if not roll_id:
        return body
    for at in range(len(body) - 1):
        node, after = body[at], body[at + 1]
        if (
            isinstance(node, LineBreak)
            and isinstance(after, Italic)
            and after.children == (Text(f"roll {roll_id}"),)
        ):
            return body[:at] + body[at + 2 :]
    return body


@dataclass
class Said:
    """The bot's answer to one message of a :class:`Table`."""

    reply: Reply
    message: Message

    @property
    def roll_id(self) -> str | None:
        """The id of the roll in the roll log (``!log ID``), when the reply made a roll."""
        value = self.reply.meta.get("roll_id")
        return str(value) if value else None

    @property
    def body(self) -> list[Node]:
        """The reply's elements without the ``roll ID`` footer line."""
        return _without_footer(list(self.reply.body), self.roll_id)

    @property
    def text(self) -> str:
        """Plain text without the ``roll ID`` footer (so it does not change from run to run)."""
        return to_plain(self.body)

    @property
    def full_text(self) -> str:
        """Plain text of the whole reply, footer included."""
        return to_plain(self.reply.body)

    @property
    def lines(self) -> list[str]:
        return self.text.splitlines()

    @property
    def is_error(self) -> bool:
        return self.reply.is_error

    def encoded(self, platform: str, *, footer: bool = False) -> str:
        """The reply as ``platform``'s adapter encodes it: ``"slack"`` (mrkdwn), ``"telegram"``
        (HTML), ``"matrix"`` (HTML ``formatted_body``), ``"console"`` (ANSI), ``"plain"``."""
        return encode(self.reply.body if footer else self.body, platform)

    def __str__(self) -> str:
        return self.text


@dataclass
class Table:
    """One app to talk to in tests: messages as any user in any room, replies, the roll log."""

    app: Coterie
    #: the user who speaks when ``say`` names none
    user: str = "ana"
    #: the room spoken in when ``say`` names none
    room: str = "table"
    _runner: asyncio.Runner | None = field(default=None, repr=False)

    @property
    def dice(self) -> DiceSource:
        return self.app.dice

    def room_key(self, room: str | None = None) -> str:
        return f"{PLATFORM}:{room or self.room}"

    def message(
        self, text: str, *, user: str | None = None, room: str | None = None, **fields: Any
    ) -> Message:
        return Message(
            platform=PLATFORM, room=room or self.room, user=user or self.user, text=text, **fields
        )

    async def asend(
        self, text: str, *, user: str | None = None, room: str | None = None, **fields: Any
    ) -> Said | None:
        """Send one message; the answer, or ``None`` when the bot stays silent."""
        message = self.message(text, user=user, room=room, **fields)
        reply = await self.app.handle(message)
        return None if reply is None else Said(reply, message)

    async def asay(
        self, text: str, *, user: str | None = None, room: str | None = None, **fields: Any
    ) -> Said:
        """Send one message that the bot must answer."""
        said = await self.asend(text, user=user, room=room, **fields)
        if said is None:
            raise AssertionError(f"the bot did not answer {text!r}")
        return said

    def run(self, coroutine: Any) -> Any:
        """Run a coroutine on the table's event loop (``table.run(table.app.start())``)."""
        return self._run(coroutine)

    def _run(self, coroutine: Any) -> Any:
        if self._runner is None:
            self._runner = asyncio.Runner()
        return self._runner.run(coroutine)

    def send(
        self, text: str, *, user: str | None = None, room: str | None = None, **fields: Any
    ) -> Said | None:
        """:meth:`asend` from synchronous code (the table keeps its own event loop)."""
        return self._run(self.asend(text, user=user, room=room, **fields))  # type: ignore[no-any-return]

    def say(
        self, text: str, *, user: str | None = None, room: str | None = None, **fields: Any
    ) -> Said:
        """:meth:`asay` from synchronous code."""
        return self._run(self.asay(text, user=user, room=room, **fields))  # type: ignore[no-any-return]

    def conversation(
        self, lines: Iterable[tuple[str, str]], *, room: str | None = None
    ) -> list[Said | None]:
        """Several users in turn: ``[("ana", "!roll 5"), ("ben", "!roll 3")]``."""
        return [self.send(text, user=user, room=room) for user, text in lines]

    async def arolls(self, room: str | None = None, *, user: str | None = None) -> list[RollRecord]:
        """The room's roll log, oldest first: rolls and tracker changes (``record.kind``
        ``"tracker"``; ``record.is_roll`` tells them apart)."""
        records = await self.app.state.rolls(self.room_key(room), limit=None, user=user)
        return list(reversed(records))

    def rolls(self, room: str | None = None, *, user: str | None = None) -> list[RollRecord]:
        """:meth:`arolls` from synchronous code."""
        return self._run(self.arolls(room, user=user))  # type: ignore[no-any-return]

    def assert_rolled(
        self, *expected: Mapping[str, Any], room: str | None = None, user: str | None = None
    ) -> list[RollRecord]:
        """Check the room's roll log, oldest first: one mapping per roll, each with the
        :class:`~coterie.storage.state.RollRecord` fields to compare (``outcome``,
        ``successes``, ``faces``, ``user``, ``variant``, ``botch`` …; ``detail`` compares the
        keys given of the roll's JSON object)."""
        records = self.rolls(room, user=user)
        assert len(records) == len(expected), (
            f"{len(records)} roll(s) logged, {len(expected)} expected: "
            f"{[r.request for r in records]}"
        )
        for index, (record, wanted) in enumerate(zip(records, expected, strict=True)):
            got = record.as_json()
            for key, value in wanted.items():
                if key == "detail":
                    detail = {k: got["detail"].get(k) for k in value}
                    assert detail == dict(value), f"roll {index + 1} ({record.request}): {detail}"
                    continue
                assert key in got, f"a roll record has no field {key!r}"
                assert got[key] == value, (
                    f"roll {index + 1} ({record.request}): {key} is {got[key]!r}, not {value!r}"
                )
        return records

    def close(self) -> None:
        if self._runner is not None:
            self._runner.close()
            self._runner = None


def make_table(
    plugins: Iterable[str | tuple[str, object]] = ("revised",),
    *,
    faces: Iterable[int] | None = None,
    seed: int | str = 0,
    dice: DiceSource | None = None,
    variant: str | None = None,
    config: Config | None = None,
    user: str = "ana",
    room: str = "table",
    settings: Mapping[str, Mapping[str, Any]] | None = None,
    **tables: Any,
) -> Table:
    """A :class:`Table`.

    * ``plugins``: installed plugins by entry-point name (``"revised"``, ``"cofd"``), and
      ``(name, module)`` pairs for a plugin under test that is not installed (registered as its
      entry point would be). Only these load, whatever else is installed.
    * dice: ``dice`` if given; else a :class:`FaceQueue` of ``faces`` if given; else
      ``SeededDice(seed)``.
    * ``settings``: plugin settings tables, ``{"cofd": {"tail_bound": 1e-9}}`` (the config's
      ``[plugins.settings.NAME]``, checked against what the plugins declare).
    * ``variant``: the default rule set (``[defaults] variant``); ``tables``: other top-level
      config tables as dicts (``limits={"max_dice": 10}``); or a ready ``config``.
    """
    names: list[str] = []
    objects: list[tuple[str, object]] = []
    for plugin in plugins:
        if isinstance(plugin, str):
            names.append(plugin)
        else:
            objects.append(plugin)
    given = config is not None
    if config is None:
        tables = dict(tables)
        tables["plugins"] = {**tables.get("plugins", {}), "enable": names}
        if settings is not None:
            tables["plugins"]["settings"] = {k: dict(v) for k, v in settings.items()}
        if variant is not None:
            tables["defaults"] = {**tables.get("defaults", {}), "variant": variant}
        config = parse_config(tables, "coterie.testing config")
    elif tables or variant is not None:
        raise TypeError("give either config or config tables, not both")
    host = PluginHost()
    host.load(config.plugins.enable)
    for name, module in objects:
        host.register(module, name)
    if not given and variant is None and "variant" not in tables.get("defaults", {}):
        # the first rule set of the plugins given is the default (not necessarily "revised")
        offered = [v.name for _, found in host.call("coterie_variants") for v in found or ()]
        if offered and config.default_variant not in offered:
            tables["defaults"] = {**tables.get("defaults", {}), "variant": offered[0]}
            config = parse_config(tables, "coterie.testing config")
    if dice is None:
        dice = FaceQueue(faces) if faces is not None else SeededDice(seed)
    app = Coterie(config, host=host, dice=dice)
    problems = [f"{f.plugin}: {f.where}: {f.error}" for f in host.failures]
    if problems:
        raise AssertionError("plugin problems: " + "; ".join(problems))
    return Table(app, user=user, room=room)


@pytest.fixture
def coterie_table() -> Iterator[Callable[..., Table]]:
    """A factory of :class:`Table` (arguments of :func:`make_table`); tables are closed after
    the test."""
    made: list[Table] = []

    def factory(*args: Any, **kwargs: Any) -> Table:
        table = make_table(*args, **kwargs)
        made.append(table)
        return table

    yield factory
    for table in made:
        table.close()


@pytest.fixture
def coterie_faces() -> FaceQueue:
    """An empty :class:`FaceQueue`: ``coterie_table(dice=coterie_faces)``, then
    ``coterie_faces.give(10, 8, 3)`` before each roll."""
    return FaceQueue()
