"""Deprecated: the 0.2 import path of :mod:`hardneg.infograph` (InfoGraph's local–global losses).

``graphs`` names the graph modality (``hardneg train graphs``, :mod:`hardneg.modalities.graphs`);
the losses are :mod:`hardneg.infograph`. ``hardneg.graphs.X`` still returns ``hardneg.infograph.X``,
with one ``DeprecationWarning`` per access; the old path goes in 0.4.
"""

from __future__ import annotations

from typing import Any

_MOVED = frozenset({"InfoGraphLoss", "RELEASED_SWITCHES", "local_global_detailed", "local_global_mask",
                    "local_global_pairs", "released_local_global_loss"})


def __getattr__(name: str) -> Any:
    """``hardneg.infograph.<name>``, after a ``DeprecationWarning`` naming the new path."""
    if name in _MOVED:
        import warnings

        import hardneg.infograph

        warnings.warn(f"hardneg.graphs is now hardneg.infograph; the old path goes in 0.4 "
                      f"(import {name} from hardneg.infograph)", DeprecationWarning, stacklevel=2)
        return getattr(hardneg.infograph, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
