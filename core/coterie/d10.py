"""Deprecated import path: ``coterie.d10`` moved to :mod:`coterie.dice.d10`
when the core was split into subpackages (docs/architecture.md).

Everything is re-exported here, so a plugin written against the old path keeps working; importing
this module warns (``DeprecationWarning``). The old path will be removed in a later release: import
from the new one."""

import warnings as _warnings

import coterie.dice.d10 as _0
from coterie.dice.d10 import *  # noqa: F403

_warnings.warn(
    "coterie.d10 is deprecated: import from coterie.dice.d10",
    DeprecationWarning,
    stacklevel=2,
)


def __getattr__(name: str) -> object:
    """Names the star import leaves out (private ones) come from the new module too."""
    for module in (_0,):
        if hasattr(module, name):
            return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
