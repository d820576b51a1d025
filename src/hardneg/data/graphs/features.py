"""Node features of graphs without attributes: node degrees, as InfoGraph uses them.

Sun et al. (ICLR 2020) and Robinson et al. (ICLR 2021, App. D.2) train on TU data sets without
node features (IMDB, REDDIT) with the one-hot node degree (PyG's ``OneHotDegree``) when the
largest degree is below 1000, else the degree standardised over all nodes of the data set.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

__all__ = ["DEGREE_ONE_HOT_LIMIT", "degree_features", "node_degrees"]

DEGREE_ONE_HOT_LIMIT = 1000


def node_degrees(edge_index: Tensor, num_nodes: int) -> Tensor:
    """Number of edges leaving each node (edges listed in both directions), shape (n,) int64."""
    return torch.bincount(edge_index[0], minlength=num_nodes).to(torch.int64)


def degree_features(graphs: Sequence[Any], *, max_degree: int | None = None) -> list[Tensor]:
    """Degree features of every graph: one-hot over ``0..max_degree`` (float32 (n, D+1)), or, when
    the largest degree is ``≥ 1000``, the standardised degree (n, 1).

    ``max_degree`` defaults to the largest degree in ``graphs`` (a data set's features must be
    computed over the whole set, so that every graph has the same width); a degree above a
    given ``max_degree`` is an error. Each graph needs ``edge_index`` and ``num_nodes``.
    """
    degrees = [node_degrees(g.edge_index, int(g.num_nodes)) for g in graphs]
    top = max((int(d.max()) for d in degrees if d.numel()), default=0)
    if max_degree is None:
        max_degree = top
    elif top > max_degree:
        raise ValueError(f"max_degree={max_degree} is below the largest node degree {top} of the graphs")
    if max_degree < DEGREE_ONE_HOT_LIMIT:
        return [torch.nn.functional.one_hot(d, max_degree + 1).to(torch.float32) for d in degrees]
    every = torch.cat(degrees).to(torch.float64)
    mean, std = float(every.mean()), float(every.std()) if every.numel() > 1 else 1.0
    return [((d.to(torch.float64) - mean) / (std or 1.0)).to(torch.float32)[:, None] for d in degrees]
