"""The Bolt app: Slack events, slash commands and button presses in, coterie replies out.

Every listener starts the answer as a tracked task and waits for it at most
:data:`ACK_BUDGET` seconds before Bolt acknowledges Slack (which allows 3 seconds): a delivery
acknowledged in time has been answered, so a worker that dies mid-request has not told Slack
anything it did not do, and Slack's retry (to this or another worker) answers it. A slower answer
(an odds chart) is acknowledged at the budget and goes on. Because the task is started before the
acknowledgement goes out, :meth:`SlackBot.drain` waits for every delivery Slack has been told
about, on shutdown and in tests. De-duplication across retries and workers: :mod:`.dedup`.

Slack libraries are imported here, and this module is imported only when the adapter runs.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any

import aiohttp
from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncBoltContext, AsyncRespond
from slack_bolt.middleware.async_middleware import AsyncMiddleware
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.async_handler import AsyncRetryHandler
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
)
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState
from slack_sdk.signature import SignatureVerifier
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook import WebhookResponse

from coterie.framework.adapter import drain_tasks
from coterie.framework.app import Coterie
from coterie.framework.message import Message
from coterie.render.elements import Image, Private, Reply, Text
from coterie.retry import Backoff
from coterie.storage.joining import join_next_transaction
from coterie_slack.blocks import (
    BUTTON_ACTION_PREFIX,
    SlackMessage,
    build_message,
    read_button_value,
    without_buttons,
)
from coterie_slack.dedup import (
    BUSY,
    DONE,
    NEW,
    ClaimLost,
    PendingClaim,
    RecentDeliveries,
    delivery_key,
)
from coterie_slack.mrkdwn import (
    decode,
    mention_pattern,
    remove_mentions,
    strip_leading_mention,
    with_names,
)
from coterie_slack.posted import PostedReplies, reply_metadata
from coterie_slack.settings import Credentials, SlackSettings

log = logging.getLogger("coterie.slack")

PLATFORM = "slack"
#: message subtypes that are a person writing (everything else, edits included, is ignored)
USER_SUBTYPES = frozenset({None, "thread_broadcast", "file_share", "me_message"})
#: how long :meth:`SlackBot.drain` waits for replies still being sent
DRAIN_SECONDS = 10.0
#: how long a listener waits for its answer before Slack is acknowledged anyway
ACK_BUDGET = 2.5
#: where the de-duplication middleware leaves the delivery's id for the listener
DELIVERY = "coterie_delivery"
#: set with :data:`DELIVERY` when the delivery's claim is still to be made (in the command's
#: transaction: :class:`~coterie_slack.dedup.PendingClaim`)
CLAIM_LATER = "coterie_claim_later"
#: set by a listener whose reply failed (transiently) before the acknowledgement went out
FAILED = "coterie_failed"
_USER_ID = re.compile(r"[UW][A-Z0-9]{2,30}")


#: the longest log line a Slack library may write (a request body never reaches the logs)
MAX_LOG_CHARS = 300
#: where a library's log message starts showing a request body
_BODY = re.compile(r"(?i)\b(?:request )?body\b\s*[:=(]")
#: the loggers of the Slack libraries (slack-bolt names its own ``slack_bolt.CLASS``)
SLACK_LOGGERS = ("coterie.slack.bolt", "coterie.slack.web", "coterie.slack.socket")


class QuietBodies(logging.Filter):
    """slack-bolt logs whole request bodies (every unsigned request at INFO, bodies of failed
    requests, envelopes at DEBUG): a record of a Slack library that would show a body says
    "body: (not logged)" from there on, and no record is longer than :data:`MAX_LOG_CHARS`.
    Tokens are also redacted by the log handler's filter (:mod:`coterie.logs`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:
            message = str(record.msg)
        cut = _BODY.search(message)
        if cut is not None:
            message = message[: cut.start()] + "body: (not logged)"
        if len(message) > MAX_LOG_CHARS:
            message = message[:MAX_LOG_CHARS] + " … (cut)"
        record.msg, record.args = message, None
        return True


def quiet_slack_loggers() -> None:
    """Put :class:`QuietBodies` on every Slack library logger that exists now (call after the
    Bolt app is built: it makes its ``slack_bolt.*`` loggers then)."""
    names = [
        name
        for name in list(logging.root.manager.loggerDict)
        if name.startswith(("slack_bolt", "slack_sdk", "coterie.slack."))
    ]
    for name in {*SLACK_LOGGERS, *names}:
        logger = logging.getLogger(name)
        if not any(isinstance(f, QuietBodies) for f in logger.filters):
            logger.addFilter(QuietBodies())


