"""``LossOutput``: what one loss evaluation returns."""

from __future__ import annotations

from dataclasses import dataclass, field

from torch import Tensor

__all__ = ["LossOutput"]


@dataclass(frozen=True)
class LossOutput:
    """The reduced loss, the per-anchor losses (A,) and a dict of diagnostics (plain floats)."""

    loss: Tensor
    per_anchor: Tensor
    diagnostics: dict[str, float] = field(default_factory=dict)
