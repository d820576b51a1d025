"""Hard negatives: the tilted distribution ``q_β(x⁻) ∝ e^{β f(x)ᵀf(x⁻)} p(x⁻)`` of Robinson et al."""

from __future__ import annotations

import torch
from torch import Tensor

from hardneg._numerics.lse import masked_logsumexp, masked_tilted_lse
from hardneg._validation import check_beta
from hardneg.negatives.base import NegativeDistribution, normalize_log_weights
from hardneg.negatives.tiling import TileWeights
from hardneg.negatives.weighted import WeightedScores
from hardneg.scores import Scores

__all__ = [
    "Hard",
    "beta_for_ess",
    "ess_fraction",
    "hard_log_weighted_sum",
    "hard_log_weights",
    "rescaled_logits",
]


def rescaled_logits(logits: Tensor, mask: Tensor) -> Tensor:
    """The clipping trick of Robinson et al. (ICLR 2021), Fig. 14: ``r_ij = 2 s_ij / max_{valid kl} |s_kl|``.

    Rescales a batch of unnormalised logits to ``[−2, 2]`` with the batch-wide maximum, so that
    ``e^{β r}`` cannot overflow whatever the embeddings' norms.

    Args:
        logits: the scores ``s``.
        mask: the valid entries (the maximum is taken over these only).

    Shapes:
        ``logits`` (A, N), ``mask`` (A, N) bool → (A, N).

    References:
        Robinson, Chuang, Sra, Jegelka, ICLR 2021, Fig. 14 and App. D.2–D.3 (the graph and
        unnormalised-embedding experiments).

    Example:
        >>> import torch
        >>> rescaled_logits(torch.tensor([[1.0, -4.0, 9.0]]), torch.tensor([[True, True, False]]))
        tensor([[ 0.5000, -2.0000,  4.5000]])
    """
    scale = logits.masked_fill(~mask, 0.0).abs().amax().clamp_min(1e-12)
    return 2.0 * logits / scale


def hard_log_weights(logits: Tensor, mask: Tensor, *, beta: float, rescale: bool = False) -> Tensor:
    r"""Log importance weights of hard negatives, mean one over each row's valid entries.

    Robinson et al. (ICLR 2021), §3 and Fig. 13 (β multiplies the temperature-scaled logits, as
    in the authors' image code, ``imp = neg ** beta`` with ``neg = e^{s}``):

        ℓ_ij = β s_ij − log( (1/N_i) Σ_{k valid} e^{β s_ik} ),   i.e. w_ij = N_i · softmax_j(β s_ij),

    with ``s`` replaced by :func:`rescaled_logits` when ``rescale``.

    Args:
        logits: the scores ``s_ij`` (temperature-scaled logits).
        mask: each anchor's valid negatives (at least one per row).
        beta: concentration β (0: uniform weights).
        rescale: apply the clipping trick (:func:`rescaled_logits`) first; default False.

    Shapes:
        ``logits`` (A, N), ``mask`` (A, N) bool → (A, N), ``−inf`` off the mask.

    References:
        Robinson, Chuang, Sra, Jegelka, *Contrastive Learning with Hard Negative Samples*,
        ICLR 2021, §3, eq. (4) (``q_β(x⁻) ∝ e^{β f(x)ᵀf(x⁻)} p(x⁻)``) and Fig. 13.

    Example:
        >>> import torch
        >>> s, m = torch.tensor([[0.0, 1.0, 2.0]]), torch.ones(1, 3, dtype=torch.bool)
        >>> ell = hard_log_weights(s, m, beta=1.0)
        >>> round(float(ell.exp().sum()), 4), bool(ell[0, 2] > ell[0, 1] > ell[0, 0])
        (3.0, True)
    """
    s = rescaled_logits(logits, mask) if rescale else logits
    return normalize_log_weights(beta * s, mask)


def hard_log_weighted_sum(logits: Tensor, mask: Tensor, *, beta: float, num_valid: Tensor) -> Tensor:
    r"""``log Σ_j w_ij e^{s_ij}`` for hard weights, without forming them (A,).

        log Σ_j w_ij e^{s_ij} = lse_j((1+β) s_ij) − lse_j(β s_ij) + log N_i,

    one fused masked pass (:func:`hardneg._numerics.lse.masked_tilted_lse`). A β below the dtype's
    smallest normal number is 0 there, and gives the uniform sum.

    Args:
        logits: the scores ``s_ij``.
        mask: each anchor's valid negatives.
        beta: concentration β ≥ 0.
        num_valid: ``N_i``, the number of valid negatives of each anchor.

    Shapes:
        ``logits`` (A, N), ``mask`` (A, N) bool, ``num_valid`` (A,) → (A,).

    References:
        Robinson, Chuang, Sra, Jegelka, ICLR 2021, §3, eq. (4): the importance-weighted
        negative term ``N · E_{x⁻∼q_β}[e^{f(x)ᵀf(x⁻)}]``.

    Example:
        >>> import torch
        >>> s, m = torch.tensor([[0.0, 1.0, 2.0]]), torch.ones(1, 3, dtype=torch.bool)
        >>> closed = hard_log_weighted_sum(s, m, beta=1.0, num_valid=torch.tensor([3.0]))
        >>> dense = torch.logsumexp(hard_log_weights(s, m, beta=1.0) + s, dim=1)
        >>> bool(torch.allclose(closed, dense))
        True
    """
    if beta < torch.finfo(logits.dtype).tiny:
        return masked_logsumexp(logits, mask)
    return masked_tilted_lse(logits, mask, 1.0 + beta, beta) + num_valid.log()


