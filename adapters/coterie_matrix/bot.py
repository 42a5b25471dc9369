"""The Matrix bot on matrix-nio: log in, follow the event stream (``/sync``), answer commands.

The sync loop is the adapter's own (not nio's ``sync_forever``) so that it controls exactly
what is remembered and when:

* **Resuming.** After a sync is processed its ``next_batch`` token is saved (see
  :mod:`coterie_matrix.session`) once every answer started from that sync or an earlier one has
  been sent. A restart resumes from the saved token: nothing already answered is read again,
  nothing read but not yet answered is lost. Answered event ids are also remembered, and every
  send uses a transaction id derived from the command's event id (the homeserver answers a
  repeated one with the event it already made), so even a crash between sending and saving
  cannot post a reply twice. The first sync of a fresh session is the *backlog*: invitations
  and memberships are processed, old messages are not.
* **Reconnecting.** A sync that fails to connect (homeserver restarting, network down) is
  retried after ``reconnect_initial`` seconds, doubling up to ``reconnect_max``, from the same
  token. Sends are retried the same way with the same transaction id.
* **Encryption.** nio decrypts incoming events during the sync; the loop does what
  ``sync_forever`` would (upload one-time keys, query and claim device keys, send to-device
  messages) and keeps undecryptable events for a few minutes in case their key arrives late.
  Replies in encrypted rooms are encrypted for every device of the room's members (the bot
  cannot verify devices interactively; see docs/platforms/matrix.md).

matrix-nio is imported here; this module is imported only when the adapter runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import io
import logging
import time
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from nio import (  # type: ignore[import-untyped]
    AsyncClient,
    AsyncClientConfig,
    EncryptionError,
    ErrorResponse,
    LocalProtocolError,
    LoginResponse,
    MegolmEvent,
    RoomCreateResponse,
    RoomMessagesResponse,
    RoomSendResponse,
    SyncResponse,
    UploadResponse,
    WhoamiResponse,
)

from coterie.framework.adapter import drain_tasks
from coterie.framework.app import Coterie
from coterie.framework.message import Message
from coterie.render.elements import Image, Private, Reply
from coterie.retry import Backoff as Backoff  # re-exported: the adapter's reconnect loop
from coterie.retry import retry
from coterie_matrix import content
from coterie_matrix.content import Target
from coterie_matrix.formatting import FORMAT, button_keys, escape, render
from coterie_matrix.formatting import Part as TextPart
from coterie_matrix.incoming import read_command
from coterie_matrix.session import RecentRecords, Session
from coterie_matrix.settings import Credentials, MatrixSettings

log = logging.getLogger("coterie.matrix")

PLATFORM = "matrix"
#: how long :meth:`MatrixBot.drain` waits for answers still being sent
DRAIN_SECONDS = 10.0
#: answered event ids remembered (a restart resumes at most one sync behind)
ANSWERED_SIZE = 5000
#: replies whose reaction buttons can be pressed (how long: the ``button_ttl`` setting)
BUTTON_RECORDS = 2000
BUTTONS_NAMESPACE = "matrix.buttons"
#: undecryptable events kept for a late key: how many, how long
UNDECRYPTED_SIZE = 200
UNDECRYPTED_SECONDS = 300.0
#: attempts of one send while the homeserver is unreachable
SEND_ATTEMPTS = 8
#: seconds to wait for a direct-message room the bot made to come through its sync
DIRECT_ROOM_WAIT = 10.0
#: typing notices: how long each lasts, how often it is renewed, how long at most
TYPING_MS = 30_000
TYPING_RENEW = 20.0
TYPING_LIMIT = 600.0
#: how long the sync loop waits for the answers to one sync before it syncs again
ANSWER_WAIT = 0.5
#: timeline events per room and sync; a longer gap (a limited timeline) is read back with
#: ``/messages``, :data:`CATCH_UP_PAGE` events a request, up to ``catch_up_limit``
TIMELINE_LIMIT = 100
CATCH_UP_PAGE = 100

#: failures of the connection itself: retried with back-off
CONNECTION_ERRORS: tuple[type[Exception], ...] = (
    aiohttp.ClientConnectionError,
    aiohttp.ClientPayloadError,
    TimeoutError,
    ConnectionError,
)
#: error codes meaning the login is over (a new one is needed)
LOGGED_OUT = frozenset({"M_UNKNOWN_TOKEN", "M_MISSING_TOKEN"})


def key_store_class() -> type[Any]:
    """nio's default key store, minus two database queries per sync: after every sync nio saves
    the rooms that became encrypted in it, even when there are none (most syncs), which costs
    milliseconds on the path of every command."""
    from nio.store import DefaultStore  # type: ignore[import-untyped]

    class KeyStore(DefaultStore):  # type: ignore[misc]
        def save_encrypted_rooms(self, rooms: Iterable[str]) -> None:
            if rooms:
                super().save_encrypted_rooms(rooms)

    return KeyStore


class LoginFailed(RuntimeError):
    """The homeserver refused the credentials (or ended the session): the adapter crashes and the
    app's supervisor restarts it, logging in again, with back-off."""


class Unreachable(RuntimeError):
    """The homeserver answered with a transient error (e.g. 502 from its proxy)."""


#: what a send retries (with the same transaction id, so never twice): a lost connection, a 5xx
SEND_RETRIED: tuple[type[Exception], ...] = (*CONNECTION_ERRORS, Unreachable)


@dataclass
class _Batch:
    """The answers started from one sync; its token is saved when all are done."""

    token: str
    tasks: set[asyncio.Task[None]]


