"""The embedded synthetic motif family: deterministic, balanced, and separable only by structure."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hardneg.data.graphs.features import degree_features
from hardneg.data.graphs.synthetic import MOTIFS, synthetic_motifs

PINNED_LABELS = [2, 1, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0]
# sha256 of the edge_index bytes of synthetic_motifs(num_graphs=12, seed=0)
PINNED_DIGEST = "ad1a10cf02564f25"


@pytest.fixture(scope="module")
def data():
    return synthetic_motifs(num_graphs=300, seed=0)


def _edges(g) -> set[tuple[int, int]]:
    return {(int(a), int(b)) for a, b in g.edge_index.T.tolist()}


def test_same_seed_same_bits_other_seed_other_graphs(data) -> None:
    again = synthetic_motifs(num_graphs=300, seed=0)
    assert all(torch.equal(a.edge_index, b.edge_index) and torch.equal(a.x, b.x)
               for a, b in zip(data.graphs, again.graphs))
    assert np.array_equal(data.labels, again.labels)
    other = synthetic_motifs(num_graphs=300, seed=1)
    assert any(not torch.equal(a.edge_index, b.edge_index) for a, b in zip(data.graphs, other.graphs))


def test_the_bits_are_pinned() -> None:
    """The same graphs on every run and machine (a change of generator or of numpy's streams shows here)."""
    import hashlib

    small = synthetic_motifs(num_graphs=12, seed=0)
    digest = hashlib.sha256()
    for g in small.graphs:
        digest.update(g.edge_index.numpy().tobytes())
    assert small.labels.tolist() == PINNED_LABELS
    assert digest.hexdigest()[:16] == PINNED_DIGEST


def test_the_densest_feasible_setting_finishes() -> None:
    """9 nodes, noise 4: the 17 free pairs with a background end are all used (10 + 3 + 1 + 12 = 26 edges)."""
    data = synthetic_motifs(num_graphs=8, num_classes=4, min_nodes=9, max_nodes=9, noise_edges=4)
    assert {g.edge_index.shape[1] for g in data.graphs} == {2 * 26}
    with pytest.raises(ValueError, match=r"noise_edges=4\.2 is too large for graphs of 9 nodes"):
        synthetic_motifs(num_graphs=8, num_classes=4, min_nodes=9, max_nodes=9, noise_edges=4.2)


def test_balanced_sizes_and_valid_graphs(data) -> None:
    assert np.bincount(data.labels).tolist() == [100, 100, 100]
    assert data.class_names == tuple(MOTIFS)[:3] and data.num_classes == 3
    for g, y in zip(data.graphs, data.labels):
        n = g.num_nodes
        assert 10 <= n <= 50 and int(g.y) == y
        assert g.x.shape == (n, data.num_features) and torch.isfinite(g.x).all()
        e = _edges(g)
        assert all((b, a) in e for a, b in e) and all(a != b for a, b in e)  # undirected, no loops
        # connected: a breadth-first search reaches every node
        adj: dict[int, list[int]] = {}
        for a, b in e:
            adj.setdefault(a, []).append(b)
        seen, todo = {0}, [0]
        while todo:
            for v in adj.get(todo.pop(), []):
                if v not in seen:
                    seen.add(v)
                    todo.append(v)
        assert len(seen) == n


def test_edge_count_is_a_function_of_the_node_count_only(data) -> None:
    per_n: dict[int, set[int]] = {}
    for g in data.graphs:
        per_n.setdefault(g.num_nodes, set()).add(g.edge_index.shape[1])
    assert all(len(counts) == 1 for counts in per_n.values())


def test_the_planted_motif_is_there() -> None:
    # star6 has a node of degree >= 5; the prism and wheel classes have triangles, the 6-cycle class
    # needs none: check the class-defining property of the star and the wheel through degrees/triangles
    data = synthetic_motifs(num_graphs=40, num_classes=4, seed=2)
    for g, y in zip(data.graphs, data.labels):
        n = g.num_nodes
        a = torch.zeros(n, n)
        a[g.edge_index[0], g.edge_index[1]] = 1
        if data.class_names[y] in ("star6", "wheel5"):
            assert int(a.sum(1).max()) >= 5
        if data.class_names[y] in ("prism", "wheel5"):
            assert float(torch.diagonal(a @ a @ a).sum()) > 0


def _structure(g, max_degree: int) -> np.ndarray:
    """Degree histogram (0..max_degree) + triangle count, nodes on a triangle, most triangles at a node."""
    n = g.num_nodes
    a = torch.zeros(n, n, dtype=torch.float64)
    a[g.edge_index[0], g.edge_index[1]] = 1
    hist = np.bincount(a.sum(1).long().numpy(), minlength=max_degree + 1)
    tri = (torch.diagonal(a @ a @ a) / 2).numpy()
    return np.concatenate([hist, [tri.sum() / 3, (tri > 0).sum(), tri.max()]])


def _cv_accuracy(features: np.ndarray, labels: np.ndarray) -> float:
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
    cv = StratifiedKFold(5, shuffle=True, random_state=0)
    return float(cross_val_score(model, features, labels, cv=cv).mean())


def test_counts_carry_no_class_signal_structure_does(data) -> None:
    """Node and edge counts alone classify at chance (measured 0.30 for 3 classes, chance 1/3); degree
    histograms + triangle counts, a simple structural baseline, do much better (measured 0.68)."""
    counts = np.array([[g.num_nodes, g.edge_index.shape[1]] for g in data.graphs], dtype=float)
    by_nodes = _cv_accuracy(counts[:, :1], data.labels)
    by_counts = _cv_accuracy(counts, data.labels)
    structure = np.array([_structure(g, data.num_features - 1) for g in data.graphs])
    by_structure = _cv_accuracy(structure, data.labels)
    assert max(by_nodes, by_counts) < 1 / 3 + 0.1
    assert by_structure > 0.6 and by_structure > by_counts + 0.25


def test_degree_features_one_hot_and_standardised() -> None:
    from torch_geometric.data import Data

    path = Data(edge_index=torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]]), num_nodes=3)
    lone = Data(edge_index=torch.zeros(2, 0, dtype=torch.long), num_nodes=2)  # isolated nodes
    x_path, x_lone = degree_features([path, lone])
    assert x_path.tolist() == [[0, 1, 0], [0, 0, 1], [0, 1, 0]] and x_lone.tolist() == [[1, 0, 0]] * 2
    with pytest.raises(ValueError, match="max_degree=1 is below the largest node degree 2"):
        degree_features([path], max_degree=1)
    hub = Data(edge_index=torch.stack([torch.zeros(1000, dtype=torch.long), torch.arange(1, 1001)]),
               num_nodes=1001)
    hub.edge_index = torch.cat([hub.edge_index, hub.edge_index.flip(0)], dim=1)
    (x,) = degree_features([hub])
    assert x.shape == (1001, 1) and abs(float(x.mean())) < 1e-6


@pytest.mark.parametrize(("kw", "match"), [
    ({"num_classes": 5}, r"num_classes must be an int in \[2, 4\], got 5"),
    ({"num_graphs": 3}, r"num_graphs must be an int >= 6, got 3"),
    ({"min_nodes": 7}, r"min_nodes must be an int >= 8, got 7"),
    ({"min_nodes": 20, "max_nodes": 12}, r"max_nodes must be an int >= 20, got 12"),
    ({"noise_edges": -0.5}, r"noise_edges must be a number in \[0, 10\]"),
    ({"seed": -1}, r"seed must be an int >= 0"),
    ({"seed": 1.0}, r"seed must be an int >= 0, got 1.0"),
    ({"num_graphs": True}, r"num_graphs must be an int >= 6, got True"),
    ({"noise_edges": float("nan")}, r"noise_edges must be a number in \[0, 10\], got nan"),
    ({"min_nodes": 8, "max_nodes": 8, "noise_edges": 10}, r"noise_edges=10.0 is too large for graphs of 8 "
     r"nodes \(min_nodes=8\): they have room for 10 random extra edges and need 25; lower noise_edges"),
])
def test_bad_parameters_are_named(kw: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        synthetic_motifs(**kw)
