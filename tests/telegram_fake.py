"""A fake of the Telegram Bot API for the Telegram adapter tests, on 127.0.0.1 only.

:class:`FakeTelegram` is one aiohttp server on a free loopback port serving
``/bot<TOKEN>/<method>`` the way the Bot API does: parameters as a query string, a form,
``multipart/form-data`` (uploads) or JSON, objects in form fields as JSON; every answer is
``{"ok": true, "result": …}`` or ``{"ok": false, "error_code": …, "description": …}`` with the
HTTP status of the error code. It keeps chats (private, groups, supergroups with forum topics),
their messages, pending updates and the webhook, and checks what it is sent the way Telegram
documents and does:

* ``getMe``; ``getUpdates`` with ``offset`` confirmation, ``limit``, real long polling
  (``timeout``), ``allowed_updates``, 409 while a webhook is set or when a newer ``getUpdates``
  takes over; ``setWebhook`` (``url``, ``secret_token`` charset, ``max_connections``,
  ``allowed_updates``, ``drop_pending_updates``) after which updates are POSTed to the webhook
  with ``X-Telegram-Bot-Api-Secret-Token`` and re-sent until it answers 2xx;
  ``deleteWebhook``; ``getWebhookInfo``;
* ``sendMessage``: ``parse_mode=HTML`` parsed like Telegram's parser (supported tags, the four
  named escapes and numeric ones; an unsupported, unclosed or unmatched tag is
  ``400 Bad Request: can't parse entities: …`` with Telegram's wording and byte offset), the text
  limit of 4,096 UTF-16 units after parsing, an empty text refused, ``reply_parameters`` (and the
  older ``reply_to_message_id``) against the chat's messages, ``message_thread_id`` against the
  forum's topics (a reply to a topic message lands in that topic), ``reply_markup`` inline
  keyboards (``callback_data`` of 1-64 bytes), ``link_preview_options``;
* ``sendPhoto``: the ``photo`` upload (PNG or JPEG) or a file id, ``caption`` of at most 1,024
  characters after parsing, the same reply, topic and keyboard checks;
* ``answerCallbackQuery`` (only queries it issued, once each; ``text`` of at most 200
  characters), ``editMessageReplyMarkup`` (the bot's own messages; "message is not modified");
* ``setMyCommands``, ``getMyCommands``, ``deleteMyCommands`` per scope (names
  ``[a-z0-9_]{1,32}``, descriptions of 1-256 characters, at most 100 commands);
* a wrong token is ``401 Unauthorized``, an unknown method ``404 Not Found``.

Tests script failures with :meth:`FakeTelegram.fail_next` (e.g. ``429`` with ``retry_after``) and
:meth:`FakeTelegram.drop_next` (the connection is closed without an answer: a network error), and
play the users with :meth:`FakeTelegram.user_message`, :meth:`FakeTelegram.press` and
:meth:`FakeTelegram.migrate`.

The webhook URL must be HTTPS, as for Telegram; the fake plays the TLS reverse proxy in front of
the bot too: :attr:`FakeTelegram.proxies` maps the public URL to the bot's address on 127.0.0.1,
and nothing is ever posted anywhere else. An update the webhook does not accept is posted again
every 0.2 s, at most 25 times.

Deviations from Telegram, on purpose: uploads are checked by their PNG/JPEG signature only;
update ids start at 7001 and never jump; only ``HTML`` is implemented as a ``parse_mode``.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import itertools
import json
import re
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web

import adapter_harness
from coterie import hookimpl
from coterie.dice.sources import FixedDice, SeededDice
from coterie.framework.app import Coterie
from coterie.framework.commands import Command, CommandContext
from coterie.framework.config import Config
from coterie.framework.plugins import PluginHost
from coterie.render.elements import BR, Actions, Bold, Button, Image, Node, Reply, Text
from coterie.storage.state import StateStore
from coterie_telegram import TelegramAdapter

LOOPBACK = "127.0.0.1"
BOT_TOKEN = "4242424242:AAE-coterie-test-token_0123456789"
BOT_ID = 4242424242
BOT_USERNAME = "CoterieTestBot"
WAIT_SECONDS = 10.0
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(64))

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
MAX_TEXT = 4096
MAX_CAPTION = 1024
MAX_CALLBACK_TEXT = 200
#: how often one update is posted to a webhook that does not accept it
MAX_DELIVERIES = 25
UPDATE_TYPES = ("message", "edited_message", "callback_query", "channel_post", "my_chat_member")
#: what Telegram sends when ``allowed_updates`` was never given
DEFAULT_ALLOWED = ("message", "edited_message", "callback_query", "channel_post", "my_chat_member")


class ApiError(Exception):
    """An error answer: ``error_code`` (also the HTTP status) and ``description``."""

    def __init__(self, code: int, description: str, **parameters: Any) -> None:
        super().__init__(description)
        self.code = code
        self.description = description
        self.parameters = parameters


def bad_request(what: str) -> ApiError:
    return ApiError(400, f"Bad Request: {what}")


# --- Telegram's HTML parse mode ------------------------------------------------------------------

#: start tag → entity type (``span`` needs ``class="tg-spoiler"``; ``a`` needs ``href``)
_TAGS = {
    "b": "bold",
    "strong": "bold",
    "i": "italic",
    "em": "italic",
    "u": "underline",
    "ins": "underline",
    "s": "strikethrough",
    "strike": "strikethrough",
    "del": "strikethrough",
    "tg-spoiler": "spoiler",
    "span": "spoiler",
    "code": "code",
    "pre": "pre",
    "a": "text_link",
    "blockquote": "blockquote",
    "tg-emoji": "custom_emoji",
}
_NAMED = {"lt": "<", "gt": ">", "amp": "&", "quot": '"'}
_ENTITY = re.compile(r"&(?:#([0-9]{1,7})|#[xX]([0-9a-fA-F]{1,6})|([a-zA-Z]+));")
_ATTRIBUTE = re.compile(r"""\s*([a-zA-Z-]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>"']+)))?""")


