"""The marker plugins use for their hook implementations (also exported as ``coterie.hookimpl``)."""

import pluggy

hookimpl = pluggy.HookimplMarker("coterie")
