"""The Matrix adapter (matrix-nio, end-to-end encryption with vodozemac): see
docs/platforms/matrix.md."""

from __future__ import annotations

from coterie import hookimpl
from coterie.framework.adapter import Adapter
from coterie_matrix.adapter import MatrixAdapter

__all__ = ["MatrixAdapter"]


@hookimpl
def coterie_adapters() -> list[type[Adapter]]:
    return [MatrixAdapter]
