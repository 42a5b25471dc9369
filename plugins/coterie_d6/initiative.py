"""Initiative in the d6 rules (001, "Initiative"): how a side is written (``NAME: P4 M3 hunter``),
for the one-message ``!initiative`` and for ``!init add`` of the initiative tracker."""

from __future__ import annotations

from collections.abc import Sequence

from coterie.dice.sources import DiceSource
from coterie.errors import UsageError
from coterie.framework.grammar import Grammar, Option, Positional, parse, shorten, tokens
from coterie.framework.variant import InitiativeEntry
from coterie_d6 import rules

INITIATIVE_USAGE = (
    "!initiative NAME: P4 M3 [hunter] [celerity | advanced]; NAME: P4 M1 ... [# comment]"
)
INITIATIVE_GRAMMAR = Grammar(
    usage=INITIATIVE_USAGE,
    positionals=(
        Positional("physical", "Physical rating", minimum=0),
        Positional("mental", "Mental rating", minimum=0),
    ),
    options=(
        Option("physical", "int", "Physical rating", aliases=("p",), minimum=0, compact=True),
        Option("mental", "int", "Mental rating", aliases=("m",), minimum=0, compact=True),
        Option("hunter", "flag", "Hunter's Instinct is activated", aliases=("instinct", "hunters")),
        Option("celerity", "flag", "Basic Celerity is activated", aliases=("basic", "cel")),
        Option("advanced", "flag", "Advanced Celerity is activated", aliases=("adv",)),
    ),
)
#: the longest name a side of an initiative may have
MAX_NAME = 32
#: ``!init add`` in d6 rooms
INIT_USAGE = "!init add NAME P4 M3 [hunter] [celerity | advanced]"
#: extra actions Celerity gives in a turn (the document does not say how many: our reading)
CELERITY_ACTIONS = {"basic": 1, "advanced": 2}


def combatant(part: str, number: int, max_options: int) -> rules.Combatant:
    """One side of ``!initiative``: ``NAME: P4 M3 hunter`` (the name may be left out)."""
    name, colon, rest = part.partition(":")
    if not colon:
        name, rest = "", part
    name = " ".join(name.split())
    if colon and not name:
        raise UsageError(f"side {number} has a `:` with no name before it", usage=INITIATIVE_USAGE)
    if len(name) > MAX_NAME or not name.isprintable() or "`" in name:
        raise UsageError(
            f"`{shorten(name)}` can't be a name: at most {MAX_NAME} plain characters",
            usage=INITIATIVE_USAGE,
        )
    name = name or f"#{number}"
    words = tokens(rest)
    if not words:
        raise UsageError(f"{name} needs Physical and Mental, e.g. `{name}: P4 M3`")
    try:
        parsed = parse(words, INITIATIVE_GRAMMAR, max_options=max_options)
    except UsageError as error:
        if not colon:
            error.hint = "Names go before a colon, e.g. `Jack: P4 M3 hunter`."
        raise
    physical, mental = parsed.int("physical"), parsed.int("mental")
    if physical is None or mental is None:
        missing = " and ".join(
            trait for trait, value in (("Physical", physical), ("Mental", mental)) if value is None
        )
        raise UsageError(f"{name} needs a {missing} rating too, e.g. `{name}: P4 M3`")
    return rules.Combatant(
        name,
        physical,
        mental,
        hunters_instinct=parsed.flag("hunter"),
        advanced_celerity=parsed.flag("advanced"),
        basic_celerity=parsed.flag("celerity"),
    )


def entry(
    name: str, words: Sequence[str], dice: DiceSource, max_options: int = 20
) -> InitiativeEntry:
    """One side for the initiative tracker: the ordered comparisons as its key (ties roll off,
    as the document says); Celerity's extra actions come after everyone's first action."""
    del dice  # the comparisons need no die; the tracker rolls the tie-breaks
    side = combatant(f"{name}: {' '.join(words)}", 1, max_options)
    shown = f"P{side.physical} M{side.mental}" + "".join(
        f" {label}"
        for label, on in (
            ("Hunter's Instinct", side.hunters_instinct),
            ("Advanced Celerity", side.advanced_celerity),
            ("Celerity", side.basic_celerity and not side.advanced_celerity),
        )
        if on
    )
    return InitiativeEntry(
        name=side.name, key=rules.initiative_key(side), shown=shown, extra=extra_actions(side)
    )


def extra_actions(side: rules.Combatant) -> int:
    """The extra actions a side's activated Celerity gives (our reading: 001 gives no number)."""
    if side.advanced_celerity:
        return CELERITY_ACTIONS["advanced"]
    return CELERITY_ACTIONS["basic"] if side.basic_celerity else 0