def _u16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def parse_html(source: str) -> tuple[str, list[dict[str, Any]]]:
    """``(text, entities)`` as Telegram reads ``parse_mode=HTML``; offsets in UTF-16 units.
    Raises :class:`ApiError` 400 ``can't parse entities: …`` where Telegram does."""

    def fail(what: str) -> ApiError:
        return bad_request(f"can't parse entities: {what}")

    def offset(index: int) -> int:
        return len(source[:index].encode())

    out: list[str] = []
    entities: list[dict[str, Any]] = []
    stack: list[tuple[str, int, dict[str, str]]] = []
    position = 0  # UTF-16 length of the text so far
    i = 0
    while i < len(source):
        ch = source[i]
        if ch == "&":
            match = _ENTITY.match(source, i)
            if match is not None:
                decimal, hexadecimal, name = match.groups()
                value: str | None = None
                if decimal or hexadecimal:
                    code = int(decimal) if decimal else int(hexadecimal, 16)
                    value = chr(code) if 0 < code <= 0x10FFFF else None
                elif name in _NAMED:
                    value = _NAMED[name]
                if value is not None:
                    out.append(value)
                    position += _u16(value)
                    i = match.end()
                    continue
            out.append("&")  # not an escape Telegram knows: the & is text
            position += 1
            i += 1
            continue
        if ch != "<":
            out.append(ch)
            position += _u16(ch)
            i += 1
            continue
        begin = i
        i += 1
        if source.startswith("/", i):  # an end tag
            i += 1
            if not stack:
                raise fail(f"Unexpected end tag at byte offset {offset(begin)}")
            end = i
            while i < len(source) and not source[i].isspace() and source[i] != ">":
                i += 1
            name = source[end:i].lower()
            while i < len(source) and source[i].isspace():
                i += 1
            if i >= len(source) or source[i] != ">":
                raise fail(f"Unclosed end tag at byte offset {offset(begin)}")
            i += 1
            open_name, start, opened_with = stack.pop()
            if name and name != open_name:
                raise fail(
                    f"Unmatched end tag at byte offset {offset(begin)}, "
                    f'expected "</{open_name}>", found "</{name}>"'
                )
            entity = _entity(open_name, opened_with, start, position - start)
            if entity is not None:
                entities.append(entity)
            continue
        start_name = i
        while i < len(source) and not source[i].isspace() and source[i] != ">":
            i += 1
        name = source[start_name:i].lower()
        if name not in _TAGS:
            raise fail(f'Unsupported start tag "{name}" at byte offset {offset(begin)}')
        attributes: dict[str, str] = {}
        while i < len(source) and source[i] != ">":
            match = _ATTRIBUTE.match(source, i)
            if match is None or match.end() == i:
                raise fail(f"Unclosed start tag at byte offset {offset(begin)}")
            key = match.group(1).lower()
            attributes[key] = next((g for g in match.groups()[1:] if g is not None), "")
            i = match.end()
            while i < len(source) and source[i].isspace():
                i += 1
        if i >= len(source):
            raise fail(f"Unclosed start tag at byte offset {offset(begin)}")
        i += 1
        if name == "span" and attributes.get("class") != "tg-spoiler":
            raise fail('Tag "span" must have class "tg-spoiler"')
        stack.append((name, position, attributes))
    if stack:
        raise fail(f'Can\'t find end tag corresponding to start tag "{stack[-1][0]}"')
    entities.sort(key=lambda e: (e["offset"], -e["length"]))
    return "".join(out), entities


def _entity(
    name: str, attributes: Mapping[str, str], start: int, length: int
) -> dict[str, Any] | None:
    if length == 0:
        return None
    kind = _TAGS[name]
    entity: dict[str, Any] = {"type": kind, "offset": start, "length": length}
    if kind == "text_link":
        if not attributes.get("href"):
            return None
        entity["url"] = attributes["href"]
    if kind == "blockquote" and "expandable" in attributes:
        entity["type"] = "expandable_blockquote"
    if kind == "custom_emoji":
        entity["custom_emoji_id"] = attributes.get("emoji-id", "")
    return entity


# --- the server ----------------------------------------------------------------------------------


@dataclass
class Call:
    """One Bot API call as the fake received it."""

    method: str
    params: dict[str, Any]
    token: str
    files: dict[str, tuple[str, bytes]] = field(default_factory=dict)
    status: int = 200
    description: str | None = None
    result: Any = None
    at: float = field(default_factory=time.monotonic)

    @property
    def ok(self) -> bool:
        return self.status == 200


@dataclass
class Failure:
    code: int
    description: str
    parameters: dict[str, Any] = field(default_factory=dict)
    drop: bool = False
    #: carry the call out, then answer only after this many seconds (a client time-out)
    late: float = 0.0


@dataclass
class Delivery:
    """One POST of an update to the webhook."""

    update_id: int
    status: int | None
    error: str | None = None


