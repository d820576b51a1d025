"""``Ramp``: the pointwise loss ``h(v)`` of the hinge/triplet family, on ``v = s_ij − s⁺_i``.

Shared by the materialised path (:meth:`~hardneg.negatives.WeightedScores.mean_of`) and the
tiled engine (:func:`~hardneg.engines.tiled.rowmean.tiled_row_mean`), so both evaluate the same ``h``
and ``h'``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

__all__ = ["Ramp"]


@dataclass(frozen=True)
class Ramp:
    """``h(v) = max(0, scale·v + offset)``, or ``scale·v + offset`` when ``clip=False``.

    Hinge (mean form): ``Ramp(scale=1, offset=margin)``; triplet: ``Ramp(scale=2, offset=η)``;
    the triplet's mean difference: ``Ramp(scale=1, offset=0, clip=False)``.
    """

    scale: float = 1.0
    offset: float = 0.0
    clip: bool = True

    def value(self, v: Tensor) -> Tensor:
        """``h(v)`` elementwise."""
        x = v * self.scale + self.offset
        return x.clamp_min(0.0) if self.clip else x

    def slope(self, v: Tensor) -> Tensor:
        """``h'(v)`` elementwise (0 at the kink, as autograd's ``clamp_min`` has it)."""
        if not self.clip:
            return torch.full_like(v, self.scale)
        return torch.where(v * self.scale + self.offset > 0, self.scale, 0.0).to(v.dtype)
