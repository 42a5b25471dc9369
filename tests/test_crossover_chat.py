"""The ``crossover`` rule set through the chat path (``Coterie.handle``) with fixed faces:
``!roll``, ``!team``, ``!multi``, ``!move`` and ``!help``, every error message (with nothing
rolled), and a console session."""

from __future__ import annotations

import io
from collections.abc import Sequence

import pytest

from conftest import RecordingDice, drop_roll_ids, without_roll_id
from coterie.dice.sources import FixedDice
from coterie.framework.app import Coterie
from coterie.framework.config import Config
from coterie.framework.message import Message
from coterie.ops.cli import main
from coterie.render.elements import Die, Reply, Role, walk
from coterie.render.encode import to_markdown, to_plain


def app_with(faces: Sequence[int] = (), **config: object) -> Coterie:
    config.setdefault("plugins", {"enable": ["crossover", "revised"]})
    config.setdefault("defaults", {"variant": "crossover"})
    return Coterie(Config.model_validate(config), dice=RecordingDice(FixedDice(list(faces))))


async def send(app: Coterie, text: str, user: str = "lynn") -> Reply:
    reply = await app.handle(Message(platform="test", room="r", user=user, text=text))
    assert reply is not None, text
    return without_roll_id(reply)


async def lines(app: Coterie, text: str) -> list[str]:
    reply = await send(app, text)
    assert not reply.is_error, to_plain(reply.body)
    return to_plain(reply.body).splitlines()


def rolls(app: Coterie) -> list[tuple[int, int]]:
    dice = app.dice
    assert isinstance(dice, RecordingDice)
    calls: list[tuple[int, int]] = dice.calls
    return calls


async def error(app: Coterie, text: str, usage: str) -> str:
    """Send ``text``; it must be a friendly error with ``usage`` and roll nothing."""
    reply = await send(app, text)
    plain = to_plain(reply.body)
    assert reply.is_error, plain
    assert plain.startswith("⚠ ") and f"Usage: {usage}" in plain, plain
    assert "Traceback" not in plain
    assert rolls(app) == [], f"{text!r} rolled dice"
    return plain


# --- !roll --------------------------------------------------------------------------------------


async def test_roll_reply_shows_faces_roles_and_result() -> None:
    app = app_with([9, 1, 1, 8, 1])
    reply = await send(app, "!roll 5 8 # through the window")
    assert to_plain(reply.body).splitlines() == [
        "lynn — through the window",
        "5 dice, difficulty 8 (Difficult): 9 1 1 8 1",
        "Failure (3 ones cancelled 2 of 2)",
    ]
    roles = [node.role for node in walk(reply.body) if isinstance(node, Die)]
    assert roles == [Role.CANCELLED, Role.CANCELLED, Role.CANCELLED, Role.CANCELLED, Role.ONE]
    assert reply.meta["variant"] == "crossover"
    assert rolls(app) == [(5, 10)]


async def test_botch_momentous_and_willpower_lines() -> None:
    app = app_with([1, 3, 4, 3] + [5, 6, 7, 8, 9, 10, 2] + [1, 1, 3] + [6, 7, 8, 9, 10, 3])
    assert (await lines(app, "!roll 4"))[-1] == "Botch! No success and 1 one."
    assert (await lines(app, "!roll 7 5"))[-1] == ("6 successes — Phenomenal, a momentous occasion")
    assert (await lines(app, "!r 3 wp"))[-1] == (
        "1 success — Marginal (+1 guaranteed by Willpower)"
    )
    assert (await lines(app, "!roll 6"))[-1] == "5 successes — Phenomenal, a momentous occasion"


async def test_botch_in_markdown() -> None:
    reply = await send(app_with([1, 3]), "!roll 2 6")
    markdown = to_markdown(reply.body)
    assert "**Botch\\!**" in markdown


