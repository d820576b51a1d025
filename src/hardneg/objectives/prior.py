"""τ⁺ from the data: the class prior of the debiased objective estimated during training.

Chuang et al. (NeurIPS 2020) and Robinson et al. (ICLR 2021) treat τ⁺ — the probability that a
negative shares the anchor's latent class — as known. Here it is estimated as a **mixture
proportion** in the positive–unlabelled (PU) setting: the positive scores ``s⁺_i`` are a labelled
sample of "same class" similarities, and the candidate scores ``s_ij`` an unlabelled sample from

    U = τ⁺ P + (1 − τ⁺) Q,       P: same-class similarities,  Q: other-class similarities.

For any threshold t, ``F̄_U(t) / F̄_P(t) = τ⁺ + (1 − τ⁺) F̄_Q(t) / F̄_P(t) ≥ τ⁺`` (``F̄`` the upper
tail ``P(s ≥ t)``), with equality where Q has no mass above t relative to P ("irreducibility").
The estimator of Blanchard, Lee & Scott (JMLR 2010, §4) and Scott (AISTATS 2015), restricted to
thresholds on the upper ``1 − min_fraction`` of the labelled scores, is

    τ̂ = min_{t ∈ T} F̂_U(t) / F̂_L(t),    T = { s⁺ values with F̂_L(t) ≥ min_fraction },

clipped to ``[0, tau_max]``. It is invariant to any increasing transform of the scores (the
temperature, for instance). Where the classes overlap (Q has mass wherever P has), the ratio never
reaches τ⁺ and τ̂ is biased upwards; the minimum over noisy ratios biases it slightly downwards on
small batches. **Caveat**: it assumes the labelled positives are drawn from P. With
true positives (another sample of the class: Arora et al.'s latent-class model, oracle
positives) that holds; an *augmented view* of the same item is more similar than another item of
the class, F̂_L dominates P's tail and τ̂ is biased towards 0.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

__all__ = ["TauPlusEstimator", "mixture_proportion"]

_MAX_UNLABELLED = 1 << 18  # candidate scores kept per update (an even stride through the valid ones)


def mixture_proportion(labelled: Tensor, unlabelled: Tensor, *, min_fraction: float = 0.1) -> float:
    """``τ̂ = min_t F̂_U(t) / F̂_L(t)`` over the thresholds ``t`` of the module docstring.

    Args:
        labelled: 1-d scores of the labelled sample (positives), at least one.
        unlabelled: 1-d scores of the unlabelled sample (candidates), at least one.
        min_fraction: ``(0, 1]``; only thresholds with at least this fraction of the labelled
            scores at or above them are used (the ratio is noisy where ``F̂_L`` is small).

    Returns the estimate in ``[0, 1]`` (a float; no gradient). Ties count as "at or above".

    Shapes:
        ``labelled`` (M,), ``unlabelled`` (U,) → a float.

    References:
        Blanchard, Lee, Scott, *Semi-Supervised Novelty Detection*, JMLR 11, 2010, §4; Scott,
        *A Rate of Convergence for Mixture Proportion Estimation, with Application to Learning
        from Noisy Labels*, AISTATS 2015.

    Example:
        >>> import torch
        >>> positives, candidates = torch.tensor([1.0, 2.0, 3.0, 4.0]), torch.tensor([0.0, 0.5, 3.5, 4.5])
        >>> mixture_proportion(positives, candidates, min_fraction=0.5)
        0.5
    """
    for name, x in (("labelled", labelled), ("unlabelled", unlabelled)):
        if not isinstance(x, Tensor) or x.dim() != 1 or x.numel() == 0:
            got = f"shape {tuple(x.shape)}" if isinstance(x, Tensor) else type(x).__name__
            raise ValueError(f"{name} must be a non-empty 1-d tensor of scores, got {got}")
    if isinstance(min_fraction, bool) or not 0.0 < float(min_fraction) <= 1.0:
        raise ValueError(f"min_fraction must be in (0, 1], got {min_fraction!r}")
    lab = labelled.detach().double().sort(descending=True).values
    unl = unlabelled.detach().double().sort().values
    n_l, n_u = lab.numel(), unl.numel()
    first = max(1, math.ceil(float(min_fraction) * n_l - 1e-9))
    # labelled / unlabelled scores at or above each labelled score (ties count as "at or above")
    at_or_above_l = torch.searchsorted(-lab, -lab, right=True).double()
    at_or_above_u = n_u - torch.searchsorted(unl, lab, right=False).double()
    ratio = (at_or_above_u / n_u) / (at_or_above_l / n_l)
    usable = at_or_above_l >= first
    return float(ratio[usable].min().clamp(0.0, 1.0))


class TauPlusEstimator(nn.Module):
    """A running estimate of τ⁺ from each training batch's scores (see the module docstring).

    ``update(positive, logits, mask)`` estimates ``τ̂`` on the batch (positives as the labelled
    sample, the valid candidate logits as the unlabelled one), smooths it as
    ``v ← m v + (1 − m) τ̂`` (the first batch sets ``v = τ̂``) and returns ``v`` clipped to
    ``[0, tau_max]``. The estimate is a buffer: it is saved in checkpoints and restored on resume.

    Args:
        momentum: ``m ∈ [0, 1)`` of the exponential smoothing over steps.
        min_fraction: see :func:`mixture_proportion`.
        tau_max: upper clip ``(0, 1)`` (the debiased numerator needs ``τ⁺ < 1``).

    Shapes:
        :meth:`update`: ``positive`` (A,), ``logits`` (A, N), ``mask`` (A, N) bool → a float.

    References:
        Blanchard, Lee, Scott, JMLR 11, 2010, §4 and Scott, AISTATS 2015 (mixture proportion
        estimation); τ⁺ as in Chuang et al., *Debiased Contrastive Learning*, NeurIPS 2020, §3.

    Example:
        >>> import torch
        >>> from hardneg.objectives import TauPlusEstimator
        >>> est = TauPlusEstimator(momentum=0.5)
        >>> logits = torch.tensor([[4.0, 0.0, 0.5], [4.5, 1.0, 0.0]])
        >>> est.update(torch.tensor([1.0, 2.0]), logits, torch.ones(2, 3, dtype=torch.bool)) <= est.tau_max
        True
    """

    value: Tensor
    updates: Tensor

    def __init__(self, *, momentum: float = 0.9, min_fraction: float = 0.1, tau_max: float = 0.5) -> None:
        super().__init__()
        if isinstance(momentum, bool) or not 0.0 <= float(momentum) < 1.0:
            raise ValueError(f"momentum must be in [0, 1), got {momentum!r}")
        if isinstance(min_fraction, bool) or not 0.0 < float(min_fraction) <= 1.0:
            raise ValueError(f"min_fraction must be in (0, 1], got {min_fraction!r}")
        if isinstance(tau_max, bool) or not 0.0 < float(tau_max) < 1.0:
            raise ValueError(f"tau_max must be in (0, 1), got {tau_max!r}")
        self.momentum = float(momentum)
        self.min_fraction = float(min_fraction)
        self.tau_max = float(tau_max)
        self.register_buffer("value", torch.zeros((), dtype=torch.float64))
        self.register_buffer("updates", torch.zeros((), dtype=torch.long))

    @property
    def current(self) -> float:
        """The smoothed estimate, clipped to ``[0, tau_max]`` (0 before the first update)."""
        return min(max(float(self.value), 0.0), self.tau_max)

    @torch.no_grad()
    def update(self, positive: Tensor, logits: Tensor, mask: Tensor) -> float:
        """Fold one batch in: ``positive`` (A,), ``logits`` (A, N), ``mask`` (A, N) bool.

        Returns :attr:`current`.
        """
        unlabelled = logits.detach()[mask]
        if unlabelled.numel() == 0:
            return self.current
        if unlabelled.numel() > _MAX_UNLABELLED:
            stride = math.ceil(unlabelled.numel() / _MAX_UNLABELLED)
            unlabelled = unlabelled[::stride]
        labelled = positive.detach().reshape(-1)
        estimate = mixture_proportion(labelled, unlabelled, min_fraction=self.min_fraction)
        if int(self.updates) == 0:
            self.value.fill_(estimate)
        else:
            self.value.mul_(self.momentum).add_((1.0 - self.momentum) * estimate)
        self.updates.add_(1)
        return self.current

    def extra_repr(self) -> str:
        return f"momentum={self.momentum}, min_fraction={self.min_fraction}, tau_max={self.tau_max}"
