"""The TU reader on fixture files written here in exactly the collection's layout."""

from __future__ import annotations

import socket
from pathlib import Path

import numpy as np
import pytest
import torch

from hardneg.data.graphs.tu import read_tu

# Three small graphs (1-based node ids over the data set):
#   graph 1: nodes 1-3, a triangle;  graph 2: nodes 4-5, one edge;  graph 3: nodes 6-9, a path 6-7-8 and
#   an isolated node 9.  Each undirected edge listed in both directions, as the real files do.
EDGES = [(1, 2), (2, 3), (3, 1), (4, 5), (6, 7), (7, 8)]
INDICATOR = [1, 1, 1, 2, 2, 3, 3, 3, 3]
GRAPH_LABELS = [-1, 1, -1]
NODE_LABELS = [0, 2, 2, 1, 0, 0, 0, 2, 1]


def _write(root: Path, name: str, *, edges=EDGES, indicator=INDICATOR, graph_labels=GRAPH_LABELS,
           node_labels=NODE_LABELS, attributes=None, both_directions: bool = True,
           edge_labels: bool = False) -> Path:
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    lines = [f"{a}, {b}" for a, b in edges] + ([f"{b}, {a}" for a, b in edges] if both_directions else [])
    (folder / f"{name}_A.txt").write_text("\n".join(lines) + "\n")
    (folder / f"{name}_graph_indicator.txt").write_text("\n".join(map(str, indicator)) + "\n")
    (folder / f"{name}_graph_labels.txt").write_text("\n".join(map(str, graph_labels)) + "\n")
    if node_labels is not None:
        (folder / f"{name}_node_labels.txt").write_text("\n".join(map(str, node_labels)) + "\n")
    if attributes is not None:
        (folder / f"{name}_node_attributes.txt").write_text(
            "\n".join(", ".join(f"{v:g}" for v in row) for row in attributes) + "\n")
    if edge_labels:
        (folder / f"{name}_edge_labels.txt").write_text("\n".join("1" for _ in lines) + "\n")
    return folder


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any attempt to reach the network (a download) fails the test."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"network access attempted: {args!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


def _pairs(g) -> set[tuple[int, int]]:
    return {(int(a), int(b)) for a, b in g.edge_index.T.tolist()}


def test_reads_structure_labels_and_one_hot_node_labels(tmp_path: Path) -> None:
    _write(tmp_path, "TOY", edge_labels=True)
    data = read_tu(tmp_path, "TOY")
    assert len(data) == 3 and data.name == "TOY"
    assert data.labels.tolist() == [0, 1, 0] and data.class_names == ("-1", "1")
    assert [g.num_nodes for g in data.graphs] == [3, 2, 4]
    assert _pairs(data.graphs[0]) == {(0, 1), (1, 0), (1, 2), (2, 1), (0, 2), (2, 0)}
    assert _pairs(data.graphs[1]) == {(0, 1), (1, 0)}
    assert _pairs(data.graphs[2]) == {(0, 1), (1, 0), (1, 2), (2, 1)}  # node 3 isolated
    assert data.num_features == 3
    assert data.graphs[0].x.tolist() == [[1, 0, 0], [0, 0, 1], [0, 0, 1]]
    assert [int(g.y) for g in data.graphs] == [0, 1, 0]


def test_edges_listed_once_give_the_same_graphs(tmp_path: Path) -> None:
    _write(tmp_path / "a", "TOY")
    _write(tmp_path / "b", "TOY", both_directions=False)
    a, b = read_tu(tmp_path / "a", "TOY"), read_tu(tmp_path / "b", "TOY")
    assert all(torch.equal(x.edge_index, y.edge_index) for x, y in zip(a.graphs, b.graphs))


@pytest.mark.parametrize("attributes", [False, True])
def test_agrees_with_torch_geometric_reader(tmp_path: Path, attributes: bool) -> None:
    """PyG's own reader (local files only) as an independent reference: the same edge_index, bit for
    bit, the same one-hot node labels (all label values 0..2 occur, so "values present" and PyG's
    "min..max" agree) and attributes (PyG puts them first), the same labels."""
    from torch_geometric.io import read_tu_data

    attr = np.arange(27, dtype=float).reshape(9, 3) / 8 if attributes else None
    # both directions, as the real files (PyG's reader does not symmetrise), plus a duplicate and a loop
    folder = _write(tmp_path, "TOY", attributes=attr, edges=[*EDGES, (2, 1), (8, 8)])
    ours = read_tu(tmp_path, "TOY")
    data, slices, sizes = read_tu_data(str(folder), "TOY")
    assert sizes["num_node_attributes"] == (3 if attributes else 0)
    theirs_x = torch.cat([data.x[:, 3:], data.x[:, :3]], dim=1) if attributes else data.x
    for k, g in enumerate(ours.graphs):
        e0, e1 = int(slices["edge_index"][k]), int(slices["edge_index"][k + 1])
        n0, n1 = int(slices["x"][k]), int(slices["x"][k + 1])
        assert torch.equal(g.edge_index, data.edge_index[:, e0:e1])  # PyG stores graph-local ids
        assert torch.equal(g.x, theirs_x[n0:n1].to(torch.float32))
    assert data.y.tolist() == ours.labels.tolist() == [0, 1, 0]  # PyG remaps -1/1 to 0/1 too
    # PyG's TUDataset default (use_node_attr=False, the released InfoGraph/HCL code) drops attributes
    plain = read_tu(tmp_path, "TOY", node_attributes=False)
    assert all(torch.equal(g.x, data.x[int(slices["x"][k]):int(slices["x"][k + 1]), -3:])
               for k, g in enumerate(plain.graphs))


def test_line_by_line_parser_gives_the_same_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast path (np.loadtxt) and the line-by-line parser that locates errors agree exactly."""
    import hardneg.data.graphs.tu as tu

    _write(tmp_path, "TOY", attributes=np.arange(18, dtype=float).reshape(9, 2) / 3, edge_labels=True)
    fast = read_tu(tmp_path, "TOY")
    monkeypatch.setattr(tu, "_parse_fast", lambda *a, **k: None)
    slow = read_tu(tmp_path, "TOY")
    assert all(torch.equal(a.edge_index, b.edge_index) and torch.equal(a.x, b.x) and torch.equal(a.y, b.y)
               for a, b in zip(fast.graphs, slow.graphs))


def test_attributes_follow_the_one_hot_labels(tmp_path: Path) -> None:
    attributes = np.arange(18, dtype=float).reshape(9, 2) / 4
    _write(tmp_path, "ATT", attributes=attributes)
    data = read_tu(tmp_path, "ATT")
    assert data.num_features == 5
    x = torch.cat([g.x for g in data.graphs])
    assert torch.equal(x[:, 3:], torch.tensor(attributes, dtype=torch.float32))


def test_no_node_labels_gives_one_hot_degrees(tmp_path: Path) -> None:
    _write(tmp_path, "DEG", node_labels=None)
    data = read_tu(tmp_path, "DEG")
    assert data.num_features == 3  # degrees 0..2
    assert data.graphs[2].x.tolist() == [[0, 1, 0], [0, 0, 1], [0, 1, 0], [1, 0, 0]]  # path + isolated
    assert all(g.x.dtype == torch.float32 and g.x.shape == (g.num_nodes, 3) for g in data.graphs)
    # attributes only, ignored on request: degree features again
    _write(tmp_path, "ATTONLY", node_labels=None, attributes=np.ones((9, 2)))
    assert read_tu(tmp_path, "ATTONLY").num_features == 2
    assert read_tu(tmp_path, "ATTONLY", node_attributes=False).graphs[2].x.argmax(1).tolist() == [1, 2, 1, 0]


@pytest.mark.parametrize(("raw", "remapped", "names"), [
    ([-1, 1, -1], [0, 1, 0], ("-1", "1")),
    ([1, 3, 2], [0, 2, 1], ("1", "2", "3")),
    ([0, 0, 5], [0, 0, 1], ("0", "5")),
])
def test_labels_remapped_to_sorted_class_indices(tmp_path: Path, raw, remapped, names) -> None:
    _write(tmp_path, "LAB", graph_labels=raw)
    data = read_tu(tmp_path, "LAB")
    assert data.labels.dtype == np.int64 and data.labels.tolist() == remapped
    assert data.class_names == names and data.num_classes == len(names)
    assert [g.y.tolist() for g in data.graphs] == [[y] for y in remapped]
    assert all(g.y.dtype == torch.int64 and g.edge_index.dtype == torch.int64 for g in data.graphs)
    sub = data.subset([2, 0])
    assert len(sub) == 2 and sub.labels.tolist() == [remapped[2], remapped[0]] and sub.class_names == names


def test_windows_line_ends_and_no_edges_at_all(tmp_path: Path) -> None:
    folder = _write(tmp_path / "crlf", "TOY")
    for f in folder.iterdir():
        f.write_bytes(f.read_bytes().replace(b"\n", b"\r\n"))
    a, b = read_tu(tmp_path / "crlf", "TOY"), read_tu(_write(tmp_path / "lf", "TOY").parent, "TOY")
    assert all(torch.equal(x.edge_index, y.edge_index) and torch.equal(x.x, y.x)
               for x, y in zip(a.graphs, b.graphs))
    folder = _write(tmp_path / "none", "TOY", node_labels=None)
    (folder / "TOY_A.txt").write_text("")
    data = read_tu(tmp_path / "none", "TOY")
    assert all(g.edge_index.shape == (2, 0) for g in data.graphs)
    assert data.num_features == 1 and all(torch.equal(g.x, torch.ones(g.num_nodes, 1)) for g in data.graphs)


def test_self_loops_and_duplicate_edges_are_dropped(tmp_path: Path) -> None:
    _write(tmp_path, "LOOP", edges=[*EDGES, (4, 4), (1, 2)])
    data = read_tu(tmp_path, "LOOP")
    assert _pairs(data.graphs[1]) == {(0, 1), (1, 0)}
    assert data.graphs[0].edge_index.shape[1] == 6


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"edges": [*EDGES, (3, 10)]}, r"TOY_A.txt, line 7: node id 10 outside 1..9"),
        ({"edges": [*EDGES, (0, 1)]}, r"TOY_A.txt, line 7: node id 0 outside 1..9"),
        ({"edges": [*EDGES, (3, 4)]}, r"TOY_A.txt, line 7: edge 3, 4 joins graph 1 and graph 2"),
        ({"indicator": [1, 1, 1, 3, 3, 3, 3, 3, 3]}, r"graph_indicator.txt, line 4: graph id 3"),
        ({"indicator": [1, 1, 2, 1, 2, 3, 3, 3, 3]}, r"graph_indicator.txt, line 4: graph id 1"),
        ({"indicator": [2, 2, 2, 2, 2, 3, 3, 3, 3]}, r"graph_indicator.txt, line 1: graph id 2"),
        ({"graph_labels": [1, 0]}, r"TOY_graph_labels.txt: 2 lines, expected 3"),
        ({"node_labels": [0, 1]}, r"TOY_node_labels.txt: 2 lines, expected 9"),
        ({"graph_labels": [1, "x", 0]}, r"graph_labels.txt, line 2: cannot read 'x'; expected one integer"),
        ({"graph_labels": [1, 0.5, 0]}, r"graph_labels.txt, line 2: cannot read '0.5'"),
        ({"node_labels": [0, 1, 2, 0, 1, "C", 0, 1, 2]}, r"TOY_node_labels.txt, line 6: cannot read 'C'"),
        ({"attributes": np.ones((8, 2))}, r"TOY_node_attributes.txt: 8 lines, expected 9"),
        ({"attributes": np.where(np.eye(9, 2) > 0, np.inf, 1.0)}, r"node_attributes.txt, line 1: non-finite"),
        ({"indicator": [1, 1, 1, 2, 2, 3, 3, 3], "node_labels": None, "edges": [*EDGES, (8, 9)]},
         r"TOY_A.txt, line 7: node id 9 outside 1..8 \(the number of lines of TOY_graph_indicator.txt\)"),
    ],
)
def test_malformed_files_name_the_file_and_line(tmp_path: Path, kw: dict, match: str) -> None:
    _write(tmp_path, "TOY", **kw)
    with pytest.raises(ValueError, match=match):
        read_tu(tmp_path, "TOY")


def test_bad_edge_line_names_the_layout(tmp_path: Path) -> None:
    folder = _write(tmp_path, "TOY")
    (folder / "TOY_A.txt").write_text("1, 2\n2, 3\n\n3, 1\n")  # a blank line inside the file
    with pytest.raises(ValueError, match=r"TOY_A.txt, line 3: cannot read ''; expected lines 'i, j'"):
        read_tu(tmp_path, "TOY")
    (folder / "TOY_A.txt").write_text("1, 2\n2, 3\n\n\n")  # trailing blank lines are fine
    assert read_tu(tmp_path, "TOY").graphs[0].edge_index.shape == (2, 4)
    (folder / "TOY_node_attributes.txt").write_text("\n".join(["1, 2"] * 4 + ["1"] + ["1, 2"] * 4) + "\n")
    with pytest.raises(ValueError, match=r"attributes.txt, line 5: 1 values, line 1 has 2; expected comma"):
        read_tu(tmp_path, "TOY")
    (folder / "TOY_node_attributes.txt").unlink()
    (folder / "TOY_A.txt").write_text("1, 2\n2 3\n")
    with pytest.raises(ValueError, match=r"TOY_A.txt, line 2: cannot read '2 3'; expected lines 'i, j'"):
        read_tu(tmp_path, "TOY")
    (folder / "TOY_A.txt").write_text("1, 2, 3\n")
    with pytest.raises(ValueError, match=r"line 1: 3 value\(s\)"):
        read_tu(tmp_path, "TOY")


def test_missing_and_empty_files(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"NONE_A.txt not found: expected ROOT/NAME/NAME_A.txt with "
                       r"lines 'i, j' \(an edge between 1-based node ids\); a TU data set is read from"):
        read_tu(tmp_path, "NONE")
    folder = _write(tmp_path, "NOLAB")
    (folder / "NOLAB_graph_labels.txt").unlink()
    with pytest.raises(FileNotFoundError, match=r"NOLAB_graph_labels.txt not found: expected .* one integer"):
        read_tu(tmp_path, "NOLAB")
    folder = _write(tmp_path, "EMPTY")
    (folder / "EMPTY_graph_indicator.txt").write_text("")
    with pytest.raises(ValueError, match="empty, the data set has no nodes"):
        read_tu(tmp_path, "EMPTY")
    folder = _write(tmp_path, "EL", edge_labels=True)
    (folder / "EL_edge_labels.txt").write_text("1\n")
    with pytest.raises(ValueError, match=r"EL_edge_labels.txt: 1 lines, expected 12"):
        read_tu(tmp_path, "EL")
    (folder / "EL_graph_labels.txt").write_bytes(b"\xff\xfe\n")
    with pytest.raises(ValueError, match="not UTF-8"):
        read_tu(tmp_path, "EL")
    with pytest.raises(ValueError, match="name must be a data set name"):
        read_tu(tmp_path, "a/b")


def test_graph_without_edges_is_valid_and_trains(tmp_path: Path) -> None:
    from hardneg.modalities.graphs import Graphs
    from hardneg.pipeline.build import build_loss
    from hardneg.pipeline.config import load_config
    from hardneg.seeding import step_generator

    _write(tmp_path, "TOY", edges=[(1, 2), (2, 3)])  # graphs 2 and 3 have no edges
    cfg = load_config("graphs", ["data.dataset=tu", f"data.root={tmp_path}", "data.name=TOY",
                                 "eval.svm=false", "eval.logistic=false"])  # 3 graphs: no readout folds
    graphs = Graphs()  # the modality of data.dataset tu
    data, _ = graphs.load(cfg)
    assert data.graphs[1].edge_index.shape == (2, 0)
    encoder, loss = graphs.build_encoder(cfg, data), build_loss(cfg)
    optimizer = torch.optim.Adam(encoder.parameters(), lr=1e-3)
    x, _, labels, _ = graphs.dataset(cfg, data)[[0, 1, 2]]
    for step in range(2):
        out = graphs.step(cfg, encoder, loss, x, labels=labels, generator=step_generator(0, 0, step))
        optimizer.zero_grad()
        out.loss.backward()
        optimizer.step()
    assert torch.isfinite(encoder.embed_graphs(data.graphs)).all()


def test_cli_trains_on_a_tu_folder_without_node_labels(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from hardneg.cli import app

    sizes = [3, 4] * 10
    indicator = [g + 1 for g, n in enumerate(sizes) for _ in range(n)]
    starts = np.cumsum([0, *sizes])
    edges = [(int(s) + 1, int(s) + 2) for s in starts[:-1]]
    _write(tmp_path, "SMALL", edges=edges, indicator=indicator, graph_labels=[0, 1] * 10, node_labels=None)
    tiny = ["data.dataset=tu", f"data.root={tmp_path}", "train.epochs=1", "train.batch_size=8",
            "train.threads=1", "eval.cv_folds=3", "eval.logistic=false", "eval.figures=false"]
    res = CliRunner().invoke(app, ["train", "graphs", *tiny, "data.name=SMALL", "--out", str(tmp_path / "r"),
                                   "--quiet"])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "r" / "metrics.json").is_file()
    res = CliRunner().invoke(app, ["train", "graphs", *tiny, "data.name=NOPE", "--out", str(tmp_path / "r2")])
    assert res.exit_code == 2 and "NOPE_A.txt not found" in res.output


def test_the_config_can_leave_node_attributes_out(tmp_path: Path) -> None:
    from hardneg.modalities.graphs import load_graph_dataset
    from hardneg.pipeline.config import load_config

    _write(tmp_path, "ATT2", attributes=np.ones((9, 2)))
    tu = ["data.dataset=tu", f"data.root={tmp_path}", "data.name=ATT2"]
    with_attr = load_graph_dataset(load_config("graphs", tu))
    without = load_graph_dataset(load_config("graphs", [*tu, "data.graphs.node_attributes=false"]))
    assert (with_attr.num_features, without.num_features) == (5, 3)


def test_a_class_smaller_than_the_readout_folds_is_refused_before_training(tmp_path: Path) -> None:
    from hardneg.config.errors import ConfigError
    from hardneg.modalities import get_modality
    from hardneg.pipeline.config import load_config

    _write(tmp_path, "TOY")  # 3 graphs: classes of 1 and 2 graphs
    cfg = load_config("graphs", ["data.dataset=tu", f"data.root={tmp_path}", "data.name=TOY",
                                 "train.batch_size=2"])
    expected = r"invalid value for 'eval.cv_folds': .*TOY.*fewer than the 10 folds; got 10"
    with pytest.raises(ConfigError, match=expected):
        get_modality("motifs").load(cfg)
