"""Slack's text formats, both ways: the reply tree as *mrkdwn* (and as the plain ``text``
fallback), and incoming message text back to what the user typed.

Slack asks for exactly three escapes in message text: ``&`` → ``&amp;``, ``<`` → ``&lt;``,
``>`` → ``&gt;``. With them no user or rule text can form a ``<…>`` control sequence: no
``<!channel>`` or ``<@U…>`` mention, no ``<http://…|link>``. The only ``<@U…>`` written is a
:class:`~coterie.render.elements.Mention` element the core put in the reply to notify a person by
their Slack user id (:func:`encode_mention`). Broadcast words typed as plain text
(``@here``, ``@channel``, ``@everyone``) get an invisible word joiner after the ``@`` so that no
client or ``link_names`` setting turns them into a ping. Section texts are also sent with
``verbatim: true`` (see :mod:`coterie_slack.blocks`), so Slack does not auto-link URLs or names.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Awaitable, Callable
from typing import ClassVar

from coterie.render.elements import Actions, Bold, Die, Image, Italic, Mention, Node, Role, Strike
from coterie.render.encode import Encoder

#: U+2060 WORD JOINER: invisible, and breaks Slack's ``@here`` / ``@channel`` parsing
WORD_JOINER = "\u2060"
_BROADCAST = re.compile(r"@(?=(?:here|channel|everyone)\b)", re.IGNORECASE)


def escape(value: str) -> str:
    """Text safe inside mrkdwn (and the ``text`` fallback): the three escapes, defused pings."""
    if not ("&" in value or "<" in value or ">" in value or "@" in value):
        return value  # most texts of a reply (a few dozen each): nothing to escape
    value = value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _BROADCAST.sub("@" + WORD_JOINER, value)


#: a Slack user id: ``U`` or ``W``, then capitals and digits, 9 characters or more in all (Slack's
#: are 9 or 11 and may grow). The core keeps a name typed after ``@`` (``!ask @bob …``) as the
#: person's user just like an id it got from ``<@U…>``, so only a user that looks like this is
#: written as a Slack mention: a typed name is never shown as a broken one ("@unknown user")
_USER_ID = re.compile(r"[UW][A-Z0-9]{8,}")


def encode_mention(value: Mention) -> str:
    """A person in a reply: Slack's own ``<@U…>`` when the core wants them told (Slack shows their
    name and notifies them) and ``user`` is a Slack user id; otherwise the label as text (a
    ``<@U…>`` would notify, and one pointing at no user shows as a broken mention)."""
    if value.notify and _USER_ID.fullmatch(value.user):
        return f"<@{value.user}>"  # nothing to escape: capitals and digits only
    return escape(value.label)


async def with_names(
    body: list[Node], name_of: Callable[[str], Awaitable[str | None]]
) -> list[Node]:
    """``body`` with each mention that shows a bare Slack user id as its label (a person named
    in passing, who gets no ``<@U…>``: that would notify them) labelled with their name."""
    out: list[Node] = []
    for node in body:
        if isinstance(node, Mention) and node.label == node.user and _USER_ID.fullmatch(node.user):
            name = await name_of(node.user)
            out.append(Mention(node.user, name, node.notify) if name else node)
        elif isinstance(node, Bold | Italic | Strike):
            out.append(type(node)(tuple(await with_names(list(node.children), name_of))))
        else:
            out.append(node)
    return out


def _wrap(marker: str, inner: str) -> str:
    """``*inner*`` etc. Slack only formats when the markers touch non-space characters, so
    surrounding spaces move outside the markers; nothing visible means no markers at all."""
    core = inner.strip()
    if not core:
        return inner
    lead = inner[: len(inner) - len(inner.lstrip())]
    trail = inner[len(inner.rstrip()) :]
    return f"{lead}{marker}{core}{marker}{trail}"


class SlackEncoder(Encoder):
    """mrkdwn for section blocks. Buttons become an actions block and images are uploaded as
    files, so both are left out of the text (``inline_images`` shows an image's alt text instead,
    for replies where nothing is uploaded, such as ephemeral ones)."""

    #: how a die face looks, by role
    DIE_STYLE: ClassVar[dict[Role, str]] = {
        Role.SUCCESS: "*{}*",
        Role.CRITICAL: "*_{}_*",
        Role.CANCELLED: "~{}~",
        Role.ONE: "~{}~",
        Role.BOTCH: "*~{}~*",
        Role.FAILURE: "{}",
    }

    def __init__(self, *, inline_images: bool = False) -> None:
        self.inline_images = inline_images
        #: the images met while encoding, in order (to upload unless they are inline)
        self.images: list[Image] = []

    def text(self, value: str) -> str:
        return escape(value)

    def bold(self, inner: str) -> str:
        return _wrap("*", inner)

    def italic(self, inner: str) -> str:
        return _wrap("_", inner)

    def strike(self, inner: str) -> str:
        return _wrap("~", inner)

    def code(self, value: str) -> str:
        # mrkdwn has no way to escape a backtick inside code: show a look-alike instead
        shown = escape(value.replace("`", "ˋ"))
        return f"`{shown}`" if shown.strip() else shown

    def die(self, die: Die) -> str:
        face = f"[{die.face}]" if "hunger" in die.tags else str(die.face)
        return self.DIE_STYLE[die.role].format(face)

    def mention(self, mention: Mention) -> str:
        return encode_mention(mention)

    def image(self, image: Image) -> str:
        self.images.append(image)
        return f"[image: {escape(image.alt)}]" if self.inline_images else ""

    def actions(self, actions: Actions) -> str:
        return ""


class SlackPlainEncoder(Encoder):
    """The ``text`` fallback (notifications, screen readers, old clients): no formatting, but
    escaped, because Slack reads this field as mrkdwn too."""

    def __init__(self, *, inline_images: bool = True) -> None:
        self.inline_images = inline_images

    def text(self, value: str) -> str:
        return escape(value)

    def code(self, value: str) -> str:
        return escape(value)

    def mention(self, mention: Mention) -> str:
        # the mention itself, as in the mrkdwn: Slack's notifications read this field
        return encode_mention(mention)

    def image(self, image: Image) -> str:
        return f"[image: {escape(image.alt)}]" if self.inline_images else ""

    def actions(self, actions: Actions) -> str:
        return ""


# --- incoming text -------------------------------------------------------------------------------

_CONTROL = re.compile(r"<([^<>]*)>")


@functools.lru_cache(maxsize=16)
def mention_pattern(user_id: str) -> re.Pattern[str]:
    """Slack's encoding of a mention of ``user_id``: ``<@U123>`` or ``<@U123|name>`` (made
    once per user id: every message is searched for the bot's)."""
    return re.compile(rf"<@{re.escape(user_id)}(?:\|[^<>]*)?>")


