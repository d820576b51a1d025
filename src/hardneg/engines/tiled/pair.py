"""One exponential per tile pair: the rows and the columns of a symmetric tile on a shared shift.

In the symmetric pass (:mod:`hardneg.engines.tiled.symmetric`) an off-diagonal tile ``s`` (rows ``I``,
columns ``J``) feeds the online log-sum-exp of its rows and, read down its columns, that of the
rows ``J``. Shifting each direction by its own maxima costs two exponentials per entry, and on a
CPU one exponential of a 1024² tile costs about a third of the tile's matrix product. Shifted
once by the tile's maximum ``c`` (the normaliser rescaling ``e^{m_old − m_new}`` of Milakov &
Gimelshein's online softmax, arXiv:1805.02867, 2018, applied to rows and columns at once), one
exponential serves both directions:

    Σ_j e^{a(s_ij − M_i)} = e^{a(c − M_i)} Σ_j e^{a(s_ij − c)}      (rows; columns alike),

and in the backward pass, with ``y = e^{a(s − c)}``,

    e^{a s_ij − L_i} = y_ij · e^{a c − L_i},    e^{a s_ij − L_j} = y_ij · e^{a c − L_j}.

This is exact algebra; it is also accurate in floating point as long as no row or column lies
far below ``c``: every scale factor ``e^{a c − L}`` (or ``e^{a(c − M)}``) is kept at most
``e^B`` with ``B = −log(tiny)/2`` (43.7 in float32, 354 in float64), so nothing overflows, and an
entry that underflows in ``y`` (``a(s − c) < log tiny``) weighs at most ``tiny · e^B = e^{−B}``
relative to its row's largest term. The condition is checked once per call, not per tile (no
tensor value is read per tile): with ``h = max‖x‖·max‖y‖ ≥ |s|`` (Cauchy–Schwarz), every gap
``c − max_j s_ij`` is at most ``2h`` and every ``a c − L_i`` at most ``2 a h``, so
``2 a_max h ≤ B`` makes every tile safe (:func:`~hardneg.engines.tiled.lse.plan_tiles`); otherwise (a
small temperature with a large β, or unnormalised embeddings) the caller takes the
two-exponential path for every tile. Results agree either way to float round-off. An exponent that is an
integer multiple ``k a`` of another (:mod:`hardneg.engines.tiled.stream`, as ``y^k``) is covered by the
same condition. With the exponent floor (:func:`~hardneg.engines.tiled.stream.exp_floor`, for masked or
possibly underflowing tiles) a floored entry weighs at most ``e^{floor + B}`` of its row's
largest term: 1e-16 in float32, below its round-off (6e-8) for any row of fewer than 10⁸ entries.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from hardneg.engines.tiled.stream import Scratch, exp_, ipow, multiples, partners

__all__ = ["absorb_pair_", "grad_pair", "safe_band"]


def safe_band(dtype: torch.dtype) -> float:
    """``B = −log(tiny)/2``: the largest exponent a scale factor may have (module docstring)."""
    return -math.log(torch.finfo(dtype).tiny) / 2.0


def _fold_(run_max: Tensor, run_sum: Tensor, blk_max: Tensor, sums: Tensor, c: Tensor, a: Tensor) -> None:
    """Fold block sums taken on the shift ``c`` into running ``(M, S_e)``: ``S_e ← S_e e^{a_e(M −
    M')} + sums_e e^{a_e(c − M')}`` with ``M' = max(M, blk_max)``; rows without a valid entry in
    the block (``blk_max = −inf``, zero sums) keep their state."""
    m = torch.maximum(run_max, blk_max)
    m_safe = torch.where(torch.isfinite(m), m, 0.0)
    old = torch.where(torch.isfinite(run_max), run_max - m_safe, float("-inf"))[:, None]
    new = torch.where(torch.isfinite(blk_max), c - m_safe, float("-inf"))[:, None]
    run_sum.mul_(torch.exp(old * a)).add_(sums * torch.exp(new * a))
    run_max.copy_(m)


def absorb_pair_(
    rows: tuple[Tensor, Tensor],
    cols: tuple[Tensor, Tensor],
    s: Tensor,
    exponents: tuple[float, ...],
    *,
    scratch: Scratch,
    floor: float | None = None,
) -> None:
    """Fold the off-diagonal block ``s`` (R, C) into the running ``(M, S_e)`` of its rows and of its
    columns with one exponential per entry and exponent that is not an integer multiple of another;
    ``s`` is overwritten. The caller guarantees the shared shift is safe (module docstring); no
    tensor value is read. A block without a valid entry folds nothing."""
    row_max, col_max = s.amax(dim=1), s.amax(dim=0)
    c_t = row_max.max()
    c = torch.where(torch.isfinite(c_t), c_t, 0.0)  # an all-invalid block: rows keep their state
    a = torch.tensor(exponents, dtype=s.dtype, device=s.device)
    mults = multiples(exponents, list(range(len(exponents))))
    singles = [e for e in range(len(exponents)) if e not in mults]
    r_sums: dict[int, Tensor] = {}
    c_sums: dict[int, Tensor] = {}
    d = s.sub_(c)  # ≤ 0; −inf stays −inf
    for i, e in enumerate(singles):
        last = i == len(singles) - 1
        ae = exponents[e]
        if last:
            x = exp_(d.mul_(ae) if ae != 1.0 else d, floor)
        else:
            x = exp_(torch.mul(d, ae, out=scratch.like(f"y{i}", d)), floor)
        r_sums[e], c_sums[e] = x.sum(dim=1), x.sum(dim=0)
        for k, e2 in partners(mults, e):  # e^{k a (s − c)} = x^k
            xk = ipow(x, k, scratch.like("pow", x))
            r_sums[e2], c_sums[e2] = xk.sum(dim=1), xk.sum(dim=0)
    order = range(len(exponents))
    _fold_(rows[0], rows[1], row_max, torch.stack([r_sums[e] for e in order], dim=1), c, a)
    _fold_(cols[0], cols[1], col_max, torch.stack([c_sums[e] for e in order], dim=1), c, a)


def _scales(lse: Tensor, coef: Tensor, a: float, c: Tensor) -> Tensor:
    """``coef · e^{a c − L}`` per row (0 on rows that carry no gradient); ``a c − L ≤ B`` is the
    caller's guarantee."""
    return coef * torch.exp(torch.where(coef != 0, a * c - lse, float("-inf")))


