"""Deprecated import path: ``coterie.state`` moved to :mod:`coterie.storage.state`
when the core was split into subpackages (docs/architecture.md).

Everything is re-exported here, so a plugin written against the old path keeps working; importing
this module warns (``DeprecationWarning``). The old path will be removed in a later release: import
from the new one."""

import warnings as _warnings

import coterie.storage.state as _0
from coterie.storage.ambient import AmbientStore as AmbientStore  # (in state.py then)
from coterie.storage.state import *  # noqa: F403

_warnings.warn(
    "coterie.state is deprecated: import from coterie.storage.state",
    DeprecationWarning,
    stacklevel=2,
)


def __getattr__(name: str) -> object:
    """Names the star import leaves out (private ones) come from the new module too."""
    for module in (_0,):
        if hasattr(module, name):
            return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