async def test_ten_point_trait_roll_and_several_rolls() -> None:
    app = app_with([8, 8, 8, 7, 4, 2] + [7, 2])
    text = await lines(app, "!roll rage 6 7; 2 6")
    assert text == [
        "lynn",
        "Rage: 6 dice, difficulty 7 (Challenging): 8 8 8 7 4 2",
        "4 successes — Exceptional",
        "2 dice, difficulty 6 (Standard): 7 2",
        "1 success — Marginal",
    ]


async def test_automatic_extended_and_resisted_replies() -> None:
    app = app_with([7, 8, 2] + [1, 3, 4] + [7, 8, 9, 10, 2, 3] + [6, 7, 2])
    assert (await lines(app, "!roll 7 6 auto"))[-1] == (
        "Automatic success — Marginal (7 dice ≥ difficulty 6; no dice rolled)"
    )
    assert (await lines(app, "!roll 3 7 ext 15 progress 5"))[-1] == "Extended: 7/15"
    assert (await lines(app, "!roll 3 6 ext 15 progress 5"))[-1] == (
        "Extended: the botch wipes out all 5 successes — 0/15"
    )
    text = await lines(app, "!roll 6 7 vs 3 6")
    assert text[-3:] == [
        "Opposed: 3 dice, difficulty 6 (Standard): 6 7 2",
        "Opposed: 2 successes — Moderate",
        "Resisted: you win by 2 successes",
    ]


async def test_the_other_side_may_roll_a_ten_point_trait_without_a_sheet() -> None:
    app = app_with([7, 8, 2] + [6, 7, 2, 2])
    text = await lines(app, "!roll 3 6 vs rage 4 6")
    assert text[-3:] == [
        "Opposed: Rage: 4 dice, difficulty 6 (Standard): 6 7 2 2",
        "Opposed: 2 successes — Moderate",
        "Resisted: a tie — neither side gets the better",
    ]


async def test_extended_resisted_reply() -> None:
    app = app_with([7, 8, 9] + [6, 2, 2])
    text = await lines(app, "!roll 3 6 ext 8 progress 5 vs 3 6 progress 6")
    assert text[-1] == "Extended resisted: 8/8 vs 7/8 — you reach the goal first and win!"


ROLL_USAGE = "!roll POOL [DIFFICULTY] [wp] [auto]"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("!roll rage 6 gnosis 4", "Gnosis is rated up to 10 and is rolled alone: write `gnosis N`"),
        ("!roll 3 rage 6", "Rage is rated up to 10 and is rolled alone"),
        ("!roll 5 6; 2+willpower 4", "Willpower is rated up to 10 and is rolled alone"),
        ("!roll 5 6 vs 3 gnosis 2", "Gnosis is rated up to 10 and is rolled alone"),
        ("!roll rage 6+2", "Rage is rated up to 10 and is rolled alone"),
        ("!roll 2+rage 6", "Rage is rated up to 10 and is rolled alone"),  # (no sheet needed)
        ("!roll rage+2 6", "Rage is rated up to 10 and is rolled alone"),
        ("!roll willpower 11", "Willpower is rated from 0 to 10, not 11"),
        ("!roll 3+4+2", "adds 3 Traits; a dice pool adds at most two"),
        ("!roll 4 6 auto", "an automatic success needs at least as many dice as the difficulty"),
        ("!roll 7 6 auto wp", "`auto` rolls no dice, so Willpower adds nothing to it"),
        ("!roll 5 6 progress 3", "`progress` goes with `ext TARGET`"),
        ("!roll 5 6 ext 5 progress 7", "progress 7 already reaches the target 5"),
        ("!roll 5 6 hunger 2", "unknown option `hunger`"),
        ("!roll", "what should I roll?"),
        ("!roll 5 6; 0", "a pool of 0 dice can't be rolled"),
    ],
)
async def test_roll_errors_roll_nothing(text: str, message: str) -> None:
    plain = await error(app_with(), text, ROLL_USAGE)
    assert message in plain


async def test_auto_house_rule_in_the_config() -> None:
    app = app_with(defaults={"variant": "crossover", "house_rules": {"auto_success": False}})
    plain = await error(app, "!roll 7 6 auto", ROLL_USAGE)
    assert "this room does not use automatic successes" in plain


