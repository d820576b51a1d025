"""The mean-classifier metrics of a run use one representation: a point the C-way mean classifier
gets right is right in every task containing its class, so on balanced data the average
(k+1)-way accuracy is at least the C-way accuracy."""

from __future__ import annotations

import torch
from torch import nn

from hardneg.data.vectors import LabeledVectors
from hardneg.modalities.readouts import evaluate_encoder


class _FirstOutput(nn.Module):
    """An 'encoder' returning (h, z) with a fixed non-negative map, like a ReLU backbone."""

    def __init__(self, w: torch.Tensor) -> None:
        super().__init__()
        self.w = nn.Parameter(w, requires_grad=False)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = torch.relu(x @ self.w) + 0.5
        return h, h


def _split(n_per_class: int, classes: int, seed: int) -> LabeledVectors:
    # class means of very different norms: an un-normalised inner product favours the long ones
    centers = torch.randn(classes, 8, generator=torch.Generator().manual_seed(0))
    centers = centers * torch.linspace(0.5, 6.0, classes)[:, None]
    g = torch.Generator().manual_seed(seed)
    labels = torch.arange(classes).repeat_interleave(n_per_class)
    x = centers[labels] + 1.5 * torch.randn(len(labels), 8, generator=g)
    return LabeledVectors(inputs=x, labels=labels, classes=tuple(str(c) for c in range(classes)))


def test_average_kwise_accuracy_is_at_least_the_c_way_accuracy() -> None:
    g = torch.Generator().manual_seed(0)
    classes = 8
    train, test = _split(60, classes, 1), _split(60, classes, 2)
    encoder = _FirstOutput(torch.randn(8, 16, generator=g))
    res = evaluate_encoder(
        encoder, train=train, test=test, linear=False, knn=False, kwise=(1, 3), kwise_tasks=300
    )
    m = res.metrics
    assert m["mean_top1"] < 0.99  # a non-trivial fixture
    assert m["kwise1_top1"] >= m["mean_top1"] - 1e-9
    assert m["kwise3_top1"] >= m["mean_top1"] - 1e-9
    assert m["kwise1_top1"] >= m["kwise3_top1"] - 0.02  # fewer classes per task: not harder
