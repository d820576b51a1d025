"""Hard negatives: the tilted distribution ``q_β(x⁻) ∝ e^{β f(x)ᵀf(x⁻)} p(x⁻)`` of Robinson et al."""

from __future__ import annotations

import torch
from torch import Tensor

from hardneg._lse import masked_logsumexp, masked_tilted_lse
from hardneg._validation import check_beta
from hardneg.negatives.base import NegativeDistribution, normalize_log_weights
from hardneg.negatives.weighted import WeightedScores
from hardneg.scores import Scores

__all__ = ["Hard", "hard_log_weighted_sum", "hard_log_weights", "rescaled_logits"]


def rescaled_logits(logits: Tensor, mask: Tensor) -> Tensor:
    """The clipping trick of Robinson et al. (ICLR 2021), Fig. 14: ``r_ij = 2 s_ij / max_{valid kl} |s_kl|``.

    Rescales a batch of unnormalised logits to ``[−2, 2]`` with the batch-wide maximum, so that
    ``e^{β r}`` cannot overflow whatever the embeddings' norms. Shapes: (A, N), (A, N) → (A, N).
    """
    scale = logits.masked_fill(~mask, 0.0).abs().amax().clamp_min(1e-12)
    return 2.0 * logits / scale


def hard_log_weights(logits: Tensor, mask: Tensor, *, beta: float, rescale: bool = False) -> Tensor:
    r"""Log importance weights of hard negatives, mean one over each row's valid entries.

    Robinson et al. (ICLR 2021), §3 and Fig. 13 (β multiplies the temperature-scaled logits, as
    in the authors' image code, ``imp = neg ** beta`` with ``neg = e^{s}``):

        ℓ_ij = β s_ij − log( (1/N_i) Σ_{k valid} e^{β s_ik} ),   i.e. w_ij = N_i · softmax_j(β s_ij),

    with ``s`` replaced by :func:`rescaled_logits` when ``rescale``.

    Shapes: ``logits`` (A, N), ``mask`` (A, N) bool → (A, N), ``−inf`` off the mask.
    """
    s = rescaled_logits(logits, mask) if rescale else logits
    return normalize_log_weights(beta * s, mask)


def hard_log_weighted_sum(logits: Tensor, mask: Tensor, *, beta: float, num_valid: Tensor) -> Tensor:
    r"""``log Σ_j w_ij e^{s_ij}`` for hard weights, without forming them (A,).

        log Σ_j w_ij e^{s_ij} = lse_j((1+β) s_ij) − lse_j(β s_ij) + log N_i,

    one fused masked pass (:func:`hardneg._lse.masked_tilted_lse`). A β below the dtype's
    smallest normal number is 0 there, and gives the uniform sum.

    Shapes: ``logits`` (A, N), ``mask`` (A, N) bool, ``num_valid`` (A,) → (A,).
    """
    if beta < torch.finfo(logits.dtype).tiny:
        return masked_logsumexp(logits, mask)
    return masked_tilted_lse(logits, mask, 1.0 + beta, beta) + num_valid.log()


class Hard(NegativeDistribution):
    r"""Hard negatives of Robinson et al. (ICLR 2021) as in-batch importance weights.

    Weights: :func:`hard_log_weights`; the NCE negative term uses the closed form
    :func:`hard_log_weighted_sum`, so NCE-type objectives never materialise the weights.

    β = 0 gives uniform weights (the debiased loss; with τ⁺ = 0, SimCLR). Larger β concentrates
    on the negatives closest to the anchor; the paper uses β ∈ [0.1, 2] for images (App. C–D).

    Args:
        beta: concentration β ∈ [0, 1e6] (a plain attribute: schedules may assign to it).
        detach_weights: treat the weights as constants in the backward pass. The authors' code
            does not detach (default False); detaching gives the gradient of a loss whose
            negatives were *sampled* from q_β.
        rescale: the clipping trick for unnormalised embeddings (Fig. 14 and App. D.2–D.3,
            :func:`rescaled_logits`), ``ℓ_ij ∝ +β r_ij``. **Sign:** we follow the figure, whose
            positive sign up-weights closer negatives; the authors' graph code applies the
            opposite sign, which up-weights the *farthest* negatives and contradicts the method.
    """

    def __init__(self, beta: float = 1.0, *, detach_weights: bool = False, rescale: bool = False):
        super().__init__()
        self.beta = beta
        self.detach_weights = bool(detach_weights)
        self.rescale = bool(rescale)

    @property
    def beta(self) -> float:
        return self._beta

    @beta.setter
    def beta(self, value: float) -> None:
        self._beta = check_beta(value)

    def log_weights(self, scores: Scores) -> Tensor | None:
        if self.beta == 0.0:
            return None
        ell = hard_log_weights(scores.logits, scores.mask, beta=self.beta, rescale=self.rescale)
        return ell.detach() if self.detach_weights else ell

    def weigh(self, scores: Scores) -> WeightedScores:
        if self.beta < torch.finfo(scores.logits.dtype).tiny:
            return WeightedScores(scores)
        beta = self.beta
        closed = None
        if not (self.detach_weights or self.rescale):

            def closed() -> Tensor:
                return hard_log_weighted_sum(
                    scores.logits, scores.mask, beta=beta, num_valid=scores.num_valid()
                )

        return WeightedScores(
            scores, log_weights=lambda: self._checked_log_weights(scores), log_weighted_sum=closed
        )

    def _config(self) -> dict[str, object]:
        return {"beta": self.beta, "detach_weights": self.detach_weights, "rescale": self.rescale}