#: the levels :func:`level_slack_loggers` gave, by logger name (a level set otherwise is kept)
_LEVELS_SET: dict[str, int] = {}


def level_slack_loggers() -> None:
    """Give the loggers handed to the Slack libraries the level records are logged at now.

    slack-sdk and slack-bolt decide whether to build a debug line by the level of the logger
    itself (``logger.level <= DEBUG``), not its effective level: a logger without a level of its
    own (``NOTSET``, 0) passes, so every Web API call formatted its request and the whole
    response, and every Bolt request a line per middleware, for records that were then dropped.
    With the effective level set on the logger itself the same records are logged, and the lines
    nobody logs are not built. Call before the Bolt app is built (its loggers copy the level)."""
    for name in SLACK_LOGGERS:
        logger = logging.getLogger(name)
        if logger.level not in (logging.NOTSET, _LEVELS_SET.get(name)):
            continue  # set by someone else (a test, an operator's logging config): theirs
        logger.setLevel(logging.NOTSET)
        level = logger.getEffectiveLevel()
        logger.setLevel(level)
        _LEVELS_SET[name] = level


def is_user_message(event: Mapping[str, Any]) -> bool:
    """A message a person wrote: not a bot's (this one's included), not an edit, deletion,
    join notice or other subtype, not hidden."""
    return (
        event.get("subtype") in USER_SUBTYPES
        and not event.get("bot_id")
        and not event.get("hidden")
        and "edited" not in event
        and isinstance(event.get("user"), str)
        and isinstance(event.get("channel"), str)
    )


@dataclass(frozen=True)
class Target:
    """Where a reply goes."""

    channel: str
    #: who asked: the recipient of ephemeral replies and the owner of the reply's buttons
    user: str
    thread_ts: str | None = None
    #: slash commands and buttons answer through their ``response_url``
    respond: AsyncRespond | None = None
    #: the delivery (``event:Ev…``) a reply to a channel message answers: named in the reply's
    #: metadata, so a redelivery can find it (:mod:`.posted`)
    delivery: str | None = None
    #: the ts of the player's message (a reply to it can only be newer)
    after: str | None = None


#: Web API answers that mean "not handled now, try again"
SERVER_ERRORS = frozenset({500, 502, 503, 504})


