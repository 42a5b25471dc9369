"""A character sheet as play reads and moves it: ratings, trackers (points, levels, damage
boxes), wound penalties, the readable sheet, and the JSON schema of ``!char export``.

A sheet is a JSON object (``coterie.character/1``, see ``docs/characters.md``); these functions
read and change it against the rule set's :class:`~coterie.framework.characters.
CharacterTemplate`. They are pure (no store), so the rules they apply are tested with plain
dicts."""

from __future__ import annotations

import re
import time
from typing import Any

from coterie.errors import UsageError
from coterie.framework.characters import CharacterTemplate, TrackerSpec, custom_group, fold
from coterie.framework.variant import RoomSettings, Variant
from coterie.render.elements import BR, Node, Text, bold, italic

SCHEMA = "coterie.character/1"
NAME = re.compile(r"[^\W_][\w '\-]{0,29}")
MACRO = re.compile(r"[a-z][a-z0-9_-]{0,29}")


def new_sheet(
    template: CharacterTemplate, name: str, kind: str | None, owner: str, owner_name: str
) -> dict[str, Any]:
    if not NAME.fullmatch(name):
        raise UsageError(
            f"`{name[:32]}` can't be a character's name: 1-30 letters, digits, spaces, ' and -"
        )
    return {
        "schema": SCHEMA,
        "variant": template.variant,
        "name": name,
        "kind": kind or (template.kinds[0] if template.kinds else ""),
        "owner": owner,
        "owner_name": owner_name,
        "npc": False,
        "hidden": False,
        "traits": {},
        "custom": {},
        "specialties": {},
        "trackers": {},
        "macros": {},
        "version": 1,
        "updated": time.time(),
    }


# --- ratings ---------------------------------------------------------------------------------


def rating(template: CharacterTemplate, sheet: dict[str, Any], name: str) -> int:
    """A Trait's rating (its default when never set)."""
    value = sheet["traits"].get(name)
    if value is not None:
        return int(value)
    spec = template.traits.get(fold(name))
    return spec.default if spec is not None else 0


def bounds(template: CharacterTemplate, sheet: dict[str, Any], name: str) -> tuple[int, int]:
    spec = template.traits.get(fold(name))
    if spec is not None:
        return spec.low, spec.high
    group = custom_group(template, sheet["custom"][name])
    return group.custom_low, group.custom_high


def set_rating(template: CharacterTemplate, sheet: dict[str, Any], name: str, value: int) -> None:
    low, high = bounds(template, sheet, name)
    if not low <= value <= high:
        raise UsageError(f"{name} must be between {low} and {high}, not {value}")
    sheet["traits"][name] = value


# --- trackers --------------------------------------------------------------------------------


def tracker_high(
    template: CharacterTemplate,
    sheet: dict[str, Any],
    tracker: TrackerSpec,
    variant: Variant[Any, Any] | None = None,
    settings: RoomSettings | None = None,
) -> int:
    """The most a points or level tracker can hold, or the number of boxes of a track."""
    state = sheet["trackers"].get(tracker.name, {})
    if tracker.kind == "boxes":
        if "size" in state:
            return int(state["size"])
        if isinstance(tracker.size, int):
            return tracker.size
        return sum(rating(template, sheet, t) for t in tracker.size) + tracker.size_offset
    if tracker.kind == "points":
        if tracker.trait is not None:
            return rating(template, sheet, tracker.trait)
        return int(state.get("max", tracker.high))
    if tracker.high_rule and variant is not None and settings is not None:
        try:
            return int(settings.rule(variant, tracker.high_rule))
        except KeyError:
            pass
    return tracker.high


def value(template: CharacterTemplate, sheet: dict[str, Any], tracker: TrackerSpec) -> int:
    """A points tracker's current points, or a level tracker's value."""
    state = sheet["trackers"].get(tracker.name, {})
    if tracker.kind == "points":
        high = tracker_high(template, sheet, tracker)
        return min(int(state.get("current", high)), high)
    return int(state.get("value", tracker.default))


