"""The embedded default graph data: random graphs whose class is a planted motif.

A family in the spirit of the synthetic benchmarks of the GNN-explanation literature (Ying et al.,
GNNExplainer, NeurIPS 2019: motifs attached to random base graphs), built so that **only
structure** separates the classes:

- every graph has n ∼ Uniform{min_nodes … max_nodes} nodes, drawn the same way for every class;
- the class decides which 6-node motif is planted: a 6-cycle, a star K₁,₅, a triangular prism, or
  a wheel W₅ (hub + 5-cycle);
- the rest is a random recursive tree on n − 6 nodes, joined to the motif by two random edges,
  plus ``noise_edges · (n − 6)`` random extra edges with at least one background end, and as many
  more as make the edge count independent of the class (the motifs have 5 to 10 edges): a graph
  of n nodes has the same number of distinct edges whatever its class;
- node features are one-hot degrees (:func:`~hardneg.data.graphs.features.degree_features`), the
  features InfoGraph uses for graphs without attributes: no class information beyond structure;
- nodes are randomly permuted; graph i draws from its own generator seeded by ``(seed, i)``.

Sized like the TU sets of Robinson et al. (ICLR 2021), Fig. 3: hundreds of graphs of 10–50 nodes.
The training pipeline names it ``data.dataset: motifs`` (the graph modality,
:mod:`hardneg.modalities.graphs`).
"""

from __future__ import annotations

import numpy as np
import torch

from hardneg.data.graphs.dataset import GraphDataset
from hardneg.data.graphs.features import degree_features

__all__ = ["MOTIFS", "synthetic_motifs"]

# 6-node motifs, as edge lists on nodes 0..5
MOTIFS: dict[str, list[tuple[int, int]]] = {
    "cycle6": [(i, (i + 1) % 6) for i in range(6)],
    "star6": [(0, i) for i in range(1, 6)],
    "prism": [(0, 1), (1, 2), (2, 0), (3, 4), (4, 5), (5, 3), (0, 3), (1, 4), (2, 5)],
    "wheel5": [(0, i) for i in range(1, 6)] + [(i, i % 5 + 1) for i in range(1, 6)],
}
_MOTIF_NODES = 6
_MAX_MOTIF_EDGES = max(len(e) for e in MOTIFS.values())


def _int(name: str, value: object, low: int, high: int | None = None) -> int:
    if isinstance(value, int | np.integer) and not isinstance(value, bool):
        v = int(value)
        if v >= low and (high is None or v <= high):
            return v
    bound = f"an int in [{low}, {high}]" if high is not None else f"an int >= {low}"
    raise ValueError(f"{name} must be {bound}, got {value!r}")


def _check_room(names: list[str], min_nodes: int, max_nodes: int, noise: float) -> None:
    """Raise when a graph of n nodes has no room for its random extra edges (they would be drawn forever).

    A graph of n nodes (b = n − 6 background nodes) has b(b−1)/2 + 6b − (b−1) − 2 free pairs with a
    background end, and needs round(noise · b) + (10 − motif edges) of them. The room minus the need
    grows with b once b ≥ noise (≤ 10), so the smallest 12 node counts decide.
    """
    pad = max(_MAX_MOTIF_EDGES - len(MOTIFS[k]) for k in names)
    for n in range(min_nodes, min(max_nodes, min_nodes + 12) + 1):
        b = n - _MOTIF_NODES
        room = b * (b - 1) // 2 + _MOTIF_NODES * b - (b - 1) - 2
        need = round(noise * b) + pad
        if need > room:
            raise ValueError(
                f"noise_edges={noise!r} is too large for graphs of {n} nodes (min_nodes={min_nodes}): "
                f"they have room for {room} random extra edges and need {need}; lower noise_edges or raise "
                "min_nodes"
            )


