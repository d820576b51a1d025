"""The streaming log-sum-exp of a symmetric score matrix: each tile pair computed once.

In SimCLR's layout the anchors are the candidates: with the 2B views ``v`` and ``s_ij = c·⟨v_i,
v_j⟩`` (``c = 1/t``), ``s`` is symmetric, and so is the validity mask when it is made only of
symmetric exclusions (the view itself and its partner) and, optionally, labels (collision-free
negatives). Then the tile ``(I, J)`` of the logits serves the rows ``I`` (a row-wise online
log-sum-exp) and, transposed, the rows ``J`` (a column-wise one), so only the tiles with ``I ≤ J``
are computed: half the matrix products of :func:`~hardneg.engines.tiled.lse.tiled_lse`, forward and
backward. The backward pass recomputes each tile and, with ``H = G_IJ + G_JIᵀ`` (the gradients
with respect to ``s_ij`` as an entry of row ``i`` and ``s_ji`` as an entry of row ``j``) and
``w = c·v`` (so that ``s_IJ = w_I v_Jᵀ`` needs no scaling pass),

    ∇v_I += H w_J,    ∇v_J += Hᵀ w_I       (diagonal tiles: ∇v_I += H w_I).

``G_JIᵀ`` is the column-wise gradient of the tile itself (``s_ji = s_ij``), so neither direction
needs a transposed copy, and both share one exponential per entry and exponent where the tile
allows a common shift (:mod:`hardneg.engines.tiled.pair`); the extra memory is O(n·d + tile²).
Robinson et al.'s hard negatives need the exponents ``1 + β`` and ``β`` (ICLR 2021, eq. 5 in
log form), as in :mod:`hardneg.engines.tiled.lse`; ``difference=True`` as there, except that the tilted
pair is taken only where the shared shift is unsafe (its statistics cannot be rebased from a shift
above a row's maximum without cancellation, so it takes the running maximum of each direction);
where the shift is safe, ``2 a_max h ≤ B`` bounds every exponent and the two log-sum-exps lose
little to the difference (measured: float32 gradient error 2e-6 at β = 9, t = 0.5).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from hardneg._numerics.lse import cancels
from hardneg.engines.tiled.lse import (
    TilePlan,
    backward_coefficients,
    block_absorb,
    block_gradient,
    pair_gradient,
    plan_tiles,
)
from hardneg.engines.tiled.mask import TileMask
from hardneg.engines.tiled.pair import absorb_pair_, grad_pair
from hardneg.engines.tiled.stream import Scratch, finish, pair_difference, tiles

__all__ = ["tiled_lse_symmetric"]


def _forward(
    v: Tensor,
    w: Tensor,
    exponents: tuple[float, ...],
    rule: TileMask,
    tile: int,
    compiled: bool,
    plan: TilePlan,
    pair: bool = False,
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """``(L, counts, M, S)``: the log-sum-exps and the running statistics they came from."""
    fold = block_absorb(exponents, v, compiled, pair=pair)
    n, e_n = v.shape[0], len(exponents)
    run_max = torch.full((n,), float("-inf"), dtype=v.dtype, device=v.device)
    run_sum = torch.zeros(n, e_n, dtype=v.dtype, device=v.device)
    counts = torch.zeros(n, dtype=torch.int64, device=v.device)
    blocks = tiles(n, tile)
    work = Scratch()
    shared = plan.shared_shift and not compiled and not pair
    for bi, (r0, r1) in enumerate(blocks):
        for bj, (c0, c1) in enumerate(blocks[bi:], start=bi):
            s = torch.mm(w[r0:r1], v[c0:c1].T, out=work.get("s", r1 - r0, c1 - c0, v))  # = c·⟨v_i, v_j⟩
            clean = plan.clean(bi, bj)  # (a symmetric mask: rows tell for columns)
            counts[r0:r1] += c1 - c0 if clean else rule.fill_invalid_(s, r0, r1, c0, c1)
            floor = plan.floor(bi, bj)
            if c0 != r0:  # rows J, read down the columns of the tile (before s is consumed)
                counts[c0:c1] += r1 - r0 if clean else rule.count_valid(c0, c1, r0, r1)
                rows, cols = (run_max[r0:r1], run_sum[r0:r1]), (run_max[c0:c1], run_sum[c0:c1])
                if shared:
                    absorb_pair_(rows, cols, s, exponents, scratch=work, floor=floor)
                    continue
                fold(run_max[c0:c1], run_sum[c0:c1], s, 0, work, False, floor)
            fold(run_max[r0:r1], run_sum[r0:r1], s, 1, work, True, floor)
    return finish(run_max, run_sum, exponents, pair=pair), counts, run_max, run_sum


class _SymmetricLSE(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx: Any,
        v: Tensor,
        scale: float,
        exponents: tuple[float, ...],
        rule: TileMask,
        tile: int,
        compiled: bool,
        difference: bool,
    ) -> tuple[Tensor, Tensor]:
        w = v * scale
        plan = plan_tiles(w, v, exponents, rule, tile)  # once, for both passes
        # the tilted pair where one shared shift per tile pair is unsafe (large β or small t): where
        # it is safe, the exponents are bounded (module docstring) and one exponential serves both
        # directions of a tile
        shared = plan.shared_shift and not compiled
        pair = difference and cancels(exponents[0], exponents[1]) and not shared
        out, counts, run_max, run_sum = _forward(v, w, exponents, rule, tile, compiled, plan, pair)
        ctx.save_for_backward(v, w, *((run_max, run_sum) if pair else (out,)))
        ctx.exponents, ctx.rule, ctx.tile, ctx.compiled = exponents, rule, tile, compiled
        ctx.plan, ctx.difference, ctx.pair = plan, difference, pair
        ctx.mark_non_differentiable(counts)
        if difference:
            diff = pair_difference(run_max, run_sum, exponents, pair=pair)
            out = torch.cat([diff[:, None], out[:, 1:]], dim=1)
        return out, counts

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: Tensor, _counts_grad: Tensor | None) -> tuple[Tensor | None, ...]:
        v, w, *saved = ctx.saved_tensors
        exponents, rule, tile = ctx.exponents, ctx.rule, ctx.tile
        nothing = (None,) * 6
        gv = torch.zeros_like(v)
        blocks = tiles(v.shape[0], tile)
        if ctx.pair:
            plan_rows, grad_of = pair_gradient(grad, saved[0], saved[1], exponents)
            if plan_rows is None:
                return gv, *nothing
            plans = [plan_rows(b0, b1) for b0, b1 in blocks]
        else:
            if ctx.difference:  # ∂/∂L_0 = g_0, ∂/∂L_1 = g_1 − g_0
                grad = torch.cat([grad[:, :1], grad[:, 1:2] - grad[:, :1], grad[:, 2:]], dim=1)
            coef, lse, active, _ = backward_coefficients(grad, saved[0], exponents)
            if not active:
                return gv, *nothing
            plan, grad_of = block_gradient(exponents, active, v, ctx.compiled)
            plans = [plan(lse[b0:b1], coef[b0:b1]) for b0, b1 in blocks]
        work = Scratch()
        tplan: TilePlan = ctx.plan
        shared = tplan.shared_shift and not ctx.compiled and not ctx.pair
        for bi, (r0, r1) in enumerate(blocks):
            for bj, (c0, c1) in enumerate(blocks[bi:], start=bi):
                s = torch.mm(w[r0:r1], v[c0:c1].T, out=work.get("s", r1 - r0, c1 - c0, v))
                if not tplan.clean(bi, bj):
                    rule.fill_invalid_(s, r0, r1, c0, c1)  # −inf: no gradient (but e^{floor})
                floor = tplan.floor(bi, bj)
                # H = G_IJ + G_JIᵀ; on a diagonal tile (s symmetric) G_IIᵀ is the column-wise
                # gradient of the same tile, so no transposed copy is needed there either
                h = None
                if shared:
                    rows, cols = (lse[r0:r1], coef[r0:r1]), (lse[c0:c1], coef[c0:c1])
                    h = grad_pair(s, rows, cols, exponents, active, scratch=work, floor=floor)
                if h is None and ctx.pair and c0 == r0:
                    # the tilted pair on a diagonal tile: its rows' own entries, transposed (the
                    # columns' reading, s_ij for s_ji, differs by a rounding that β magnifies)
                    g = grad_of(s, plans[bi], 1, work, "r", floor)
                    h = torch.add(g, g.T, out=work.like("h", g))
                elif h is None:  # two exponentials (compiled kernels, or the shared shift unsafe)
                    h = grad_of(s, plans[bi], 1, work, "r", floor)
                    h.add_(grad_of(s, plans[c0 // tile], 0, work, "c", floor))
                gv[r0:r1].addmm_(h, w[c0:c1])
                if c0 != r0:
                    gv[c0:c1].addmm_(h.T, w[r0:r1])
        return gv, *nothing


def tiled_lse_symmetric(
    v: Tensor,
    scale: float,
    exponents: tuple[float, ...],
    rule: TileMask,
    *,
    tile: int,
    compiled: bool = False,
    difference: bool = False,
) -> tuple[Tensor, Tensor]:
    """``(L, N)``: masked ``log Σ_j e^{a_e · scale · ⟨v_i, v_j⟩}`` (n, E) and valid counts (n,) int64.

    Equal to ``tiled_lse(scale · v, v, exponents, rule, tile=tile, difference=difference)`` when
    ``rule``'s mask is symmetric (exclusions that pair up, as ``[i, (i + B) mod 2B]`` do, and
    symmetric labels; no explicit mask, no K-subsampling): checked here except for the exclusions'
    pairing, which the caller guarantees. Shapes: ``v`` (n, d). Differentiable in ``v``.
    """
    if tile < 1:
        raise ValueError(f"tile must be an int >= 1, got {tile}")
    if rule.explicit is not None or rule.subsample_index is not None or not rule.symmetric_labels:
        raise ValueError(
            "tiled_lse_symmetric needs a symmetric mask: no explicit mask, no K-subsampling, the same "
            "labels for anchors and candidates; use tiled_lse"
        )
    if rule.num_anchors != v.shape[0] or rule.num_candidates != v.shape[0]:
        raise ValueError(
            f"rule must be square over the {v.shape[0]} rows of v, "
            f"got {rule.num_anchors} x {rule.num_candidates}"
        )
    exps = tuple(float(a) for a in exponents)
    if difference and not (len(exps) >= 2 and exps[0] > exps[1] > 0):
        raise ValueError(f"difference=True needs exponents a_0 > a_1 > 0 first, got {exps}")
    out: tuple[Tensor, Tensor] = _SymmetricLSE.apply(
        v, float(scale), exps, rule, tile, bool(compiled), bool(difference)
    )
    return out
