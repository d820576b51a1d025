"""Graphs: InfoGraph (Sun et al., ICLR 2020) with a controllable negative distribution.

Hard, debiased and optimal-transport negatives for graph-level representations as in Robinson
et al. (ICLR 2021), §5.2 and App. B: local (node) vs global (graph) scores of a batch of graphs,
a GIN encoder (Xu et al., ICLR 2019), readers of the TU format, embedded synthetic graph
families, and real molecules. Needs ``torch_geometric`` (the ``toolkit`` extra). Names are
imported on first use, so ``hardneg --help`` does not load PyG.
"""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    "InfoGraphLoss": "hardneg.graphs.objective",
    "RELEASED_SWITCHES": "hardneg.graphs.released",
    "local_global_detailed": "hardneg.graphs.objective",
    "local_global_mask": "hardneg.graphs.objective",
    "released_local_global_loss": "hardneg.graphs.released",
    "embed_graphs": "hardneg.graphs.train",
    "parse_method": "hardneg.graphs.methods",
    "run_graph_compare": "hardneg.graphs.experiment",
    "train_infograph": "hardneg.graphs.train",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        value = getattr(importlib.import_module(_WHERE[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'hardneg.graphs' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
