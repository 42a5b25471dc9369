"""Values as JSON text: the one encoder every store writes with (SQLite's and PostgreSQL's
``kv`` values, sheets and roll-log rows, and the memory store's roll log), in C."""

from __future__ import annotations

import json
from typing import Any


def dumps_json(value: Any) -> str:
    """``value`` as compact JSON text; refuses what :func:`~coterie.storage.state.check_json`
    refuses (``allow_nan=False``: NaN and infinities; anything JSON cannot hold)."""
    if _C_ENCODE is not None:
        try:
            return "".join(_C_ENCODE(value, 0))
        except (TypeError, ValueError, RecursionError):
            pass  # the encoder below raises its own, well-worded error
    return _ENCODER.encode(value)


#: one encoder for every value (``json.dumps`` with options builds a new one per call)
_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))
#: the C encoder behind ``_ENCODER``, made once (``JSONEncoder.encode`` makes one per call). It
#: keeps no record of the containers it is inside (a reused record would be left dirty by a
#: failed call), so a circular value ends in RecursionError, and the call above then lets
#: ``_ENCODER`` word the error
_make_encoder: Any = getattr(json.encoder, "c_make_encoder", None)
_C_ENCODE: Any = (
    None
    if _make_encoder is None
    else _make_encoder(
        None, _ENCODER.default, json.encoder.encode_basestring, None, ":", ",", False, False, False
    )
)
