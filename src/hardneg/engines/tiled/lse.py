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

Where the exponents are one base and its integer multiples and the Cauchy–Schwarz bound of the
call allows it (:class:`TilePlan`'s ``shared_shift``), the running maximum is replaced by a fixed
per-row shift known before the first tile, and the backward's per-row factors are folded into
the tile's bias and its (R, d) operands (:mod:`hardneg.engines.tiled.rowshift`): no maximum, no
rescaling, and for hard negatives two element-wise passes per tile instead of five in the
backward. Otherwise (``compile_tiles``, two unrelated exponents, a small temperature with a large
β, unnormalised embeddings) the running maximum and the general block gradient run; both give
the same values to round-off (tested). With constant candidates (no gradient: MoCo's queue) the
anchors' gradient is summed in the forward pass instead (:mod:`hardneg.engines.tiled.constant`).

``difference=True`` (hard negatives): the first output column is ``L_0 − L_1`` from the running
statistics (not the difference of two rounded ``L``), and for ``b > a − b`` (β > 1,
:func:`hardneg._numerics.lse.cancels`) the running maximum streams the cancellation-free tilted pair of
:mod:`hardneg.engines.tiled.stream` forward and backward (eager kernels, whatever ``compiled``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from hardneg._numerics.lse import cancels
from hardneg.engines.tiled.constant import accumulated_gradient, accumulation, forward_accumulated
from hardneg.engines.tiled.mask import TileMask
from hardneg.engines.tiled.pair import safe_band
from hardneg.engines.tiled.rowshift import (
    Fold,
    RowShift,
    choose_fold,
    fixed_sums,
    fold_checks,
    fold_tile_,
    row_shift,
)
from hardneg.engines.tiled.stream import (
    Scratch,
    absorb_,
    exp_floor,
    finish,
    grad_apply,
    grad_plan,
    pair_difference,
    pair_grad_apply,
    pair_grad_plan,
    tiles,
)

__all__ = ["TilePlan", "plan_tiles", "tiled_lse"]

#: ``(s, planned, dim, scratch, tag, floor) → G``: a tile's gradient from its rows' (or columns') plan.
TileGradient = Callable[[Tensor, Any, int, Scratch, str, "float | None"], Tensor]


@dataclass(frozen=True)
class TilePlan:
    """What the tiles of one call need to know about the data, decided once per call (one host
    read, :func:`plan_tiles`) so that the per-tile Python work reads no tensor value.

    Attributes:
        risky: an exponent argument may fall below :func:`~hardneg.engines.tiled.stream.exp_floor`
            (Cauchy–Schwarz bound; then every tile is floored).
        shared_shift: one shift per tile pair is safe everywhere (:mod:`hardneg.engines.tiled.pair`):
            ``2 · a_max · h ≤ B`` with ``h = max‖x‖ · max‖y‖ ≥ |s|``, which bounds both the
            forward gap ``a(c − max_j s_ij)`` and the backward scale ``a c − L_i``.
        masked: the ``(row tile, column tile)`` blocks that hold an invalid entry, or ``None``
            when any block may (labels, an explicit mask, K-subsampling): those are floored.
        low: the exponent floor of the dtype.
        y_norm: ``max‖y‖`` (the per-row shifts of :mod:`hardneg.engines.tiled.rowshift`).
    """

    risky: bool
    shared_shift: bool
    masked: frozenset[tuple[int, int]] | None
    low: float
    y_norm: float

    def clean(self, row_tile: int, col_tile: int) -> bool:
        """Whether the block is known to hold no invalid entry (then its mask is not made: no
        per-tile index search, which would be a device synchronisation on a GPU)."""
        return self.masked is not None and (row_tile, col_tile) not in self.masked

    def floor(self, row_tile: int, col_tile: int) -> float | None:
        """The exponent floor of a block (``None``: no clamping pass)."""
        if self.risky or self.masked is None or (row_tile, col_tile) in self.masked:
            return self.low
        return None


def plan_tiles(x: Tensor, y: Tensor, exponents: tuple[float, ...], rule: TileMask, tile: int) -> TilePlan:
    """The :class:`TilePlan` of the logits ``x yᵀ`` cut in ``tile``-sided blocks, from one host read
    of ``max‖x‖``, ``max‖y‖`` and (for a mask made of exclusions only) the blocks that hold an
    excluded entry. Exponent arguments are at least ``−2 a_max h − log N`` (``h`` as in
    :class:`TilePlan`)."""
    a_n, n_n = x.shape[0], y.shape[0]
    a_max = max(exponents)
    n_r, n_c = -(-a_n // tile), -(-n_n // tile)
    if a_n and n_n:
        parts = [torch.linalg.vector_norm(z, dim=1).amax()[None] for z in (x, y)]
    else:
        parts = [x.new_zeros(2)]
    if rule.exclusions_only and n_r * n_c <= 1 << 16:  # beyond: every block floored
        ex = rule.excluded
        ok = ex >= 0
        rows = torch.arange(ex.shape[0], device=ex.device)[:, None].div(tile, rounding_mode="floor")
        flat = torch.where(ok, rows * n_c + ex.div(tile, rounding_mode="floor"), n_r * n_c)
        table = torch.zeros(n_r * n_c + 1, dtype=x.dtype, device=x.device)
        parts.append(table.index_fill_(0, flat.flatten(), 1.0)[:-1])
    values = torch.cat([p.detach().to(x.dtype) for p in parts]).tolist()  # the call's one host read
    h = values[0] * values[1] if a_n and n_n else 0.0
    masked = None
    if len(values) > 2:
        masked = frozenset((k // n_c, k % n_c) for k, hit in enumerate(values[2:]) if hit)
    low = exp_floor(x.dtype)
    return TilePlan(
        risky=-2.0 * a_max * h - math.log(max(n_n, 1)) < low,
        shared_shift=2.0 * a_max * h <= safe_band(x.dtype),
        masked=masked,
        low=low,
        y_norm=values[1] if a_n and n_n else 0.0,
    )


def _forward(
    anchors: Tensor,
    candidates: Tensor,
    exponents: tuple[float, ...],
    rule: TileMask,
    tile: int,
    compiled: bool,
    plan: TilePlan,
    *,
    difference: bool = False,
    pair: bool = False,
) -> tuple[Tensor, Tensor, Tensor | None, tuple[Tensor, Tensor] | None]:
    """Forward of :class:`_TiledLSE`: ``(L, counts, L_0 − L_1 or None, (M, S) or None)``;
    ``plan``: each tile's exponent floor (:func:`plan_tiles`); ``pair``: the tilted pair (its
    running statistics returned for the backward)."""
    shape = row_shift(exponents) if plan.shared_shift and not compiled and not pair else None
    if shape is not None:
        return _forward_fixed(anchors, candidates, exponents, rule, tile, plan, shape, difference)
    a_n = anchors.shape[0]
    fold = block_absorb(exponents, anchors, compiled, pair=pair)
    out = torch.empty(a_n, len(exponents), dtype=anchors.dtype, device=anchors.device)
    diff = torch.empty(a_n, dtype=anchors.dtype, device=anchors.device) if difference else None
    maxes = torch.empty(a_n, dtype=anchors.dtype, device=anchors.device) if pair else None
    sums = torch.empty(a_n, len(exponents), dtype=anchors.dtype, device=anchors.device) if pair else None
    counts = torch.zeros(a_n, dtype=torch.int64, device=anchors.device)
    work = Scratch()
    for bi, (r0, r1) in enumerate(tiles(a_n, tile)):
        a_blk = anchors[r0:r1]
        run_max = torch.full((r1 - r0,), float("-inf"), dtype=anchors.dtype, device=anchors.device)
        run_sum = torch.zeros(r1 - r0, len(exponents), dtype=anchors.dtype, device=anchors.device)
        for bj, (c0, c1) in enumerate(tiles(candidates.shape[0], tile)):
            s = torch.mm(a_blk, candidates[c0:c1].T, out=work.get("s", r1 - r0, c1 - c0, a_blk))
            counts[r0:r1] += c1 - c0 if plan.clean(bi, bj) else rule.fill_invalid_(s, r0, r1, c0, c1)
            fold(run_max, run_sum, s, 1, work, True, plan.floor(bi, bj))
        out[r0:r1] = finish(run_max, run_sum, exponents, pair=pair)
        if diff is not None:
            diff[r0:r1] = pair_difference(run_max, run_sum, exponents, pair=pair)
        if maxes is not None and sums is not None:
            maxes[r0:r1], sums[r0:r1] = run_max, run_sum
    return out, counts, diff, None if maxes is None or sums is None else (maxes, sums)


def _scaled(anchors: Tensor, a: float) -> Tensor:
    """``a · anchors``, so that a tile's matrix product gives ``a s`` directly."""
    return anchors if a == 1.0 else anchors * a


def _forward_fixed(
    anchors: Tensor,
    candidates: Tensor,
    exponents: tuple[float, ...],
    rule: TileMask,
    tile: int,
    plan: TilePlan,
    shape: RowShift,
    difference: bool = False,
) -> tuple[Tensor, Tensor, Tensor | None, None]:
    """:func:`_forward` with the fixed per-row shifts of :mod:`hardneg.engines.tiled.rowshift` (the caller
    checked ``plan.shared_shift``): no running maximum, the shift subtracted from each tile in place."""
    a_n = anchors.shape[0]
    a = exponents[shape.base]
    bound = torch.linalg.vector_norm(anchors, dim=1) * plan.y_norm  # ≥ max_j s_ij: the fixed "maximum"
    sigma = bound * a
    scaled = _scaled(anchors, a)
    out = torch.empty(a_n, len(exponents), dtype=anchors.dtype, device=anchors.device)
    diff = torch.empty(a_n, dtype=anchors.dtype, device=anchors.device) if difference else None
    counts = torch.zeros(a_n, dtype=torch.int64, device=anchors.device)
    work = Scratch()
    cols = tiles(candidates.shape[0], tile)
    for bi, (r0, r1) in enumerate(tiles(a_n, tile)):
        x_blk, shift = scaled[r0:r1], sigma[r0:r1, None]
        parts = anchors.new_empty(len(cols), len(exponents), r1 - r0)  # each tile's row sums
        n_clean = 0
        for bj, (c0, c1) in enumerate(cols):
            t = torch.mm(x_blk, candidates[c0:c1].T, out=work.get("s", r1 - r0, c1 - c0, anchors)).sub_(shift)
            if plan.clean(bi, bj):
                n_clean += c1 - c0
            else:
                counts[r0:r1] += rule.fill_invalid_(t, r0, r1, c0, c1)
            fixed_sums(parts[bj], t, shape, scratch=work, floor=plan.floor(bi, bj))
        counts[r0:r1] += n_clean
        # L_e = a_e · bound + log S_e; −inf on rows without a valid entry (floored entries leave
        # e^{floor}-sized sums there)
        row_sums = parts.sum(dim=0).T
        out[r0:r1] = finish(bound[r0:r1], row_sums, exponents)
        out[r0:r1].masked_fill_((counts[r0:r1] == 0)[:, None], float("-inf"))
        if diff is not None:
            diff[r0:r1] = pair_difference(bound[r0:r1], row_sums, exponents)
    return out, counts, diff, None


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
        constant: bool,
        difference: bool,
    ) -> tuple[Tensor, Tensor]:
        plan = plan_tiles(anchors, candidates, exponents, rule, tile)  # once, for both passes
        pair = difference and cancels(exponents[0], exponents[1])
        ctx.exponents, ctx.accumulated, ctx.difference, ctx.pair = exponents, None, difference, pair
        shape = accumulation(  # constant candidates: the anchors' gradient made in this pass
            exponents, wanted=constant, num_candidates=candidates.shape[0], clean=plan.masked == frozenset(),
            shared_shift=plan.shared_shift, risky=plan.risky, compiled=compiled,
        )
        if shape is not None and not pair:
            out, counts, ctx.accumulated = forward_accumulated(
                anchors, candidates, exponents, shape, y_norm=plan.y_norm, tile=tile
            )
            ctx.mark_non_differentiable(counts)
            if difference:  # magnitudes bounded by the shared shift (at most B): no rounding to fear
                out = torch.cat([(out[:, 0] - out[:, 1])[:, None], out[:, 1:]], dim=1)
            return out, counts
        out, counts, diff, stats = _forward(
            anchors, candidates, exponents, rule, tile, compiled, plan, difference=difference, pair=pair
        )
        if stats is not None:  # the tilted pair: its running statistics
            ctx.save_for_backward(anchors, candidates, *stats)
        else:
            ctx.save_for_backward(anchors, candidates, out)
        ctx.rule, ctx.tile, ctx.compiled = rule, tile, compiled
        ctx.plan = plan
        ctx.mark_non_differentiable(counts)
        if diff is not None:
            out = torch.cat([diff[:, None], out[:, 1:]], dim=1)
        return out, counts

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: Tensor, _counts_grad: Tensor | None) -> tuple[Tensor | None, ...]:
        nothing = (None,) * 6
        if ctx.difference and not ctx.pair:  # ∂/∂L_0 = g_0, ∂/∂L_1 = g_1 − g_0
            grad = torch.cat([grad[:, :1], grad[:, 1:2] - grad[:, :1], grad[:, 2:]], dim=1)
        if ctx.accumulated is not None:  # the forward pass made it (constant candidates)
            return accumulated_gradient(grad, ctx.accumulated, ctx.exponents), None, *nothing
        anchors, candidates, *saved = ctx.saved_tensors
        exponents, rule, tile = ctx.exponents, ctx.rule, ctx.tile
        ga = torch.zeros_like(anchors) if ctx.needs_input_grad[0] else None
        gc = torch.zeros_like(candidates) if ctx.needs_input_grad[1] else None
        tplan: TilePlan = ctx.plan
        if ctx.pair:
            plan_rows, grad_of = pair_gradient(grad, saved[0], saved[1], exponents)
            if plan_rows is None:
                return ga, gc, *nothing
        else:
            (out,) = saved
            shape = row_shift(exponents) if tplan.shared_shift and not ctx.compiled else None
            coef, lse, active, flags = backward_coefficients(
                grad, out, exponents, checks=lambda c, lg: fold_checks(c, lg, shape)
            )
            if not active:
                return ga, gc, *nothing
            fold = choose_fold(lse, coef, exponents, shape, active, flags)
            if fold is not None:
                _backward_folded(anchors, candidates, ga, gc, rule, tile, tplan, fold)
                return ga, gc, *nothing
            plan, grad_of = block_gradient(exponents, active, anchors, ctx.compiled)

            def plan_rows(r0: int, r1: int) -> Any:
                return plan(lse[r0:r1], coef[r0:r1])

        work = Scratch()
        for bi, (r0, r1) in enumerate(tiles(anchors.shape[0], tile)):
            a_blk = anchors[r0:r1]
            planned = plan_rows(r0, r1)
            ga_blk = None
            for bj, (c0, c1) in enumerate(tiles(candidates.shape[0], tile)):
                c_blk = candidates[c0:c1]
                s = torch.mm(a_blk, c_blk.T, out=work.get("s", r1 - r0, c1 - c0, a_blk))
                if not tplan.clean(bi, bj):
                    rule.fill_invalid_(s, r0, r1, c0, c1)  # −inf: no gradient (but e^{floor})
                g = grad_of(s, planned, 1, work, "", tplan.floor(bi, bj))
                if ga is not None:
                    ga_blk = g @ c_blk if ga_blk is None else ga_blk.addmm_(g, c_blk)
                if gc is not None:
                    gc[c0:c1].addmm_(g.T, a_blk)
            if ga is not None and ga_blk is not None:
                ga[r0:r1] = ga_blk
        return ga, gc, *nothing


def pair_gradient(
    grad: Tensor, maxes: Tensor, sums: Tensor, exponents: tuple[float, ...]
) -> tuple[Callable[[int, int], Any] | None, TileGradient]:
    """``(plan_rows, apply)`` of the tilted pair's backward
    (:func:`~hardneg.engines.tiled.stream.pair_grad_plan`
    for the rows ``r0:r1`` and :func:`~hardneg.engines.tiled.stream.pair_grad_apply` over a tile, along
    ``dim``), from the forward's running statistics ``maxes`` (A,), ``sums`` (A, E) and the
    upstream gradient (A, E) of ``(L_0 − L_1, L_1, …)``; ``plan_rows`` is ``None`` when no output
    carries a gradient (one host read)."""
    active = [e for e, live in enumerate((grad != 0).any(dim=0).tolist()) if live]

    def apply(s: Tensor, planned: Any, dim: int, work: Scratch, tag: str, floor: float | None) -> Tensor:
        return pair_grad_apply(s, planned, dim=dim, scratch=work, tag=tag, floor=floor)

    if not active:
        return None, apply

    def plan_rows(r0: int, r1: int) -> Any:
        return pair_grad_plan(maxes[r0:r1], sums[r0:r1], grad[r0:r1], exponents, active)

    return plan_rows, apply


def _backward_folded(
    anchors: Tensor,
    candidates: Tensor,
    ga: Tensor | None,
    gc: Tensor | None,
    rule: TileMask,
    tile: int,
    tplan: TilePlan,
    fold: Fold,
) -> None:
    """The backward of :class:`_TiledLSE` in folded form (:mod:`hardneg.engines.tiled.rowshift`): per tile
    ``H`` from the matrix product plus the fold's bias, the row factor ``ρ`` applied to the (R, d)
    operands. Writes into ``ga`` and ``gc`` (either may be ``None``)."""
    scaled = _scaled(anchors, fold.a)
    work = Scratch()
    for bi, (r0, r1) in enumerate(tiles(anchors.shape[0], tile)):
        rho = fold.rho[r0:r1]
        a_rho = anchors[r0:r1] * rho  # (R, d): the row factor on the other operand of ∇candidates
        ga_blk = None
        for bj, (c0, c1) in enumerate(tiles(candidates.shape[0], tile)):
            c_blk = candidates[c0:c1]
            # two buffers trade roles from tile to tile: the power is written where the previous
            # tile's gradient was just read by its matrix product (still in cache)
            buf = work.get(f"s{bj % 2}", r1 - r0, c1 - c0, anchors)
            spare = work.get(f"s{1 - bj % 2}", r1 - r0, c1 - c0, anchors)
            t = torch.mm(scaled[r0:r1], c_blk.T, out=buf).add_(fold.bias[r0:r1])
            if not tplan.clean(bi, bj):
                rule.fill_invalid_(t, r0, r1, c0, c1)
            h = fold_tile_(t, fold, spare=spare, floor=tplan.floor(bi, bj))
            if ga is not None:
                ga_blk = h @ c_blk if ga_blk is None else ga_blk.addmm_(h, c_blk)
            if gc is not None:
                gc[c0:c1].addmm_(h.T, a_rho)
        if ga is not None and ga_blk is not None:
            ga[r0:r1] = ga_blk.mul_(rho)


def backward_coefficients(
    grad: Tensor,
    out: Tensor,
    exponents: tuple[float, ...],
    *,
    checks: Callable[[Tensor, Tensor], Tensor] | None = None,
) -> tuple[Tensor, Tensor, list[int], list[bool]]:
    """``(coef, lse, active, flags)``: ``coef = a_e · ∂loss/∂L_e`` (A, E), zero on rows without a
    valid entry (L = −inf: no gradient), ``lse`` with those rows set to 0, the exponents that
    carry a gradient (e.g. not the 2β of the effective sample size), and the values of
    ``checks(coef, lse)`` (a bool vector, e.g. :func:`~hardneg.engines.tiled.rowshift.fold_checks`), all
    from one host read per backward."""
    finite = torch.isfinite(out)
    coef = torch.where(finite, grad, 0.0) * torch.tensor(exponents, dtype=grad.dtype, device=grad.device)
    lse = torch.where(finite, out, 0.0)
    parts = [(coef != 0).any(dim=0)]
    if checks is not None:
        parts.append(checks(coef, lse))
    values = torch.cat(parts).tolist()
    n = len(exponents)
    active = [e for e in range(n) if values[e]]
    return coef, lse, active, values[n:]


def block_absorb(
    exponents: tuple[float, ...], like: Tensor, compiled: bool, *, pair: bool = False
) -> Callable[[Tensor, Tensor, Tensor, int, Scratch, bool, float | None], None]:
    """``(run_max, run_sum, s, dim, scratch, consume, floor) → None``: fold a logits block into the
    running statistics in place — the eager :func:`~hardneg.engines.tiled.stream.absorb_` or its compiled,
    fused twin (which never overwrites ``s``, and needs no floor: its exponential is its own);
    ``pair``: the tilted pair (eager)."""
    if not compiled or pair:
        return lambda run_max, run_sum, s, dim, work, consume, floor: absorb_(
            run_max, run_sum, s, exponents, dim=dim, consume=consume, scratch=work, floor=floor, pair=pair
        )
    from hardneg.engines.tiled.compiled import compiled_kernels

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
    them — the eager :func:`~hardneg.engines.tiled.stream.grad_apply` or the compiled, fused twin."""
    if not compiled:
        return (
            lambda lse, coef: grad_plan(lse, coef, exponents, active),
            lambda s, planned, dim, work, tag, floor: grad_apply(
                s, planned, dim=dim, scratch=work, tag=tag, floor=floor
            ),
        )
    from hardneg.engines.tiled.compiled import compiled_kernels

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
    difference: bool = False,
) -> tuple[Tensor, Tensor]:
    """``(L, N)``: masked ``log Σ_j e^{a_e s_ij}`` (A, E) and valid counts N_i (A,) int64.

    Differentiable in both inputs (the backward recomputes each tile's logits). With constant
    candidates (the anchors need a gradient, the candidates none: MoCo's queue) the anchors'
    gradient is accumulated in the forward pass instead where that is exact and cheaper
    (:mod:`hardneg.engines.tiled.constant`): one matrix product per tile less.

    Args:
        anchors: the anchors, already divided by the temperature.
        candidates: the candidates.
        exponents: ``a_1 … a_E`` (e.g. ``(1 + β, β)`` for hard negatives).
        rule: the :class:`~hardneg.engines.tiled.TileMask` that makes each tile's mask.
        tile: the side of a tile.
        compiled: fuse the element-wise work of a tile with ``torch.compile``
            (:mod:`hardneg.engines.tiled.compiled`).
        difference: the first column is ``L_0 − L_1`` (``a_0 > a_1 > 0``, hard negatives'
            ``lse((1+β)s) − lse(βs)``), computed without the rounding of the two ``L`` and, for
            ``a_1 > a_0 − a_1``, in the cancellation-free form of :mod:`hardneg.engines.tiled.stream`.

    Shapes:
        ``anchors`` (A, d), ``candidates`` (N, d) → ``L`` (A, E) and ``N`` (A,) int64.

    References:
        Milakov and Gimelshein, "Online normalizer calculation for softmax", arXiv:1805.02867,
        2018, Algorithm 3 (the running max and sum); Cheng et al. (Inf-CL), arXiv:2410.17243,
        2024, §3 (tile-wise forward and recomputing backward of the contrastive loss).

    Example:
        >>> from hardneg.engines.tiled import TileMask
        >>> a, c = torch.randn(3, 4), torch.randn(5, 4)
        >>> rule = TileMask(3, 5, excluded=torch.full((3, 1), -1))
        >>> lse, counts = tiled_lse(a, c, (1.0, 2.0), rule, tile=2)
        >>> s = a @ c.T
        >>> torch.allclose(lse, torch.stack([s.logsumexp(1), (2 * s).logsumexp(1)], 1), atol=1e-5)
        True
        >>> counts.tolist()
        [5, 5, 5]
    """
    if tile < 1:
        raise ValueError(f"tile must be an int >= 1, got {tile}")
    exps = tuple(float(a) for a in exponents)
    if difference and not (len(exps) >= 2 and exps[0] > exps[1] > 0):
        raise ValueError(f"difference=True needs exponents a_0 > a_1 > 0 first, got {exps}")
    constant = torch.is_grad_enabled() and anchors.requires_grad and not candidates.requires_grad
    out: tuple[Tensor, Tensor] = _TiledLSE.apply(
        anchors, candidates, exps, rule, tile, bool(compiled), constant, bool(difference)
    )
    return out
