"""The Telegram bot: updates in, coterie replies out (python-telegram-bot's ``Bot`` for the API).

Updates arrive as JSON from long polling or the webhook and all take one path,
:meth:`TelegramBot.receive`: the ``update_id`` is checked against the ids already seen (in the
state store, so a webhook retry or a restart does not answer twice), then the update is handled
in a tracked task. Updates of one chat are handled one after the other, in order (a ``!reroll``
never overtakes its ``!roll``); different chats are handled side by side, at most
``MAX_IN_FLIGHT`` at once.

Every Bot API call goes through :meth:`TelegramBot.call`, which waits out Telegram's 429
``retry_after`` and backs off on network errors, a bounded number of times.

python-telegram-bot is imported here, and this module is imported only when the adapter runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dtm
import logging
import re
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
from telegram import (
    Bot,
    BotCommand,
    BotCommandScopeChat,
    BotCommandScopeDefault,
    CallbackQuery,
    Chat,
    InlineKeyboardButton,
    InlineKeyboardMarkup,
    InputFile,
    LinkPreviewOptions,
    MessageEntity,
    ReplyParameters,
    Update,
)
from telegram import Message as TelegramMessage
from telegram.constants import ChatType, ParseMode
from telegram.error import (
    BadRequest,
    ChatMigrated,
    Forbidden,
    InvalidToken,
    NetworkError,
    RetryAfter,
    TelegramError,
)
from telegram.request import HTTPXRequest
from telegram.warnings import PTBDeprecationWarning

from coterie.framework.adapter import drain_tasks
from coterie.framework.app import Coterie
from coterie.framework.message import Message
from coterie.render.elements import Actions, Button, Image, Private, Reply
from coterie.retry import Backoff, retry
from coterie.storage.joining import join_next_transaction
from coterie.storage.state import StateStore
from coterie_telegram.buttons import (
    MAX_CALLBACK_DATA,
    ButtonBoard,
    callback_data,
    read_callback_data,
)
from coterie_telegram.commands import CommandWords, menu, read_text, with_user_ids
from coterie_telegram.html import (
    MAX_CAPTION,
    TelegramEncoder,
    escape,
    split_html,
    truncate_html,
    visible_text,
)
from coterie_telegram.records import ClaimLost, PendingId, SeenIds
from coterie_telegram.settings import Credentials, TelegramSettings

log = logging.getLogger("coterie.telegram")

PLATFORM = "telegram"
#: the update types the bot asks for; edited messages, channel posts and the rest never come
ALLOWED_UPDATES = ("message", "callback_query")
#: update ids already answered: kept two days (Telegram keeps an unconfirmed update one day)
UPDATES_NAMESPACE = "telegram.updates"
UPDATE_TTL = 2 * 86_400.0
#: seconds between polls while only updates still being answered come back
UNANSWERED_POLL = 0.25
MAX_UPDATE_IDS = 2000
#: a supergroup's id → the room id of the group it was before (``migrate_to_chat_id``)
CHATS_NAMESPACE = "telegram.chats"
#: a chat's own command menu (when its rule set is not the default one)
MENUS_NAMESPACE = "telegram.menus"
#: chats whose menu :meth:`TelegramBot.sync_menu` keeps in memory at most (then none again)
MENUS_KNOWN = 10_000
#: updates being handled at once; more wait (polling waits, a webhook answers later)
MAX_IN_FLIGHT = 64
#: how long :meth:`TelegramBot.drain` waits for replies still being sent
DRAIN_SECONDS = 10.0
#: how long the webhook waits for an update's answer before it acknowledges it anyway (Telegram
#: waits for the HTTP answer; an update acknowledged before it is answered is lost if the
#: process dies, so the 200 normally comes after the reply went out)
WEBHOOK_BUDGET = 8.0
#: a flood wait longer than this is not waited out: that one message is dropped
MAX_RETRY_AFTER = 120.0
#: network errors: the first retry after this many seconds, doubling up to MAX_BACKOFF
FIRST_BACKOFF = 1.0
MAX_BACKOFF = 30.0
#: HTTP timeouts (seconds); long polling adds its own timeout to the read timeout
READ_TIMEOUT = 15.0
CONNECT_TIMEOUT = 10.0
WRITE_TIMEOUT = 30.0
#: Telegram's inline keyboards: buttons per row, label length, buttons per message
MAX_ROW = 8
MAX_LABEL = 64
MAX_BUTTONS = 100

EXPIRED = "These buttons have expired. Send the command again."
UNKNOWN_BUTTON = "I don't know this button (not one of mine, or no longer). Send the command again."
NOT_YOURS = "These buttons belong to {name}: only they can press them."

#: something Telegram could turn into a link with a preview
_LINKISH = re.compile(r"(?i)://|\bwww\.|[a-z0-9-]\.[a-z]{2,}\b")

#: the entities that can address the bot at the start of a message
LEADING_ENTITIES = (MessageEntity.BOT_COMMAND, MessageEntity.MENTION)
#: the entity of a person picked from the member list (someone without a username)
TEXT_MENTION = MessageEntity.TEXT_MENTION
#: the names of people seen that a bot keeps for mentions by id
MAX_NAMES = 2000

T = TypeVar("T")


class CoterieBot(Bot):
    """python-telegram-bot's ``Bot`` plus ``getUpdates`` as raw JSON, so that one update it
    cannot read is skipped instead of failing (and re-fetching) the whole batch for ever."""

    async def fetch_updates(
        self, offset: int | None, timeout: int, allowed: Sequence[str], limit: int = 100
    ) -> list[dict[str, Any]]:
        result = await self._post(
            "getUpdates",
            {
                "offset": offset,
                "timeout": timeout,
                "limit": limit,
                "allowed_updates": list(allowed),
            },
            read_timeout=READ_TIMEOUT + timeout,
        )
        if not isinstance(result, list) or not all(isinstance(item, dict) for item in result):
            raise TelegramError(f"getUpdates returned {type(result).__name__}, not a list")
        return result

    async def post_text(
        self,
        chat_id: int,
        text: str,
        *,
        parse_mode: str | None,
        message_thread_id: int | None,
        reply_parameters: ReplyParameters | None,
        reply_markup: InlineKeyboardMarkup | None,
        link_preview_options: LinkPreviewOptions | None,
    ) -> None:
        """``sendMessage`` as ``send_message`` sends it (the same parameters, errors and
        retries), without building a ``Message`` from Telegram's answer, which coterie does not
        read (a profile of the webhook under load found that parse in ~5% of the process's
        time)."""
        await self._post(
            "sendMessage",
            {
                "chat_id": chat_id,
                "text": text,
                "parse_mode": parse_mode,
                "message_thread_id": message_thread_id,
                "reply_parameters": reply_parameters,
                "reply_markup": reply_markup,
                "link_preview_options": link_preview_options,
            },
        )


def make_bot(settings: TelegramSettings, credentials: Credentials) -> CoterieBot:
    """The ``Bot``, its HTTP connections sized for :data:`MAX_IN_FLIGHT` replies at once."""
    # httpx logs every request's URL at INFO, and a Bot API URL contains the token
    quiet = logging.getLogger("httpx")
    if quiet.level == logging.NOTSET:
        quiet.setLevel(logging.WARNING)

    def request(pool: int) -> HTTPXRequest:
        return HTTPXRequest(
            connection_pool_size=pool,
            read_timeout=READ_TIMEOUT,
            write_timeout=WRITE_TIMEOUT,
            connect_timeout=CONNECT_TIMEOUT,
            pool_timeout=5.0,
        )

    return CoterieBot(
        credentials.bot_token,
        base_url=settings.api_url,
        request=request(MAX_IN_FLIGHT),
        get_updates_request=request(1),
    )


def retry_seconds(error: RetryAfter) -> float:
    """The wait Telegram asked for (python-telegram-bot gives ``int`` or ``timedelta``)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PTBDeprecationWarning)
        value = error.retry_after
    return value.total_seconds() if isinstance(value, dtm.timedelta) else float(value)


