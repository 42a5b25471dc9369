"""Messages that teach (issue 22): errors that say how to write it right in the room's rule set,
and every example ``!help`` shows, run in every rule set, answered without an error."""

from __future__ import annotations

import itertools

import pytest

from coterie.framework.commands import example_steps
from coterie.render.encode import to_plain

EVERYTHING = {"enable": ["*"]}


@pytest.fixture
def app(make_app):
    return make_app(plugins=EVERYTHING, seed=3, limits={"rate": {"enabled": False}})


async def on(app, say, variant: str, room: str) -> None:
    if variant != "revised":
        assert "now plays" in (await say(app, f"!variant {variant}", room=room) or "")


def all_examples(app):
    for name, variant in sorted(app.variants.items()):
        for command in app.room_commands(name):
            for example in command.examples:
                yield name, variant, command, example


def test_every_command_has_two_examples_in_every_rule_set(app):
    missing = [
        f"{name}: !{command.name}"
        for name in app.variants
        for command in app.room_commands(name)
        if len(command.examples) < 2
    ]
    assert not missing, missing
    assert all(len(v.roll_examples()) >= 2 for v in app.variants.values())


@pytest.mark.parametrize("seed", range(6))
async def test_help_shows_each_example_and_each_runs_without_an_error(make_app, say, send, seed):
    # several seeds: an example must work whatever the dice (a re-roll with no failure to re-roll)
    app = make_app(plugins=EVERYTHING, seed=seed, limits={"rate": {"enabled": False}})
    counter = itertools.count()
    ran = 0
    for name, variant, command, example in all_examples(app):
        steps = example_steps(example, variant)
        room = f"ex{next(counter)}"
        await on(app, say, name, room)
        shown = await say(app, f"!help {command.name}", room=room)
        assert shown is not None and "Examples: " in shown, (name, command.name, shown)
        for who, text in steps:
            assert (f"{who}: {text}" if who else text) in shown, (name, text, shown)
        last_id = None
        for who, text in steps:
            if "ROLL-ID" in text:  # the id the previous roll's reply ended with
                assert last_id, (name, text)
                text = text.replace("ROLL-ID", last_id)
            answer = await send(app, text, user=who or "alice", room=room)
            assert answer is not None, (name, text)
            reply = to_plain(answer.body)
            assert not answer.is_error, f"{name}: {text!r} -> {reply}"
            last_id = answer.meta.get("roll_id", last_id)
            ran += 1
    assert ran > 60


async def test_bare_help_and_roll_help_show_the_rule_sets_own_rolls(app, say):
    for name, variant in app.variants.items():
        room = f"h-{name}"
        await on(app, say, name, room)
        rolls = variant.roll_examples()
        bare = await say(app, "!help", room=room)
        assert f"Try !roll {rolls[0]} or !roll {rolls[1]}." in (bare or ""), bare
        for args in rolls:
            reply = await say(app, f"!roll {args}", room=room)
            assert reply is not None and not reply.startswith("⚠"), (name, args, reply)
        roll_help = await say(app, "!help roll", room=room) or ""
        assert f"Examples: !roll {rolls[0]}; !roll {rolls[1]}" in roll_help, roll_help


# --- errors that teach ----------------------------------------------------------------------------


async def error(app, say, text: str, room: str = "r1") -> str:
    reply = await say(app, text, room=room)
    assert reply is not None and reply.startswith("⚠ "), reply
    assert "Traceback" not in reply
    return reply


async def test_dice_notation_says_how_to_write_that_many_dice(app, say):
    revised = await error(app, say, "!roll 7d10")
    assert "dice notation" in revised
    assert "7 dice: `!roll 7 6`" in revised and "`!r 7d10`" in revised
    await on(app, say, "v5", "v")
    v5 = await error(app, say, "!roll 7d10", room="v")
    assert "7 dice: `!roll 7 2 3`" in v5
    await on(app, say, "d6", "d")
    d6 = await error(app, say, "!odds 3d6", room="d")
    assert "3 dice: `!odds 3 4`" in d6


async def test_number_words_and_negative_pools_are_taught(app, say):
    five = await error(app, say, "!roll five")
    assert "digits" in five and "Write `!roll 5`." in five
    assert "Write `!roll 5 6 wp`." in await error(app, say, "!roll 5 six wp")
    negative = await error(app, say, "!roll -2")
    assert "can't be `-2`" in negative and "`!roll 7-2 6`" in negative


async def test_a_number_in_the_wrong_slot_shows_how_the_numbers_read(app, say):
    revised = await error(app, say, "!roll 5 12")
    assert "between 2 and 10, not 12" in revised
    assert "reads its numbers as POOL DIFFICULTY, e.g. `!roll 7 6`" in revised
    await on(app, say, "v5", "v")
    v5 = await error(app, say, "!roll 7 6", room="v")  # what the old banner suggested in v5
    assert "hunger must be between 0 and 5, not 6" in v5
    assert "POOL HUNGER DIFFICULTY, e.g. `!roll 7 2 3`" in v5


async def test_hints_use_the_rooms_prefix(app, say):
    await say(app, "!set prefix ?")
    assert "`?roll 7 6`" in await error(app, say, "?roll 7d10")


async def test_unknown_command_lists_the_closest_names(app, say):
    reply = await error(app, say, "!sesion start")
    assert "Did you mean `!session`?" in reply
    reply = await error(app, say, "!stat")
    assert "`!stats`" in reply and " or " in reply  # more than one close name
    reply = await error(app, say, "!xyzzy")
    assert "`!help` lists the commands" in reply


async def test_a_command_of_another_rule_set_says_which_has_it(app, say):
    reply = await error(app, say, "!rouse")
    assert "belongs to" in reply and "(v5)" in reply and "`!variant v5`" in reply
    await on(app, say, "v5", "v")
    reply = await error(app, say, "!move walk", room="v")
    assert "(crossover)" in reply
    # following the hint works
    await say(app, "!variant v5", room="r2")
    ok = await say(app, "!rouse", room="r2")
    assert ok is not None and not ok.startswith("⚠")


def test_help_text_is_plain_in_every_rule_set(app):
    # the examples render without placeholders left over
    for _name, variant, _command, example in all_examples(app):
        for _who, text in example_steps(example, variant):
            assert "{" not in text and "}" not in text, text
    assert to_plain([]) == ""
