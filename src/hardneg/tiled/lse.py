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

from typing import Any

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from hardneg.tiled.mask import TileMask

__all__ = ["tiled_lse"]


def _tiles(n: int, tile: int) -> list[tuple[int, int]]:
    return [(s, min(n, s + tile)) for s in range(0, n, tile)]


def _forward(
    anchors: Tensor, candidates: Tensor, exponents: tuple[float, ...], rule: TileMask, tile: int
) -> tuple[Tensor, Tensor]:
    a_n = anchors.shape[0]
    e_n = len(exponents)
    out = torch.empty(a_n, e_n, dtype=anchors.dtype, device=anchors.device)
    counts = torch.zeros(a_n, dtype=torch.int64, device=anchors.device)
    for r0, r1 in _tiles(a_n, tile):
        a_blk = anchors[r0:r1]
        run_max = torch.full((r1 - r0, e_n), float("-inf"), dtype=anchors.dtype, device=anchors.device)
        run_sum = torch.zeros_like(run_max)
        for c0, c1 in _tiles(candidates.shape[0], tile):
            s = a_blk @ candidates[c0:c1].T
            counts[r0:r1] += rule.fill_invalid_(s, r0, r1, c0, c1)
            for e, a in enumerate(exponents):
                x = s.mul_(a) if e == e_n - 1 else s * a  # the last exponent reuses the logits buffer
                m = torch.maximum(run_max[:, e], x.amax(dim=1))
                m_safe = torch.where(torch.isfinite(m), m, 0.0)
                scale = torch.where(torch.isfinite(run_max[:, e]), torch.exp(run_max[:, e] - m_safe), 0.0)
                run_sum[:, e] = run_sum[:, e] * scale + x.sub_(m_safe[:, None]).exp_().sum(dim=1)
                run_max[:, e] = m
        finite = torch.isfinite(run_max)
        out[r0:r1] = torch.where(finite, torch.where(finite, run_max, 0.0) + run_sum.log(), float("-inf"))
    return out, counts


class _TiledLSE(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx: Any, anchors: Tensor, candidates: Tensor, exponents: tuple[float, ...], rule: TileMask, tile: int
    ) -> tuple[Tensor, Tensor]:
        out, counts = _forward(anchors, candidates, exponents, rule, tile)
        ctx.save_for_backward(anchors, candidates, out)
        ctx.exponents, ctx.rule, ctx.tile = exponents, rule, tile
        ctx.mark_non_differentiable(counts)
        return out, counts

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: Tensor, _counts_grad: Tensor | None) -> tuple[Tensor | None, ...]:
        anchors, candidates, out = ctx.saved_tensors
        exponents, rule, tile = ctx.exponents, ctx.rule, ctx.tile
        ga = torch.zeros_like(anchors) if ctx.needs_input_grad[0] else None
        gc = torch.zeros_like(candidates) if ctx.needs_input_grad[1] else None
        # rows with no valid entry (L = −inf) get no gradient
        coef = torch.where(torch.isfinite(out), grad, 0.0) * torch.tensor(
            exponents, dtype=grad.dtype, device=grad.device
        )
        lse = torch.where(torch.isfinite(out), out, 0.0)
        active = [e for e in range(len(exponents)) if bool((coef[:, e] != 0).any())]  # e.g. not 2β (ESS)
        if not active:
            return ga, gc, None, None, None
        for r0, r1 in _tiles(anchors.shape[0], tile):
            a_blk = anchors[r0:r1]
            ga_blk = None
            for c0, c1 in _tiles(candidates.shape[0], tile):
                c_blk = candidates[c0:c1]
                s = a_blk @ c_blk.T
                rule.fill_invalid_(s, r0, r1, c0, c1)  # e^{−inf} = 0: invalid entries get no gradient
                g: Tensor | None = None
                for e in active:
                    a = exponents[e]
                    x = s.mul_(a) if e == active[-1] and a != 0.0 else s * a
                    x.sub_(lse[r0:r1, e, None]).exp_().mul_(coef[r0:r1, e, None])
                    g = x if g is None else g.add_(x)
                if g is None:
                    continue
                if ga is not None:
                    ga_blk = g @ c_blk if ga_blk is None else ga_blk.addmm_(g, c_blk)
                if gc is not None:
                    gc[c0:c1].addmm_(g.T, a_blk)
            if ga is not None and ga_blk is not None:
                ga[r0:r1] = ga_blk
        return ga, gc, None, None, None


def tiled_lse(
    anchors: Tensor, candidates: Tensor, exponents: tuple[float, ...], rule: TileMask, *, tile: int
) -> tuple[Tensor, Tensor]:
    """``(L, N)``: masked ``log Σ_j e^{a_e s_ij}`` (A, E) and valid counts N_i (A,) int64.

    Shapes: ``anchors`` (A, d) (divided by the temperature), ``candidates`` (N, d); ``rule``
    makes each tile's mask; ``tile`` is the side of a tile. Differentiable in both inputs.
    """
    if tile < 1:
        raise ValueError(f"tile must be an int >= 1, got {tile}")
    out: tuple[Tensor, Tensor] = _TiledLSE.apply(
        anchors, candidates, tuple(float(a) for a in exponents), rule, tile
    )
    return out
