"""Deprecated: the 0.2 path of :mod:`hardneg.infograph.objective`; ``hardneg.graphs.objective.X`` returns
``hardneg.infograph.objective.X`` with one ``DeprecationWarning`` per access, until 0.4."""

from __future__ import annotations

from typing import Any

from hardneg.graphs import redirect


def __getattr__(name: str) -> Any:
    """``hardneg.infograph.objective.<name>``, after a ``DeprecationWarning`` naming the new path."""
    return redirect(__name__, "hardneg.infograph.objective", name)
