"""Roll ids: 65 random bits from :mod:`secrets`, unique in practice, shown short in chat (a roll's
footer, ``!log`` lines); ``!log ID`` finds a roll by the shown part and tells apart rolls that
share it. Also used for incidents and sessions. (Importable from :mod:`coterie.framework.commands`
too, where they were first.)"""

from __future__ import annotations

import secrets

#: the 32 symbols of a roll id, one per 5 random bits (no 0, 1, l or o to misread)
ID_ALPHABET = "abcdefghijkmnpqrstuvwxyz23456789"
#: symbols of a roll id: 13 x 5 = 65 random bits, so ids do not repeat in practice (among a
#: billion rolls, the odds that any two share an id are about 1 in 70,000)
ROLL_ID_LENGTH = 13
#: the symbols of a roll id shown in chat (footers, ``!log`` lines); ``!log ID`` finds a roll
#: by them and lists every roll that shares them, each with its whole id
SHOWN_ID_LENGTH = 6
#: each byte to the symbol of its low 5 bits (256 = 8 x 32: every symbol equally likely)
_BYTE_TO_SYMBOL = bytes(ord(ID_ALPHABET[byte % 32]) for byte in range(256))


def new_roll_id() -> str:
    """A random id for a roll (or an incident, a session), e.g. ``k3f9qzab7mxq2``: 65 bits
    from :mod:`secrets` (see :data:`ROLL_ID_LENGTH`); chat shows its first
    :data:`SHOWN_ID_LENGTH` symbols (:func:`shown_id`). One random byte per symbol, of which
    its low 5 bits pick the symbol (a translation table: ~0.5 µs where base32-encoding the 65
    bits took ~3 µs, on every roll)."""
    drawn = secrets.token_bytes(ROLL_ID_LENGTH).translate(_BYTE_TO_SYMBOL)
    return drawn.decode("ascii")


def shown_id(roll_id: str) -> str:
    """A roll id as chat shows it: its first :data:`SHOWN_ID_LENGTH` symbols, and the number
    of the roll within its message if any (``k3f9qz``, ``k3f9qz-2``)."""
    base, dash, number = roll_id.partition("-")
    return base[:SHOWN_ID_LENGTH] + dash + number
