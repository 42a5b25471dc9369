"""Deprecated import path: ``coterie.odds`` moved to :mod:`coterie.dice.odds` and
:mod:`coterie.rulekit.odds` when the core was split into subpackages (docs/architecture.md).

Everything is re-exported here, so a plugin written against the old path keeps working; importing
this module warns (``DeprecationWarning``). The old path will be removed in a later release: import
from the new one."""

import warnings as _warnings

import coterie.dice.odds as _0
import coterie.rulekit.odds as _1
from coterie.dice.odds import *  # noqa: F403
from coterie.rulekit.odds import *  # noqa: F403

_warnings.warn(
    "coterie.odds is deprecated: import from coterie.dice.odds and coterie.rulekit.odds",
    DeprecationWarning,
    stacklevel=2,
)


def __getattr__(name: str) -> object:
    """Names the star import leaves out (private ones) come from the new module too."""
    for module in (
        _0,
        _1,
    ):
        if hasattr(module, name):
            return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
