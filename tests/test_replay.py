"""The public replay source, :class:`coterie.dice.sources.ReplayDice` (issue 21): given faces in
order, more draws for rules that roll more, clear errors for too few and too many faces."""

from __future__ import annotations

import pytest

from coterie.dice import ReplayDice, SeededDice
from coterie.errors import UsageError
from coterie.ops.cli import main


def test_serves_faces_in_order_across_draws() -> None:
    dice = ReplayDice([3, 10, 10, 2, 7])
    assert dice.roll(2, 10) == [3, 10]
    assert dice.roll(1, 10) == [10]  # the rule asks for more (an exploding 10)
    assert dice.roll(2, 10) == [2, 7]
    assert dice.remaining == 0 and dice.draws == 3
    assert dice.drawn == [3, 10, 10, 2, 7]
    dice.finish()


def test_running_out_says_how_many_dice_the_roll_needed() -> None:
    dice = ReplayDice([10, 9])
    dice.roll(2, 10)
    with pytest.raises(UsageError) as error:
        dice.roll(1, 10)
    assert "the faces ran out: this roll needs at least 3 dice, but 2" in error.value.message
    assert "every die added or re-rolled" in error.value.message
    with pytest.raises(UsageError) as first:
        ReplayDice([4], what="--faces: ").roll(3, 10)
    assert first.value.message == (
        "--faces: the faces ran out: this roll needs at least 3 dice, but 1 face(s) were given"
    )


def test_faces_left_over_are_refused() -> None:
    dice = ReplayDice([1, 2, 3])
    dice.roll(2, 6)
    with pytest.raises(UsageError, match="1 face\\(s\\) left over: this roll used 2 dice, but 3"):
        dice.finish()


def test_a_face_the_die_cannot_show() -> None:
    with pytest.raises(UsageError, match="a d6 cannot show 7"):
        ReplayDice([7]).roll(1, 6)
    with pytest.raises(UsageError, match="cannot show 0"):
        ReplayDice([0]).roll(1, 10)


def test_more_continues_a_roll_past_the_given_faces() -> None:
    seeded = SeededDice(5)
    expected = [*SeededDice(5).roll(3, 10)]
    dice = ReplayDice([10, 10], more=seeded.roll)
    assert dice.roll(4, 10) == [10, 10, *expected[:2]]
    assert dice.roll(1, 10) == expected[2:3]
    dice.finish()
    assert dice.drawn == [10, 10, *expected]


def test_replay_runs_a_whole_roll_and_finishes() -> None:
    def play(dice: ReplayDice) -> int:
        faces = dice.roll(1, 10)
        while faces[-1] == 10:  # a chain of exploding tens
            faces += dice.roll(1, 10)
        return len(faces)

    assert ReplayDice.replay([10, 10, 3], play) == 3
    with pytest.raises(UsageError, match="left over"):
        ReplayDice.replay([10, 3, 3], play)
    with pytest.raises(UsageError, match="ran out"):
        ReplayDice.replay([10, 10], play)


def test_cli_replays_a_d6_roll_and_refuses_extra_faces(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["roll", "--variant", "d6", "--pool", "2", "--faces", "4,1", "--json"]) == 0
    assert '"faces": [4, 1]' in capsys.readouterr().out
    code = main(["roll", "--variant", "d6", "--pool", "2", "--faces", "4,1,3", "--json"])
    assert code == 2
    err = capsys.readouterr().err
    assert "--faces: 1 face(s) left over: this roll used 2 dice, but 3 face(s)" in err
