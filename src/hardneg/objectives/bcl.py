"""The basic contrastive loss (BCL) of Jiang et al. (arXiv:2111.03169), eq. (9)."""

from __future__ import annotations

from torch import Tensor

from hardneg.negatives.weighted import WeightedScores
from hardneg.objectives.base import Objective

__all__ = ["BasicContrastive"]


class BasicContrastive(Objective):
    r"""``L_BCL = E[f(x)ᵀf(x⁻) − f(x)ᵀf(x⁺)]`` with ``x⁻`` from the negative distribution.

    Per anchor, with ``q_ij = w_ij / N_i``:

        L_i = Σ_{j valid} q_ij s_ij − s⁺_i.

    Linear in the scores: the loss of Lemma 2 / eq. (9) of Jiang et al., whose min-max over
    marginal-consistent couplings is degenerate (value 0 at a constant f); it is meaningful only
    with a regularised negative distribution such as :class:`~hardneg.negatives.OptimalTransport`
    (the paper's Table I row "L_BCL"). Unbounded below with unnormalised embeddings. No
    constructor arguments.

    Shapes:
        ``weighted`` with A anchors × N candidates → (A,).

    References:
        Jiang, Ishwar, Aeron, *Hard Negative Sampling via Regularized Optimal Transport for
        Contrastive Representation Learning*, arXiv:2111.03169, Lemma 2 and eq. (9).

    Example:
        >>> import torch
        >>> from hardneg import ContrastiveLoss
        >>> from hardneg.negatives import OptimalTransport
        >>> from hardneg.objectives import BasicContrastive
        >>> bcl = ContrastiveLoss(temperature=1.0, negatives=OptimalTransport(epsilon=0.5),
        ...                       objective=BasicContrastive(), reduction="none")
        >>> bcl(torch.randn(8, 16), torch.randn(8, 16)).shape
        torch.Size([16])
    """

    def forward(self, weighted: WeightedScores) -> Tensor:
        scores = weighted.scores
        return weighted.weighted_mean(scores.logits) - scores.positive
