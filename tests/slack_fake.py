"""A recording fake of Slack for the Slack adapter tests, on 127.0.0.1 only.

:class:`FakeSlack` is one aiohttp server on a free loopback port that plays every part of Slack
the adapter talks to:

* the Web API under ``/api/METHOD`` (``auth.test``, ``users.info``, ``chat.postMessage``,
  ``chat.postEphemeral``, ``conversations.open``, ``conversations.history``,
  ``conversations.replies``, ``files.getUploadURLExternal``, ``files.completeUploadExternal``,
  ``apps.connections.open``): each call is recorded as a :class:`Call` with its parameters (JSON
  or form body, query string) and the token it was made with; a wrong token gets
  ``invalid_auth``. ``fail_next(method, …)`` queues scripted failures (e.g. 429 ``ratelimited``
  with Retry-After);
* each channel's messages, as Slack keeps them: what the bot posted (with its message
  ``metadata``, echoed in ``chat.postMessage``'s answer) and the players' messages a test
  declares with :meth:`FakeSlack.user_posted`. ``conversations.history`` (top-level messages,
  newest first) and ``conversations.replies`` (a thread: its parent, then the replies, oldest
  first) read them with Slack's parameters — ``oldest``/``latest``/``inclusive``, ``limit``
  (default 100, at most 999), ``cursor`` pagination through ``response_metadata.next_cursor``
  with ``has_more`` — and return ``metadata`` only with ``include_all_metadata``. A bot token
  without the channel type's ``*:history`` scope (:attr:`FakeSlack.scopes`) gets
  ``missing_scope`` with ``needed``/``provided``, as Slack answers;
* the file upload URLs ``files.getUploadURLExternal`` hands out (``/upload/ID``, bytes recorded);
* ``response_url`` endpoints (``/respond/NAME``; JSON bodies recorded as :class:`Posted`);
* the Socket Mode websocket (``/socket``) that ``apps.connections.open`` points to: it sends
  ``hello`` on connect, then whatever envelopes a test sends with :meth:`FakeSlack.send`, and
  records every acknowledgement the client sends back. :meth:`FakeSlack.drop` closes the socket.

Helpers build what Slack sends: Events API callbacks, slash command forms, ``block_actions``
payloads, Socket Mode envelopes, and the v0 request signature (:func:`signed_headers`).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import itertools
import json
import time
import urllib.parse
from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import WSMsgType, web

import adapter_harness
from coterie import hookimpl
from coterie.dice.sources import FixedDice, SeededDice
from coterie.framework.app import Coterie
from coterie.framework.commands import Command, CommandContext
from coterie.framework.config import Config
from coterie.framework.plugins import PluginHost
from coterie.render.elements import Actions, Bold, Button, Image, Node, Reply, Text
from coterie_slack import SlackAdapter

LOOPBACK = "127.0.0.1"
BOT_TOKEN = "xoxb-1-coterie-test"
APP_TOKEN = "xapp-1-A0COTERIE-1-coterie-test"
SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
TEAM = "T0COTERIE"
APP_ID = "A0COTERIE"
BOT_USER = "U0BOT"
BOT_ID = "B0BOT"
#: the players, with the display names ``users.info`` reports
USERS = {
    "U0LYNN": {"name": "lynn", "profile": {"display_name": "Lynn", "real_name": "Lynn Doe"}},
    "U0MARK": {"name": "mark", "profile": {"display_name": "", "real_name": "Mark Roe"}},
}
LYNN, MARK = "U0LYNN", "U0MARK"
CHANNEL = "C0GAME"
WAIT_SECONDS = 10.0
#: the bot scopes of config/slack-manifest.yml
BOT_SCOPES = (
    "chat:write",
    "commands",
    "app_mentions:read",
    "channels:history",
    "groups:history",
    "im:history",
    "mpim:history",
    "im:write",
    "files:write",
    "users:read",
)
#: the history scope Slack needs to read a conversation, by the first letter of its id
HISTORY_SCOPE = {"C": "channels:history", "G": "groups:history", "D": "im:history"}


@dataclass
class Call:
    """One Web API call as the fake received it."""

    method: str
    params: dict[str, Any]
    token: str
    status: int = 200
    error: str | None = None
    #: what the fake answered
    result: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == 200 and self.error is None


@dataclass
class Posted:
    """One POST to a ``response_url``."""

    name: str
    body: dict[str, Any]


@dataclass
class Failure:
    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


class FakeSlack:
    """The fake; ``async with FakeSlack() as slack:`` starts and stops it."""

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.posted: list[Posted] = []
        self.uploads: dict[str, bytes] = {}
        #: every JSON frame a Socket Mode client sent (its acknowledgements)
        self.acks: list[dict[str, Any]] = []
        #: websocket connections accepted so far
        self.connections = 0
        self.users: dict[str, dict[str, Any]] = {k: dict(v, id=k) for k, v in USERS.items()}
        self._failures: dict[str, list[Failure]] = {}
        self._socket: web.WebSocketResponse | None = None
        self._counter = itertools.count(1)
        #: each channel's messages (bot and players, top-level and thread replies), oldest first
        self.history: dict[str, list[dict[str, Any]]] = {}
        #: the bot token's scopes (take ``channels:history`` away to see ``missing_scope``)
        self.scopes: set[str] = set(BOT_SCOPES)
        self._last_ts = 0.0
        self._changed = asyncio.Condition()
        self._runner: web.AppRunner | None = None
        self.port = 0

    # --- lifecycle -------------------------------------------------------------------------------

    async def __aenter__(self) -> FakeSlack:
        app = web.Application()
        app.router.add_route("*", "/api/{method}", self._api)
        app.router.add_post("/upload/{file_id}", self._upload)
        app.router.add_post("/respond/{name}", self._respond)
        app.router.add_get("/socket", self._websocket)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, LOOPBACK, 0)
        await site.start()
        self.port = int(self._runner.addresses[0][1])
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._socket is not None:
            await self._socket.close()
        assert self._runner is not None
        await self._runner.cleanup()

    @property
    def base_url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}/"

    @property
    def api_url(self) -> str:
        return self.base_url + "api/"

    def response_url(self, name: str) -> str:
        return f"{self.base_url}respond/{name}"

    # --- what tests look at ----------------------------------------------------------------------

    def ok_calls(self, method: str) -> list[Call]:
        """Successful calls of ``method``."""
        return [c for c in self.calls if c.method == method and c.ok]

    def attempts(self, method: str) -> list[Call]:
        """Every call of ``method``, failed ones included."""
        return [c for c in self.calls if c.method == method]

    def posted_to(self, name: str) -> list[dict[str, Any]]:
        return [p.body for p in self.posted if p.name == name]

    def replies(self) -> list[Call]:
        """Messages posted to channels (public and ephemeral)."""
        return [c for c in self.calls if c.ok and c.method.startswith("chat.post")]

    async def wait_for(self, predicate: Callable[[], bool], what: str = "") -> None:
        """Wait (at most ``WAIT_SECONDS``) until ``predicate()`` holds."""
        async with self._changed:
            try:
                await asyncio.wait_for(self._changed.wait_for(predicate), WAIT_SECONDS)
            except TimeoutError:
                raise AssertionError(f"timed out waiting for {what or predicate}") from None

    def user_posted(self, callback: Mapping[str, Any]) -> None:
        """A player's message (an Events API callback of :func:`message_event`) is now in its
        channel, as it is in Slack before Slack sends the event."""
        event = dict(callback["event"])
        event.pop("channel_type", None)
        event.pop("event_ts", None)
        event["type"] = "message"
        channel = str(event.pop("channel"))
        messages = self.history.setdefault(channel, [])
        if not any(m["ts"] == event["ts"] for m in messages):
            messages.append(event)
            messages.sort(key=lambda m: float(m["ts"]))

    def bot_messages(self, channel: str) -> list[dict[str, Any]]:
        """What the bot posted in ``channel`` (thread replies included), oldest first."""
        return [m for m in self.history.get(channel, []) if m.get("bot_id") == BOT_ID]

    def fail_next(
        self, method: str, status: int, error: str, headers: Mapping[str, str] | None = None
    ) -> None:
        """The next call of ``method`` gets ``status`` and ``{"ok": false, "error": error}``."""
        failure = Failure(status, {"ok": False, "error": error}, dict(headers or {}))
        self._failures.setdefault(method, []).append(failure)

    # --- Socket Mode -----------------------------------------------------------------------------

    @property
    def socket_open(self) -> bool:
        return self._socket is not None and not self._socket.closed

    async def send(self, envelope: Mapping[str, Any]) -> None:
        """Send one frame to the connected Socket Mode client."""
        assert self._socket is not None and not self._socket.closed, "no client connected"
        await self._socket.send_json(dict(envelope))

    async def acked(self, envelope_id: str) -> dict[str, Any]:
        """Wait for the client's acknowledgement of ``envelope_id`` and return it."""
        await self.wait_for(
            lambda: any(a.get("envelope_id") == envelope_id for a in self.acks),
            f"the ack of {envelope_id}",
        )
        return next(a for a in self.acks if a.get("envelope_id") == envelope_id)

    async def drop(self) -> None:
        """Close the websocket from the server side, as Slack does when it drops a connection."""
        assert self._socket is not None
        await self._socket.close(code=1001, message=b"going away")

    async def _websocket(self, request: web.Request) -> web.WebSocketResponse:
        socket = web.WebSocketResponse()
        await socket.prepare(request)
        async with self._changed:
            self._socket = socket
            self.connections += 1
            self._changed.notify_all()
        await socket.send_json(
            {
                "type": "hello",
                "num_connections": 1,
                "connection_info": {"app_id": APP_ID},
                "debug_info": {"host": "fake-slack", "approximate_connection_time": 3600},
            }
        )
        async for frame in socket:
            if frame.type == WSMsgType.TEXT:
                async with self._changed:
                    self.acks.append(json.loads(frame.data))
                    self._changed.notify_all()
        async with self._changed:
            self._changed.notify_all()
        return socket

    # --- HTTP endpoints --------------------------------------------------------------------------

    async def _record(self, call: Call) -> None:
        async with self._changed:
            self.calls.append(call)
            self._changed.notify_all()

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params: dict[str, Any] = dict(request.query)
        if request.content_type == "application/json":
            params.update(await request.json())
        elif request.body_exists:
            params.update({k: v for k, v in (await request.post()).items() if isinstance(v, str)})
        token = request.headers.get("Authorization", "").removeprefix("Bearer ")
        queued = self._failures.get(method)
        if queued:
            failure = queued.pop(0)
            await self._record(Call(method, params, token, failure.status, failure.body["error"]))
            return web.json_response(failure.body, status=failure.status, headers=failure.headers)
        expected = APP_TOKEN if method == "apps.connections.open" else BOT_TOKEN
        body = self._answer(method, params) if token == expected else _error("invalid_auth")
        await self._record(Call(method, params, token, error=body.get("error"), result=body))
        return web.json_response(body)

    def _answer(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        number = next(self._counter)
        if method == "auth.test":
            return {
                "ok": True,
                "url": "https://coterie-test.slack.com/",
                "team": "Coterie Test",
                "user": "coterie",
                "team_id": TEAM,
                "user_id": BOT_USER,
                "bot_id": BOT_ID,
                "is_enterprise_install": False,
            }
        if method == "users.info":
            user = self.users.get(str(params.get("user")))
            return {"ok": True, "user": user} if user else _error("user_not_found")
        if method == "chat.postMessage":
            return self._post_message(params)
        if method in ("conversations.history", "conversations.replies"):
            return self._read(method, params)
        if method == "chat.postEphemeral":
            return {"ok": True, "message_ts": f"{1_700_000_000 + number}.000200"}
        if method == "conversations.open":  # a direct-message channel with one user
            user = str(params.get("users", ""))
            if user not in self.users:
                return _error("user_not_found")
            return {"ok": True, "channel": {"id": f"D{user}"}}
        if method == "files.getUploadURLExternal":
            file_id = f"F{number:04d}"
            upload_url = f"{self.base_url}upload/{file_id}"
            return {"ok": True, "file_id": file_id, "upload_url": upload_url}
        if method == "files.completeUploadExternal":
            files = json.loads(params["files"]) if isinstance(params.get("files"), str) else []
            return {"ok": True, "files": [{"id": f["id"], "title": f.get("title")} for f in files]}
        if method == "apps.connections.open":
            return {"ok": True, "url": f"ws://{LOOPBACK}:{self.port}/socket?ticket={number}"}
        return _error("unknown_method")

    def _next_ts(self) -> str:
        """A message ts as Slack makes them: the time of posting, unique in the workspace."""
        self._last_ts = max(time.time(), self._last_ts + 0.000001)
        return f"{self._last_ts:.6f}"

    def _post_message(self, params: dict[str, Any]) -> dict[str, Any]:
        channel = params.get("channel")
        if not isinstance(channel, str) or not channel:
            return _error("channel_not_found")
        metadata = params.get("metadata")
        if isinstance(metadata, str):  # a form-encoded call sends it as JSON text
            try:
                metadata = json.loads(metadata)
            except ValueError:
                return _error("invalid_metadata_format")
        if metadata is not None and not (
            isinstance(metadata, dict)
            and isinstance(metadata.get("event_type"), str)
            and isinstance(metadata.get("event_payload"), dict)
        ):
            return _error("invalid_metadata_schema")
        ts = self._next_ts()
        message: dict[str, Any] = {
            "type": "message",
            "user": BOT_USER,
            "bot_id": BOT_ID,
            "app_id": APP_ID,
            "team": TEAM,
            "text": params.get("text"),
            "ts": ts,
        }
        if params.get("blocks"):
            message["blocks"] = params["blocks"]
        thread_ts = params.get("thread_ts")
        if isinstance(thread_ts, str) and thread_ts:
            message["thread_ts"] = thread_ts
            message["parent_user_id"] = next(
                (m.get("user") for m in self.history.get(channel, []) if m["ts"] == thread_ts),
                None,
            )
        if metadata is not None:
            message["metadata"] = {
                "event_type": metadata["event_type"],
                "event_payload": metadata["event_payload"],
            }
        self.history.setdefault(channel, []).append(message)
        return {"ok": True, "channel": channel, "ts": ts, "message": message}

    def _read(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """``conversations.history`` and ``conversations.replies``, as Slack answers them."""
        channel = params.get("channel")
        if not isinstance(channel, str) or not channel:
            return _error("channel_not_found")
        needed = HISTORY_SCOPE.get(channel[0], "mpim:history")
        if needed not in self.scopes:
            return {
                **_error("missing_scope"),
                "needed": needed,
                "provided": ",".join(sorted(self.scopes)),
            }
        try:
            limit = min(999, max(1, int(params.get("limit") or 100)))
            oldest = float(params.get("oldest") or 0)
            latest = float(params.get("latest") or time.time() + 1)
        except ValueError:
            return _error("invalid_arguments")
        inclusive = _flag(params.get("inclusive"))
        everything = self.history.get(channel, [])
        if method == "conversations.history":
            # the channel's own timeline: threads show only their parent (and broadcasts)
            messages = [
                m
                for m in reversed(everything)
                if m.get("thread_ts") in (None, m["ts"]) or m.get("subtype") == "thread_broadcast"
            ]
            parent: dict[str, Any] | None = None
        else:
            ts = params.get("ts")
            parent = next((m for m in everything if m["ts"] == ts), None)
            thread = [m for m in everything if m.get("thread_ts") == ts and m["ts"] != ts]
            if parent is None and not thread:
                return _error("thread_not_found")
            messages = thread
        low = (lambda t: t >= oldest) if inclusive else (lambda t: t > oldest)
        high = (lambda t: t <= latest) if inclusive else (lambda t: t < latest)
        messages = [m for m in messages if low(float(m["ts"])) and high(float(m["ts"]))]
        start = 0
        cursor = params.get("cursor")
        if cursor:
            try:
                start = int(base64.b64decode(str(cursor)).decode().removeprefix("next:"))
            except ValueError:
                return _error("invalid_cursor")
        page = messages[start : start + limit]
        if parent is not None and start == 0:
            page = [parent, *page]  # a thread's first page starts with its parent
        with_metadata = _flag(params.get("include_all_metadata"))
        shown = [
            m if with_metadata else {k: v for k, v in m.items() if k != "metadata"} for m in page
        ]
        more = start + limit < len(messages)
        answer: dict[str, Any] = {"ok": True, "messages": shown, "has_more": more}
        if method == "conversations.history":
            answer.update({"pin_count": 0, "channel_actions_ts": None, "channel_actions_count": 0})
        next_cursor = base64.b64encode(f"next:{start + limit}".encode()).decode() if more else ""
        answer["response_metadata"] = {"next_cursor": next_cursor}
        return answer

    async def _upload(self, request: web.Request) -> web.Response:
        self.uploads[request.match_info["file_id"]] = await request.read()
        return web.Response(text=f"OK - {len(self.uploads[request.match_info['file_id']])}")

    async def _respond(self, request: web.Request) -> web.Response:
        posted = Posted(request.match_info["name"], await request.json())
        async with self._changed:
            self.posted.append(posted)
            self._changed.notify_all()
        return web.Response(text="ok")


def _error(code: str) -> dict[str, Any]:
    return {"ok": False, "error": code}


def _flag(value: Any) -> bool:
    """A boolean argument as Slack reads it (slack-sdk sends ``1``/``0`` in query strings)."""
    return value is True or str(value).lower() in ("1", "true")


# --- what Slack sends --------------------------------------------------------------------------

_ids = itertools.count(1)


def next_id(prefix: str) -> str:
    return f"{prefix}{next(_ids):06d}"


def message_event(
    text: str,
    *,
    user: str | None = LYNN,
    channel: str = CHANNEL,
    channel_type: str = "channel",
    thread_ts: str | None = None,
    event_type: str = "message",
    event_id: str | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """An Events API ``event_callback`` for a message (or ``app_mention``) event."""
    ts = fields.pop("ts", None) or f"{1_690_000_000 + next(_ids)}.000300"
    event: dict[str, Any] = {
        "type": event_type,
        "text": text,
        "ts": ts,
        "channel": channel,
        "event_ts": ts,
        "channel_type": channel_type,
        **fields,
    }
    if user is not None:
        event["user"] = user
    if thread_ts is not None:
        event["thread_ts"] = thread_ts
    if event_type == "app_mention":
        event.pop("channel_type")
    return {
        "token": "legacy-verification-token",
        "team_id": TEAM,
        "api_app_id": APP_ID,
        "event": event,
        "type": "event_callback",
        "event_id": event_id or next_id("Ev"),
        "event_time": int(float(ts)),
        "authorizations": [
            {"team_id": TEAM, "user_id": BOT_USER, "is_bot": True, "is_enterprise_install": False}
        ],
        "is_ext_shared_channel": False,
    }


def slash_command(
    command: str,
    text: str,
    *,
    response_url: str,
    user: str = LYNN,
    user_name: str = "lynn",
    channel: str = CHANNEL,
) -> dict[str, str]:
    """The form fields of a slash command request."""
    return {
        "token": "legacy-verification-token",
        "team_id": TEAM,
        "team_domain": "coterie-test",
        "channel_id": channel,
        "channel_name": "game",
        "user_id": user,
        "user_name": user_name,
        "command": command,
        "text": text,
        "api_app_id": APP_ID,
        "is_enterprise_install": "false",
        "response_url": response_url,
        "trigger_id": next_id("13345224609.738474920.") + "8f5a",
    }


def block_action(
    message: Mapping[str, Any],
    button: Mapping[str, Any],
    *,
    user: str,
    response_url: str,
    channel: str = CHANNEL,
) -> dict[str, Any]:
    """The ``block_actions`` payload of a click on ``button`` in the posted ``message`` (the
    parameters of the ``chat.postMessage`` call, plus its ``ts``)."""
    container: dict[str, Any] = {
        "type": "message",
        "message_ts": message["ts"],
        "channel_id": channel,
        "is_ephemeral": False,
    }
    if message.get("thread_ts"):
        container["thread_ts"] = message["thread_ts"]
    block_id = next(
        b["block_id"]
        for b in message["blocks"]
        if b["type"] == "actions" and button in b["elements"]
    )
    return {
        "type": "block_actions",
        "user": {"id": user, "username": user.lower(), "name": user.lower(), "team_id": TEAM},
        "api_app_id": APP_ID,
        "token": "legacy-verification-token",
        "container": container,
        "trigger_id": next_id("13345224609.738474920.") + "b7c1",
        "team": {"id": TEAM, "domain": "coterie-test"},
        "is_enterprise_install": False,
        "channel": {"id": channel, "name": "game"},
        "message": {
            "type": "message",
            "user": BOT_USER,
            "bot_id": BOT_ID,
            "ts": message["ts"],
            "text": message["text"],
            "blocks": message["blocks"],
        },
        "response_url": response_url,
        "actions": [
            {
                "type": "button",
                "action_id": button["action_id"],
                "block_id": block_id,
                "text": button["text"],
                "value": button["value"],
                "action_ts": f"{time.time():.6f}",
            }
        ],
    }


def envelope(kind: str, payload: Mapping[str, Any], **fields: Any) -> dict[str, Any]:
    """A Socket Mode envelope (``events_api``, ``slash_commands`` or ``interactive``)."""
    frame: dict[str, Any] = {
        "envelope_id": fields.pop("envelope_id", None) or next_id("env-"),
        "payload": dict(payload),
        "type": kind,
        "accepts_response_payload": kind != "events_api",
    }
    if kind == "events_api":
        frame["retry_attempt"] = fields.pop("retry_attempt", 0)
        frame["retry_reason"] = fields.pop("retry_reason", "")
    frame.update(fields)
    return frame


def signed_headers(
    body: str, *, secret: str = SIGNING_SECRET, timestamp: int | None = None
) -> dict[str, str]:
    """The headers Slack signs a request with: ``v0=`` HMAC-SHA256 of ``v0:TIMESTAMP:BODY``."""
    stamp = str(int(time.time()) if timestamp is None else timestamp)
    digest = hmac.new(secret.encode(), f"v0:{stamp}:{body}".encode(), hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": f"v0={digest}"}


def form_body(fields: Mapping[str, str]) -> str:
    return urllib.parse.urlencode(fields)


def payload_body(payload: Mapping[str, Any]) -> str:
    """An interactivity request body: the JSON payload as one form field."""
    return urllib.parse.urlencode({"payload": json.dumps(payload)})


# --- the bot under test --------------------------------------------------------------------------

#: the environment the tests give the adapter (variable names as in ``settings_for``)
ENV = {
    "COTERIE_TEST_SLACK_BOT": BOT_TOKEN,
    "COTERIE_TEST_SLACK_APP": APP_TOKEN,
    "COTERIE_TEST_SLACK_SIGNING": SIGNING_SECRET,
}
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(64))


class SlackTestCommands:
    """A test-only plugin: replies with buttons, an image, an ephemeral reply, and a command that
    waits for ``gate`` (to prove Slack is acknowledged before the answer is ready)."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()

    @hookimpl
    def coterie_commands(self) -> list[Command]:
        return [
            Command("offer", "a reply with buttons", "!offer", handler=self.offer),
            Command("echo", "says its arguments back", "!echo TEXT", handler=self.echo),
            Command("chart", "a reply with an image", "!chart", handler=self.chart),
            Command("secret", "a reply only the caller sees", "!secret", handler=self.secret),
            Command("slow", "answers once the test opens the gate", "!slow", handler=self.slow),
        ]

    def offer(self, ctx: CommandContext) -> Reply:
        buttons = (Button("Re-roll 3 failures", "!echo rerolled"), Button("Keep", "echo kept"))
        return Reply(
            [Text("Spend Willpower?"), Actions(buttons)],
            meta={"roll_id": "abc234", "variant": "revised"},
        )

    def echo(self, ctx: CommandContext) -> list[Node]:
        return [Bold((Text(ctx.message.display_name),)), Text(f": {ctx.args}")]

    def chart(self, ctx: CommandContext) -> list[Node]:
        return [Text("Odds of 5 dice:"), Image(PNG, "odds of 5 dice", "odds.png")]

    def secret(self, ctx: CommandContext) -> Reply:
        return Reply([Text("for your eyes only")], ephemeral=True)

    async def slow(self, ctx: CommandContext) -> list[Node]:
        await self.gate.wait()
        return [Text("done waiting")]


def make_core(
    faces: list[int] | None = None,
    plugin: SlackTestCommands | None = None,
    *,
    variants: tuple[str, ...] = ("revised",),
    **config: Any,
) -> Coterie:
    """A Coterie with the revised rules (or ``variants``, the first the default), the Slack
    adapter and the test commands; ``config`` adds tables to its configuration."""
    host = PluginHost()
    host.load([*variants, "slack"])
    host.register(plugin or SlackTestCommands(), "slack-test")
    config = Config.model_validate({"plugins": {"enable": [*variants, "slack"]}, **config})
    return Coterie(config, host=host, dice=FixedDice(faces) if faces else SeededDice(1))


def settings_for(fake: FakeSlack, **overrides: Any) -> dict[str, Any]:
    """An ``[adapters.slack]`` table pointing at the fake (HTTP mode on a free port)."""
    return {
        "enabled": True,
        "mode": "http",
        "port": 0,
        "api_url": fake.api_url,
        "bot_token_env": "COTERIE_TEST_SLACK_BOT",
        "app_token_env": "COTERIE_TEST_SLACK_APP",
        "signing_secret_env": "COTERIE_TEST_SLACK_SIGNING",
        "ping_interval": 1.0,
        "rate_limit_retries": 2,
        **overrides,
    }


def serving(adapter: SlackAdapter) -> AbstractAsyncContextManager[SlackAdapter]:
    """Run the adapter until the block ends; a crash or a hang fails the test."""
    return adapter_harness.serving(adapter, timeout=WAIT_SECONDS)


def section_text(blocks: list[dict[str, Any]]) -> str:
    """The mrkdwn of a message's section blocks, one block per line."""
    return "\n".join(b["text"]["text"] for b in blocks if b["type"] == "section")


def endpoint(adapter: SlackAdapter) -> str:
    assert adapter.address is not None
    host, port = adapter.address
    return f"http://{host}:{port}{adapter.options.path}"


async def post(
    session: aiohttp.ClientSession,
    adapter: SlackAdapter,
    body: str,
    *,
    content_type: str,
    sign: bool = True,
    timestamp: int | None = None,
    secret: str = SIGNING_SECRET,
    headers: Mapping[str, str] | None = None,
) -> tuple[int, str]:
    """POST ``body`` to the adapter as Slack would (signed unless ``sign`` is false)."""
    sent = {"Content-Type": content_type, **(headers or {})}
    if sign:
        sent.update(signed_headers(body, secret=secret, timestamp=timestamp))
    async with session.post(endpoint(adapter), data=body.encode(), headers=sent) as response:
        return response.status, await response.text()


async def post_event(
    session: aiohttp.ClientSession, adapter: SlackAdapter, event: Mapping[str, Any], **kw: Any
) -> tuple[int, str]:
    return await post(session, adapter, json.dumps(event), content_type="application/json", **kw)


async def post_command(
    session: aiohttp.ClientSession, adapter: SlackAdapter, fields: Mapping[str, str]
) -> tuple[int, str]:
    return await post(
        session, adapter, form_body(fields), content_type="application/x-www-form-urlencoded"
    )


async def post_action(
    session: aiohttp.ClientSession, adapter: SlackAdapter, payload: Mapping[str, Any]
) -> tuple[int, str]:
    return await post(
        session, adapter, payload_body(payload), content_type="application/x-www-form-urlencoded"
    )


async def settle(adapter: SlackAdapter) -> None:
    """Wait until every delivery the adapter has acknowledged is answered."""
    assert adapter.bot is not None
    await adapter.bot.drain(WAIT_SECONDS)
