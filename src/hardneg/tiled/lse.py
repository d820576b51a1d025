"""Streaming masked log-sum-exp over tiles, with a recomputing backward.

For anchors ``â_i`` (already divided by the temperature) and candidates ``ĉ_j``, logits
``s_ij = ⟨â_i, ĉ_j⟩`` and exponents ``a_1 … a_E``, this computes per anchor

    L_e,i = log Σ_{j valid} e^{a_e s_ij}          (shape (A, E)),

streaming candidate tiles through a running (max, sum) per exponent, so that only one tile of
logits exists at a time. The backward pass recomputes each tile's logits and accumulates

    ∂/∂s_ij = Σ_e g_e,i · a_e · e^{a_e s_ij − L_e,i}   (valid entries),
    ∇â_i += Σ_j ∂/∂s_ij · ĉ_j,    ∇ĉ_j += Σ_i ∂/∂s_ij · â_i,

so the extra memory is O((A + N)·d + tile²) instead of O(A·N). This is the online-softmax
recurrence of Milakov & Gimelshein (arXiv:1805.02867) and the tile-wise contrastive loss of
Cheng et al. (Inf-CL, arXiv:2410.17243), extended to several exponents (hard negatives need
``1 + β`` and ``β``) and to masks made per tile.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from hardneg.tiled.mask import TileMask
from hardneg.tiled.stream import (
    Scratch,
    absorb_,
    exp_floor,
    finish,
    grad_apply,
    grad_plan,
    may_underflow,
    tiles,
)

__all__ = ["tiled_lse"]


def _forward(
    anchors: Tensor,
    candidates: Tensor,
    exponents: tuple[float, ...],
    rule: TileMask,
    tile: int,
    compiled: bool,
    risky: bool,
) -> tuple[Tensor, Tensor]:
    """Forward of :class:`_TiledLSE`; ``risky``: :func:`~hardneg.tiled.stream.may_underflow` of
    the inputs (then every tile's exponent arguments are floored)."""
    a_n = anchors.shape[0]
    fold = block_absorb(exponents, anchors, compiled)
    out = torch.empty(a_n, len(exponents), dtype=anchors.dtype, device=anchors.device)
    counts = torch.zeros(a_n, dtype=torch.int64, device=anchors.device)
    work = Scratch()
    low = exp_floor(anchors.dtype)
    for r0, r1 in tiles(a_n, tile):
        a_blk = anchors[r0:r1]
        run_max = torch.full((r1 - r0,), float("-inf"), dtype=anchors.dtype, device=anchors.device)
        run_sum = torch.zeros(r1 - r0, len(exponents), dtype=anchors.dtype, device=anchors.device)
        for c0, c1 in tiles(candidates.shape[0], tile):
            s = torch.mm(a_blk, candidates[c0:c1].T, out=work.get("s", r1 - r0, c1 - c0, a_blk))
            valid = rule.fill_invalid_(s, r0, r1, c0, c1)
            counts[r0:r1] += valid
            fold(run_max, run_sum, s, 1, work, True, floor_for(risky, valid, c1 - c0, low))
        out[r0:r1] = finish(run_max, run_sum, exponents)
    return out, counts


class _TiledLSE(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx: Any,
        anchors: Tensor,
        candidates: Tensor,
        exponents: tuple[float, ...],
        rule: TileMask,
        tile: int,
        compiled: bool,
    ) -> tuple[Tensor, Tensor]:
        risky = may_underflow(anchors, candidates, exponents, candidates.shape[0])  # once, for both passes
        out, counts = _forward(anchors, candidates, exponents, rule, tile, compiled, risky)
        ctx.save_for_backward(anchors, candidates, out)
        ctx.exponents, ctx.rule, ctx.tile, ctx.compiled = exponents, rule, tile, compiled
        ctx.risky = risky
        ctx.mark_non_differentiable(counts)
        return out, counts

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: Tensor, _counts_grad: Tensor | None) -> tuple[Tensor | None, ...]:
        anchors, candidates, out = ctx.saved_tensors
        exponents, rule, tile = ctx.exponents, ctx.rule, ctx.tile
        ga = torch.zeros_like(anchors) if ctx.needs_input_grad[0] else None
        gc = torch.zeros_like(candidates) if ctx.needs_input_grad[1] else None
        coef, lse, active = backward_coefficients(grad, out, exponents)
        if not active:
            return ga, gc, None, None, None, None
        plan, grad_of = block_gradient(exponents, active, anchors, ctx.compiled)
        work = Scratch()
        risky, low = ctx.risky, exp_floor(anchors.dtype)
        for r0, r1 in tiles(anchors.shape[0], tile):
            a_blk = anchors[r0:r1]
            planned = plan(lse[r0:r1], coef[r0:r1])
            ga_blk = None
            for c0, c1 in tiles(candidates.shape[0], tile):
                c_blk = candidates[c0:c1]
                s = torch.mm(a_blk, c_blk.T, out=work.get("s", r1 - r0, c1 - c0, a_blk))
                valid = rule.fill_invalid_(s, r0, r1, c0, c1)  # −inf: no gradient (but e^{floor})
                g = grad_of(s, planned, 1, work, "", floor_for(risky, valid, c1 - c0, low))
                if ga is not None:
                    ga_blk = g @ c_blk if ga_blk is None else ga_blk.addmm_(g, c_blk)
                if gc is not None:
                    gc[c0:c1].addmm_(g.T, a_blk)
            if ga is not None and ga_blk is not None:
                ga[r0:r1] = ga_blk
        return ga, gc, None, None, None, None


