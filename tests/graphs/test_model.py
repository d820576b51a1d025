"""GIN encoder and InfoGraph heads: shapes, pooling, invariances, batching."""

from __future__ import annotations

import pytest
import torch

from hardneg.models.gin import GINEncoder, InfoGraphModel, ResidualMLP

Data = pytest.importorskip("torch_geometric.data").Data
Batch = pytest.importorskip("torch_geometric.data").Batch


def _graph(n: int, edges: list[tuple[int, int]], f: int = 3, seed: int = 0) -> object:
    g = torch.Generator().manual_seed(seed)
    ei = torch.tensor(edges, dtype=torch.long).T if edges else torch.zeros(2, 0, dtype=torch.long)
    ei = torch.cat([ei, ei.flip(0)], dim=1)
    return Data(x=torch.randn(n, f, generator=g), edge_index=ei, y=torch.tensor([0]))


def _model(seed: int = 0, **kw) -> InfoGraphModel:
    torch.manual_seed(seed)
    return InfoGraphModel(in_dim=3, hidden=8, num_layers=3, **kw).eval()


def test_shapes_and_embedding_dim() -> None:
    batch = Batch.from_data_list([_graph(4, [(0, 1), (1, 2), (2, 3)]), _graph(3, [(0, 1)], seed=1)])
    model = _model()
    local, global_, b = model(batch)
    assert local.shape == (7, 24) and global_.shape == (2, 24) and b.tolist() == [0] * 4 + [1] * 3
    assert model.embed(batch).shape == (2, 24) and model.encoder.embedding_dim == 24


def test_graph_embedding_is_the_concatenated_sum_pooling_of_the_layers() -> None:
    enc = _model().encoder
    batch = Batch.from_data_list([_graph(5, [(0, 1), (1, 2), (3, 4)]), _graph(2, [], seed=2)])
    graphs, nodes = enc(batch.x, batch.edge_index, batch.batch, 2)
    torch.testing.assert_close(graphs[0], nodes[:5].sum(0))
    torch.testing.assert_close(graphs[1], nodes[5:].sum(0))


def test_node_relabelling_leaves_the_graph_embedding_unchanged() -> None:
    g = _graph(6, [(0, 1), (1, 2), (2, 0), (3, 4), (4, 5)])
    perm = torch.tensor([4, 2, 0, 5, 1, 3])  # new node i is old node perm[i]
    inv = torch.empty_like(perm)
    inv[perm] = torch.arange(6)
    h = Data(x=g.x[perm], edge_index=inv[g.edge_index], y=g.y)
    model = _model()
    a = model.embed(Batch.from_data_list([g]))
    b = model.embed(Batch.from_data_list([h]))
    torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


def test_batched_equals_one_graph_at_a_time_in_eval_mode() -> None:
    graphs = [_graph(4, [(0, 1), (2, 3)]), _graph(3, [(0, 1), (1, 2)], seed=1), _graph(1, [], seed=2)]
    model = _model()
    together = model.embed(Batch.from_data_list(graphs))
    alone = torch.cat([model.embed(Batch.from_data_list([g])) for g in graphs])
    torch.testing.assert_close(together, alone, rtol=1e-5, atol=1e-5)


def test_structure_changes_the_embedding() -> None:
    x = torch.ones(4, 3)
    path = Data(x=x, edge_index=torch.tensor([[0, 1, 1, 2, 2, 3], [1, 0, 2, 1, 3, 2]]))
    star = Data(x=x, edge_index=torch.tensor([[0, 1, 0, 2, 0, 3], [1, 0, 2, 0, 3, 0]]))
    model = _model()
    a, b = model.embed(Batch.from_data_list([path])), model.embed(Batch.from_data_list([star]))
    assert (a - b).abs().max() > 1e-4


def test_heads_are_residual_and_initialised_as_infograph() -> None:
    head = ResidualMLP(dim=5)
    x = torch.randn(3, 5)
    torch.testing.assert_close(head(x), head.block(x) + head.shortcut(x))
    model = _model()
    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    assert linears and all(float(m.bias.abs().max()) == 0.0 for m in linears)


@pytest.mark.parametrize(("kw", "match"), [
    ({"in_dim": 0}, "in_dim must be an int >= 1"),
    ({"in_dim": 3, "hidden": 0}, "hidden must be an int >= 1"),
    ({"in_dim": 3, "num_layers": 2.5}, "num_layers must be an int >= 1"),
])
def test_bad_sizes(kw: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        GINEncoder(**kw)


def test_wrong_feature_width_is_named() -> None:
    enc = GINEncoder(in_dim=3)
    with pytest.raises(ValueError, match=r"x must have shape \(num_nodes, 3\), got \(2, 4\)"):
        enc(torch.zeros(2, 4), torch.zeros(2, 0, dtype=torch.long), torch.zeros(2, dtype=torch.long))
