"""``!odds`` in chat (every rule set, the same grammar as ``!roll``, charts, the event loop), the
v5 re-roll odds in ``!odds reroll`` and ``!reroll``, the console, and ``coterie odds``."""

from __future__ import annotations

import asyncio
import io
import itertools
import json
import subprocess
import sys
import time
from fractions import Fraction
from typing import Any

import pytest

from conftest import RecordingDice, without_roll_id
from coterie.dice import odds
from coterie.dice.sources import FixedDice
from coterie.framework.app import Coterie
from coterie.framework.config import parse_config
from coterie.framework.grammar import parse, tokens
from coterie.framework.message import Message
from coterie.framework.variant import RoomSettings
from coterie.ops.cli import EXIT_USAGE, main
from coterie.render.elements import Actions, Code, Image, Reply, walk
from coterie.render.encode import to_plain
from coterie.rulekit import odds as odds_chat
from coterie_console import ConsoleAdapter
from coterie_v5 import rules as v5_rules
from coterie_v5.requests import RerollRequest, V5Request
from coterie_v5.variant import V5Variant

VARIANTS = ("revised", "v5", "d6", "laia", "crossover")
PNG = b"\x89PNG\r\n\x1a\n"


def app_for(variant: str, *, dice: Any = None, **config: Any) -> Coterie:
    config.setdefault("plugins", {"enable": list(VARIANTS)})
    config.setdefault("defaults", {"variant": variant})
    return Coterie(parse_config(config, "test config"), dice=dice or RecordingDice())


async def send(app: Coterie, text: str, user: str = "ana", room: str = "r") -> Reply:
    reply = await app.handle(Message(platform="test", room=room, user=user, text=text))
    assert reply is not None
    return without_roll_id(reply)


async def say(app: Coterie, text: str, **where: str) -> str:
    return to_plain((await send(app, text, **where)).body)


# --- the answer -----------------------------------------------------------------------------------


async def test_the_answer_of_a_single_die() -> None:
    # one die at difficulty 6: faces 6-10 succeed (50%), a 1 botches (10%), 2-5 fail (40%)
    text = await say(app_for("revised"), "!odds 1 6 # the lock")
    assert text.splitlines() == [
        "Odds — 1 die, difficulty 6 — the lock",
        "Chance of success: 50.0%",  # the same figure as the chart's (issue 16)
        "success 50.0% · failure 40.0% · botch 10.0%",
        "Most likely: 0 successes 50.0%, 1 success 50.0%",  # a tie: the lower first
        "Mean: 0.50 successes",
    ]


@pytest.mark.parametrize(
    ("variant", "text"),
    [
        ("revised", "!odds 7 6 wp"),
        ("v5", "!odds 7 2 3"),
        ("d6", "!odds 4 5 need 2"),
        ("laia", "?odds 10 6 spec"),
        ("crossover", "!odds rage 6 8"),
    ],
)
async def test_every_rule_set_answers_from_its_distribution(variant: str, text: str) -> None:
    app = app_for(variant)
    reply = await send(app, text)
    assert not reply.is_error
    lines = to_plain(reply.body).splitlines()
    rule_set = app.variants[variant]
    words = tokens(text.split(None, 1)[1])
    request = rule_set.build(parse(words, rule_set.grammar), RoomSettings(variant))
    dist = rule_set.odds(request)
    assert lines[0] == f"Odds — {dist.roll}"
    assert lines[1] == f"Chance of success: {odds.percent(dist.win)}"
    shown = [
        f"{name.replace('_', ' ')} {odds.percent(p)}" for name, p in dist.outcomes.items() if p
    ]
    assert lines[2] == " · ".join(shown)
    likely = [f"{odds_chat.successes_label(v)} {odds.percent(p)}" for v, p in dist.most_likely()]
    assert lines[3] == "Most likely: " + ", ".join(likely)
    assert lines[4] == f"Mean: {float(dist.mean):.2f} successes"
    assert app.dice.rolls == 0  # nothing is rolled
    assert reply.meta == {"variant": variant}


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize(
    "args", ["0", "3 12", "3 x", "3 6 bogus", "200", "3 6 vs", "3;", "3 6 wp wp", "-2"]
)
async def test_the_same_grammar_and_errors_as_roll(variant: str, args: str) -> None:
    app = app_for(variant)
    rolled = await send(app, f"!roll {args}")
    before = app.dice.rolls
    asked = await send(app, f"!odds {args}")
    assert app.dice.rolls == before  # odds never roll
    assert rolled.is_error == asked.is_error
    if rolled.is_error:
        assert to_plain(asked.body).splitlines()[0] == to_plain(rolled.body).splitlines()[0]
        assert to_plain(asked.body).splitlines()[-1].startswith("Usage: !odds ")


