"""The last plain text remembered (:func:`coterie.render.encode.plain_join` / ``to_plain``):
the same elements give the remembered text, anything else is written afresh."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from coterie.framework.limits import limit_reply
from coterie.render.elements import BR, Bold, Die, LineBreak, Node, Reply, Role, Text
from coterie.render.encode import PLAIN, plain_join, to_plain

_nodes = st.lists(
    st.one_of(
        st.builds(Text, st.text(max_size=5)),
        st.builds(Die, st.integers(1, 10), st.sampled_from(list(Role))),
        st.just(LineBreak()),
        st.builds(lambda t: Bold((Text(t),)), st.text(max_size=3)),
    ),
    max_size=8,
)


@given(st.lists(_nodes, min_size=1, max_size=4))
def test_any_sequence_of_bodies_reads_as_written_afresh(bodies: list[list[Node]]) -> None:
    for body in bodies:
        for _ in range(2):
            assert plain_join(body) == PLAIN.join(body)
            assert to_plain(body) == PLAIN.encode(body)
            assert plain_join(body) == PLAIN.join(body)


def test_a_list_changed_in_place_is_written_again() -> None:
    body: list[Node] = [Text("7 dice: "), Die(8, Role.SUCCESS)]
    assert to_plain(body) == "7 dice: 8"
    body[1] = Die(3, Role.FAILURE)  # same length, one element replaced
    assert plain_join(body) == "7 dice: 3"
    assert to_plain(body) == "7 dice: 3"
    body.append(Text("  "))
    assert plain_join(body) == "7 dice: 3  "
    assert to_plain(body) == "7 dice: 3"


def test_equal_elements_in_other_objects_give_the_same_text() -> None:
    assert to_plain([Text("a"), BR, Text("b ")]) == "a\nb"
    assert to_plain([Text("a"), LineBreak(), Text("b ")]) == "a\nb"
    assert to_plain([Text("a"), BR, Text("c ")]) == "a\nc"


def test_a_cut_reply_reads_as_cut() -> None:
    reply = Reply(body=[Text("x" * 50), BR, Text("y" * 50), BR, Text("end")])
    assert plain_join(reply.body).startswith("x" * 50)
    assert limit_reply(reply, 60)
    assert to_plain(reply.body) == PLAIN.encode(reply.body)
    assert "reply cut at 60 characters" in to_plain(reply.body)


_SPACES = list("ab \n\t\r\x0b\x0c\x1c\x1f\x85\xa0\u2003\u2028\u3000x")


@given(st.text(alphabet=st.sampled_from(_SPACES), max_size=12))
def test_finish_trims_every_line_as_rstrip_does(out: str) -> None:
    # the trim is skipped when no line ends in white space: the same text either way
    expected = "\n".join([part.rstrip() for part in out.rstrip("\n").split("\n")])
    assert PLAIN.finish(out) == expected


def test_each_encoder_class_remembers_its_own_pieces() -> None:
    from coterie.render.encode import MARKDOWN, MarkdownEncoder

    class Shouting(MarkdownEncoder):
        def text(self, value: str) -> str:
            return value.upper()

        def die(self, die: Die) -> str:
            return f"<{die.face}>"

    body: list[Node] = [Text("a (b)"), Die(8, Role.SUCCESS), BR, Bold((Text("c"),))]
    for _ in range(2):  # written, then remembered: the same text each time
        assert MARKDOWN.join(body) == "a \\(b\\)**8**\n**c**"
        assert Shouting().join(body) == "A (B)<8>\n**C**"
