"""The neutral reply tree.

Every reply is a list of elements. Core and rule sets build it; each adapter encodes it into its
platform's native formatting (plain text and Markdown encoders live in :mod:`coterie.encode`; Slack
mrkdwn, Telegram HTML and Matrix HTML live in their adapters). Nothing here knows any platform.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import field
from enum import StrEnum

from coterie.records import dataclass


class Role(StrEnum):
    """What a die face means for the result; encoders style faces by role."""

    SUCCESS = "success"  #: counts as a success
    FAILURE = "failure"  #: neither success nor a special face
    ONE = "one"  #: a 1 that cancels (or would cancel) a success
    CANCELLED = "cancelled"  #: a success taken away by a 1
    CRITICAL = "critical"  #: a success with something extra (e.g. a 10 that counts twice)
    BOTCH = "botch"  #: a 1 on a roll that botched


#: an element's own ``__init__`` writes its fields straight into ``__dict__``: the generated one
#: of a frozen dataclass sets each through ``object.__setattr__``, and a reply is made of dozens
#: of elements (a die's took ~1.8 µs, ~0.6 µs so; the elements stay frozen, equal and hashable)


@dataclass(frozen=True)
class Text:
    """Plain text. Encoders escape it."""

    text: str

    def __init__(self, text: str) -> None:
        self.__dict__["text"] = text


@dataclass(frozen=True)
class Bold:
    children: tuple[Node, ...]

    def __init__(self, children: tuple[Node, ...]) -> None:
        self.__dict__["children"] = children


@dataclass(frozen=True)
class Italic:
    children: tuple[Node, ...]

    def __init__(self, children: tuple[Node, ...]) -> None:
        self.__dict__["children"] = children


@dataclass(frozen=True)
class Strike:
    children: tuple[Node, ...]

    def __init__(self, children: tuple[Node, ...]) -> None:
        self.__dict__["children"] = children


@dataclass(frozen=True)
class Code:
    """Inline code: shown verbatim in a monospace font."""

    text: str


@dataclass(frozen=True)
class LineBreak:
    """Ends a line."""


@dataclass(frozen=True)
class Die:
    """One die face with its role; ``tags`` carry extras, e.g. ``{"hunger"}``, ``{"rerolled"}``."""

    face: int
    role: Role
    sides: int = 10
    tags: frozenset[str] = field(default_factory=frozenset)

    def __init__(
        self, face: int, role: Role, sides: int = 10, tags: frozenset[str] = frozenset()
    ) -> None:
        fields = self.__dict__
        fields["face"] = face
        fields["role"] = role
        fields["sides"] = sides
        fields["tags"] = tags


@dataclass(frozen=True)
class Mention:
    """A person named in a reply by their platform user id: a Slack ``U024BE7LH``, a Matrix
    ``@alice:example.org``, a Telegram numeric id or ``@username``'s name, the console's user name.
    An adapter that can point at a person does (a Slack mention, a Matrix pill, a Telegram user
    link); ``label`` is shown where it cannot. ``notify``: the platform should tell the person
    (a challenge they must answer); a name in passing does not."""

    user: str
    label: str
    notify: bool = False


@dataclass(frozen=True)
class Image:
    """A picture (e.g. an odds chart). Adapters upload it; text encoders show ``alt``."""

    data: bytes
    alt: str
    filename: str = "image.png"
    mime: str = "image/png"


@dataclass(frozen=True)
class Button:
    """A suggested follow-up command; adapters with buttons show one, others may list it."""

    label: str
    command: str


@dataclass(frozen=True)
class Actions:
    """A row of buttons."""

    buttons: tuple[Button, ...]


Node = Text | Bold | Italic | Strike | Code | LineBreak | Die | Mention | Image | Actions
#: the element classes, for ``isinstance`` checks
NODE_TYPES = (Text, Bold, Italic, Strike, Code, LineBreak, Die, Mention, Image, Actions)


def _nodes(parts: Iterable[Node | str]) -> tuple[Node, ...]:
    return tuple([Text(p) if isinstance(p, str) else p for p in parts])


def text(value: str) -> Text:
    return Text(value)


def bold(*parts: Node | str) -> Bold:
    return Bold(_nodes(parts))


def italic(*parts: Node | str) -> Italic:
    return Italic(_nodes(parts))


def strike(*parts: Node | str) -> Strike:
    return Strike(_nodes(parts))


def code(value: str) -> Code:
    return Code(value)


BR = LineBreak()


def dice(faces: Sequence[Die], separator: str = " ") -> list[Node]:
    """Faces separated by ``separator``, ready to splice into a line."""
    if not faces:
        return []
    gap = Text(separator)  # one element for every gap: elements are immutable
    out: list[Node] = [gap] * (2 * len(faces) - 1)
    out[::2] = faces
    return out


def line(*parts: Node | str) -> list[Node]:
    """One line of output: the parts followed by a line break."""
    return [*_nodes(parts), BR]


@dataclass
class Private:
    """A part of a reply for one user's eyes only: the full result of a secret roll for its roller
    and the Storyteller, say. Every adapter delivers it through its platform's private channel
    (Slack: an ephemeral message, or a direct message where that can't reach; Telegram: the user's
    private chat with the bot; Matrix: a direct-message room; the console: marked "(private)"),
    never in the room."""

    #: the platform's user id
    user: str
    body: list[Node]
    #: how the user is called (shown where a platform marks whom a part is for)
    name: str = ""


@dataclass
class Reply:
    """What core hands an adapter: an element tree plus how to deliver it."""

    body: list[Node]
    #: ``"ok"`` for normal answers, ``"error"`` for a friendly error (adapters may style or hide it)
    kind: str = "ok"
    #: visible only to the caller where the platform can do that (Slack ephemeral messages)
    ephemeral: bool = False
    #: e.g. ``{"roll_id": "…", "variant": "revised"}``
    meta: dict[str, str] = field(default_factory=dict)
    #: parts for single users only, delivered privately after ``body`` (see :class:`Private`)
    private: list[Private] = field(default_factory=list)

    def __init__(
        self,
        body: list[Node],
        kind: str = "ok",
        ephemeral: bool = False,
        meta: dict[str, str] | None = None,
        private: list[Private] | None = None,
    ) -> None:
        # (the generated one calls a factory per defaulted field: every reply pays for it)
        self.body = body
        self.kind = kind
        self.ephemeral = ephemeral
        self.meta = {} if meta is None else meta
        self.private = [] if private is None else private

    @property
    def is_error(self) -> bool:
        return self.kind == "error"

    def images(self) -> list[Image]:
        return [node for node in walk(self.body) if isinstance(node, Image)]

    def add_notes(self, notes: Sequence[Node]) -> None:
        """Add ``notes`` (lines starting with a line break) under the text, before the buttons
        that end the body: on Slack the buttons are a block of their own and the notes would
        otherwise come below them, on Telegram as an empty line where the keyboard was."""
        end = len(self.body)
        while end and isinstance(self.body[end - 1], Actions | LineBreak):
            end -= 1
        if not any(isinstance(node, Actions) for node in self.body[end:]):
            end = len(self.body)
        self.body[end:end] = list(notes)

    def without_roll_footer(self) -> list[Node]:
        """The body without the ``roll ID`` footer core adds to a roll's reply (for a platform
        that shows the id elsewhere, e.g. Slack's context block)."""
        roll_id = self.meta.get("roll_id")
        if not roll_id:
            return list(self.body)
        footer = roll_footer(roll_id)
        body = list(self.body)
        for at in range(len(body) - len(footer), -1, -1):
            if body[at : at + len(footer)] == footer:
                return body[:at] + body[at + len(footer) :]
        return body


def roll_footer(roll_id: str) -> list[Node]:
    """The line at the foot of a roll's reply naming its id in the roll log (``!log ID``)."""
    return [BR, Italic((Text(f"roll {roll_id}"),))]


def walk(nodes: Iterable[Node]) -> Iterable[Node]:
    """Every node in the tree, depth first."""
    for node in nodes:
        yield node
        if isinstance(node, Bold | Italic | Strike):
            yield from walk(node.children)