class ServerErrorRetry(AsyncRetryHandler):
    """A 500, 502, 503 or 504 from the Web API is tried again, after Slack's ``Retry-After``
    when it sends one, else after the shared back-off (1, 2, 4 … s with jitter,
    :mod:`coterie.retry`)."""

    def __init__(self, max_retry_count: int, *, initial: float = 1.0, maximum: float = 30.0):
        super().__init__(max_retry_count=max_retry_count)
        self.backoff = Backoff(initial, maximum)

    async def _can_retry_async(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> bool:
        return response is not None and response.status_code in SERVER_ERRORS

    async def prepare_for_next_attempt_async(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> None:
        state.next_attempt_requested = True
        wait = retry_after(response)
        if wait is None:
            wait = self.backoff.delay(state.current_attempt + 1)
        status = response.status_code if response is not None else "?"
        log.warning("Slack answered %s to %s; trying again in %.1f s", status, request.url, wait)
        await asyncio.sleep(wait)
        state.increment_current_attempt()


def passing(error: SlackApiError) -> bool:
    """A Web API failure that may not happen again: a 5xx or a 429 (its retries spent)."""
    status = getattr(error.response, "status_code", None)
    return status == 429 or status in SERVER_ERRORS


def retry_after(response: HttpResponse | None) -> float | None:
    """The seconds of a ``Retry-After`` header, if the response has a readable one."""
    if response is None:
        return None
    for name, values in response.headers.items():
        if name.lower() == "retry-after" and values:
            try:
                return max(0.0, float(values[0]))
            except (TypeError, ValueError):
                return None
    return None


def retry_handlers(rate_limit_retries: int) -> list[AsyncRetryHandler]:
    """Retry on dropped connections, on ``ratelimited`` (429, after Retry-After) and on 5xx
    (after Retry-After or the back-off), at most ``rate_limit_retries`` times each."""
    return [
        AsyncConnectionErrorRetryHandler(max_retry_count=2),
        AsyncRateLimitErrorRetryHandler(max_retry_count=rate_limit_retries),
        ServerErrorRetry(max_retry_count=rate_limit_retries),
    ]


class DisplayNames:
    """Users' display names from ``users.info``, cached (bounded, for an hour). Without the
    ``users:read`` scope the fallback (Slack's user name, or the id) is used."""

    def __init__(
        self,
        client: AsyncWebClient,
        *,
        ttl: float = 3600.0,
        max_size: int = 2000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client = client
        self._ttl = ttl
        self._max_size = max_size
        self._clock = clock
        self._cache: dict[str, tuple[str | None, float]] = {}
        #: workspace admins and owners seen in ``users.info`` (Storyteller rights everywhere)
        self.admins: set[str] = set()
        self._enabled = True

    async def get(self, user_id: str, fallback: str | None = None) -> str | None:
        now = self._clock()
        cached = self._cache.get(user_id)
        if cached is not None and now - cached[1] < self._ttl:
            return cached[0] or fallback
        if not self._enabled:
            return fallback
        try:
            response = await self._client.users_info(user=user_id)
        except SlackApiError as error:
            code = error.response.get("error")
            if code in ("missing_scope", "not_allowed_token_type"):
                self._enabled = False
                log.warning("users.info refused (%s): add the users:read scope to show names", code)
            else:
                log.info("users.info failed for %s: %s", user_id, code)
            return fallback
        user = response.get("user") or {}
        profile = user.get("profile") or {}
        name = (
            profile.get("display_name")
            or profile.get("real_name")
            or user.get("real_name")
            or user.get("name")
        )
        self._cache.pop(user_id, None)
        self._cache[user_id] = (name if isinstance(name, str) and name else None, now)
        if user.get("is_admin") or user.get("is_owner"):
            self.admins.add(user_id)
        else:
            self.admins.discard(user_id)
        while len(self._cache) > self._max_size:
            del self._cache[next(iter(self._cache))]
        return self._cache[user_id][0] or fallback


async def admit(
    recent: RecentDeliveries,
    body: Mapping[str, Any],
    retry: str,
    context: MutableMapping[str, Any],
    *,
    http: bool,
) -> BoltResponse | None:
    """Whether a delivery is to be answered here: ``None`` (answer it; its id is left in
    ``context``) or the response that acknowledges it without an answer (already answered) or,
    over HTTP, refuses it for now (being answered right now: Slack asks again later). ``retry``
    is Slack's ``X-Slack-Retry-Num`` (``"0"``: its first attempt)."""
    key = delivery_key(body)
    if key is None:
        return None
    # a message event is claimed in its command's transaction (one write transaction per
    # message): here it is only checked (not even in the store for an HTTP first attempt, which
    # nobody can have stored: a round trip less on PostgreSQL); slash commands and buttons are
    # claimed here
    later = key.startswith("event:")
    try:
        if later:
            claim = await recent.check(key, first=http and retry == "0")
        else:
            claim = await recent.claim(key)
    except Exception:  # a broken store must not silence the bot
        log.exception("state store failed; %s is answered without de-duplication", key)
        return None
    if claim == DONE:
        log.info("%s delivered again (retry %s): acknowledged, not answered", key, retry)
        return BoltResponse(status=200, body="")
    if claim == BUSY:
        # being answered right now (here or by another worker), or its worker died: over HTTP,
        # no acknowledgement, so Slack asks again later and the answer is certain
        log.info("%s delivered again (retry %s) while being answered", key, retry)
        return BoltResponse(status=503 if http else 200, body="")
    context[DELIVERY] = key
    context[CLAIM_LATER] = later
    return None


class Deduplicate(AsyncMiddleware):
    """Acknowledge, without answering again, a delivery already seen (Slack's retries)."""

    def __init__(self, recent: RecentDeliveries) -> None:
        self.recent = recent

    async def async_process(
        self,
        *,
        req: AsyncBoltRequest,
        resp: BoltResponse,
        next: Callable[[], Awaitable[BoltResponse]],
    ) -> BoltResponse | None:
        retry = req.headers.get("x-slack-retry-num", ["0"])[0]
        early = await admit(self.recent, req.body, retry, req.context, http=req.mode == "http")
        return early if early is not None else await next()


def message_event(text: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """``(body, event)`` when an HTTP request body is an Events API callback carrying a
    ``message`` event (what most requests are), else ``None``."""
    if not text.startswith("{"):
        return None
    try:
        body = json.loads(text)
    except ValueError:
        return None
    if not isinstance(body, dict) or body.get("type") != "event_callback":
        return None
    event = body.get("event")
    if not isinstance(event, dict) or event.get("type") != "message":
        return None
    return body, event


class SlackBot:
    """One Slack workspace's Bolt app, answering through a :class:`~coterie.app.Coterie`."""

    def __init__(
        self,
        core: Coterie,
        settings: SlackSettings,
        credentials: Credentials,
        *,
        session: aiohttp.ClientSession | None = None,
    ) -> None:
        self.core = core
        self.settings = settings
        self.credentials = credentials
        _quiet_reconnects()
        level_slack_loggers()
        self.client = AsyncWebClient(
            token=credentials.bot_token,
            base_url=settings.api_url,
            session=session,
            logger=logging.getLogger("coterie.slack.web"),
            retry_handlers=retry_handlers(settings.rate_limit_retries),
        )
        self.recent = RecentDeliveries(core.state)
        self.names = DisplayNames(self.client)
        self.posted = PostedReplies(self.client)
        self.verifier = (
            SignatureVerifier(credentials.signing_secret) if credentials.signing_secret else None
        )
        #: the bot's own user id, from ``auth.test`` (:meth:`start`)
        self.bot_user_id: str | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.bolt = self._build()

    def _build(self) -> AsyncApp:
        bolt = AsyncApp(
            # Bolt names the logger it gives listeners after the app, and configures it from
            # ``logger`` on every request: named after that logger, it leaves others alone
            name="coterie.slack.bolt",
            client=self.client,
            signing_secret=self.credentials.signing_secret or "",
            # Socket Mode payloads are not signed; HTTP requests are, and :meth:`dispatch_http`
            # (the only way an HTTP request reaches this app) checks the signature before Bolt
            # sees the request: Bolt need not compute the same HMAC a second time
            request_verification_enabled=False,
            # the listeners return at once (see the module docstring), so this only guarantees
            # that the work is started before Slack is acknowledged
            process_before_response=True,
            logger=logging.getLogger("coterie.slack.bolt"),
        )
        bolt.use(Deduplicate(self.recent))
        bolt.event("message")(self._on_message)
        bolt.event("app_mention")(self._on_mention)
        for name in self.settings.slash_commands:
            bolt.command(name)(self._on_command)
        bolt.action(re.compile(rf"^{re.escape(BUTTON_ACTION_PREFIX)}"))(self._on_button)
        quiet_slack_loggers()
        return bolt

    async def dispatch_http(
        self, raw: bytes, query: str, headers: Mapping[str, str]
    ) -> BoltResponse:
        """One HTTP request from Slack: a bad signature (or a stale one) gets 401 and a body
        that cannot be read 400, each with one short log line and nothing of the body; a
        message event is answered by :meth:`_dispatch_message`, the rest goes to Bolt. A reply
        that failed for a passing reason within the acknowledgement budget gets 503: not
        acknowledged, so Slack delivers the event again."""
        timestamp = headers.get("X-Slack-Request-Timestamp", "")
        signature = headers.get("X-Slack-Signature", "")
        try:
            signed = self.verifier is not None and self.verifier.is_valid(raw, timestamp, signature)
        except ValueError:  # a timestamp that is not a number
            signed = False
        if not signed:
            log.info(
                "refused a request with a missing, wrong or stale signature (%d bytes)", len(raw)
            )
            return BoltResponse(status=401, body="")
        try:
            text = raw.decode("utf-8")
        except ValueError as error:
            log.info("refused a malformed request (%d bytes): %s", len(raw), type(error).__name__)
            return BoltResponse(status=400, body="")
        message = message_event(text)
        if message is not None:
            return await self._dispatch_message(*message, headers)
        try:
            request = AsyncBoltRequest(body=text, query=query, headers=dict(headers))
        except (ValueError, TypeError, AttributeError, KeyError) as error:  # not JSON, form
            log.info("refused a malformed request (%d bytes): %s", len(raw), type(error).__name__)
            return BoltResponse(status=400, body="")
        if not isinstance(request.body, dict):
            log.info("refused a request whose body is not an object (%d bytes)", len(raw))
            return BoltResponse(status=400, body="")
        response = await self.bolt.async_dispatch(request)
        if request.context.get(FAILED):
            return BoltResponse(status=503, body="")
        return response

    async def _dispatch_message(
        self, body: dict[str, Any], event: dict[str, Any], headers: Mapping[str, str]
    ) -> BoltResponse:
        """A signed ``message`` event over HTTP (most of what Slack sends), answered as the
        Bolt app answers it but without its per-request machinery: a Web API client, context
        and logger made per request, seven middleware, listener matching and argument
        injection took about 8% of the worker's CPU per message (``bench/throughput.py`` under
        py-spy). What that machinery does for a message event is done here:
        a message that is not a person's (the bot's own included: Bolt's self-event filter)
        is acknowledged unanswered, the delivery is checked (:func:`admit`, as the
        :class:`Deduplicate` middleware does) and the message listener's work runs. Socket
        Mode, mentions, slash commands, buttons and every other request go through Bolt."""
        if not is_user_message(event) or event.get("user") == self.bot_user_id:
            return BoltResponse(status=200, body="")  # nothing to answer, nothing to remember
        context: dict[str, Any] = {}
        retry = headers.get("X-Slack-Retry-Num") or headers.get("x-slack-retry-num") or "0"
        early = await admit(self.recent, body, retry, context, http=True)
        if early is not None:
            return early
        await self._answer_message(event, self.bot_user_id, context)
        return BoltResponse(status=503 if context.get(FAILED) else 200, body="")

    # --- lifecycle -------------------------------------------------------------------------------

    async def start(self) -> None:
        """Check the bot token and learn the bot's user id (``auth.test``)."""
        try:
            result = await self.client.auth_test()
        except SlackApiError as error:
            raise RuntimeError(
                f"Slack refused the bot token from ${self.settings.bot_token_env}: "
                f"{error.response.get('error')}"
            ) from None
        user_id = result.get("user_id")
        self.bot_user_id = user_id if isinstance(user_id, str) else None
        log.info("connected to Slack team %s as %s", result.get("team"), result.get("user"))

    async def open_socket_url(self) -> str:
        """A Socket Mode websocket URL (``apps.connections.open`` with the app-level token)."""
        try:
            response = await self.client.apps_connections_open(
                app_token=self.credentials.app_token or ""
            )
        except SlackApiError as error:
            raise RuntimeError(
                f"Slack refused the app-level token from ${self.settings.app_token_env}: "
                f"{error.response.get('error')}"
            ) from None
        return str(response["url"])

    @property
    def busy(self) -> int:
        """Deliveries still being answered."""
        return len(self._tasks)

    async def drain(self, timeout: float = DRAIN_SECONDS) -> None:
        """Wait until every delivery received so far is answered; cancel what is left after
        ``timeout`` seconds."""
        await drain_tasks(self._tasks, timeout, what="replies", log=log)
        try:
            await self.recent.flush()
        except Exception:
            log.exception("state store failed; the last deliveries are not marked answered")

    async def _spawn(
        self, work: Coroutine[Any, Any, None], what: str, context: MutableMapping[str, Any]
    ) -> None:
        """Answer in a tracked task; return when it is done, or after :data:`ACK_BUDGET`. A
        reply that failed for a passing reason before then sets :data:`FAILED` in ``context``
        (the delivery is then not acknowledged over HTTP: Slack sends it again)."""
        key = context.get(DELIVERY)
        outcome: list[bool] = []
        task = asyncio.get_running_loop().create_task(self._guarded(work, what, key, outcome))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        await asyncio.wait({task}, timeout=ACK_BUDGET)
        if task.done() and outcome == [False]:
            context[FAILED] = True

    async def _guarded(
        self,
        work: Coroutine[Any, Any, None],
        what: str,
        key: str | None = None,
        outcome: list[bool] | None = None,
    ) -> None:
        """Run ``work``; mark the delivery answered only when its reply went out (or can never
        go out: Slack refused it for good). After a passing failure (5xx, 429, a lost connection,
        once the retries are spent) the claim is given up, so Slack's next delivery of the same
        event is answered instead of being taken for a duplicate."""
        answered = True
        try:
            await work
        except ClaimLost as lost:  # another worker answers it (or has): nothing to mark here
            log.info("%s is %s elsewhere: not answered here", key, lost.claim)
            if outcome is not None:
                outcome.append(lost.claim != BUSY)  # busy: 503, and Slack asks again later
            return
        except SlackApiError as error:
            answered = not passing(error)
            log.warning(
                "Slack refused a call while answering %s: %s%s",
                what,
                error.response.get("error") or error.response.status_code,
                "" if answered else " (not marked answered: a new delivery is answered)",
            )
        except (aiohttp.ClientError, TimeoutError) as error:
            answered = False
            log.warning("the reply to %s could not be sent: %s", what, error)
        except Exception:
            log.exception("answering %s failed", what)
        if outcome is not None:
            outcome.append(answered)
        if key is not None:
            try:
                if answered:
                    # written with the next message's claim, or in a moment; Slack is
                    # acknowledged now (see dedup: a worker killed before the mark lands leaves
                    # a claim that lapses, and a later delivery looks for the reply first)
                    self.recent.done_soon(key)
                else:
                    await self.recent.release(key)
            except Exception:
                log.exception("state store failed; %s is not marked", key)

    # --- listeners: hand over and return ---------------------------------------------------------

    async def _on_message(self, event: dict[str, Any], context: AsyncBoltContext) -> None:
        await self._answer_message(event, context.bot_user_id, context)

    async def _answer_message(
        self, event: dict[str, Any], bot_user_id: str | None, context: MutableMapping[str, Any]
    ) -> None:
        work = self._answer_event(
            event,
            bot_user_id,
            mention=False,
            delivery=context.get(DELIVERY),
            claim_later=bool(context.get(CLAIM_LATER)),
        )
        await self._spawn(work, "a message", context)

    async def _on_mention(self, event: dict[str, Any], context: AsyncBoltContext) -> None:
        work = self._answer_event(
            event,
            context.bot_user_id,
            mention=True,
            delivery=context.get(DELIVERY),
            claim_later=bool(context.get(CLAIM_LATER)),
        )
        await self._spawn(work, "a mention", context)

    async def _on_command(
        self,
        ack: AsyncAck,
        command: dict[str, Any],
        respond: AsyncRespond,
        context: AsyncBoltContext,
    ) -> None:
        work = self._answer_command(command, respond)
        await self._spawn(work, f"{command.get('command')}", context)
        await ack()

    async def _on_button(
        self,
        ack: AsyncAck,
        body: dict[str, Any],
        action: dict[str, Any],
        respond: AsyncRespond,
        context: AsyncBoltContext,
    ) -> None:
        await self._spawn(self._answer_button(body, action, respond), "a button", context)
        await ack()

    # --- answers ---------------------------------------------------------------------------------

    def thread_for(self, thread_ts: str | None, ts: str | None) -> str | None:
        """The thread a reply goes to, by the ``thread`` setting."""
        if self.settings.thread == "never":
            return None
        if self.settings.thread == "always":
            return thread_ts or ts
        return thread_ts

    async def _answer_event(
        self,
        event: dict[str, Any],
        bot_user_id: str | None,
        *,
        mention: bool,
        delivery: str | None = None,
        claim_later: bool = False,
    ) -> None:
        if not is_user_message(event):
            return
        bot = bot_user_id or self.bot_user_id
        text = str(event.get("text") or "")
        direct = event.get("channel_type") == "im"
        if not mention and not direct and bot and mention_pattern(bot).search(text):
            return  # the app_mention event of the same message answers it
        text, leading = strip_leading_mention(text, bot)
        addressed = direct or leading
        text = decode(remove_mentions(text, bot)).strip()
        if not text:
            if not addressed:
                return
            text = "help"  # a bare mention
        user, channel = str(event["user"]), str(event["channel"])
        message = Message(
            platform=PLATFORM,
            room=channel,
            user=user,
            text=text,
            user_name=await self.names.get(user),
            admin=user in self.names.admins,
            thread=event.get("thread_ts"),
            reply_to=event.get("ts"),
            message_id=event.get("ts"),
            addressed=addressed,
        )
        pending = self.recent.claim_later(delivery) if claim_later and delivery else None
        join_next_transaction(pending)  # the claim goes into the command's transaction
        try:
            reply = await self.core.handle(message)
        finally:
            join_next_transaction(None)
        if reply is not None:
            if pending is not None:
                await self._settle(pending)
            thread = self.thread_for(event.get("thread_ts"), event.get("ts"))
            target = Target(
                channel=channel,
                user=user,
                thread_ts=thread,
                delivery=delivery,
                after=event.get("ts"),
            )
            await self.deliver(reply, target)

    async def _settle(self, pending: PendingClaim) -> None:
        """Make sure the delivery's claim is this worker's before replying (raises
        :class:`ClaimLost` when it is another's). A store that fails here does not silence the
        bot: the reply goes out, as when the claim itself failed."""
        try:
            claim = await self.recent.settle(pending)
        except Exception:
            log.exception("state store failed; %s is answered without de-duplication", pending.key)
            return
        if claim != NEW:
            raise ClaimLost(claim)

    async def _answer_command(self, command: dict[str, Any], respond: AsyncRespond) -> None:
        name = str(command.get("command", ""))
        word = self.settings.slash_commands.get(name, "")
        text = decode(str(command.get("text") or "")).strip()
        if word:
            text = f"{word} {text}".strip()
        elif not text:
            text = "help"
        user, channel = str(command["user_id"]), str(command["channel_id"])
        message = Message(
            platform=PLATFORM,
            room=channel,
            user=user,
            text=text,
            user_name=await self.names.get(user, fallback=command.get("user_name")),
            admin=user in self.names.admins,
            message_id=command.get("trigger_id"),
            addressed=True,
        )
        reply = await self.core.handle(message)
        if reply is None:
            reply = Reply([Text(f"Nothing to do: try {name} help")], kind="error")
        await self.deliver(reply, Target(channel=channel, user=user, respond=respond))

    async def _answer_button(
        self, body: dict[str, Any], action: dict[str, Any], respond: AsyncRespond
    ) -> None:
        parsed = read_button_value(str(action.get("value") or ""))
        if parsed is None:
            log.info("ignored a button press with an unknown value")
            return
        command, owner = parsed
        user_info = body.get("user") or {}
        presser = str(user_info.get("id") or "")
        container = body.get("container") or {}
        channel = str((body.get("channel") or {}).get("id") or container.get("channel_id") or "")
        if not presser or not channel:
            log.info("ignored a button press without a user or channel")
            return
        if presser != owner:
            who = f"<@{owner}>" if _USER_ID.fullmatch(owner) else "the player who rolled"
            _check(
                await respond(
                    text=f"Only {who} can use these buttons: they belong to that roll.",
                    response_type="ephemeral",
                    replace_original=False,
                ),
                "the not-yours notice",
            )
            return
        original = body.get("message")
        if isinstance(original, dict) and original.get("blocks"):
            # one press per reply: the buttons go, so a second click cannot run it again
            _check(
                await respond(
                    text=str(original.get("text") or ""),
                    blocks=without_buttons(original["blocks"]),
                    replace_original=True,
                ),
                "removing the buttons",
            )
        message = Message(
            platform=PLATFORM,
            room=channel,
            user=presser,
            text=command,
            user_name=await self.names.get(presser, fallback=user_info.get("name")),
            thread=container.get("thread_ts"),
            reply_to=container.get("message_ts"),
            message_id=body.get("trigger_id"),
            addressed=True,
        )
        reply = await self.core.handle(message)
        if reply is not None:
            thread = self.thread_for(container.get("thread_ts"), container.get("message_ts"))
            target = Target(channel=channel, user=presser, thread_ts=thread, respond=respond)
            await self.deliver(reply, target)

    # --- sending ---------------------------------------------------------------------------------

    async def deliver(self, reply: Reply, target: Target) -> None:
        """Send ``reply``: publicly (in the channel or thread), or only to the user for
        ephemeral replies and, for slash commands and buttons, errors. Images are uploaded."""
        private = reply.ephemeral or (target.respond is not None and reply.is_error)
        reply.body = await with_names(reply.body, self.names.get)
        message = build_message(reply, owner=target.user, upload_images=not private)
        if message.has_body:
            if target.respond is not None:
                await self._respond(target.respond, message, target, private=private)
            elif private:
                await self.client.chat_postEphemeral(
                    channel=target.channel,
                    user=target.user,
                    text=message.text,
                    blocks=message.blocks,
                    thread_ts=target.thread_ts,
                )
            elif not await self._posted_before(reply, target):
                await self.client.chat_postMessage(
                    channel=target.channel,
                    text=message.text,
                    blocks=message.blocks,
                    thread_ts=target.thread_ts,
                    unfurl_links=False,
                    unfurl_media=False,
                    metadata=reply_metadata(target.delivery) if target.delivery else None,
                )
        if message.images:
            await self._upload(message.images, target)
        for part in reply.private:
            await self._deliver_private(part, target)

    async def _posted_before(self, reply: Reply, target: Target) -> bool:
        """Whether this reply is in the channel already: asked only when an earlier delivery of
        the same event may have posted it (its command's stored reply came back, or its claim
        was taken over from a worker that died). See :mod:`.posted`."""
        key = target.delivery
        if key is None:
            return False
        if reply.meta.get("redelivered") != "true" and not self.recent.resumed(key):
            return False
        return await self.posted.find(
            channel=target.channel, delivery=key, after=target.after, thread_ts=target.thread_ts
        )

    async def _deliver_private(self, part: Private, target: Target) -> None:
        """A part for one user only: an ephemeral message in the channel (thread) where Slack
        can show one, else a direct message (a user who is not in the channel can't see an
        ephemeral message there)."""
        body = await with_names(part.body, self.names.get)
        message = build_message(Reply(body), owner=part.user, upload_images=False)
        try:
            await self.client.chat_postEphemeral(
                channel=target.channel,
                user=part.user,
                text=message.text,
                blocks=message.blocks,
                thread_ts=target.thread_ts,
            )
            return
        except SlackApiError as error:
            log.info(
                "no ephemeral message for %s in %s (%s): sending a direct message",
                part.user,
                target.channel,
                error.response.get("error"),
            )
        try:
            opened = await self.client.conversations_open(users=part.user)
            await self.client.chat_postMessage(
                channel=opened["channel"]["id"],
                text=message.text,
                blocks=message.blocks,
                unfurl_links=False,
                unfurl_media=False,
            )
        except SlackApiError as error:
            log.warning(
                "could not deliver a private reply to %s: %s",
                part.user,
                error.response.get("error"),
            )

    async def _respond(
        self, respond: AsyncRespond, message: SlackMessage, target: Target, *, private: bool
    ) -> None:
        response = await respond(
            text=message.text,
            blocks=message.blocks,
            response_type="ephemeral" if private else "in_channel",
            replace_original=False,
            thread_ts=target.thread_ts,
            unfurl_links=False,
            unfurl_media=False,
        )
        _check(response, "a reply")

    async def _upload(self, images: tuple[Image, ...], target: Target) -> None:
        uploads = [
            {
                "content": image.data,
                "filename": image.filename,
                "title": image.alt,
                "alt_txt": image.alt,
            }
            for image in images
        ]
        try:
            await self.client.files_upload_v2(
                file_uploads=uploads, channel=target.channel, thread_ts=target.thread_ts
            )
        except SlackApiError as error:
            code = error.response.get("error")
            log.warning("could not upload %d image(s) to %s: %s", len(images), target.channel, code)
            note = (
                f"I could not post the image here ({code}). "
                "Invite me to the channel (/invite) to see images."
            )
            await self._notify(target, note)

    async def _notify(self, target: Target, text: str) -> None:
        """A short notice only ``target.user`` sees."""
        if target.respond is not None:
            _check(
                await target.respond(text=text, response_type="ephemeral", replace_original=False),
                "a notice",
            )
            return
        try:
            await self.client.chat_postEphemeral(
                channel=target.channel, user=target.user, text=text, thread_ts=target.thread_ts
            )
        except SlackApiError as error:
            log.warning(
                "could not send a notice to %s: %s", target.user, error.response.get("error")
            )


def _check(response: WebhookResponse, what: str) -> None:
    """Log a ``response_url`` post that Slack did not accept (those do not raise)."""
    if response.status_code != 200:
        log.warning(
            "Slack refused %s via response_url: %s %s", what, response.status_code, response.body
        )


class _RetryNoise(logging.Filter):
    """Offline, slack_sdk says at INFO that it found a retry handler, and bolt warns about the
    token on every restart: the supervisor's one line per attempt says what matters."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = str(record.msg)
        return not message.startswith(("A retry handler found", "As you gave `client` as well"))


_NOISE = _RetryNoise()


def _quiet_reconnects() -> None:
    for name in ("coterie.slack.web", "coterie.slack.bolt"):
        logger = logging.getLogger(name)
        if _NOISE not in logger.filters:
            logger.addFilter(_NOISE)
