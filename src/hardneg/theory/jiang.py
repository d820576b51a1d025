"""Jiang–Ishwar–Aeron (HCL-OT): the degenerate min-max value (Theorem 1, Lemma 2).

Source: Jiang et al. (arXiv:2111.03169) (docs/theory.md). With negatives chosen adversarially under the
marginal
constraint, a constant encoder attains the min-max, every v_i = 0, and the value is ψ(0,…,0).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from .arguments import check_int, check_real

__all__ = ["degenerate_minmax_value"]


def degenerate_minmax_value(
    loss: str = "nce",
    q: float = 1.0,
    margin: float = 0.0,
    num_negatives: int = 1,
    psi: Callable[[NDArray[np.float64]], float] | None = None,
) -> float:
    """min_f max_{P_neg ∈ Ω_mar} E[ψ(v)] = ψ(0,…,0) (Theorem 1 / Lemma 2, Jiang et al. (arXiv:2111.03169)).

    * ``loss="nce"``: ψ(v) = log(1 + (q/m)Σ_i e^{v_i}) → log(1 + q) (q = 1: ln 2 ≈ 0.693147;
      q = 256: 5.54908);
    * ``loss="triplet"``: ψ(v) = max(0, 2v + η) → max(0, η) = η for η ≥ 0;
    * ``loss="custom"``: ``psi`` evaluated at the zero vector of length ``num_negatives``
      (ψ convex and argument-wise non-decreasing for the theorem to apply).

    Validity: q > 0, η real, m ≥ 1.
    """
    m = check_int("num_negatives", num_negatives, 1)
    if loss == "nce":
        qq = check_real("q", q, low=0.0, low_open=True)
        return math.log1p(qq)
    if loss == "triplet":
        eta = check_real("margin", margin)
        return max(0.0, eta)
    if loss == "custom":
        if psi is None:
            raise ValueError("psi must be a callable when loss='custom', got None")
        return float(psi(np.zeros(m)))
    raise ValueError(f"loss must be 'nce', 'triplet' or 'custom', got {loss!r}")