def _one_graph(rng: np.random.Generator, motif: list[tuple[int, int]], n: int, noise: float) -> np.ndarray:
    """Edges (E, 2) of one graph: motif on nodes 0..5, background on 6..n−1, then permuted."""
    m = _MOTIF_NODES
    edges = [(a, b) for a, b in motif]
    bg = list(range(m, n))
    for k in range(1, len(bg)):  # random recursive tree
        edges.append((bg[k], bg[int(rng.integers(0, k))]))
    extra = round(noise * len(bg)) + (_MAX_MOTIF_EDGES - len(motif))
    seen = {(min(a, b), max(a, b)) for a, b in edges}

    def add(a: int, b: int) -> bool:
        key = (min(a, b), max(a, b))
        if a == b or key in seen:
            return False
        seen.add(key)
        edges.append(key)
        return True

    joined = 0
    while joined < 2:  # join the motif to the background by two distinct edges
        joined += add(int(rng.integers(0, m)), int(rng.choice(bg)))
    added = 0
    while added < extra:  # distinct random extra edges, each with at least one background end
        a, b = int(rng.choice(bg)), int(rng.integers(0, n))
        added += add(a, b)
    perm = rng.permutation(n)
    e = perm[np.asarray(edges, dtype=np.int64)]
    return e


def synthetic_motifs(
    *,
    num_graphs: int = 600,
    num_classes: int = 3,
    min_nodes: int = 10,
    max_nodes: int = 50,
    noise_edges: float = 0.3,
    seed: int = 0,
) -> GraphDataset:
    """``num_graphs`` balanced graphs of ``num_classes`` motif classes (see the module docstring).

    Args:
        num_graphs: number of graphs (≥ 2 per class).
        num_classes: 2 to 4 (the first ``num_classes`` of :data:`MOTIFS`).
        min_nodes, max_nodes: node-count range, ``8 ≤ min_nodes ≤ max_nodes``.
        noise_edges: random extra background edges per background node, in [0, 10] (an error
            when a graph of ``min_nodes`` nodes has no room for them).
        seed: the same seed gives the same graphs, bit for bit.

    Example:
        >>> data = synthetic_motifs(num_graphs=40, seed=1)
        >>> len(data), data.num_classes, data.graphs[0].x.shape[1] == data.num_features
        (40, 3, True)
    """
    from torch_geometric.data import Data
    from torch_geometric.utils import to_undirected

    num_classes = _int("num_classes", num_classes, 2, len(MOTIFS))
    num_graphs = _int("num_graphs", num_graphs, 2 * num_classes)
    min_nodes = _int("min_nodes", min_nodes, _MOTIF_NODES + 2)
    max_nodes = _int("max_nodes", max_nodes, min_nodes)
    seed = _int("seed", seed, 0)
    number = isinstance(noise_edges, int | float) and not isinstance(noise_edges, bool)
    if not number or not 0 <= noise_edges <= 10:
        raise ValueError(f"noise_edges must be a number in [0, 10], got {noise_edges!r}")
    names = list(MOTIFS)[:num_classes]
    _check_room(names, min_nodes, max_nodes, float(noise_edges))
    order = np.random.default_rng([seed, 0x6A]).permutation(num_graphs)
    labels = (order % num_classes).astype(np.int64)
    graphs = []
    for i in range(num_graphs):
        rng = np.random.default_rng([seed, i])
        n = int(rng.integers(min_nodes, max_nodes + 1))
        e = torch.from_numpy(_one_graph(rng, MOTIFS[names[labels[i]]], n, float(noise_edges)).T.copy())
        graphs.append(Data(edge_index=to_undirected(e, num_nodes=n), num_nodes=n,
                           y=torch.tensor([int(labels[i])])))
    for g, x in zip(graphs, degree_features(graphs)):
        g.x = x
    return GraphDataset(
        graphs=graphs,
        labels=labels,
        class_names=tuple(names),
        num_features=int(graphs[0].x.shape[1]),
        name=f"synthetic_motifs(C={num_classes}, seed={seed})",
    )