# --- !team --------------------------------------------------------------------------------------


async def test_team_adds_successes_and_flags_a_botch() -> None:
    app = app_with([7, 8] + [1, 2] + [9, 2, 2])
    text = await lines(app, "!team 2 6; 2 6; 3 6 wp")
    assert text[0] == "lynn"
    assert text[1].startswith("Member 1: 2 dice")
    assert text[-1] == (
        "Teamwork: 4 successes — Exceptional — but member 2 botched, and that can hurt everyone"
    )
    assert rolls(app) == [(2, 10), (2, 10), (3, 10)]


TEAM_USAGE = "!team POOL [DIFFICULTY] [options]; POOL"


@pytest.mark.parametrize(
    ("text", "message", "usage"),
    [
        ("!team 7 6 auto; 3 6", "teamwork members each roll a plain pool", TEAM_USAGE),
        ("!team 5 6 vs 3; 3 6", "teamwork members each roll a plain pool", TEAM_USAGE),
        ("!team 5 6 ext 9; 3 6", "teamwork members each roll a plain pool", TEAM_USAGE),
        ("!team 5 6; 3 rage 4", "Rage is rated up to 10 and is rolled alone", TEAM_USAGE),
        # the core !team reads each member with the !roll grammar
        ("!team 5 6", "give at least 2 rolls separated by `;`", TEAM_USAGE),
        ("!team 5 6; 3 6 spec", "have no specialty rule", TEAM_USAGE),
    ],
)
async def test_team_errors_roll_nothing(text: str, message: str, usage: str) -> None:
    plain = await error(app_with(), text, usage)
    assert message in plain


# --- !multi -------------------------------------------------------------------------------------


async def test_multi_splits_the_smallest_pool() -> None:
    app = app_with([9, 7] + [10, 1] + [8])
    text = await lines(app, "!multi 7 6 5 split 2 2 1 diff 6 7 8 wp 2 # busy turn")
    assert text == [
        "lynn — busy turn",
        "3 actions share the smallest pool, 5 dice (of 7, 6, 5): 2 + 2 + 1",
        "Action 1 (pool 7): 2 dice, difficulty 6 (Standard): 9 7",
        "2 successes — Moderate",
        "Action 2 (pool 6): 2 dice, difficulty 7 (Challenging): 10 1",
        "1 success — Marginal (1 one cancelled 1 of 1; +1 guaranteed by Willpower)",
        "Action 3 (pool 5): 1 die, difficulty 8 (Difficult): 8",
        "1 success — Marginal",
    ]
    assert rolls(app) == [(2, 10), (2, 10), (1, 10)]
    again = await send(app_with([7, 7]), "!multi 2 2 split 1 1")
    assert again.meta["variant"] == "crossover" and len(again.meta["roll_id"]) == 6


async def test_multi_even_split_one_difficulty_and_a_rage_pool() -> None:
    app = app_with([7, 7, 7, 2])
    text = await lines(app, "!multi 3+4 rage 4 diff 7")
    assert text[1] == (
        "2 actions share the smallest pool, 4 dice (of 7, 4): 2 + 2 — an even split; "
        "choose your own with split"
    )
    assert text[2] == "Action 1 (pool 3+4): 2 dice, difficulty 7 (Challenging): 7 7"
    assert text[4] == "Action 2 (pool rage 4): 2 dice, difficulty 7 (Challenging): 7 2"