class MatrixBot:
    """One Matrix account answering through a :class:`~coterie.app.Coterie`."""

    def __init__(
        self,
        core: Coterie,
        settings: MatrixSettings,
        credentials: Credentials,
        *,
        store_dir: Path | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.core = core
        self.settings = settings
        self.credentials = credentials
        self.store_dir = store_dir
        self.clock = clock
        self.user_id = settings.user_id
        self.session = Session(core.state, settings.user_id, store_dir)
        self.answered = RecentRecords(core.state, "matrix.answered", ANSWERED_SIZE)
        self.buttons = RecentRecords(core.state, BUTTONS_NAMESPACE, BUTTON_RECORDS)
        self.client: Any = None
        #: the token the next sync starts from (``None``: a fresh session, the backlog is skipped)
        self.next_batch: str | None = None
        #: set after each successful sync, cleared while the homeserver is unreachable
        self.connected = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        self._batches: deque[_Batch] = deque()
        self._in_flight: set[str] = set()
        self._invites_seen: set[str] = set()
        #: invitations not answered yet (room id → inviter)
        self._invitations: dict[str, str] = {}
        self._undecrypted: OrderedDict[str, tuple[str, Any, float]] = OrderedDict()
        self._backoff = Backoff(settings.reconnect_initial, settings.reconnect_max)
        self._failure: LoginFailed | None = None
        self._presses = asyncio.Lock()
        #: per user, held while a private part goes out: one command's parts reach the direct
        #: room before the next command's (the first waits while the room is made)
        self._private_locks: dict[str, asyncio.Lock] = {}
        #: timers that take a reply's buttons back when they lapse
        self._lapses: dict[str, asyncio.Task[None]] = {}
        self._swept = False
        #: per room, in the sync being processed: commands too old to answer, and whether reading
        #: back stopped before it reached where the bot left off
        self._skipped: dict[str, list[str]] = {}
        self._cut_short: set[str] = set()

    # --- logging in ------------------------------------------------------------------------------

    @property
    def device_id(self) -> str | None:
        return None if self.client is None else self.client.device_id

    def _config(self) -> Any:
        extra: dict[str, Any] = {}
        if self.settings.encryption:
            extra["store"] = key_store_class()
        return AsyncClientConfig(
            # connection failures raise at once: the sync loop and the senders retry them with
            # their own back-off (and the same transaction ids)
            max_timeouts=0,
            max_limit_exceeded=5,
            request_timeout=self.settings.request_timeout,
            encryption_enabled=self.settings.encryption,
            store_sync_tokens=False,
            pickle_key=self.credentials.store_passphrase or "DEFAULT_KEY",
            **extra,
        )

    def _key_store(self, device_id: str) -> Path | None:
        if self.store_dir is None:
            return None
        return self.store_dir / f"{self.user_id}_{device_id}.db"

    async def login(self) -> None:
        """Log in (access token or password) and load the key store. Connection failures raise
        one of :data:`CONNECTION_ERRORS`; refused credentials raise :class:`LoginFailed`."""
        saved = await self.session.load()
        if self.store_dir is not None:
            self.store_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        device_id = saved.device_id
        if self.settings.encryption and device_id:
            store = self._key_store(device_id)
            if store is not None and not store.exists():
                log.warning(
                    "the key store of device %s is missing from %s: logging in as a new device",
                    device_id,
                    self.store_dir,
                )
                await self.session.forget_device()
                device_id, saved = None, await self.session.load()
        client = AsyncClient(
            self.settings.homeserver,
            self.user_id,
            device_id=device_id or "",
            store_path=str(self.store_dir) if self.store_dir is not None else "",
            config=self._config(),
        )
        try:
            if self.credentials.access_token:
                await self._login_with_token(client, self.credentials.access_token)
            else:
                await self._login_with_password(client, self.credentials.password or "")
        except ValueError as error:  # nio loads the key store while logging in
            await client.close()
            raise LoginFailed(
                f"cannot open the key store in {self.store_dir}: {error} (if "
                f"${self.settings.store_passphrase_env} changed, set it back, or move the store "
                "away to start a new device)"
            ) from error
        except BaseException:
            await client.close()
            raise
        try:
            await self._republish_lost_keys(client)
        except BaseException:
            await client.close()
            raise
        self.client = client
        if client.device_id != saved.device_id:
            # a new device: its to-device messages (room keys) start now, so a sync token saved
            # by another device is not resumed (the backlog is skipped instead)
            await self.session.forget_device()
            await self.session.save(device_id=client.device_id)
            saved = await self.session.load()
        self.next_batch = saved.next_batch
        if self.settings.encryption and client.olm is None:
            log.warning("end-to-end encryption is unavailable: encrypted rooms are not answered")
        log.info(
            "logged in to %s as %s (device %s)%s",
            self.settings.homeserver,
            self.user_id,
            client.device_id,
            ", resuming the event stream" if self.next_batch else "",
        )

    async def _republish_lost_keys(self, client: Any) -> None:
        """If the store says the device's keys are published but the homeserver has none (the
        device was signed out, which deletes them, and a login made it again), publish them
        again: without them nobody could encrypt for the bot."""
        if client.olm is None or not client.olm.account.shared:
            return  # nothing published yet: the first key upload does it
        client.olm.users_for_key_query.add(self.user_id)
        response = await client.keys_query()
        if isinstance(response, ErrorResponse):
            log.warning("could not check the device's published keys: %s", _describe(response))
            return
        if client.device_id in (response.device_keys.get(self.user_id) or {}):
            return
        log.warning(
            "the homeserver has no keys for device %s (was it signed out?): publishing them again",
            client.device_id,
        )
        client.olm.account.shared = False
        await _checked(client.keys_upload(), "publishing the device's keys")

    async def _login_with_token(self, client: Any, token: str) -> None:
        client.access_token = token
        client.user_id = self.user_id
        who = await client.whoami()
        if not isinstance(who, WhoamiResponse):
            if _is_transient(who):
                raise Unreachable(_describe(who))
            raise LoginFailed(
                f"the homeserver refused the access token from ${self.settings.access_token_env}: "
                f"{_describe(who)}"
            )
        if who.user_id != self.user_id:
            raise LoginFailed(
                f"the access token from ${self.settings.access_token_env} belongs to "
                f"{who.user_id}, not to {self.user_id}"
            )
        if not who.device_id:
            raise LoginFailed(
                f"the access token from ${self.settings.access_token_env} has no device"
            )
        client.restore_login(self.user_id, who.device_id, token)

    async def _login_with_password(self, client: Any, password: str) -> None:
        response = await client.login(password=password, device_name=self.settings.device_name)
        if not isinstance(response, LoginResponse):
            if _is_transient(response):
                raise Unreachable(_describe(response))
            raise LoginFailed(
                f"the homeserver refused the password from ${self.settings.password_env} for "
                f"{self.user_id}: {_describe(response)}"
            )

    # --- the sync loop ---------------------------------------------------------------------------

    def _filter(self, first: bool) -> dict[str, Any]:
        """Timelines of up to :data:`TIMELINE_LIMIT` events (one when the backlog is skipped
        anyway), no presence."""
        limit = 1 if first else TIMELINE_LIMIT
        return {"presence": {"types": []}, "room": {"timeline": {"limit": limit}}}

    async def fetch(self, *, resumed: bool) -> Any | None:
        """One sync request (nio decrypts what it brings). ``resumed``: the first sync of this
        client from a saved token; the client knows no room yet, so full state is requested.
        ``None`` when the homeserver could not be reached (wait :meth:`retry_delay`, retry)."""
        self.raise_if_failed()
        fresh = self.next_batch is None
        quick = fresh or resumed or not self.connected.is_set()
        try:
            response = await self.client.sync(
                timeout=0 if quick else int(self.settings.sync_timeout * 1000),
                sync_filter=self._filter(fresh),
                since=self.next_batch,
                full_state=True if resumed else None,
            )
        except CONNECTION_ERRORS as error:
            self._unreachable(error)
            return None
        if not isinstance(response, SyncResponse):
            if _logged_out(response):
                raise LoginFailed(f"the homeserver ended the session: {_describe(response)}")
            self._unreachable(response)
            return None
        return response

    async def handle(self, response: Any) -> None:
        """Everything a sync brought: invitations, kicks, commands, button presses (answers run
        in tracked tasks), then key maintenance and the checkpoint."""
        if not self.connected.is_set():
            log.info("Matrix: connected to %s", self.settings.homeserver)
        self.connected.set()
        self._backoff.reset()
        fresh = self.next_batch is None
        batch = _Batch(token=response.next_batch, tasks=set())
        self._batches.append(batch)
        await self._process(response, batch, backlog=fresh, since=self.next_batch)
        self.next_batch = response.next_batch
        if batch.tasks:
            # Answer before asking for more: the homeserver (one process) then serves the
            # replies without a new sync competing with them. A slow command only holds the
            # stream for ANSWER_WAIT seconds; it finishes in the background.
            await asyncio.wait(batch.tasks, timeout=ANSWER_WAIT)
        await self._housekeeping()
        await self.checkpoint()

    def raise_if_failed(self) -> None:
        """Raise the :class:`LoginFailed` an answer ran into (the session is over)."""
        if self._failure is not None:
            raise self._failure

    def _unreachable(self, why: object) -> None:
        if self.connected.is_set():
            log.warning("Matrix: lost the homeserver (%s); reconnecting", _describe(why))
        else:
            log.info("Matrix: homeserver unreachable (%s)", _describe(why))
        self.connected.clear()

    def retry_delay(self) -> float:
        """How long to wait before the next attempt to reach the homeserver."""
        return self._backoff.next()

    async def checkpoint(self) -> None:
        """Save the newest sync token whose answers (and all earlier ones) are all sent."""
        token = None
        while self._batches and all(task.done() for task in self._batches[0].tasks):
            token = self._batches.popleft().token
        if token is not None:
            await self.session.save(next_batch=token)

    async def _housekeeping(self) -> None:
        """Invitations still to answer, then what ``sync_forever`` does between syncs: keys and
        to-device messages; then encrypted events whose key may have arrived."""
        if self._invitations:
            await self._answer_invitations()
        if not self._swept:
            self._swept = True
            try:
                await self._sweep_buttons()
            except Exception:  # buttons are a convenience: never stop the sync loop for them
                log.exception("could not check the reaction buttons")
        client = self.client
        if client.olm is None:
            return
        try:
            if client.should_upload_keys:
                await _checked(
                    client.keys_upload(),
                    "uploading the device's keys (if another client already uploaded keys for "
                    f"device {client.device_id}, give the bot a device of its own)",
                )
            if client.should_query_keys:
                await _checked(client.keys_query(), "querying device keys")
            if client.should_claim_keys:
                users = client.get_users_for_key_claiming()
                await _checked(client.keys_claim(users), "claiming one-time keys")
            await client.send_to_device_messages()
        except CONNECTION_ERRORS as error:
            log.info("key maintenance postponed: %s", _describe(error))
        except LocalProtocolError as error:
            log.warning("key maintenance failed: %s", error)
        await self._retry_undecrypted()

    # --- what a sync brings ----------------------------------------------------------------------

    async def _process(
        self, response: Any, batch: _Batch, *, backlog: bool, since: str | None = None
    ) -> None:
        for room_id, info in response.rooms.invite.items():
            await self._on_invite(room_id, info.invite_state)
        for room_id, info in response.rooms.leave.items():
            await self._on_leave(room_id, [*info.state, *info.timeline.events])
        if backlog:
            if response.rooms.join:
                log.info("skipped the backlog of %d room(s)", len(response.rooms.join))
            return
        self._skipped.clear()
        self._cut_short.clear()
        for room_id, info in response.rooms.join.items():
            events = list(info.timeline.events)
            if getattr(info.timeline, "limited", False) and since and info.timeline.prev_batch:
                events = [*await self._read_back(room_id, info.timeline.prev_batch, since), *events]
            for event in self._after_own_join(events):
                self._on_event(room_id, event, batch)
            if self._skipped.get(room_id) or room_id in self._cut_short:
                self._tell_skipped(room_id, events, batch)

    async def _read_back(self, room_id: str, start: str, since: str) -> list[Any]:
        """The events a limited sync left out of ``room_id``'s timeline, oldest first: paged
        back with ``/messages`` from ``start`` (the timeline's ``prev_batch``) to ``since`` (the
        sync token the bot left off at). Bounded by ``catch_up_limit`` events and by
        ``max_event_age`` (a page that reaches older events is the last one); when it stops
        before ``since``, the room is marked cut short (see :meth:`_tell_skipped`)."""
        limit = self.settings.catch_up_limit
        pages: list[list[Any]] = []
        read = 0
        token = start
        while True:
            if read >= limit:
                self._cut_short.add(room_id)
                break
            try:
                page = await self.client.room_messages(
                    room_id, start=token, end=since, limit=min(CATCH_UP_PAGE, limit - read)
                )
            except CONNECTION_ERRORS as error:
                page = error
            if not isinstance(page, RoomMessagesResponse):
                log.warning("could not read back the history of %s: %s", room_id, _describe(page))
                self._cut_short.add(room_id)
                break
            pages.append(list(page.chunk))
            read += len(page.chunk)
            if not page.chunk or not page.end or page.end == token:
                break  # back where the bot left off
            oldest = getattr(page.chunk[-1], "source", {}).get("origin_server_ts")
            if (
                isinstance(oldest, int)
                and self.clock() - oldest / 1000 > self.settings.max_event_age
            ):
                self._cut_short.add(room_id)  # what is older is too old to answer anyway
                break
            token = page.end
        if read:
            log.info("read back %d event(s) of %s missed while away", read, room_id)
        return [event for chunk in reversed(pages) for event in reversed(chunk)]

    def _tell_skipped(self, room_id: str, events: list[Any], batch: _Batch) -> None:
        """One notice in the room about the commands it did not answer after an absence."""
        skipped = self._skipped.get(room_id, [])
        cut_short = room_id in self._cut_short
        first = next((getattr(e, "event_id", None) for e in events), None) or room_id
        key = f"skipped:{skipped[-1] if skipped else first}"
        text = skipped_notice(
            len(skipped),
            cut_short=cut_short,
            max_age=self.settings.max_event_age,
            limit=self.settings.catch_up_limit,
        )
        self._spawn(key, self._send_notice(room_id, text, key), batch)

    async def _send_notice(self, room_id: str, text: str, cause: str) -> None:
        body = {
            "msgtype": "m.notice",
            "body": text,
            "format": FORMAT,
            "formatted_body": escape(text),
            "m.mentions": {},
        }
        await self.send(room_id, "m.room.message", body, content.transaction_id(cause, "notice"))

    def _after_own_join(self, events: list[Any]) -> list[Any]:
        """The timeline after the bot's own join, if it joined in this sync: history from before
        (visible in rooms that share it) is not for the bot."""
        for index in range(len(events) - 1, -1, -1):
            source = getattr(events[index], "source", {})
            if (
                source.get("type") == "m.room.member"
                and source.get("state_key") == self.user_id
                and (source.get("content") or {}).get("membership") == "join"
                and ((source.get("unsigned") or {}).get("prev_content") or {}).get("membership")
                != "join"
            ):
                return events[index + 1 :]
        return events

    def _on_event(self, room_id: str, event: Any, batch: _Batch | None) -> None:
        if isinstance(event, MegolmEvent):
            self._keep_undecrypted(room_id, event)
            return
        source = getattr(event, "source", None)
        if not isinstance(source, dict) or source.get("sender") == self.user_id:
            return  # not an event, or the bot's own
        kind = source.get("type")
        if kind == "m.room.message":
            self._on_message(room_id, source, batch)
        elif kind == "m.reaction":
            self._on_reaction(room_id, source, batch)

    def _too_old(self, source: Mapping[str, Any]) -> bool:
        sent = source.get("origin_server_ts")
        if not isinstance(sent, int):
            return False
        age = self.clock() - sent / 1000
        if age > self.settings.max_event_age:
            log.info("not answering %s: it is %.0f s old", source.get("event_id"), age)
            return True
        return False

    def _on_message(self, room_id: str, source: dict[str, Any], batch: _Batch | None) -> None:
        body = source.get("content")
        event_id = source.get("event_id")
        sender = source.get("sender")
        if not isinstance(body, dict) or not isinstance(event_id, str):
            return
        room = self.client.rooms.get(room_id)
        me = room.users.get(self.user_id) if room is not None else None
        command = read_command(body, self.user_id, me.display_name if me is not None else None)
        if command is None or not isinstance(sender, str):
            return
        if self._too_old(source):
            self._skipped.setdefault(room_id, []).append(event_id)
            return
        direct = room is not None and not room.is_named and room.joined_count <= 2
        message = Message(
            platform=PLATFORM,
            room=room_id,
            user=sender,
            text=command.text,
            user_name=room.user_name(sender) if room is not None else None,
            admin=direct or _moderates(room, sender),
            thread=command.thread,
            reply_to=event_id,
            message_id=event_id,
            addressed=command.addressed or direct,
        )
        self._spawn(event_id, self._answer_message(message), batch)

    def _on_reaction(self, room_id: str, source: dict[str, Any], batch: _Batch | None) -> None:
        relates = (source.get("content") or {}).get("m.relates_to") or {}
        event_id, sender = source.get("event_id"), source.get("sender")
        target, key = relates.get("event_id"), relates.get("key")
        if (
            relates.get("rel_type") != "m.annotation"
            or not isinstance(event_id, str)
            or not isinstance(sender, str)
            or not isinstance(target, str)
            or not isinstance(key, str)
            or self._too_old(source)
        ):
            return
        self._spawn(event_id, self._answer_press(room_id, event_id, sender, target, key), batch)

    # --- answering -------------------------------------------------------------------------------

    def _spawn(self, event_id: str, work: Coroutine[Any, Any, None], batch: _Batch | None) -> None:
        """Answer ``event_id`` in a tracked task (once, however often it is seen)."""
        if event_id in self._in_flight:
            work.close()
            return
        self._in_flight.add(event_id)
        task = asyncio.get_running_loop().create_task(self._once(event_id, work))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        if batch is not None:
            batch.tasks.add(task)

    async def _once(self, event_id: str, work: Coroutine[Any, Any, None]) -> None:
        try:
            if await self.answered.contains(event_id):
                work.close()
                log.debug("%s was answered before", event_id)
                return
            await work
            await self.answered.put(event_id, int(self.clock()))
        except LoginFailed as error:
            self._failure = error
        except Exception:
            log.exception("answering %s failed", event_id)
        finally:
            self._in_flight.discard(event_id)

    def thread_for(self, thread: str | None, event_id: str) -> str | None:
        """The thread a reply goes to, by the ``thread`` setting."""
        if self.settings.thread == "never":
            return None
        if self.settings.thread == "always":
            return thread or event_id
        return thread

    async def _answer_message(self, message: Message) -> None:
        assert message.message_id is not None
        async with self.typing(message.room):
            reply = await self.core.handle(message)
        if reply is None:
            return
        target = Target(
            room_id=message.room,
            reply_to=message.message_id,
            thread=self.thread_for(message.thread, message.message_id),
        )
        await self.deliver(reply, target, owner=message.user, cause=message.message_id)

    async def _answer_press(
        self, room_id: str, event_id: str, presser: str, target_id: str, key: str
    ) -> None:
        """A reaction: a button press if it is one of a reply's keys."""
        room = self.client.rooms.get(room_id)
        async with self._presses:  # check and spend the buttons in one step
            record = await self.buttons.get(target_id)
            if not isinstance(record, dict) or key not in (record.get("options") or {}):
                return  # an ordinary reaction
            target = Target(room_id=room_id, reply_to=target_id, thread=record.get("thread"))
            owner = str(record.get("owner"))
            if presser != owner:
                who = (room.user_name(owner) if room is not None else None) or owner
                problem = f"Only {who} can use these buttons: they belong to that roll."
            elif record.get("used"):
                problem = "These buttons were already used."
            elif (
                record.get("lapsed")
                or self.clock() - float(record.get("ts") or 0) > self.settings.button_ttl
            ):
                problem = "These buttons have expired: type the command instead."
            else:
                problem = None
                await self.buttons.put(target_id, {**record, "used": True})
        if problem is not None:
            await self.notify(target, problem, event_id)
            return
        await self._remove_keys(room_id, record, event_id)
        message = Message(
            platform=PLATFORM,
            room=room_id,
            user=presser,
            text=str(record["options"][key]),
            user_name=room.user_name(presser) if room is not None else None,
            thread=record.get("thread"),
            reply_to=target_id,
            message_id=event_id,
            addressed=True,
        )
        async with self.typing(room_id):
            reply = await self.core.handle(message)
        if reply is not None:
            await self.deliver(reply, target, owner=presser, cause=event_id)

    async def _remove_keys(self, room_id: str, record: Mapping[str, Any], cause: str) -> None:
        """Take the bot's own reactions off a reply whose button was pressed or whose buttons
        lapsed (best effort), and note it in the record."""
        target = record.get("event")
        timer = self._lapses.pop(target, None) if isinstance(target, str) else None
        if timer is not None and timer is not asyncio.current_task():
            timer.cancel()
        if isinstance(target, str):
            async with self._presses:
                stored = await self.buttons.get(target)
                if isinstance(stored, dict):
                    record = stored
                    await self.buttons.put(target, {**stored, "removed": True})
        for index, reaction_id in enumerate((record.get("reactions") or {}).values()):
            try:
                response = await self.client.room_redact(
                    room_id,
                    reaction_id,
                    reason="used",
                    tx_id=content.transaction_id(cause, f"unkey{index}"),
                )
            except CONNECTION_ERRORS as error:
                log.info("could not remove a button from %s: %s", room_id, _describe(error))
                return
            if isinstance(response, ErrorResponse):
                log.info("could not remove a button from %s: %s", room_id, _describe(response))

    @contextlib.asynccontextmanager
    async def typing(self, room_id: str) -> AsyncIterator[None]:
        """Show the bot typing in ``room_id`` while the block runs longer than ``typing_delay``."""
        if not self.settings.typing:
            yield
            return
        started = asyncio.Event()
        task = asyncio.get_running_loop().create_task(self._keep_typing(room_id, started))
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            if started.is_set():
                await self._typing_notice(room_id, False)

    async def _keep_typing(self, room_id: str, started: asyncio.Event) -> None:
        await asyncio.sleep(self.settings.typing_delay)
        deadline = time.monotonic() + TYPING_LIMIT
        while time.monotonic() < deadline:
            started.set()
            await self._typing_notice(room_id, True)
            await asyncio.sleep(TYPING_RENEW)

    async def _typing_notice(self, room_id: str, typing: bool) -> None:
        try:
            response = await self.client.room_typing(
                room_id, typing_state=typing, timeout=TYPING_MS
            )
        except CONNECTION_ERRORS as error:
            log.debug("typing notice not sent: %s", _describe(error))
            return
        if isinstance(response, ErrorResponse):
            log.debug("typing notice refused: %s", _describe(response))

    # --- sending ---------------------------------------------------------------------------------

    async def deliver(self, reply: Reply, target: Target, *, owner: str, cause: str) -> None:
        """Send ``reply`` as notices (split to fit), then its images, then its reaction keys.
        ``owner`` may press the buttons; ``cause`` (the event answered) seeds transaction ids."""
        keyed = button_keys(reply.body, self.settings.buttons)
        # the roll id goes in the small footer line under the reply instead of core's
        body = reply.without_roll_footer()
        parts = render(body, keys=[key for key, _ in keyed], meta=reply.meta)
        meta: dict[str, Any] = {"kind": reply.kind, **reply.meta}
        button_event: str | None = None
        for index, part in enumerate(parts):
            info = {**meta, "part": index + 1, "parts": len(parts)} if len(parts) > 1 else meta
            event_id = await self.send(
                target.room_id,
                "m.room.message",
                content.notice(part, target, info),
                content.transaction_id(cause, f"part{index}"),
            )
            if part.buttons and event_id is not None:
                button_event = event_id
        for index, picture in enumerate(reply.images()):
            await self._send_image(picture, target, content.transaction_id(cause, f"image{index}"))
        if keyed and button_event is not None:
            await self._offer_buttons(target, button_event, keyed, owner, cause)
        for index, private in enumerate(reply.private):
            await self._deliver_private(private, target, f"{cause}-private{index}")

    async def _deliver_private(self, part: Private, target: Target, cause: str) -> None:
        """A part for one user only, in the bot's direct-message room with them (created once,
        then reused; encrypted when the room the command came from is). Parts for one user go
        out one delivery at a time, in the order they were started: a part that waits while
        the direct room is made is not overtaken by the next command's."""
        lock = self._private_locks.setdefault(part.user, asyncio.Lock())
        try:
            async with lock:
                await self._deliver_private_now(part, target, cause)
        finally:
            if not lock.locked() and not getattr(lock, "_waiters", None):
                self._private_locks.pop(part.user, None)

    async def _deliver_private_now(self, part: Private, target: Target, cause: str) -> None:
        source = self.client.rooms.get(target.room_id)
        encrypted = bool(source is not None and source.encrypted)
        room_id = await self._direct_room(part.user, encrypted=encrypted)
        if room_id is None:
            name = part.name or part.user
            await self.notify(target, f"{name}: I could not open a private chat with you.", cause)
            return
        direct = Target(room_id=room_id, reply_to="")
        for index, text in enumerate(render(part.body)):
            await self.send(
                room_id,
                "m.room.message",
                content.notice(text, direct, {"kind": "private"}),
                content.transaction_id(cause, f"part{index}"),
            )

    async def _direct_room(self, user: str, *, encrypted: bool) -> str | None:
        """The direct-message room with ``user``: the one made before while ``user`` is still
        in it (or invited) and it is encrypted if it must be, else a new one."""
        namespace = f"matrix.direct:{self.user_id}"
        known = await self.core.state.get(namespace, user)
        if known is not None:
            room = self.client.rooms.get(known["room"])
            present = room is None or user in room.users or user in room.invited_users
            if present and (known["encrypted"] or not encrypted):
                return str(known["room"])
        initial = [content.ENCRYPTION_STATE] if encrypted else []
        try:
            response = await self.client.room_create(
                is_direct=True, invite=[user], initial_state=initial
            )
        except CONNECTION_ERRORS as error:
            log.warning("could not open a private chat with %s: %s", user, _describe(error))
            return None
        if not isinstance(response, RoomCreateResponse):
            log.warning("the homeserver refused a private chat with %s: %s", user, response)
            return None
        room_id = str(response.room_id)
        await self.core.state.set(namespace, user, {"room": room_id, "encrypted": encrypted})
        await self._until_known(room_id, user, encrypted=encrypted)
        return room_id

    async def _until_known(self, room_id: str, user: str, *, encrypted: bool) -> None:
        """Wait (bounded) until a room the bot just made, with ``user`` invited, has come
        through its sync, so that nio knows it and encrypts what is sent there when it must.

        In an encrypted room the keys of what the bot sends are shared with the room's members'
        devices. nio would first re-read the *joined* members, which leaves out ``user``, who is
        only invited until they accept; so the member list from the sync (the invitee included)
        is taken as complete, and the keys reach their devices: they can read the message once
        they join, as clients that share keys with invited members do."""
        deadline = time.monotonic() + DIRECT_ROOM_WAIT
        while time.monotonic() < deadline:
            room = self.client.rooms.get(room_id)
            if room is not None and (room.encrypted or not encrypted) and user in room.users:
                if encrypted:
                    room.members_synced = True
                return
            await asyncio.sleep(0.05)
        log.warning("a new private chat (%s) has not come through the sync yet", room_id)

    async def notify(self, target: Target, text: str, cause: str) -> None:
        """A one-line notice in reply to ``target``."""
        part = TextPart(html=escape(text), plain=text)
        await self.send(
            target.room_id,
            "m.room.message",
            content.notice(part, target, {"kind": "notice"}),
            content.transaction_id(cause, "notice"),
        )

    async def _offer_buttons(
        self,
        target: Target,
        event_id: str,
        keyed: Iterable[tuple[str, Any]],
        owner: str,
        cause: str,
    ) -> None:
        options = {key: button.command for key, button in keyed}
        record: dict[str, Any] = {
            "owner": owner,
            "thread": target.thread,
            "options": options,
            "reactions": {},
            "used": False,
            "ts": self.clock(),
            "room": target.room_id,
            "event": event_id,
        }
        await self.buttons.put(event_id, record)
        for index, key in enumerate(options):
            reaction_id = await self.send(
                target.room_id,
                "m.reaction",
                content.reaction(event_id, key),
                content.transaction_id(cause, f"key{index}"),
            )
            if reaction_id is None:
                continue
            # each key is recorded as soon as it exists, into what is stored now: the player may
            # press the first key while the others are still being added
            async with self._presses:
                stored = await self.buttons.get(event_id)
                current = stored if isinstance(stored, dict) else record
                current["reactions"] = {**(current.get("reactions") or {}), key: reaction_id}
                await self.buttons.put(event_id, current)
        stored = await self.buttons.get(event_id)
        if isinstance(stored, dict) and stored.get("used"):
            # pressed while its keys were being added: take back the ones added since
            await self._remove_keys(target.room_id, stored, f"late:{cause}")
        else:
            self._lapse_later(target.room_id, event_id, self.settings.button_ttl)

    def _lapse_later(self, room_id: str, event_id: str, seconds: float) -> None:
        """Take a reply's buttons back once they lapse (unless pressed first)."""
        old = self._lapses.pop(event_id, None)
        if old is not None:
            old.cancel()
        task = asyncio.get_running_loop().create_task(self._lapse(room_id, event_id, seconds))
        self._lapses[event_id] = task
        task.add_done_callback(functools.partial(self._lapse_done, event_id))

    def _lapse_done(self, event_id: str, task: asyncio.Task[None]) -> None:
        if self._lapses.get(event_id) is task:
            del self._lapses[event_id]

    async def _lapse(self, room_id: str, event_id: str, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))
        async with self._presses:
            record = await self.buttons.get(event_id)
            if not isinstance(record, dict) or record.get("used") or record.get("removed"):
                return
            await self.buttons.put(event_id, {**record, "lapsed": True})
        try:
            await self._remove_keys(room_id, {**record, "event": event_id}, f"lapse:{event_id}")
        except LoginFailed as error:
            self._failure = error
        log.info("the buttons of %s in %s lapsed: taken back", event_id, room_id)

    async def _sweep_buttons(self) -> None:
        """Once per start: take back the buttons that were pressed or lapsed while the bot was
        away (or stopped before it took them back), and time the others."""
        now = self.clock()
        for key in await self.core.state.keys(BUTTONS_NAMESPACE, "id:"):
            record = await self.core.state.get(BUTTONS_NAMESPACE, key)
            if not isinstance(record, dict) or record.get("removed"):
                continue
            room_id, event_id = record.get("room"), key.removeprefix("id:")
            if not isinstance(room_id, str):
                continue  # recorded by an older version: nothing to go by
            left = float(record.get("ts") or 0) + self.settings.button_ttl - now
            if record.get("used") or record.get("lapsed"):
                await self._remove_keys(room_id, {**record, "event": event_id}, f"sweep:{event_id}")
            else:
                self._lapse_later(room_id, event_id, left)

    async def _send_image(self, picture: Image, target: Target, txn: str) -> None:
        room = self.client.rooms.get(target.room_id)
        encrypted = bool(room is not None and room.encrypted)
        upload: Any = None
        keys: dict[str, Any] | None = None
        try:
            # safe to repeat: an upload that went through only leaves an unused file behind
            upload, keys = await retry(
                lambda: self.client.upload(
                    io.BytesIO(picture.data),
                    content_type=picture.mime,
                    filename=picture.filename,
                    encrypt=encrypted,
                    filesize=len(picture.data),
                ),
                what=f"uploading {picture.filename}",
                safe=lambda error: isinstance(error, CONNECTION_ERRORS),
                attempts=SEND_ATTEMPTS,
                backoff=self._send_backoff(),
                logger=log,
                level=logging.INFO,
            )
        except CONNECTION_ERRORS as error:
            log.warning("could not upload %s: %s", picture.filename, _describe(error))
            return
        if not isinstance(upload, UploadResponse):
            log.warning("the homeserver refused the upload of %s: %s", picture.filename, upload)
            await self.notify(target, f"I could not upload the image ({picture.alt}).", txn)
            return
        image = content.image(picture, target, url=upload.content_uri, encryption=keys)
        await self.send(target.room_id, "m.room.message", image, txn)

    async def send(
        self, room_id: str, event_type: str, body: dict[str, Any], txn: str
    ) -> str | None:
        """Send one event; the event id, or ``None`` if it could not be sent (logged). A lost
        connection is retried with back-off and the same transaction id."""
        room = self.client.rooms.get(room_id)
        if room is not None and room.encrypted and self.client.olm is None:
            log.warning("not answering in %s: the room is encrypted and encryption is off", room_id)
            return None

        async def attempt() -> Any:
            response = await self.client.room_send(
                room_id, event_type, body, tx_id=txn, ignore_unverified_devices=True
            )
            if _is_transient(response):
                raise Unreachable(_describe(response))
            return response

        try:
            # safe to repeat: the same transaction id makes the homeserver answer a repeat with
            # the event it already made
            response = await retry(
                attempt,
                what=f"sending to {room_id}",
                safe=lambda error: isinstance(error, SEND_RETRIED),
                attempts=SEND_ATTEMPTS,
                backoff=self._send_backoff(),
                logger=log,
                level=logging.INFO,
            )
        except SEND_RETRIED as error:
            log.warning("gave up sending to %s: %s", room_id, _describe(error))
            return None
        except LocalProtocolError as error:
            log.warning("cannot send to %s: %s", room_id, error)
            return None
        if isinstance(response, RoomSendResponse):
            return str(response.event_id)
        if _logged_out(response):
            raise LoginFailed(f"the homeserver ended the session: {_describe(response)}")
        log.warning("the homeserver refused a message to %s: %s", room_id, _describe(response))
        return None

    def _send_backoff(self) -> Backoff:
        return Backoff(self.settings.reconnect_initial, self.settings.reconnect_max)

    # --- rooms -----------------------------------------------------------------------------------

    async def _on_invite(self, room_id: str, state: list[Any]) -> None:
        # nio's invite events keep the membership as attributes (not in ``source``)
        inviter = next(
            (
                str(event.sender)
                for event in state
                if getattr(event, "state_key", None) == self.user_id
                and getattr(event, "membership", None) == "invite"
            ),
            None,
        )
        if inviter is None or room_id in self._invites_seen:
            return
        self._invites_seen.add(room_id)
        self._invitations[room_id] = inviter
        await self._answer_invitations()

    async def _answer_invitations(self) -> None:
        """Join (or decline, by ``invite_policy``) the rooms the bot is invited to; an answer
        that cannot reach the homeserver is tried again after the next sync."""
        for room_id, inviter in list(self._invitations.items()):
            accept = self.settings.may_invite(inviter)
            try:
                if accept:
                    response = await self.client.join(room_id)
                else:
                    response = await self.client.room_leave(room_id)
            except CONNECTION_ERRORS as error:
                log.info("the invitation to %s waits: %s", room_id, _describe(error))
                return
            if isinstance(response, ErrorResponse) and _is_transient(response):
                log.info("the invitation to %s waits: %s", room_id, _describe(response))
                continue
            del self._invitations[room_id]
            if isinstance(response, ErrorResponse):
                log.warning(
                    "could not %s the invitation to %s from %s: %s",
                    "accept" if accept else "decline",
                    room_id,
                    inviter,
                    _describe(response),
                )
                self._invites_seen.discard(room_id)
            elif accept:
                log.info("joined %s, invited by %s", room_id, inviter)
            else:
                log.info(
                    "declined the invitation to %s from %s (invite_policy = %s)",
                    room_id,
                    inviter,
                    self.settings.invite_policy,
                )

    async def _on_leave(self, room_id: str, events: list[Any]) -> None:
        """Kicked or banned: log who did it and why, and forget the room."""
        self._invites_seen.discard(room_id)
        for event in reversed(events):
            source = getattr(event, "source", {})
            if source.get("type") != "m.room.member" or source.get("state_key") != self.user_id:
                continue
            membership = (source.get("content") or {}).get("membership")
            by = source.get("sender")
            if by != self.user_id and membership in ("leave", "ban"):
                reason = (source.get("content") or {}).get("reason")
                log.warning(
                    "%s by %s from %s%s; leaving it",
                    "banned" if membership == "ban" else "removed",
                    by,
                    room_id,
                    f" ({reason})" if reason else "",
                )
                with contextlib.suppress(*CONNECTION_ERRORS):
                    await self.client.room_forget(room_id)
            break

    # --- encrypted events whose key is late ------------------------------------------------------

    def _keep_undecrypted(self, room_id: str, event: Any) -> None:
        if self.client.olm is None:
            log.info("cannot read an encrypted message in %s: encryption is off", room_id)
            return
        log.info("cannot decrypt %s in %s yet; waiting for its key", event.event_id, room_id)
        self._undecrypted[event.event_id] = (room_id, event, time.monotonic())
        while len(self._undecrypted) > UNDECRYPTED_SIZE:
            self._undecrypted.popitem(last=False)

    async def _retry_undecrypted(self) -> None:
        now = time.monotonic()
        for event_id, (room_id, event, seen) in list(self._undecrypted.items()):
            if now - seen > UNDECRYPTED_SECONDS:
                log.warning("gave up decrypting %s in %s", event_id, room_id)
                del self._undecrypted[event_id]
                continue
            try:
                decrypted = self.client.decrypt_event(event)
            except EncryptionError:
                continue
            del self._undecrypted[event_id]
            decrypted.room_id = room_id
            self._on_event(room_id, decrypted, self._batches[-1] if self._batches else None)

    # --- shutting down ---------------------------------------------------------------------------

    @property
    def busy(self) -> int:
        """Answers still being worked on."""
        return len(self._tasks)

    async def drain(self, timeout: float = DRAIN_SECONDS) -> None:
        """Wait until every answer started so far is sent; cancel what is left after
        ``timeout`` seconds."""
        await drain_tasks(self._tasks, timeout, what="answers", log=log)

    async def close(self) -> None:
        """Finish pending answers, save the sync token, close the connection."""
        await self.drain()
        for timer in list(self._lapses.values()):
            timer.cancel()
        await asyncio.gather(*self._lapses.values(), return_exceptions=True)
        if self.client is not None:
            try:
                await self.checkpoint()
                self.session.flush()
            finally:
                await self.client.close()


