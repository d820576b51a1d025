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

__all__ = ["absorb_", "finish", "grad_block", "tiles"]


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
) -> None:
    """Fold the logits block ``s`` into the running ``(M, S_e)`` of its rows (``dim=1``) or columns
    (``dim=0``): ``run_max`` (R,), ``run_sum`` (R, E), both updated in place. ``s`` is overwritten
    unless ``consume=False`` (one more tile-sized buffer)."""
    m = torch.maximum(run_max, s.amax(dim=dim))
    m_safe = torch.where(torch.isfinite(m), m, 0.0)
    old = torch.where(torch.isfinite(run_max), run_max - m_safe, float("-inf"))  # ≤ 0
    d = s.sub_(_along(m_safe, dim)) if consume else s - _along(m_safe, dim)  # ≤ 0; −inf stays −inf
    order = list(range(len(exponents)))
    doubles = _doubles(exponents, order)
    kept: dict[int, Tensor] = {}
    singles = [e for e in order if e not in doubles]
    for i, e in enumerate(singles):
        a = exponents[e]
        last = i == len(singles) - 1
        x = (d.mul_(a) if a != 1.0 else d).exp_() if last else (d * a).exp_()
        run_sum[:, e].mul_(torch.exp(a * old)).add_(x.sum(dim=dim))
        if e in doubles.values():
            kept[e] = x
    for e, f in doubles.items():
        run_sum[:, e].mul_(torch.exp(exponents[e] * old)).add_(torch.linalg.vecdot(kept[f], kept[f], dim=dim))
    run_max.copy_(m)


def finish(run_max: Tensor, run_sum: Tensor, exponents: tuple[float, ...]) -> Tensor:
    """``L_e = a_e M + log S_e`` (R, E); −inf where no entry was valid."""
    finite = torch.isfinite(run_max)
    a = torch.tensor(exponents, dtype=run_max.dtype, device=run_max.device)
    m = torch.where(finite, run_max, 0.0)
    return torch.where(finite[:, None], m[:, None] * a + run_sum.log(), float("-inf"))


def grad_block(
    s: Tensor, lse: Tensor, coef: Tensor, exponents: tuple[float, ...], active: list[int], *, dim: int
) -> Tensor:
    """``Σ_e coef_e · e^{a_e s − L_e}`` over the block ``s`` (not modified), the gradient of
    ``Σ_e coef_e L_e / a_e`` with respect to ``s``; ``lse``, ``coef`` (R, E) index the rows
    (``dim=1``) or the columns (``dim=0``) of the block."""
    doubles = _doubles(exponents, active)
    g: Tensor | None = None
    for e in active:
        if e in doubles:
            continue
        a = exponents[e]
        p = torch.add(_along(-lse[:, e], dim), s, alpha=a).exp_()  # a·s − L_e in one pass
        partner = [d for d, f in doubles.items() if f == e]
        if partner:  # coef_e p + coef_2e e^{2L_e − L_2e} p² = p ⊙ (coef_e + c' p)
            d2 = partner[0]
            c2 = coef[:, d2] * torch.exp(2.0 * lse[:, e] - lse[:, d2])
            p.mul_(torch.addcmul(_along(coef[:, e], dim), p, _along(c2, dim)))
        else:
            p.mul_(_along(coef[:, e], dim))
        g = p if g is None else g.add_(p)
    assert g is not None
    return g