MULTI_USAGE = "!multi POOL POOL [POOL ...] [split N N ...]"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "!multi 7 6 5 split 3 2 2",
            "the split 3 + 2 + 2 = 7 dice, but the smallest pool has 5: "
            "the shares must add up to exactly 5",
        ),
        ("!multi 6 6 split 6 0", "action 2 gets no dice; give every declared action at least"),
        ("!multi 2 5 6", "the smallest pool has 2 dice: too few to give each of the 3 actions"),
        ("!multi 6 6 split 6", "`split` gives 1 shares for 2 actions"),
        ("!multi 7", "multiple actions means at least two pools"),
        ("!multi", "give each action's dice pool"),
        ("!multi 7 6 split 4 2 split 3 3", "`split` is given twice"),
        ("!multi 7 6 split", "`split` needs numbers after it"),
        ("!multi 7 6 diff", "`diff` needs numbers after it"),
        ("!multi 7 6 5 diff 6 7", "`diff` gives 2 difficulties for 3 actions"),
        ("!multi 7 6 diff 11", "a difficulty must be between 2 and 10, not 11"),
        ("!multi 7 6 wp 1 wp 2", "Willpower can be spent only once per turn"),
        ("!multi 7 6 wp", "`wp` needs the number of the one action it helps"),
        ("!multi 7 6 wp 3", "`wp 3`: the Willpower point goes to one of the actions, 1 to 2"),
        ("!multi 7 6 split 3 3 5", "`split` gives 3 shares for 2 actions"),
        ("!multi 7 split 3 3 6", "multiple actions means at least two pools"),
        ("!multi 7 6 wp 1 5", "`wp` needs the number of the one action it helps"),
        ("!multi 7 6 wp 1 rage 5", "the pools come first, then `split`, `diff` and `wp`"),
        ("!multi 7 6 spilt 3 3", "unknown word `spilt`. Did you mean `split`?"),
        ("!multi 7 rage", "`rage` needs its rating after it"),
        ("!multi 7 rage 6+1", "action 2: Rage is rated up to 10 and is rolled alone"),
        ("!multi 7 3+4+1", "action 2: `3+4+1` adds 3 Traits"),
        ("!multi 7 0", "action 2: a pool of 0 dice can't be rolled"),
        ("!multi 7 6 6 6 6 6 6 6 6 6 6", "that is 11 actions; at most 10 in one turn"),
        ("!multi 4 3++4", "the pool must be a number or a sum like `3+4`, not `3++4`"),
    ],
)
async def test_multi_errors_roll_nothing(text: str, message: str) -> None:
    plain = await error(app_with(), text, MULTI_USAGE)
    assert message in plain


async def test_multi_respects_the_dice_limit() -> None:
    app = app_with(limits={"max_dice": 10})
    plain = await error(app, "!multi 12 11", MULTI_USAGE)
    assert "that is 11 dice; a turn may roll at most 10" in plain


# --- !move --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "!move walk",
            ["Walking: 7 yards a turn.", "Walking leaves you free to act: no dice penalty."],
        ),
        (
            "!move jog dex 3",
            [
                "Jogging: 15 yards a turn (12 + Dexterity 3).",
                "Acting too: up to 14 yards (half the running distance) costs nothing; "
                "each yard beyond takes a die.",
            ],
        ),
        (
            "!move running dex 3 stamina 2 yards 20",
            [
                "Running: 29 yards a turn (20 + 3 × Dexterity 3).",
                "Moving 20 yards and acting: −6 dice on the action (6 beyond the free 14).",
                "Full speed for at most 20 turns (10 per dot of Stamina 2).",
            ],
        ),
        (
            "!move swim dex 2 skilled",
            [
                "Swimming: 14 yards a turn (12 + Dexterity 2, a trained swimmer).",
                "Acting too: up to 13 yards (half the running distance) costs nothing; "
                "each yard beyond takes a die.",
            ],
        ),
        (
            "!move swim dex 2",
            [
                "Swimming: 10 yards a turn (8 + Dexterity 2).",
                "Acting too: up to 13 yards (half the running distance) costs nothing; "
                "each yard beyond takes a die.",
            ],
        ),
        ("!move fly", ["Flying: 10 to 20 yards a turn."]),
        (
            "!move fly speed 15 dex 2 yards 15 stamina 3",
            [
                "Flying: 15 yards a turn.",
                "Moving 15 yards and acting: −2 dice on the action (2 beyond the free 13).",
                "Flying is not full speed (running, swimming, climbing): Stamina does not "
                "limit it.",
            ],
        ),
        (
            "!move climb ideal successes 3 injured",
            [
                "Climbing: 15 to 20 feet per success in ideal conditions. "
                "3 successes: 45 to 60 feet.",
                "Injured: at most 22 to 30 feet (half the normal rate). To move freely this turn, "
                "roll for it: add push stamina N willpower N.",
            ],
        ),
        (
            "!move climb poor injured stamina 1",
            [
                "Climbing: 5 feet per success in poor conditions.",
                "Injured: at most 2.5 feet per success (half the normal rate). To move freely this "
                "turn, roll for it: add push stamina N willpower N.",
                "Full speed for at most 10 turns (10 per dot of Stamina 1).",
            ],
        ),
        (
            "!move walk yards 5",
            ["Walking: 7 yards a turn.", "Moving 5 yards and acting: no penalty."],
        ),
        (
            "!move run dex 3 injured yards 14",
            [
                "Running: 29 yards a turn (20 + 3 × Dexterity 3).",
                "Injured: at most 14 yards (half the normal rate). To move freely this turn, "
                "roll for it: add push stamina N willpower N.",
                "Moving 14 yards and acting: no penalty.",
            ],
        ),
    ],
)
async def test_move_replies(text: str, expected: list[str]) -> None:
    app = app_with()
    assert await lines(app, text) == ["lynn", *expected]
    assert rolls(app) == []


