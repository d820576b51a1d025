r"""SimCLR's (hard) debiased loss on a small batch as **one** autograd node from the two views.

At small B (up to :attr:`~hardneg._numerics.thresholds.Thresholds.fused_max`) a call costs its operators'
dispatch more than arithmetic:
every operator recorded by autograd adds a node, a saved tensor and a backward replay. This node
takes the views ``z1``, ``z2`` and runs the whole loss — normalisation, the (2B, 2B) product,
both tilted log-sum-exps, the debiased estimator — with autograd off, then a closed-form backward
straight to the views: 56 operators per fwd+bwd call where the composite dispatches 92, and no
graph of its own. Robinson et al.'s loss
(ICLR 2021, eq. (4)) per view ``i`` with partner ``p(i)``, over the N = 2B − 2 other views j:

    s_ij = v_iᵀv_j / t,   u_i = lse_j((1+β) s_ij) − lse_j(β s_ij)        (a_i = u_i + log N)
    log Neg_i = max(a_i + log(1 − e^{d_i}) − log(1 − τ⁺),  log N − 1/t),   d_i = log(Nτ⁺) + s⁺_i − a_i
    L_i = softplus(log Neg_i − s⁺_i)

(β = 0: the debiased loss of Chuang et al., NeurIPS 2020). Backward, with g_i = ∂L/∂L_i σ(y_i),
``h_i = g_i / (1 − e^{d_i})`` where the floor does not bind:

    ∂L/∂s_ij = h_i ((1+β) softmax_j((1+β) s_i) − β softmax_j(β s_i))
    ∂L/∂s⁺_i = −h_i  (−g_i where the floor binds, and then ∂L/∂s_ij = 0)
    ∂L/∂v = (G + Gᵀ) v  for G = ∂L/∂(v vᵀ),   ∂L/∂x_i = (∂L/∂v_i − v_i (v_iᵀ ∂L/∂v_i)) / ‖x_i‖

The values are those of the general path (:class:`~hardneg.negatives.Hard` weights and
:class:`~hardneg.objectives.Debiased`) up to float rounding, not bit for bit: the logits are
``k (cos − 1)`` (each tilt ``k`` shifted by its largest value, so that no row maximum is needed
where no exponential can under- or overflow, :data:`STATIC_SHIFT_MAX`), the positive is read
from the product's diagonal, the two log-sum-exps share their exponentials with the backward,
and log(1 − e^d) is ``log(−expm1(d))``. Tested against a float64 re-derivation, the general
path and ``gradcheck`` (``tests/engines/test_fused_node.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.autograd.function import once_differentiable

from hardneg._numerics.constants import cached_tensors
from hardneg._numerics.lse import TiltedPair, cancels, tilt_pair, tilted_pair, tilted_pair_grad
from hardneg._numerics.thresholds import THRESHOLDS
from hardneg.objectives.debiased import debiased_grads, debiased_terms
from hardneg.scores import Scores
from hardneg.scores.layouts import norms_in_range, simclr_constants, simclr_mask

__all__ = [
    "STATIC_SHIFT_MAX",
    "FusedConstants",
    "GeneralPath",
    "fused_constants",
    "fused_debiased_loss",
    "tilted_debiased_loss",
]

#: The widest range ``2(1+β)/t`` of the tilted logits for which ``exp(k (cos − 1))`` (each tilt
#: ``k`` shifted by its largest value, a unit cosine) stays a normal number for every cosine in
#: [−1, 1]: ``exp(−80) ≈ 1.8e-35`` above float32's smallest normal 1.2e-38, ``exp(−700)`` above
#: float64's 2.2e-308. Wider: each row is shifted by its maximum as well.
STATIC_SHIFT_MAX = {torch.float32: 80.0, torch.float64: 700.0}


class GeneralPath(Exception):
    """Raised inside the node when a view's norm is out of range: the general path checks and
    reports (or rescales) that batch. Nothing is recorded for autograd when it is raised."""


@dataclass(frozen=True)
class FusedConstants:
    """The constants of one (B, dtype, device, β, τ⁺, t): made once, never modified in place.

    Attributes:
        b: B, the views per side.
        fill: the additive mask (0 on the 2B − 2 negatives of each view, −inf on itself and its
            partner), (2B, 2B); shared by every β, τ⁺ and t.
        static: the tilted logits ``k (cos − 1)`` (``k = (1+β)/t`` and ``β/t``: each tilt shifted by
            its largest value) are exponentiated as they are when ``2(1+β)/t`` is at most
            :data:`STATIC_SHIFT_MAX` of the dtype (no exponential under- or overflows), β ≥ 0 and not
            ``pair``; else each row is shifted by its maximum as well, as ``torch.logsumexp`` does.
        pair: β > 1 (:func:`hardneg._numerics.lse.cancels`): both tilts in the cancellation-free form of
            :func:`hardneg._numerics.lse.tilted_pair` on ``cos − 1`` with the tilts ``pair_tilts``.
        pair_tilts: ``((1+β)/t, β/t)`` as floats.
        lean: one (A, A) tilt at a time, recomputed in the backward (4B² above
            ``THRESHOLDS.dense_lse_max``: memory no more than the general engine's), else both tilts as one
            (2, A, A) tensor kept for the backward (the fewest operators).
        minus_one: ``−1`` (0-dim): ``v vᵀ − 1`` in the one ``addmm``.
        tilts: ``[(1+β)/t, β/t]`` as (2, 1, 1): both tilted logits from ``v vᵀ − 1`` in one operator.
        tilt_first: ``(1+β)/t`` (0-dim).
        tilt_second: ``β/t`` (0-dim).
        grad_tilts: ``[(1+β)/t, −β/t] / 2B`` as (2, 1, 1) (with the mean's 1/2B).
        inv_t: ``1/t`` (0-dim).
        log_tau: ``log τ⁺`` (0-dim).
        shift: ``log N − log(1 − τ⁺) + log τ⁺`` (0-dim).
        zero: ``0`` (0-dim).
        one: ``1`` (0-dim).
        tiny: the dtype's smallest normal number (0-dim).
        finfo: the dtype's ``torch.finfo``.
        reduce_mean: ``1/2B`` in each of 2B entries: the mean as one ``dot``.
        floor: ``log N − 2/t + log τ⁺`` (0-dim).
        positive_scale: ``1/(2B t)``.
        num_anchors: 2B.

    References:
        Robinson, Chuang, Sra and Jegelka, ICLR 2021, eq. (4) (the estimator's constants, N = 2B − 2).
    """

    b: int
    fill: Tensor
    static: bool
    pair: bool
    pair_tilts: tuple[float, float]
    lean: bool
    minus_one: Tensor
    tilts: Tensor
    tilt_first: Tensor
    tilt_second: Tensor
    grad_tilts: Tensor
    inv_t: Tensor
    log_tau: Tensor
    shift: Tensor
    zero: Tensor
    one: Tensor
    tiny: Tensor
    finfo: torch.finfo
    reduce_mean: Tensor
    floor: Tensor
    positive_scale: float
    num_anchors: int


@cached_tensors(64)
def fused_constants(
    b: int, dtype: torch.dtype, device: torch.device, beta: float, tau_plus: float, temperature: float
) -> FusedConstants:
    """:class:`FusedConstants` of one setting, cached (a β schedule keeps its last 64 values).

    Args:
        b: B, the views per side (2 ≤ B, 4B² ≤ :attr:`~hardneg._numerics.thresholds.Thresholds.fused_max`).
        dtype: the compute dtype.
        device: where the constants live.
        beta: the tilt β (any real; β < 0 up-weights the farthest candidates: rows shifted by their maximum).
        tau_plus: τ⁺ ∈ (0, 1).
        temperature: t > 0.

    Shapes:
        see :class:`FusedConstants`.

    References:
        Robinson, Chuang, Sra and Jegelka, ICLR 2021, eq. (4) (the estimator's constants).

    Example:
        >>> c = fused_constants(3, torch.float32, torch.device("cpu"), 1.0, 0.1, 0.5)
        >>> c.tilts.flatten().tolist(), c.num_anchors
        ([4.0, 2.0], 6)
    """
    if not 2 <= b or 4 * b * b > THRESHOLDS.fused_max:
        raise ValueError(
            f"b must satisfy 2 <= b and 4*b*b <= THRESHOLDS.fused_max = {THRESHOLDS.fused_max} for the "
            f"fused node, got b={b}"
        )
    fill = _fill(b, dtype, device)
    a = 2 * b
    log_n, log_tau, log_rest = math.log(a - 2), math.log(tau_plus), math.log1p(-tau_plus)
    tilts = ((1.0 + beta) / temperature, beta / temperature)
    pair = cancels(*tilts)

    def tensor(*values: float) -> Tensor:
        return torch.tensor(values, dtype=dtype, device=device)

    return FusedConstants(
        b=b,
        fill=fill,
        static=beta >= 0.0 and 2.0 * tilts[0] <= STATIC_SHIFT_MAX.get(dtype, 0.0) and not pair,
        pair=pair,
        pair_tilts=tilts,
        lean=4 * b * b > THRESHOLDS.dense_lse_max,
        minus_one=tensor(-1.0)[0],
        tilts=tensor(*tilts).view(2, 1, 1),
        tilt_first=tensor(tilts[0])[0],
        tilt_second=tensor(tilts[1])[0],
        grad_tilts=tensor((1.0 + beta) / temperature / a, -beta / temperature / a).view(2, 1, 1),
        inv_t=tensor(1.0 / temperature)[0],
        log_tau=tensor(log_tau)[0],
        shift=tensor(log_n - log_rest + log_tau)[0],
        zero=tensor(0.0)[0],
        one=tensor(1.0)[0],
        tiny=tensor(torch.finfo(dtype).tiny)[0],
        finfo=torch.finfo(dtype),
        reduce_mean=torch.full((a,), 1.0 / a, dtype=dtype, device=device),
        floor=tensor(log_n - 2.0 / temperature + log_tau)[0],
        positive_scale=1.0 / (a * temperature),
        num_anchors=a,
    )


@cached_tensors(8)
def _fill(b: int, dtype: torch.dtype, device: torch.device) -> Tensor:
    """SimCLR's additive mask (0 valid, −inf on each view and its partner), (2B, 2B): the
    layout's cached one where it keeps one (4B² ≤ ``THRESHOLDS.dense_lse_max``), else made here once."""
    if 4 * b * b <= THRESHOLDS.dense_lse_max:
        fill = simclr_constants(b, dtype, device).fill
        assert fill is not None
        return fill
    fill = torch.zeros((2 * b, 2 * b), dtype=dtype, device=device)
    return fill.masked_fill_(~simclr_mask(b, device), float("-inf"))


def _tilted_sums(v: Tensor, c: FusedConstants) -> tuple[Tensor, Tensor, tuple[Tensor, ...]]:
    """``(u, q, saved)``: ``u = lse((1+β)s) − lse(βs) − 1/t`` over each view's negatives as (2, B),
    ``q = s⁺ + log τ⁺ − 1/t`` (B,), and what the backward reads. Both tilts as one (2, A, A)
    tensor, kept for the backward (the fewest operators); with ``c.lean`` one (A, A) tilt at a
    time, the backward recomputing them (no more memory than the general engine)."""
    cos_m1 = torch.addmm(c.minus_one, v, v.T)  # cos − 1
    q = torch.addcmul(c.log_tau, cos_m1.diagonal(c.b), c.inv_t)  # s⁺ + log τ⁺ − 1/t, one per pair (B,)
    if c.pair:  # β > 1: the tilted pair of hardneg._numerics.lse (kept for the backward unless lean)
        u, pair = tilted_pair(cos_m1.add_(c.fill), *c.pair_tilts)
        return u.view(2, c.b), q, (() if c.lean else tuple(pair))
    if not c.lean:
        x2 = torch.addcmul(c.fill, cos_m1, c.tilts)  # (2, A, A): k (cos − 1), −inf off the negatives
        if c.static:
            e = x2.exp_()
            sums = e.sum(dim=2, keepdim=True)
            log_s = sums.log()
        else:
            m = x2.amax(dim=2, keepdim=True)
            e = x2.sub_(m).exp_()
            sums = e.sum(dim=2, keepdim=True)
            log_s = sums.log().add_(m)
        la, lb = log_s.unbind(0)
        return (la - lb).view(2, c.b), q, (e, sums)
    first = torch.addcmul(c.fill, cos_m1, c.tilt_first)
    second = cos_m1.mul_(c.tilt_second).add_(c.fill)  # in place: cos − 1 is not read again
    kept: list[Tensor] = []
    logs: list[Tensor] = []
    for x in (first, second):
        if c.static:
            tilt_sums = x.exp_().sum(dim=1, keepdim=True)
            logs.append(tilt_sums.log())
            kept.append(tilt_sums)
        else:
            row_max = x.amax(dim=1, keepdim=True)
            tilt_sums = x.sub_(row_max).exp_().sum(dim=1, keepdim=True)
            logs.append(tilt_sums.log().add_(row_max))
            kept += [tilt_sums, row_max]
    return (logs[0] - logs[1]).view(2, c.b), q, tuple(kept)


def _grad_cosines(
    v: Tensor, saved: tuple[Tensor, ...], grad_u: Tensor, grad_pos: Tensor, c: FusedConstants
) -> Tensor:
    """∂L/∂(v vᵀ) from ∂L/∂u and ∂L/∂s⁺ (summed over the pair's two views): ``∂u_i/∂s_ij = (1+β)
    softmax_j((1+β)s_i) − β softmax_j(βs_i)``
    over the negatives (β > 1: :func:`hardneg._numerics.lse.tilted_pair_grad`), ``∂q_i/∂s⁺_i = 1``;
    ``s = v vᵀ / t``."""
    if c.pair:
        if c.lean:  # the forward's tilted pair again, operator for operator
            _, pair = tilted_pair(torch.addmm(c.minus_one, v, v.T).add_(c.fill), *c.pair_tilts)
        else:
            pair = TiltedPair(*saved)
        grad = tilted_pair_grad(grad_u.view(-1) * c.reduce_mean, pair, *c.pair_tilts)
    elif not c.lean:
        e, sums = saved
        weights = (c.grad_tilts / sums).mul_(grad_u.view(1, -1, 1))
        grad = (e * weights).sum(dim=0)
    else:
        cos_m1 = torch.addmm(c.minus_one, v, v.T)  # the forward's tilts again, operator for operator
        grad = torch.addcmul(c.fill, cos_m1, c.tilt_first)
        second = cos_m1.mul_(c.tilt_second).add_(c.fill)
        sums_first, sums_second = (saved[0], saved[1]) if c.static else (saved[0], saved[2])
        if not c.static:
            grad.sub_(saved[1])
            second.sub_(saved[3])
        column = grad_u.view(-1, 1)
        grad.exp_().mul_((c.grad_tilts[0] / sums_first).mul_(column))
        grad.addcmul_(second.exp_(), (c.grad_tilts[1] / sums_second).mul_(column))
    grad.diagonal(c.b).add_(grad_pos, alpha=c.positive_scale)
    return grad


class _FusedDebiased(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx: Any, z1: Tensor, z2: Tensor, c: FusedConstants, dtype: torch.dtype, validate: bool, mean: bool
    ) -> tuple[Tensor, Tensor]:
        x = torch.cat([z1, z2])
        if x.dtype != dtype:
            x = x.to(dtype)
        n = torch.linalg.vector_norm(x, dim=1, keepdim=True)
        if validate:
            if not bool(norms_in_range(n, c.finfo)):  # the call's one host read
                raise GeneralPath
        else:  # branch-free: a row of norm ≤ tiny is divided by 1 and passes its gradient through
            n = torch.where(n > c.tiny, n, c.one)  # (its radial part v vᵀg underflows)
        v = x / n
        u, q, saved = _tilted_sums(v, c)  # u: a − log N − 1/t; row 0 the first views, row 1 the second
        em = torch.expm1(q - u).neg_()  # 1 − e^d
        log_num = em.clamp(min=c.zero).log_().add_(u).add_(c.shift)  # −inf where d ≥ 0
        active = log_num <= c.floor  # the floor N e^{−1/t} binds
        y = log_num.clamp_(min=c.floor).sub_(q)
        per_anchor = F.softplus(y).view(-1)
        ctx.save_for_backward(v, n, y, em, active, *saved)
        ctx.c, ctx.mean = c, mean
        ctx.set_materialize_grads(False)
        return per_anchor, (torch.dot(per_anchor, c.reduce_mean) if mean else per_anchor.sum())

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad_per: Tensor | None, grad_loss: Tensor | None) -> tuple[Tensor | None, ...]:
        if grad_per is None and grad_loss is None:  # no gradient flows (undefined upstream)
            return None, None, None, None, None, None
        v, n, y, em, active, *saved = ctx.saved_tensors
        c: FusedConstants = ctx.c
        # the upstream gradient per anchor, times 2B (grad_tilts and positive_scale carry 1/2B)
        if grad_loss is None:
            upstream = grad_per.view(2, c.b) * c.num_anchors  # type: ignore[union-attr]
        else:
            upstream = grad_loss if ctx.mean else grad_loss * c.num_anchors
            if grad_per is not None:
                upstream = grad_per.view(2, c.b) * c.num_anchors + upstream
        grad_u, grad_pos = debiased_grads(upstream, y, em, active)  # the estimator's one backward
        assert grad_u is not None and grad_pos is not None
        grad_cos = _grad_cosines(v, tuple(saved), grad_u, grad_pos.sum(dim=0), c)
        grad_v = (grad_cos + grad_cos.T) @ v
        radial = (v * grad_v).sum(dim=1, keepdim=True)
        grad_x = torch.addcmul(grad_v, v, radial, value=-1.0).div_(n)
        needs = ctx.needs_input_grad
        g1 = grad_x[: c.b] if needs[0] else None
        g2 = grad_x[c.b :] if needs[1] else None
        return g1, g2, None, None, None, None


def fused_debiased_loss(
    z1: Tensor,
    z2: Tensor,
    *,
    beta: float,
    tau_plus: float,
    temperature: float,
    dtype: torch.dtype,
    validate: bool = True,
    reduction: str = "mean",
) -> tuple[Tensor, Tensor] | None:
    r"""``(loss, per_anchor)`` of Robinson et al.'s hard + debiased loss (β = 0: Chuang et al.'s
    debiased loss) on SimCLR's two views as one autograd node, or ``None`` when a view's norm is
    out of range with ``validate=True`` (the general path checks and reports that batch).

    Args:
        z1: the first views (B, d), 2 ≤ B, 4B² ≤ :attr:`~hardneg._numerics.thresholds.Thresholds.fused_max`
        (the shapes, dtypes and
            devices checked by the caller).
        z2: the second views (B, d).
        beta: the tilt β (any real) of the negatives' weights ``w ∝ e^{β s}``.
        tau_plus: the class prior τ⁺ ∈ (0, 1).
        temperature: t > 0.
        dtype: the compute dtype (:func:`~hardneg.scores.layouts.compute_dtype` of the views').
        validate: read the norms once and return ``None`` if one is out of range (``False``: the
            branch-free normalisation, no host read).
        reduction: ``"mean"``, ``"sum"`` or ``"none"`` (then ``loss`` is ``per_anchor``).

    Shapes:
        ``z1``, ``z2`` (B, d) → a scalar (or (2B,)) and the per-anchor losses (2B,), the first
        views first.

    References:
        Robinson, Chuang, Sra and Jegelka, *Contrastive Learning with Hard Negative Samples*,
        ICLR 2021, §3, eq. (4); Chuang, Robinson, Lin, Torralba and Jegelka, *Debiased
        Contrastive Learning*, NeurIPS 2020, §3; Chen, Kornblith, Norouzi and Hinton, ICML 2020,
        eq. (1) (the layout).

    Example:
        >>> from hardneg import ContrastiveLoss, negatives
        >>> z1, z2 = torch.randn(4, 8), torch.randn(4, 8)
        >>> loss, per_anchor = fused_debiased_loss(z1, z2, beta=1.0, tau_plus=0.1, temperature=0.5,
        ...                                        dtype=torch.float32)
        >>> general = ContrastiveLoss(temperature=0.5, tau_plus=0.1, negatives=negatives.Hard(beta=1.0))
        >>> per_anchor.shape, bool(torch.allclose(loss, general(z1, z2, details=True).loss))
        (torch.Size([8]), True)
    """
    c = fused_constants(z1.shape[0], dtype, z1.device, float(beta), float(tau_plus), float(temperature))
    try:
        per_anchor, loss = _FusedDebiased.apply(z1, z2, c, dtype, validate, reduction == "mean")
    except GeneralPath:
        return None
    return (per_anchor if reduction == "none" else loss), per_anchor


class _TiltedDebiasedLoss(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx: Any,
        logits: Tensor,
        positive: Tensor,
        fill: Tensor,
        log_n: Tensor,
        beta: float,
        tau_plus: float,
        temperature: float,
    ) -> Tensor:
        xm = logits + fill
        ctx.pair = cancels(1.0 + beta, beta)
        if beta == 0.0:  # uniform weights: a = lse_j s_ij
            lse = torch.logsumexp(xm, dim=1)
            lws = lse
            saved: tuple[Tensor, ...] = (xm, lse[:, None])
        elif ctx.pair:  # β > 1: the cancellation-free tilted pair of hardneg._numerics.lse
            u, saved = tilted_pair(xm, 1.0 + beta, beta)
            lws = u + log_n
        else:  # a = lse_j((1+β) s_ij) − lse_j(β s_ij) + log N_i: both tilts in one call
            x2 = xm * tilt_pair(1.0 + beta, beta, xm.dtype, xm.device)
            lse2 = torch.logsumexp(x2, dim=2)
            lse_a, lse_b = lse2.unbind(0)
            lws = lse_a - lse_b + log_n
            saved = (x2, lse2[:, :, None])
        y, em, active = debiased_terms(lws, positive, log_n, tau_plus, temperature)
        ctx.save_for_backward(y, em, active, *saved)
        ctx.beta = beta
        return F.softplus(y)

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, ...]:
        y, em, active, *saved = ctx.saved_tensors
        needs = ctx.needs_input_grad
        grad_lws, grad_pos = debiased_grads(grad, y, em, active, (needs[0], needs[1]))
        grad_logits = None
        if needs[0] and grad_lws is not None and ctx.pair:
            beta = ctx.beta
            grad_logits = tilted_pair_grad(grad_lws, TiltedPair(*saved), 1.0 + beta, beta)
        elif needs[0] and grad_lws is not None:
            x, lse = saved
            p = torch.exp(x - lse)  # the softmax of each tilt over the valid entries (0 off the mask)
            if ctx.beta == 0.0:
                grad_logits = p.mul_(grad_lws[:, None])
            else:  # ∂a/∂s_ij = (1+β) softmax_j((1+β) s) − β softmax_j(β s)
                beta = ctx.beta
                scale = tilt_pair(1.0 + beta, -beta, grad_lws.dtype, grad_lws.device) * grad_lws[:, None]
                grad_logits = p.mul_(scale).sum(dim=0)  # (2, A, N) · (2, A, 1) summed over the tilts
        return grad_logits, grad_pos, None, None, None, None, None


def tilted_debiased_loss(scores: Scores, *, beta: float, tau_plus: float) -> Tensor:
    r"""Robinson et al.'s hard + debiased loss per anchor as one autograd node from the logits.

        L_i = softplus(log Neg_i − s⁺_i),   a_i = lse_j((1+β) s_ij) − lse_j(β s_ij) + log N_i

    (β = 0: ``a_i = lse_j s_ij``, the debiased loss of Chuang et al.), ``Neg_i`` as in
    :func:`~hardneg.objectives.debiased_log_negative`, over the valid entries given by
    ``scores.fill``. The values are those of :class:`~hardneg.objectives.Debiased` on
    :class:`~hardneg.negatives.Hard` (or uniform) weights, bit for bit; the backward is the
    closed form ``∂L/∂s_ij = ∂L/∂a_i · ((1+β) softmax_j((1+β) s_i) − β softmax_j(β s_i))`` and
    :func:`debiased_grads`, for β > 1 in the cancellation-free form of
    :func:`hardneg._numerics.lse.tilted_pair` (as every engine computes it). For small matrices (it keeps
    the (2, A, N) tilted logits for the backward) with every row non-empty (``scores.nonempty``)
    and one positive per anchor.

    Args:
        scores: the scores, with ``fill`` (the additive mask) and ``nonempty``.
        beta: the tilt β ≥ 0 of the weights ``w ∝ e^{β s}``.
        tau_plus: τ⁺ ∈ (0, 1).

    Shapes:
        ``scores`` (A, N) → (A,).

    References:
        Robinson, Chuang, Sra, Jegelka, *Contrastive Learning with Hard Negative Samples*,
        ICLR 2021, §3, eq. (4); Chuang, Robinson, Lin, Torralba, Jegelka, *Debiased Contrastive
        Learning*, NeurIPS 2020, §3.

    Example:
        >>> from hardneg.scores import simclr_scores
        >>> s = simclr_scores(torch.randn(4, 8), torch.randn(4, 8), temperature=0.5)
        >>> tilted_debiased_loss(s, beta=1.0, tau_plus=0.1).shape
        torch.Size([8])
    """
    if scores.fill is None or not scores.nonempty or scores.positive_mask is not None:
        raise ValueError(
            "scores must have fill, nonempty=True and one positive per anchor (SimCLR's layout), "
            f"got fill={'None' if scores.fill is None else 'given'}, nonempty={scores.nonempty}, "
            f"positive_mask={'None' if scores.positive_mask is None else 'given'}"
        )
    if not 0.0 < tau_plus < 1.0:
        raise ValueError(f"tau_plus must lie in (0, 1), got {tau_plus!r}")
    if beta < 0.0:
        raise ValueError(f"beta must be >= 0, got {beta!r}")
    out: Tensor = _TiltedDebiasedLoss.apply(
        scores.logits, scores.positive, scores.fill, scores.log_num_valid(), float(beta),
        float(tau_plus), float(scores.temperature),
    )
    return out
