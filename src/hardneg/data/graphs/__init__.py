"""Graph data: the TU format, MoleculeACE molecules, embedded synthetic motif families.

Needs ``torch_geometric`` (imported on first use, so ``import hardneg.data.graphs`` stays cheap).
"""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    "GraphDataset": "dataset",
    "degree_features": "features",
    "read_moleculeace": "molecules",
    "read_tu": "tu",
    "synthetic_motifs": "synthetic",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        value = getattr(importlib.import_module(f"hardneg.data.graphs.{_WHERE[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'hardneg.data.graphs' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