class FakeTelegram:
    """The fake; ``async with FakeTelegram() as telegram:`` starts and stops it."""

    def __init__(self, *, token: str = BOT_TOKEN) -> None:
        self.token = token
        self.bot_user = {
            "id": BOT_ID,
            "is_bot": True,
            "first_name": "Coterie",
            "username": BOT_USERNAME,
            "can_join_groups": True,
            "can_read_all_group_messages": False,
            "supports_inline_queries": False,
        }
        self.calls: list[Call] = []
        self.chats: dict[int, dict[str, Any]] = {}
        self.users: dict[int, dict[str, Any]] = {}
        #: groups that became supergroups: old id → new id
        self.migrated: dict[int, int] = {}
        self.topics: dict[int, set[int]] = {}
        self.messages: dict[tuple[int, int], dict[str, Any]] = {}
        self.photos: dict[tuple[int, int], bytes] = {}
        self.commands: dict[str, list[dict[str, str]]] = {}
        self.pending: list[dict[str, Any]] = []
        self.webhook: dict[str, Any] | None = None
        self.deliveries: list[Delivery] = []
        #: public webhook URL → where the "reverse proxy" in front of the bot forwards it
        self.proxies: dict[str, str] = {}
        self.answers: dict[str, dict[str, Any] | None] = {}
        self.allowed_updates: tuple[str, ...] = DEFAULT_ALLOWED
        self._message_ids: dict[int, itertools.count[int]] = {}
        self._update_ids = itertools.count(7001)
        self._query_ids = itertools.count(9_000_000_001)
        self._failures: dict[str, list[Failure]] = {}
        self._changed = asyncio.Condition()
        self._poller = 0
        self._closing = False
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        self._deliverer: asyncio.Task[None] | None = None
        self.port = 0

    # --- lifecycle -------------------------------------------------------------------------------

    async def __aenter__(self) -> FakeTelegram:
        app = web.Application(client_max_size=60 * 1024 * 1024)
        app.router.add_route("*", "/bot{token}/{method}", self._endpoint)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, LOOPBACK, 0)
        await site.start()
        self.port = int(self._runner.addresses[0][1])
        self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5))
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        async with self._changed:
            self._closing = True
            self._changed.notify_all()
        if self._deliverer is not None:
            self._deliverer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._deliverer
        assert self._session is not None and self._runner is not None
        await self._session.close()
        await self._runner.cleanup()

    @property
    def api_url(self) -> str:
        """The ``api_url`` setting that points the adapter here (the token is appended)."""
        return f"http://{LOOPBACK}:{self.port}/bot"

    # --- what tests look at ----------------------------------------------------------------------

    def ok_calls(self, method: str) -> list[Call]:
        return [c for c in self.calls if c.method == method and c.ok]

    def attempts(self, method: str) -> list[Call]:
        return [c for c in self.calls if c.method == method]

    def sent(self, chat: int | None = None) -> list[dict[str, Any]]:
        """The messages the bot sent (texts and photos), oldest first, optionally in one chat."""
        return [
            c.result
            for c in self.calls
            if c.ok
            and c.method in ("sendMessage", "sendPhoto")
            and (chat is None or c.result["chat"]["id"] == chat)
        ]

    async def wait_for(self, predicate: Callable[[], bool], what: str = "") -> None:
        """Wait (at most ``WAIT_SECONDS``) until ``predicate()`` holds."""
        async with self._changed:
            try:
                await asyncio.wait_for(self._changed.wait_for(predicate), WAIT_SECONDS)
            except TimeoutError:
                raise AssertionError(f"timed out waiting for {what or predicate}") from None

    async def wait_sent(self, count: int, chat: int | None = None) -> list[dict[str, Any]]:
        """Wait until the bot has sent ``count`` messages (in ``chat``); return them."""
        await self.wait_for(lambda: len(self.sent(chat)) >= count, f"{count} sent messages")
        return self.sent(chat)

    def fail_next(self, method: str, code: int, description: str, **parameters: Any) -> None:
        """The next call of ``method`` gets this error (e.g. 429 with ``retry_after=1``)."""
        failure = Failure(code, description, dict(parameters))
        self._failures.setdefault(method, []).append(failure)

    def rate_limit_next(self, method: str, retry_after: int) -> None:
        self.fail_next(
            method,
            429,
            f"Too Many Requests: retry after {retry_after}",
            retry_after=retry_after,
        )

    def drop_next(self, method: str) -> None:
        """The next call of ``method`` has its connection closed without an answer."""
        self._failures.setdefault(method, []).append(Failure(0, "", drop=True))

    def answer_late_next(self, method: str, seconds: float) -> None:
        """The next call of ``method`` is carried out (a message is posted) but answered only
        after ``seconds``: a client with a shorter read timeout gives up although it worked."""
        self._failures.setdefault(method, []).append(Failure(200, "", late=seconds))

    # --- chats and users -------------------------------------------------------------------------

    def add_chat(
        self, chat_id: int, kind: str, *, title: str | None = None, forum: bool = False
    ) -> dict[str, Any]:
        chat: dict[str, Any] = {"id": chat_id, "type": kind}
        if kind == "private":
            chat["first_name"] = title or "Player"
        else:
            chat["title"] = title or f"Game {chat_id}"
        if forum:
            chat["is_forum"] = True
            self.topics[chat_id] = set()
        self.chats[chat_id] = chat
        self._message_ids.setdefault(chat_id, itertools.count(101))
        return chat

    def add_topic(self, chat_id: int, name: str = "Scene") -> int:
        """A forum topic (its id is the id of the service message that created it)."""
        assert self.chats[chat_id].get("is_forum"), "topics exist in forum supergroups only"
        thread = next(self._message_ids[chat_id])
        self.messages[(chat_id, thread)] = {
            "message_id": thread,
            "date": int(time.time()),
            "chat": self.chats[chat_id],
            "forum_topic_created": {"name": name, "icon_color": 7322096},
            "message_thread_id": thread,
            "is_topic_message": True,
        }
        self.topics[chat_id].add(thread)
        return thread

    def user(
        self, user_id: int, first_name: str, *, username: str | None = None, bot: bool = False
    ) -> dict[str, Any]:
        """A Telegram user (``bot``: another bot). A bot may write to a user only in their
        private chat, which exists once the user has started the bot (:meth:`add_chat`)."""
        user: dict[str, Any] = {"id": user_id, "is_bot": bot, "first_name": first_name}
        if username:
            user["username"] = username
        self.users[user_id] = user
        return user

    def _message(
        self,
        chat_id: int,
        sender: Mapping[str, Any],
        *,
        thread: int | None = None,
        reply_to: int | None = None,
        **content: Any,
    ) -> dict[str, Any]:
        chat = self.chats[chat_id]
        message_id = next(self._message_ids[chat_id])
        message: dict[str, Any] = {
            "message_id": message_id,
            "from": dict(sender),
            "date": int(time.time()),
            "chat": chat,
            **content,
        }
        if reply_to is not None:
            replied = self.messages[(chat_id, reply_to)]
            message["reply_to_message"] = {
                k: v for k, v in replied.items() if k != "reply_to_message"
            }
            if thread is None and replied.get("is_topic_message"):
                thread = replied["message_thread_id"]
        if thread is not None:
            message["message_thread_id"] = thread
            if chat.get("is_forum"):
                message["is_topic_message"] = True
        self.messages[(chat_id, message_id)] = message
        return message

    async def user_message(
        self,
        chat_id: int,
        sender: Mapping[str, Any],
        text: str,
        *,
        thread: int | None = None,
        reply_to: int | None = None,
        edited: bool = False,
        late: bool = False,
        **fields: Any,
    ) -> dict[str, Any]:
        """A user writes ``text`` (entities found as Telegram finds them); the update is
        queued (or posted to the webhook). Returns the update. A group that became a
        supergroup takes no new messages, except ``late`` ones (written just before)."""
        assert late or chat_id not in self.migrated, "the group became a supergroup"
        message = self._message(
            chat_id,
            sender,
            thread=thread,
            reply_to=reply_to,
            text=text,
            **fields,
        )
        entities = find_entities(text)
        if entities:
            message["entities"] = entities
        if edited:
            message["edit_date"] = message["date"] + 5
            return await self.push({"edited_message": message})
        return await self.push({"message": message})

    async def press(
        self, message: Mapping[str, Any], data: str, presser: Mapping[str, Any]
    ) -> dict[str, Any]:
        """``presser`` presses the button with ``data`` under the bot's ``message``."""
        query_id = str(next(self._query_ids))
        self.answers[query_id] = None
        current = self.messages.get((message["chat"]["id"], message["message_id"]), message)
        query = {
            "id": query_id,
            "from": dict(presser),
            "message": copy.deepcopy(current),
            "chat_instance": f"-{abs(message['chat']['id'])}",
            "data": data,
        }
        return await self.push({"callback_query": query})

    async def migrate(self, old: int, new: int, sender: Mapping[str, Any]) -> None:
        """Group ``old`` becomes supergroup ``new``: the two service messages Telegram sends."""
        self.add_chat(new, "supergroup", title=self.chats[old].get("title"))
        await self.push({"message": self._message(old, sender, migrate_to_chat_id=new)})
        await self.push({"message": self._message(new, sender, migrate_from_chat_id=old)})
        self.migrated[old] = new

    async def push(
        self, content: Mapping[str, Any], *, update_id: int | None = None, force: bool = False
    ) -> dict[str, Any]:
        """Queue an update (``update_id`` reuses an id: a re-delivery). Updates of a type not in
        ``allowed_updates`` are dropped, as Telegram drops them, unless ``force``."""
        update = {"update_id": update_id or next(self._update_ids), **content}
        if not force and _kind(update) not in self.allowed_updates:
            return update
        async with self._changed:
            self.pending.append(update)
            self._changed.notify_all()
        return update

    # --- the HTTP endpoint -----------------------------------------------------------------------

    async def _endpoint(self, request: web.Request) -> web.StreamResponse:
        method = request.match_info["method"]
        token = request.match_info["token"]
        params, files = await _read_params(request)
        call = Call(method, params, token, files)
        queued = self._failures.get(method)
        late = 0.0
        if queued and token == self.token and queued[0].late:
            late = queued.pop(0).late
        elif queued and token == self.token:
            failure = queued.pop(0)
            if failure.drop:
                call.status, call.description = 0, "dropped"
                await self._record(call)
                assert request.transport is not None
                request.transport.close()  # the client sees the connection drop
                return web.Response(status=204)
            error = ApiError(failure.code, failure.description, **failure.parameters)
            return await self._error(call, error)
        try:
            if token != self.token:
                raise ApiError(401, "Unauthorized")
            handler = getattr(self, f"_api_{method}", None)
            if handler is None:
                raise ApiError(404, "Not Found")
            call.result = await handler(params, files)
        except ApiError as error:
            return await self._error(call, error)
        await self._record(call)
        if late:
            await asyncio.sleep(late)
        return web.json_response({"ok": True, "result": call.result})

    async def _error(self, call: Call, error: ApiError) -> web.Response:
        call.status, call.description = error.code, error.description
        await self._record(call)
        body: dict[str, Any] = {
            "ok": False,
            "error_code": error.code,
            "description": error.description,
        }
        if error.parameters:
            body["parameters"] = error.parameters
        return web.json_response(body, status=error.code)

    async def _record(self, call: Call) -> None:
        async with self._changed:
            self.calls.append(call)
            self._changed.notify_all()

    # --- methods ---------------------------------------------------------------------------------

    async def _api_getMe(self, params: dict[str, Any], files: Any) -> Any:
        return self.bot_user

    async def _api_getUpdates(self, params: dict[str, Any], files: Any) -> Any:
        if self.webhook is not None:
            raise ApiError(
                409,
                "Conflict: can't use getUpdates method while webhook is active; "
                "use deleteWebhook to delete the webhook first",
            )
        offset = _int(params, "offset", 0)
        limit = _int(params, "limit", 100)
        timeout = _int(params, "timeout", 0)
        if not 1 <= limit <= 100:
            raise bad_request("limit must be between 1 and 100")
        allowed = _json(params, "allowed_updates")
        async with self._changed:
            if isinstance(allowed, list):
                self.allowed_updates = tuple(str(a) for a in allowed) or DEFAULT_ALLOWED
                self.pending = [u for u in self.pending if _kind(u) in self.allowed_updates]
            if offset > 0:
                self.pending = [u for u in self.pending if u["update_id"] >= offset]
            elif offset < 0:
                self.pending = self.pending[offset:]
            self._poller += 1
            me = self._poller
            self._changed.notify_all()
            deadline = asyncio.get_running_loop().time() + timeout
            while not self.pending and not self._closing:
                remaining = deadline - asyncio.get_running_loop().time()
                if remaining <= 0:
                    break
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), remaining)
                if self._poller != me:
                    raise ApiError(
                        409,
                        "Conflict: terminated by other getUpdates request; make sure that only "
                        "one bot instance is running",
                    )
            return copy.deepcopy(self.pending[:limit])

    async def _api_setWebhook(self, params: dict[str, Any], files: Any) -> Any:
        url = str(params.get("url") or "")
        if not url:
            return await self._api_deleteWebhook(params, files)
        if not url.startswith("https://"):
            raise bad_request("bad webhook: An HTTPS URL must be provided for webhook")
        secret = params.get("secret_token")
        if secret is not None and not re.fullmatch(r"[A-Za-z0-9_-]{1,256}", str(secret)):
            raise bad_request("secret token contains unallowed characters")
        connections = _int(params, "max_connections", 40)
        if not 1 <= connections <= 100:
            raise bad_request("max_connections must be between 1 and 100")
        allowed = _json(params, "allowed_updates")
        async with self._changed:
            if isinstance(allowed, list):
                self.allowed_updates = tuple(str(a) for a in allowed) or DEFAULT_ALLOWED
            if _bool(params, "drop_pending_updates"):
                self.pending.clear()
            self.webhook = {
                "url": url,
                "secret_token": None if secret is None else str(secret),
                "max_connections": connections,
            }
            self._poller += 1  # a pending getUpdates ends
            self._changed.notify_all()
        if self._deliverer is None or self._deliverer.done():
            self._deliverer = asyncio.create_task(self._deliver())
        return True

    async def _api_deleteWebhook(self, params: dict[str, Any], files: Any) -> Any:
        async with self._changed:
            self.webhook = None
            if _bool(params, "drop_pending_updates"):
                self.pending.clear()
            self._changed.notify_all()
        return True

    async def _api_getWebhookInfo(self, params: dict[str, Any], files: Any) -> Any:
        info: dict[str, Any] = {
            "url": self.webhook["url"] if self.webhook else "",
            "has_custom_certificate": False,
            "pending_update_count": len(self.pending),
        }
        if self.webhook:
            info["max_connections"] = self.webhook["max_connections"]
            info["allowed_updates"] = list(self.allowed_updates)
        return info

    async def _api_setMyCommands(self, params: dict[str, Any], files: Any) -> Any:
        commands = _json(params, "commands")
        if not isinstance(commands, list) or len(commands) > 100:
            raise bad_request("commands must be a list of at most 100 BotCommand")
        for command in commands:
            name = command.get("command") if isinstance(command, dict) else None
            text = command.get("description") if isinstance(command, dict) else None
            if not isinstance(name, str) or not re.fullmatch(r"[a-z0-9_]{1,32}", name):
                raise bad_request("BOT_COMMAND_INVALID")
            if not isinstance(text, str) or not 1 <= len(text.strip()) <= 256:
                raise bad_request("BOT_COMMAND_DESCRIPTION_INVALID")
        self.commands[_scope_key(params)] = commands
        return True

    async def _api_getMyCommands(self, params: dict[str, Any], files: Any) -> Any:
        return self.commands.get(_scope_key(params), [])

    async def _api_deleteMyCommands(self, params: dict[str, Any], files: Any) -> Any:
        self.commands.pop(_scope_key(params), None)
        return True

    async def _api_sendMessage(self, params: dict[str, Any], files: Any) -> Any:
        chat = self._chat(params)
        text, entities = _formatted(params, "text", "parse_mode")
        if not text.strip():
            raise bad_request("message text is empty")
        if _u16(text) > MAX_TEXT:
            raise bad_request("message is too long")
        content: dict[str, Any] = {"text": text}
        if entities:
            content["entities"] = entities
        preview = _json(params, "link_preview_options")
        if preview is not None and not isinstance(preview, dict):
            raise bad_request("can't parse link preview options JSON object")
        return self._bot_message(chat, params, content)

    async def _api_sendPhoto(
        self, params: dict[str, Any], files: dict[str, tuple[str, bytes]]
    ) -> Any:
        chat = self._chat(params)
        upload = files.get("photo")
        reference = params.get("photo")
        if upload is None and not (isinstance(reference, str) and reference):
            raise bad_request("there is no photo in the request")
        if upload is not None and not upload[1].startswith((PNG[:8], b"\xff\xd8\xff")):
            raise bad_request("IMAGE_PROCESS_FAILED")
        caption, entities = _formatted(params, "caption", "parse_mode")
        if _u16(caption) > MAX_CAPTION:
            raise bad_request("message caption is too long")
        size = len(upload[1]) if upload else 0
        content: dict[str, Any] = {
            "photo": [
                {
                    "file_id": f"AgAD{len(self.photos) + 1:04d}",
                    "file_unique_id": f"AQAD{len(self.photos) + 1:04d}",
                    "width": 320,
                    "height": 240,
                    "file_size": size,
                }
            ]
        }
        if caption:
            content["caption"] = caption
        if entities:
            content["caption_entities"] = entities
        message = self._bot_message(chat, params, content)
        if upload is not None:
            self.photos[(chat["id"], message["message_id"])] = upload[1]
        return message

    async def _api_answerCallbackQuery(self, params: dict[str, Any], files: Any) -> Any:
        query_id = str(params.get("callback_query_id") or "")
        if query_id not in self.answers or self.answers[query_id] is not None:
            raise bad_request(
                "query is too old and response timeout expired or query ID is invalid"
            )
        text = params.get("text")
        if text is not None and len(str(text)) > MAX_CALLBACK_TEXT:
            raise bad_request("MESSAGE_TOO_LONG")
        self.answers[query_id] = {
            "text": None if text is None else str(text),
            "show_alert": _bool(params, "show_alert"),
        }
        return True

    async def _api_editMessageReplyMarkup(self, params: dict[str, Any], files: Any) -> Any:
        chat = self._chat(params)
        message_id = _int(params, "message_id", 0)
        message = self.messages.get((chat["id"], message_id))
        if message is None:
            raise bad_request("message to edit not found")
        if message.get("from", {}).get("id") != BOT_ID:
            raise bad_request("message can't be edited")
        markup = _keyboard(params)
        if markup == message.get("reply_markup"):
            raise bad_request(
                "message is not modified: specified new message content and reply markup are "
                "exactly the same as a current content and reply markup of the message"
            )
        if markup is None:
            message.pop("reply_markup", None)
        else:
            message["reply_markup"] = markup
        message["edit_date"] = int(time.time())
        return copy.deepcopy(message)

    # --- helpers ---------------------------------------------------------------------------------

    def _chat(self, params: Mapping[str, Any]) -> dict[str, Any]:
        raw = params.get("chat_id")
        try:
            chat = self.chats.get(int(str(raw)))
        except ValueError:
            chat = None
        if chat is None and str(raw).lstrip("-").isdigit() and int(str(raw)) in self.users:
            raise ApiError(403, "Forbidden: bot can't initiate conversation with a user")
        if chat is None:
            raise bad_request("chat not found")
        if chat["id"] in self.migrated:
            raise ApiError(
                400,
                "Bad Request: group chat was upgraded to a supergroup chat",
                migrate_to_chat_id=self.migrated[chat["id"]],
            )
        return chat

    def _bot_message(
        self, chat: Mapping[str, Any], params: Mapping[str, Any], content: dict[str, Any]
    ) -> dict[str, Any]:
        chat_id = chat["id"]
        reply_to = self._reply_to(chat_id, params)
        thread = params.get("message_thread_id")
        thread_id = None if thread in (None, "") else int(str(thread))
        if thread_id is not None and thread_id not in self.topics.get(chat_id, set()):
            raise bad_request("message thread not found")
        markup = _keyboard(params)
        if markup is not None:
            content["reply_markup"] = markup
        message = self._message(
            chat_id, self.bot_user, thread=thread_id, reply_to=reply_to, **content
        )
        return copy.deepcopy(message)

    def _reply_to(self, chat_id: int, params: Mapping[str, Any]) -> int | None:
        reply = _json(params, "reply_parameters")
        if reply is None and params.get("reply_to_message_id") not in (None, ""):
            reply = {
                "message_id": _int(params, "reply_to_message_id", 0),
                "allow_sending_without_reply": _bool(params, "allow_sending_without_reply"),
            }
        if reply is None:
            return None
        if not isinstance(reply, dict) or not isinstance(reply.get("message_id"), int):
            raise bad_request("can't parse reply parameters JSON object")
        if reply.get("chat_id") not in (None, chat_id):
            raise bad_request("message to be replied not found")
        message_id = reply["message_id"]
        if (chat_id, message_id) in self.messages:
            return int(message_id)
        if reply.get("allow_sending_without_reply"):
            return None
        raise bad_request("message to be replied not found")

    async def _deliver(self) -> None:
        """POST pending updates to the webhook in order; one that is not answered 2xx stays
        first in line and is sent again."""
        assert self._session is not None
        while True:
            async with self._changed:
                await self._changed.wait_for(
                    lambda: self._closing or (self.webhook is not None and bool(self.pending))
                )
                if self._closing:
                    return
                assert self.webhook is not None
                update, webhook = self.pending[0], dict(self.webhook)
            headers = {"Content-Type": "application/json"}
            if webhook["secret_token"]:
                headers[SECRET_HEADER] = webhook["secret_token"]
            status: int | None = None
            error: str | None = None
            target = self.proxies.get(webhook["url"])
            if target is None or not target.startswith(f"http://{LOOPBACK}:"):
                error = "no reverse proxy on 127.0.0.1 for this URL"  # never leaves loopback
            else:
                try:
                    async with self._session.post(
                        target, data=json.dumps(update), headers=headers
                    ) as response:
                        status = response.status
                        await response.read()
                except (aiohttp.ClientError, TimeoutError) as failure:
                    error = repr(failure)
            delivered = status is not None and 200 <= status < 300
            async with self._changed:
                self.deliveries.append(Delivery(update["update_id"], status, error))
                tries = sum(1 for d in self.deliveries if d.update_id == update["update_id"])
                if self.pending[:1] == [update] and (delivered or tries >= MAX_DELIVERIES):
                    self.pending.pop(0)  # delivered, or given up on (Telegram gives up too)
                self._changed.notify_all()
            if not delivered:
                await asyncio.sleep(0.2)


