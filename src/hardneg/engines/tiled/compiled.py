"""Fused block kernels for the tiled engine, compiled with ``torch.compile`` (opt-in).

The eager block steps of :mod:`hardneg.engines.tiled.stream` make one pass over a tile per operation
(subtract, exponentiate, sum, square, …). The same mathematics written as pure functions lets
TorchInductor fuse each step into one or two loops over the tile:

    absorb:  M' = max(M, max_j s_j),  S'_e = S_e e^{a_e (M − M')} + Σ_j e^{a_e (s_j − M')}
    grad:    G_j = Σ_e coef_e e^{a_e s_j − L_e}

(rows with ``dim=1``, columns with ``dim=0``): the online log-sum-exp recurrence of Milakov &
Gimelshein (arXiv:1805.02867) with the exponents ``1 + β`` and ``β`` of Robinson et al. (ICLR
2021). The exponents are a tensor, so a new β (a schedule) does not recompile; shapes are
dynamic, so edge tiles do not either. The first call compiles (tens of seconds, a C++ compiler is
needed on a CPU); results equal the eager steps to round-off. On a 2-core CPU at B = 1024–4096
the matrix products dominate and fusing gave no consistent speed-up; it is meant for machines
where the element-wise passes dominate.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from hardneg.engines.tiled.stream import _along

__all__ = ["absorb_pure", "compiled_kernels", "grad_pure"]


def absorb_pure(
    run_max: Tensor, run_sum: Tensor, s: Tensor, exponents: Tensor, dim: int
) -> tuple[Tensor, Tensor]:
    """``(M', S')`` after folding the logits block ``s`` into ``(M (R,), S (R, E))`` (not modified)."""
    m = torch.maximum(run_max, s.amax(dim=dim))
    m_safe = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    old = torch.where(torch.isfinite(run_max), run_max - m_safe, torch.full_like(m, float("-inf")))
    d = s - _along(m_safe, dim)
    cols = []
    for e in range(exponents.shape[0]):
        a = exponents[e]
        cols.append(run_sum[:, e] * torch.exp(a * old) + torch.exp(d * a).sum(dim=dim))
    return m, torch.stack(cols, dim=1)


def grad_pure(s: Tensor, lse: Tensor, coef: Tensor, exponents: Tensor, dim: int) -> Tensor:
    """``Σ_e coef_e e^{a_e s − L_e}`` over the block (``lse``, ``coef`` (R, E) along ``dim``)."""
    g = torch.zeros_like(s)
    for e in range(exponents.shape[0]):
        g = g + _along(coef[:, e], dim) * torch.exp(s * exponents[e] - _along(lse[:, e], dim))
    return g


def _absorb_rows(run_max: Tensor, run_sum: Tensor, s: Tensor, exponents: Tensor) -> tuple[Tensor, Tensor]:
    return absorb_pure(run_max, run_sum, s, exponents, 1)


def _absorb_cols(run_max: Tensor, run_sum: Tensor, s: Tensor, exponents: Tensor) -> tuple[Tensor, Tensor]:
    return absorb_pure(run_max, run_sum, s, exponents, 0)


def _grad_rows(s: Tensor, lse: Tensor, coef: Tensor, exponents: Tensor) -> Tensor:
    return grad_pure(s, lse, coef, exponents, 1)


def _grad_cols(s: Tensor, lse: Tensor, coef: Tensor, exponents: Tensor) -> Tensor:
    return grad_pure(s, lse, coef, exponents, 0)


@functools.cache
def _compiled(name: str) -> Callable[..., Any]:
    """One compiled function per kernel and direction (separate code objects, so that the variants
    a run needs — its dtype, number of exponents, full and edge tiles — stay under dynamo's
    recompile limit)."""
    fn = {"absorb1": _absorb_rows, "absorb0": _absorb_cols, "grad1": _grad_rows, "grad0": _grad_cols}[name]
    return torch.compile(fn, dynamic=True)


def compiled_kernels() -> tuple[Callable[..., tuple[Tensor, Tensor]], Callable[..., Tensor]]:
    """``(absorb, grad)`` with the signatures of :func:`absorb_pure` and :func:`grad_pure`, each
    dispatching on ``dim`` to a function compiled with ``torch.compile`` on first use (the running
    statistics are passed as fresh tensors: slices would specialise on their storage offset)."""

    def absorb(
        run_max: Tensor, run_sum: Tensor, s: Tensor, exponents: Tensor, dim: int
    ) -> tuple[Tensor, Tensor]:
        out: tuple[Tensor, Tensor] = _compiled(f"absorb{dim}")(run_max.clone(), run_sum.clone(), s, exponents)
        return out

    def grad(s: Tensor, lse: Tensor, coef: Tensor, exponents: Tensor, dim: int) -> Tensor:
        out: Tensor = _compiled(f"grad{dim}")(s, lse.contiguous(), coef.contiguous(), exponents)
        return out

    return absorb, grad
