"""The InfoGraph model: a GIN encoder and the local/global discriminator heads.

Encoder (Xu et al., "How Powerful are Graph Neural Networks?", ICLR 2019) as InfoGraph uses it
(Sun et al., ICLR 2020; Robinson et al., ICLR 2021, App. B.1 and D.2): K GIN layers, each
``h^{(k)} = BN(ReLU(GINConv_k(h^{(k−1)})))`` with a 2-layer MLP inside the convolution, node
embedding ``h^u = CONCAT_k h^{(k)}_u`` (K·hidden) and graph embedding the concatenation of
each layer's sum pooling, ``H(G) = CONCAT_k Σ_{u∈G} h^{(k)}_u``. The discriminator heads map
both into the space where ``T(h^u, H) = ⟨local(h^u), global(H)⟩`` is computed: a 3-layer ReLU
MLP plus a linear shortcut (InfoGraph's ``FF``).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

__all__ = ["GINEncoder", "InfoGraphModel", "ResidualMLP", "seeded_infograph_model"]


def _check_int(name: str, value: int, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    return value


class GINEncoder(nn.Module):
    """K GIN layers with batch norm; sum pooling of every layer, concatenated.

    Args:
        in_dim: node feature dimension F.
        hidden: width of each layer (InfoGraph / HCL: 32).
        num_layers: K (InfoGraph / HCL: 3); embeddings have ``K · hidden`` dimensions.

    ``forward(x, edge_index, batch, num_graphs=None)`` → ``(graph (B, K·hidden), nodes (n, K·hidden))``.
    """

    def __init__(self, *, in_dim: int, hidden: int = 32, num_layers: int = 3) -> None:
        super().__init__()
        from torch_geometric.nn import GINConv

        self.in_dim = _check_int("in_dim", in_dim, 1)
        self.hidden = _check_int("hidden", hidden, 1)
        self.num_layers = _check_int("num_layers", num_layers, 1)
        self.convs = nn.ModuleList()
        self.norms = nn.ModuleList()
        for k in range(num_layers):
            width = in_dim if k == 0 else hidden
            mlp = nn.Sequential(nn.Linear(width, hidden), nn.ReLU(), nn.Linear(hidden, hidden))
            self.convs.append(GINConv(mlp))
            self.norms.append(nn.BatchNorm1d(hidden))

    @property
    def embedding_dim(self) -> int:
        return self.hidden * self.num_layers

    def forward(
        self, x: Tensor, edge_index: Tensor, batch: Tensor, num_graphs: int | None = None
    ) -> tuple[Tensor, Tensor]:
        from torch_geometric.nn import global_add_pool

        if x.dim() != 2 or x.shape[1] != self.in_dim:
            raise ValueError(f"x must have shape (num_nodes, {self.in_dim}), got {tuple(x.shape)}")
        layers = []
        h = x
        for conv, norm in zip(self.convs, self.norms):
            h = norm(conv(h, edge_index).relu())
            layers.append(h)
        nodes = torch.cat(layers, dim=1)
        graphs = torch.cat([global_add_pool(h, batch, size=num_graphs) for h in layers], dim=1)
        return graphs, nodes


class ResidualMLP(nn.Module):
    """InfoGraph's discriminator head: ``MLP₃(x) + W x`` (three ReLU layers, a linear shortcut)."""

    def __init__(self, *, dim: int) -> None:
        super().__init__()
        _check_int("dim", dim, 1)
        self.block = nn.Sequential(
            nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim), nn.ReLU()
        )
        self.shortcut = nn.Linear(dim, dim)

    def forward(self, x: Tensor) -> Tensor:
        return self.block(x) + self.shortcut(x)


class InfoGraphModel(nn.Module):
    """GIN encoder + local and global heads; Xavier-uniform linear layers, zero biases (InfoGraph).

    ``forward(data)`` on a PyG ``Batch`` → ``(local (n, D), global (B, D), batch (n,))``;
    :meth:`embed` gives the encoder's graph embeddings ``H(G)`` of a batch and
    :meth:`embed_graphs` those of a list of graphs, as the evaluation uses them.
    """

    def __init__(self, *, in_dim: int, hidden: int = 32, num_layers: int = 3) -> None:
        super().__init__()
        self.encoder = GINEncoder(in_dim=in_dim, hidden=hidden, num_layers=num_layers)
        dim = self.encoder.embedding_dim
        self.local_head = ResidualMLP(dim=dim)
        self.global_head = ResidualMLP(dim=dim)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)

    def forward(self, data: object) -> tuple[Tensor, Tensor, Tensor]:
        x, edge_index, batch = data.x, data.edge_index, data.batch  # type: ignore[attr-defined]
        graphs, nodes = self.encoder(x, edge_index, batch, int(data.num_graphs))  # type: ignore[attr-defined]
        return self.local_head(nodes), self.global_head(graphs), batch

    def embed(self, data: object) -> Tensor:
        """Graph embeddings ``H(G)`` (B, K·hidden) of a batch, as InfoGraph evaluates them."""
        graphs, _ = self.encoder(
            data.x, data.edge_index, data.batch, int(data.num_graphs)  # type: ignore[attr-defined]
        )
        return graphs

    @torch.no_grad()
    def embed_graphs(self, graphs: list[Any], *, batch_size: int = 256) -> Tensor:
        """``H(G)`` of every graph in eval mode, in order: (N, K·hidden) float64 (InfoGraph's readout input).

        The graphs go through in batches of ``batch_size`` in their order; the training mode is
        restored afterwards and the global random state is not touched.
        """
        from torch_geometric.loader import DataLoader

        _check_int("batch_size", batch_size, 1)
        was_training = self.training
        self.eval()
        try:
            # a generator of its own: an iterator over a loader without one draws from the global RNG
            loader = DataLoader(graphs, batch_size=batch_size, generator=torch.Generator().manual_seed(0))
            parts = [self.embed(b).double() for b in loader]
        finally:
            self.train(was_training)
        return torch.cat(parts, dim=0)


def seeded_infograph_model(
    *, in_dim: int, hidden: int = 32, num_layers: int = 3, seed: int = 0
) -> InfoGraphModel:
    """:class:`InfoGraphModel` initialised from ``seed`` alone (the global RNG is left untouched).

    The initialisation of the graph modality (``hardneg train graphs``,
    :class:`hardneg.modalities.graphs.Graphs`): the same weights for the same seed, whatever ran
    before in the process.
    """
    from hardneg.seeding import mix_seed

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(mix_seed(seed, 0x6E1))
        return InfoGraphModel(in_dim=in_dim, hidden=hidden, num_layers=num_layers)
