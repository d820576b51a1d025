"""A modality defined outside the package (the plug-in example of docs/architecture.md).

Two Gaussian blobs per class in a few dimensions; the positive of an item is another noisy copy of
its class mean; the pairs are the two views (the default :meth:`TwoViewModality.views`). It
registers itself on import, so a config with ``imports: [toy_modality]`` trains
it through ``hardneg train`` without any file of the package knowing about it.
"""

from __future__ import annotations

from typing import Any

import torch
from pydantic import Field

from hardneg.config import DataSection
from hardneg.data.vectors import BatchedPairs, LabeledVectors
from hardneg.modalities import TwoViewModality, register_modality
from hardneg.models.configured import configured_encoder


class ToyData(DataSection):
    """``data`` of the toy modality."""

    size: int = Field(96, ge=8, description="training pairs")
    dim: int = Field(6, ge=1, description="input dimension")
    classes: int = Field(3, ge=2, description="number of classes")


class Toy(TwoViewModality[LabeledVectors, LabeledVectors]):
    name = "toy"
    datasets = ("toy",)
    encoders = ("mlp",)
    section = ToyData

    def load(self, cfg: Any) -> tuple[LabeledVectors, LabeledVectors]:
        d = cfg.data
        g = torch.Generator().manual_seed(cfg.seed)
        means = 3.0 * torch.randn(d.classes, d.dim, generator=g)

        def draw(n: int, positives: bool) -> LabeledVectors:
            labels = torch.arange(n) % d.classes
            x = means[labels] + torch.randn(n, d.dim, generator=g)
            pos = means[labels] + torch.randn(n, d.dim, generator=g) if positives else None
            return LabeledVectors(x, labels, tuple(str(c) for c in range(d.classes)), pos)

        return draw(d.size, True), draw(d.size // 2, False)

    def dataset(self, cfg: Any, train: LabeledVectors) -> BatchedPairs:
        return BatchedPairs(train)

    def build_encoder(self, cfg: Any, train: LabeledVectors) -> torch.nn.Module:
        return configured_encoder(cfg.model, in_dim=int(train.inputs.shape[1]))


register_modality(Toy())
