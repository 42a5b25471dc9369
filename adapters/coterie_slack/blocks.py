"""Block Kit messages from the core's reply tree.

A reply becomes: section blocks holding the mrkdwn text (split under Slack's limits), an actions
block for each row of buttons, and a context block with the roll id and rule set; plus a plain
``text`` fallback for notifications and screen readers, and the images to upload as files.

A button's ``value`` carries the command it runs *and* the id of the user whose reply it belongs
to, so that only that user may press it (:func:`button_value`, :func:`read_button_value`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from coterie.render.elements import Actions, Image, Node, Reply
from coterie_slack.mrkdwn import SlackEncoder, SlackPlainEncoder, escape

log = logging.getLogger("coterie.slack")

#: Slack's limits (https://docs.slack.dev/reference/block-kit/blocks)
MAX_BLOCKS = 50
MAX_SECTION_TEXT = 3000
MAX_FALLBACK_TEXT = 40_000
MAX_BUTTONS_PER_BLOCK = 25
MAX_BUTTON_LABEL = 75
MAX_BUTTON_VALUE = 2000

#: ids of the blocks and buttons this adapter makes; interaction payloads are matched by them
ACTIONS_BLOCK_PREFIX = "coterie.actions."
BUTTON_ACTION_PREFIX = "coterie.button."

TRUNCATED = "_… (the rest of this reply is too long for one Slack message)_"

Block = dict[str, Any]


@dataclass(frozen=True)
class SlackMessage:
    """What goes to ``chat.postMessage`` / ``chat.postEphemeral`` / a ``response_url``."""

    text: str
    blocks: list[Block]
    #: images to upload next to the message (empty when they are shown as alt text instead)
    images: tuple[Image, ...] = ()

    @property
    def has_body(self) -> bool:
        """Whether there is anything to post besides the context line (a reply may be only an
        image, which is uploaded on its own)."""
        return any(block["type"] != "context" for block in self.blocks)


def build_message(reply: Reply, *, owner: str, upload_images: bool = True) -> SlackMessage:
    """The Block Kit message of ``reply``. ``owner`` is the user whose command produced it (the
    only one who may press its buttons). With ``upload_images`` false, images are described by
    their alt text in the message instead of being returned for upload."""
    encoder = SlackEncoder(inline_images=not upload_images)
    blocks: list[Block] = []
    pending: list[Node] = []
    row = 0

    def flush() -> None:
        text = encoder.encode(pending)
        blocks.extend(section(chunk) for chunk in split_text(text, MAX_SECTION_TEXT))
        pending.clear()

    # the roll id goes in the context block below, not in the text as on other platforms
    body = reply.without_roll_footer()
    for node in body:
        if isinstance(node, Actions):
            flush()
            block = actions_block(node, owner=owner, row=row)
            if block is not None:
                blocks.append(block)
                row += 1
        else:
            pending.append(node)
    flush()

    context = context_block(reply.meta)
    room = MAX_BLOCKS - (context is not None)
    if len(blocks) > room:
        log.warning("a reply needed %d blocks; Slack allows %d: truncated", len(blocks), room)
        blocks = [*blocks[: room - 1], section(TRUNCATED)]
    if context is not None:
        blocks.append(context)
    fallback = SlackPlainEncoder(inline_images=True).encode(body)
    return SlackMessage(
        text=truncate(fallback or " ", MAX_FALLBACK_TEXT),
        blocks=blocks,
        # the encoder met every image of the body (the roll footer, left out, has none)
        images=tuple(encoder.images) if upload_images else (),
    )


def section(text: str) -> Block:
    # verbatim: Slack must not turn URLs, #channels or @names in the text into links or mentions
    return {"type": "section", "text": {"type": "mrkdwn", "text": text, "verbatim": True}}


def context_block(meta: dict[str, str]) -> Block | None:
    """``roll k3f9qz · revised`` under the reply, when the reply has either."""
    parts = []
    if meta.get("roll_id"):
        parts.append(f"roll `{escape(meta['roll_id'])}`")
    if meta.get("variant"):
        parts.append(escape(meta["variant"]))
    if not parts:
        return None
    text = truncate(" · ".join(parts), MAX_SECTION_TEXT)
    return {
        "type": "context",
        "block_id": "coterie.context",
        "elements": [{"type": "mrkdwn", "text": text, "verbatim": True}],
    }


def actions_block(actions: Actions, *, owner: str, row: int) -> Block | None:
    """One row of buttons; a button whose command cannot fit in Slack's value is left out."""
    elements: list[Block] = []
    for index, button in enumerate(actions.buttons):
        value = button_value(button.command, owner)
        if len(value) > MAX_BUTTON_VALUE:
            log.warning("button %r left out: its command is too long for Slack", button.label)
            continue
        if len(elements) == MAX_BUTTONS_PER_BLOCK:
            log.warning("a row has more than %d buttons; the rest are left out", len(elements))
            break
        elements.append(
            {
                "type": "button",
                "action_id": f"{BUTTON_ACTION_PREFIX}{row}.{index}",
                "text": {
                    "type": "plain_text",
                    "text": truncate(button.label or button.command, MAX_BUTTON_LABEL),
                    "emoji": True,
                },
                "value": value,
            }
        )
    if not elements:
        return None
    return {"type": "actions", "block_id": f"{ACTIONS_BLOCK_PREFIX}{row}", "elements": elements}