def set_value(sheet: dict[str, Any], tracker: TrackerSpec, new: int) -> None:
    key = "current" if tracker.kind == "points" else "value"
    sheet["trackers"].setdefault(tracker.name, {})[key] = new


def marks(
    template: CharacterTemplate, sheet: dict[str, Any], tracker: TrackerSpec
) -> dict[str, int]:
    """Boxes marked, by damage kind (only kinds with marks), never more than the track holds."""
    state = sheet["trackers"].get(tracker.name, {})
    found = {k: int(n) for k, n in state.get("marks", {}).items() if n}
    size = tracker_high(template, sheet, tracker)
    # a track that shrank (Stamina lowered) loses its least severe marks first
    for kind, _ in tracker.marks:
        extra = sum(found.values()) - size
        if extra <= 0:
            break
        if kind in found:
            found[kind] -= min(extra, found[kind])
    return {k: n for k, n in found.items() if n}


def boxes_text(template: CharacterTemplate, sheet: dict[str, Any], tracker: TrackerSpec) -> str:
    """``[X//...]``: most severe first, then the empty boxes."""
    marked = marks(template, sheet, tracker)
    size = tracker_high(template, sheet, tracker)
    out = "".join(symbol * marked.get(kind, 0) for kind, symbol in reversed(tracker.marks))
    return "[" + out + "." * max(0, size - len(out)) + "]"


def undamaged(template: CharacterTemplate, sheet: dict[str, Any], tracker: TrackerSpec) -> int:
    return tracker_high(template, sheet, tracker) - sum(marks(template, sheet, tracker).values())


def damage(
    template: CharacterTemplate, sheet: dict[str, Any], tracker: TrackerSpec, n: int, kind: str
) -> str | None:
    """Mark ``n`` boxes of ``kind``. Into a full track, each point turns the least severe box
    one step worse; a note when a track of the worst kind can take no more."""
    marked = marks(template, sheet, tracker)
    size = tracker_high(template, sheet, tracker)
    order = [k for k, _ in tracker.marks]
    note = None
    for _ in range(n):
        if sum(marked.values()) < size:
            marked[kind] = marked.get(kind, 0) + 1
            continue
        lesser = [k for k in order[:-1] if marked.get(k)]
        if not lesser:
            note = f"{tracker.name} is full of {order[-1]} damage: it can take no more"
            break
        worse = order[order.index(lesser[0]) + 1]
        marked[lesser[0]] -= 1
        marked[worse] = marked.get(worse, 0) + 1
    sheet["trackers"].setdefault(tracker.name, {})["marks"] = {k: v for k, v in marked.items() if v}
    return note


def heal(
    template: CharacterTemplate,
    sheet: dict[str, Any],
    tracker: TrackerSpec,
    n: int,
    kind: str | None,
) -> None:
    """Clear ``n`` boxes of ``kind`` (default: the least severe first)."""
    marked = marks(template, sheet, tracker)
    kinds = [kind] if kind else [k for k, _ in tracker.marks]
    left = n
    for k in kinds:
        take = min(left, marked.get(k, 0))
        if take:
            marked[k] -= take
            left -= take
    if left == n and n:
        what = f"{kind} damage" if kind else "damage"
        raise UsageError(f"{sheet['name']}'s {tracker.name} has no {what} to heal")
    sheet["trackers"].setdefault(tracker.name, {})["marks"] = {k: v for k, v in marked.items() if v}


