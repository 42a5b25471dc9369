"""Encoders from the neutral reply tree to text.

:class:`Encoder` walks the tree and calls one method per node type; a platform encoder (Slack
mrkdwn, Telegram HTML, Matrix HTML, the terminal's ANSI colours) subclasses it and overrides how
each node looks, escaping all text in :meth:`Encoder.text`. Plain text (screen readers, logs, the
console when piped) and Markdown are defined here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import ClassVar

from coterie.render.elements import (
    Actions,
    Bold,
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
)


class Encoder:
    """Plain text: no markup at all, die faces as bare numbers. Subclass for other formats.

    A subclass's :meth:`text`, :meth:`die` and :meth:`line_break` must be pure: the same text,
    the same die, always the same output, whatever the encoder instance. Each subclass then
    remembers what they wrote (short texts and dice, in bounded tables of its own): a reply's
    pieces mostly come again (``7 dice, difficulty 6 (Standard):``, the same few faces), and
    every reply is written once per encoding. A subclass whose pieces depend on more sets
    :attr:`memo` to ``False``."""

    def encode(self, nodes: Iterable[Node]) -> str:
        return self.finish(self.join(nodes))

    #: this encoder writes text and dice as the plain one does (no escaping, bare numbers):
    #: :meth:`join` then skips those calls
    _bare_text: ClassVar[bool] = True
    _bare_die: ClassVar[bool] = True
    #: :meth:`text`, :meth:`die` and :meth:`line_break` are pure: what they wrote is remembered
    memo: ClassVar[bool] = True
    #: this class's remembered pieces: short texts, dice by (face, role, sides, tags)
    _texts: ClassVar[dict[str, str]] = {}
    _dice: ClassVar[dict[tuple[object, ...], str]] = {}
    #: this class's line break, once written
    _br: ClassVar[str | None] = None

    #: writes the commonest elements exactly as :class:`Encoder` does (:func:`_plain_join`)
    _plain: ClassVar[bool] = True

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        cls._bare_text = cls.text is Encoder.text
        cls._bare_die = cls.die is Encoder.die
        cls._plain = all(
            getattr(cls, name) is getattr(Encoder, name)
            for name in ("text", "die", "line_break", "bold", "italic", "join")
        )
        cls._texts, cls._dice, cls._br = {}, {}, None  # (each class its own)

    def join(self, nodes: Iterable[Node]) -> str:
        if self._plain:
            return _plain_join(self, nodes)
        # the commonest element types inline, by exact type (this runs for every element of
        # every reply, once per encoding), their text looked up in the class's memo; the rest,
        # and subclasses of the element types, go through :meth:`node` (a subclass that
        # overrides :meth:`node` for these types also overrides this)
        out: list[str] = []
        add = out.append
        bare_text, bare_die = self._bare_text, self._bare_die
        texts = self._texts if self.memo else None
        dice = self._dice if self.memo else None
        br = self._br if self.memo else None
        for item in nodes:
            kind = type(item)
            if kind is Text:
                value: str = item.text  # type: ignore[union-attr]
                if bare_text:
                    add(value)
                elif texts is not None and value in texts:
                    add(texts[value])
                else:
                    add(self._text(value, texts))
            elif kind is Die:
                if bare_die:
                    add(_face_text(item.face))  # type: ignore[union-attr]
                    continue
                key = (item.face, item.role, item.sides, item.tags)  # type: ignore[union-attr]
                done = None if dice is None else dice.get(key)
                add(self._die(item, key, dice) if done is None else done)  # type: ignore[arg-type]
            elif kind is LineBreak:
                add(self._line_break() if br is None else br)
            elif kind is Bold:
                add(self.bold(self.join(item.children)))  # type: ignore[union-attr]
            elif kind is Italic:
                add(self.italic(self.join(item.children)))  # type: ignore[union-attr]
            else:
                add(self.node(item))
        return "".join(out)

    def _text(self, value: str, texts: dict[str, str] | None) -> str:
        """:meth:`text`, remembered when short (the texts rules and core write; a long comment
        is not kept)."""
        done = self.text(value)
        if texts is not None and len(value) <= _MEMO_TEXT:
            if len(texts) >= _MEMO_MOST:
                texts.clear()
            texts[value] = done
        return done

    def _die(
        self, die: Die, key: tuple[object, ...], dice: dict[tuple[object, ...], str] | None
    ) -> str:
        done = self.die(die)
        if dice is not None:
            if len(dice) >= _MEMO_MOST:
                dice.clear()
            dice[key] = done
        return done

    def _line_break(self) -> str:
        done = self.line_break()
        if self.memo:
            type(self)._br = done
        return done

    def node(self, node: Node) -> str:
        # the commonest element types by exact type first (this runs for every element of every
        # reply, once per encoding); subclasses of the element types reach the checks below
        if type(node) is Text:
            return self.text(node.text)
        if type(node) is Die:
            return self.die(node)
        if type(node) is LineBreak:
            return self.line_break()
        if isinstance(node, Text):
            return self.text(node.text)
        if isinstance(node, Bold):
            return self.bold(self.join(node.children))
        if isinstance(node, Italic):
            return self.italic(self.join(node.children))
        if isinstance(node, Strike):
            return self.strike(self.join(node.children))
        if isinstance(node, Code):
            return self.code(node.text)
        if isinstance(node, LineBreak):
            return self.line_break()
        if isinstance(node, Die):
            return self.die(node)
        if isinstance(node, Mention):
            return self.mention(node)
        if isinstance(node, Image):
            return self.image(node)
        return self.actions(node)

    def text(self, value: str) -> str:
        """Escape user or rule text for the format."""
        return value

    def bold(self, inner: str) -> str:
        return inner

    def italic(self, inner: str) -> str:
        return inner

    def strike(self, inner: str) -> str:
        return inner

    def code(self, value: str) -> str:
        return value

    def line_break(self) -> str:
        return "\n"

    def die(self, die: Die) -> str:
        return str(die.face)

    def mention(self, mention: Mention) -> str:
        """A person: here their label, as text (platform encoders point at the person)."""
        return self.text(mention.label)

    def image(self, image: Image) -> str:
        return f"[image: {self.text(image.alt)}]"

    def actions(self, actions: Actions) -> str:
        return "Options: " + " | ".join(self.text(b.command) for b in actions.buttons)

    def finish(self, out: str) -> str:
        """Trailing spaces and the final line break go."""
        out = out.rstrip("\n")
        if _TRAILING_SPACE.search(out) is None:  # (most replies: no line to trim)
            return out
        return "\n".join([part.rstrip() for part in out.split("\n")])


#: characters Markdown could read as markup, each escaped with a backslash: a translation table
#: (``str.translate`` is several times faster than a regular expression on a reply's short texts)
_MD_ESCAPES = str.maketrans({char: "\\" + char for char in "\\`*_~[]()<>#|!{}+-."})


#: short texts escaped lately (a reply's texts mostly come again: ``7 dice, difficulty 6
#: (Standard):``), forgotten all at once when there are too many
_escaped: dict[str, str] = {}
_ESCAPED_MOST = 4096


def escape_markdown(value: str) -> str:
    """Backslash-escape every character Markdown could read as markup."""
    done = _escaped.get(value)
    if done is None:
        done = value.translate(_MD_ESCAPES)
        if len(value) <= 80:  # the short texts rules and core write; a long comment is not kept
            if len(_escaped) >= _ESCAPED_MOST:
                _escaped.clear()
            _escaped[value] = done
    return done


#: texts at most this long are remembered by an encoder; pieces remembered at most, per class
_MEMO_TEXT = 80
_MEMO_MOST = 4096


#: white space that :meth:`Encoder.finish` trims: at the end of a line (``rstrip``'s, but for
#: the line breaks themselves)
_TRAILING_SPACE = re.compile(r"[^\S\n](?:\n|\Z)")
#: die faces as text, 0-999 (``str()`` on every die cost more than the rest of its writing)
_FACES = tuple(str(face) for face in range(1000))


def _face_text(face: int) -> str:
    return _FACES[face] if type(face) is int and 0 <= face < 1000 else str(face)


def _plain_join(encoder: Encoder, nodes: Iterable[Node]) -> str:
    """:meth:`Encoder.join` for an encoder that writes text, dice, line breaks, bold and italic
    as the plain one does: one comprehension, anything else through :meth:`Encoder.node`."""
    faces = _FACES
    return "".join(
        [
            item.text
            if type(item) is Text
            else faces[item.face]
            if type(item) is Die and type(item.face) is int and 0 <= item.face < 1000
            else "\n"
            if type(item) is LineBreak
            else _plain_join(encoder, item.children)
            if type(item) is Bold or type(item) is Italic
            else encoder.node(item)
            for item in nodes
        ]
    )


class MarkdownEncoder(Encoder):
    """CommonMark with GFM strikethrough; every piece of user or rule text escaped."""

    DIE_STYLE: ClassVar[dict[Role, str]] = {
        Role.SUCCESS: "**{}**",
        Role.CRITICAL: "***{}***",
        Role.CANCELLED: "~~{}~~",
        Role.ONE: "~~{}~~",
        Role.BOTCH: "__{}__",
        Role.FAILURE: "{}",
    }

    def text(self, value: str) -> str:
        return escape_markdown(value)

    def bold(self, inner: str) -> str:
        return f"**{inner}**"

    def italic(self, inner: str) -> str:
        return f"_{inner}_"

    def strike(self, inner: str) -> str:
        return f"~~{inner}~~"

    def code(self, value: str) -> str:
        if "`" in value:
            return f"`` {value} ``"
        return f"`{value}`"

    def die(self, die: Die) -> str:
        return self.DIE_STYLE[die.role].format(die.face)

    def mention(self, mention: Mention) -> str:
        """A person, in bold (Markdown has no way to point at one)."""
        return f"**{self.text(mention.label)}**"

    def actions(self, actions: Actions) -> str:
        return " · ".join(self.code(b.command) for b in actions.buttons)


PLAIN = Encoder()
MARKDOWN = MarkdownEncoder()


#: the last reply written as plain text: its elements (a tuple: they are immutable, so the
#: same elements are the same text), the text before its final trimming, and after it (or
#: ``None``). Every reply is measured as plain text on its way out (the reply-size limit), and a
#: plain adapter then writes the same elements: the second time is a comparison. One tuple, set
#: in one assignment (a thread that reads it sees a whole entry).
_last_plain: tuple[tuple[Node, ...], str, str | None] = ((), "", "")


def plain_join(nodes: Iterable[Node]) -> str:
    """``PLAIN.join(nodes)``: the plain text before its final trimming (never shorter than
    :func:`to_plain`'s), remembered for the next call on the same elements."""
    global _last_plain
    key = tuple(nodes)
    last = _last_plain
    if last[0] == key:  # element by element: the same objects at once, else equal fields
        return last[1]
    joined = PLAIN.join(key)
    _last_plain = (key, joined, None)
    return joined


def to_plain(nodes: Iterable[Node]) -> str:
    """Text with no markup at all; die faces as bare numbers."""
    global _last_plain
    key = tuple(nodes)
    last = _last_plain
    if last[0] == key and last[2] is not None:
        return last[2]
    joined = last[1] if last[0] == key else PLAIN.join(key)
    finished = PLAIN.finish(joined)
    _last_plain = (key, joined, finished)
    return finished


def to_markdown(nodes: Iterable[Node]) -> str:
    """CommonMark with GFM strikethrough, all text escaped."""
    return MARKDOWN.encode(nodes)


#: inline code in core's texts: a backtick, something without backticks or line breaks, a backtick
_CODE_SPAN = re.compile(r"`([^`\n]+)`")


def code_spans(value: str) -> list[str]:
    """``value`` cut at its spans in backticks (help and error texts write commands so:
    `` `!roll 5 6` ``): the pieces at odd indexes are code, without their backticks; the others are
    plain text. A lone backtick stays in the text. For encoders whose markup is not Markdown (HTML
    for Matrix and Telegram), so that these spans show as code there too."""
    return _CODE_SPAN.split(value) if "`" in value else [value]
