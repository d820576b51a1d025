# mypy: allow-untyped-defs
r"""The fused tile kernel of the tiled engine (Triton): the streamed masked log-sum-exp, forward and
backward, with no tile of logits ever in memory.

It computes what :func:`hardneg.engines.tiled.lse.tiled_lse` computes: for anchors ``x_i`` (already divided
by the temperature), candidates ``y_j``, logits ``s_ij = ⟨x_i, y_j⟩`` and exponents ``a_1 … a_E``
of any sign, per anchor

    L_e,i = log Σ_{j valid} e^{a_e s_ij}        and        N_i = #{j valid},

with the gradient ``∂/∂s_ij = Σ_e c_e,i e^{a_e s_ij − L_e,i}`` on valid entries, ``c_e,i = g_e,i a_e``
(``g`` the upstream gradient of ``L``). The kernels follow FlashAttention (Dao et al., NeurIPS 2022,
Algorithm 1; Dao, ICLR 2024, §3.1): one program per block of rows makes each tile of logits with
``tl.dot``, masks it and folds it into statistics held in registers — the running maximum ``M_i``
(and, when an exponent is negative, the running minimum ``m_i``) of the valid logits, which serves
every exponent (Milakov & Gimelshein, arXiv:1805.02867, 2018, Algorithm 3), and one running sum per
exponent ``S_e,i = Σ_j e^{a_e s_ij − r_e,i}`` with the reference ``r_e = a_e M`` (a_e > 0),
``a_e m`` (a_e < 0) or 0 (a_e = 0: the sum counts); so ``L_e = r_e + log S_e`` and every
exponential has a non-positive argument. The backward recomputes each tile from the saved ``L``
and ``c``: ∇x from a row-block kernel and ∇y from a column-block kernel (FlashAttention-2's split,
without atomics, so the gradients are deterministic). In SimCLR's layout (the anchors are the
candidates, ``s = c·v vᵀ`` and the mask is symmetric) one row-block kernel makes the whole gradient,

    ∇v_I = Σ_J (G_IJ + G_JIᵀ) w_J,        w = c·v,

the column block's own statistics giving the transposed term (:mod:`hardneg.engines.tiled.symmetric`):
three matrix products per tile pair, forward and backward together — as many as the
materialised engine's.

The mask is made per entry from O(A + N) state (:class:`~hardneg.engines.tiled.TileMask`): the excluded
candidate indices (the anchor itself and its partner), labels (collision-free negatives; a label
< 0 never collides) and an optional explicit (A, N) bool mask. K-subsampled masks are not
expressed: the engine chooser (:func:`hardneg.engines.choice.choose_engine`) sends them to the
gathered or the tiled engine. Accumulation is in the input dtype, float32 or float64 (half
precision is computed in float32); float32 products use TF32 only where torch's matmuls do
(``torch.get_float32_matmul_precision()``). On a CPU the kernels run under Triton's interpreter
(``TRITON_INTERPRET=1`` set before triton is imported).

This module imports triton; :mod:`hardneg.engines.tiled.fused` is the entry that does not.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import torch
import triton
import triton.language as tl
from torch import Tensor
from torch.autograd.function import once_differentiable

from hardneg.engines.tiled.mask import TileMask

__all__ = ["Blocks", "choose_blocks", "lse", "lse_symmetric"]

@triton.jit
def _rows(ptr, idx, n, D, k0, BK: tl.constexpr):
    """The (len(idx), BK) block of the row-major (n, D) matrix at rows ``idx``, columns ``k0 …``
    (zeros outside)."""
    ks = k0 + tl.arange(0, BK)
    offs = idx.to(tl.int64)[:, None] * D + ks[None, :]
    return tl.load(ptr + offs, mask=(idx[:, None] < n) & (ks[None, :] < D), other=0.0)


@triton.jit
def _logits(x_ptr, y_ptr, rows, cols, A, N, D, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
            KC: tl.constexpr, PREC: tl.constexpr):
    """``x_rows · y_colsᵀ`` (BM, BN) summed over ``KC`` chunks of ``BK`` features."""
    s = tl.zeros((BM, BN), x_ptr.dtype.element_ty)
    for kc in tl.static_range(KC):
        xk = _rows(x_ptr, rows, A, D, kc * BK, BK)
        yk = _rows(y_ptr, cols, N, D, kc * BK, BK)
        s += tl.dot(xk, tl.trans(yk), input_precision=PREC)
    return s


@triton.jit
def _valid(rows, cols, A, N, ex_ptr, la_ptr, lc_ptr, mk_ptr, NEX: tl.constexpr, LABELS: tl.constexpr,
           MASK: tl.constexpr):
    """The validity mask (BM, BN) of the tile: inside the matrix, not excluded, not of the same
    known label, allowed by the explicit mask."""
    in_r = rows < A
    in_c = cols < N
    ok = in_r[:, None] & in_c[None, :]
    for k in tl.static_range(NEX):
        ex = tl.load(ex_ptr + rows.to(tl.int64) * NEX + k, mask=in_r, other=-1)
        ok = ok & (cols[None, :] != ex[:, None])
    if LABELS:
        la = tl.load(la_ptr + rows, mask=in_r, other=-1)
        lc = tl.load(lc_ptr + cols, mask=in_c, other=-1)
        ok = ok & ((la[:, None] != lc[None, :]) | (la[:, None] < 0))
    if MASK:
        mk = tl.load(mk_ptr + rows.to(tl.int64)[:, None] * N + cols[None, :], mask=ok, other=0)
        ok = ok & (mk != 0)
    return ok


@triton.jit
def _reference(a, hi, lo):
    """``r_e = a_e M`` (a_e > 0), ``a_e m`` (a_e < 0), 0 (a_e = 0) per row and exponent (BM, EP);
    rows without a valid entry yet read ``M = m = 0``."""
    h = tl.where(hi > float("-inf"), hi, 0.0)[:, None]
    m = tl.where(lo < float("inf"), lo, 0.0)[:, None]
    return tl.where(a[None, :] > 0, a[None, :] * h, tl.where(a[None, :] < 0, a[None, :] * m, 0.0))


@triton.jit
def _forward_kernel(x_ptr, y_ptr, a_ptr, ex_ptr, la_ptr, lc_ptr, mk_ptr, out_ptr, cnt_ptr, A, N, D,
                    E: tl.constexpr, EP: tl.constexpr, NEG: tl.constexpr, NEX: tl.constexpr,
                    LABELS: tl.constexpr, MASK: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                    BK: tl.constexpr, KC: tl.constexpr, PREC: tl.constexpr):
    dt = x_ptr.dtype.element_ty
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    slot = tl.arange(0, EP)
    a = tl.load(a_ptr + slot, mask=slot < E, other=0.0).to(dt)
    hi = tl.full((BM,), float("-inf"), dt)
    lo = tl.full((BM,), float("inf"), dt)
    sums = tl.zeros((BM, EP), dt)
    count = tl.zeros((BM,), tl.int32)
    if KC == 1:
        x = _rows(x_ptr, rows, A, D, 0, BK)
    for c0 in range(0, N, BN):
        cols = c0 + tl.arange(0, BN)
        if KC == 1:
            s = tl.dot(x, tl.trans(_rows(y_ptr, cols, N, D, 0, BK)), input_precision=PREC)
        else:
            s = _logits(x_ptr, y_ptr, rows, cols, A, N, D, BM, BN, BK, KC, PREC)
        ok = _valid(rows, cols, A, N, ex_ptr, la_ptr, lc_ptr, mk_ptr, NEX, LABELS, MASK)
        count += tl.sum(ok.to(tl.int32), 1)
        new_hi = tl.maximum(hi, tl.max(tl.where(ok, s, float("-inf")), 1))
        new_lo = lo
        if NEG:
            new_lo = tl.minimum(lo, tl.min(tl.where(ok, s, float("inf")), 1))
        ref = _reference(a, new_hi, new_lo)
        seen = (hi > float("-inf"))[:, None]  # rows that had a valid entry before this tile
        shift = tl.where(seen, _reference(a, hi, lo) - ref, 0.0)  # ≤ 0
        sums = tl.where(seen, sums * tl.exp(shift), 0.0)
        for e in tl.static_range(E):
            a_e = tl.load(a_ptr + e).to(dt)
            r_e = tl.sum(tl.where(slot[None, :] == e, ref, 0.0), 1)
            p = tl.exp(tl.where(ok, a_e * s - r_e[:, None], float("-inf")))
            sums += tl.where(slot[None, :] == e, tl.sum(p, 1)[:, None], 0.0)
        hi = new_hi
        lo = new_lo
    found = (count > 0)[:, None]
    used = found & (slot[None, :] < E)
    out = tl.where(found, _reference(a, hi, lo) + tl.log(tl.where(used, sums, 1.0)), float("-inf"))
    in_r = rows < A
    tl.store(out_ptr + rows.to(tl.int64)[:, None] * E + slot[None, :], out,
             mask=in_r[:, None] & (slot[None, :] < E))
    tl.store(cnt_ptr + rows, count.to(tl.int64), mask=in_r)


@triton.jit
def _weights(s, ok, a_ptr, coef_ptr, lse_ptr, idx, n, E: tl.constexpr, AXIS: tl.constexpr):
    """``Σ_e c_e e^{a_e s − L_e}`` on the valid entries of the tile ``s``, with the per-anchor
    ``c``, ``L`` (n, E) of ``idx``: the tile's rows (``AXIS = 1``) or its columns (``AXIS = 0``)."""
    g = tl.zeros_like(s)
    inside = idx < n
    for e in tl.static_range(E):
        a_e = tl.load(a_ptr + e).to(s.dtype)
        c = tl.load(coef_ptr + idx.to(tl.int64) * E + e, mask=inside, other=0.0)
        lse = tl.load(lse_ptr + idx.to(tl.int64) * E + e, mask=inside, other=0.0)
        if AXIS == 1:
            g += c[:, None] * tl.exp(tl.where(ok, a_e * s - lse[:, None], float("-inf")))
        else:
            g += c[None, :] * tl.exp(tl.where(ok, a_e * s - lse[None, :], float("-inf")))
    return g