#: failures of the request itself that prove it never reached Telegram
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


def not_processed(error: BaseException) -> bool:
    """True when ``error`` proves Telegram did not carry the call out, so sending it again
    cannot post twice: a 429 (refused, "retry after"), or a request that never left (the
    connection was refused or could not be opened, or no connection was free). A read time-out,
    a dropped connection or a 5xx after the request went out prove nothing: false."""
    if isinstance(error, RetryAfter):
        return True
    if isinstance(error, NetworkError) and not isinstance(error, BadRequest):
        return isinstance(error.__cause__, _NOT_SENT)
    return False


def transient(error: BaseException) -> bool:
    """A failure worth another try of an idempotent call: a 429, a network error, a time-out
    or a 5xx (never a refusal such as 400, 401 or 403)."""
    return isinstance(error, RetryAfter) or (
        isinstance(error, NetworkError) and not isinstance(error, BadRequest)
    )


def server_wait(error: BaseException) -> float | None:
    """The wait Telegram asked for with a 429, if ``error`` is one."""
    return retry_seconds(error) if isinstance(error, RetryAfter) else None


@dataclass(frozen=True)
class Target:
    """Where a reply goes and whose it is."""

    chat_id: int
    #: the room key's id (the chat id, or the first id of a group that became a supergroup)
    room: str
    #: who asked: the owner of the reply's buttons and the recipient of private replies
    user_id: int
    user_name: str
    #: the forum topic, when the command was written in one
    thread_id: int | None = None
    #: the message the reply answers
    reply_to: int | None = None
    private: bool = False


@dataclass
class _ChatLock:
    lock: asyncio.Lock
    users: int = 0


class ChatLocks:
    """One lock per chat, held while that chat's update is handled; a chat's entry exists only
    while some update of it is waiting or running."""

    def __init__(self) -> None:
        self._locks: dict[int, _ChatLock] = {}

    @contextlib.asynccontextmanager
    async def hold(self, chat: int) -> AsyncIterator[None]:
        entry = self._locks.setdefault(chat, _ChatLock(asyncio.Lock()))
        entry.users += 1
        try:
            async with entry.lock:
                yield
        finally:
            entry.users -= 1
            if entry.users == 0:
                del self._locks[chat]

    def __len__(self) -> int:
        return len(self._locks)


