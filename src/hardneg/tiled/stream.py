"""Block-level steps of the streaming log-sum-exp with several exponents (pure tensor functions).

For a block of logits ``s`` (rows × columns, invalid entries −inf) and exponents ``a_1 … a_E > 0``
the running statistics of a row (or of a column) are one running maximum ``M`` of ``s`` and one
running sum per exponent, ``S_e = Σ e^{a_e (s − M)}``, so that ``L_e = a_e M + log S_e``. One
maximum serves every exponent (the maximum of ``a_e s`` is ``a_e M``), and an exponent that is
twice another (Robinson et al.'s hard negatives at β = 1 need ``1 + β = 2β``; the effective sample
size needs ``2β``) costs a sum of squares instead of a second exponential:
``Σ e^{2a(s − M)} = Σ (e^{a(s − M)})²``. The same identity serves the backward pass,
``e^{2a s − L_2a} = (e^{a s − L_a})² · e^{2 L_a − L_2a}``, with ``e^{2L_a − L_2a} ∈ [1, N]`` (no
overflow). Every exponential has a non-positive argument.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["Scratch", "absorb_", "finish", "grad_block", "tiles"]


class Scratch:
    """Tile-sized work buffers reused from one tile to the next, by name.

    A fresh tile-sized allocation on a CPU is new pages from the kernel (a page fault per 4 KiB),
    which costs about as much as an element-wise pass; reusing a few buffers avoids it. A block
    smaller than the first (the last tile of a row or column) gets a view of the same memory.
    """

    def __init__(self) -> None:
        self._buffers: dict[str, Tensor] = {}

    def get(self, name: str, rows: int, cols: int, like: Tensor) -> Tensor:
        """A (rows, cols) contiguous buffer with ``like``'s dtype and device (contents undefined)."""
        n = rows * cols
        buf = self._buffers.get(name)
        if buf is None or buf.numel() < n or buf.dtype != like.dtype or buf.device != like.device:
            buf = torch.empty(n, dtype=like.dtype, device=like.device)
            self._buffers[name] = buf
        return buf[:n].view(rows, cols)

    def like(self, name: str, x: Tensor) -> Tensor:
        return self.get(name, x.shape[0], x.shape[1], x)


def tiles(n: int, tile: int) -> list[tuple[int, int]]:
    """``[(start, stop), …]`` covering ``range(n)`` in steps of ``tile``."""
    return [(s, min(n, s + tile)) for s in range(0, n, tile)]


def _doubles(exponents: tuple[float, ...], active: list[int]) -> dict[int, int]:
    """``{e: f}`` for the active exponents ``a_e = 2 a_f`` with ``f`` active and not itself doubled."""
    out: dict[int, int] = {}
    for e in active:
        for f in active:
            if f != e and f not in out and exponents[e] == 2.0 * exponents[f]:
                out[e] = f
                break
    return out


def _along(x: Tensor, dim: int) -> Tensor:
    """A per-row (``dim=1``) or per-column (``dim=0``) vector shaped to broadcast over the block."""
    return x[:, None] if dim == 1 else x[None, :]


def absorb_(
    run_max: Tensor,
    run_sum: Tensor,
    s: Tensor,
    exponents: tuple[float, ...],
    *,
    dim: int,
    consume: bool = True,
    scratch: Scratch | None = None,
) -> None:
    """Fold the logits block ``s`` into the running ``(M, S_e)`` of its rows (``dim=1``) or columns
    (``dim=0``): ``run_max`` (R,), ``run_sum`` (R, E), both updated in place. ``s`` is overwritten
    unless ``consume=False`` (one more tile-sized buffer)."""
    m = torch.maximum(run_max, s.amax(dim=dim))
    m_safe = torch.where(torch.isfinite(m), m, 0.0)
    old = torch.where(torch.isfinite(run_max), run_max - m_safe, float("-inf"))  # ≤ 0
    work = scratch if scratch is not None else Scratch()
    shift = _along(m_safe, dim)
    d = s.sub_(shift) if consume else torch.sub(s, shift, out=work.like("d", s))  # ≤ 0; −inf stays −inf
    order = list(range(len(exponents)))
    doubles = _doubles(exponents, order)
    kept: dict[int, Tensor] = {}
    singles = [e for e in order if e not in doubles]
    for i, e in enumerate(singles):
        a = exponents[e]
        last = i == len(singles) - 1
        x = (
            (d.mul_(a) if a != 1.0 else d).exp_()
            if last
            else torch.mul(d, a, out=work.like(f"x{i}", d)).exp_()
        )
        run_sum[:, e].mul_(torch.exp(a * old)).add_(x.sum(dim=dim))
        if e in doubles.values():
            kept[e] = x
    for e, f in doubles.items():
        squares = torch.mul(kept[f], kept[f], out=work.like("sq", kept[f])).sum(dim=dim)
        run_sum[:, e].mul_(torch.exp(exponents[e] * old)).add_(squares)
    run_max.copy_(m)


def finish(run_max: Tensor, run_sum: Tensor, exponents: tuple[float, ...]) -> Tensor:
    """``L_e = a_e M + log S_e`` (R, E); −inf where no entry was valid."""
    finite = torch.isfinite(run_max)
    a = torch.tensor(exponents, dtype=run_max.dtype, device=run_max.device)
    m = torch.where(finite, run_max, 0.0)
    return torch.where(finite[:, None], m[:, None] * a + run_sum.log(), float("-inf"))


def grad_block(
    s: Tensor,
    lse: Tensor,
    coef: Tensor,
    exponents: tuple[float, ...],
    active: list[int],
    *,
    dim: int,
    scratch: Scratch | None = None,
    tag: str = "",
) -> Tensor:
    """``Σ_e coef_e · e^{a_e s − L_e}`` over the block ``s`` (not modified), the gradient of
    ``Σ_e coef_e L_e / a_e`` with respect to ``s``; ``lse``, ``coef`` (R, E) index the rows
    (``dim=1``) or the columns (``dim=0``) of the block. The result lives in ``scratch``'s
    buffers named after ``tag`` (valid until the next call with the same tag)."""
    work = scratch if scratch is not None else Scratch()
    doubles = _doubles(exponents, active)
    g: Tensor | None = None
    for e in active:
        if e in doubles:
            continue
        a = exponents[e]
        p = torch.add(_along(-lse[:, e], dim), s, alpha=a, out=work.like(f"{tag}p{e}", s)).exp_()  # a·s − L_e
        partner = [d for d, f in doubles.items() if f == e]
        if partner:  # coef_e p + coef_2e e^{2L_e − L_2e} p² = p ⊙ (coef_e + c' p)
            d2 = partner[0]
            c2 = coef[:, d2] * torch.exp(2.0 * lse[:, e] - lse[:, d2])
            q = torch.mul(p, _along(c2, dim), out=work.like(f"{tag}q", s))  # faster than addcmul
            p.mul_(q.add_(_along(coef[:, e], dim)))
        else:
            p.mul_(_along(coef[:, e], dim))
        g = p if g is None else g.add_(p)
    assert g is not None
    return g
