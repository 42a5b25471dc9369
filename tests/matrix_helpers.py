"""Helpers for the Matrix tests and the latency benchmark: real matrix-nio clients for the
players, the coterie bot built around :class:`~coterie_matrix.MatrixAdapter`, and a test-only
plugin with commands that reply with buttons, images, long texts or slowly.

:class:`Player` is a logged-in nio ``AsyncClient`` with its own encryption store. It syncs on
demand (:meth:`Player.sync`, doing the key maintenance nio's ``sync_forever`` would), records
every timeline event (decrypted where it can) and typing notice, and :meth:`Player.wait_for`
syncs until an event matches or a deadline passes. Every wait here is bounded.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import struct
import tempfile
import time
import zlib
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nio

import adapter_harness
from coterie import hookimpl
from coterie.dice.sources import FixedDice, SeededDice
from coterie.framework.app import Coterie
from coterie.framework.commands import Command, CommandContext
from coterie.framework.config import Config
from coterie.framework.plugins import PluginHost
from coterie.render.elements import BR, Actions, Bold, Button, Image, Node, Reply, Text
from coterie_matrix import MatrixAdapter
from matrix_synapse import Account, Synapse

log = logging.getLogger("tests.matrix")

#: how long any one wait in the tests may take
WAIT_SECONDS = 30.0
PASSWORD_ENV = "COTERIE_TEST_MATRIX_PASSWORD"
TOKEN_ENV = "COTERIE_TEST_MATRIX_TOKEN"
PASSPHRASE_ENV = "COTERIE_TEST_MATRIX_STORE_PASSPHRASE"
ENCRYPTION = {
    "type": "m.room.encryption",
    "state_key": "",
    "content": {"algorithm": "m.megolm.v1.aes-sha2"},
}


def png(width: int = 3, height: int = 2) -> bytes:
    """A valid RGB PNG of ``width`` x ``height`` red pixels."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


PNG = png()


