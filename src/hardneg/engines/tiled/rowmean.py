"""Per-anchor weighted means and maxima of a pointwise function of ``s_ij − s⁺_i``, over tiles.

The hinge/triplet family reads, per anchor, an expectation under the negative distribution

    M_i = Σ_{j valid} p_ij h(s_ij − s⁺_i),    p_ij = e^{β s_ij − L_β,i},  L_β,i = log Σ_{j valid} e^{β s_ij}

(``β = 0``: ``p_ij = 1/N_i``, uniform negatives), or the largest negative logit ``max_j s_ij``
(Arora et al.'s k-way hinge). :func:`tiled_row_mean` streams candidate tiles twice (``L_β``,
then ``M``) and its backward recomputes each tile with

    ∂M_i/∂s_ij = p_ij [β (h_ij − M_i) + h'_ij],    ∂M_i/∂s⁺_i = −Σ_j p_ij h'_ij,

so memory stays O((A + N)·d + tile²). :func:`tiled_row_argmax` finds the maximising candidate
per anchor (no gradient); the caller recomputes ``s_{i, j*}`` in autograd, whose gradient is
that of ``max`` (Robinson et al., ICLR 2021, eq. (3) for ``p``; Jiang et al., arXiv:2111.03169,
§IV and Arora et al., ICML 2019, Def. 2.3 for the losses).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from hardneg.engines.tiled.lse import _forward as _lse_forward
from hardneg.engines.tiled.lse import plan_tiles
from hardneg.engines.tiled.mask import TileMask
from hardneg.engines.tiled.stream import tiles as _tiles
from hardneg.negatives.ramp import Ramp

__all__ = ["Ramp", "tiled_row_argmax", "tiled_row_mean"]


def _block_terms(
    s: Tensor, pos: Tensor, lse_beta: Tensor | None, counts: Tensor, beta: float, ramp: Ramp
) -> tuple[Tensor, Tensor, Tensor]:
    """``(p, h, h')`` of a logits block whose invalid entries are −inf; all 0 off the mask."""
    valid = torch.isfinite(s)
    s0 = torch.where(valid, s, 0.0)
    if lse_beta is None:
        p = valid.to(s.dtype) / counts.to(s.dtype)[:, None]
    else:
        p = torch.where(valid, torch.exp(s0 * beta - lse_beta[:, None]), 0.0)
    v = s0 - pos[:, None]
    h = torch.where(valid, ramp.value(v), 0.0)
    dh = torch.where(valid, ramp.slope(v), 0.0)
    return p, h, dh


class _TiledRowMean(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx: Any,
        anchors: Tensor,
        candidates: Tensor,
        positive: Tensor,
        beta: float,
        ramp: Ramp,
        rule: TileMask,
        tile: int,
    ) -> Tensor:
        a_n = anchors.shape[0]
        total = torch.zeros(a_n, dtype=anchors.dtype, device=anchors.device)
        if beta != 0:  # pass 1: L_β; pass 2: Σ_j p_ij h_ij
            # β < 0: L_β(s) = L_|β|(−s), the logits of the negated anchors (the streamed
            # log-sum-exp takes positive exponents)
            signed = anchors if beta > 0 else -anchors
            plan = plan_tiles(signed, candidates, (abs(beta),), rule, tile)
            lse, counts, _, _ = _lse_forward(signed, candidates, (abs(beta),), rule, tile, False, plan)
            lse_beta: Tensor | None = lse[:, 0]
        else:  # one pass: Σ_j h_ij and N_i, then the mean
            lse_beta, counts = None, torch.zeros(a_n, dtype=torch.int64, device=anchors.device)
        for r0, r1 in _tiles(a_n, tile):
            for c0, c1 in _tiles(candidates.shape[0], tile):
                s = anchors[r0:r1] @ candidates[c0:c1].T
                n_blk = rule.fill_invalid_(s, r0, r1, c0, c1)
                valid = torch.isfinite(s)
                v = torch.where(valid, s, 0.0).sub_(positive[r0:r1, None])
                h = torch.where(valid, ramp.value(v), 0.0)
                if lse_beta is None:
                    counts[r0:r1] += n_blk
                    total[r0:r1] += h.sum(dim=1)
                else:
                    p = torch.where(valid, torch.exp(s * beta - lse_beta[r0:r1, None]), 0.0)
                    total[r0:r1] += (p * h).sum(dim=1)
        mean = total / counts.clamp_min(1).to(total.dtype) if lse_beta is None else total
        ctx.save_for_backward(
            anchors,
            candidates,
            positive,
            mean,
            counts,
            lse_beta if lse_beta is not None else mean.new_empty(0),
        )
        ctx.beta, ctx.ramp, ctx.rule, ctx.tile = beta, ramp, rule, tile
        return mean

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, ...]:
        anchors, candidates, positive, mean, counts, lse_beta_saved = ctx.saved_tensors
        beta, ramp, rule, tile = ctx.beta, ctx.ramp, ctx.rule, ctx.tile
        lse_beta = lse_beta_saved if beta != 0 else None
        ga = torch.zeros_like(anchors) if ctx.needs_input_grad[0] else None
        gc = torch.zeros_like(candidates) if ctx.needs_input_grad[1] else None
        gp = torch.zeros_like(positive)
        for r0, r1 in _tiles(anchors.shape[0], tile):
            a_blk = anchors[r0:r1]
            for c0, c1 in _tiles(candidates.shape[0], tile):
                c_blk = candidates[c0:c1]
                s = a_blk @ c_blk.T
                rule.fill_invalid_(s, r0, r1, c0, c1)
                p, h, dh = _block_terms(
                    s,
                    positive[r0:r1],
                    None if lse_beta is None else lse_beta[r0:r1],
                    counts[r0:r1],
                    beta,
                    ramp,
                )
                pdh = p * dh
                gp[r0:r1] -= pdh.sum(dim=1) * grad[r0:r1]
                g = pdh.add_(p * (h - mean[r0:r1, None]), alpha=beta) if beta != 0 else pdh
                g.mul_(grad[r0:r1, None])
                if ga is not None:
                    ga[r0:r1].addmm_(g, c_blk)
                if gc is not None:
                    gc[c0:c1].addmm_(g.T, a_blk)
        return ga, gc, gp, None, None, None, None


