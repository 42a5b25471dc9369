"""Deprecated import path: ``coterie.sqlstore`` moved to :mod:`coterie.storage.sql` and
:mod:`coterie.storage.migrate` when the core was split into subpackages (docs/architecture.md).

Everything is re-exported here, so a plugin written against the old path keeps working; importing
this module warns (``DeprecationWarning``). The old path will be removed in a later release: import
from the new one."""

import warnings as _warnings

import coterie.storage.migrate as _1
import coterie.storage.sql as _0
from coterie.storage.migrate import *  # noqa: F403
from coterie.storage.sql import *  # noqa: F403

_warnings.warn(
    "coterie.sqlstore is deprecated: import from coterie.storage.sql and coterie.storage.migrate",
    DeprecationWarning,
    stacklevel=2,
)


def __getattr__(name: str) -> object:
    """Names the star import leaves out (private ones) come from the new module too."""
    for module in (_0, _1):
        if hasattr(module, name):
            return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
