"""InfoGraph's Jensen–Shannon objective with weighted negatives (Robinson et al., ICLR 2021, App. B)."""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor

from hardneg.negatives.weighted import WeightedScores
from hardneg.objectives.base import Objective

__all__ = ["JensenShannon"]


class JensenShannon(Objective):
    r"""Negative of the Jensen–Shannon MI estimator, negatives from the negative distribution.

    Robinson et al. (ICLR 2021), App. B.2 (Nowozin et al.'s JSD estimator as used by InfoGraph,
    Sun et al., ICLR 2020) with the
    discriminator ``T`` = the logits and ``sp(z) = log(1 + e^z)``:

        L_i = sp(−s⁺_i) + Σ_{j valid} q_ij sp(s_ij),   q_ij = w_ij / N_i,

    i.e. ``L_align + L_unif(q)`` with ``q = q_β`` for :class:`~hardneg.negatives.Hard` (HCL's
    graph experiments, with ``rescale=True`` for unnormalised embeddings). InfoGraph's code
    subtracts the constant ``2 log 2`` (set ``subtract_log4=True`` to match its values).
    Choose it for InfoGraph-style patch/graph mutual-information objectives; use a temperature
    of 1 there (the discriminator's raw score).

    Args:
        subtract_log4: subtract ``2 log 2`` so that an uninformative discriminator (T ≡ 0)
            gives 0, as InfoGraph's ``get_positive_expectation``/``get_negative_expectation``.
    """

    def __init__(self, *, subtract_log4: bool = False):
        super().__init__()
        self.subtract_log4 = bool(subtract_log4)

    def forward(self, weighted: WeightedScores) -> Tensor:
        scores = weighted.scores
        loss = F.softplus(-scores.positive) + weighted.weighted_mean(F.softplus(scores.logits))
        return loss - 1.3862943611198906 if self.subtract_log4 else loss

    def _config(self) -> dict[str, object]:
        return {"subtract_log4": self.subtract_log4}
