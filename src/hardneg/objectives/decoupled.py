"""The decoupled contrastive objective (DCL) and its von Mises–Fisher weighting (DCLW).

Yeh, Hong, Hsu, Liu, Chen and LeCun, *Decoupled Contrastive Learning*, ECCV 2022: removing the
positive from InfoNCE's denominator removes the "negative–positive coupling" factor from the
gradient, so the loss needs no large batch. With the importance weights of any negative
distribution (mean 1 over each anchor's valid candidates) the denominator is the weighted sum
of the distribution, so hard, debiased-free, K-subsampled or optimal-transport negatives compose
with it unchanged.
"""

from __future__ import annotations

import torch
from torch import Tensor

from hardneg._validation import check_positive
from hardneg.negatives.weighted import WeightedScores
from hardneg.objectives.base import Objective

__all__ = ["Decoupled", "decoupled", "von_mises_fisher_weights"]


def decoupled(
    log_weighted_sum: Tensor, positive: Tensor, positive_weight: Tensor | None = None
) -> Tensor:
    r"""Per-anchor decoupled contrastive loss (Yeh et al., ECCV 2022, the loss L_DC; DCLW, L_DCW).

        L_i = −w_i s⁺_i + log Σ_{j valid} w_ij e^{s_ij},

    the positive absent from the log-sum-exp; ``w_i = 1`` without ``positive_weight`` (DCL).

    Args:
        log_weighted_sum: ``log Σ_j w_ij e^{s_ij}`` over each anchor's valid negatives.
        positive: the positive logits ``s⁺_i = ⟨a_i, p_i⟩ / t``.
        positive_weight: DCLW's weight of each positive term (:func:`von_mises_fisher_weights`).

    Shapes:
        all (A,) → (A,).

    References:
        Yeh et al., *Decoupled Contrastive Learning*, ECCV 2022: the decoupled loss L_DC and its
        weighted form L_DCW.

    Example:
        >>> import torch
        >>> decoupled(torch.tensor([0.0]), torch.tensor([1.0]))
        tensor([-1.])
    """
    pos = positive if positive_weight is None else positive_weight * positive
    return log_weighted_sum - pos


def von_mises_fisher_weights(similarity: Tensor, sigma: float) -> Tensor:
    r"""DCLW's negative von Mises–Fisher weights of the positive terms (Yeh et al., ECCV 2022).

        w_i = 2 − A · e^{u_i / σ} / Σ_k e^{u_k / σ},   u_i = ⟨a_i, p_i⟩,

    over the A anchors of the batch (mean 1): easy positives (large ``u_i``) weigh less. The weights
    are a function of ``similarity`` and carry its gradient (:class:`Decoupled`'s ``detach_weights``
    makes them constants). In SimCLR's 2B-anchor layout, where both views of a pair have the same
    ``u``, the 2B-anchor weights equal each view's B-anchor ones.

    Args:
        similarity: ``u_i``, the positive pairs' inner products (cosines for unit embeddings).
        sigma: the concentration σ > 0 (0.5 in the paper).

    Shapes:
        (A,) → (A,).

    References:
        Yeh et al., *Decoupled Contrastive Learning*, ECCV 2022: the negative von Mises–Fisher
        weighting of L_DCW.

    Example:
        >>> import torch
        >>> von_mises_fisher_weights(torch.tensor([0.5, 0.5]), sigma=0.5)
        tensor([1., 1.])
    """
    return 2.0 - similarity.shape[0] * torch.softmax(similarity / sigma, dim=0)


class Decoupled(Objective):
    r"""The decoupled contrastive objective: InfoNCE without the positive in its denominator.

    ``L_i = −w_i s⁺_i + log Σ_j w_ij e^{s_ij}`` (:func:`decoupled`) with the log importance
    weights of the chosen negative distribution; ``sigma=None`` is DCL (``w_i = 1``), a float is
    DCLW with :func:`von_mises_fisher_weights` over the call's anchors (the local ones under
    DDP). It reads only per-anchor statistics, so every engine (materialised, tiled, gathered)
    computes it. Each anchor needs at least one valid negative (the loss checks it).

    In SimCLR's layout the mean over the 2B anchors is the mean of the two one-way losses (the
    reference implementation sums the two directions: twice this value).

    Whether DCLW's weights carry a gradient the paper does not say (its L_DCW only defines them), and
    we found no implementation released by its authors: the one libraries cite as the reference,
    ``raminnakhli/Decoupled-Contrastive-Learning`` (``loss/dcl.py``, ``DCLW``'s ``weight_fn``),
    back-propagates through them, which is the default here (``detach_weights=False``);
    ``detach_weights=True`` treats them as constants, as lightly's ``DCLWLoss``
    (``lightly/loss/dcl_loss.py``, ``negative_mises_fisher_weights``) does. The values are equal;
    the gradients differ by the weights' own term, ``−Σ_i s⁺_i ∇w_i``.

    Args:
        sigma: DCLW's von Mises–Fisher concentration (the paper uses 0.5); ``None``: DCL.
        detach_weights: DCLW's weights as constants in the backward pass (default ``False``: they
            carry their gradient, as in the reference implementation); ignored without ``sigma``.

    Shapes:
        ``weighted`` with A anchors → (A,).

    References:
        Yeh, Hong, Hsu, Liu, Chen, LeCun, *Decoupled Contrastive Learning*, ECCV 2022: the
        decoupled loss L_DC and its weighted form L_DCW; the reference implementation
        ``github.com/raminnakhli/Decoupled-Contrastive-Learning``, ``loss/dcl.py`` (``DCLW``);
        lightly's ``DCLWLoss`` (``github.com/lightly-ai/lightly``, ``lightly/loss/dcl_loss.py``).

    Example:
        >>> import torch
        >>> from hardneg import ContrastiveLoss, negatives
        >>> z1, z2 = torch.randn(8, 4), torch.randn(8, 4)
        >>> dcl = ContrastiveLoss(temperature=0.1, objective=Decoupled())
        >>> hard_dclw = ContrastiveLoss(temperature=0.1, objective=Decoupled(sigma=0.5),
        ...                             negatives=negatives.Hard(beta=1.0))
        >>> bool(torch.isfinite(dcl(z1, z2))) and bool(torch.isfinite(hard_dclw(z1, z2)))
        True
    """

    row_reducible = True  # reads s⁺_i, t and log Σ_j w_ij e^{s_ij} only

    def __init__(self, *, sigma: float | None = None, detach_weights: bool = False):
        super().__init__()
        self.sigma = None if sigma is None else check_positive("sigma", sigma)
        if not isinstance(detach_weights, bool):
            raise ValueError(f"detach_weights must be a bool (True or False), got {detach_weights!r}")
        self.detach_weights = detach_weights

    def forward(self, weighted: WeightedScores) -> Tensor:
        s = weighted.scores
        weight = None
        if self.sigma is not None:
            weight = von_mises_fisher_weights(s.positive * s.temperature, self.sigma)
            if self.detach_weights:
                weight = weight.detach()
        return decoupled(weighted.log_weighted_sum, s.positive, weight)

    def _config(self) -> dict[str, object]:
        config: dict[str, object] = {"sigma": self.sigma}
        if self.detach_weights:
            config["detach_weights"] = True
        return config
