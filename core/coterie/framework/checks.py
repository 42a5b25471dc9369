"""The config checked against the loaded plugins (rule sets, house rules, room names, adapters and
their settings) at start and by ``coterie config check``: every problem at once, one line each."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from coterie.framework.adapter import Adapter
from coterie.framework.config import Problems
from coterie.framework.configbase import DEFAULT_VARIANT
from coterie.framework.grammar import suggest
from coterie.framework.variant import Variant

if TYPE_CHECKING:
    from coterie.framework.config import Config


def check_against_plugins(
    config: Config,
    variants: Mapping[str, Variant[Any, Any]],
    adapter_classes: Mapping[str, type[Adapter]],
) -> None:
    """Raise one ``ConfigError`` listing every problem of ``config`` with these plugins."""
    problems = Problems()
    tables = [("defaults", config.defaults)] + [
        (f'rooms."{key}"', room) for key, room in config.rooms.items()
    ]
    for key in config.rooms:
        platform, sep, room_id = key.partition(":")
        if not sep or not platform or not room_id:
            problems.add(
                f"rooms.{key}",
                'a room is named "platform:room" (did you mean '
                f'[rooms."{next(iter(sorted(adapter_classes)), "console")}:{key}"]?)',
            )
        elif platform not in adapter_classes:
            close = suggest(platform, sorted(adapter_classes))
            if close:
                problems.add(f'rooms."{key}"', f"no adapter {platform!r} (did you mean {close!r}?)")
    for where, room in tables:
        if room.variant is not None and room.variant not in variants:
            close = suggest(room.variant, sorted(variants))
            hint = f" (did you mean {close!r}?)" if close else ""
            if room.variant == DEFAULT_VARIANT and where == "defaults" and len(variants) == 1:
                # the default rule set left out of `enable`: name the one enabled instead
                only = next(iter(variants))
                hint = f' (with only {only} enabled, set [defaults] variant = "{only}")'
            names = ", ".join(sorted(variants)) or "none"
            problems.add(
                f"{where}.variant",
                f"unknown variant {room.variant!r}{hint}; installed: {names}",
            )
    # (every rule set is asked only when some table sets house rules: asking imports them all)
    declared = (
        {rule.name: rule for v in variants.values() for rule in v.house_rules}
        if any(room.house_rules for _, room in tables)
        else {}
    )
    for where, room in tables:
        for rule, setting in room.house_rules.items():
            if rule not in declared:
                close = suggest(rule, sorted(declared))
                known = f"did you mean {close!r}?" if close else "no rule set declares it"
                problems.add(f"{where}.house_rules.{rule}", f"unknown house rule ({known})")
                continue
            try:
                declared[rule].check(setting)
            except ValueError as error:
                problems.add(f"{where}.house_rules.{rule}", str(error))
        variant = variants.get(room.variant or config.default_variant)
        low, high = variant.difficulty_range if variant else (1, 30)
        value = room.default_difficulty
        if variant is not None and value is not None and not low <= value <= high:
            problems.add(
                f"{where}.default_difficulty",
                f"{value} is outside {variant.name}'s difficulties {low}-{high}",
            )
    for name in config.enabled_adapters():
        if name not in adapter_classes:
            installed = ", ".join(sorted(adapter_classes)) or "none"
            problems.add(
                f"adapters.{name}", f"no such adapter is loaded; loaded adapters: {installed}"
            )
            continue
        with problems.gather():
            adapter_classes[name].check_settings(config.adapters[name])
    problems.raise_if_any()
