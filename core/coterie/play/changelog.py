"""Tracker changes in the roll log (#20): every move of a character's tracker (Hunger, Willpower,
Health, Blood Pool, Rage, Stains …) — by hand (``!hunger +1``, ``!damage 2``, ``!npc wp Guard
-1``), by play (a failed rouse check, a Willpower re-roll, ``wp`` spent) or by ``!undo`` — is
one entry of the room's roll log, written in the command's own transaction beside the change.

An entry is a :class:`~coterie.storage.state.RollRecord` of kind ``"tracker"`` (no new table, no
new column): ``faces`` is empty, ``outcome`` is ``"tracker"``, and ``detail`` says what moved:

* ``kind``: ``"tracker"``; ``character``, ``owner`` (the player's id, ``~npcs`` for an NPC),
  ``npc``; ``tracker`` (its name), ``old`` and ``new`` (as the sheet shows them: ``2``,
  ``3/5``, ``[//...] Hurt (-1)``), ``change`` (``Hunger 2 → 3``, the reply's line);
* ``reason``: why, when play moved it (``failed rouse check``), else ``None``; ``roll``: the id
  of the roll that moved it, if any; ``undo``: ``True`` when ``!undo`` moved it back;
* ``scene`` (the scene being played, if any), and ``secret`` when the room must not see it: a
  hidden NPC's change (``!npc secret on``, the default), hidden from players' ``!log`` for
  good, or one a secret NPC roll made, hidden with that roll until it is revealed. (A player's
  sheet is no secret: what their own secret roll moves shows, as the reply shows it.)

Everything that counts rolls (``!stats``, expected successes, outcome tallies) skips these
entries (:attr:`~coterie.storage.state.RollRecord.is_roll`); ``!log`` and ``coterie export`` show
them in time order among the rolls.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from coterie.framework.characters import CharacterTemplate
from coterie.framework.commands import CommandContext, new_roll_id, shorten_request
from coterie.play import sheets
from coterie.storage.state import TRACKER, RollRecord

#: the pseudo-player whose characters are the chronicle's NPCs (no platform id looks like it)
NPC_OWNER = "~npcs"


#: the entries a roll being settled made, with the store (the command's transaction) they go to:
#: logged by :func:`flush_after_roll` once the roll itself is (``coterie_after_roll``)
_held: ContextVar[list[tuple[Any, RollRecord]] | None] = ContextVar(
    "coterie_tracker_entries_held", default=None
)


def held_entries() -> bool:
    """Whether the roll being made left tracker entries for :func:`flush_after_roll`."""
    return bool(_held.get())


async def flush_after_roll() -> None:
    """Log the tracker entries the roll just logged made (none: nothing to do)."""
    held = _held.get()
    if held:
        # emptied in place: the hook may run in a copy of the command's context (a task)
        entries = list(held)
        held.clear()
        for store, record in entries:
            await store.log_roll(record)


def tracker_moves(
    ctx: CommandContext,
    template: CharacterTemplate,
    before: dict[str, Any],
    after: dict[str, Any],
) -> list[tuple[str, str, str]]:
    """The trackers whose kept state differs between two versions of a sheet, as (name, old,
    new) texts; a change the sheet does not show (an empty record made) is none."""
    moves: list[tuple[str, str, str]] = []
    old_state = before.get("trackers", {})
    new_state = after.get("trackers", {})
    for tracker in template.trackers:
        if old_state.get(tracker.name) == new_state.get(tracker.name):
            continue
        old = sheets.tracker_text(template, before, tracker, ctx.variant, ctx.settings)
        new = sheets.tracker_text(template, after, tracker, ctx.variant, ctx.settings)
        if old != new:
            moves.append((tracker.name, old, new))
    return moves


async def log_moves(
    ctx: CommandContext,
    template: CharacterTemplate,
    owner: str,
    before: dict[str, Any],
    after: dict[str, Any],
    *,
    reason: str | None = None,
    secret: bool = False,
    undo: bool = False,
    after_roll: bool = False,
) -> int:
    """Log each tracker that moved from ``before`` to ``after`` (one sheet, owned by ``owner``)
    as a tracker entry of the room's roll log, in the command's transaction; how many.
    ``after_roll``: a roll being settled moved them (``coterie_roll_settled``): they are held
    until that roll is logged, then logged after it (:func:`flush_after_roll`)."""
    moves = tracker_moves(ctx, template, before, after)
    name = str(after.get("name") or before.get("name") or "")
    npc = owner == NPC_OWNER
    roll = ctx.roll_id
    if roll is not None and after_roll and ctx.rolls:
        roll = f"{roll}-{ctx.rolls + 1}"  # the id the roll being settled is about to be logged by
    for tracker, old, new in moves:
        detail: dict[str, Any] = {
            "kind": TRACKER,
            "character": name,
            "owner": owner,
            "npc": npc,
            "tracker": tracker,
            "old": old,
            "new": new,
            "change": f"{tracker} {old} → {new}",
            "reason": reason,
            "roll": roll,
            "undo": undo,
        }
        if secret:
            detail["secret"] = True
        if ctx.scene is not None:
            detail["scene"] = ctx.scene
        record = RollRecord(
            id=new_roll_id(),
            room=ctx.message.room_key,
            user=ctx.message.user,
            display_name=ctx.message.display_name,
            variant=ctx.variant.name,
            request=shorten_request(ctx.message.text),
            faces=[],
            outcome=TRACKER,
            successes=0,
            botch=False,
            expected=None,
            session=ctx.session,
            detail=detail,
        )
        if after_roll:  # a roll moved it: logged right after that roll (flush_after_roll)
            held = _held.get()
            if held is None:  # (in the command's own context: hooks awaited in it see it)
                held = []
                _held.set(held)
            held.append((ctx.store, record))
        else:
            await ctx.store.log_roll(record)
    return len(moves)


async def last_roll(ctx: CommandContext) -> RollRecord | None:
    """The caller's latest roll of dice in the room (tracker changes skipped), as logged."""
    for record in await ctx.app.state.rolls(ctx.message.room_key, limit=10, user=ctx.message.user):
        if record.is_roll:
            return record
    return None


def npc_rolled(record: RollRecord) -> str | None:
    """The NPC a logged ``!npc roll NAME …`` was rolled for (its name as written), else
    ``None``."""
    words = record.request.split()
    if len(words) >= 3 and words[0].lstrip("!/.").lower() == "npc" and words[1] == "roll":
        return words[2]
    return None


def change_line(record: RollRecord) -> str:
    """A tracker entry as ``!log`` and the export show it: ``Alex: Hunger 2 → 3 (failed rouse
    check)``; ``(undone)`` when ``!undo`` moved it back."""
    detail = record.detail
    why = detail.get("reason")
    if detail.get("undo"):
        why = "undone"
    tail = f" ({why})" if why else ""
    return f"{detail.get('character', '?')}: {detail.get('change', '?')}{tail}"