class Migrations:
    """Groups that became supergroups. The supergroup keeps the group's room id, so everything
    keyed by the room (settings changed from chat, ``[rooms."telegram:ID"]`` tables, rule
    state such as a V5 last roll) carries over without being copied."""

    def __init__(self, store: StateStore) -> None:
        self._store = store

    async def room_for(self, chat: Chat) -> str:
        if chat.type != ChatType.SUPERGROUP:  # only a supergroup can be a migration's target
            return str(chat.id)
        stored = await self._store.get(CHATS_NAMESPACE, str(chat.id))
        return stored if isinstance(stored, str) and stored else str(chat.id)

    async def record(self, old: int, new: int) -> None:
        if old == new:
            return
        room = await self._store.get(CHATS_NAMESPACE, str(old))
        room = room if isinstance(room, str) and room else str(old)
        if await self._store.get(CHATS_NAMESPACE, str(new)) != room:
            await self._store.set(CHATS_NAMESPACE, str(new), room)
            log.info("chat %s became supergroup %s; it keeps room telegram:%s", old, new, room)


class TelegramBot:
    """One Telegram bot answering through a :class:`~coterie.app.Coterie`."""

    def __init__(
        self,
        core: Coterie,
        settings: TelegramSettings,
        credentials: Credentials,
        *,
        bot: CoterieBot | None = None,
    ) -> None:
        self.core = core
        self.settings = settings
        self.credentials = credentials
        self.bot = bot or make_bot(settings, credentials)
        self.seen = SeenIds(
            core.state,
            UPDATES_NAMESPACE,
            credentials.bot_id,
            ttl=UPDATE_TTL,
            max_entries=MAX_UPDATE_IDS,
        )
        #: updates received and not answered yet (polling confirms no offset past them)
        self.unanswered: set[int] = set()
        self.buttons = ButtonBoard(core.state, credentials.bot_id, ttl=settings.button_ttl)
        self.migrations = Migrations(core.state)
        self.words = CommandWords.of(core.commands)
        #: user id → name of the people seen lately (senders, people mentioned without a username):
        #: a reply that mentions someone by id shows their name
        self.names: dict[str, str] = {}
        self.html = TelegramEncoder(self.names)
        #: the bot's @username, from ``getMe`` (:meth:`start`)
        self.username = ""
        self._tasks: set[asyncio.Task[None]] = set()
        self._chats = ChatLocks()
        #: chat → the rule set whose menu it has (``None``: the default), as last made or found
        self._menus: dict[int, str | None] = {}
        self._capacity = asyncio.Semaphore(MAX_IN_FLIGHT)
        #: webhook updates whose claim another process took while this one handled them
        self._elsewhere: set[int] = set()

    # --- lifecycle -------------------------------------------------------------------------------

    async def start(self) -> None:
        """Check the token (``getMe``), learn the bot's username, register the command menu."""
        try:
            await self.call("getMe", self.bot.initialize, idempotent=True)
        except InvalidToken:
            raise RuntimeError(
                f"Telegram refused the bot token from ${self.settings.bot_token_env}"
            ) from None
        self.username = self.bot.username
        log.info("Telegram: signed in as @%s", self.username)
        if self.settings.command_menu:
            self._spawn(self.register_menu(), what="the command menu")

    async def close(self) -> None:
        """Finish the replies under way, then close the HTTP connections."""
        await self.drain()
        await self.bot.shutdown()

    @property
    def busy(self) -> int:
        """Updates still being handled."""
        return len(self._tasks)

    async def drain(self, timeout: float = DRAIN_SECONDS) -> None:
        """Wait until every update received so far is handled; cancel what is left after
        ``timeout`` seconds."""
        await drain_tasks(self._tasks, timeout, what="updates", log=log)
        try:
            await self.seen.flush()
        except Exception:
            log.exception("state store failed; the last updates are not marked answered")

    def _spawn(
        self,
        work: Coroutine[Any, Any, None],
        *,
        what: str,
        chat: int | None = None,
        release: bool = False,
    ) -> asyncio.Task[None]:
        """Run ``work`` in a tracked task (after the chat's earlier updates, when ``chat`` is
        given); ``release`` gives back the in-flight slot :meth:`receive` took."""
        task = asyncio.get_running_loop().create_task(self._guarded(work, what, chat, release))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _guarded(
        self, work: Coroutine[Any, Any, None], what: str, chat: int | None, release: bool
    ) -> None:
        try:
            if chat is None:
                await work
            else:
                async with self._chats.hold(chat):
                    await work
        except NetworkError as error:
            if isinstance(error, BadRequest):
                log.warning("Telegram refused a call while handling %s: %s", what, error)
            else:  # it may have arrived: reported, not sent again (no reply posted twice)
                log.error(
                    "a reply to %s may not have arrived (%s); it is not sent again, since "
                    "Telegram may have posted it",
                    what,
                    error,
                )
        except TelegramError as error:
            log.warning("Telegram refused a call while handling %s: %s", what, error)
        except Exception:
            log.exception("handling %s failed", what)
        finally:
            work.close()  # cancelled before it started: no "never awaited" warning
            if release:
                self._capacity.release()

    # --- the Bot API, with retries ---------------------------------------------------------------

    async def call(self, what: str, action: Callable[[], Awaitable[T]], *, idempotent: bool) -> T:
        """``action()``, at most ``rate_limit_retries`` more times when that is safe: after a
        429 (waiting ``retry_after``, up to :data:`MAX_RETRY_AFTER`) or a request that never
        reached Telegram (:func:`not_processed`), and, for an ``idempotent`` call (setting the
        webhook or the menu, answering a button), after any network error or time-out (waits of
        1, 2, 4 … s with jitter). A send is not idempotent: a time-out while Telegram answers it
        may mean the message went out, so it is raised, never sent again. Other errors are
        raised."""
        return await retry(
            action,
            what=what,
            safe=transient if idempotent else not_processed,
            attempts=self.settings.rate_limit_retries + 1,
            backoff=Backoff(initial=FIRST_BACKOFF, maximum=MAX_BACKOFF),
            server_wait=server_wait,
            max_server_wait=MAX_RETRY_AFTER,
            logger=log,
        )

    # --- updates in ------------------------------------------------------------------------------

    async def receive(self, data: Mapping[str, Any]) -> bool:
        """Take one update (Telegram's JSON): true if it is new and now being handled, false for
        an update id seen before (not answered again) or something that is not an update."""
        taken, _ = await self._take(data)
        return taken

    async def answer_webhook(self, data: Mapping[str, Any]) -> int:
        """The webhook's HTTP status for one update. A new update is answered first and
        acknowledged (200) once its reply went out, or after :data:`WEBHOOK_BUDGET` seconds: a
        process killed before then has acknowledged nothing it did not do, and Telegram posts the
        update again. An update seen before gets 200 when it was answered, else 503: its claim is
        held by a task or a process answering it now, or by one that died (Telegram asks again
        later; once the claim's lease lapsed it is taken over and answered)."""
        taken, task = await self._take(data)
        if task is not None:
            await asyncio.wait({task}, timeout=WEBHOOK_BUDGET)
            update_id = data["update_id"]
            if update_id in self._elsewhere:  # its claim was taken by another process
                self._elsewhere.discard(update_id)
                return 503
            return 200
        update_id = data.get("update_id")
        if taken or not isinstance(update_id, int):
            return 200
        try:
            answered = await self.seen.is_done(str(update_id))
        except Exception:
            log.exception("state store failed; update %d acknowledged", update_id)
            answered = True
        return 200 if answered else 503

    async def _take(self, data: Mapping[str, Any]) -> tuple[bool, asyncio.Task[None] | None]:
        """:meth:`receive`, and the task answering the update when one was started."""
        update_id = data.get("update_id")
        if not isinstance(update_id, int) or isinstance(update_id, bool):
            log.warning("ignored a delivery without an update_id")
            return False, None
        # a message is claimed in its command's transaction (one write transaction per
        # message): here it is only checked; a button press is claimed here
        later = isinstance(data.get("message"), dict)
        lease = self.settings.claim_lease
        try:
            if later:
                # over the webhook the store is not read here: the claim in the command's
                # transaction finds an update answered or being answered (a round trip less
                # per message on PostgreSQL)
                webhook = self.settings.mode == "webhook"
                first = await self.seen.check(str(update_id), lease=lease, look=not webhook)
            else:
                first = await self.seen.add(str(update_id), lease=lease)
        except Exception:  # a broken store must not silence the bot
            log.exception("state store failed; update %d handled without de-duplication", update_id)
            first, later = True, False
        if not first:
            log.info("update %d delivered again: not answered twice", update_id)
            return False, None
        try:
            update = Update.de_json(dict(data), self.bot)
        except Exception:
            log.exception("update %d could not be read: skipped", update_id)
            if later:  # recorded as answered: it is never read again
                await self.seen.done(str(update_id))
            return True, None
        await self._capacity.acquire()
        chat = update.effective_chat
        self.unanswered.add(update_id)
        pending = self.seen.claim_later(str(update_id), lease=lease) if later else None
        task = self._spawn(
            self._answer_update(update, update_id, pending),
            what=f"update {update_id}",
            chat=chat.id if chat else None,
            release=True,
        )
        return True, task

    async def _answer_update(
        self, update: Update, update_id: int, pending: PendingId | None = None
    ) -> None:
        """Handle an update, then mark it answered (in the store: a redelivery is not answered
        again; in polling: its offset may be confirmed). With ``pending``, the update's claim
        goes into the first transaction the handling opens (the command's)."""
        lost = False
        try:
            join_next_transaction(pending)
            try:
                await self._handle(update, pending)
            finally:
                join_next_transaction(None)
        except ClaimLost as claim:
            lost = True
            self.seen.forget(str(update_id))
            if claim.answered:  # a delivery again of an update answered before: 200
                log.info("update %d delivered again: not answered twice", update_id)
            else:
                if self.settings.mode == "webhook":  # 503: Telegram asks again later
                    self._elsewhere.add(update_id)
                log.info("update %d is being answered elsewhere: not answered here", update_id)
        finally:
            self.unanswered.discard(update_id)
            if not lost:
                await self._mark_answered(update_id)

    async def _mark_answered(self, update_id: int) -> None:
        try:
            if self.settings.mode == "webhook":
                # the mark rides on the next message's claim (records.SeenIds.done_soon), or
                # lands in a moment; the webhook's 200 goes out now, the reply being out
                self.seen.done_soon(str(update_id))
            else:
                await self.seen.done(str(update_id))
        except Exception:
            log.exception("could not mark update %d answered", update_id)

    async def _handle(self, update: Update, pending: PendingId | None = None) -> None:
        if update.message is not None:
            await self._on_message(update.message, pending)
        elif update.callback_query is not None:
            await self._on_callback(update.callback_query)
        # anything else (edited messages, channel posts, …) is not for coterie

    async def _settle(self, pending: PendingId | None) -> None:
        """Make sure the update's claim is this process's before replying (raises
        :class:`ClaimLost` when it is another's). A store that fails here does not silence the
        bot: the reply goes out, as when the claim itself failed."""
        if pending is None:
            return
        try:
            taken = await self.seen.settle(pending)
        except Exception:
            log.exception("state store failed; an update is answered without de-duplication")
            return
        if not taken:
            key = pending.full.removeprefix(self.seen._prefix)
            try:
                answered = await self.seen.is_done(key)
            except Exception:  # not known: 503, and Telegram asks again later
                log.exception("state store failed; update %s taken for one answered elsewhere", key)
                answered = False
            raise ClaimLost(pending.full, answered=answered)

    async def _on_message(self, tg: TelegramMessage, pending: PendingId | None = None) -> None:
        chat = tg.chat
        if tg.migrate_to_chat_id is not None:
            await self.migrations.record(chat.id, tg.migrate_to_chat_id)
            return
        if tg.migrate_from_chat_id is not None:
            await self.migrations.record(tg.migrate_from_chat_id, chat.id)
            return
        user = tg.from_user
        if user is None or user.is_bot or not tg.text:
            return  # bots (this one too), anonymous admins, service messages, media
        if tg.forward_origin is not None or tg.via_bot is not None or tg.is_automatic_forward:
            return  # the sender did not write it
        private = chat.type == ChatType.PRIVATE
        first = next((e for e in tg.entities if e.offset == 0), None)
        leading = (
            (str(first.type), tg.parse_entity(first))
            if first is not None and first.type in LEADING_ENTITIES
            else None
        )
        self._remember(str(user.id), user.full_name)
        picked = [(e.offset, e.length, e.user) for e in tg.entities if e.type == TEXT_MENTION]
        for _, _, person in picked:
            if person is not None:
                self._remember(str(person.id), person.full_name)
        spans = [(offset, length, who.id) for offset, length, who in picked if who is not None]
        written = with_user_ids(tg.text, spans)
        read = read_text(
            written, leading, bot_username=self.username, private=private, words=self.words
        )
        if read is None:
            return
        text, addressed = read
        room = await self.migrations.room_for(chat)
        thread = tg.message_thread_id if tg.is_topic_message else None
        message = Message(
            platform=PLATFORM,
            room=room,
            user=str(user.id),
            text=text,
            user_name=user.full_name,
            handles=(user.username,) if user.username else (),
            admin=private,  # a private chat is the user's own room
            thread=str(thread) if thread is not None else None,
            reply_to=str(tg.message_id),
            message_id=str(tg.message_id),
            addressed=addressed,
        )
        reply = await self.core.handle(message)
        if reply is None:
            return
        await self._settle(pending)
        target = Target(
            chat_id=chat.id,
            room=room,
            user_id=user.id,
            user_name=user.full_name,
            thread_id=thread,
            reply_to=tg.message_id,
            private=private,
        )
        await self.deliver(reply, target)
        if self.settings.command_menu:
            await self.sync_menu(chat.id, message.room_key)

    async def _on_callback(self, query: CallbackQuery) -> None:
        presser = query.from_user
        origin = query.message
        parsed = read_callback_data(query.data)
        if parsed is None or origin is None:
            await self._answer(query, UNKNOWN_BUTTON)
            return
        token, index = parsed
        room = await self.migrations.room_for(origin.chat)
        row = await self.buttons.peek(token)
        if row is None:
            await self._answer(query, EXPIRED)
            return
        if row.room != room or row.command(index) is None:
            log.warning("a button press with data that does not match its message: refused")
            await self._answer(query, UNKNOWN_BUTTON)
            return
        if row.owner != str(presser.id):
            await self._answer(query, NOT_YOURS.format(name=row.owner_name[:60]), alert=False)
            return
        row = await self.buttons.redeem(token)  # one press per reply, even when racing
        command = row.command(index) if row is not None else None
        if command is None:
            await self._answer(query, EXPIRED)
            return
        await self._answer(query, None)
        with contextlib.suppress(TelegramError):  # the buttons go: a second click runs nothing
            await self.call(
                "editMessageReplyMarkup",
                lambda: self.bot.edit_message_reply_markup(
                    chat_id=origin.chat.id, message_id=origin.message_id
                ),
                idempotent=True,
            )
        thread = (
            origin.message_thread_id
            if isinstance(origin, TelegramMessage) and origin.is_topic_message
            else None
        )
        message = Message(
            platform=PLATFORM,
            room=room,
            user=str(presser.id),
            text=command,
            user_name=presser.full_name,
            thread=str(thread) if thread is not None else None,
            reply_to=str(origin.message_id),
            message_id=f"callback:{query.id}",
            addressed=True,
        )
        reply = await self.core.handle(message)
        if reply is not None:
            target = Target(
                chat_id=origin.chat.id,
                room=room,
                user_id=presser.id,
                user_name=presser.full_name,
                thread_id=thread,
                reply_to=origin.message_id,
                private=origin.chat.type == ChatType.PRIVATE,
            )
            await self.deliver(reply, target)

    async def _answer(self, query: CallbackQuery, text: str | None, *, alert: bool = True) -> None:
        """Stop the button's spinner; with ``text``, tell the presser why nothing happens."""
        try:
            await self.call(
                "answerCallbackQuery",
                lambda: self.bot.answer_callback_query(
                    query.id, text=text, show_alert=alert if text else None
                ),
                idempotent=True,
            )
        except BadRequest as error:  # the query is older than Telegram's answer window
            log.info("could not answer a button press: %s", error)

    # --- replies out -----------------------------------------------------------------------------

    def _remember(self, user: str, name: str) -> None:
        """Keep ``user``'s name for mentions by id (the oldest forgotten past :data:`MAX_NAMES`)."""
        self.names.pop(user, None)
        self.names[user] = name
        if len(self.names) > MAX_NAMES:
            del self.names[next(iter(self.names))]

    def render(self, reply: Reply) -> str:
        """The reply's text as Telegram HTML (buttons and images go separately)."""
        html = self.html.encode(reply.without_roll_footer())  # the id comes below, as configured
        roll_id = reply.meta.get("roll_id")
        if self.settings.show_roll_id and roll_id:
            tail = " · ".join(p for p in (f"roll {roll_id}", reply.meta.get("variant", "")) if p)
            html += ("\n" if html else "") + f"<i>{escape(tail)}</i>"
        return html

    async def deliver(self, reply: Reply, target: Target) -> None:
        """Send ``reply``: its text (split under 4,096 characters) as a reply to the command, in
        its forum topic; its images as photos; its buttons as an inline keyboard. A private reply
        asked for in a group goes to the player's private chat with the bot."""
        if reply.ephemeral and not target.private:
            await self._deliver_privately(reply, target)
            return
        pieces: list[str | Image] = [*split_html(self.render(reply)), *reply.images()]
        rows = [node.buttons for node in reply.body if isinstance(node, Actions) and node.buttons]
        keyboard = await self._keyboard(rows, target) if rows else None
        if not pieces and keyboard is not None:
            pieces = ["Options:"]
        texts = [index for index, piece in enumerate(pieces) if isinstance(piece, str)]
        keyboard_at = texts[-1] if texts else len(pieces) - 1
        chat = target.chat_id
        for index, piece in enumerate(pieces):
            reply_to = target.reply_to if index == 0 else None
            markup = keyboard if index == keyboard_at else None
            chat = await self._send(chat, piece, target.thread_id, reply_to, markup)
        for part in reply.private:
            await self._deliver_part(part, target)

    async def _deliver_part(self, part: Private, target: Target) -> None:
        """A part for one user only, in their private chat with the bot (see
        :meth:`_deliver_privately`)."""
        try:
            user = int(part.user)
        except ValueError:
            log.warning("not a Telegram user id: %r (a private part was not sent)", part.user)
            return
        recipient = replace(target, user_id=user, user_name=part.name or part.user)
        await self._deliver_privately(Reply(part.body), recipient)

    async def _send(
        self,
        chat: int,
        piece: str | Image,
        thread: int | None,
        reply_to: int | None,
        markup: InlineKeyboardMarkup | None,
    ) -> int:
        """Send one message; the chat id it went to (a group may have become a supergroup)."""
        try:
            await self._send_to(chat, piece, thread, reply_to, markup)
            return chat
        except ChatMigrated as migrated:
            await self.migrations.record(chat, migrated.new_chat_id)
            await self._send_to(migrated.new_chat_id, piece, thread, reply_to, markup)
            return migrated.new_chat_id

    async def _send_to(
        self,
        chat: int,
        piece: str | Image,
        thread: int | None,
        reply_to: int | None,
        markup: InlineKeyboardMarkup | None,
    ) -> None:
        try:
            await self._send_once(chat, piece, thread, reply_to, markup)
        except BadRequest as error:
            reason = str(error).lower()
            if thread is not None and "thread not found" in reason:
                log.info("the forum topic of a reply is gone: sent to the chat instead")
                await self._send_once(chat, piece, None, reply_to, markup)
            elif isinstance(piece, str) and "can't parse entities" in reason:
                log.error("Telegram refused a reply's HTML (%s): sent as plain text", error)
                plain = visible_text(piece)
                await self._send_once(chat, plain, thread, reply_to, markup, html=False)
            elif isinstance(piece, Image):
                log.warning("Telegram refused an image (%s): its description is sent", error)
                note = f"[image: {escape(piece.alt)}]"
                await self._send_once(chat, note, thread, reply_to, markup)
            else:
                raise

    async def _send_once(
        self,
        chat: int,
        piece: str | Image,
        thread: int | None,
        reply_to: int | None,
        markup: InlineKeyboardMarkup | None,
        *,
        html: bool = True,
    ) -> None:
        reply_parameters = (
            ReplyParameters(message_id=reply_to, allow_sending_without_reply=True)
            if reply_to is not None
            else None
        )
        parse_mode = ParseMode.HTML if html else None
        if isinstance(piece, Image):
            image = piece
            caption = truncate_html(escape(image.alt), MAX_CAPTION) or None
            await self.call(
                "sendPhoto",
                lambda: self.bot.send_photo(
                    chat,
                    photo=InputFile(image.data, filename=image.filename),
                    caption=caption,
                    parse_mode=parse_mode,
                    message_thread_id=thread,
                    reply_parameters=reply_parameters,
                    reply_markup=markup,
                ),
                idempotent=False,
            )
            return
        text = piece
        # only sent when it matters: a reply with nothing link-like has no preview anyway
        preview = (
            LinkPreviewOptions(is_disabled=True)
            if _LINKISH.search(visible_text(text) if html else text)
            else None
        )
        await self.call(
            "sendMessage",
            lambda: self.bot.post_text(
                chat,
                text,
                parse_mode=parse_mode,
                message_thread_id=thread,
                reply_parameters=reply_parameters,
                reply_markup=markup,
                link_preview_options=preview,
            ),
            idempotent=False,
        )

    async def _deliver_privately(self, reply: Reply, target: Target) -> None:
        """A reply only the player may see: in their private chat with the bot (a user's id is
        their private chat's id). Telegram lets a bot write there only after the player has
        started it; otherwise a notice in the group says so (without the reply) — except for a
        slow-down notice (``meta["notice"] == "slow_down"``), which is said in one short line in
        the group instead: it is no secret, and the flooder should not be invited to a chat."""
        private = replace(
            target,
            chat_id=target.user_id,
            room=str(target.user_id),
            thread_id=None,
            reply_to=None,
            private=True,
        )
        try:
            await self.deliver(reply, private)
            return
        except Forbidden as error:
            log.info("could not write privately to user %s: %s", target.user_id, error)
        if reply.meta.get("notice") == "slow_down":
            line = visible_text(self.render(reply)).removeprefix("⚠ ").split("\n", 1)[0]
            text = f"{escape(target.user_name)}: {escape(line)}"
            await self._send(target.chat_id, text, target.thread_id, target.reply_to, None)
            return
        link = f"https://t.me/{quote(self.username)}?start=private"
        text = (
            f"{escape(target.user_name)}: an answer is only for you, but I cannot write to you "
            f'privately yet: <a href="{escape(link)}">start a chat with me</a>, then ask again.'
        )
        await self._send(target.chat_id, text, target.thread_id, target.reply_to, None)

    async def _keyboard(
        self, rows: Sequence[tuple[Button, ...]], target: Target
    ) -> InlineKeyboardMarkup | None:
        buttons = [button for row in rows for button in row][:MAX_BUTTONS]
        token = await self.buttons.issue(
            owner=str(target.user_id),
            owner_name=target.user_name,
            room=target.room,
            commands=[button.command for button in buttons],
        )
        keyboard: list[list[InlineKeyboardButton]] = []
        index = 0
        for row in rows:
            line: list[InlineKeyboardButton] = []
            for button in row:
                if index == len(buttons):
                    break
                label = (button.label or button.command)[:MAX_LABEL]
                data = callback_data(token, index)
                assert len(data.encode()) <= MAX_CALLBACK_DATA
                line.append(InlineKeyboardButton(label, callback_data=data))
                index += 1
                if len(line) == MAX_ROW:
                    keyboard.append(line)
                    line = []
            if line:
                keyboard.append(line)
        return InlineKeyboardMarkup(keyboard) if keyboard else None

    # --- the command menu ------------------------------------------------------------------------

    def menu_for(self, variant: str) -> list[BotCommand]:
        return [BotCommand(name, text) for name, text in menu(self.core.room_commands(variant))]

    async def register_menu(self) -> None:
        """The menu every chat sees: the commands of the default rule set."""
        commands = self.menu_for(self.core.config.default_variant)
        await self.call(
            "setMyCommands",
            lambda: self.bot.set_my_commands(commands, scope=BotCommandScopeDefault()),
            idempotent=True,
        )
        log.info("Telegram: %d commands in the command menu", len(commands))

    async def sync_menu(self, chat: int, room_key: str) -> None:
        """Give a chat whose rule set is not the default one its own menu (and take it away
        when the chat returns to the default). What each chat's menu is, as this process last
        made or found it, is kept (:attr:`_menus`): a message in a chat whose rule set did not
        change reads nothing from the store. (Another worker sharing the store may change a
        chat's menu meanwhile; it only ever sets the room's own, so the menu can lag at most
        until a worker that knows better answers in the chat.)"""
        variant = (await self.core.known_room_settings(room_key)).variant
        wanted = None if variant == self.core.config.default_variant else variant
        if chat in self._menus and self._menus[chat] == wanted:
            return  # the menu this process last gave (or found) in this chat: nothing to do
        try:
            key = f"{self.credentials.bot_id}:{chat}"
            stored = await self.core.state.get(MENUS_NAMESPACE, key)
            scope = BotCommandScopeChat(chat)
            if variant == self.core.config.default_variant:
                if stored is not None:
                    await self.call(
                        "deleteMyCommands",
                        lambda: self.bot.delete_my_commands(scope=scope),
                        idempotent=True,
                    )
                    await self.core.state.delete(MENUS_NAMESPACE, key)
            elif stored != variant:
                commands = self.menu_for(variant)
                await self.call(
                    "setMyCommands",
                    lambda: self.bot.set_my_commands(commands, scope=scope),
                    idempotent=True,
                )
                await self.core.state.set(MENUS_NAMESPACE, key, variant)
        except TelegramError as error:
            log.warning("could not update the command menu of chat %s: %s", chat, error)
            return
        if len(self._menus) >= MENUS_KNOWN:
            self._menus.clear()
        self._menus[chat] = wanted

    # --- polling and the webhook -----------------------------------------------------------------

    async def poll(self, stopping: asyncio.Event, ready: Callable[[], None]) -> None:
        """Long polling until ``stopping`` is set. Network errors and Telegram's 5xx answers are
        retried for ever with back-off (1 s doubling to 30 s), a 429 after its ``retry_after``;
        a refused token ends polling with an error. On the way out the updates received are
        confirmed, so a restart does not fetch them again."""
        await self.call(
            "deleteWebhook",
            lambda: self.bot.delete_webhook(
                drop_pending_updates=self.settings.drop_pending_updates
            ),
            idempotent=True,
        )
        ready()
        offset: int | None = None
        waiting: set[int] = set()
        backoff = Backoff(initial=FIRST_BACKOFF, maximum=MAX_BACKOFF)
        try:
            while not stopping.is_set():
                # confirm nothing past an update still being answered: were the bot killed
                # now, Telegram would send it again (and a claim not marked done is taken over)
                held = self.unanswered | waiting
                confirm = min(held, default=offset)
                confirm = offset if offset is None or confirm is None else min(confirm, offset)
                fetch = self.bot.fetch_updates(confirm, self.settings.poll_timeout, ALLOWED_UPDATES)
                try:
                    batch = await until_stopped(stopping, fetch)
                except RetryAfter as error:
                    wait = retry_seconds(error)
                    log.warning("getUpdates: Telegram asks to wait %.0f s (429)", wait)
                except InvalidToken:
                    raise RuntimeError(
                        f"Telegram refused the bot token from ${self.settings.bot_token_env}"
                    ) from None
                except TelegramError as error:
                    wait = backoff.next()
                    log.warning("getUpdates failed (%s); retrying in %.0f s", error, wait)
                else:
                    if batch is None:
                        break
                    backoff.reset()
                    fresh = 0
                    waiting = set()  # claimed elsewhere, not answered yet: not to be confirmed
                    for data in batch:
                        update_id = data.get("update_id")
                        if isinstance(update_id, int):
                            offset = max(offset or 0, update_id + 1)
                        taken = await self.receive(data)
                        fresh += taken
                        if (
                            not taken
                            and isinstance(update_id, int)
                            and not await self.seen.is_done(str(update_id))
                        ):
                            waiting.add(update_id)
                    wait = self.settings.poll_interval
                    if batch and not fresh:  # only updates still being answered came back
                        wait = max(wait, UNANSWERED_POLL)
                if wait > 0:
                    await sleep_until_stopped(stopping, wait)
        finally:
            if offset is not None:
                await self._confirm(offset)

    async def _confirm(self, offset: int) -> None:
        try:
            await asyncio.wait_for(self.bot.fetch_updates(offset, 0, ALLOWED_UPDATES, 1), 5.0)
        except (TelegramError, TimeoutError) as error:
            log.warning("could not confirm the last updates (%s): they may come again", error)

    async def set_webhook(self, secret: str) -> None:
        """Point Telegram at the webhook (``setWebhook`` with the secret token)."""
        url = self.settings.webhook_url
        assert url is not None
        await self.call(
            "setWebhook",
            lambda: self.bot.set_webhook(
                url=url,
                secret_token=secret,
                allowed_updates=list(ALLOWED_UPDATES),
                max_connections=self.settings.max_connections,
                drop_pending_updates=self.settings.drop_pending_updates,
            ),
            idempotent=True,
        )


async def until_stopped(stopping: asyncio.Event, work: Coroutine[Any, Any, T]) -> T | None:
    """``work``'s result, or ``None`` (``work`` cancelled) if ``stopping`` is set first."""
    task = asyncio.ensure_future(work)
    waiter = asyncio.ensure_future(stopping.wait())
    try:
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
        if not task.done():
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await waiter
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(task, return_exceptions=True)
    if task.cancelled():
        return None
    return task.result()


async def sleep_until_stopped(stopping: asyncio.Event, seconds: float) -> None:
    # asyncio.timeout, not wait_for: on Python 3.11 wait_for can drop a cancellation that
    # arrives as the event is set (see coterie.framework.plugins)
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            await stopping.wait()
