"""Checks of the config that need the loaded plugins (rule sets, house rules, adapters), run
when the app is built and by ``coterie config check``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from coterie.errors import ConfigError
from coterie.framework.adapter import Adapter
from coterie.framework.config import Config
from coterie.framework.grammar import suggest
from coterie.framework.variant import Variant


def check_against_plugins(
    config: Config,
    variants: Mapping[str, Variant[Any, Any]],
    adapter_classes: Mapping[str, type[Adapter]],
) -> None:
    """Refuse a config that names what the loaded plugins don't have: a rule set, a house rule
    or its value, a default difficulty outside its rule set's range, an adapter (whose own table
    it then checks): a ``ConfigError`` naming the key."""
    names = ", ".join(sorted(variants)) or "none"
    tables = [("defaults", config.defaults)] + [
        (f'rooms."{key}"', room) for key, room in config.rooms.items()
    ]
    for where, room in tables:
        if room.variant is not None and room.variant not in variants:
            raise ConfigError(
                f"{where}.variant: unknown variant {room.variant!r}; installed: {names}"
            )
    declared = {rule.name: rule for v in variants.values() for rule in v.house_rules}
    for where, room in tables:
        for rule, setting in room.house_rules.items():
            if rule not in declared:
                close = suggest(rule, sorted(declared))
                known = f"did you mean {close!r}?" if close else "no rule set declares it"
                raise ConfigError(f"{where}.house_rules.{rule}: unknown house rule ({known})")
            try:
                declared[rule].check(setting)
            except ValueError as error:
                raise ConfigError(f"{where}.house_rules.{rule}: {error}") from None
        variant = variants.get(room.variant or config.default_variant)
        low, high = variant.difficulty_range if variant else (1, 30)
        value = room.default_difficulty
        if variant is not None and value is not None and not low <= value <= high:
            raise ConfigError(
                f"{where}.default_difficulty: {value} is outside {variant.name}'s "
                f"difficulties {low}-{high}"
            )
    for name in config.enabled_adapters():
        if name not in adapter_classes:
            installed = ", ".join(sorted(adapter_classes)) or "none"
            raise ConfigError(
                f"adapters.{name}: no such adapter is loaded; loaded adapters: {installed}"
            )
        adapter_classes[name].check_settings(config.adapters[name])
