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
present in the data set, sorted), followed by the node attributes (``node_attributes=False``
drops them, as PyG's ``TUDataset`` does by default); a data set with neither gets degree
features (:func:`~hardneg.data.graphs.features.degree_features`). Edges are made undirected and
deduplicated, and self-loops are dropped (as PyG's ``TUDataset``, which InfoGraph and HCL used),
so ``edge_index`` is sorted by (source, target) with each edge in both directions, exactly as
PyG's ``read_tu_data`` gives it; graphs without edges and isolated nodes are valid (an isolated
node has degree 0 and keeps its features). Class labels are remapped to 0..C−1 in sorted order of
the original values (−1/1 → 0/1).
Nothing is ever downloaded: a missing or malformed file is an error naming the file, the line and
the expected layout. Files are parsed with ``np.loadtxt`` (a few seconds for the millions of edge
lines of REDDIT or DD) and re-read line by line only to locate an error.
"""

from __future__ import annotations

import io
import warnings
from pathlib import Path

import numpy as np
import torch

from hardneg.data.graphs.dataset import GraphDataset
from hardneg.data.graphs.features import degree_features

__all__ = ["read_tu", "tu_file"]

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


def tu_file(root: str | Path, name: str, part: str) -> Path:
    """``root/name/name_<part>.txt``: where :func:`read_tu` reads ``part`` (``"A"``, ``"graph_labels"``…)."""
    if part not in _LAYOUT:
        raise ValueError(f"part must be one of {list(_LAYOUT)}, got {part!r}")
    return _path(Path(root) / name, name, part)


def _text(path: Path) -> str:
    """The file's text without trailing blank lines (a trailing blank line is not a record)."""
    try:
        text = path.read_bytes().decode("utf-8-sig")  # a byte-order mark is not a number
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not UTF-8 text ({err.reason} at byte {err.start})") from None
    return text.rstrip()


def _parse_fast(text: str, *, dtype: type, width: int | None) -> np.ndarray | None:
    """All rows at once with ``np.loadtxt``, or ``None`` when anything is off (the slow path then
    finds the line): several million edge lines (REDDIT, DD) in seconds rather than a minute."""
    if not text or "\r" in text.replace("\r\n", "\n"):
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            out = np.loadtxt(io.StringIO(text), delimiter=",", comments=None, ndmin=2,
                             dtype=np.float64 if dtype is float else np.int64)
    except (ValueError, OverflowError, UserWarning):
        return None
    if out.shape[0] != text.count("\n") + 1 or (width is not None and out.shape[1] != width):
        return None  # a blank line inside the file (skipped by loadtxt) or a wrong width
    return out


def _parse(path: Path, part: str, *, dtype: type, width: int | None) -> np.ndarray:
    """Rows of comma-separated numbers, int64 or float64 (rows, width); errors name the file, the
    line and the layout."""
    text = _text(path)
    fast = _parse_fast(text, dtype=dtype, width=width)
    if fast is not None:
        return fast
    rows = []
    for k, line in enumerate(text.splitlines() if text else [], start=1):
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
        if dtype is int and any(abs(v) >= 2**63 for v in values):
            raise ValueError(f"{path}, line {k}: {line.strip()!r} does not fit in int64")
        rows.append(values)
    if rows and width is None and len({len(r) for r in rows}) != 1:
        k = next(i for i, r in enumerate(rows, start=1) if len(r) != len(rows[0]))
        raise ValueError(
            f"{path}, line {k}: {len(rows[k - 1])} values, line 1 has {len(rows[0])}; "
            f"expected {_LAYOUT[part]}"
        )
    out = np.asarray(rows, dtype=np.float64 if dtype is float else np.int64)
    return out if rows else out.reshape(0, width or 0)


def _count_check(path: Path, got: int, want: int, what: str) -> None:
    if got != want:
        raise ValueError(f"{path}: {got} lines, expected {want} (one per {what})")


def _undirected_simple(edges: np.ndarray, num_nodes: int) -> np.ndarray:
    """0-based edges (E, 2) → both directions, self-loops dropped, duplicates merged, sorted by
    (source, target): int64 (E', 2). The same as PyG's ``coalesce(to_undirected(remove_self_loops(·)))``,
    done once for the whole data set (sorted global ids keep each graph's edges contiguous)."""
    edges = edges[edges[:, 0] != edges[:, 1]]
    both = np.concatenate([edges, edges[:, ::-1]])
    keys = np.sort(both[:, 0] * np.int64(num_nodes) + both[:, 1])
    first = np.ones(keys.size, dtype=bool)
    first[1:] = keys[1:] != keys[:-1]  # np.unique, without its slower hashing
    keys = keys[first]
    return np.stack([keys // num_nodes, keys % num_nodes], axis=1).astype(np.int64)


def read_tu(root: str | Path, name: str, *, node_attributes: bool = True) -> GraphDataset:
    """Read TU data set ``name`` from ``root/name/name_*.txt`` (see the module docstring).

    Args:
        root: the folder holding ``name/`` (as the collection's zip files unpack).
        name: the data set, e.g. ``"MUTAG"``.
        node_attributes: append ``NAME_node_attributes.txt`` (when present) to the one-hot node
            labels. ``False`` ignores the file, as PyG's ``TUDataset(use_node_attr=False)`` (its
            default, used by the released code of InfoGraph and HCL) does; a data set left with
            no node features then gets degree features.

    Returns:
        A :class:`~hardneg.data.graphs.dataset.GraphDataset` (graphs in file order).

    Example: ``read_tu("data", "MUTAG")`` reads ``data/MUTAG/MUTAG_A.txt``, … .
    """
    from torch_geometric.data import Data

    if not isinstance(name, str) or not name or "/" in name:
        raise ValueError(f"name must be a data set name such as 'MUTAG', got {name!r}")
    folder = Path(root) / name
    for part in ("A", "graph_indicator", "graph_labels"):
        p = _path(folder, name, part)
        if not p.is_file():
            raise FileNotFoundError(
                f"{p} not found: expected ROOT/NAME/NAME_{part}.txt with {_LAYOUT[part]}; a TU data set is "
                "read from ROOT/NAME/NAME_A.txt, NAME_graph_indicator.txt, NAME_graph_labels.txt (+ optional "
                "NAME_node_labels.txt, NAME_node_attributes.txt, NAME_edge_labels.txt), as the collection's "
                "zip files unpack (nothing is downloaded)"
            )
    ind_path = _path(folder, name, "graph_indicator")
    indicator = _parse(ind_path, "graph_indicator", dtype=int, width=1)[:, 0]
    if indicator.size == 0:
        layout = _LAYOUT["graph_indicator"]
        raise ValueError(f"{ind_path}: empty, the data set has no nodes; expected {layout}")
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
        edge_labels = _parse(el_path, "edge_labels", dtype=int, width=1)
        _count_check(el_path, len(edge_labels), len(edges), f"line of {a_path.name}")

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
    if node_attributes and na_path.is_file():
        attributes = _parse(na_path, "node_attributes", dtype=float, width=None)
        _count_check(na_path, len(attributes), n_nodes, f"node of {ind_path.name}")
        if not np.isfinite(attributes).all():
            k = int(np.flatnonzero(~np.isfinite(attributes).all(axis=1))[0])
            raise ValueError(f"{na_path}, line {k + 1}: non-finite attribute")
        parts.append(attributes.astype(np.float32))
    x_all = np.concatenate(parts, axis=1) if parts else None

    starts = np.searchsorted(indicator, np.arange(1, n_graphs + 1))
    ends = np.append(starts[1:], n_nodes)
    edges = _undirected_simple(edges - 1, n_nodes)
    e_starts = np.searchsorted(indicator[edges[:, 0]] - 1, np.arange(n_graphs))
    e_ends = np.append(e_starts[1:], len(edges))
    values, labels = np.unique(raw_labels, return_inverse=True)
    if values.size < 2:
        raise ValueError(
            f"{lab_path}: every graph is of class '{int(values[0])}' (1 class); a labelled data set needs "
            "at least 2 classes (the evaluation's readouts classify graphs)"
        )
    graphs = []
    for g in range(n_graphs):
        n = int(ends[g] - starts[g])
        edge_index = torch.from_numpy(np.ascontiguousarray(edges[e_starts[g]:e_ends[g]].T - starts[g]))
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