def find_entities(text: str) -> list[dict[str, Any]]:
    """The ``bot_command`` and ``mention`` entities Telegram marks in a user's text."""
    entities = []
    for match in re.finditer(
        r"(?<![\w/@])(/[A-Za-z0-9_]{1,64}(?:@[A-Za-z0-9_]{3,32})?)(?![\w/])", text
    ):
        entities.append(_span("bot_command", text, match.start(1), match.end(1)))
    for match in re.finditer(r"(?<![\w@])@[A-Za-z0-9_]{5,32}\b", text):
        if not any(
            e["type"] == "bot_command" and _inside(e, text, match.start()) for e in entities
        ):
            entities.append(_span("mention", text, match.start(), match.end()))
    return sorted(entities, key=lambda e: e["offset"])


def _span(kind: str, text: str, start: int, end: int) -> dict[str, Any]:
    return {"type": kind, "offset": _u16(text[:start]), "length": _u16(text[start:end])}


def _inside(entity: Mapping[str, Any], text: str, index: int) -> bool:
    position = _u16(text[:index])
    return bool(entity["offset"] <= position < entity["offset"] + entity["length"])


def _kind(update: Mapping[str, Any]) -> str:
    return next(key for key in update if key in UPDATE_TYPES)


async def _read_params(request: web.Request) -> tuple[dict[str, Any], dict[str, tuple[str, bytes]]]:
    params: dict[str, Any] = dict(request.query)
    files: dict[str, tuple[str, bytes]] = {}
    if request.content_type == "application/json":
        body = await request.json()
        if isinstance(body, dict):
            params.update(body)
    elif request.content_type == "multipart/form-data":
        reader = await request.multipart()
        async for part in reader:
            if not isinstance(part, aiohttp.BodyPartReader) or part.name is None:
                continue
            data = await part.read()
            if part.filename:
                files[part.name] = (part.filename, bytes(data))
            else:
                params[part.name] = data.decode()
    elif request.body_exists:
        form = await request.post()
        params.update({k: v for k, v in form.items() if isinstance(v, str)})
    return params, files


