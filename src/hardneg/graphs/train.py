"""Training InfoGraph with a chosen negative distribution, seeded end to end.

The protocol of Sun et al. (ICLR 2020) as rerun by Robinson et al. (ICLR 2021), App. D.2: Adam
(lr 1e-3), batches of 128 graphs, the local–global loss of every batch, and at the end the
encoder's graph embeddings ``H(G)`` of every graph (eval mode) for the SVM readout
(:func:`hardneg.evaluate.cross_validated_accuracy`). Everything random — initialisation, batch
order, K-subsampling — is drawn from generators seeded by ``seed``; two runs with the same seed
and thread count give the same bits on CPU.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn

from hardneg.models.gin import InfoGraphModel, seeded_infograph_model
from hardneg.graphs.objective import InfoGraphLoss
from hardneg.seeding import step_generator

if TYPE_CHECKING:
    from hardneg.data.graphs.dataset import GraphDataset

__all__ = ["GraphTrainResult", "drop_last", "embed_graphs", "train_infograph"]


@dataclass
class GraphTrainResult:
    """A trained InfoGraph model, its per-epoch history and the final graph embeddings.

    ``embeddings``: (N, K·hidden) float64 array, row i for ``dataset.graphs[i]``;
    ``history``: one dict per epoch (``epoch``, ``loss``, ``seconds``, the loss's diagnostics).
    """

    model: InfoGraphModel
    embeddings: np.ndarray
    history: list[dict[str, float]] = field(default_factory=list)


def _check(name: str, value: Any, low: float, kind: type = int) -> None:
    types = (int, float) if kind is float else (int,)
    if isinstance(value, bool) or not isinstance(value, types) or not value >= low:
        what = "a number" if kind is float else "an int"
        raise ValueError(f"{name} must be {what} >= {low}, got {value!r}")


@torch.no_grad()
def embed_graphs(model: InfoGraphModel, graphs: list[Any], *, batch_size: int = 256) -> np.ndarray:
    """Graph embeddings ``H(G)`` of ``graphs`` in eval mode, in order: (N, K·hidden) float64."""
    from torch_geometric.loader import DataLoader

    was_training = model.training
    model.eval()
    try:
        # a generator of its own: an iterator over a loader without one draws from the global RNG
        loader = DataLoader(graphs, batch_size=batch_size, generator=torch.Generator().manual_seed(0))
        parts = [model.embed(b).double().numpy() for b in loader]
    finally:
        model.train(was_training)
    return np.concatenate(parts, axis=0)


def drop_last(num_graphs: int, batch_size: int) -> bool:
    """Drop an epoch's last batch only when it would hold a single graph (a node needs another graph)."""
    return num_graphs % batch_size == 1


def train_infograph(
    dataset: GraphDataset,
    *,
    loss: InfoGraphLoss | nn.Module,
    epochs: int = 20,
    batch_size: int = 128,
    lr: float = 1e-3,
    weight_decay: float = 0.0,
    hidden: int = 32,
    num_layers: int = 3,
    seed: int = 0,
    use_labels: bool = False,
) -> GraphTrainResult:
    """Train InfoGraph (GIN + heads) on ``dataset`` with ``loss``; return the model and embeddings.

    Args:
        dataset: the graphs (node features ``x``, ``edge_index``).
        loss: the local–global loss (:class:`~hardneg.graphs.InfoGraphLoss`, or any module with
            its ``detailed(local, global_, batch, labels=, generator=)`` method).
        epochs, batch_size, lr, weight_decay: Adam on shuffled batches; epoch ``e``'s order is
            the permutation of :class:`~hardneg.data.batches.EpochBatchSampler` ``(seed, e)`` (the
            pipeline's), and the last, smaller batch is dropped only when it would hold a single
            graph (a node needs another graph as negative).
        hidden, num_layers: GIN width and depth (InfoGraph / HCL: 32 and 3).
        seed: seeds initialisation, batch order and the loss's per-step generator.
        use_labels: pass the graphs' labels (``Data.y``) to the loss (collision-free negatives,
            collision diagnostics); an unsupervised method never needs them.
    """
    from torch_geometric.data import Batch

    from hardneg.data.batches import EpochBatchSampler

    _check("epochs", epochs, 0)
    _check("batch_size", batch_size, 2)
    _check("hidden", hidden, 1)
    _check("num_layers", num_layers, 1)
    _check("lr", lr, 0.0, float)
    _check("weight_decay", weight_decay, 0.0, float)
    if len(dataset) < 2:
        raise ValueError(f"dataset must hold at least 2 graphs, got {len(dataset)}")
    model = seeded_infograph_model(
        in_dim=dataset.num_features, hidden=hidden, num_layers=num_layers, seed=seed
    )
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    sampler = EpochBatchSampler(
        num_items=len(dataset),
        batch_size=batch_size,
        seed=seed,
        drop_last=drop_last(len(dataset), batch_size),
    )
    labels_all = torch.as_tensor(dataset.labels, dtype=torch.long)
    history: list[dict[str, float]] = []
    model.train()
    for epoch in range(epochs):
        t0 = time.perf_counter()
        sums: dict[str, float] = {}
        steps = 0
        sampler.set_epoch(epoch)
        for step, indices in enumerate(sampler):
            data = Batch.from_data_list([dataset.graphs[i] for i in indices])
            local, global_, batch = model(data)
            labels = labels_all[indices] if use_labels else None
            g = step_generator(seed, epoch, step)
            out = loss.detailed(local, global_, batch, labels=labels, generator=g)  # type: ignore[operator]
            optimizer.zero_grad(set_to_none=True)
            out.loss.backward()
            optimizer.step()
            sums["loss"] = sums.get("loss", 0.0) + float(out.loss.detach())
            for key, value in out.diagnostics.items():
                if key != "loss":
                    sums[key] = sums.get(key, 0.0) + float(value)
            steps += 1
        row = {"epoch": float(epoch), "seconds": time.perf_counter() - t0}
        row.update({k: v / max(steps, 1) for k, v in sums.items()})
        history.append(row)
    return GraphTrainResult(model=model, embeddings=embed_graphs(model, dataset.graphs), history=history)
