"""A modality that implements what a modality must and does nothing: the base of the modality tests'
variants (one place, so a member added to the interface is added here once)."""

from __future__ import annotations

from typing import Any

import torch

from hardneg.data.vectors import LabeledVectors
from hardneg.modalities import TwoViewModality


class StubModality(TwoViewModality[LabeledVectors, LabeledVectors]):
    """The members a modality must implement, doing nothing."""

    name = "stub"
    datasets = ("stub-data",)

    def load(self, cfg: Any) -> tuple[LabeledVectors, LabeledVectors]:
        raise NotImplementedError

    def dataset(self, cfg: Any, train: LabeledVectors) -> Any:
        raise NotImplementedError

    def build_encoder(self, cfg: Any, train: LabeledVectors) -> torch.nn.Module:
        raise NotImplementedError
