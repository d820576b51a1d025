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
    (the paper's Table I row "L_BCL"). Unbounded below with unnormalised embeddings.
    """

    def forward(self, weighted: WeightedScores) -> Tensor:
        scores = weighted.scores
        return weighted.weighted_mean(scores.logits) - scores.positive
