"""The debiased estimator with class prior τ⁺ (Chuang et al., NeurIPS 2020), with hard weights the
objective of Robinson et al. (ICLR 2021)."""

from __future__ import annotations

import functools
import math
from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.autograd.function import FunctionCtx, once_differentiable

from hardneg._numerics.constants import constant
from hardneg._validation import check_in_interval
from hardneg.negatives.weighted import WeightedScores
from hardneg.objectives.base import Objective, RowForm, log1mexp
from hardneg.objectives.prior import TauPlusEstimator

__all__ = ["Debiased", "debiased_grads", "debiased_log_negative", "debiased_terms", "log_positive_mean"]


def debiased_log_negative(
    log_weighted_sum: Tensor,
    positive: Tensor,
    num_valid: Tensor,
    *,
    tau_plus: float,
    temperature: float,
    positive_count: Tensor | None = None,
    log_positive_mean: Tensor | None = None,
    log_num_valid: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    r"""Log of the clamped debiased negative term and a mask of where the clamp binds.

    Formula (Robinson et al., ICLR 2021, eq. (4) and Fig. 13; the factor N in the floor as in the
    authors' ``image/main.py``; τ⁺ is the class prior of Chuang et al., NeurIPS 2020):

        Neg_i = max( (Σ_j w_ij e^{s_ij} − N_i τ⁺ e^{s⁺_i}) / (1 − τ⁺),  N_i e^{−1/t} ).

    Computed in the log domain: with ``a = log Σ w e^{s}`` and ``b = log(N_i τ⁺) + s⁺``, the
    numerator is ``a + log(1 − e^{b−a})`` when ``b < a`` and the floor binds otherwise.

    With ``M_i`` positives the correction is ``N_i τ⁺ E_{v∼q⁺}[e^{s_v}]``, whose log
    ``log_positive_mean`` (A,) the caller gives (:func:`log_positive_mean`); without it, the plain
    mean ``(1/M_i) Σ_m e^{s⁺_im}`` from ``positive = log Σ_m e^{s⁺_im}`` and ``positive_count``.

    Args:
        log_weighted_sum: ``log Σ_j w_ij e^{s_ij}`` over each anchor's valid negatives.
        positive: the positive logit ``s⁺_i`` (``log Σ_m e^{s⁺_im}`` with M positives).
        num_valid: ``N_i``, valid negatives per anchor.
        tau_plus: class prior τ⁺ ∈ [0, 1).
        temperature: t of the floor ``N_i e^{−1/t}``.
        positive_count: ``M_i``, positives per anchor (``None``: one).
        log_positive_mean: ``log E_{v∼q⁺}[e^{s_v}]`` per anchor (overrides the plain mean).
        log_num_valid: ``log N_i`` when already known (e.g. :meth:`Scores.log_num_valid`).

    Shapes:
        all tensors (A,) → ``(log Neg (A,), clamp_active (A,) bool)``.

    References:
        Chuang, Robinson, Lin, Torralba, Jegelka, *Debiased Contrastive Learning*, NeurIPS 2020,
        §3 (the debiased estimator and its floor); Robinson, Chuang, Sra, Jegelka, ICLR 2021,
        eq. (4) and Fig. 13.

    Example:
        >>> import torch
        >>> log_neg, clamped = debiased_log_negative(torch.tensor([2.0]), torch.tensor([1.0]),
        ...                                          torch.tensor([6.0]), tau_plus=0.1, temperature=0.5)
        >>> log_neg.shape, bool(clamped)
        (torch.Size([1]), False)
    """
    log_n = num_valid.log() if log_num_valid is None else log_num_valid
    floor = log_n - 1.0 / temperature
    if tau_plus == 0.0:
        log_num = log_weighted_sum
    else:
        if log_positive_mean is not None:
            b = math.log(tau_plus) + log_n + log_positive_mean
        else:
            b = math.log(tau_plus) + log_n + positive
            if positive_count is not None:
                b = b - positive_count.log()
        d = b - log_weighted_sum
        log_num = torch.where(d < 0, log_weighted_sum + log1mexp(d), float("-inf"))
        log_num = log_num - math.log1p(-tau_plus)
    active = log_num <= floor
    return torch.maximum(log_num, floor), active


def debiased_terms(
    lws: Tensor, positive: Tensor, log_n: Tensor, tau_plus: float, temperature: float
) -> tuple[Tensor, Tensor, Tensor]:
    r"""``(y, em, active)`` of the debiased loss ``L = softplus(y)`` with one positive and τ⁺ > 0:
    ``y = max(log Neg_i, log N_i − 1/t) − s⁺_i``, ``em = 1 − e^{d_i}`` with
    ``d_i = log(N_i τ⁺) + s⁺_i − a_i``, and ``active`` where the floor binds. The values of
    :func:`debiased_log_negative`; what :func:`debiased_grads` reads.

    Args:
        lws: ``a_i = log Σ_j w_ij e^{s_ij}``.
        positive: ``s⁺_i``.
        log_n: ``log N_i``.
        tau_plus: τ⁺ ∈ (0, 1).
        temperature: t of the floor ``N_i e^{−1/t}``.

    Shapes:
        all (A,) → three (A,) tensors (``active`` bool).

    References:
        Chuang, Robinson, Lin, Torralba, Jegelka, *Debiased Contrastive Learning*, NeurIPS 2020,
        §3, eq. (6); Robinson, Chuang, Sra, Jegelka, ICLR 2021, eq. (3)–(4) and Fig. 13.

    Example:
        >>> y, em, active = debiased_terms(torch.tensor([2.0]), torch.tensor([1.0]),
        ...                                torch.tensor([1.8]), 0.1, 0.5)
        >>> y.shape, bool(active), bool(em > 0)
        (torch.Size([1]), False, True)
    """
    # the numbers as cached 0-dim tensors (hardneg._numerics.constants): the same values, fewer µs
    floor = log_n - constant(1.0 / temperature, log_n)
    d = constant(math.log(tau_plus), log_n) + log_n + positive - lws
    em = torch.expm1(d).neg_()  # 1 − e^d: > 0 exactly where the numerator is positive
    log_num = torch.where(d < constant(0.0, d), lws + log1mexp(d), constant(float("-inf"), d))
    log_num = log_num - constant(math.log1p(-tau_plus), d)
    return torch.maximum(log_num, floor) - positive, em, log_num <= floor


def debiased_grads(
    grad: Tensor, y: Tensor, em: Tensor, active: Tensor, needs: tuple[bool, bool] = (True, True)
) -> tuple[Tensor | None, Tensor | None]:
    r"""``(∂L/∂a, ∂L/∂s⁺)`` of the debiased loss ``L = softplus(y)`` in closed form: the one
    hand-written backward of the estimator, used by every autograd node that computes it
    (:class:`Debiased`'s, and the engines' fused nodes :mod:`hardneg.engines.fused_node`).

    ``log Neg = a + log(1 − e^d) − log(1 − τ⁺)`` has ``∂/∂a = 1/(1 − e^d)`` and
    ``∂/∂s⁺ = −e^d/(1 − e^d)``; with ``g = ∂L/∂L_i · σ(y)``:

        ∂L/∂a = g / (1 − e^d),   ∂L/∂s⁺ = −g / (1 − e^d)    where the floor does not bind,
        ∂L/∂a = 0,               ∂L/∂s⁺ = −g                  where it binds.

    Args:
        grad: the upstream gradient ``∂L/∂L_i``.
        y: the softplus argument (:func:`debiased_terms`).
        em: ``1 − e^d`` (:func:`debiased_terms`; read only where the floor does not bind).
        active: where the floor binds.
        needs: ``(∂L/∂a asked, ∂L/∂s⁺ asked)``; ``None`` for one not asked.

    Shapes:
        all of one shape (A,) (or (2, B)) → two tensors of that shape (or ``None``).

    References:
        Chuang, Robinson, Lin, Torralba, Jegelka, NeurIPS 2020, §3, eq. (6) (the estimator
        differentiated); Robinson, Chuang, Sra, Jegelka, ICLR 2021, eq. (3).

    Example:
        >>> y, em = torch.tensor([0.5]), torch.tensor([0.6])
        >>> ga, gp = debiased_grads(torch.ones(1), y, em, torch.tensor([False]))
        >>> bool(torch.allclose(ga, -gp)), bool(torch.allclose(ga, torch.sigmoid(y) / 0.6))
        (True, True)
    """
    g = torch.sigmoid(y).mul_(grad)
    h = g / em  # read only where the floor does not bind (em > 0 there)
    grad_lws = torch.where(active, constant(0.0, h), h) if needs[0] else None
    grad_pos = torch.where(active, g, h).neg_() if needs[1] else None
    return grad_lws, grad_pos


class _DebiasedLoss(torch.autograd.Function):
    r"""``softplus(log Neg_i − s⁺_i)`` from ``a = log Σ_j w_ij e^{s_ij}`` and ``s⁺`` with one positive
    and τ⁺ > 0, as one autograd node: the forward makes the operators of
    :func:`debiased_log_negative` (the same values, bit for bit) without recording them, and the
    backward is its closed form, a handful of (A,) operators instead of the ~30 that autograd
    replays through ``log1mexp``'s two branches, the ``where`` and the ``maximum``. With
    ``g = ∂L/∂y · σ(y)``, ``y = log Neg − s⁺`` and ``d = log(N τ⁺) + s⁺ − a``:

        ∂L/∂a = g / (1 − e^d),   ∂L/∂s⁺ = −g / (1 − e^d)    where the floor does not bind,
        ∂L/∂a = 0,               ∂L/∂s⁺ = −g                  where it binds,

    since ``log Neg = a + log(1 − e^d) − log(1 − τ⁺)`` has ``∂/∂a = 1/(1 − e^d)`` and
    ``∂/∂s⁺ = −e^d/(1 − e^d)``. Shapes: ``a``, ``s⁺``, ``log N`` (A,) → (A,).
    """

    @staticmethod
    def forward(
        ctx: FunctionCtx, lws: Tensor, positive: Tensor, log_n: Tensor, tau_plus: float, temperature: float
    ) -> Tensor:
        y, em, active = debiased_terms(lws, positive, log_n, tau_plus, temperature)
        ctx.save_for_backward(y, em, active)
        return F.softplus(y)

    @staticmethod
    @once_differentiable
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor | None, Tensor | None, None, None, None]:
        y, em, active = ctx.saved_tensors  # type: ignore[attr-defined]
        needs = ctx.needs_input_grad  # type: ignore[attr-defined]
        grad_lws, grad_pos = debiased_grads(grad, y, em, active, (needs[0], needs[1]))
        return grad_lws, grad_pos, None, None, None


