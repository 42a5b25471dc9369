"""The v5 character session the adapter tests play through each peer (#17): a character with a
Stain rolls ``!remorse``, a roll opposed by a second character's Traits by name, and a macro typed
in lower-case abbreviations, then the sheet. Each adapter test passes its own ``say`` (one command
in, its reply out) and checks the replies in its platform's native format."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

R = TypeVar("R")


async def v5_character_session(say: Callable[[str], Awaitable[R]]) -> dict[str, R]:
    """Play the session in a room already on v5; the replies by name: ``remorse``, ``versus``,
    ``added`` (the macro shown back), ``hunt`` (the macro run) and ``sheet``. Dice drawn, in
    order: 2 for the remorse roll, 5 + 3 for the opposed roll, 3 for the macro."""
    await say("!char new Lise")
    await say("!char set Strength 3 Brawl 2 Wits 2 Streetwise 1")
    await say("!stains 1")
    remorse = await say("!remorse")
    await say("!char new Cid")
    await say("!char set Wits 2 Awareness 1")
    await say("!char use Lise")
    versus = await say("!roll Strength+Brawl vs Cid Wits+Awareness")
    added = await say("!macro add hunt = wits+street 4")
    hunt = await say("!hunt")
    sheet = await say("!sheet")
    return {"remorse": remorse, "versus": versus, "added": added, "hunt": hunt, "sheet": sheet}