async def test_move_push_success_allows_full_movement() -> None:
    app = app_with([4, 5, 2, 7])
    text = await lines(
        app, "!move run dex 3 injured push stamina 2 willpower 5 wound 1 yards 20 # the bridge"
    )
    assert text == [
        "lynn — the bridge",
        "Running: 29 yards a turn (20 + 3 × Dexterity 3).",
        "Injured: at most 14 yards (half the normal rate).",
        "Pushing past the injury with Willpower 5 (the greater of Stamina 2 and Willpower 5), "
        "−1 for wounds: 4 dice, difficulty 6 (Standard): 4 5 2 7",
        "1 success — Marginal",
        "Full movement this turn: 29 yards.",
        "Moving 20 yards and acting: −6 dice on the action (6 beyond the free 14).",
        "Full speed for at most 20 turns (10 per dot of Stamina 2).",
    ]
    assert rolls(app) == [(4, 10)]
    pushed = await send(app_with([9]), "!move walk injured push stamina 1 willpower 1")
    assert len(pushed.meta["roll_id"]) == 6
    plain = await send(app_with(), "!move walk")
    assert plain.meta == {"variant": "crossover"}  # nothing rolled, no roll id


async def test_move_push_failure_holds_to_half() -> None:
    app = app_with([8, 3, 1])
    text = await lines(app, "!move run dex 3 injured push stamina 3 willpower 2 yards 20 diff 8")
    assert text[3] == (
        "Pushing past the injury with Stamina 3 (the greater of Stamina 3 and Willpower 2): "
        "3 dice, difficulty 8 (Difficult): 8 3 1"
    )
    assert text[5:] == [
        "Held back: half the normal rate this turn, at most 14 yards.",
        "Only 14 yards of the 20 this turn.",
        "Moving 14 yards and acting: no penalty.",
        "Full speed for at most 30 turns (10 per dot of Stamina 3).",
    ]


async def test_move_push_botch_stops_the_character() -> None:
    app = app_with([1, 2])
    text = await lines(app, "!move jog dex 2 injured push stamina 2 willpower 2 yards 5")
    assert text[-3:] == [
        "Botch! No success and 1 one.",
        "The body gives out: no movement this turn — or the character trips and falls.",
        "Jogging is not full speed (running, swimming, climbing): Stamina does not limit it.",
    ]
    assert not any("Moving" in line or "Acting" in line for line in text)


async def test_move_push_climb_uses_the_climbed_distance() -> None:
    app = app_with([9, 9])
    text = await lines(app, "!move climb ideal successes 2 injured push stamina 2 willpower 1")
    assert text[-2:] == [
        "Full movement this turn: 30 to 40 feet.",
        "Full speed for at most 20 turns (10 per dot of Stamina 2).",
    ]


