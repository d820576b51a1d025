"""Deprecated: the 0.2 path of :mod:`hardneg.infograph.released`; ``hardneg.graphs.released.X`` returns
``hardneg.infograph.released.X`` with one ``DeprecationWarning`` per access, until 0.4."""

from __future__ import annotations

from typing import Any

from hardneg.graphs import redirect


def __getattr__(name: str) -> Any:
    """``hardneg.infograph.released.<name>``, after a ``DeprecationWarning`` naming the new path."""
    return redirect(__name__, "hardneg.infograph.released", name)
