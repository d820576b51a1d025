"""The triplet loss with margin η (Jiang et al., arXiv:2111.03169, §IV) on weighted negatives."""

from __future__ import annotations

import torch
from torch import Tensor

from hardneg._validation import check_positive
from hardneg.negatives.ramp import Ramp
from hardneg.negatives.weighted import WeightedScores
from hardneg.objectives.base import Objective

__all__ = ["TRIPLET_AGGREGATES", "Triplet"]

TRIPLET_AGGREGATES = ("mean", "mean_difference")


class Triplet(Objective):
    r"""Triplet loss ``max(0, 2v + η)``, ``v = f(x)ᵀf(x⁻) − f(x)ᵀf(x⁺)`` (Jiang et al., §IV).

    On the unit sphere ``2v = ‖f(x) − f(x⁺)‖² − ‖f(x) − f(x⁻)‖²``, so this is the classic
    triplet loss with margin η. With ``v_ij = s_ij − s⁺_i`` (logits; t = 1 gives the paper's
    inner products) and ``q_ij = w_ij / N_i`` the negative distribution:

    - ``aggregate="mean"`` (default): the expected triplet loss over ``x⁻ ∼ q``,
      ``L_i = Σ_j q_ij max(0, 2 v_ij + η)`` — the paper's loss with its negative drawn from q.
    - ``aggregate="mean_difference"``: ``L_i = max(0, 2 Σ_j q_ij v_ij + η)``, the hinge of the
      mean difference (a lower bound by Jensen; it is the quantity the min-max analysis of
      Theorem 1 reduces to, min-max value η).

    Args:
        margin: η ≥ 0 (default 1).
        aggregate: ``"mean"`` (default) or ``"mean_difference"``.

    Shapes:
        ``weighted`` with A anchors × N candidates → (A,).

    References:
        Jiang, Ishwar, Aeron, *Hard Negative Sampling via Regularized Optimal Transport for
        Contrastive Representation Learning*, arXiv:2111.03169, §IV and Theorem 1; Schroff,
        Kalenichenko, Philbin, *FaceNet*, CVPR 2015 (the triplet loss).

    Example:
        >>> import torch
        >>> from hardneg import ContrastiveLoss
        >>> from hardneg.negatives import OptimalTransport
        >>> from hardneg.objectives import Triplet
        >>> triplet = ContrastiveLoss(temperature=1.0, negatives=OptimalTransport(epsilon=0.5),
        ...                           objective=Triplet(margin=1.0))
        >>> bool(triplet(torch.randn(8, 16), torch.randn(8, 16)) >= 0)
        True
    """

    row_reducible = True  # reads only s⁺_i and E_q[h(s − s⁺)]: the tiled engine computes them

    def __init__(self, *, margin: float = 1.0, aggregate: str = "mean"):
        super().__init__()
        self.margin = check_positive("margin", margin, strict=False)
        if aggregate not in TRIPLET_AGGREGATES:
            raise ValueError(f"aggregate must be one of {TRIPLET_AGGREGATES}, got {aggregate!r}")
        self.aggregate = aggregate

    def forward(self, weighted: WeightedScores) -> Tensor:
        if self.aggregate == "mean":
            return weighted.mean_of(Ramp(scale=2.0, offset=self.margin))
        mean_v = weighted.mean_of(Ramp(scale=1.0, offset=0.0, clip=False))
        return torch.clamp_min(2.0 * mean_v + self.margin, 0.0)

    def _config(self) -> dict[str, object]:
        return {"margin": self.margin, "aggregate": self.aggregate}
