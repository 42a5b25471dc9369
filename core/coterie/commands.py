"""Deprecated import path: ``coterie.commands`` moved to :mod:`coterie.framework.commands`
when the core was split into subpackages (docs/architecture.md).

Everything is re-exported here, so a plugin written against the old path keeps working; importing
this module warns (``DeprecationWarning``). The old path will be removed in a later release: import
from the new one."""

import warnings as _warnings

import coterie.framework.commands as _0
from coterie.framework.commands import *  # noqa: F403

_warnings.warn(
    "coterie.commands is deprecated: import from coterie.framework.commands",
    DeprecationWarning,
    stacklevel=2,
)


def __getattr__(name: str) -> object:
    """Names the star import leaves out (private ones) come from the new module too."""
    for module in (_0,):
        if hasattr(module, name):
            return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
