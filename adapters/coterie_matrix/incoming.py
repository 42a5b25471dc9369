"""What a Matrix message says to the bot: the command text, whether the bot was addressed (a
mention at the start), and the thread it belongs to. Pure functions on event content, no nio.

Answered: ``m.text`` messages. Ignored: notices (``m.notice``, what bots send, so bots never
answer each other), emotes, media, **edits** (``m.replace``: editing a message never runs it,
or runs it again; write a new one) and anything without a text body.

A mention addresses the bot when it *starts* the message:

* a pill: ``formatted_body`` starts with ``<a href="https://matrix.to/#/@bot:server">…</a>``
  (what clients insert when you pick the bot from the completion list);
* the user id or ``@localpart`` followed by a space, ``:`` or ``,``: ``@coterie roll 5 6``;
* the display name or the localpart followed by ``:`` or ``,`` (IRC style): ``Coterie: roll``.

A mention elsewhere in a message addresses nobody (the room prefix is needed as usual).

A pill to another user (``!contest <pill>Mark</pill> 4 6``) shows in ``body`` as the display name
alone, which names nobody to the core; the text the core gets has the user id in its place
(``!contest @mark:example.org 4 6``), see :func:`with_user_ids`.
"""

from __future__ import annotations

import html
import re
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

#: a reply quoted in the body by older clients: "> <@a:b> text" lines, then an empty line
_REPLY_FALLBACK = re.compile(r"\A(?:>[^\n]*\n)+\n")
_PILL = re.compile(
    r"\A\s*(?:<p>\s*)?<a\s+href=[\"']https://matrix\.to/#/(?P<target>[^\"'?]+)[^\"']*[\"']\s*>"
    r"(?P<label>.*?)</a>",
    re.IGNORECASE | re.DOTALL,
)
_TAG = re.compile(r"<[^>]*>")
#: the quote of the replied-to message in ``formatted_body`` (older clients)
_MX_REPLY = re.compile(r"\A\s*<mx-reply>.*?</mx-reply>", re.IGNORECASE | re.DOTALL)
#: what may follow a mention before the command
_AFTER_MENTION = " \t:,\u00a0"


@dataclass(frozen=True)
class Command:
    """A message as coterie reads it."""

    text: str
    #: the bot was mentioned at the start (the room prefix is then optional)
    addressed: bool
    #: the thread root, when the message is in a thread
    thread: str | None


def relation(content: Mapping[str, Any]) -> Mapping[str, Any]:
    relates = content.get("m.relates_to")
    return relates if isinstance(relates, Mapping) else {}


def is_edit(content: Mapping[str, Any]) -> bool:
    return relation(content).get("rel_type") == "m.replace" or "m.new_content" in content


def thread_root(content: Mapping[str, Any]) -> str | None:
    relates = relation(content)
    root = relates.get("event_id")
    if relates.get("rel_type") == "m.thread" and isinstance(root, str) and root:
        return root
    return None


def strip_reply_fallback(body: str) -> str:
    """The body without the quote of the replied-to message some clients put first."""
    return _REPLY_FALLBACK.sub("", body, count=1)


#: every pill to a user in ``formatted_body``: its (percent-encoded) user id and its label
_USER_PILL = re.compile(
    r"<a\s+href=[\"']https://matrix\.to/#/(?P<target>(?:@|%40)[^\"'?/]+)[^\"']*[\"']\s*>"
    r"(?P<label>.*?)</a>",
    re.IGNORECASE | re.DOTALL,
)


def with_user_ids(text: str, formatted: str | None, bot_user_id: str) -> str:
    """``text`` with each user pill's label replaced by the user's id, which the core reads as a
    mention: the pill whose label is the n-th occurrence of that word in ``formatted``'s visible
    text replaces the n-th occurrence in ``text``. The bot's own pill, a label ``text`` does not
    show as a whole word (an id it already spells: ``@mark:hs``), and links to rooms or events
    are left alone."""
    if not formatted or "matrix.to" not in formatted:
        return text
    formatted = _MX_REPLY.sub("", formatted, count=1)
    pills = list(_USER_PILL.finditer(formatted))
    for match in reversed(pills):  # the last first: the earlier ones' places do not move
        user = urllib.parse.unquote(match["target"])
        label = html.unescape(_TAG.sub("", match["label"])).strip()
        if user == bot_user_id or ":" not in user or not label:
            continue
        word = re.compile(rf"(?<![\w@]){re.escape(label)}(?!\w)")
        before = len(word.findall(html.unescape(_TAG.sub("", formatted[: match.start()]))))
        found = list(word.finditer(text))
        if before < len(found):
            at = found[before]
            text = text[: at.start()] + user + text[at.end() :]
    return text


def _pill_label(formatted: str, bot_user_id: str) -> str | None:
    """The visible text of a pill to the bot at the start of ``formatted``, or ``None``."""
    match = _PILL.match(_MX_REPLY.sub("", formatted, count=1))
    if match is None or urllib.parse.unquote(match["target"]) != bot_user_id:
        return None
    return _TAG.sub("", match["label"]).strip()


def _strip_name(body: str, names: Iterable[str], *, space_ok: bool) -> str | None:
    """``body`` after a leading ``name`` (case-insensitive) and what follows it, or ``None``."""
    for name in names:
        if not name or body[: len(name)].lower() != name.lower():
            continue
        rest = body[len(name) :]
        if not rest:
            return ""
        if rest[0] in ":," or (space_ok and rest[0].isspace()):
            return rest.lstrip(_AFTER_MENTION)
    return None


def strip_mention(
    body: str, formatted: str | None, bot_user_id: str, display_name: str | None = None
) -> tuple[str, bool]:
    """``(rest, True)`` when the message starts with a mention of the bot, else
    ``(body, False)``."""
    text = body.lstrip()
    localpart = bot_user_id[1:].split(":", 1)[0]
    if formatted:
        label = _pill_label(formatted, bot_user_id)
        if label is not None:
            for name in (label, bot_user_id, display_name or ""):
                if name and text.lower().startswith(name.lower()):
                    return text[len(name) :].lstrip(_AFTER_MENTION), True
            # the body names the bot some other way: try the usual spellings below
            rest = _strip_name(text, (bot_user_id, f"@{localpart}"), space_ok=True)
            return (rest if rest is not None else text), True
    # longest first: "@coterie:example.org" before "@coterie"
    rest = _strip_name(text, (bot_user_id, f"@{localpart}"), space_ok=True)
    if rest is None:
        names = sorted({n for n in (display_name, localpart) if n}, key=len, reverse=True)
        rest = _strip_name(text, names, space_ok=False)
    return (rest, True) if rest is not None else (body, False)


def read_command(
    content: Mapping[str, Any], bot_user_id: str, display_name: str | None = None
) -> Command | None:
    """The command in an ``m.room.message``'s content, or ``None`` when the message is not one
    the bot reads (see the module docstring). ``text`` may still be ordinary talk: core decides,
    by the room prefix, whether it is a command."""
    if content.get("msgtype") != "m.text" or is_edit(content):
        return None
    body = content.get("body")
    if not isinstance(body, str) or not body.strip():
        return None
    if "m.in_reply_to" in relation(content):
        body = strip_reply_fallback(body)
    formatted = content.get("formatted_body")
    markup = formatted if isinstance(formatted, str) and content.get("format") else None
    text, addressed = strip_mention(body, markup, bot_user_id, display_name)
    text = with_user_ids(text, markup, bot_user_id).strip()
    if not text:
        if not addressed:
            return None
        text = "help"  # a bare mention
    return Command(text=text, addressed=addressed, thread=thread_root(content))
