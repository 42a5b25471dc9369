"""The core's reply tree as Matrix message content: ``formatted_body`` in the HTML subset Matrix
clients render (``org.matrix.custom.html``) and the plain ``body`` for everything else
(notifications, terminal clients, screen readers), split into parts that each fit in one event.

All user and rule text is HTML-escaped (``& < > " '``), so a comment can never form a tag, a
link or a pill. Die faces are styled by role with ``<strong>``, ``<em>``, ``<del>`` and colours
(``<font color data-mx-color>``: clients honour one or the other); hunger dice are shown in
brackets, in both bodies.

Buttons (:class:`~coterie.elements.Actions`) become *reaction buttons*: each gets a keycap emoji
(1️⃣, 2️⃣, …); the bot reacts to its own reply with them, and the player who rolled presses one by
reacting with the same emoji (see :mod:`coterie_matrix.bot`). The text names each key with its
command, so people on clients without reactions can type the command instead.

Images are left out of the text: the bot uploads each one and sends it as an ``m.image`` event
whose ``body`` is the alt text.
"""

from __future__ import annotations

import html
import re
import urllib.parse
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from coterie.render.elements import (
    Actions,
    Bold,
    Button,
    Code,
    Die,
    Image,
    Italic,
    LineBreak,
    Mention,
    Node,
    Role,
    Strike,
    Text,
    walk,
)
from coterie.render.encode import Encoder, code_spans

FORMAT = "org.matrix.custom.html"
#: the keys of reaction buttons, in order: 1️⃣ … 9️⃣, 🔟
KEYCAPS: tuple[str, ...] = (*(f"{digit}\ufe0f\u20e3" for digit in "123456789"), "\U0001f51f")
#: bytes of ``body`` + ``formatted_body`` in one event. Synapse refuses events over 65,536 bytes
#: (the whole signed event); an encrypted event carries its content base64-encoded (4/3 larger)
#: next to keys and relations, so a part stays well under half of the limit.
PART_BYTES = 24_000

#: colours of die faces by role (readable on light and dark themes)
GREEN = "#2e9e48"
GOLD = "#c99a06"
RED = "#d64545"
GREY = "#8a8f98"


#: a Matrix user id, ``@localpart:server[:port]`` (the historical localpart characters too): only
#: such a user is written as a pill
USER_ID = re.compile(r"@[!-9;-~]+:[A-Za-z0-9.\-]+(?::[0-9]{1,5})?")


def notified(node: Node) -> tuple[str, ...]:
    r"""The Matrix user ids a reply element asks to tell (its ``Mention``\ s with ``notify``)."""
    return tuple(
        inner.user
        for inner in walk([node])
        if isinstance(inner, Mention) and inner.notify and USER_ID.fullmatch(inner.user)
    )


def escape(value: str) -> str:
    """Text safe anywhere in ``formatted_body``: ``& < > " '`` as entities."""
    return html.escape(value, quote=True)


def colour(inner: str, value: str) -> str:
    """``inner`` in a colour, both ways Matrix clients read it."""
    return f'<font color="{value}" data-mx-color="{value}">{inner}</font>'


def button_keys(body: Iterable[Node], enabled: bool = True) -> list[tuple[str, Button]]:
    """The reaction key of each button in the reply, in order (the first ten get one)."""
    if not enabled:
        return []
    buttons = [b for node in walk(body) if isinstance(node, Actions) for b in node.buttons]
    return list(zip(KEYCAPS, buttons, strict=False))


class _Keyed(Encoder):
    """Hands out reaction keys to buttons in the order the Actions rows are encoded."""

    def __init__(self, keys: Sequence[str] = ()) -> None:
        self.keys = tuple(keys)
        #: how many keys have been handed out
        self.used = 0

    def _split(self, actions: Actions) -> tuple[list[tuple[str, Button]], list[Button]]:
        keyed: list[tuple[str, Button]] = []
        rest: list[Button] = []
        for button in actions.buttons:
            if self.used < len(self.keys):
                keyed.append((self.keys[self.used], button))
                self.used += 1
            else:
                rest.append(button)
        return keyed, rest

    def actions(self, actions: Actions) -> str:
        keyed, rest = self._split(actions)
        shown = [f"{key} {self.label(b)} ({self.code(b.command)})" for key, b in keyed]
        shown += [self.code(b.command) for b in rest]
        lead = "React to choose: " if keyed else "Options: "
        return lead + " · ".join(shown)

    def label(self, button: Button) -> str:
        return self.text(button.label or button.command)


