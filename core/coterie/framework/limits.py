"""Every limit in one place: the ``[limits]`` table (:class:`coterie.config.Limits`) and its rate
limits (:class:`coterie.config.RateLimits`), described for the docs, and the reply-size limit.

Where each limit is enforced:

* ``max_message_length``, ``max_comment_length`` — :meth:`coterie.app.Coterie.handle`, before
  anything is parsed;
* ``max_rolls_per_message``, ``max_options``, ``max_dice`` — :func:`coterie.commands.parse_requests`
  (and :func:`coterie.grammar.parse`), before anything is rolled; ``max_dice`` is capped at
  :data:`coterie.config.HARD_MAX_DICE` whatever the config says;
* ``max_reply_length`` — :func:`limit_reply`, on every reply on its way out;
* ``max_extended_per_room`` — the extended-action commands;
* ``rate`` — :class:`coterie.ratelimit.RateLimiter`, in ``Coterie.handle``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from coterie.render.elements import BR, Code, Italic, LineBreak, Node, Reply, Text
from coterie.render.encode import PLAIN, plain_join, to_plain

if TYPE_CHECKING:
    from pydantic import BaseModel


def limit_reply(reply: Reply, max_length: int) -> bool:
    """Cut ``reply`` to at most ``max_length`` characters of plain text (plus a short note), at an
    element boundary: after the last whole line that fits, else after the last whole element.
    Only text that does not fit at all (one huge text node) is cut inside. The last line (where a
    roll's result usually is) is kept after the note when it is short, and so is a roll's id
    footer (``roll k3f9qz``). Returns whether the reply was cut."""
    # the text before its final trimming is never shorter: when it fits, the reply does
    if len(plain_join(reply.body)) <= max_length or len(to_plain(reply.body)) <= max_length:
        return False
    footer = _take_roll_footer(reply)
    body = list(reply.body)
    tail = _last_line(body)
    tail_length = _length(tail)
    if tail and tail_length <= max_length // 4:
        body = body[: len(body) - len(tail)]
        budget = max_length - tail_length
    else:
        tail, budget = [], max_length
    kept = _head(body, budget)
    if kept and not isinstance(kept[-1], LineBreak):
        kept.append(BR)
    kept.append(Italic((Text(f"… (reply cut at {max_length} characters)"),)))
    if tail:
        kept += [BR, *tail]
    reply.body = kept + footer
    reply.meta["truncated"] = "true"
    return True


def _length(nodes: list[Node]) -> int:
    """Characters of ``nodes`` rendered as plain text, before the final trimming: never less than
    what they add to the finished text."""
    return sum(len(PLAIN.join([node])) for node in nodes)


def _last_line(body: list[Node]) -> list[Node]:
    """The nodes of the last non-empty line (after the last top-level line break before it)."""
    end = len(body)
    while end and isinstance(body[end - 1], LineBreak):
        end -= 1
    start = end
    while start and not isinstance(body[start - 1], LineBreak):
        start -= 1
    return body[start:end] if start > 0 else []


def _head(body: list[Node], budget: int) -> list[Node]:
    """The longest start of ``body`` within ``budget`` characters that ends a line (else ends a
    whole element; else a cut first text)."""
    kept: list[Node] = []
    used = 0
    last_line_end = 0  # how many nodes up to and including the last line break that fits
    for node in body:
        length = _length([node])
        if used + length > budget:
            room = budget - used
            if not kept and isinstance(node, Text | Code) and room > 0:
                kept.append(type(node)(node.text[:room]))
            break
        kept.append(node)
        used += length
        if isinstance(node, LineBreak):
            last_line_end = len(kept)
    return kept[:last_line_end] if last_line_end else kept


def _take_roll_footer(reply: Reply) -> list[Node]:
    """Remove the roll-id footer (``[BR, italic("roll ID")]``) from ``reply`` and return it."""
    roll_id = reply.meta.get("roll_id")
    if not roll_id:
        return []
    footer: list[Node] = [BR, Italic((Text(f"roll {roll_id}"),))]
    body = reply.body
    for at in range(len(body) - 2, -1, -1):
        if body[at : at + 2] == footer:
            reply.body = body[:at] + body[at + 2 :]
            return footer
    return []


def reply_length(reply: Reply) -> int:
    """Characters of the reply's plain text."""
    return len(to_plain(reply.body))


def _describe(model: type[BaseModel], prefix: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for name, field in model.model_fields.items():
        if name == "rate":  # a table of its own
            continue
        default = field.get_default(call_default_factory=True)
        low = high = None
        for item in field.metadata:
            low = getattr(item, "ge", None) if getattr(item, "ge", None) is not None else low
            low = getattr(item, "gt", None) if getattr(item, "gt", None) is not None else low
            high = getattr(item, "le", None) if getattr(item, "le", None) is not None else high
        rows.append(
            {
                "key": f"{prefix}.{name}",
                "default": default,
                "low": low,
                "high": high,
                "description": field.description or "",
            }
        )
    return rows


def describe_limits() -> list[dict[str, Any]]:
    """Every limit's config key, default and allowed range (``docs/reliability.md`` lists them)."""
    from coterie.framework.configmodels import Limits, RateLimits

    return _describe(Limits, "limits") + _describe(RateLimits, "limits.rate")
