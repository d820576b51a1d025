"""Graph data: the TU format, MoleculeACE molecules, embedded synthetic motif families.

Needs ``torch_geometric`` (imported on first use, so ``import hardneg.data.graphs`` stays cheap).
"""

from __future__ import annotations

from hardneg._lazy import lazy_names

_WHERE = {
    "GraphDataset": ".dataset",
    "degree_features": ".features",
    "read_moleculeace": ".molecules",
    "read_tu": ".tu",
    "synthetic_motifs": ".synthetic",
}

__all__ = sorted(_WHERE)


__getattr__, __dir__ = lazy_names(globals(), _WHERE)
