"""A room's settings in force, merged from the config's ``[defaults]``, its ``[rooms."KEY"]``
table and the changes made from chat (``!set``, ``!variant NAME``), as :meth:`Coterie.
room_settings <coterie.framework.app.Coterie.room_settings>` keeps them."""

from __future__ import annotations

from collections.abc import Container
from typing import TYPE_CHECKING, Any

from coterie.framework.variant import RoomSettings

if TYPE_CHECKING:
    from coterie.framework.config import Config


def merge_room_settings(
    config: Config, variants: Container[str], room_key: str, stored: dict[str, Any]
) -> RoomSettings:
    """The settings of ``room_key`` from ``config`` and the chat-made changes ``stored`` (a
    dict of its own: its ``house_rules`` are taken out). A configured ``default_difficulty``
    belongs to the rule set its table configures (a difficulty means different things in
    different rule sets): a room that switched to another rule set uses that one's own
    default. A rule set not among ``variants`` gives way to the config's default."""
    merged: dict[str, Any] = {"variant": config.default_variant, "prefix": "!"}
    difficulty_for: str | None = None
    house: dict[str, bool | int] = {}
    for room in (config.defaults, config.rooms.get(room_key)):
        if room is None:
            continue
        for key in ("variant", "prefix", "default_difficulty"):
            value = getattr(room, key)
            if value is not None:
                merged[key] = value
        if room.default_difficulty is not None:
            difficulty_for = merged["variant"]
        house.update(room.house_rules)
    house.update(stored.pop("house_rules", {}))
    merged.update({k: v for k, v in stored.items() if k in ("variant", "prefix", "chronicle")})
    if stored.get("default_difficulty") is not None:
        merged["default_difficulty"] = stored["default_difficulty"]
        difficulty_for = stored.get("difficulty_for")
    if merged["variant"] not in variants:
        merged["variant"] = config.default_variant
    if merged["variant"] != difficulty_for:
        merged.pop("default_difficulty", None)
    return RoomSettings(house_rules=house, **merged)