def wound_penalty(template: CharacterTemplate, sheet: dict[str, Any]) -> tuple[str, int | None]:
    """The Health level and its dice penalty (``None``: no action), ``("", 0)`` without a
    chart."""
    health = template.health
    if health is None or not health.levels:
        return "", 0
    tracker = template.tracker(health.tracker)
    if tracker is None:
        return "", 0
    state = sheet["trackers"].get(tracker.name)
    # an unmarked track (the usual case) needs no count
    count = sum(marks(template, sheet, tracker).values()) if state and state.get("marks") else 0
    name, penalty = health.levels[min(count, len(health.levels) - 1)]
    return name, penalty


def tracker_text(
    template: CharacterTemplate,
    sheet: dict[str, Any],
    tracker: TrackerSpec,
    variant: Variant[Any, Any] | None = None,
    settings: RoomSettings | None = None,
) -> str:
    if tracker.kind == "boxes":
        text = boxes_text(template, sheet, tracker)
        health = template.health
        if health is not None and health.levels and health.tracker == tracker.name:
            name, penalty = wound_penalty(template, sheet)
            text += f" {name}" + (f" ({penalty:+d})" if penalty else "")
        return text
    current = value(template, sheet, tracker)
    if tracker.kind == "points":
        return f"{current}/{tracker_high(template, sheet, tracker)}"
    rule = template.degeneration
    if rule is not None and tracker.name == rule.stains:
        overlap = " overlapping Humanity" if degenerating(template, sheet) else ""
        return f"{current}/{stain_room(template, sheet)}{overlap}"
    if tracker.high_rule:
        return f"{current}/{tracker_high(template, sheet, tracker, variant, settings)}"
    return str(current)


# --- Humanity and Stains (v5) ---------------------------------------------------------------


def _stain_trackers(
    template: CharacterTemplate, sheet: dict[str, Any]
) -> tuple[TrackerSpec, TrackerSpec] | None:
    rule = template.degeneration
    if rule is None:
        return None
    kind = sheet.get("kind", "")
    humanity = template.tracker_for(kind, rule.humanity)
    stains = template.tracker_for(kind, rule.stains)
    return (humanity, stains) if humanity is not None and stains is not None else None


def stain_room(template: CharacterTemplate, sheet: dict[str, Any]) -> int:
    """The boxes of the Humanity track Humanity leaves for Stains."""
    found = _stain_trackers(template, sheet)
    if found is None or template.degeneration is None:
        return 0
    return max(0, template.degeneration.boxes - value(template, sheet, found[0]))


def degenerating(template: CharacterTemplate, sheet: dict[str, Any]) -> bool:
    """Stains overflowed into Humanity's boxes and have not been cleared since (impaired)."""
    rule = template.degeneration
    return rule is not None and bool(sheet["trackers"].get(rule.stains, {}).get("overlap"))


def set_stains(template: CharacterTemplate, sheet: dict[str, Any], new: int) -> str | None:
    """Stains set to ``new``: what finds no empty box beside Humanity marks the overflow damage
    (one box each) instead and the character degenerates (impaired until the Stains are cleared);
    a note saying so, else ``None``."""
    rule = template.degeneration
    found = _stain_trackers(template, sheet)
    assert rule is not None and found is not None
    stains = found[1]
    old = value(template, sheet, stains)
    room = stain_room(template, sheet)
    state = sheet["trackers"].setdefault(stains.name, {})
    over = max(0, new - room)
    kept = state.get("overlap") and new >= old
    state["value"] = min(new, room)
    if over or kept:
        state["overlap"] = True
    else:
        state.pop("overlap", None)
    if not over:
        return None
    track_name, kind = rule.overflow
    track = template.tracker_for(sheet.get("kind", ""), track_name)
    stain = "Stain" if over == 1 else "Stains"
    note = (
        f"{over} {stain} past {rule.humanity}'s boxes: impaired (−{rule.impairment} dice) "
        "until the Stains are cleared"
    )
    if track is not None:
        before = tracker_text(template, sheet, track)
        full = damage(template, sheet, track, over, kind)
        after = tracker_text(template, sheet, track)
        note += f"; {track.name} {before} → {after}" + (f" ({full})" if full else "")
    return note