def _json(params: Mapping[str, Any], key: str) -> Any:
    value = params.get(key)
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            raise bad_request(f"can't parse {key} JSON object") from None
    return value


def _int(params: Mapping[str, Any], key: str, default: int) -> int:
    value = params.get(key)
    if value in (None, ""):
        return default
    try:
        return int(str(value))
    except ValueError:
        raise bad_request(f"{key} must be an integer") from None


def _bool(params: Mapping[str, Any], key: str) -> bool:
    value = params.get(key)
    return value is True or (isinstance(value, str) and value.lower() == "true")


def _scope_key(params: Mapping[str, Any]) -> str:
    scope = _json(params, "scope") or {"type": "default"}
    if not isinstance(scope, dict):
        raise bad_request("can't parse BotCommandScope JSON object")
    key = str(scope.get("type"))
    if "chat_id" in scope:
        key += f":{scope['chat_id']}"
    language = params.get("language_code")
    return f"{key}/{language}" if language else key


def _formatted(
    params: Mapping[str, Any], key: str, mode_key: str
) -> tuple[str, list[dict[str, Any]]]:
    raw = params.get(key)
    text = "" if raw is None else str(raw)
    mode = params.get(mode_key)
    if mode in (None, ""):
        return text, []
    if str(mode).lower() != "html":
        raise bad_request("unsupported parse_mode")
    return parse_html(text)


