"""Odds in chat: the compact answer with a text histogram, the PNG bar chart, and ``!odds`` itself
(read the rolls exactly as ``!roll`` would, work each one's distribution out off the event loop).
The distributions come from the rule sets' :meth:`~coterie.framework.variant.Variant.odds`, built
with the engine in :mod:`coterie.dice.odds`."""

from __future__ import annotations

import io
from dataclasses import replace
from fractions import Fraction
from typing import Any

from coterie.dice.odds import Distribution, off_loop, percent
from coterie.errors import UsageError
from coterie.framework.commands import CommandContext, find_resolver, parse_requests
from coterie.framework.grammar import tokens
from coterie.framework.variant import Variant
from coterie.records import dataclass
from coterie.render.elements import BR, Code, Image, Node, Reply, Text, bold, italic


def outcome_label(name: str) -> str:
    """``messy_critical`` -> ``messy critical``."""
    return name.replace("_", " ")


def successes_label(value: int) -> str:
    return f"{value} success" if value in (1, -1) else f"{value} successes"


@dataclass(frozen=True)
class OddsSummary:
    """The figures every view of one distribution shows (the text answer, the chart's title and
    legend, the chart's alt text), worked out once so that they cannot disagree."""

    #: the chance of success: of an outcome the rule set counts as a win (``Distribution.wins``)
    win: str
    #: (outcome name, chance) of every outcome that can happen, in the rule set's order
    outcomes: tuple[tuple[str, str], ...]
    #: the mean number of successes, two decimals
    mean: str


def summarise(dist: Distribution) -> OddsSummary:
    """The one computation behind :func:`answer`, :func:`chart_png` and :func:`chart_image`."""
    counts = dist.outcome_counts()
    return OddsSummary(
        win=dist.percent(dist.win_count()),
        # an outcome that cannot happen is left out (the JSON lists every one)
        outcomes=tuple((name, dist.percent(count)) for name, count in counts.items() if count),
        mean=f"{dist.share(dist.successes_sum()):.2f}",
    )


def answer(dist: Distribution, comment: str | None = None) -> list[Node]:
    """The compact chat answer: the roll, the chance of success, the chance of each outcome,
    the most likely success counts and the mean (plus the rule set's events and note)."""
    summary = summarise(dist)
    head: list[Node] = [bold("Odds"), Text(f" — {dist.roll}")]
    if comment:
        head += [Text(" — "), italic(comment)]
    outcomes = " · ".join(f"{outcome_label(name)} {chance}" for name, chance in summary.outcomes)
    likely = ", ".join(f"{successes_label(v)} {dist.percent(c)}" for v, c in dist.ranked(3))
    body: list[Node] = [*head, BR, Text(f"Chance of success: {summary.win}")]
    body += [BR, Text(outcomes), BR, Text(f"Most likely: {likely}")]
    body += [BR, Text(f"Mean: {summary.mean} successes")]
    if dist.events:
        body += [BR, Text(" · ".join(f"{label} {percent(p)}" for label, p in dist.events))]
    if dist.note:
        body += [BR, italic(dist.note)]
    return body


#: histogram bars: at most this wide, and values below this chance are summed up, not listed
BAR_WIDTH = 24
HISTOGRAM_FLOOR = Fraction(1, 1000)
_EIGHTHS = " ▏▎▍▌▋▊▉"


