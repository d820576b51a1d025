"""InfoGraph's Jensen–Shannon objective with weighted (and debiased) negatives.

Robinson et al. (ICLR 2021), App. B; Sun et al., InfoGraph (ICLR 2020); the estimator of
Nowozin et al. (NeurIPS 2016); the debiasing of Chuang et al. (NeurIPS 2020).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from hardneg._validation import check_in_interval
from hardneg.negatives.weighted import WeightedScores
from hardneg.objectives.base import Objective

__all__ = ["JensenShannon", "debiased_softplus_negative"]

LOG4 = 1.3862943611198906


def debiased_softplus_negative(
    weighted_mean_sp: Tensor, positive: Tensor, *, tau_plus: float
) -> tuple[Tensor, Tensor]:
    r"""The debiased negative term of the Jensen–Shannon objective and where its floor binds.

    The in-batch (or q-weighted) expectation ``E_q[sp(s)]`` mixes true negatives with same-class
    candidates in proportion τ⁺; as in Chuang et al. (NeurIPS 2020), eq. (6), the true-negative
    expectation is estimated by removing the positive's share:

        Neg_i = max( (Σ_j q_ij sp(s_ij) − τ⁺ sp(s⁺_i)) / (1 − τ⁺),  0 ),

    with ``sp(z) = log(1 + e^z)``. The floor 0 is the infimum of ``sp`` (the counterpart of the
    ``e^{−1/t}`` floor of the NCE form, whose scores are bounded). τ⁺ = 0 returns the weighted
    mean unchanged (the floor cannot bind).

    Shapes: ``weighted_mean_sp`` (A,), ``positive`` (A,) → ``(Neg (A,), floor_active (A,) bool)``.
    """
    if tau_plus == 0.0:
        return weighted_mean_sp, torch.zeros_like(weighted_mean_sp, dtype=torch.bool)
    raw = (weighted_mean_sp - tau_plus * F.softplus(positive)) / (1.0 - tau_plus)
    return raw.clamp_min(0.0), raw <= 0.0


class JensenShannon(Objective):
    r"""Negative of the Jensen–Shannon MI estimator, negatives from the negative distribution.

    Robinson et al. (ICLR 2021), App. B.2 (Nowozin et al.'s JSD estimator as used by InfoGraph,
    Sun et al., ICLR 2020) with the discriminator ``T`` = the logits and ``sp(z) = log(1 + e^z)``:

        L_i = sp(−s⁺_i) + Neg_i,   Neg_i = Σ_{j valid} q_ij sp(s_ij),   q_ij = w_ij / N_i,

    i.e. ``L_align + L_unif(q)`` with ``q = q_β`` for :class:`~hardneg.negatives.Hard` (HCL's
    graph experiments, with ``rescale=True`` for unnormalised embeddings). With ``tau_plus > 0``
    the negative term is debiased (:func:`debiased_softplus_negative`): the JSD counterpart of
    Robinson et al.'s eq. (4), with τ⁺ the class prior. InfoGraph's code subtracts the constant
    ``2 log 2`` (set ``subtract_log4=True`` to match its values). Use a temperature of 1 (the
    discriminator's raw score). For graphs see :class:`hardneg.infograph.InfoGraphLoss`.

    Args:
        tau_plus: class prior τ⁺ ∈ [0, 1) of the debiased estimator (0: not debiased).
        subtract_log4: subtract ``2 log 2`` so that an uninformative discriminator (T ≡ 0)
            gives 0 when τ⁺ = 0, as InfoGraph's ``get_positive_expectation`` /
            ``get_negative_expectation``.

    Shapes:
        ``weighted`` with A anchors × N candidates → (A,).

    References:
        Sun, Hoffmann, Verma, Tang, *InfoGraph: Unsupervised and Semi-supervised Graph-Level
        Representation Learning via Mutual Information Maximization*, ICLR 2020; Hjelm et al.,
        *Learning Deep Representations by Mutual Information Estimation and Maximization*,
        ICLR 2019 (the JSD estimator); Nowozin, Cseke, Tomioka, *f-GAN*, NeurIPS 2016;
        Robinson, Chuang, Sra, Jegelka, ICLR 2021, App. B.2; Chuang et al., NeurIPS 2020, §3.

    Example:
        >>> import torch
        >>> from hardneg import ContrastiveLoss
        >>> from hardneg.negatives import Hard
        >>> from hardneg.objectives import JensenShannon
        >>> jsd = ContrastiveLoss(temperature=1.0, normalize=False, objective=JensenShannon(tau_plus=0.1),
        ...                       negatives=Hard(beta=1.0, rescale=True))
        >>> loss = jsd(torch.randn(8, 16), torch.randn(8, 16))
        >>> loss.shape, bool(torch.isfinite(loss))
        (torch.Size([]), True)
    """

    def __init__(self, *, tau_plus: float = 0.0, subtract_log4: bool = False):
        super().__init__()
        self.tau_plus = check_in_interval("tau_plus", tau_plus, low=0.0, high=1.0)
        self.subtract_log4 = bool(subtract_log4)

    def negative_term(self, weighted: WeightedScores) -> tuple[Tensor, Tensor]:
        """``(Neg_i, floor_active_i)``, shapes (A,)."""
        mean_sp = weighted.weighted_mean(F.softplus(weighted.scores.logits))
        return debiased_softplus_negative(mean_sp, weighted.scores.positive, tau_plus=self.tau_plus)

    def forward(self, weighted: WeightedScores) -> Tensor:
        neg, _ = self.negative_term(weighted)
        loss = F.softplus(-weighted.scores.positive) + neg
        return loss - LOG4 if self.subtract_log4 else loss

    def diagnostics(self, weighted: WeightedScores) -> dict[str, float]:
        """``clamp_fraction``: the fraction of anchors whose debiased floor (0) binds."""
        if self.tau_plus == 0.0:
            return {}
        _, active = self.negative_term(weighted)
        return {"clamp_fraction": float(active.float().mean())}

    def _config(self) -> dict[str, object]:
        return {"tau_plus": self.tau_plus, "subtract_log4": self.subtract_log4}