class MatrixTestCommands:
    """A test-only plugin: replies with buttons, an image, exact text, many lines, or one that
    waits for ``gate`` (to watch the typing notice)."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.slow_started = asyncio.Event()

    @hookimpl
    def coterie_commands(self) -> list[Command]:
        return [
            Command("offer", "a reply with buttons", "!offer", handler=self.offer),
            Command("echo", "says its arguments back", "!echo TEXT", handler=self.echo),
            Command("say", "replies exactly its arguments", "!say TEXT", handler=self.say),
            Command("chart", "a reply with an image", "!chart", handler=self.chart),
            Command("slow", "answers once the test opens the gate", "!slow", handler=self.slow),
            Command("long", "a reply of N lines", "!long N", handler=self.long),
        ]

    def offer(self, ctx: CommandContext) -> Reply:
        buttons = (Button("Re-roll 3 failures", "!echo rerolled"), Button("Keep", "echo kept"))
        return Reply(
            [Text("Spend Willpower?"), BR, Actions(buttons)],
            meta={"roll_id": "abc234", "variant": "revised"},
        )

    def echo(self, ctx: CommandContext) -> list[Node]:
        return [Bold((Text(ctx.message.display_name),)), Text(f": {ctx.args}")]

    def say(self, ctx: CommandContext) -> list[Node]:
        return [Text(ctx.args)]

    def chart(self, ctx: CommandContext) -> list[Node]:
        return [Text("Odds of 5 dice:"), Image(PNG, "odds of 5 dice", "odds.png")]

    async def slow(self, ctx: CommandContext) -> list[Node]:
        self.slow_started.set()
        await asyncio.wait_for(self.gate.wait(), WAIT_SECONDS)
        return [Text("done waiting")]

    def long(self, ctx: CommandContext) -> list[Node]:
        count = int(ctx.args or "10")
        body: list[Node] = []
        for index in range(count):
            body += [Text(f"line {index:05d} <&> " + "x" * 40), BR]
        return body


def make_core(
    faces: list[int] | None = None,
    plugin: MatrixTestCommands | None = None,
    *,
    variants: tuple[str, ...] = ("revised",),
    **config: Any,
) -> Coterie:
    """A Coterie with the revised rules (or ``variants``, the first the default), the Matrix
    adapter and the test commands."""
    host = PluginHost()
    host.load([*variants, "matrix"])
    host.register(plugin or MatrixTestCommands(), "matrix-test")
    settings = Config.model_validate({"plugins": {"enable": [*variants, "matrix"]}, **config})
    return Coterie(settings, host=host, dice=FixedDice(faces) if faces else SeededDice(1))


def bot_settings(server: Synapse, bot: Account, store: Path, **overrides: Any) -> dict[str, Any]:
    """An ``[adapters.matrix]`` table for ``bot`` on ``server``: quick reconnects and typing."""
    return {
        "enabled": True,
        "homeserver": server.url,
        "user_id": bot.user_id,
        "password_env": PASSWORD_ENV,
        "access_token_env": TOKEN_ENV,
        "store_path": str(store),
        "reconnect_initial": 0.1,
        "reconnect_max": 0.5,
        "typing_delay": 0.2,
        "sync_timeout": 10,
        "request_timeout": 10,
        **overrides,
    }


def make_adapter(
    core: Coterie,
    server: Synapse,
    bot: Account,
    store: Path,
    *,
    token: bool = False,
    passphrase: str | None = None,
    **overrides: Any,
) -> MatrixAdapter:
    """The adapter logging in with the password (or the registration's access token), its key
    store encrypted with ``passphrase`` (nio's default when ``None``)."""
    environ = {TOKEN_ENV: bot.access_token} if token else {PASSWORD_ENV: bot.password}
    if passphrase is not None:
        environ[PASSPHRASE_ENV] = passphrase
    settings = bot_settings(server, bot, store, store_passphrase_env=PASSPHRASE_ENV, **overrides)
    return MatrixAdapter(core, settings, environ=environ)


def serving(adapter: MatrixAdapter) -> AbstractAsyncContextManager[MatrixAdapter]:
    """Run the adapter until the block ends; a crash or a hang fails the test."""
    return adapter_harness.serving(adapter, timeout=WAIT_SECONDS)


@dataclass
class Seen:
    """One timeline event a player saw."""

    room_id: str
    event: Any

    @property
    def source(self) -> dict[str, Any]:
        source: dict[str, Any] = self.event.source
        return source

    @property
    def type(self) -> str:
        return str(self.source.get("type"))

    @property
    def sender(self) -> str:
        return str(self.source.get("sender"))

    @property
    def event_id(self) -> str:
        return str(self.source.get("event_id"))

    @property
    def content(self) -> dict[str, Any]:
        content: dict[str, Any] = self.source.get("content") or {}
        return content

    @property
    def encrypted(self) -> bool:
        """Whether it arrived encrypted (and the player decrypted it)."""
        return bool(getattr(self.event, "decrypted", False))

    def replies_to(self, event_id: str) -> bool:
        relates = self.content.get("m.relates_to") or {}
        return (relates.get("m.in_reply_to") or {}).get("event_id") == event_id


@dataclass
class Player:
    """A test user on a real nio client, with its own key store."""

    server: Synapse
    account: Account
    store: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="coterie-player-")))
    events: list[Seen] = field(default_factory=list)
    typing: list[tuple[str, list[str]]] = field(default_factory=list)
    client: Any = None

    @property
    def user_id(self) -> str:
        return self.account.user_id

    async def start(self) -> Player:
        config = nio.AsyncClientConfig(max_timeouts=3, request_timeout=WAIT_SECONDS)
        self.client = nio.AsyncClient(
            self.server.url, self.user_id, store_path=str(self.store), config=config
        )
        self.client.restore_login(self.user_id, self.account.device_id, self.account.access_token)
        await self.sync()
        return self

    async def close(self) -> None:
        """Close the connection and remove the player's key store."""
        if self.client is not None:
            await self.client.close()
        shutil.rmtree(self.store, ignore_errors=True)

    async def sync(self, timeout_ms: int = 0) -> None:
        """One sync (recording what it brings) and the key maintenance after it."""
        client = self.client
        response = await client.sync(timeout=timeout_ms, full_state=client.next_batch is None)
        assert isinstance(response, nio.SyncResponse), response
        for room_id, info in response.rooms.join.items():
            self.events.extend(Seen(room_id, event) for event in info.timeline.events)
            for event in info.ephemeral:
                if isinstance(event, nio.TypingNoticeEvent):
                    self.typing.append((room_id, list(event.users)))
        if client.should_upload_keys:
            await client.keys_upload()
        if client.should_query_keys:
            await client.keys_query()
        if client.should_claim_keys:
            await client.keys_claim(client.get_users_for_key_claiming())
        await client.send_to_device_messages()

    async def wait_for(
        self, matches: Callable[[Seen], bool], what: str, *, timeout: float = WAIT_SECONDS
    ) -> Seen:
        """The first recorded event that ``matches``, syncing until one arrives."""
        deadline = time.monotonic() + timeout
        while True:
            for seen in self.events:
                if matches(seen):
                    return seen
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"{self.user_id} saw no {what} within {timeout:.0f} s")
            await self.sync(int(min(left, 1.0) * 1000))

    async def settle(self, seconds: float = 0.5) -> None:
        """Sync for a while, recording whatever else arrives."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            await self.sync(int(left * 1000))

    def replies(self, bot: str, event_id: str | None = None) -> list[Seen]:
        """The bot's messages (replies to ``event_id`` only, when given)."""
        return [
            s
            for s in self.events
            if s.sender == bot
            and s.type == "m.room.message"
            and (event_id is None or s.replies_to(event_id))
        ]

    async def wait_reply(self, bot: str, event_id: str, what: str = "reply") -> Seen:
        return await self.wait_for(
            lambda s: s.sender == bot and s.type == "m.room.message" and s.replies_to(event_id),
            f"{what} to {event_id}",
        )

    # --- rooms and messages -------------------------------------------------------------------

    async def create_room(
        self, *, invite: list[str], name: str | None = "game", encrypted: bool = False
    ) -> str:
        response = await self.client.room_create(
            name=name, invite=invite, initial_state=[ENCRYPTION] if encrypted else []
        )
        assert isinstance(response, nio.RoomCreateResponse), response
        await self.sync()
        return str(response.room_id)

    async def invite(self, room_id: str, user_id: str) -> None:
        response = await self.client.room_invite(room_id, user_id)
        assert isinstance(response, nio.RoomInviteResponse), response

    async def join(self, room_id: str) -> None:
        response = await self.client.join(room_id)
        assert isinstance(response, nio.JoinResponse), response
        await self.sync()

    async def wait_joined(self, room_id: str, user_id: str) -> None:
        """Until ``user_id`` has joined ``room_id`` (as this player sees it)."""
        await self.wait_for(
            lambda s: (
                s.room_id == room_id
                and s.type == "m.room.member"
                and s.source.get("state_key") == user_id
                and s.content.get("membership") == "join"
            ),
            f"{user_id} joining {room_id}",
        )

    async def send(
        self, room_id: str, content: dict[str, Any], event_type: str = "m.room.message"
    ) -> str:
        response = await self.client.room_send(
            room_id, event_type, content, ignore_unverified_devices=True
        )
        assert isinstance(response, nio.RoomSendResponse), response
        return str(response.event_id)

    async def say(self, room_id: str, body: str, **extra: Any) -> str:
        return await self.send(room_id, {"msgtype": "m.text", "body": body, **extra})

    async def react(self, room_id: str, event_id: str, key: str) -> str:
        relates = {"rel_type": "m.annotation", "event_id": event_id, "key": key}
        return await self.send(room_id, {"m.relates_to": relates}, "m.reaction")

    async def download(self, mxc: str) -> bytes:
        response = await self.client.download(mxc=mxc)
        assert isinstance(response, nio.DownloadResponse), response
        return bytes(response.body)


async def start_player(server: Synapse, localpart: str | None = None) -> Player:
    account = await asyncio.to_thread(server.register, localpart)
    return await Player(server, account).start()


async def room_history(player: Player, room: str) -> list[dict[str, Any]]:
    """Every event of ``room`` (oldest first), read back with /messages: a player's own syncs
    skip events when many arrive at once (limited timelines), the history does not."""
    await player.sync()
    token = player.client.next_batch
    events: list[dict[str, Any]] = []
    while True:
        page = await player.client.room_messages(room, start=token, limit=100)
        assert isinstance(page, nio.RoomMessagesResponse), page
        events.extend(event.source for event in page.chunk)
        if not page.chunk or not page.end:
            return list(reversed(events))
        token = page.end


def answers_to(history: list[dict[str, Any]], bot: str) -> dict[str, int]:
    """How many replies the bot sent to each event."""
    counts: dict[str, int] = {}
    for event in history:
        if event.get("sender") == bot and event.get("type") == "m.room.message":
            relates = (event.get("content") or {}).get("m.relates_to") or {}
            target = (relates.get("m.in_reply_to") or {}).get("event_id")
            if target:
                counts[target] = counts.get(target, 0) + 1
    return counts