@triton.jit
def _rows_backward_kernel(x_ptr, y_ptr, a_ptr, coef_ptr, lse_ptr, ex_ptr, la_ptr, lc_ptr, mk_ptr, gx_ptr,
                          A, N, D, E: tl.constexpr, NEX: tl.constexpr, LABELS: tl.constexpr,
                          MASK: tl.constexpr, SYM: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                          BK: tl.constexpr, KC: tl.constexpr, PREC: tl.constexpr):
    """``∇x_I = Σ_J G_IJ y_J`` (``SYM``: ``Σ_J (G_IJ + G_JIᵀ) x_J``, the anchors are ``w`` and
    the candidates ``v``); ``KC > 1``: accumulated into ``gx`` (zeroed) chunk by chunk."""
    dt = x_ptr.dtype.element_ty
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    ks = tl.arange(0, BK)
    if KC == 1:
        x = _rows(x_ptr, rows, A, D, 0, BK)
        acc = tl.zeros((BM, BK), dt)
    for c0 in range(0, N, BN):
        cols = c0 + tl.arange(0, BN)
        if KC == 1:
            y = _rows(y_ptr, cols, N, D, 0, BK)
            s = tl.dot(x, tl.trans(y), input_precision=PREC)
        else:
            s = _logits(x_ptr, y_ptr, rows, cols, A, N, D, BM, BN, BK, KC, PREC)
        ok = _valid(rows, cols, A, N, ex_ptr, la_ptr, lc_ptr, mk_ptr, NEX, LABELS, MASK)
        g = _weights(s, ok, a_ptr, coef_ptr, lse_ptr, rows, A, E, 1)
        if SYM:
            g += _weights(s, ok, a_ptr, coef_ptr, lse_ptr, cols, N, E, 0)
        if KC == 1:
            if SYM:
                acc += tl.dot(g, _rows(x_ptr, cols, N, D, 0, BK), input_precision=PREC)
            else:
                acc += tl.dot(g, y, input_precision=PREC)
        else:
            for kc in tl.static_range(KC):
                if SYM:
                    other = _rows(x_ptr, cols, N, D, kc * BK, BK)
                else:
                    other = _rows(y_ptr, cols, N, D, kc * BK, BK)
                k = kc * BK + ks
                dst = gx_ptr + rows.to(tl.int64)[:, None] * D + k[None, :]
                inside = (rows[:, None] < A) & (k[None, :] < D)
                old = tl.load(dst, mask=inside, other=0.0)
                tl.store(dst, old + tl.dot(g, other, input_precision=PREC), mask=inside)
    if KC == 1:
        tl.store(gx_ptr + rows.to(tl.int64)[:, None] * D + ks[None, :], acc,
                 mask=(rows[:, None] < A) & (ks[None, :] < D))