def backward_coefficients(
    grad: Tensor, out: Tensor, exponents: tuple[float, ...]
) -> tuple[Tensor, Tensor, list[int]]:
    """``(coef, lse, active)``: ``coef = a_e · ∂loss/∂L_e`` (A, E), zero on rows without a valid
    entry (L = −inf: no gradient), ``lse`` with those rows set to 0, and the exponents that carry
    a gradient (e.g. not the 2β of the effective sample size)."""
    finite = torch.isfinite(out)
    coef = torch.where(finite, grad, 0.0) * torch.tensor(exponents, dtype=grad.dtype, device=grad.device)
    lse = torch.where(finite, out, 0.0)
    active = [e for e in range(len(exponents)) if bool((coef[:, e] != 0).any())]
    return coef, lse, active


def floor_for(risky: bool, valid: Tensor, width: int, low: float) -> float | None:
    """The exponent floor of a tile (:func:`~hardneg.tiled.stream.exp_floor`): where an argument
    may underflow (``risky``) or the tile holds masked (−inf) entries (a row with fewer than
    ``width`` valid entries), else ``None`` (no clamping pass)."""
    return low if risky or bool((valid < width).any()) else None


def block_absorb(
    exponents: tuple[float, ...], like: Tensor, compiled: bool
) -> Callable[[Tensor, Tensor, Tensor, int, Scratch, bool, float | None], None]:
    """``(run_max, run_sum, s, dim, scratch, consume, floor) → None``: fold a logits block into the
    running statistics in place — the eager :func:`~hardneg.tiled.stream.absorb_` or its compiled,
    fused twin (which never overwrites ``s``, and needs no floor: its exponential is its own)."""
    if not compiled:
        return lambda run_max, run_sum, s, dim, work, consume, floor: absorb_(
            run_max, run_sum, s, exponents, dim=dim, consume=consume, scratch=work, floor=floor
        )
    from hardneg.tiled.compiled import compiled_kernels

    absorb, _ = compiled_kernels()
    exps = torch.tensor(exponents, dtype=like.dtype, device=like.device)

    def fold(
        run_max: Tensor,
        run_sum: Tensor,
        s: Tensor,
        dim: int,
        work: Scratch,
        consume: bool,
        floor: float | None,
    ) -> None:
        m, sums = absorb(run_max, run_sum, s, exps, dim)
        run_max.copy_(m)
        run_sum.copy_(sums)

    return fold


def block_gradient(
    exponents: tuple[float, ...], active: list[int], like: Tensor, compiled: bool
) -> tuple[Callable[[Tensor, Tensor], Any], Callable[[Tensor, Any, int, Scratch, str, float | None], Tensor]]:
    """``(plan, apply)``: ``plan(lse, coef)`` prepares the per-row vectors of a block of rows once,
    ``apply(s, planned, dim, scratch, tag, floor) → Σ_e coef_e e^{a_e s − L_e}`` over a tile of
    them — the eager :func:`~hardneg.tiled.stream.grad_apply` or the compiled, fused twin."""
    if not compiled:
        return (
            lambda lse, coef: grad_plan(lse, coef, exponents, active),
            lambda s, planned, dim, work, tag, floor: grad_apply(
                s, planned, dim=dim, scratch=work, tag=tag, floor=floor
            ),
        )
    from hardneg.tiled.compiled import compiled_kernels

    _, grad = compiled_kernels()
    exps = torch.tensor([exponents[e] for e in active], dtype=like.dtype, device=like.device)
    return (
        lambda lse, coef: (lse[:, active], coef[:, active]),
        lambda s, planned, dim, work, tag, floor: grad(s, planned[0], planned[1], exps, dim),
    )


def tiled_lse(
    anchors: Tensor,
    candidates: Tensor,
    exponents: tuple[float, ...],
    rule: TileMask,
    *,
    tile: int,
    compiled: bool = False,
) -> tuple[Tensor, Tensor]:
    """``(L, N)``: masked ``log Σ_j e^{a_e s_ij}`` (A, E) and valid counts N_i (A,) int64.

    Shapes: ``anchors`` (A, d) (divided by the temperature), ``candidates`` (N, d); ``rule``
    makes each tile's mask; ``tile`` is the side of a tile; ``compiled`` fuses the element-wise
    work of a tile with ``torch.compile`` (:mod:`hardneg.tiled.compiled`). Differentiable in both
    inputs.
    """
    if tile < 1:
        raise ValueError(f"tile must be an int >= 1, got {tile}")
    out: tuple[Tensor, Tensor] = _TiledLSE.apply(
        anchors, candidates, tuple(float(a) for a in exponents), rule, tile, bool(compiled)
    )
    return out