MOVE_USAGE = "!move walk|jog|run|swim|fly|climb [dex N]"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("!move", "how does the character move?"),
        ("!move dex 3", "how does the character move?"),
        ("!move rnu dex 3", "I don't know the movement `rnu`. Did you mean `run`?"),
        ("!move run swim dex 3", "one way of moving at a time: you named `run` and `swim`"),
        ("!move run", "running depends on Dexterity: add `dex N`, e.g. `!move run dex 3`"),
        ("!move jog", "jogging depends on Dexterity"),
        ("!move swim skilled", "swimming depends on Dexterity"),
        ("!move run 3", "I don't know what `3` is for: name it, e.g. `dex 3`"),
        ("!move run dex 3 stamina 2 4", "I don't know what `4` is for"),
        ("!move walk dexx 3", "unknown option `dexx`. Did you mean `dex`?"),
        ("!move walk skilled", "`skilled` is for swimming"),
        ("!move run dex 3 speed 12", "`speed` is for flying"),
        ("!move walk successes 3", "`successes` is for climbing"),
        ("!move walk ideal", "`ideal` describes the conditions of a climb"),
        ("!move climb ideal poor", "choose one of `ideal`, `normal` or `poor`"),
        ("!move fly speed 25", "`speed` must be between 10 and 20, not 25"),
        ("!move run dex 11", "`dex` must be between 0 and 10, not 11"),
        ("!move run dex 3 push", "`push` is the roll an Injured character makes"),
        ("!move run dex 3 injured push stamina 2", "give both, e.g. `stamina 2 willpower 5`"),
        ("!move run dex 3 willpower 3", "`willpower` is for the roll an Injured character makes"),
        ("!move run dex 3 injured wound 1", "`wound` is for the roll an Injured character makes"),
        ("!move run dex 3 injured diff 7", "`diff` is for the roll an Injured character makes"),
        (
            "!move run dex 3 injured push stamina 1 willpower 1 wound 1",
            "the health penalty takes 1 die from 1, leaving none",
        ),
        ("!move climb yards 3", "a climb is rolled, so it is an action of its own"),
        ("!move run dex 3 yards 40", "running covers at most 29 yards a turn; 40 is too far"),
        ("!move walk yards 8", "walking covers at most 7 yards a turn"),
        (
            "!move run dex 3 injured yards 20",
            "Injured, running covers at most 14 yards a turn; 20 is too far (or roll to go "
            "faster with `push`)",
        ),
        ("!move fly yards 15", "the dice penalty counts from half the running distance"),
        ("!move run dex 3 dex 4", "`dex` is given twice"),
    ],
)
async def test_move_errors_roll_nothing(text: str, message: str) -> None:
    plain = await error(app_with(), text, MOVE_USAGE)
    assert message in plain


# --- !help and where the commands exist -----------------------------------------------------------


async def test_help_lists_the_crossover_commands_and_the_ratings() -> None:
    text = await lines(app_with(), "!help")
    assert (
        text[0]
        == "coterie — rules: Crossover World of Darkness (vampires, werewolves, mages) (crossover)"
    )
    for command in ("!move — ", "!multi — ", "!roll — ", "!team — ", "!help — "):
        assert sum(line.startswith(command) for line in text) == 1, command
    assert text[-2].endswith("e.g. !help roll, !help ratings, !help actions")
    assert text[-1] == (
        "Ratings: 0 Abysmal, 1 Poor, 2 Average, 3 Good, 4 Exceptional, 5 Pinnacle of human "
        "achievement."
    )


