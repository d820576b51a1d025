"""Logistic losses on weighted negatives: the OT paper's m-pair form and Arora et al.'s."""

from __future__ import annotations

import math

import torch.nn.functional as F
from torch import Tensor

from hardneg._validation import check_positive
from hardneg.negatives.weighted import WeightedScores
from hardneg.objectives.base import Objective

__all__ = ["Logistic", "LogisticMPair"]


class LogisticMPair(Objective):
    r"""The m-pair multiclass logistic loss with weight q (Jiang et al., arXiv:2111.03169, eq. (1)).

        L_i = log(1 + (q/N_i) Σ_{j valid} w_ij e^{v_ij}),   v_ij = s_ij − s⁺_i,

    i.e. ``(q/m) Σ_i e^{v_i}`` with the m = N_i negatives drawn from the negative distribution,
    written as the importance-weighted sum (``w`` mean one). Computed as
    ``softplus(log Σ_j w_ij e^{s_ij} + log q − log N_i − s⁺_i)``. The paper's inner products are
    the logits at temperature t = 1 on normalised embeddings. Its min-max value (constant f)
    is ``log(1 + q)`` (Jiang et al., Theorem 1). Equal to :class:`~hardneg.objectives.InfoNCE`
    with a fixed ``q``; choose it to follow the OT paper's notation and defaults (q = 1).

    Args:
        q: weight q > 0 of the negative term (default 1).

    Shapes:
        ``weighted`` with A anchors × N candidates → (A,).

    References:
        Jiang, Ishwar, Aeron, *Hard Negative Sampling via Regularized Optimal Transport for
        Contrastive Representation Learning*, arXiv:2111.03169, eq. (1) and Theorem 1.

    Example:
        >>> import torch
        >>> from hardneg import ContrastiveLoss
        >>> from hardneg.negatives import OptimalTransport
        >>> from hardneg.objectives import LogisticMPair
        >>> ot = ContrastiveLoss(temperature=1.0, negatives=OptimalTransport(epsilon=0.5),
        ...                      objective=LogisticMPair(q=1.0))
        >>> bool(torch.isfinite(ot(torch.randn(8, 16), torch.randn(8, 16))))
        True
    """

    row_reducible = True  # reads only s⁺_i, N_i and log Σ_j w_ij e^{s_ij}: the tiled engine computes it

    def __init__(self, *, q: float = 1.0):
        super().__init__()
        self.q = check_positive("q", q)

    def forward(self, weighted: WeightedScores) -> Tensor:
        scores = weighted.scores
        log_neg = weighted.log_weighted_sum + math.log(self.q) - scores.num_valid().log()
        return F.softplus(log_neg - scores.positive)

    def _config(self) -> dict[str, object]:
        return {"q": self.q}


class Logistic(Objective):
    r"""Arora et al.'s k-way logistic loss (ICML 2019, §2, Def. 2.3) with weighted negatives.

        L_i = log_base(1 + Σ_{j valid} w_ij e^{−v_ij}),   v_ij = s⁺_i − s_ij,

    the logistic loss ``ℓ(v) = log₂(1 + Σ_i e^{−v_i})`` applied to the vector of differences
    ``v_i = f(x)ᵀ(f(x⁺) − f(x⁻_i))`` (logits at t = 1, unnormalised in the paper). Weights enter
    inside the sum, so uniform weights give the paper's sum over the k = N_i negatives and
    ``w`` the importance-weighted estimate of k draws from the negative distribution. With
    ``base = e`` this is NT-Xent on the same negatives; ``base = 2`` is the paper's normalisation
    (the bound's ``log₂(1 + k)`` at v = 0).

    Args:
        base: logarithm base > 1 (default e; the paper uses 2).

    Shapes:
        ``weighted`` with A anchors × N candidates → (A,).

    References:
        Arora, Khandeparkar, Khodak, Plevrakis, Saunshi, *A Theoretical Analysis of Contrastive
        Unsupervised Representation Learning*, ICML 2019, §2, Def. 2.3.

    Example:
        >>> import torch
        >>> from hardneg import ContrastiveLoss
        >>> from hardneg.objectives import InfoNCE, Logistic
        >>> z1, z2 = torch.randn(8, 16), torch.randn(8, 16)
        >>> natural = ContrastiveLoss(temperature=0.5, objective=Logistic())
        >>> nt_xent = ContrastiveLoss(temperature=0.5, objective=InfoNCE())
        >>> bool(torch.allclose(natural(z1, z2), nt_xent(z1, z2)))
        True
    """

    row_reducible = True  # reads only s⁺_i, N_i and log Σ_j w_ij e^{s_ij}: the tiled engine computes it

    def __init__(self, *, base: float = math.e):
        super().__init__()
        b = check_positive("base", base)
        if b <= 1.0:
            raise ValueError(f"base must be a finite number > 1, got {base!r}")
        self.base = b

    def forward(self, weighted: WeightedScores) -> Tensor:
        scores = weighted.scores
        return F.softplus(weighted.log_weighted_sum - scores.positive) / math.log(self.base)

    def _config(self) -> dict[str, object]:
        return {"base": self.base}
