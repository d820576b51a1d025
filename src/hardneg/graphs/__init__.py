"""Deprecated: the 0.2 import path of :mod:`hardneg.infograph` (InfoGraph's local–global losses).

``graphs`` names the graph modality (``hardneg train graphs``, :mod:`hardneg.modalities.graphs`);
the losses are :mod:`hardneg.infograph`. ``hardneg.graphs.X`` still returns ``hardneg.infograph.X``,
and ``hardneg.graphs.objective.X`` / ``hardneg.graphs.released.X`` the names of
:mod:`hardneg.infograph.objective` / :mod:`hardneg.infograph.released`, each with one
``DeprecationWarning`` per access; the old paths go in 0.4.
"""

from __future__ import annotations

import importlib
from typing import Any


def redirect(old: str, new: str, name: str) -> Any:
    """``new.<name>`` for an access to ``old.<name>``, after a ``DeprecationWarning`` naming the new
    path, when ``name`` is one of ``new``'s public names; else the ``AttributeError`` of ``old``."""
    module = importlib.import_module(new)
    if name in getattr(module, "__all__", ()):
        import warnings

        warnings.warn(f"{old} is now {new}; the old path goes in 0.4 (import {name} from {new})",
                      DeprecationWarning, stacklevel=3)
        return getattr(module, name)
    raise AttributeError(f"module {old!r} has no attribute {name!r}")


def __getattr__(name: str) -> Any:
    """``hardneg.infograph.<name>``, after a ``DeprecationWarning`` naming the new path."""
    return redirect(__name__, "hardneg.infograph", name)
