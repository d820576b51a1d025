"""InfoNCE / NT-Xent with importance-weighted negatives."""

from __future__ import annotations

import math

import torch.nn.functional as F
from torch import Tensor

from hardneg._validation import check_positive
from hardneg.negatives.weighted import WeightedScores
from hardneg.objectives.base import Objective

__all__ = ["InfoNCE", "info_nce"]


def info_nce(
    log_weighted_sum: Tensor, positive: Tensor, num_valid: Tensor | None, *, q: float | None = None
) -> Tensor:
    r"""Per-anchor NCE loss with weighted negatives (Robinson et al., ICLR 2021, eq. (1)/(3)).

        L_i = −log( e^{s⁺_i} / (e^{s⁺_i} + (Q/N_i) Σ_{j valid} w_ij e^{s_ij}) )
            = softplus( log Σ_j w_ij e^{s_ij} + log(Q/N_i) − s⁺_i ),

    ``Q = N_i`` when ``q`` is None.

    Args:
        log_weighted_sum: ``log Σ_j w_ij e^{s_ij}`` over each anchor's valid negatives.
        positive: the positive logits ``s⁺_i``.
        num_valid: ``N_i``, valid negatives per anchor (read only with ``q``; may be ``None`` without).
        q: a fixed negative weight Q > 0; ``None`` (default): ``Q = N_i``.

    Shapes:
        all (A,) → (A,).

    References:
        Oord, Li, Vinyals, *Representation Learning with Contrastive Predictive Coding*,
        arXiv:1807.03748, 2018, eq. (4); Robinson, Chuang, Sra, Jegelka, ICLR 2021, eq. (1)
        and (3).

    Example:
        >>> import torch
        >>> info_nce(torch.tensor([0.0]), torch.tensor([0.0]), torch.tensor([1.0]))  # −log(1/2)
        tensor([0.6931])
    """
    log_neg = log_weighted_sum
    if q is not None:
        if num_valid is None:
            raise ValueError("num_valid must be given (the N_i of each anchor) with q, got None")
        log_neg = log_neg + math.log(q) - num_valid.log()
    return F.softplus(log_neg - positive)


class InfoNCE(Objective):
    r"""The NCE objective with weighted negatives (:func:`info_nce`).

    ``Q = N_i`` (``q=None``, the default, as in practice) makes uniform weights exactly
    SimCLR's NT-Xent, i.e. cross-entropy over ``[s⁺_i, s_i·]``. A fixed ``q`` gives the weighted
    NCE of Jiang et al. (arXiv:2111.03169), eq. (1), ``log(1 + (q/m) Σ e^{v_i})``.

    Args:
        q: a fixed weight Q > 0 of the negative term; ``None`` (default): ``Q = N_i``.

    Shapes:
        ``weighted`` with A anchors × N candidates → (A,).

    References:
        Oord, Li, Vinyals, *Representation Learning with Contrastive Predictive Coding*,
        arXiv:1807.03748, 2018, eq. (4) (InfoNCE); Chen, Kornblith, Norouzi, Hinton, ICML 2020
        (NT-Xent); Robinson, Chuang, Sra, Jegelka, ICLR 2021, eq. (1) and (3).

    Example:
        >>> import torch
        >>> from hardneg import ContrastiveLoss
        >>> from hardneg.negatives import Hard
        >>> from hardneg.objectives import InfoNCE
        >>> nce = ContrastiveLoss(temperature=0.5, negatives=Hard(beta=0.5), objective=InfoNCE())
        >>> loss = nce(torch.randn(8, 16), torch.randn(8, 16))
        >>> loss.shape, bool(torch.isfinite(loss))
        (torch.Size([]), True)
    """

    row_reducible = True  # reads only s⁺_i, N_i and log Σ_j w_ij e^{s_ij}: the tiled engine computes it
    multi_positive = True  # M positives: s⁺_i = log Σ_m e^{s⁺_im}, L = −log(Σ e^{s⁺} / (Σ e^{s⁺} + Neg))

    def __init__(self, *, q: float | None = None):
        super().__init__()
        self.q = None if q is None else check_positive("q", q)

    def forward(self, weighted: WeightedScores) -> Tensor:
        s = weighted.scores
        # N_i only with a fixed Q: with Q = N_i it cancels (no count is converted per call)
        num_valid = None if self.q is None else s.num_valid()
        return info_nce(weighted.log_weighted_sum, s.positive, num_valid, q=self.q)

    def _config(self) -> dict[str, object]:
        return {"q": self.q}
