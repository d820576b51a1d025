"""The debiased loss as autograd nodes with closed-form backwards (the per-call cost at small B).

:func:`debiased_terms` and :func:`debiased_grads` are the forward and the closed-form backward
of ``softplus(log Neg_i − s⁺_i)`` given ``a_i = log Σ_j w_ij e^{s_ij}``
(:class:`~hardneg.objectives.Debiased`'s node, :mod:`hardneg.objectives.debiased`);
:func:`tilted_debiased_loss` is one node from the (A, N) logits, for hard (or uniform) weights
``w ∝ e^{β s}`` on a small matrix with an additive mask: the two tilted log-sum-exps of the
weighted sum in one ATen call, the debiased term, and a backward of a handful of operators
instead of the ~40 autograd replays through the composite.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.autograd.function import once_differentiable

from hardneg._constants import constant
from hardneg._lse import TiltedPair, cancels, tilt_pair, tilted_pair, tilted_pair_grad
from hardneg.objectives.base import log1mexp
from hardneg.scores import Scores

__all__ = ["debiased_grads", "debiased_terms", "tilted_debiased_loss"]


def debiased_terms(
    lws: Tensor, positive: Tensor, log_n: Tensor, tau_plus: float, temperature: float
) -> tuple[Tensor, Tensor, Tensor]:
    r"""``(y, d, active)`` of the debiased loss ``softplus(y)`` with one positive and τ⁺ > 0:
    ``y = max(log Neg_i, log N_i − 1/t) − s⁺_i``, ``d = log(N_i τ⁺) + s⁺_i − a_i`` and where the
    floor binds, the operators of :func:`~hardneg.objectives.debiased_log_negative` (the same
    values, bit for bit).

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
        §3; Robinson, Chuang, Sra, Jegelka, ICLR 2021, eq. (4) and Fig. 13.

    Example:
        >>> y, d, active = debiased_terms(torch.tensor([2.0]), torch.tensor([1.0]),
        ...                               torch.tensor([1.8]), 0.1, 0.5)
        >>> y.shape, bool(active)
        (torch.Size([1]), False)
    """
    # the numbers as cached 0-dim tensors (hardneg._constants): the same values, fewer µs
    floor = log_n - constant(1.0 / temperature, log_n)
    d = constant(math.log(tau_plus), log_n) + log_n + positive - lws
    minus_inf = constant(float("-inf"), d)
    log_num = torch.where(d < constant(0.0, d), lws + log1mexp(d), minus_inf)
    log_num = log_num - constant(math.log1p(-tau_plus), d)
    return torch.maximum(log_num, floor) - positive, d, log_num <= floor


def debiased_grads(
    grad: Tensor, y: Tensor, d: Tensor, active: Tensor, needs: tuple[bool, ...]
) -> tuple[Tensor | None, Tensor | None]:
    r"""``(∂L/∂a, ∂L/∂s⁺)`` of ``L = softplus(y)`` (:func:`debiased_terms`) in closed form. With
    ``g = ∂L/∂L_i · σ(y)``: ``∂L/∂a = g / (1 − e^d)`` and ``∂L/∂s⁺ = −g / (1 − e^d)`` where the
    floor does not bind, ``0`` and ``−g`` where it binds (``log Neg = a + log(1 − e^d) −
    log(1 − τ⁺)``). ``needs``: which of the two are asked for (``None`` otherwise).

    Args:
        grad: the upstream gradient.
        y: the softplus argument.
        d: ``log(N τ⁺) + s⁺ − a``.
        active: where the floor binds.
        needs: ``(∂L/∂a asked, ∂L/∂s⁺ asked)``.

    Shapes:
        all (A,) → two (A,) tensors (or ``None``).

    References:
        Chuang, Robinson, Lin, Torralba, Jegelka, NeurIPS 2020, §3 (the estimator differentiated).

    Example:
        >>> y, d = torch.tensor([0.5]), torch.tensor([-1.0])
        >>> ga, gp = debiased_grads(torch.ones(1), y, d, torch.tensor([False]), (True, True))
        >>> bool(torch.allclose(ga, -gp))
        True
    """
    g = grad * torch.sigmoid(y)
    h = g / torch.expm1(d).neg_()  # g / (1 − e^d); read only where d < 0 (the floor not binding)
    grad_lws = torch.where(active, constant(0.0, h), h) if needs[0] else None
    grad_pos = torch.where(active, g, h).neg_() if needs[1] else None
    return grad_lws, grad_pos


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
        elif ctx.pair:  # β > 1: the cancellation-free tilted pair of hardneg._lse
            u, saved = tilted_pair(xm, 1.0 + beta, beta)
            lws = u + log_n
        else:  # a = lse_j((1+β) s_ij) − lse_j(β s_ij) + log N_i: both tilts in one call
            x2 = xm * tilt_pair(1.0 + beta, beta, xm.dtype, xm.device)
            lse2 = torch.logsumexp(x2, dim=2)
            lse_a, lse_b = lse2.unbind(0)
            lws = lse_a - lse_b + log_n
            saved = (x2, lse2[:, :, None])
        y, d, active = debiased_terms(lws, positive, log_n, tau_plus, temperature)
        ctx.save_for_backward(y, d, active, *saved)
        ctx.beta = beta
        return F.softplus(y)

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, ...]:
        y, d, active, *saved = ctx.saved_tensors
        needs = ctx.needs_input_grad
        grad_lws, grad_pos = debiased_grads(grad, y, d, active, (needs[0], needs[1]))
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
    :func:`hardneg._lse.tilted_pair` (as every engine computes it). For small matrices (it keeps
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