@triton.jit
def _cols_backward_kernel(x_ptr, y_ptr, a_ptr, coef_ptr, lse_ptr, ex_ptr, la_ptr, lc_ptr, mk_ptr, gy_ptr,
                          A, N, D, E: tl.constexpr, NEX: tl.constexpr, LABELS: tl.constexpr,
                          MASK: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                          KC: tl.constexpr, PREC: tl.constexpr):
    """``∇y_J = Σ_I G_IJᵀ x_I``; ``KC > 1``: accumulated into ``gy`` (zeroed) chunk by chunk."""
    dt = x_ptr.dtype.element_ty
    cols = tl.program_id(0) * BN + tl.arange(0, BN)
    ks = tl.arange(0, BK)
    if KC == 1:
        y = _rows(y_ptr, cols, N, D, 0, BK)
        acc = tl.zeros((BN, BK), dt)
    for r0 in range(0, A, BM):
        rows = r0 + tl.arange(0, BM)
        if KC == 1:
            x = _rows(x_ptr, rows, A, D, 0, BK)
            s = tl.dot(x, tl.trans(y), input_precision=PREC)
        else:
            s = _logits(x_ptr, y_ptr, rows, cols, A, N, D, BM, BN, BK, KC, PREC)
        ok = _valid(rows, cols, A, N, ex_ptr, la_ptr, lc_ptr, mk_ptr, NEX, LABELS, MASK)
        g = tl.trans(_weights(s, ok, a_ptr, coef_ptr, lse_ptr, rows, A, E, 1))
        if KC == 1:
            acc += tl.dot(g, x, input_precision=PREC)
        else:
            for kc in tl.static_range(KC):
                k = kc * BK + ks
                dst = gy_ptr + cols.to(tl.int64)[:, None] * D + k[None, :]
                inside = (cols[:, None] < N) & (k[None, :] < D)
                old = tl.load(dst, mask=inside, other=0.0)
                part = tl.dot(g, _rows(x_ptr, rows, A, D, kc * BK, BK), input_precision=PREC)
                tl.store(dst, old + part, mask=inside)
    if KC == 1:
        tl.store(gy_ptr + cols.to(tl.int64)[:, None] * D + ks[None, :], acc,
                 mask=(cols[:, None] < N) & (ks[None, :] < D))


