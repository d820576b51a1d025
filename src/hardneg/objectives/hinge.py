"""Arora et al.'s k-way hinge loss (ICML 2019, §2, Def. 2.3)."""

from __future__ import annotations

import torch
from torch import Tensor

from hardneg._validation import check_positive
from hardneg.negatives.ramp import Ramp
from hardneg.negatives.weighted import WeightedScores
from hardneg.objectives.base import Objective

__all__ = ["AGGREGATES", "Hinge", "hinge_max"]

AGGREGATES = ("max", "mean")


def hinge_max(differences: Tensor, mask: Tensor, *, margin: float = 1.0) -> Tensor:
    """``max{0, margin + max_{valid i} (−v_i)}`` per row: the k-way hinge of ``v``.

    Args:
        differences: ``v_i = f(x)ᵀ(f(x⁺) − f(x⁻_i))`` of each row's k negatives.
        mask: which of the k entries are valid (at least one per row).
        margin: the hinge's margin (default 1, the paper's).

    Shapes:
        ``differences`` (A, k), ``mask`` (A, k) bool → (A,).

    References:
        Arora, Khandeparkar, Khodak, Plevrakis, Saunshi, *A Theoretical Analysis of Contrastive
        Unsupervised Representation Learning*, ICML 2019, §2, Def. 2.3.

    Example:
        >>> import torch
        >>> hinge_max(torch.tensor([[2.0, 0.5], [3.0, 4.0]]), torch.ones(2, 2, dtype=torch.bool))
        tensor([0.5000, 0.0000])
    """
    worst = (-differences).masked_fill(~mask, float("-inf")).amax(dim=1)
    return torch.clamp_min(margin + worst, 0.0)


class Hinge(Objective):
    r"""Arora et al.'s hinge loss on the differences ``v_ij = s⁺_i − s_ij``.

    ``aggregate="max"`` (Arora et al., ICML 2019, Def. 2.3 with k = N_i negatives):

        L_i = max{0, margin + max_{j valid} (s_ij − s⁺_i)}.

    The max has no place for importance weights, so this mode accepts only distributions with
    uniform weights — :class:`~hardneg.negatives.Uniform` and mask-changing ones such as
    :class:`~hardneg.negatives.Subsample` (K random negatives, the paper's k) or
    :class:`~hardneg.negatives.CollisionFree` — and raises ``ValueError`` otherwise.

    ``aggregate="mean"`` (the paper's k = 1 loss in expectation over the negative distribution;
    accepts any weights):

        L_i = Σ_j q_ij max{0, margin + s_ij − s⁺_i},   q_ij = w_ij / N_i.

    Logits at t = 1 are the paper's inner products ``f(x)ᵀf(x')``; ``margin`` is in logit units.

    Args:
        margin: the hinge's margin ≥ 0 (default 1, the paper's).
        aggregate: ``"max"`` (default) or ``"mean"``.

    Shapes:
        ``weighted`` with A anchors × N candidates → (A,).

    References:
        Arora, Khandeparkar, Khodak, Plevrakis, Saunshi, *A Theoretical Analysis of Contrastive
        Unsupervised Representation Learning*, ICML 2019, §2, Def. 2.3.

    Example:
        >>> import torch
        >>> from hardneg import ContrastiveLoss
        >>> from hardneg.negatives import Hard
        >>> from hardneg.objectives import Hinge
        >>> worst = ContrastiveLoss(temperature=1.0, objective=Hinge(margin=1.0))
        >>> expected = ContrastiveLoss(temperature=1.0, objective=Hinge(aggregate="mean"),
        ...                            negatives=Hard(beta=1.0))
        >>> z1, z2 = torch.randn(8, 16), torch.randn(8, 16)
        >>> bool(worst(z1, z2) >= 0) and bool(expected(z1, z2) >= 0)
        True
    """

    row_reducible = True  # reads only s⁺_i, max_j s_ij and E_q[h(s − s⁺)]: the tiled engine computes them

    def __init__(self, *, margin: float = 1.0, aggregate: str = "max"):
        super().__init__()
        self.margin = check_positive("margin", margin, strict=False)
        if aggregate not in AGGREGATES:
            raise ValueError(f"aggregate must be one of {AGGREGATES}, got {aggregate!r}")
        self.aggregate = aggregate

    def forward(self, weighted: WeightedScores) -> Tensor:
        if self.aggregate == "max":
            if not weighted.uniform:
                raise ValueError(
                    "Hinge(aggregate='max') takes the max over negatives and cannot use importance "
                    f"weights; got negatives={weighted.source or 'a distribution'} with non-uniform weights "
                    "(use aggregate='mean', or Uniform/Subsample/CollisionFree negatives)"
                )
            return torch.clamp_min(self.margin + weighted.max_logit() - weighted.scores.positive, 0.0)
        return weighted.mean_of(Ramp(scale=1.0, offset=self.margin))

    def _config(self) -> dict[str, object]:
        return {"margin": self.margin, "aggregate": self.aggregate}