def button_value(command: str, owner: str) -> str:
    """What a button carries: the command to run and who may run it."""
    return json.dumps({"c": command, "u": owner}, ensure_ascii=False, separators=(",", ":"))


def read_button_value(value: str) -> tuple[str, str] | None:
    """``(command, owner)`` from a button's value, or ``None`` if it is not one of ours."""
    try:
        data = json.loads(value)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    command, owner = data.get("c"), data.get("u")
    if isinstance(command, str) and isinstance(owner, str) and command and owner:
        return command, owner
    return None


def without_buttons(blocks: Iterable[Block]) -> list[Block]:
    """The blocks of a message with this adapter's button rows removed."""
    return [b for b in blocks if not str(b.get("block_id", "")).startswith(ACTIONS_BLOCK_PREFIX)]


def split_text(text: str, limit: int) -> list[str]:
    """``text`` in pieces of at most ``limit`` characters, cut at line ends where possible and
    never inside an ``&amp;``-style escape or a ``<@U…>`` mention. Blank pieces are dropped (Slack
    refuses them)."""
    pieces: list[str] = []
    current = ""
    for line in text.split("\n"):
        candidate = line if not current else f"{current}\n{line}"
        if len(candidate) <= limit:
            current = candidate
            continue
        if current:
            pieces.append(current)
        while len(line) > limit:
            cut = _safe_cut(line, limit)
            pieces.append(line[:cut])
            line = line[cut:]
        current = line
    pieces.append(current)
    return [piece for piece in pieces if piece.strip()]


#: the longest ``<@U…>`` a cut keeps whole (Slack's user ids have 9 or 11 characters)
_MENTION_MOST = 32


def _safe_cut(line: str, limit: int) -> int:
    """``limit``, or the start of an escape (``&amp;``, ``&lt;``, ``&gt;``) or of a mention
    (``<@U…>``) that it would split."""
    # in mrkdwn and the fallback every "<" opens a mention (all other text has its "<" escaped);
    # in a plain-text button label, cutting before a "<" is merely a little early
    opened = line.rfind("<", max(1, limit - _MENTION_MOST), limit)
    if opened != -1 and line.find(">", opened, limit) == -1:
        return opened
    for start in range(max(1, limit - 4), limit):
        for entity in ("&amp;", "&lt;", "&gt;"):
            if line.startswith(entity, start) and start + len(entity) > limit:
                return start
    return limit


def truncate(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, ending with … when cut."""
    return text if len(text) <= limit else text[: _safe_cut(text, limit - 1)] + "…"