class Blocks(NamedTuple):
    """The launch shape: rows and columns of a tile (``m``, ``n``), the feature chunk ``k`` (one
    chunk up to d = 256), warps and pipeline stages."""

    m: int
    n: int
    k: int
    warps: int = 4
    stages: int = 2

    def chunks(self, d: int) -> int:
        return max(1, -(-d // self.k))


def choose_blocks(x: Tensor, d: int) -> Blocks:
    """The launch shape for ``x``'s device and dtype and ``d`` features: on a CPU (the interpreter)
    tiles of 16 — the smallest ``tl.dot`` shape, so that small batches span several blocks; on a
    GPU 64 × 64 in float32 up to d = 128, else 32 × 32 (float64, or larger d), the FlashAttention-2
    tile shapes for one chunk of features held in registers (Dao, ICLR 2024, §3.3). Not tuned on a
    device yet."""
    k = min(max(16, triton.next_power_of_2(max(d, 1))), 256 if d <= 256 else 128)
    if x.device.type == "cpu":
        return Blocks(16, 16, k, 1, 1)
    side = 64 if x.dtype == torch.float32 and k <= 128 else 32
    return Blocks(side, side, k, 8 if side * k >= 8192 else 4, 2)


def _precision(x: Tensor) -> str:
    """``"tf32"`` for float32 on a GPU where torch's own matmuls may use TF32, else ``"ieee"``."""
    tf32 = x.is_cuda and x.dtype == torch.float32 and torch.get_float32_matmul_precision() != "highest"
    return "tf32" if tf32 else "ieee"


class _Rule(NamedTuple):
    """The mask's tensors as the kernels read them (a dummy where a part is absent)."""

    excluded: Tensor
    anchor_labels: Tensor
    candidate_labels: Tensor
    explicit: Tensor
    num_excluded: int
    labels: bool
    mask: bool

    @classmethod
    def of(cls, rule: TileMask, device: torch.device) -> _Rule:
        if rule.subsample_index is not None:
            raise ValueError(
                "the fused kernel implements no K-subsampled mask (rule.subsample_index); "
                "use the gathered or the tiled engine"
            )
        ex = rule.excluded.to(device=device, dtype=torch.int64).contiguous()
        la = lc = mk = ex
        if rule.collision_free:
            assert rule.anchor_labels is not None and rule.candidate_labels is not None
            la = rule.anchor_labels.to(device=device, dtype=torch.int64).contiguous()
            lc = rule.candidate_labels.to(device=device, dtype=torch.int64).contiguous()
        if rule.explicit is not None:
            mk = rule.explicit.to(device=device, dtype=torch.bool).contiguous().view(torch.uint8)
        return cls(ex, la, lc, mk, int(ex.shape[1]), rule.collision_free, rule.explicit is not None)

    def args(self) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        return self.excluded, self.anchor_labels, self.candidate_labels, self.explicit

    def flags(self) -> dict[str, int]:
        return {"NEX": self.num_excluded, "LABELS": self.labels, "MASK": self.mask}


def _forward(
    x: Tensor, y: Tensor, a: Tensor, rule: _Rule, blocks: Blocks, negative: bool
) -> tuple[Tensor, Tensor]:
    """``(L, N)`` of :func:`lse` by the forward kernel (``x``, ``y`` contiguous, one dtype;
    ``negative``: some exponent is negative, so the running minimum is kept too)."""
    a_n, n_n, d = x.shape[0], y.shape[0], x.shape[1]
    e_n = a.shape[0]
    out = torch.empty(a_n, e_n, dtype=x.dtype, device=x.device)
    counts = torch.empty(a_n, dtype=torch.int64, device=x.device)
    if a_n == 0 or n_n == 0:
        return out.fill_(float("-inf")), counts.zero_()
    _forward_kernel[(triton.cdiv(a_n, blocks.m),)](
        x, y, a, *rule.args(), out, counts, a_n, n_n, d,
        E=e_n, EP=max(2, triton.next_power_of_2(e_n)), NEG=negative, **rule.flags(),
        BM=blocks.m, BN=blocks.n, BK=blocks.k, KC=blocks.chunks(d), PREC=_precision(x),
        num_warps=blocks.warps, num_stages=blocks.stages,
    )  # fmt: skip
    return out, counts


def _coefficients(grad: Tensor, out: Tensor, a: Tensor) -> tuple[Tensor, Tensor]:
    """``(c, L)``: ``c = a_e · ∂loss/∂L_e`` (A, E) and ``L``, both 0 on rows without a valid entry
    (L = −inf: no gradient); no host read."""
    finite = torch.isfinite(out)
    coef = torch.where(finite, grad.to(out.dtype), 0.0) * a.to(out.dtype)
    return coef.contiguous(), torch.where(finite, out, 0.0).contiguous()


def _backward_rows(x: Tensor, y: Tensor, a: Tensor, coef: Tensor, lse: Tensor, rule: _Rule, blocks: Blocks,
                   *, symmetric: bool) -> Tensor:
    a_n, n_n, d = x.shape[0], y.shape[0], x.shape[1]
    chunks = blocks.chunks(d)
    gx = (torch.zeros_like if chunks > 1 else torch.empty_like)(x)
    if a_n == 0 or n_n == 0:
        return gx.zero_()
    _rows_backward_kernel[(triton.cdiv(a_n, blocks.m),)](
        x, y, a, coef, lse, *rule.args(), gx, a_n, n_n, d, E=a.shape[0], **rule.flags(), SYM=symmetric,
        BM=blocks.m, BN=blocks.n, BK=blocks.k, KC=chunks, PREC=_precision(x),
        num_warps=blocks.warps, num_stages=blocks.stages,
    )  # fmt: skip
    return gx


def _backward_cols(x: Tensor, y: Tensor, a: Tensor, coef: Tensor, lse: Tensor, rule: _Rule,
                   blocks: Blocks) -> Tensor:
    a_n, n_n, d = x.shape[0], y.shape[0], x.shape[1]
    chunks = blocks.chunks(d)
    gy = (torch.zeros_like if chunks > 1 else torch.empty_like)(y)
    if a_n == 0 or n_n == 0:
        return gy.zero_()
    _cols_backward_kernel[(triton.cdiv(n_n, blocks.n),)](
        x, y, a, coef, lse, *rule.args(), gy, a_n, n_n, d, E=a.shape[0], **rule.flags(),
        BM=blocks.m, BN=blocks.n, BK=blocks.k, KC=chunks, PREC=_precision(x),
        num_warps=blocks.warps, num_stages=blocks.stages,
    )  # fmt: skip
    return gy


class _FusedLSE(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: Tensor, y: Tensor, a: Tensor, rule: _Rule, blocks: Blocks,
                negative: bool) -> tuple[Tensor, Tensor]:
        out, counts = _forward(x, y, a, rule, blocks, negative)
        ctx.save_for_backward(x, y, a, out)
        ctx.rule, ctx.blocks = rule, blocks
        ctx.mark_non_differentiable(counts)
        return out, counts

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: Tensor, _counts: Tensor | None) -> tuple[Tensor | None, ...]:
        x, y, a, out = ctx.saved_tensors
        coef, lse = _coefficients(grad, out, a)
        gx = _backward_rows(x, y, a, coef, lse, ctx.rule, ctx.blocks, symmetric=False) \
            if ctx.needs_input_grad[0] else None  # fmt: skip
        gy = _backward_cols(x, y, a, coef, lse, ctx.rule, ctx.blocks) if ctx.needs_input_grad[1] else None
        return gx, gy, None, None, None, None


class _FusedSymmetricLSE(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, v: Tensor, scale: float, a: Tensor, rule: _Rule, blocks: Blocks,
                negative: bool) -> tuple[Tensor, Tensor]:
        w = v * scale
        out, counts = _forward(w, v, a, rule, blocks, negative)
        ctx.save_for_backward(v, w, a, out)
        ctx.rule, ctx.blocks = rule, blocks
        ctx.mark_non_differentiable(counts)
        return out, counts

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: Tensor, _counts: Tensor | None) -> tuple[Tensor | None, ...]:
        v, w, a, out = ctx.saved_tensors
        coef, lse = _coefficients(grad, out, a)
        gv = _backward_rows(w, v, a, coef, lse, ctx.rule, ctx.blocks, symmetric=True)
        return gv, None, None, None, None, None


