"""What an evaluation of a modality returns (:class:`EvalResult`), apart from the seam so that the
engine's readouts (:mod:`hardneg.modalities.readouts`), which the seam imports, can return it too."""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor

__all__ = ["EvalResult"]


@dataclass
class EvalResult:
    """Metrics (name → float), the features they were computed from, and seconds taken."""

    metrics: dict[str, float]
    train_features: Tensor
    test_features: Tensor
    seconds: float