def _readable(match: re.Match[str]) -> str:
    target, _, label = match.group(1).partition("|")
    if target.startswith(("@", "#")):  # <@U123|lynn>, <#C123|general>
        return target[0] + (label.lstrip("@#") or target[1:])
    if target.startswith("!"):  # <!here>, <!subteam^S123|@team>, <!date^…|fallback>
        return label or "@" + target[1:].split("^")[0]
    return label or target  # <https://example.com|label>, <mailto:a@b.c>


def decode(text: str) -> str:
    """What the user typed, from Slack's encoding of it: control sequences become readable text
    (``<@U1|lynn>`` → ``@lynn``, ``<https://x|x>`` → ``x``) and the three escapes are undone."""
    text = _CONTROL.sub(_readable, text)
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def strip_leading_mention(text: str, user_id: str | None) -> tuple[str, bool]:
    """``(rest, True)`` when ``text`` starts with a mention of ``user_id`` (the bot)."""
    if user_id:
        match = mention_pattern(user_id).match(text.lstrip())
        if match is not None:
            return text.lstrip()[match.end() :].lstrip(" ,:\u00a0"), True
    return text, False


def remove_mentions(text: str, user_id: str | None) -> str:
    """``text`` without any mention of ``user_id``."""
    return mention_pattern(user_id).sub("", text) if user_id else text