async def test_odds_without_a_roll_and_in_another_prefix() -> None:
    app = app_for("revised", rooms={"test:r": {"prefix": "?"}})
    text = await say(app, "?odds")
    assert text.startswith("⚠ which roll? Give at least a dice pool")
    assert "Usage: ?odds POOL [DIFFICULTY]" in text and "[chart] [# comment]" in text


async def test_several_rolls_in_one_message() -> None:
    text = await say(app_for("laia"), "!odds 3 6; 5 8 spec")
    heads = [line for line in text.splitlines() if line.startswith("Odds — ")]
    assert heads == ["Odds — 3 dice, difficulty 6", "Odds — 5 dice, difficulty 8, specialty"]


async def test_vs_and_ext_add_their_verdicts() -> None:
    app = app_for("revised")
    text = await say(app, "!odds 5 6 vs 4 7")
    assert "you prevail" in text and "a standoff" in text and "the opposition prevails" in text
    text = await say(app, "!odds 6 ext 10 progress 8")
    assert "reaches the target with this roll" in text


async def test_help_odds_shows_the_rooms_grammar_and_odds_words() -> None:
    text = await say(app_for("v5"), "!help odds")
    assert text.splitlines()[0].startswith("!odds POOL [HUNGER] [DIFFICULTY]")
    assert "[reroll] [chart] [# comment]" in text.splitlines()[0]
    assert "reroll — " in text
    listing = await say(app_for("d6"), "!help")
    assert "!odds — the exact chances of a roll" in listing


async def test_a_house_rule_set_that_counts_differently_has_no_odds() -> None:
    app = app_for("nobotch", plugins={"enable": ["revised", "house-rules"]})
    reply = await send(app, "!odds 5 6")
    assert reply.is_error and "nobotch rules count rolls their own way" in to_plain(reply.body)


# --- charts ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", VARIANTS)
async def test_a_chart_is_an_image_plus_a_text_histogram(variant: str) -> None:
    reply = await send(app_for(variant), "!odds 4 CHART")
    [image] = reply.images()
    assert isinstance(image, Image) and image.data.startswith(PNG) and image.mime == "image/png"
    assert image.filename.startswith(f"odds-{variant}-") and image.filename.endswith(".png")
    assert image.alt.startswith(f"Odds chart ({variant}): 4 dice")
    bars = [node.text for node in walk(reply.body) if isinstance(node, Code)]
    assert len(bars) >= 2 and all("%" in bar for bar in bars)
    text = to_plain(reply.body)
    assert f"[image: {image.alt}]" in text


def test_chart_png_titles_the_roll_and_colours_by_outcome() -> None:
    from matplotlib.image import imread

    v5 = V5Variant()
    dist = v5.odds(v5.build(parse(tokens("6 2 2"), v5.grammar), RoomSettings("v5")))
    data = odds_chat.chart_png(dist)
    pixels = imread(io.BytesIO(data))
    assert pixels.shape[1] == 800  # 8 inches at 100 dpi
    colours = {tuple(int(c * 255) for c in pixel[:3]) for row in pixels[::4] for pixel in row[::4]}

    def hex_rgb(code: str) -> tuple[int, int, int]:
        return (int(code[1:3], 16), int(code[3:5], 16), int(code[5:7], 16))

    for name in ("success", "messy_critical", "critical", "bestial_failure"):
        assert hex_rgb(odds_chat.OUTCOME_COLOURS[name]) in colours, name


async def test_without_matplotlib_a_chart_is_a_friendly_error(monkeypatch) -> None:
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    app = app_for("revised")
    reply = await send(app, "!odds 5 chart")
    assert reply.is_error
    assert "charts need matplotlib" in to_plain(reply.body)
    assert "pip install '.[charts]' in a clone" in to_plain(reply.body)
    assert not (await send(app, "!odds 5")).is_error