class MatrixHtmlEncoder(_Keyed):
    """``formatted_body``: Matrix's HTML subset, every piece of text escaped."""

    #: (opening tags, closing tags, colour) of a die face, by role
    DIE_STYLE: ClassVar[dict[Role, tuple[str, str, str]]] = {
        Role.SUCCESS: ("<strong>", "</strong>", GREEN),
        Role.CRITICAL: ("<strong><em>", "</em></strong>", GOLD),
        Role.FAILURE: ("", "", GREY),
        Role.ONE: ("<del>", "</del>", RED),
        Role.CANCELLED: ("<del>", "</del>", GREY),
        Role.BOTCH: ("<strong><del>", "</del></strong>", RED),
    }

    def text(self, value: str) -> str:
        """Escaped text; a span in backticks (``!roll 5 6`` written `` `!roll 5 6` ``, as help and
        error texts do) becomes ``<code>``, as Slack and Markdown clients show it. A lone
        backtick stays a backtick."""
        pieces = code_spans(value)
        return "".join(
            f"<code>{escape(piece)}</code>" if index % 2 else escape(piece)
            for index, piece in enumerate(pieces)
        )

    def bold(self, inner: str) -> str:
        return f"<strong>{inner}</strong>" if inner else ""

    def italic(self, inner: str) -> str:
        return f"<em>{inner}</em>" if inner else ""

    def strike(self, inner: str) -> str:
        return f"<del>{inner}</del>" if inner else ""

    def code(self, value: str) -> str:
        return f"<code>{escape(value)}</code>" if value else ""

    def line_break(self) -> str:
        return "<br>"

    def die(self, die: Die) -> str:
        before, after, tint = self.DIE_STYLE[die.role]
        face = f"[{die.face}]" if "hunger" in die.tags else str(die.face)
        return f"{before}{colour(face, tint)}{after}"

    def mention(self, mention: Mention) -> str:
        """A pill (clients show the person's current name and avatar) for a Matrix user id;
        anything else, the label as text."""
        if USER_ID.fullmatch(mention.user):
            # percent-encoded but for "@" and ":": an old-style id's "#", "?" or "/" cannot
            # change what the link points at
            href = escape("https://matrix.to/#/" + urllib.parse.quote(mention.user, safe="@:"))
            return f'<a href="{href}">{escape(mention.label)}</a>'
        return escape(mention.label)

    def image(self, image: Image) -> str:
        return ""  # uploaded and sent as an m.image event

    def finish(self, out: str) -> str:
        """No line breaks (or spaces) before the first line or after the last."""
        out = out.strip()
        while out.startswith("<br>"):
            out = out[len("<br>") :].lstrip()
        while out.endswith("<br>"):
            out = out[: -len("<br>")].rstrip()
        return out


class MatrixPlainEncoder(_Keyed):
    """The plain ``body``: no markup; hunger dice in brackets; buttons as key, label, command."""

    def die(self, die: Die) -> str:
        return f"[{die.face}]" if "hunger" in die.tags else str(die.face)

    def image(self, image: Image) -> str:
        return ""  # uploaded and sent as an m.image event

    def finish(self, out: str) -> str:
        return super().finish(out).lstrip("\n")


@dataclass(frozen=True)
class Part:
    """One event's worth of a reply."""

    html: str
    plain: str
    #: whether the reaction buttons belong under this part (it shows them)
    buttons: bool = False
    #: the users this part tells (intentional mentions, ``m.mentions``), sorted
    mentions: tuple[str, ...] = ()

    @property
    def size(self) -> int:
        return len(self.html.encode()) + len(self.plain.encode())


#: one piece of encoded output: (html, plain, shows buttons, users it tells)
_Piece = tuple[str, str, bool, tuple[str, ...]]


def footer(meta: Mapping[str, str]) -> tuple[str, str] | None:
    """``roll k3f9qz · revised`` under a reply that has a roll id or a rule set."""
    words = [f"roll {meta['roll_id']}"] if meta.get("roll_id") else []
    if meta.get("variant"):
        words.append(meta["variant"])
    if not words:
        return None
    plain = " · ".join(words)
    return f"<sub>{escape(plain)}</sub>", plain


