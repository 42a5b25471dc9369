"""Telegram's HTML parse mode: the reply tree as HTML, and long HTML cut into messages.

Telegram's HTML is a small, strict language: ``<b>``, ``<i>``, ``<u>``, ``<s>``, ``<code>``,
``<pre>``, ``<a>``, ``<tg-spoiler>``, ``<blockquote>`` and four named escapes (``&lt;``, ``&gt;``,
``&amp;``, ``&quot;``). A ``<`` or ``&`` that does not start a known tag or escape makes Telegram
refuse the whole message ("can't parse entities"), so every piece of user or rule text goes
through :func:`escape`; no text is ever placed inside an attribute (a person's link holds their
numeric user id only, :func:`encode_mention`).

A message holds at most 4,096 characters after the markup is parsed. :func:`split_html` cuts a
longer reply at line ends (inside a line only when one line alone is too long: between two words,
and inside a word only when it is longer than a message; never inside a tag or an escape),
closing the tags still open at a cut and reopening them in the next piece, so that every piece
is valid HTML on its own.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import ClassVar

from coterie.render.elements import Actions, Die, Image, Mention, Role
from coterie.render.encode import Encoder, code_spans

#: Telegram's limits, in characters after entity parsing
MAX_MESSAGE = 4096
MAX_CAPTION = 1024


def escape(value: str) -> str:
    """Text safe anywhere in Telegram HTML (between tags; no text goes into attributes)."""
    return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


#: a Telegram username (5-32 letters, digits and underscores, a letter first): only such a name is
#: written as an ``@username`` mention, which Telegram links and notifies by itself
_USERNAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{4,31}")
#: a Telegram user id (digits only): the one thing ever written inside an attribute
_USER_ID = re.compile(r"[0-9]{1,20}")


def encode_mention(value: Mention, names: Mapping[str, str] | None = None) -> str:
    """A person in a reply. When the core wants them told: a link to their user id
    (``tg://user?id=``, a mention), or their ``@username``. Otherwise their name as text (no
    ``@``, no link: no ping). A bare id as the label becomes the name ``names`` knows for it."""
    label = value.label
    if names is not None and label == value.user:
        label = names.get(value.user, label)
    if value.notify and _USER_ID.fullmatch(value.user):
        return f'<a href="tg://user?id={value.user}">{escape(label)}</a>'
    if value.notify and _USERNAME.fullmatch(value.user):
        return "@" + value.user
    return escape(label)


def _wrap(tag: str, inner: str) -> str:
    """``<tag>inner</tag>``; nothing visible means no tag at all (no empty entities)."""
    return f"<{tag}>{inner}</{tag}>" if inner.strip() else inner


class TelegramEncoder(Encoder):
    """HTML for ``parse_mode="HTML"``. Buttons become an inline keyboard and images are sent as
    photos, so neither appears in the text."""

    #: how a die face looks, by role (a hunger die is shown in brackets besides)
    DIE_STYLE: ClassVar[dict[Role, str]] = {
        Role.SUCCESS: "<b>{}</b>",
        Role.CRITICAL: "<b><i>{}</i></b>",
        Role.CANCELLED: "<s>{}</s>",
        Role.ONE: "<s>{}</s>",
        Role.BOTCH: "<b><s>{}</s></b>",
        Role.FAILURE: "{}",
    }

    def text(self, value: str) -> str:
        """Escaped text; a span in backticks (how help and error texts write a command) becomes
        ``<code>``, as Slack, Matrix and Markdown clients show it."""
        return "".join(
            _wrap("code", escape(piece)) if index % 2 else escape(piece)
            for index, piece in enumerate(code_spans(value))
        )

    def bold(self, inner: str) -> str:
        return _wrap("b", inner)

    def italic(self, inner: str) -> str:
        return _wrap("i", inner)

    def strike(self, inner: str) -> str:
        return _wrap("s", inner)

    def code(self, value: str) -> str:
        return _wrap("code", escape(value))

    def die(self, die: Die) -> str:
        face = f"[{die.face}]" if "hunger" in die.tags else str(die.face)
        return self.DIE_STYLE[die.role].format(face)

    def __init__(self, names: Mapping[str, str] | None = None) -> None:
        #: user id → name, of the people the bot has seen (shown for a mention by id)
        self.names = names

    def mention(self, mention: Mention) -> str:
        return encode_mention(mention, self.names)

    def image(self, image: Image) -> str:
        return ""

    def actions(self, actions: Actions) -> str:
        return ""


HTML = TelegramEncoder()


# --- cutting long HTML ---------------------------------------------------------------------------

#: a tag, an escape, a run of ordinary text, or a lone character (a ``<`` or ``&`` that is text)
_TOKEN = re.compile(r"<[^<>]*>|&#?[A-Za-z0-9]+;|[^<&]+|.", re.DOTALL)
_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9-]*)[^<>]*>")
#: a word and the spaces after it (or leading spaces)
_WORD = re.compile(r"[^ ]+ *| +")


def utf16_len(value: str) -> int:
    """Length in UTF-16 code units: how Telegram counts (an emoji outside the BMP counts 2)."""
    return len(value) + sum(1 for ch in value if ord(ch) > 0xFFFF)


def visible_text(html: str) -> str:
    """The text a reader sees: tags removed, the escapes undone."""
    text = re.sub(r"<[^<>]*>", "", html)
    for escaped, plain in (("&lt;", "<"), ("&gt;", ">"), ("&quot;", '"'), ("&amp;", "&")):
        text = text.replace(escaped, plain)
    return text


def _tokens(line: str) -> Iterator[str]:
    return (match.group(0) for match in _TOKEN.finditer(line))


class _Open:
    """The tags open at some point: their opening tags, outermost first."""

    def __init__(self, tags: tuple[str, ...] = ()) -> None:
        self.tags = list(tags)

    def feed(self, token: str) -> None:
        tag = _TAG.fullmatch(token)
        if tag is None:
            return
        if not tag.group(1):
            self.tags.append(token)
        elif self.tags and _name(self.tags[-1]) == tag.group(2).lower():
            self.tags.pop()

    def opening(self) -> str:
        return "".join(self.tags)

    def closing(self) -> str:
        return "".join(f"</{_name(tag)}>" for tag in reversed(self.tags))

    def copy(self) -> _Open:
        return _Open(tuple(self.tags))


def _name(opening_tag: str) -> str:
    match = _TAG.fullmatch(opening_tag)
    assert match is not None
    return match.group(2).lower()


def _units(token: str) -> int:
    """What a token counts towards Telegram's limit: a tag nothing, an escape its character."""
    if token.startswith("<") and _TAG.fullmatch(token):
        return 0
    if token.startswith("&") and len(token) > 1:
        return utf16_len(visible_text(token))
    return utf16_len(token)