def set_level(
    template: CharacterTemplate, sheet: dict[str, Any], tracker: TrackerSpec, new: int
) -> str:
    """Set a level tracker (in range already), with the Stains rules: Stains past Humanity's
    boxes degenerate (:func:`set_stains`), a change of Humanity clears the Stains. Returns what
    follows the ``Humanity 7 → 6`` line: `` (note)``, ``; Stains 2/3 → 0/4`` or ``""``."""
    rule = template.degeneration
    if rule is not None and tracker.name == rule.stains and _stain_trackers(template, sheet):
        note = set_stains(template, sheet, new)
        return f" ({note})" if note else ""
    old = value(template, sheet, tracker)
    found = _stain_trackers(template, sheet)
    stains_before = tracker_text(template, sheet, found[1]) if found else ""
    set_value(sheet, tracker, new)
    if rule is not None and tracker.name == rule.humanity and new != old:
        # a change of Humanity starts its track clean (docs/rules/v5.md, reading chosen)
        cleared = clear_stains(template, sheet, stains_before)
        return f"; {cleared}" if cleared else ""
    return ""


def clear_stains(
    template: CharacterTemplate, sheet: dict[str, Any], before: str = ""
) -> str | None:
    """Stains back to 0 (Humanity changed, or a remorse roll): ``Stains 2/3 → 0/3``, or ``None``
    when there were none. ``before``: the Stains as shown before Humanity changed."""
    found = _stain_trackers(template, sheet)
    if found is None:
        return None
    stains = found[1]
    if not value(template, sheet, stains) and not degenerating(template, sheet):
        return None
    before = before or tracker_text(template, sheet, stains)
    sheet["trackers"][stains.name] = {"value": 0}
    return f"{stains.name} {before} → {tracker_text(template, sheet, stains)}"


def trackers_of(template: CharacterTemplate, sheet: dict[str, Any]) -> list[TrackerSpec]:
    kind = sheet.get("kind", "")
    return [t for t in template.trackers if template.tracker_for(kind, t.name) is not None]


# --- the readable sheet ----------------------------------------------------------------------


def render(
    template: CharacterTemplate,
    sheet: dict[str, Any],
    *,
    full: bool = False,
    variant: Variant[Any, Any] | None = None,
    settings: RoomSettings | None = None,
) -> list[Node]:
    """The sheet as neutral elements: a title line, one line per group with its rated Traits,
    the trackers, the macros."""
    kind = f" — {sheet['kind']}" if sheet.get("kind") else ""
    body: list[Node] = [bold(sheet["name"]), Text(f"{kind} ({sheet['owner_name']}, ")]
    body += [Text(f"{template.variant})")]
    custom_by_group: dict[str, list[str]] = {}
    for name, group_name in sheet["custom"].items():
        custom_by_group.setdefault(group_name, []).append(name)
    for group in template.groups:
        names = [t.name for t in group.traits] + sorted(custom_by_group.get(group.name, []))
        shown = []
        for name in names:
            dots = rating(template, sheet, name)
            if dots or group.always_shown or full:
                specs = sheet["specialties"].get(name)
                extra = f" ({', '.join(specs)})" if specs else ""
                shown.append(f"{name} {dots}{extra}")
        if shown:
            body += [BR, bold(group.name), Text("  " + " · ".join(shown))]
    lines = [
        f"{t.name} {tracker_text(template, sheet, t, variant, settings)}"
        for t in trackers_of(template, sheet)
    ]
    if lines:
        body += [BR, bold("Trackers"), Text("  " + " · ".join(lines))]
    if sheet["macros"]:
        listed = " · ".join(f"!{name}" for name in sorted(sheet["macros"]))
        body += [BR, bold("Macros"), Text("  " + listed)]
    if template.readings and full:
        body += [BR, italic("Readings: " + " ".join(template.readings))]
    return body