def render(
    body: Sequence[Node],
    *,
    keys: Sequence[str] = (),
    meta: Mapping[str, str] | None = None,
    budget: int = PART_BYTES,
) -> list[Part]:
    """The reply as parts of at most ``budget`` bytes (``body`` + ``formatted_body``), cut at
    line ends where possible, inside a line between elements, and inside an element (long text
    or a long bold run) only when it alone is too big; each part is well-formed HTML. Empty
    parts are dropped; ``keys`` are the reaction keys of the buttons, in order."""
    html_encoder, plain_encoder = MatrixHtmlEncoder(keys), MatrixPlainEncoder(keys)
    lines: list[list[_Piece]] = [[]]
    for node in body:
        if isinstance(node, LineBreak):
            lines.append([])
        else:
            lines[-1].extend(_pieces(node, html_encoder, plain_encoder, budget))
    extra = footer(meta or {})
    if extra is not None:
        lines.append([(extra[0], extra[1], False, ())])

    parts: list[Part] = []
    current: list[_Piece] = []
    size = 0

    def flush() -> None:
        nonlocal size
        if current:
            part = _join(current, html_encoder, plain_encoder)
            if part.html or part.plain:
                parts.append(part)
        current.clear()
        size = 0

    for index, line in enumerate(lines):
        pieces = line if index == 0 else [("<br>", "\n", False, ()), *line]
        line_size = sum(_size(piece) for piece in pieces)
        if size + line_size > budget:
            flush()
            pieces = line  # a part does not start with a line break
            line_size = sum(_size(piece) for piece in pieces)
        if line_size <= budget:
            current.extend(pieces)
            size += line_size
            continue
        for piece in pieces:  # a line too long for one part: cut between its pieces
            if size + _size(piece) > budget:
                flush()
            current.append(piece)
            size += _size(piece)
    flush()
    return parts


def _size(piece: _Piece) -> int:
    return len(piece[0].encode()) + len(piece[1].encode())


def _join(pieces: list[_Piece], html_encoder: _Keyed, plain_encoder: _Keyed) -> Part:
    return Part(
        html=html_encoder.finish("".join(p[0] for p in pieces)),
        plain=plain_encoder.finish("".join(p[1] for p in pieces)),
        buttons=any(p[2] for p in pieces),
        mentions=tuple(sorted({user for p in pieces for user in p[3]})),
    )


def _pieces(node: Node, html_encoder: _Keyed, plain_encoder: _Keyed, budget: int) -> list[_Piece]:
    """``node`` encoded, as one piece, or as several when it alone exceeds ``budget``."""
    used = (html_encoder.used, plain_encoder.used)
    piece = (
        html_encoder.node(node),
        plain_encoder.node(node),
        _shows_buttons(node),
        notified(node),
    )
    if _size(piece) <= budget:
        return [piece]
    html_encoder.used, plain_encoder.used = used  # encoded again below, piece by piece
    if isinstance(node, Text | Code):
        # worst case 10 bytes per character (a 4-byte character, or ' as &#x27; plus itself)
        step = max(1, budget // 10)
        kind = Text if isinstance(node, Text) else Code
        return [
            (html_encoder.node(kind(chunk)), plain_encoder.node(kind(chunk)), False, ())
            for chunk in (node.text[i : i + step] for i in range(0, len(node.text), step))
        ]
    if isinstance(node, Bold | Italic | Strike):
        wrap = {Bold: ("<strong>", "</strong>"), Italic: ("<em>", "</em>")}.get(
            type(node), ("<del>", "</del>")
        )
        inner = budget - len(wrap[0]) - len(wrap[1])
        out: list[_Piece] = []
        for child in node.children:
            for html_part, plain_part, shows, tells in _pieces(
                child, html_encoder, plain_encoder, inner
            ):
                wrapped = f"{wrap[0]}{html_part}{wrap[1]}" if html_part else ""
                out.append((wrapped, plain_part, shows, tells))
        return out
    return [piece]  # a single die, image or row of at most ten buttons is never this big


def _shows_buttons(node: Node) -> bool:
    return any(isinstance(inner, Actions) for inner in walk([node]))
