"""Replies as JSON and back: every element type, nested, survives the round trip exactly."""

from __future__ import annotations

import json

import pytest

from coterie.render.elements import (
    BR,
    Actions,
    Button,
    Code,
    Die,
    Image,
    Private,
    Reply,
    Role,
    Text,
    bold,
    italic,
    strike,
)
from coterie.render.serialize import node_to_json, reply_from_json, reply_to_json


class Shout(Text):
    """A subclass of an element, as a plugin might write one: stored as the element."""


def every_element() -> list[object]:
    return [
        Text("Lynn rolls "),
        Die(10, Role.SUCCESS, 10, frozenset({"hunger", "crit"})),
        Die(1, Role.BOTCH),
        Code("!roll 5 6"),
        BR,
        bold("a ", italic("b ", strike("c ", Die(4, Role.FAILURE, 6))), Code("x")),
        Image(b"\x89PNG\r\n\x1a\n", "a chart", "odds.png", "image/png"),
        Actions((Button("Re-roll", "!reroll"), Button("Odds", "!odds 5 6"))),
    ]


def test_every_element_survives_the_round_trip_through_json_text() -> None:
    reply = Reply(
        every_element(),  # type: ignore[arg-type]
        kind="roll",
        ephemeral=True,
        meta={"roll_id": "ABC"},
        private=[Private("U1", [Text("secret "), Die(7, Role.SUCCESS)], "Lynn")],
    )
    back = reply_from_json(json.loads(json.dumps(reply_to_json(reply))))
    assert back.body == reply.body
    assert (back.kind, back.ephemeral, back.meta) == ("roll", True, {"roll_id": "ABC"})
    assert back.private == reply.private


def test_a_die_is_written_with_its_tags_sorted() -> None:
    written = node_to_json(Die(3, Role.FAILURE, 10, frozenset({"z", "a"})))
    assert written == {"t": "die", "face": 3, "role": "failure", "sides": 10, "tags": ["a", "z"]}


def test_a_subclass_is_written_as_its_element_and_anything_else_is_refused() -> None:
    assert node_to_json(Shout("hey")) == {"t": "text", "text": "hey"}
    with pytest.raises(TypeError, match="not an element"):
        node_to_json("plain str")  # type: ignore[arg-type]
