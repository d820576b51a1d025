"""Reader of the TU graph-classification format, from a local folder only.

The TU collection (Morris et al., "TUDataset: A collection of benchmark datasets for learning with
graphs", ICML 2020 GRL+ workshop) ships each data set NAME as text files, unpacked as
``ROOT/NAME/NAME_<part>.txt``:

- ``NAME_A.txt``: one edge per line, ``i, j`` with 1-based node ids over the whole data set
  (the real files list each undirected edge in both directions; once is accepted too);
- ``NAME_graph_indicator.txt``: line n holds the 1-based graph id of node n, non-decreasing, from
  1 to N without gaps;
- ``NAME_graph_labels.txt``: one integer class label per graph (e.g. −1/1, or 0..C−1, or 1..C);
- optional ``NAME_node_labels.txt`` (one integer per node), ``NAME_node_attributes.txt``
  (comma-separated floats per node) and ``NAME_edge_labels.txt`` (one integer per line of
  ``NAME_A.txt``; read and checked, not used by the encoders here).

Node features follow InfoGraph (Sun et al., ICLR 2020): one-hot node labels (over the values
present in the data set), followed by the node attributes; a data set with neither gets degree
features (:func:`~hardneg.graphs.features.degree_features`). Edges are made undirected and
deduplicated, and self-loops are dropped (as PyG's ``TUDataset``, which InfoGraph and HCL used);
graphs without edges and isolated nodes are valid.
Nothing is ever downloaded: a missing or malformed file is an error naming the file, the line and
the expected layout.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from hardneg.graphs.dataset import GraphDataset
from hardneg.graphs.features import degree_features

__all__ = ["read_tu"]

_LAYOUT = {
    "A": "lines 'i, j' (an edge between 1-based node ids)",
    "graph_indicator": "one 1-based graph id per line, line n for node n",
    "graph_labels": "one integer class label per line, line k for graph k",
    "node_labels": "one integer label per line, line n for node n",
    "node_attributes": "comma-separated floats per line, line n for node n",
    "edge_labels": "one integer label per line, line e for line e of NAME_A.txt",
}


def _path(folder: Path, name: str, part: str) -> Path:
    return folder / f"{name}_{part}.txt"


def _lines(path: Path) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not UTF-8 text ({err.reason} at byte {err.start})") from None
    lines = text.splitlines()
    while lines and not lines[-1].strip():  # a trailing blank line is not a record
        lines.pop()
    return lines


def _parse(path: Path, part: str, *, dtype: type, width: int | None) -> np.ndarray:
    """Rows of comma-separated numbers; errors name the file, the line and the layout."""
    rows = []
    for k, line in enumerate(_lines(path), start=1):
        fields = [f.strip() for f in line.split(",")]
        try:
            values = [dtype(f) for f in fields]
        except ValueError:
            raise ValueError(
                f"{path}, line {k}: cannot read {line.strip()!r}; expected {_LAYOUT[part]}"
            ) from None
        if width is not None and len(values) != width:
            raise ValueError(
                f"{path}, line {k}: {len(values)} value(s) in {line.strip()!r}; expected {_LAYOUT[part]}"
            )
        rows.append(values)
    if rows and width is None and len({len(r) for r in rows}) != 1:
        k = next(i for i, r in enumerate(rows, start=1) if len(r) != len(rows[0]))
        raise ValueError(f"{path}, line {k}: {len(rows[k - 1])} values, line 1 has {len(rows[0])}")
    out = np.asarray(rows, dtype=np.float64 if dtype is float else np.int64)
    return out if rows else out.reshape(0, width or 0)


def _count_check(path: Path, got: int, want: int, what: str) -> None:
    if got != want:
        raise ValueError(f"{path}: {got} lines, expected {want} (one per {what})")


def read_tu(root: str | Path, name: str) -> GraphDataset:
    """Read TU data set ``name`` from ``root/name/name_*.txt`` (see the module docstring).

    Example: ``read_tu("data", "MUTAG")`` reads ``data/MUTAG/MUTAG_A.txt``, … .
    """
    from torch_geometric.data import Data
    from torch_geometric.utils import coalesce, remove_self_loops, to_undirected

    if not isinstance(name, str) or not name or "/" in name:
        raise ValueError(f"name must be a data set name such as 'MUTAG', got {name!r}")
    folder = Path(root) / name
    for part in ("A", "graph_indicator", "graph_labels"):
        p = _path(folder, name, part)
        if not p.is_file():
            raise FileNotFoundError(
                f"{p} not found: a TU data set is read from ROOT/NAME/NAME_A.txt, NAME_graph_indicator.txt, "
                f"NAME_graph_labels.txt (+ optional NAME_node_labels.txt, NAME_node_attributes.txt), as the "
                f"collection's zip files unpack (nothing is downloaded)"
            )
    ind_path = _path(folder, name, "graph_indicator")
    if not _lines(ind_path):
        layout = _LAYOUT["graph_indicator"]
        raise ValueError(f"{ind_path}: empty, the data set has no nodes; expected {layout}")
    indicator = _parse(ind_path, "graph_indicator", dtype=int, width=1)[:, 0]
    n_nodes = int(indicator.size)
    step = np.diff(indicator)
    if indicator[0] != 1 or np.any(step < 0) or np.any(step > 1):
        bad = 1 if indicator[0] != 1 else int(np.flatnonzero((step < 0) | (step > 1))[0]) + 2
        raise ValueError(
            f"{ind_path}, line {bad}: graph id {int(indicator[bad - 1])}; graph ids must start at 1 and "
            "never decrease or skip (nodes of a graph are contiguous)"
        )
    n_graphs = int(indicator[-1])
    lab_path = _path(folder, name, "graph_labels")
    raw_labels = _parse(lab_path, "graph_labels", dtype=int, width=1).reshape(-1)
    _count_check(lab_path, raw_labels.size, n_graphs, f"graph of {ind_path.name}")
    a_path = _path(folder, name, "A")
    edges = _parse(a_path, "A", dtype=int, width=2)
    if edges.size:
        out = (edges < 1) | (edges > n_nodes)
        if out.any():
            k = int(np.flatnonzero(out.any(axis=1))[0])
            raise ValueError(
                f"{a_path}, line {k + 1}: node id {int(edges[k][out[k]][0])} outside 1..{n_nodes} "
                f"(the number of lines of {ind_path.name})"
            )
        cross = indicator[edges[:, 0] - 1] != indicator[edges[:, 1] - 1]
        if cross.any():
            k = int(np.flatnonzero(cross)[0])
            raise ValueError(
                f"{a_path}, line {k + 1}: edge {edges[k][0]}, {edges[k][1]} joins graph "
                f"{indicator[edges[k][0] - 1]} and graph {indicator[edges[k][1] - 1]}"
            )
    el_path = _path(folder, name, "edge_labels")
    if el_path.is_file():
        _count_check(el_path, len(_lines(el_path)), len(edges), f"line of {a_path.name}")
        _parse(el_path, "edge_labels", dtype=int, width=1)

    parts: list[np.ndarray] = []
    nl_path = _path(folder, name, "node_labels")
    if nl_path.is_file():
        node_labels = _parse(nl_path, "node_labels", dtype=int, width=None)
        _count_check(nl_path, len(node_labels), n_nodes, f"node of {ind_path.name}")
        one_hot = []
        for col in node_labels.T:  # several label columns: one-hot each
            values, index = np.unique(col, return_inverse=True)
            one_hot.append(np.eye(len(values), dtype=np.float32)[index])
        parts += one_hot
    na_path = _path(folder, name, "node_attributes")
    if na_path.is_file():
        attributes = _parse(na_path, "node_attributes", dtype=float, width=None)
        _count_check(na_path, len(attributes), n_nodes, f"node of {ind_path.name}")
        if not np.isfinite(attributes).all():
            k = int(np.flatnonzero(~np.isfinite(attributes).all(axis=1))[0])
            raise ValueError(f"{na_path}, line {k + 1}: non-finite attribute")
        parts.append(attributes.astype(np.float32))
    x_all = np.concatenate(parts, axis=1) if parts else None

    starts = np.searchsorted(indicator, np.arange(1, n_graphs + 1))
    ends = np.append(starts[1:], n_nodes)
    graph_of_edge = indicator[edges[:, 0] - 1] - 1 if edges.size else np.zeros(0, np.int64)
    order = np.argsort(graph_of_edge, kind="stable")
    edges, graph_of_edge = edges[order], graph_of_edge[order]
    e_starts = np.searchsorted(graph_of_edge, np.arange(n_graphs))
    e_ends = np.append(e_starts[1:], len(edges))
    values, labels = np.unique(raw_labels, return_inverse=True)
    graphs = []
    for g in range(n_graphs):
        n = int(ends[g] - starts[g])
        local = torch.from_numpy(edges[e_starts[g]:e_ends[g]].T - 1 - starts[g]).to(torch.int64)
        edge_index = coalesce(to_undirected(remove_self_loops(local)[0], num_nodes=n), num_nodes=n)
        data = Data(edge_index=edge_index, num_nodes=n, y=torch.tensor([int(labels[g])]))
        if x_all is not None:
            data.x = torch.from_numpy(x_all[starts[g]:ends[g]].copy())
        graphs.append(data)
    if x_all is None:
        for data, x in zip(graphs, degree_features(graphs)):
            data.x = x
    return GraphDataset(
        graphs=graphs,
        labels=labels.astype(np.int64),
        class_names=tuple(str(v) for v in values),
        num_features=int(graphs[0].x.shape[1]),
        name=name,
    )
