"""Was this reply posted already? The one question a redelivery must ask before posting again.

A worker can be killed after Slack accepted ``chat.postMessage`` and before it recorded the
delivery as answered; Slack then sends the event again and the stored reply would be posted a
second time (the Web API has no idempotency key). So every reply to an event carries message
``metadata`` naming the delivery it answers (``event_type`` :data:`EVENT_TYPE`, payload
``{"delivery": "event:Ev…"}``), and a delivery that may have been answered before — its command's
stored reply comes back (``redelivered``), or its claim was taken over from a worker that died —
first reads the conversation after the player's message (``conversations.history``, or
``conversations.replies`` in a thread, with ``include_all_metadata``) and posts only when no reply
names that delivery.

That read needs the ``*:history`` scope of the conversation's type, which the bot already has to
receive messages. Without it (``missing_scope``) the reply is sent anyway and the scope is named
once in the log; any other failure of the read also sends the reply (a doubled reply is better
than a lost one).
"""

from __future__ import annotations

import logging
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

log = logging.getLogger("coterie.slack")

#: the ``event_type`` of the metadata on coterie's replies
EVENT_TYPE = "coterie_reply"
#: messages read per page, and pages at most (a busy channel: the reply follows its command
#: within seconds, so it is on the first page unless hundreds of messages came between)
PAGE = 200
MAX_PAGES = 5


def reply_metadata(delivery: str) -> dict[str, Any]:
    """The ``metadata`` argument of a reply answering ``delivery``."""
    return {"event_type": EVENT_TYPE, "event_payload": {"delivery": delivery}}


def answers(message: Any, delivery: str) -> bool:
    """Whether a message from the Web API is coterie's reply to ``delivery``."""
    if not isinstance(message, dict):
        return False
    metadata = message.get("metadata")
    if not isinstance(metadata, dict) or metadata.get("event_type") != EVENT_TYPE:
        return False
    payload = metadata.get("event_payload")
    return isinstance(payload, dict) and payload.get("delivery") == delivery


class PostedReplies:
    """Looks for a delivery's reply in its conversation; turns itself off (logged once) when the
    token lacks the scope to read it."""

    def __init__(self, client: AsyncWebClient) -> None:
        self._client = client
        #: history scopes found missing (each is logged once, and not asked for again)
        self.missing: set[str] = set()
        #: lookups made, and replies they found (for the logs and the tests)
        self.lookups = 0
        self.found = 0

    async def find(
        self, *, channel: str, delivery: str, after: str | None, thread_ts: str | None
    ) -> bool:
        """True when a reply naming ``delivery`` is in ``channel`` (in the thread ``thread_ts``)
        after the message ``after``; false when none is, or when it cannot be known."""
        scope = _history_scope(channel)
        if scope in self.missing:
            return False
        self.lookups += 1
        cursor: str | None = None
        try:
            for _ in range(MAX_PAGES):
                if thread_ts is not None:
                    response = await self._client.conversations_replies(
                        channel=channel,
                        ts=thread_ts,
                        oldest=after,
                        include_all_metadata=True,
                        limit=PAGE,
                        cursor=cursor,
                    )
                else:
                    response = await self._client.conversations_history(
                        channel=channel,
                        oldest=after,
                        include_all_metadata=True,
                        limit=PAGE,
                        cursor=cursor,
                    )
                if any(answers(m, delivery) for m in response.get("messages") or []):
                    self.found += 1
                    log.info("%s was answered before a restart: not posted again", delivery)
                    return True
                meta = response.get("response_metadata") or {}
                cursor = meta.get("next_cursor") or None
                if not response.get("has_more") or cursor is None:
                    return False
        except SlackApiError as error:
            code = error.response.get("error")
            if code == "missing_scope":
                needed = error.response.get("needed") or scope
                self.missing.add(scope)
                log.warning(
                    "cannot read %s to check for a reply posted before a restart (missing_scope:"
                    " add %s to the app): such replies may be posted twice",
                    channel,
                    needed,
                )
            elif code == "thread_not_found":
                return False  # no thread yet: no reply in it
            else:
                log.info("could not check %s for an earlier reply (%s): posting", delivery, code)
            return False
        except Exception as error:  # a lost connection: post rather than lose the reply
            log.info("could not check %s for an earlier reply (%s): posting", delivery, error)
            return False
        return False


def _history_scope(channel: str) -> str:
    return {"C": "channels:history", "G": "groups:history", "D": "im:history"}.get(
        channel[:1], "mpim:history"
    )