async def _checked(call: Any, what: str) -> None:
    response = await call
    if isinstance(response, ErrorResponse):
        log.warning("%s failed: %s", what, _describe(response))


def _describe(what: object) -> str:
    if isinstance(what, ErrorResponse):
        return f"{what.status_code or 'error'}: {what.message}"
    if isinstance(what, BaseException):
        return f"{type(what).__name__}: {what}" if str(what) else type(what).__name__
    return str(what)


def _logged_out(response: object) -> bool:
    return isinstance(response, ErrorResponse) and response.status_code in LOGGED_OUT


def _is_transient(response: object) -> bool:
    """An error a proxy or a restarting homeserver gives (no Matrix error code, or 5xx)."""
    if not isinstance(response, ErrorResponse):
        return False
    status = getattr(getattr(response, "transport_response", None), "status", None)
    return response.status_code in (None, "M_UNKNOWN") and (status is None or status >= 500)


#: the power level from which a Matrix user counts as a room administrator (Storyteller rights)
ADMIN_POWER_LEVEL = 50


def _moderates(room: Any, user_id: str) -> bool:
    """A power level of :data:`ADMIN_POWER_LEVEL` or more in the room (moderators, admins)."""
    levels = getattr(room, "power_levels", None)
    if levels is None:
        return False
    try:
        return int(levels.get_user_level(user_id)) >= ADMIN_POWER_LEVEL
    except (TypeError, ValueError, AttributeError):
        return False


def skipped_notice(commands: int, *, cut_short: bool, max_age: float, limit: int) -> str:
    """The notice after an absence: which commands were not answered, and what to do."""
    age = describe_age(max_age)
    if cut_short:
        seen = f" (of those I saw, {commands} were too old to answer)" if commands else ""
        return (
            "I was away and could not read back this far: commands among the older messages "
            f"were not answered{seen}. I read back at most {limit} messages, none older than "
            f"{age}. Send again what still matters."
        )
    return (
        f"I was away: {commands} command(s) sent more than {age} before I saw them were not "
        "answered. Send again what still matters."
    )


def describe_age(seconds: float) -> str:
    if seconds >= 7200:
        return f"{seconds / 3600:.0f} hours"
    if seconds >= 120:
        return f"{seconds / 60:.0f} minutes"
    return f"{seconds:.0f} seconds"