def _keyboard(params: Mapping[str, Any]) -> dict[str, Any] | None:
    markup = _json(params, "reply_markup")
    if markup is None:
        return None
    rows = markup.get("inline_keyboard") if isinstance(markup, dict) else None
    if not isinstance(rows, list) or not all(isinstance(row, list) for row in rows):
        raise bad_request(
            "can't parse inline keyboard button: InlineKeyboardButton must be an Object"
        )
    for row in rows:
        for button in row:
            if not isinstance(button, dict) or not str(button.get("text") or "").strip():
                raise bad_request("BUTTON_TEXT_INVALID")
            data = button.get("callback_data")
            if data is not None and not 1 <= len(str(data).encode()) <= 64:
                raise bad_request("BUTTON_DATA_INVALID")
    return dict(markup)


# --- helpers for the tests -----------------------------------------------------------------------


def html_of(message: Mapping[str, Any]) -> str:
    """A sent message's text with its bold/italic/strike/code entities written back as tags,
    to check formatting the way a client shows it (``<b>8</b>``)."""
    text = message.get("text", message.get("caption", ""))
    entities = message.get("entities", message.get("caption_entities", []))
    tags = {"bold": "b", "italic": "i", "strikethrough": "s", "code": "code", "underline": "u"}
    opens: dict[int, list[str]] = {}
    closes: dict[int, list[str]] = {}
    for entity in entities:
        tag = tags.get(entity["type"])
        if tag is None:
            continue
        opens.setdefault(entity["offset"], []).append(tag)
        closes.setdefault(entity["offset"] + entity["length"], []).insert(0, tag)
    out: list[str] = []
    position = 0
    for ch in text:
        out.extend(f"</{t}>" for t in closes.get(position, []))
        out.extend(f"<{t}>" for t in opens.get(position, []))
        out.append(ch)
        position += _u16(ch)
    out.extend(f"</{t}>" for t in closes.get(position, []))
    return "".join(out)