def grad_pair(
    s: Tensor,
    rows: tuple[Tensor, Tensor],
    cols: tuple[Tensor, Tensor],
    exponents: tuple[float, ...],
    active: list[int],
    *,
    scratch: Scratch,
    floor: float | None = None,
) -> Tensor:
    """``H_ij = Σ_e coef_e,i e^{a_e s_ij − L_e,i} + coef_e,j e^{a_e s_ij − L_e,j}`` over the block
    ``s`` (R, C) (overwritten): the gradient of ``Σ_e coef_e L_e / a_e`` with respect to the tile,
    its entries as members of the rows ``I`` (``rows = (L, coef)``, (R, E)) and of the rows ``J``
    (``cols``, (C, E)), with one exponential per entry and active exponent that is not a multiple of another.
    The caller guarantees the shared shift is safe (module docstring); no tensor value is read.
    The result lives in ``scratch``'s buffers (valid until the next call)."""
    c_t = s.max()
    c = torch.where(torch.isfinite(c_t), c_t, 0.0)  # an all-invalid block: every term is 0
    mults = multiples(exponents, active)
    factors: dict[int, tuple[Tensor, Tensor]] = {}
    for e in active:
        factors[e] = (
            _scales(rows[0][:, e], rows[1][:, e], exponents[e], c),
            _scales(cols[0][:, e], cols[1][:, e], exponents[e], c),
        )
    d = s.sub_(c)
    singles = [e for e in active if e not in mults]
    h: Tensor | None = None
    for i, e in enumerate(singles):
        ae = exponents[e]
        if i == len(singles) - 1:  # d is not needed any more
            y = exp_(d.mul_(ae) if ae != 1.0 else d, floor)
        else:
            y = exp_(torch.mul(d, ae, out=scratch.like(f"y{i}", d)), floor)
        r, k = factors[e]
        g = scratch.like(f"g{i}", y)
        more = partners(mults, e)
        if not more:  # y ⊙ (α_i + α_j)
            torch.add(r[:, None], k[None, :], out=g).mul_(y)
            h = g if h is None else h.add_(g)
            continue
        # y ⊙ (α_i + α_j) + Σ_m y^{k_m} ⊙ (γ_m,i + γ_m,j) = y ⊙ (α_i + α_j + Σ_m y^{k_m − 1} ⊙ (…))
        for n, (mult, e2) in enumerate(more):
            r2, k2 = factors[e2]
            q = y if mult == 2 else ipow(y, mult - 1, scratch.like("pow", y))
            if n == 0:  # g = α_i + (γ_i + γ_j) ⊙ y^{k−1}
                torch.addcmul(r[:, None], torch.add(r2[:, None], k2[None, :], out=g), q, out=g)
            else:
                g.addcmul_(torch.add(r2[:, None], k2[None, :], out=scratch.like("t", y)), q)
        g.add_(k[None, :]).mul_(y)
        h = g if h is None else h.add_(g)
    assert h is not None  # ``active`` is not empty
    return h