def log_positive_mean(logits: Tensor, positive_mask: Tensor, *, beta: float) -> Tensor:
    r"""Log of HCL's importance-sampling estimate of ``E_{v∼q_β⁺}[e^{s_v}]`` from M positives.

    Robinson et al. (ICLR 2021), §3: ``E_{v∼q_β⁺}[e^{f(x)ᵀf(v)}] = E_{v∼p⁺}[e^{(β+1) f(x)ᵀf(v)}] / Z_β⁺``
    with the empirical ``p̂⁺`` over the M positives and ``Ẑ_β⁺ = (1/M) Σ_m e^{β f(x)ᵀf(x⁺_m)}``:

        log[ (1/M) Σ_m e^{(β+1) s⁺_m} / Ẑ_β⁺ ] = LSE_m((β+1) s⁺_m) − LSE_m(β s⁺_m)

    (the 1/M factors cancel; β = 0 gives the plain mean ``log (1/M) Σ_m e^{s⁺_m}``): the tilted
    pair of the negatives' weighted sum over the positives (:func:`hardneg._numerics.lse.masked_tilted_lse`,
    cancellation-free for β > 1). Shapes: ``logits`` (A, N), ``positive_mask`` (A, N) bool with at
    least one True per row → (A,).
    """
    from hardneg._numerics.lse import masked_logsumexp, masked_tilted_lse

    if beta > 0.0:
        return masked_tilted_lse(logits, positive_mask, beta + 1.0, beta)
    tilted = masked_logsumexp((beta + 1.0) * logits, positive_mask)  # a tilt of 0 or below
    return tilted - masked_logsumexp(beta * logits, positive_mask)