def tiled_row_mean(
    anchors: Tensor,
    candidates: Tensor,
    positive: Tensor,
    *,
    beta: float,
    ramp: Ramp,
    rule: TileMask,
    tile: int,
) -> Tensor:
    """``M_i = Σ_j p_ij h(s_ij − s⁺_i)`` (A,), ``p`` the β-tilted distribution over valid candidates
    (any real β: β < 0 up-weights the farthest candidates).

    Shapes: ``anchors`` (A, d) (divided by the temperature), ``candidates`` (N, d), ``positive``
    (A,) the positive logits ``s⁺_i``. Differentiable in all three.
    """
    if tile < 1:
        raise ValueError(f"tile must be an int >= 1, got {tile}")
    out: Tensor = _TiledRowMean.apply(anchors, candidates, positive, float(beta), ramp, rule, tile)
    return out


@torch.no_grad()
def tiled_row_argmax(anchors: Tensor, candidates: Tensor, rule: TileMask, *, tile: int) -> Tensor:
    """Index ``j*_i = argmax_{j valid} s_ij`` per anchor (A,) int64, streaming candidate tiles."""
    a_n = anchors.shape[0]
    best = torch.full((a_n,), float("-inf"), dtype=anchors.dtype, device=anchors.device)
    index = torch.zeros(a_n, dtype=torch.int64, device=anchors.device)
    for r0, r1 in _tiles(a_n, tile):
        for c0, c1 in _tiles(candidates.shape[0], tile):
            s = anchors[r0:r1] @ candidates[c0:c1].T
            rule.fill_invalid_(s, r0, r1, c0, c1)
            value, where = s.max(dim=1)
            better = value > best[r0:r1]
            best[r0:r1] = torch.where(better, value, best[r0:r1])
            index[r0:r1] = torch.where(better, where + c0, index[r0:r1])
    return index
