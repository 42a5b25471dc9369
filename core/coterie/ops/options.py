"""``--option NAME[=VALUE]`` of ``coterie roll`` and ``coterie odds``: a rule set's options, read
from what it declares once — its house rules (``Variant.house_rules``, what ``!set`` and the
config's ``house_rules`` take) and its ``!roll`` options (``Variant.grammar``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from coterie.errors import UsageError
from coterie.framework.grammar import check_range, suggest
from coterie.framework.variant import RoomSettings


def apply_options(
    variant: Any, given: Sequence[str], values: dict[str, Any], settings: RoomSettings
) -> RoomSettings:
    """``--option NAME[=VALUE]``: a house rule the rule set declares (as ``!set`` and the config
    take it), or one of its ``!roll`` options (a flag, or ``NAME=N``); anything else is refused
    with the rule set's options listed."""
    rules = {rule.name: rule for rule in variant.house_rules}
    grammar = {name: option for option in variant.grammar.options for name in option.names}
    house = dict(settings.house_rules)
    for text in given:
        name, has_value, raw = text.partition("=")
        name = name.strip().lower()
        if name in rules:
            if not has_value:
                if not isinstance(rules[name].default, bool):
                    raise UsageError(f"--option {name} needs a value: {name}=N")
                raw = "on"
            try:
                house[name] = rules[name].read(raw)
            except ValueError as error:
                raise UsageError(f"--option {name}: {error}") from None
            continue
        option = grammar.get(name)
        if option is None:
            known = sorted([*rules, *(o.name for o in variant.grammar.options)])
            close = suggest(name, known)
            hint = f" Did you mean {close}?" if close else ""
            raise UsageError(
                f"--option: the {variant.name} rules have no option {name!r}.{hint} "
                f"Options: {', '.join(known) or 'none'}"
            )
        if option.kind == "flag":
            if has_value and raw.strip().lower() not in ("on", "true", "yes", "1"):
                raise UsageError(f"--option {name} is a flag: give it without a value")
            values[option.dest] = True
        elif not has_value:
            raise UsageError(f"--option {name} needs a value: {name}={option.metavar}")
        elif option.kind == "int":
            try:
                number = int(raw)
            except ValueError:
                raise UsageError(f"--option {name} takes a number, not {raw!r}") from None
            values[option.dest] = check_range(number, option.minimum, option.maximum, name)
        else:
            values[option.dest] = raw.strip().lower()
    return replace(settings, house_rules=house)
