"""Replies as JSON and back: every element type, nested, survives the round trip exactly."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coterie.render.elements import (
    BR,
    Actions,
    Button,
    Code,
    Die,
    Image,
    Mention,
    Private,
    Reply,
    Role,
    Text,
    bold,
    italic,
    strike,
)
from coterie.render.encode import to_markdown, to_plain
from coterie.render.serialize import node_to_json, reply_from_json, reply_to_json, reply_to_text


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
        Mention("@alice:example.org", "alice", notify=True),
        bold(Mention("U024BE7LH", "U024BE7LH")),
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


def test_the_text_form_is_the_json_form_written_out() -> None:
    reply = Reply(
        [*every_element(), Shout("loud"), Text('quotes " and \\ and \ud800 and é')],  # type: ignore[list-item]
        kind="roll",
        ephemeral=True,
        meta={"roll_id": "ABC", "é": "ü"},
        private=[Private("U1", [Text("secret "), Die(7, Role.SUCCESS)], "Lynn")],
    )
    for _ in range(2):  # the second time from the remembered texts and dice
        assert json.loads(reply_to_text(reply)) == reply_to_json(reply)
    assert json.loads(reply_to_text(Reply([]))) == reply_to_json(Reply([]))
    with pytest.raises(TypeError, match="not an element"):
        reply_to_text(Reply(["plain str"]))  # type: ignore[list-item]


_texts = st.text(max_size=12)
_leaves = st.one_of(
    _texts.map(Text),
    _texts.map(Code),
    st.just(BR),
    st.builds(
        Die,
        st.integers(0, 20),
        st.sampled_from(list(Role)),
        st.integers(1, 20),
        st.frozensets(st.sampled_from(["hunger", "crit", "x"])),
    ),
)
_trees = st.recursive(
    _leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(lambda nodes: bold(*nodes)),
        st.lists(inner, max_size=3).map(lambda nodes: italic(*nodes)),
        st.lists(inner, max_size=3).map(lambda nodes: strike(*nodes)),
    ),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(_trees, max_size=10),
    st.dictionaries(_texts, _texts, max_size=3),
    st.booleans(),
)
def test_any_reply_written_as_text_reads_back_as_its_json_form(
    body: list[object], meta: dict[str, str], ephemeral: bool
) -> None:
    reply = Reply(body, kind="roll", ephemeral=ephemeral, meta=meta)  # type: ignore[arg-type]
    assert json.loads(reply_to_text(reply)) == reply_to_json(reply)
    assert reply_from_json(json.loads(reply_to_text(reply))).body == reply.body


def test_a_die_without_tags_is_written_without_them_and_read_back_the_same() -> None:
    plain = Die(3, Role.FAILURE, 10)
    assert node_to_json(plain) == {"t": "die", "face": 3, "role": "failure", "sides": 10}
    assert reply_from_json(reply_to_json(Reply([plain]))).body == [plain]
    earlier = {"body": [{"t": "die", "face": 3, "role": "failure", "sides": 10, "tags": []}]}
    assert reply_from_json({**earlier, "kind": "roll"}).body == [plain]  # as written before


def test_a_mention_is_written_with_notify_only_when_it_notifies() -> None:
    assert node_to_json(Mention("U1", "Lynn")) == {"t": "mention", "user": "U1", "label": "Lynn"}
    loud = node_to_json(Mention("U1", "Lynn", notify=True))
    assert loud == {"t": "mention", "user": "U1", "label": "Lynn", "notify": True}
    assert reply_from_json({"body": [loud], "kind": "roll"}).body == [Mention("U1", "Lynn", True)]
    with pytest.raises(ValueError, match="'notify' is not true or false"):
        reply_from_json({"body": [{**loud, "notify": "yes"}], "kind": "roll"})
    with pytest.raises(ValueError, match="'user' is not text"):
        reply_from_json({"body": [{"t": "mention", "user": 7, "label": "x"}], "kind": "roll"})


def test_text_encoders_show_a_mention_by_its_label() -> None:
    body = [Text("Lynn challenges "), Mention("U024BE7LH", "bob_[1]", notify=True)]
    assert to_plain(body) == "Lynn challenges bob_[1]"
    assert to_markdown(body) == "Lynn challenges **bob\\_\\[1\\]**"