def ess_fraction(logits: Tensor, mask: Tensor, *, beta: float) -> Tensor:
    r"""Kish's effective sample size of the hard weights over each row's N_i valid entries, as a fraction:

        ESS_i / N_i = (Σ_j w_ij)² / (N_i Σ_j w_ij²) = exp(2 lse_j(β s_ij) − lse_j(2β s_ij) − log N_i),

    1 for uniform weights (β = 0) and down to 1/N_i when one negative takes all the weight.
    Log domain throughout; rows without valid entries give NaN.

    Args:
        logits: the scores ``s_ij``.
        mask: each anchor's valid negatives.
        beta: concentration β of the hard weights.

    Shapes:
        ``logits`` (A, N), ``mask`` (A, N) bool → (A,).

    References:
        Kish, *Survey Sampling*, Wiley, 1965 (the effective sample size); the weights of
        Robinson, Chuang, Sra, Jegelka, ICLR 2021, §3, eq. (4).

    Example:
        >>> import torch
        >>> s, m = torch.tensor([[0.0, 1.0, 2.0]]), torch.ones(1, 3, dtype=torch.bool)
        >>> ess_fraction(s, m, beta=0.0), bool(ess_fraction(s, m, beta=5.0) < 0.5)
        (tensor([1.]), True)
    """
    n = mask.sum(dim=1).to(logits.dtype)
    if beta == 0.0:
        return torch.where(n > 0, torch.ones_like(n), float("nan"))
    lse1 = masked_logsumexp(beta * logits, mask)
    lse2 = masked_logsumexp(2.0 * beta * logits, mask)
    return torch.exp(2.0 * lse1 - lse2 - n.log())