def serving(adapter: Any, *, timeout: float = WAIT_SECONDS) -> AbstractAsyncContextManager[Any]:
    """Run ``adapter`` until the block ends; a crash or a hang fails the test."""
    return adapter_harness.serving(adapter, timeout=timeout)


# --- the bot under test --------------------------------------------------------------------------

#: the environment the tests give the adapter (variable names as in ``settings_for``)
ENV = {"COTERIE_TEST_TELEGRAM_TOKEN": BOT_TOKEN, "COTERIE_TEST_TELEGRAM_SECRET": "s3cret_Token-1"}
WEBHOOK_SECRET = ENV["COTERIE_TEST_TELEGRAM_SECRET"]


class TelegramTestCommands:
    """A test-only plugin: replies with buttons, an image, a private reply, a long reply, and
    a command that waits for ``gate``."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()

    @hookimpl
    def coterie_commands(self) -> list[Command]:
        return [
            Command("offer", "a reply with buttons", "!offer", handler=self.offer),
            Command("echo", "says its arguments back", "!echo TEXT", handler=self.echo),
            Command("chart", "a reply with an image", "!chart", handler=self.chart),
            Command("secret", "a reply only the caller sees", "!secret", handler=self.secret),
            Command("long", "a reply longer than one message", "!long N", handler=self.long),
            Command("slow", "answers once the test opens the gate", "!slow", handler=self.slow),
            Command(
                "house-rules",
                "a command whose name Telegram cannot take",
                "!house-rules",
                handler=self.echo,
            ),
        ]

    def offer(self, ctx: CommandContext) -> Reply:
        buttons = (Button("Show the chart", "!chart"), Button("Echo", "!echo pressed"))
        return Reply(
            [Text("Pick one:"), Actions(buttons)], meta={"roll_id": "abc234", "variant": "revised"}
        )

    def echo(self, ctx: CommandContext) -> list[Node]:
        return [Bold((Text(ctx.message.display_name),)), Text(f": {ctx.args}")]

    def chart(self, ctx: CommandContext) -> list[Node]:
        return [Text("Odds of 5 dice:"), Image(PNG, "odds of <5> dice & more", "odds.png")]

    def secret(self, ctx: CommandContext) -> Reply:
        return Reply([Text("for your eyes only")], ephemeral=True)

    def long(self, ctx: CommandContext) -> list[Node]:
        lines = int(ctx.args or "200")
        body: list[Node] = []
        for number in range(lines):
            # a bold span crossing each line break: a cut between lines must close and reopen it
            body += [
                Bold((Text(f"line {number:04d} <&> "), BR, Text("continued"))),
                Text(" 🎲🎲"),
                BR,
            ]
        return body

    async def slow(self, ctx: CommandContext) -> list[Node]:
        await self.gate.wait()
        return [Text("done waiting")]


def make_core(
    faces: list[int] | None = None,
    plugin: TelegramTestCommands | None = None,
    *,
    variants: tuple[str, ...] = ("revised",),
    store: StateStore | None = None,
    **config: Any,
) -> Coterie:
    """A Coterie with the given rule sets, the Telegram adapter and the test commands."""
    host = PluginHost()
    host.load([*variants, "telegram"])
    host.register(plugin or TelegramTestCommands(), "telegram-test")
    config.setdefault("plugins", {"enable": [*variants, "telegram"]})
    return Coterie(
        Config.model_validate(config),
        host=host,
        dice=FixedDice(faces) if faces else SeededDice(1),
        store=store,
    )


def settings_for(fake: FakeTelegram, **overrides: Any) -> dict[str, Any]:
    """An ``[adapters.telegram]`` table pointing at the fake (polling, fast)."""
    return {
        "enabled": True,
        "api_url": fake.api_url,
        "bot_token_env": "COTERIE_TEST_TELEGRAM_TOKEN",
        "webhook_secret_env": "COTERIE_TEST_TELEGRAM_SECRET",
        "poll_timeout": 1,
        "rate_limit_retries": 2,
        **overrides,
    }


def make_adapter(
    fake: FakeTelegram,
    faces: list[int] | None = None,
    plugin: TelegramTestCommands | None = None,
    *,
    core: Coterie | None = None,
    **settings: Any,
) -> TelegramAdapter:
    return TelegramAdapter(
        core or make_core(faces, plugin), settings_for(fake, **settings), environ=ENV
    )


async def settle(adapter: TelegramAdapter) -> None:
    """Wait until every update the adapter has taken is handled."""
    assert adapter.bot is not None
    await adapter.bot.drain(WAIT_SECONDS)