def _prepared(*tensors: Tensor) -> list[Tensor]:
    """The inputs in one kernel dtype (float32 or float64; half precision computed in float32),
    contiguous."""
    dtype = tensors[0].dtype
    if any(t.dtype != dtype for t in tensors):
        raise ValueError(f"the fused kernel needs inputs of one dtype, got {[t.dtype for t in tensors]}")
    if dtype not in (torch.float32, torch.float64):
        if not dtype.is_floating_point:
            raise ValueError(f"the fused kernel needs floating inputs, got {dtype}")
        dtype = torch.float32
    return [t.to(dtype).contiguous() for t in tensors]


def _exponents(exponents: tuple[float, ...], like: Tensor) -> Tensor:
    """The exponents on ``like``'s device, copied from pinned memory without a synchronisation."""
    if not exponents:
        raise ValueError("exponents must name at least one exponent, got ()")
    a = torch.tensor([float(e) for e in exponents], dtype=like.dtype)
    return a.pin_memory().to(like.device, non_blocking=True) if like.is_cuda else a


def lse(anchors: Tensor, candidates: Tensor, exponents: tuple[float, ...], rule: TileMask, *,
        blocks: Blocks | None = None) -> tuple[Tensor, Tensor]:
    """``(L, N)`` as :func:`hardneg.engines.tiled.lse.tiled_lse` returns them, by the fused kernels
    (exponents of any sign; see the module docstring). Shapes: (A, d), (N, d) → (A, E), (A,) int64."""
    x, y = _prepared(anchors, candidates)
    blocks = blocks or choose_blocks(x, x.shape[1])
    out: tuple[Tensor, Tensor] = _FusedLSE.apply(
        x, y, _exponents(exponents, x), _Rule.of(rule, x.device), blocks, min(exponents) < 0
    )
    return out


def lse_symmetric(v: Tensor, scale: float, exponents: tuple[float, ...], rule: TileMask, *,
                  blocks: Blocks | None = None) -> tuple[Tensor, Tensor]:
    """``(L, N)`` as :func:`hardneg.engines.tiled.symmetric.tiled_lse_symmetric` returns them (a symmetric
    mask, checked by the caller), the backward in one row-block kernel. Shapes: (n, d) → (n, E), (n,)."""
    (x,) = _prepared(v)
    blocks = blocks or choose_blocks(x, x.shape[1])
    out: tuple[Tensor, Tensor] = _FusedSymmetricLSE.apply(
        x, float(scale), _exponents(exponents, x), _Rule.of(rule, x.device), blocks, min(exponents) < 0
    )
    return out