def histogram(dist: Distribution) -> list[Node]:
    """A text histogram of the ``successes`` values, one monospace line per value (values less
    likely than :data:`HISTOGRAM_FLOOR` at either end are summed up in a last line)."""
    counts = dist.success_counts()
    low, high = shown_range(dist)
    top = max(counts.get(v, 0) for v in range(low, high + 1))
    width = max(len(str(low)), len(str(high)))
    lines: list[Node] = []
    for value in range(low, high + 1):
        ways = counts.get(value, 0)
        eighths = (2 * ways * BAR_WIDTH * 8 + top) // (2 * top)  # rounded, exactly
        bar = "█" * (eighths // 8) + (_EIGHTHS[eighths % 8] if eighths % 8 else "")
        if lines:
            lines.append(BR)
        lines.append(Code(f"{value:>{width}} {bar:<{BAR_WIDTH}} {dist.percent(ways):>6}"))
    rest = dist.total - sum(counts.get(v, 0) for v in range(low, high + 1))
    if rest > 0:
        lines += [BR, Text(f"(other values together: {dist.percent(rest)})")]
    return lines


def shown_range(dist: Distribution) -> tuple[int, int]:
    """The ``successes`` values a histogram or chart shows: from the first to the last at least
    :data:`HISTOGRAM_FLOOR` likely (or around the most likely ones, for a flat spread)."""
    counts = dist.success_counts()
    shown = [v for v, ways in counts.items() if ways * HISTOGRAM_FLOOR.denominator >= dist.total]
    if not shown:
        shown = [v for v, _ in dist.ranked(10)]
    return min(shown), max(shown)


# --- the chart ------------------------------------------------------------------------------------

#: bar colours by outcome (other names get the fallback colours in turn)
OUTCOME_COLOURS: dict[str, str] = {
    "critical": "#f2b600",
    "messy_critical": "#e8590c",
    "success": "#2f9e44",
    "failure": "#adb5bd",
    "bestial_failure": "#862e9c",
    "total_failure": "#495057",
    "botch": "#c92a2a",
}
FALLBACK_COLOURS = ("#1971c2", "#0c8599", "#5c940d", "#e67700")
#: bar colours of outcomes no name above covers, by their declared flags (first match wins)
FLAG_COLOURS: tuple[tuple[str, str], ...] = (
    ("messy", "#e8590c"),
    ("critical", "#f2b600"),
    ("exceptional", "#f2b600"),
    ("botch", "#c92a2a"),
)
#: a winning outcome with no flag and no colour of its own
WIN_COLOUR = "#2f9e44"


def flagged(dist: Distribution, variant: Variant[Any, Any]) -> Distribution:
    """``dist`` with the rule set's declared outcome flags (``Variant.outcome_kinds``)."""
    flags = {kind.name: kind.flags for kind in variant.outcome_kinds if kind.flags}
    return replace(dist, flags=flags) if flags and not dist.flags else dist


def outcome_colour(dist: Distribution, name: str) -> str | None:
    """The colour of an outcome's bars: by name, else by its flags, else green for a win."""
    if name in OUTCOME_COLOURS:
        return OUTCOME_COLOURS[name]
    flags = dist.flags.get(name, frozenset())
    for flag, colour in FLAG_COLOURS:
        if flag in flags:
            return colour
    return WIN_COLOUR if name in dist.wins and len(dist.wins) == 1 else None


class ChartsUnavailable(UsageError):
    """matplotlib (the ``charts`` extra) is not installed."""


def chart_png(dist: Distribution, *, dpi: int = 100) -> bytes:
    """A PNG bar chart of the ``successes`` distribution, each bar split by outcome and coloured
    by it, titled with the roll. Needs matplotlib (``pip install '.[charts]' in a clone``), imported
    here only; it draws with the Agg backend on a private figure, so it is safe in a thread."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise ChartsUnavailable(
            "charts need matplotlib, which is not installed here: "
            "pip install '.[charts]' in a clone (the text odds work without it)"
        ) from None
    summary = summarise(dist)
    chances = dict(summary.outcomes)
    low, high = shown_range(dist)
    values = list(range(low, high + 1))
    figure = Figure(figsize=(8, 4.5), dpi=dpi, layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    bottom = [0.0] * len(values)
    fallback = iter(FALLBACK_COLOURS * 4)
    for name in dist.names:
        heights = [dist.counts.get((name, v), 0) / dist.total * 100 for v in values]
        if not any(heights):
            continue
        colour = outcome_colour(dist, name) or next(fallback)
        label = f"{outcome_label(name)} {chances.get(name, dist.percent(0))}"
        axes.bar(values, heights, bottom=bottom, color=colour, label=label, width=0.8)
        bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    axes.set_xlabel("successes")
    axes.set_ylabel("chance (%)")
    if len(values) <= 30:
        axes.set_xticks(values)
    axes.set_ylim(0, max(bottom) * 1.15)
    axes.set_title(
        f"{dist.variant}: {dist.roll}\nchance of success {summary.win}, "
        f"mean {summary.mean} successes",
        fontsize=11,
    )
    axes.legend(loc="upper right", fontsize=9)
    axes.grid(axis="y", alpha=0.3)
    out = io.BytesIO()
    figure.savefig(out, format="png")
    return out.getvalue()


def chart_image(dist: Distribution) -> Image:
    """The chart as a reply element; its ``alt`` text is a one-line summary."""
    slug = "".join(c if c.isalnum() else "-" for c in dist.roll.lower()).strip("-")
    while "--" in slug:
        slug = slug.replace("--", "-")
    alt = f"Odds chart ({dist.variant}): {dist.roll}; chance of success {summarise(dist).win}"
    return Image(chart_png(dist), alt=alt, filename=f"odds-{dist.variant}-{slug[:60]}.png")


# --- !odds ----------------------------------------------------------------------------------------

#: the word that asks `!odds` for a chart
CHART_WORD = "chart"


def odds_usage(variant: Variant[Any, Any]) -> str:
    """``!odds`` usage in a room on ``variant``: its ``!roll`` grammar plus the odds words."""
    usage = variant.grammar.usage
    words = [*variant.odds_options, CHART_WORD]
    extra = " ".join(f"[{word}]" for word in words)
    if usage.startswith("!roll"):
        usage = "!odds" + usage[len("!roll") :]
    else:
        usage = "!odds POOL [DIFFICULTY] [options]"
    if usage.endswith(" [# comment]"):
        return usage[: -len(" [# comment]")] + f" {extra} [# comment]"
    return f"{usage} {extra}"


async def odds_reply(ctx: CommandContext) -> Reply:
    """What ``!odds`` does: read the rolls exactly as ``!roll`` would (without rolling), compute
    each one's distribution off the event loop (cached), and answer with the text (and, with
    ``chart``, a text histogram and a PNG chart per roll)."""
    variant = ctx.variant
    usage = odds_usage(variant)
    special = {CHART_WORD, *variant.odds_options}
    segments = []
    chosen: set[str] = set()
    for segment in ctx.args.split(";"):
        words = tokens(segment)
        chosen |= {w.lower() for w in words if w.lower() in special}
        segments.append(" ".join(w for w in words if w.lower() not in special))
    args = " ; ".join(segments) if ctx.args.strip() else ""
    if not args.replace(";", "").strip():
        raise UsageError("which roll? Give at least a dice pool, e.g. `!odds 7 6`", usage=usage)
    line = replace(ctx.line, args=args)
    await find_resolver(ctx)
    requests = parse_requests(replace(ctx, line=line), usage=usage)
    options = frozenset(chosen - {CHART_WORD})
    chart = CHART_WORD in chosen
    body: list[Node] = []
    for index, request in enumerate(requests):
        comment = ctx.line.comment if index == 0 else None
        if index:
            body.append(BR)
        body += await off_loop(_odds_nodes, variant, request, options, chart, comment)
    return Reply(body, meta={"variant": variant.name})


def _odds_nodes(
    variant: Variant[Any, Any],
    request: Any,
    options: frozenset[str],
    chart: bool,
    comment: str | None,
) -> list[Node]:
    """One roll's part of the ``!odds`` answer, all of it worked out in the worker thread (the
    text of a 1000-dice distribution takes a while too)."""
    dist = flagged(variant.odds(request, options), variant)
    nodes = answer(dist, comment)
    if chart:
        nodes += [BR, *histogram(dist), BR, chart_image(dist)]
    return nodes


_HAS_ODDS: dict[tuple[type, str], bool] = {}


def has_odds(variant: Variant[Any, Any]) -> bool:
    """Whether ``variant`` works out odds (its first ``!roll`` example's), remembered per rule
    set: ``!help`` lists ``!odds`` only where it answers."""
    key = (type(variant), variant.name)
    if key not in _HAS_ODDS:
        from coterie.framework.grammar import parse
        from coterie.framework.variant import RoomSettings

        try:
            parsed = parse(tokens(variant.roll_examples()[0]), variant.grammar)
            variant.odds(variant.build(parsed, RoomSettings(variant=variant.name)))
            _HAS_ODDS[key] = True
        except UsageError:
            _HAS_ODDS[key] = False
    return _HAS_ODDS[key]