def _debiased_row_loss(
    lws: Tensor, positive: Tensor, log_n: Tensor, temperature: float, *, tau_plus: float
) -> Tensor:
    """``loss(a, s⁺, log N, t)`` of the debiased row form (:func:`debiased_log_negative`)."""
    log_neg, _ = debiased_log_negative(
        lws, positive, log_n.exp(), tau_plus=tau_plus, temperature=temperature, log_num_valid=log_n
    )
    return F.softplus(log_neg - positive)


class Debiased(Objective):
    r"""The debiased (and, with hard weights, hardness-biased) objective.

        L_i = −log( e^{s⁺_i} / (e^{s⁺_i} + Neg_i) ),   Neg_i as in :func:`debiased_log_negative`.

    With M_i positives per anchor (``scores.positive_mask``; fixed τ⁺ only) ``e^{s⁺_i}`` is
    ``Σ_m e^{s⁺_im}`` — Robinson et al.'s pseudocode ``−log(pos.sum() / (pos.sum() + Neg))``
    (ICLR 2021, Fig. 13–14) — and the correction ``τ⁺ E_{v∼q_β⁺}[e^{s_v}]`` is estimated as in their
    §3 (``positive_estimator="importance"``, :func:`log_positive_mean`): the positives reweighted
    by the tilt β of the negatives' weights. ``positive_estimator="mean"`` keeps the plain mean
    ``(1/M) Σ_m e^{s⁺_m}`` (the estimate of versions ≤ 0.1; equal at β = 0). Distributions without
    a tilt on the raw logits (OT, the clipping trick ``Hard(rescale=True)``) use the plain mean.

    With :class:`~hardneg.negatives.Hard` weights this is exactly the objective of Robinson et
    al. (ICLR 2021), eq. (4); with β = 0 it is the debiased loss of Chuang et al. (NeurIPS 2020);
    with τ⁺ = 0 and normalised embeddings
    the floor never binds and it equals SimCLR's NT-Xent.

    Args:
        tau_plus: class prior τ⁺ ∈ [0, 1), the probability that a negative shares the anchor's
            latent class (1/C for C balanced classes); ``"auto"`` estimates it from each training
            batch's scores (:class:`~hardneg.objectives.prior.TauPlusEstimator`: a PU mixture
            proportion with the positives as the labelled sample, smoothed over steps); a
            :class:`~hardneg.objectives.prior.TauPlusEstimator` instance sets its options. The
            estimate is updated only in training mode and logged as the ``tau_plus`` diagnostic.
        positive_estimator: with M positives per anchor, ``"importance"`` (default: positives
            reweighted by the negatives' tilt β, Robinson et al. §3) or ``"mean"`` (plain mean).

    Shapes:
        ``weighted`` with A anchors × N candidates → (A,).

    References:
        Chuang, Robinson, Lin, Torralba, Jegelka, *Debiased Contrastive Learning*, NeurIPS 2020,
        §3; Robinson, Chuang, Sra, Jegelka, *Contrastive Learning with Hard Negative Samples*,
        ICLR 2021, §3, eq. (4) and Fig. 13–14.

    Example:
        >>> import torch
        >>> from hardneg import ContrastiveLoss
        >>> from hardneg.negatives import Hard
        >>> from hardneg.objectives import Debiased
        >>> hcl = ContrastiveLoss(temperature=0.5, negatives=Hard(beta=1.0), objective=Debiased(tau_plus=0.1))
        >>> loss = hcl(torch.randn(8, 16), torch.randn(8, 16))
        >>> loss.shape, bool(torch.isfinite(loss))
        (torch.Size([]), True)
    """

    row_reducible = True  # reads only s⁺_i, N_i and log Σ_j w_ij e^{s_ij}: the tiled engine computes it

    def __init__(
        self,
        tau_plus: float | str | TauPlusEstimator = 0.1,
        *,
        positive_estimator: Literal["importance", "mean"] = "importance",
    ):
        super().__init__()
        if positive_estimator not in ("importance", "mean"):
            raise ValueError(f"positive_estimator must be 'importance' or 'mean', got {positive_estimator!r}")
        self.positive_estimator = positive_estimator
        self.estimator: TauPlusEstimator | None = None
        if isinstance(tau_plus, TauPlusEstimator):
            self.estimator = tau_plus
        elif isinstance(tau_plus, str):
            if tau_plus != "auto":
                raise ValueError(f"tau_plus must be a number in [0, 1) or 'auto', got {tau_plus!r}")
            self.estimator = TauPlusEstimator()
        self._tau_plus = 0.0
        if self.estimator is not None:
            # the estimate reads every candidate score of the batch: not a row statistic
            self.row_reducible = False
        else:
            self._tau_plus = check_in_interval("tau_plus", tau_plus, low=0.0, high=1.0)  # type: ignore[arg-type]

    @property
    def multi_positive(self) -> bool:  # type: ignore[override]
        """Defined for M positives with a fixed τ⁺ (the "auto" estimate reads one positive per anchor)."""
        return self.estimator is None

    @property
    def auto(self) -> bool:
        """Whether τ⁺ is estimated from the data."""
        return self.estimator is not None

    @property
    def tau_plus(self) -> float:
        """The τ⁺ in use: the fixed value, or the estimator's current estimate."""
        return self.estimator.current if self.estimator is not None else self._tau_plus

    def log_negative(self, weighted: WeightedScores) -> tuple[Tensor, Tensor]:
        """``(log Neg_i, clamp_active_i)`` for each anchor, shapes (A,) (O(A) on the memoised sum)."""
        s = weighted.scores
        log_pos = None
        if (
            s.positive_mask is not None
            and self.positive_estimator == "importance"
            and weighted.tilt  # a tilt of 0 (uniform) or None (no tilt on s) keeps the plain mean
        ):
            log_pos = log_positive_mean(s.logits, s.positive_mask, beta=weighted.tilt)
        return debiased_log_negative(
            weighted.log_weighted_sum,
            s.positive,
            s.num_valid(),
            tau_plus=self.tau_plus,
            temperature=s.temperature,
            positive_count=s.positive_count(),
            log_positive_mean=log_pos,
            log_num_valid=s.log_num_valid(),
        )

    def forward(self, weighted: WeightedScores) -> Tensor:
        s = weighted.scores
        if self.estimator is not None and self.training:
            self.estimator.update(s.positive, s.logits, s.mask)
        tau_plus = self.tau_plus
        if s.positive_mask is None and tau_plus > 0.0 and not torch.compiler.is_compiling():
            # one positive: one autograd node with the same values (a traced graph fuses anyway)
            out: Tensor = _DebiasedLoss.apply(
                weighted.log_weighted_sum, s.positive, s.log_num_valid(), tau_plus, s.temperature
            )
            return out
        log_neg, _ = self.log_negative(weighted)
        return F.softplus(log_neg - s.positive)

    def row_form(self) -> RowForm | None:
        """``RowForm("debiased", τ⁺)`` for a fixed τ⁺ (``None`` with ``tau_plus="auto"``: the
        estimate reads the whole score matrix); its value is :func:`debiased_terms`' softplus."""
        if self.estimator is not None:
            return None
        tau_plus = self._tau_plus
        form = self.__dict__.get("_row_form")
        if form is None or form.tau_plus != tau_plus:  # made once per τ⁺: the per-call path reads it
            loss = functools.partial(_debiased_row_loss, tau_plus=tau_plus)
            form = RowForm("debiased", tau_plus, loss=loss)
            self.__dict__["_row_form"] = form
        return form

    def diagnostics(self, weighted: WeightedScores) -> dict[str, float]:
        """``clamp_fraction``: the fraction of anchors whose floor ``N_i e^{−1/t}`` binds; with
        ``tau_plus="auto"`` also ``tau_plus``, the estimate in use."""
        _, active = self.log_negative(weighted)
        out = {"clamp_fraction": float(active.float().mean())}
        if self.estimator is not None:
            out["tau_plus"] = self.estimator.current
        return out

    def _config(self) -> dict[str, object]:
        config: dict[str, object] = {"tau_plus": "auto" if self.estimator is not None else self.tau_plus}
        if self.positive_estimator != "importance":
            config["positive_estimator"] = self.positive_estimator
        return config