async def test_help_topics() -> None:
    app = app_with()
    ratings = await lines(app, "!help ratings")
    assert ratings[1:7] == [
        "0 — Abysmal",
        "1 — Poor",
        "2 — Average",
        "3 — Good",
        "4 — Exceptional",
        "5 — Pinnacle of human achievement",
    ]
    actions = await lines(app, "!help actions")
    assert actions[0] == "Actions" and actions[3].startswith("Reflexive (no roll, no action spent)")
    roll = "\n".join(await lines(app, "!help roll"))
    for part in (
        "wp",
        "auto",
        "ext TARGET",
        "progress P",
        "vs POOL",
        "rage 6",
        "10 Essentially impossible",
        "5 Phenomenal",
        "5 Pinnacle of human achievement",
        "usually 3-9",
    ):
        assert part in roll, part
    move = "\n".join(await lines(app, "!help move"))
    assert "run 20 + 3 × Dexterity" in move and "ten turns of full speed per dot" in move
    multi = "\n".join(await lines(app, "!help multi"))
    assert "split 2 2 1" in multi and "Extra actions from Rage are not split" in multi


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("!help ratign", "there is no command or topic `ratign`. Did you mean `ratings`?"),
        ("!help mov", "there is no command or topic `mov`. Did you mean `move`?"),
    ],
)
async def test_help_errors(text: str, message: str) -> None:
    plain = await error(app_with(), text, "!help [COMMAND | TOPIC]")
    assert message in plain


async def test_crossover_commands_stay_in_crossover_rooms() -> None:
    app = app_with([7, 7, 7, 7, 7] + [7, 7, 7, 7] + [7, 7])
    assert "Teamwork" not in "".join(await lines(app, "!variant revised"))
    # revised's own !multi (penalty schedule), not the split
    revised = await lines(app, "!multi 7 6; 6 6")
    assert "7 − 2 = 5 dice (action 1 of 2)" in revised[1]
    reply = await send(app, "!move walk")
    assert reply.is_error and "unknown command `!move`" in to_plain(reply.body)
    help_text = await lines(app, "!help")
    assert not any(line.startswith("Ratings:") for line in help_text)
    # in a revised room the 10-point check is the revised grammar's own
    reply = await send(app, "!roll rage 6")
    assert reply.is_error and "unknown option `rage`" in to_plain(reply.body)
    await lines(app, "!variant crossover")
    assert (await lines(app, "!multi 4 2"))[1].startswith("2 actions share the smallest pool")


async def test_examples_in_errors_use_the_rooms_prefix() -> None:
    app = app_with(defaults={"variant": "crossover", "prefix": "?"})
    reply = await send(app, "?move run")
    assert "e.g. `?move run dex 3`" in to_plain(reply.body)
    reply = await send(app, "?roll 3 rage 6")
    assert "write `rage N` at the start" in to_plain(reply.body)
    assert "Usage: ?roll POOL" in to_plain(reply.body) and "!roll" not in to_plain(reply.body)
    reply = await send(app, "?multi 7")
    assert "a plain `?roll`" in to_plain(reply.body)
    assert "Usage: ?multi POOL POOL" in to_plain(reply.body)
    assert rolls(app) == []


# --- the console ----------------------------------------------------------------------------------


def test_console_session(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    script = "!roll rage 4 7\n!multi 5 4 split 3 1\n!move run dex 2 yards 18\n!roll 3 rage 2\n"
    monkeypatch.setattr("sys.stdin", io.StringIO(script))
    code = main(["chat", "--variant", "crossover", "--seed", "1", "--user", "Bo"])
    out = capsys.readouterr().out
    assert code == 0
    text = drop_roll_ids(out.splitlines())
    assert text[0] == "Bo" and text[1].startswith("Rage: 4 dice, difficulty 7 (Challenging): ")
    assert text[3] == "Bo"
    assert text[4] == "2 actions share the smallest pool, 4 dice (of 5, 4): 3 + 1"
    assert text[5].startswith("Action 1 (pool 5): 3 dice, difficulty 6 (Standard): ")
    assert text[7].startswith("Action 2 (pool 4): 1 die, difficulty 6 (Standard): ")
    assert text[9:12] == [
        "Bo",
        "Running: 26 yards a turn (20 + 3 × Dexterity 2).",
        "Moving 18 yards and acting: −5 dice on the action (5 beyond the free 13).",
    ]
    assert text[12].startswith("⚠ Rage is rated up to 10 and is rolled alone")
