"""A bounded memo of built roll requests: the same roll written again in a room whose settings
have not changed is not parsed again.

Parsing ``7 6`` and building the rule set's request costs tens of microseconds, more than rolling
the dice; players repeat the same few rolls all evening. A request is a pure function of what it
is built from — the rule set (its grammar and :meth:`~coterie.framework.variant.Variant.build`),
the room's settings in force, the written roll, its comment and the ``max_options`` limit — so the
memo's key is exactly those. A change to any of them (``!set default_difficulty 7``, a house rule,
``!variant v5``, another comment) is another key: nothing needs invalidating.

Only rule sets that declare their ``build`` pure (:attr:`Variant.pure_build`, every built-in one)
are memoised, only requests that hash (immutable: frozen dataclasses of tuples), and only rolls
read without a character sheet (a sheet changes under the same text; those are read every time).
A roll that fails to parse is never remembered: its error is raised again each time.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Mapping
from dataclasses import fields
from operator import attrgetter
from typing import Any

from coterie.framework.variant import RoomSettings, Variant

#: how many requests are kept (least recently used dropped first)
REQUEST_CACHE_SIZE = 2048

_Key = tuple[int, Hashable, str, str | None, int]
_cache: OrderedDict[_Key, tuple[Variant[Any, Any], Any]] = OrderedDict()
#: id of a settings object → the object and its :func:`settings_key` (oldest dropped first)
_keys: dict[int, tuple[RoomSettings, Hashable]] = {}


def settings_key(settings: RoomSettings) -> Hashable:
    """Everything of a room's settings, as a hashable value: every field, so a setting added to
    :class:`RoomSettings` later is part of the key without anyone remembering to add it.

    Kept per settings object (the app hands out one object per room until its settings change),
    so a room's key is worked out once, not on every roll."""
    kept = _keys.get(id(settings))
    if kept is not None and kept[0] is settings:  # (held here: its id names no other object)
        return kept[1]
    key = _settings_key(settings)
    if len(_keys) >= REQUEST_CACHE_SIZE:
        del _keys[next(iter(_keys))]
    _keys[id(settings)] = (settings, key)
    return key


def _settings_key(settings: RoomSettings) -> Hashable:
    values = _read_fields(settings)
    # (strings, numbers and None as they are, without an ABC check each)
    return tuple(
        [
            value
            if type(value) in _PLAIN
            else tuple(sorted(value.items()))
            if isinstance(value, Mapping)
            else value
            for value in values
        ]
    )


_FIELDS = tuple(field.name for field in fields(RoomSettings))
#: a tuple of every field's value, read in C (a 1-field getter returns the bare value)
_read_fields = attrgetter(*_FIELDS) if len(_FIELDS) > 1 else lambda s: (getattr(s, _FIELDS[0]),)
_PLAIN = frozenset({str, int, bool, type(None)})


def remembered(
    variant: Variant[Any, Any], room: Hashable, segment: str, comment: str | None, options: int
) -> tuple[_Key, Any]:
    """The key of a roll and its remembered request, ``None`` when there is none. ``room`` is
    :func:`settings_key` of the room's settings."""
    key = (id(variant), room, segment, comment, options)
    entry = _cache.get(key)
    # the entry holds its variant, so ``id(variant)`` cannot name another object while it lives
    if entry is None or entry[0] is not variant:
        return key, None
    _cache.move_to_end(key)
    return key, entry[1]


def remember(key: _Key, variant: Variant[Any, Any], request: Any) -> None:
    """Keep ``request`` under ``key`` if it is immutable enough to share (it hashes)."""
    try:
        hash(request)
    except TypeError:
        return
    _cache[key] = (variant, request)
    if len(_cache) > REQUEST_CACHE_SIZE:
        _cache.popitem(last=False)


def clear() -> None:
    """Forget every request (tests)."""
    _cache.clear()
    _keys.clear()
