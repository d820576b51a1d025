"""A labelled set of graphs: PyG ``Data`` objects with class labels remapped to 0..C−1."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["GraphDataset"]


@dataclass(frozen=True)
class GraphDataset:
    """Graphs for graph-level classification (Morris et al., 2020, TUDataset conventions).

    Fields:
        graphs: ``torch_geometric.data.Data`` per graph: ``x`` float32 (n_i, F), ``edge_index``
            int64 (2, E_i), 0-based within the graph, ``y`` int64 (1,) = ``labels[i]``.
        labels: int64 (N,) class indices in 0..C−1.
        class_names: the original label of each class index (as strings).
        num_features: F, the node feature dimension.
        name: a short name for tables and figures.
    """

    graphs: list[Any]
    labels: np.ndarray
    class_names: tuple[str, ...]
    num_features: int
    name: str

    def __post_init__(self) -> None:
        if len(self.graphs) != len(self.labels):
            raise ValueError(
                f"graphs and labels must have the same length, got {len(self.graphs)} and {len(self.labels)}"
            )

    def __len__(self) -> int:
        return len(self.graphs)

    @property
    def num_classes(self) -> int:
        return len(self.class_names)

    def subset(self, indices: Sequence[int] | np.ndarray) -> GraphDataset:
        """The graphs at ``indices`` (same classes, features and name)."""
        idx = np.asarray(indices, dtype=np.int64)
        return GraphDataset(
            graphs=[self.graphs[int(i)] for i in idx],
            labels=self.labels[idx],
            class_names=self.class_names,
            num_features=self.num_features,
            name=self.name,
        )