def test_core_does_not_import_matplotlib_or_icepool() -> None:
    code = (
        "import sys, coterie.framework.app, coterie.dice.odds, coterie.rulekit.odds,"
        " coterie.ops.cli, coterie_v5, coterie_laia;"
        "print(sorted(m for m in ('matplotlib', 'icepool', 'numpy') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "[]", done.stderr


# --- the event loop -------------------------------------------------------------------------------


async def test_a_thousand_dice_do_not_stall_the_bot() -> None:
    odds.clear_cache()
    app = app_for("revised", limits={"max_dice": 1000})
    gaps: list[float] = []
    running = True

    async def heartbeat() -> None:
        last = time.perf_counter()
        while running:
            await asyncio.sleep(0.005)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    beat = asyncio.create_task(heartbeat())
    started = time.perf_counter()
    reply = await send(app, "!odds 1000 6")
    took = time.perf_counter() - started
    running = False
    await beat
    assert not reply.is_error and "1000 dice" in to_plain(reply.body)
    assert took > 0.5  # a real computation (on the loop it would stall it this long) ...
    # ... yet the loop kept answering meanwhile: a beat every 50 ms on average, and no stall
    # near the computation's length (on the loop, one stall would be all of it). The bound
    # grows with the computation, so that a pause of the whole machine, which also slows the
    # computation, is not taken for a stall
    assert len(gaps) >= took / 0.05, (len(gaps), took)
    assert max(gaps) < max(0.25, took / 4), (max(gaps), took)
    started = time.perf_counter()
    await send(app, "!odds 1000 6")  # the cache answers the second time
    assert time.perf_counter() - started < 0.2


# --- v5: the Willpower re-roll --------------------------------------------------------------------


def enumerated_win(request: RerollRequest) -> Fraction:
    """The chance that re-rolling the chosen dice wins, over every face they can show."""
    v5 = V5Variant()
    wins = 0
    for new in itertools.product(range(1, 11), repeat=len(request.indexes)):
        wins += v5.evaluate(request, new).verdict.win
    return Fraction(wins, 10 ** len(request.indexes))


async def test_reroll_reply_says_what_the_odds_were_and_are() -> None:
    app = app_for("v5", dice=FixedDice([3, 8, 2, 1, 10, 9, 10, 10]))
    await send(app, "!roll 5 1 3")
    text = await say(app, "!reroll")
    v5 = V5Variant()
    base = v5.build(parse(tokens("5 1 3"), v5.grammar), RoomSettings("v5"))
    again = RerollRequest(base, (3, 8, 2, 1, 10), (0, 2, 3), v5_rules.Strategy.FAILURES)
    before = odds.percent(v5.odds(base).win)
    after = odds.percent(enumerated_win(again))
    assert text.splitlines()[-1].endswith(f" Chance of success was {before}, now {after}.")


async def test_odds_reroll_lists_each_strategy_for_the_last_roll() -> None:
    app = app_for("v5", dice=FixedDice([3, 4, 10, 10, 10]))
    refused = await send(app, "!odds reroll")
    assert refused.is_error and "no roll in this room" in to_plain(refused.body)
    await send(app, "!roll 5 1 3")  # 3 4 10 10 | Hunger 10: a messy critical
    reply = await send(app, "!odds reroll")
    lines = to_plain(reply.body).splitlines()
    assert (
        lines[0] == "Willpower re-roll odds for your last roll, now a messy critical (5 successes)"
    )
    v5 = V5Variant()
    record = {
        "kind": "roll",
        "request": v5.build(parse(tokens("5 1 3"), v5.grammar), RoomSettings("v5")).to_json(),
        "faces": [3, 4, 10, 10, 10],
        "rerolled": False,
    }
    labels = dict(v5_rules_buttons())
    picking = list(labels)  # the strategies that pick the dice (not the player's own choice)
    assert set(picking) == set(v5_rules.Strategy) - {v5_rules.Strategy.CHOSEN}
    for strategy, line in zip(picking, lines[1:5], strict=True):
        request = v5.reroll_request(record, strategy)
        assert line.startswith(labels[strategy])
        assert f"chance of success {odds.percent(enumerated_win(request))}" in line
    [actions] = [node for node in reply.body if isinstance(node, Actions)]
    assert [b.command for b in actions.buttons] == [f"!reroll {s.value}" for s in picking]
    assert app.dice.remaining == 0  # nothing rolled by !odds


def v5_rules_buttons() -> list[tuple[Any, str]]:
    from coterie_v5.variant import REROLL_BUTTONS

    return list(REROLL_BUTTONS)


def test_v5_requests_keep_their_json_round_trip() -> None:
    v5 = V5Variant()
    request = v5.build(parse(tokens("5 1 3"), v5.grammar), RoomSettings("v5"))
    assert V5Request.from_json(request.to_json()) == request


# --- the console ----------------------------------------------------------------------------------


def test_the_console_saves_the_chart_and_prints_the_histogram(make_app, tmp_path) -> None:
    app = make_app(data_dir=str(tmp_path))
    stdout = io.StringIO()
    adapter = ConsoleAdapter(
        app, {"user": "Ana"}, stdin=io.StringIO("!odds 6 chart\n"), stdout=stdout
    )
    asyncio.run(adapter.run())
    out = stdout.getvalue()
    [saved] = list((tmp_path / "images").iterdir())
    assert saved.read_bytes().startswith(PNG)
    assert f"(image saved to {saved.resolve()})" in out
    assert any(line.startswith("3 ") and "█" in line for line in out.splitlines())


# --- coterie odds ---------------------------------------------------------------------------------


def odds_json(capsys, *args: str) -> dict[str, Any]:
    code = main(["odds", *args, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert err == "" and len(out.splitlines()) == 1
    return json.loads(out)


@pytest.mark.parametrize(
    "args",
    [
        ["--variant", "revised", "--pool", "7", "--difficulty", "6", "--willpower"],
        ["--variant", "v5", "--pool", "7", "--hunger", "2", "--difficulty", "3"],
        ["--variant", "laia", "--pool", "10", "--specialty"],
        ["--variant", "d6", "--pool", "5", "--difficulty", "9"],
        ["--variant", "crossover", "--pool", "12", "--difficulty", "10"],
    ],
)
def test_cli_json_contract(capsys, args: list[str]) -> None:
    data = odds_json(capsys, *args)
    assert list(data) == ["variant", "outcomes", "successes", "mean"]
    assert data["variant"] == args[1]
    assert abs(sum(data["outcomes"].values()) - 1) < 1e-12
    assert abs(sum(data["successes"].values()) - 1) < 1e-12
    mean = sum(int(k) * p for k, p in data["successes"].items())
    assert abs(mean - data["mean"]) < 1e-12
    # every outcome the rule set can return is listed, and rolls only ever give listed ones
    for seed in range(40):
        code = main(["roll", *args, "--seed", str(seed), "--json"])
        rolled = json.loads(capsys.readouterr().out)
        assert code == 0
        assert data["outcomes"][rolled["outcome"]] > 0
        assert data["successes"][str(rolled["successes"])] > 0


def test_cli_lists_every_outcome_even_impossible_ones(capsys) -> None:
    data = odds_json(capsys, "--variant", "revised", "--pool", "3", "--willpower")
    assert data["outcomes"]["botch"] == 0.0 and set(data["outcomes"]) == {
        "success",
        "failure",
        "botch",
    }
    data = odds_json(capsys, "--variant", "v5", "--pool", "4")
    assert list(data["outcomes"]) == [
        "critical",
        "messy_critical",
        "success",
        "failure",
        "bestial_failure",
        "total_failure",
    ]
    assert data["outcomes"]["messy_critical"] == 0.0  # no Hunger dice
    planned = odds_json(capsys, "--variant", "v5", "--pool", "4", "--difficulty", "3", "--reroll")
    plain = odds_json(capsys, "--variant", "v5", "--pool", "4", "--difficulty", "3")
    assert planned["outcomes"]["success"] > plain["outcomes"]["success"]


def test_cli_text_and_chart(capsys, tmp_path) -> None:
    chart = tmp_path / "odds.png"
    assert main(["odds", "--variant", "revised", "--pool", "5", "--chart", str(chart)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Odds — 5 dice, difficulty 6\n")
    assert f"(chart saved to {chart})" in out and "█" in out
    assert chart.read_bytes().startswith(PNG)
    assert main(["odds", "--variant", "laia", "--pool", "5", "--json", "--chart", str(chart)]) == 0
    assert json.loads(capsys.readouterr().out)["variant"] == "laia"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--variant", "d6", "--pool", "3", "--willpower"],
            "the d6 rules have no willpower option",
        ),
        (["--variant", "revised", "--pool", "3", "--reroll"], "no reroll option"),
        (["--variant", "revised", "--pool", "3", "--difficulty", "11"], "between 2 and 10"),
        (["--variant", "nope", "--pool", "3"], "unknown variant 'nope'"),
        (["--variant", "revised", "--pool", "101"], "at most 100"),
        (["--variant", "v5", "--pool", "3", "--chart", "/nonexistent/dir/x.png"], "cannot write"),
    ],
)
def test_cli_refusals(capsys, argv: list[str], message: str) -> None:
    assert main(["odds", *argv]) == EXIT_USAGE
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("coterie: ") and message in err


def test_the_installed_command(coterie_cli, cli_env) -> None:
    done = subprocess.run(
        [*coterie_cli, "odds", "--variant", "v5", "--pool", "7", "--hunger", "5", "--json"],
        capture_output=True,
        text=True,
        env=cli_env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["variant"] == "v5"


async def test_a_rule_set_built_on_v5_without_odds_still_rerolls() -> None:
    from coterie_v5.commands import _reroll_chances

    class Counted(V5Variant):
        name = "counted"

        def evaluate(self, request: Any, faces: Any) -> Any:
            return super().evaluate(request, faces)

    base = V5Variant().build(parse(tokens("3 0 2"), V5Variant.grammar), RoomSettings("v5"))
    request = RerollRequest(base, (1, 7, 2), (0, 2), v5_rules.Strategy.FAILURES)
    assert await _reroll_chances(Counted(), request) is None
    assert await _reroll_chances(V5Variant(), request) == (
        odds.percent(V5Variant().odds(base).win),
        odds.percent(enumerated_win(request)),
    )
