"""``WeightedScores``: step 2's output, made once per loss call and read by every later step.

A negative distribution evaluates to the scores it samples from (after any mask change) plus
log importance weights ``ℓ_ij`` with mean one over each anchor's ``N_i`` valid candidates,

    log Σ_{j valid} e^{ℓ_ij} = log N_i,    ℓ_ij = −inf where ``mask[i, j]`` is False,

so that ``Σ_j e^{ℓ_ij + s_ij} = N_i · E_{c∼q(·|a_i)}[e^{s_ij}]``, the importance-sampling
estimate of Robinson et al. (ICLR 2021), §3 eq. (4), with ``Q = N``.

The objective and the diagnostics both read this object; the log weights and the weighted
negative sum ``log Σ_j w_ij e^{s_ij}`` are each computed at most once (memoised on first use),
and a distribution with a cheaper closed form for the sum (e.g. hard negatives) supplies it so
that NCE-type objectives never materialise the weights.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from hardneg._numerics.lse import masked_logsumexp
from hardneg.negatives.ramp import Ramp
from hardneg.scores import Scores

__all__ = ["WeightedScores"]

_Lazy = Tensor | Callable[[], Tensor] | None


class WeightedScores:
    """Scores, log weights and the memoised weighted negative sum of one batch.

    Args:
        scores: the scores the distribution samples from (mask already restricted, e.g. by
            K-subsampling or collision-free negatives).
        log_weights: ``ℓ`` (A, N) with ``−inf`` off the mask, or a zero-argument callable that
            computes it on first use; ``None`` means uniform weights (``ℓ = 0`` on the mask).
        log_weighted_sum: optional closed form of ``log Σ_j e^{ℓ_ij + s_ij}`` (A,) (a tensor
            or a zero-argument callable); by default it is computed from ``log_weights``.
        info: per-call facts of the distribution for the diagnostics (e.g. Sinkhorn's
            iterations and marginal error); plain floats.
        source: the distribution that made it, or a description of it, for error messages
            (formatted only when one is raised: ``repr`` of a module costs microseconds per call).
        tilt: the β of weights ``w ∝ e^{β s}`` on the raw logits (0 for uniform weights), ``None``
            for any other distribution. The debiased objective with M positives reweights the
            positives by the same tilt (Robinson et al., ICLR 2021, §3: ``q_β⁺``).
        mean_of: how an engine that never forms the (A, N) logits (the tiled engine) computes
            :meth:`mean_of`; ``None``: from the logits.
        max_logit: how such an engine computes :meth:`max_logit`; ``None``: from the logits.
        closed_tilt: β when ``log_weighted_sum`` is ``lse_j((1+β) s_ij) − lse_j(β s_ij) + log N_i``
            over the mask with the gradient through the weights (hard weights' closed form), so
            that an objective may compute it inside its own node
            (:func:`~hardneg.engines.fused_node.tilted_debiased_loss`); ``None``: not known
            to be. Uniform weights without a given sum are β = 0 (``lse_j s_ij``).

    Shapes:
        ``scores`` (A, N); ``log_weights`` (A, N); ``log_weighted_sum``, :meth:`mean_of`,
        :meth:`max_logit`, :meth:`weighted_mean` (A,); :meth:`probabilities` (A, N).

    References:
        Robinson, Chuang, Sra, Jegelka, *Contrastive Learning with Hard Negative Samples*,
        ICLR 2021, §3, eq. (4) (the importance-sampling estimate with ``Q = N``).

    Example:
        >>> import torch
        >>> from hardneg.negatives import WeightedScores
        >>> from hardneg.scores import simclr_scores
        >>> scores = simclr_scores(torch.randn(4, 8), torch.randn(4, 8), temperature=0.5)
        >>> weighted = WeightedScores(scores)  # uniform weights
        >>> weighted.log_weighted_sum.shape
        torch.Size([8])
        >>> bool(torch.allclose(weighted.probabilities().sum(1), torch.ones(8)))
        True
    """

    __slots__ = (
        "_log_weights", "_lws", "_max_logit", "_mean_of", "closed_tilt", "info", "scores", "source", "tilt",
        "uniform",
    )

    def __init__(
        self,
        scores: Scores,
        *,
        log_weights: _Lazy = None,
        log_weighted_sum: _Lazy = None,
        info: dict[str, float] | None = None,
        source: object = "",
        mean_of: Callable[[Ramp], Tensor] | None = None,
        max_logit: Callable[[], Tensor] | None = None,
        tilt: float | None = None,
        closed_tilt: float | None = None,
    ) -> None:
        self.scores = scores
        self.uniform = log_weights is None
        self.tilt = 0.0 if tilt is None and log_weights is None else tilt
        if closed_tilt is None and log_weights is None and log_weighted_sum is None:
            closed_tilt = 0.0
        self.closed_tilt = closed_tilt
        self._log_weights: _Lazy = log_weights
        self._lws: _Lazy = log_weighted_sum
        self.info: dict[str, float] = dict(info or {})
        self.source = source
        self._mean_of = mean_of
        self._max_logit = max_logit

    @property
    def pending_sum(self) -> bool:
        """Whether :attr:`log_weighted_sum` is not computed yet (an objective with a cheaper route
        to the same value, :attr:`closed_tilt`, may take it instead)."""
        return self._lws is None or callable(self._lws)

    @property
    def log_weights(self) -> Tensor | None:
        """``ℓ`` (A, N), ``−inf`` off the mask; ``None`` for uniform weights. Computed once."""
        if callable(self._log_weights):
            self._log_weights = self._log_weights()
        return self._log_weights

    @property
    def log_weighted_sum(self) -> Tensor:
        """``log Σ_{j valid} e^{ℓ_ij + s_ij}`` per anchor (A,), i.e. ``log(N_i · E_q[e^{s}])``.

        The negative term of NCE-type objectives; computed once (closed form when given).
        """
        if self._lws is None:
            ell = self.log_weights
            s = self.scores
            if ell is not None:
                self._lws = torch.logsumexp(s.logits + ell, dim=1)
            else:  # ATen's log-sum-exp for small matrices without an empty row, else the fused one
                self._lws = masked_logsumexp(s.logits, s.mask, nonempty=s.nonempty, fill=s.fill)
        elif callable(self._lws):
            self._lws = self._lws()
        return self._lws

    def dense_log_weights(self) -> Tensor:
        """``ℓ`` (A, N) as a tensor also for uniform weights (``0`` on the mask, ``−inf`` off it)."""
        ell = self.log_weights
        if ell is not None:
            return ell
        return torch.zeros_like(self.scores.logits).masked_fill(~self.scores.mask, float("-inf"))

    def probabilities(self) -> Tensor:
        """``q_ij = e^{ℓ_ij} / N_i`` (A, N): each row a probability over its valid negatives.

        Exponentiates the log weights (``ℓ ≤ log N_i``, bounded), never a raw logit.
        """
        s = self.scores
        ell = self.log_weights
        n = s.num_valid()[:, None]
        if ell is None:
            return s.mask.to(s.logits.dtype) / n
        return torch.exp(ell - n.log())

    def weighted_mean(self, values: Tensor) -> Tensor:
        """``Σ_j q_ij values_ij`` over valid negatives (A,); invalid entries contribute exactly 0."""
        return (self.probabilities() * values.masked_fill(~self.scores.mask, 0.0)).sum(dim=1)

    def mean_of(self, ramp: Ramp) -> Tensor:
        """``Σ_j q_ij h(s_ij − s⁺_i)`` per anchor (A,), ``h`` the ramp: the hinge/triplet family's
        expected loss over ``x⁻ ∼ q`` (Jiang et al., arXiv:2111.03169, §IV)."""
        if self._mean_of is not None:
            return self._mean_of(ramp)
        s = self.scores
        return self.weighted_mean(ramp.value(s.logits - s.positive[:, None]))

    def max_logit(self) -> Tensor:
        """``max_{j valid} s_ij`` per anchor (A,): the worst negative of Arora et al.'s k-way hinge
        (ICML 2019, Def. 2.3)."""
        if self._max_logit is not None:
            return self._max_logit()
        s = self.scores
        return s.logits.masked_fill(~s.mask, float("-inf")).amax(dim=1)

    def __repr__(self) -> str:
        a, n = self.scores.logits.shape
        return f"WeightedScores(anchors={a}, candidates={n}, uniform={self.uniform}, info={self.info})"