def beta_for_ess(
    logits: Tensor, mask: Tensor, *, target: float, start: float = 1.0, rtol: float = 1e-3
) -> float:
    r"""The β ≥ 0 whose weights have mean ESS fraction ``target`` over the batch's anchors.

    ``mean_i ESS_i(β)/N_i`` (:func:`ess_fraction`) falls monotonically from 1 at β = 0, since
    ``d/dβ log ESS_i = 2 (E_β[s] − E_{2β}[s]) ≤ 0`` (tilting raises the mean): bracket by doubling
    or halving from ``start`` (e.g. the previous batch's β), then bisect until the bracket is
    within ``rtol`` relative. No gradient flows through the choice (the logits are detached).
    Returns ``BETA_MAX`` when even that β keeps the ESS above the target (ties at the maximum).

    Args:
        logits: the scores ``s_ij`` (detached here).
        mask: each anchor's valid negatives.
        target: the mean ESS fraction to reach, in (0, 1] (1: β = 0).
        start: the first β of the bracket search (e.g. the previous batch's), default 1.
        rtol: relative width of the final bracket, default 1e-3.

    Shapes:
        ``logits`` (A, N), ``mask`` (A, N) bool → a float.

    References:
        Beyond the papers: Kish's effective sample size (*Survey Sampling*, Wiley, 1965) of the
        hard weights of Robinson, Chuang, Sra, Jegelka, ICLR 2021, §3, eq. (4).

    Example:
        >>> import torch
        >>> s, m = torch.tensor([[0.0, 1.0, 2.0, 3.0]]), torch.ones(1, 4, dtype=torch.bool)
        >>> beta = beta_for_ess(s, m, target=0.5)
        >>> abs(float(ess_fraction(s, m, beta=beta)) - 0.5) < 1e-2
        True
    """
    from hardneg._validation import BETA_MAX

    if not 0.0 < target <= 1.0:
        raise ValueError(f"target_ess must lie in (0, 1], got {target!r}")
    with torch.no_grad():
        s = logits.detach().to(torch.float64)
        rows = mask.any(dim=1)
        s, m = s[rows], mask[rows]

        def f(beta: float) -> float:
            return float(ess_fraction(s, m, beta=beta).mean())

        if target >= 1.0 or s.shape[0] == 0:
            return 0.0
        lo, hi = 0.0, max(float(start), 1e-6)
        if f(hi) > target:  # hi too small: double
            while f(hi) > target:
                lo, hi = hi, 2.0 * hi
                if hi > BETA_MAX:
                    return float(BETA_MAX)
        else:  # hi large enough: halve to tighten lo
            while hi > 1e-6 and f(hi / 2.0) <= target:
                hi /= 2.0
            lo = hi / 2.0 if hi > 1e-6 else 0.0
        while hi - lo > rtol * hi:
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if f(mid) > target else (lo, mid)
        return 0.5 * (lo + hi)


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
        target_ess: beyond the paper: choose β for every batch so that the weights' mean
            effective-sample-size fraction (:func:`ess_fraction`) equals this value in (0, 1]
            (:func:`beta_for_ess`, warm-started from the previous β, which ``beta`` holds and the
            diagnostics report as ``beta``). ``None``: the fixed ``beta``. **Per rank** under
            DDP: each process chooses β from its own anchors (against the gathered candidates),
            so the ranks' β differ slightly and W processes are not exactly one process on the
            concatenated batch (:mod:`hardneg.distributed`); a fixed ``beta`` is exact.

    The tiled engine computes it as the tilt ``TileWeights(tilt=beta)`` (:meth:`tile_weights`)
    unless ``rescale``, ``detach_weights`` or ``target_ess`` is set; the gathered engine with any
    options (the weights of an anchor read only its own row).

    Shapes:
        ``scores`` (A, N) → :class:`~hardneg.negatives.WeightedScores`: log weights ℓ (A, N)
        (:func:`hard_log_weights`), ``log Σ_j w_ij e^{s_ij}`` (A,) in closed form.

    References:
        Robinson, Chuang, Sra, Jegelka, *Contrastive Learning with Hard Negative Samples*,
        ICLR 2021, §3, eq. (4) (the hardness-biased estimator), Fig. 13–14 (pseudocode, clipping
        trick), App. C–D (β per data set).

    Example:
        >>> import torch
        >>> from hardneg import ContrastiveLoss
        >>> from hardneg.negatives import Hard
        >>> from hardneg.objectives import Debiased
        >>> hcl = ContrastiveLoss(temperature=0.5, negatives=Hard(beta=1.0), objective=Debiased(0.1))
        >>> loss = hcl(torch.randn(8, 16), torch.randn(8, 16))
        >>> loss.shape, bool(torch.isfinite(loss))
        (torch.Size([]), True)
    """

    per_anchor_weights = True

    def __init__(
        self,
        beta: float = 1.0,
        *,
        detach_weights: bool = False,
        rescale: bool = False,
        target_ess: float | None = None,
    ):
        super().__init__()
        self.beta = beta
        self.detach_weights = bool(detach_weights)
        self.rescale = bool(rescale)
        if target_ess is not None and not (isinstance(target_ess, (int, float)) and 0.0 < target_ess <= 1.0):
            raise ValueError(f"target_ess must lie in (0, 1] or be None, got {target_ess!r}")
        self.target_ess = None if target_ess is None else float(target_ess)

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
        info: dict[str, float] = {}
        if self.target_ess is not None:
            s = rescaled_logits(scores.logits, scores.mask) if self.rescale else scores.logits
            self.beta = beta_for_ess(s, scores.mask, target=self.target_ess, start=self.beta or 1.0)
            info["beta"] = self.beta
        if self.beta < torch.finfo(scores.logits.dtype).tiny:
            return WeightedScores(scores, info=info, tilt=0.0, source=self)
        beta = self.beta
        closed = None
        if not (self.detach_weights or self.rescale):

            def closed() -> Tensor:  # lse((1+β) s) − lse(β s) + log N_i, one call of hardneg._numerics.lse
                lse = masked_tilted_lse(
                    scores.logits, scores.mask, 1.0 + beta, beta, nonempty=scores.nonempty, fill=scores.fill
                )
                return lse + scores.log_num_valid()

        return WeightedScores(
            scores,
            log_weights=lambda: self._checked_log_weights(scores),
            log_weighted_sum=closed,
            info=info,
            source=self,
            tilt=None if self.rescale else beta,  # the clipping trick tilts rescaled logits, not s
            closed_tilt=None if closed is None else beta,
        )

    def tile_weights(self) -> TileWeights | None:
        """``TileWeights(tilt=beta)``; ``None`` with ``rescale`` (the batch-wide maximum of the
        clipping trick), ``detach_weights`` or ``target_ess`` (β chosen from the whole matrix)."""
        if self.rescale or self.detach_weights or self.target_ess is not None:
            return None
        return TileWeights(tilt=self.beta)

    def tile_refusal(self) -> str:
        """Why these settings do not tile (see :meth:`tile_weights`)."""
        return (
            "the tiled engine computes Hard negatives without rescale/detach_weights/target_ess "
            f"(the batch-wide rescaling, the detached weights and the ESS search read the (A, N) "
            f"matrix); got {self!r}"
        )

    def _config(self) -> dict[str, object]:
        config: dict[str, object] = {
            "beta": self.beta,
            "detach_weights": self.detach_weights,
            "rescale": self.rescale,
        }
        if self.target_ess is not None:
            config["target_ess"] = self.target_ess
        return config