class _Pieces:
    """Collects the pieces: each starts by reopening the tags open where the previous one was
    cut and ends by closing the tags still open. ``size`` counts the visible text only, as
    Telegram does."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.done: list[str] = []
        self.prefix = ""
        self.body = ""
        self.size = 0
        self.open = _Open()

    def flush(self) -> None:
        if self.body:
            self.done.append(self.prefix + self.body + self.open.closing())
        self.prefix = self.open.opening()
        self.body = ""
        self.size = 0

    def add_line(self, line: str, *, new_line: bool) -> None:
        """Append one line; ``new_line``: it follows a line break (dropped at a cut)."""
        tokens = list(_tokens(line))
        size = sum(_units(token) for token in tokens)
        after = self.open.copy()
        for token in tokens:
            after.feed(token)
        separator = "\n" if new_line and self.body else ""
        if self.size + len(separator) + size <= self.limit:
            self.body += separator + line
            self.size += len(separator) + size
            self.open = after
            return
        self.flush()
        if size <= self.limit:
            self.body, self.size, self.open = line, size, after
            return
        self._add_long_line(tokens)

    def _add_long_line(self, tokens: list[str]) -> None:
        """A line too long for one piece: cut before a word that does not fit (a word longer
        than a whole piece is cut where the piece is full), never inside a tag or an escape."""
        for token in tokens:
            words = [token] if token.startswith(("<", "&")) else _WORD.findall(token)
            for word in words:
                self._add_token(word)

    def _add_token(self, token: str) -> None:
        after = self.open.copy()
        after.feed(token)
        units = _units(token)
        if self.size and self.size + units > self.limit:
            self.flush()
        while self.size + units > self.limit:  # a word longer than a piece
            cut = _fit(token, self.limit - self.size)
            self.body += token[:cut]
            token = token[cut:]
            units = utf16_len(token)
            self.flush()
        self.body += token
        self.size += units
        self.open = after

    def result(self) -> list[str]:
        self.flush()
        return [piece for piece in self.done if visible_text(piece).strip()]


def _fit(text: str, room: int) -> int:
    """How many characters of ``text`` take at most ``room`` UTF-16 units (at least one)."""
    used = 0
    for index, ch in enumerate(text):
        used += 2 if ord(ch) > 0xFFFF else 1
        if used > room:
            return max(index, 1)
    return len(text)


def split_html(html: str, limit: int = MAX_MESSAGE) -> list[str]:
    """``html`` in pieces of at most ``limit`` characters of visible text each (in UTF-16 units,
    as Telegram counts after parsing the markup), each valid HTML on its own. Cuts fall at line
    ends where possible; pieces without visible text are dropped (Telegram refuses them)."""
    if limit < 16:
        raise ValueError("the limit must be at least 16")
    pieces = _Pieces(limit)
    for index, line in enumerate(html.split("\n")):
        pieces.add_line(line, new_line=index > 0)
    return pieces.result()


def truncate_html(html: str, limit: int, ellipsis: str = "…") -> str:
    """The first piece of ``html`` within ``limit``, ending with ``ellipsis`` when cut (for a
    caption, which cannot be continued in another message)."""
    pieces = split_html(html, limit - len(ellipsis))
    if not pieces:
        return ""
    if len(pieces) == 1:
        return pieces[0]
    return pieces[0] + escape(ellipsis)
