"""Robinson et al. (ICLR'21, HCL): Theorem 5 and the simplex separation.

Source: Robinson et al. (ICLR 2021) (HCL text); docs/theory.md f maps to the sphere 𝕊^{d−1}/t of
radius 1/t (t = temperature in the paper's convention: inner products up to 1/t²).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .arguments import check_int, check_probs, check_real

__all__ = ["HCLBound", "hcl_misclassification_bound", "simplex_separation"]


def simplex_separation(num_classes: int, temperature: float = 1.0, dim: int | None = None) -> float:
    """ξ = min_{c≠c′}‖v*_c − v*_{c′}‖ for the regular simplex on 𝕊^{d−1}/t: ξ² = 2C/((C−1)t²).

    For C ≤ d+1 and uniform ρ the regular simplex solves problem (7) exactly (proved here:
    average NN distance² ≤ average pairwise distance² ≤ 2C/((C−1)t²), equality only for the
    simplex). C = 2 gives ξ = 2/t. Source: Robinson et al. (ICLR 2021) Thm 4–5 context; helper
    (reconstructed; see docs/theory.md)
    (docs/theory.md). Validity: C ≥ 2, t > 0, and C ≤ d+1 when ``dim`` is given (for C > d+1 use
    :func:`hardneg.theory.tammes.weighted_tammes`).
    """
    c = check_int("num_classes", num_classes, 2)
    t = check_real("temperature", temperature, low=0.0, low_open=True)
    if dim is not None:
        d = check_int("dim", dim, 1)
        if c > d + 1:
            raise ValueError(
                f"num_classes must be <= dim + 1 = {d + 1} for the simplex solution, got {c}"
            )
    return math.sqrt(2.0 * c / ((c - 1) * t * t))


@dataclass(frozen=True)
class HCLBound:
    """Result of :func:`hcl_misclassification_bound`.

    ``value`` is +inf when ``vacuous`` (ξ² ≤ 2|𝒞|(1+1/t)√ε); ``capped`` = min(value, 1);
    ``trivial`` is True when value ≥ 1 (a valid but uninformative probability bound).
    """

    value: float
    capped: float
    vacuous: bool
    trivial: bool
    xi: float
    effective_classes: float
    margin: float
    """ξ² − 2|𝒞|(1+1/t)√ε (the bound needs margin > 0)."""


def hcl_misclassification_bound(
    epsilon: float,
    num_classes: int,
    temperature: float,
    xi: float | None = None,
    dim: int | None = None,
    class_probs: Sequence[float] | NDArray[np.floating] | None = None,
) -> HCLBound:
    """Theorem 5 (HCL): if ℒ*_∞(f) − inf ℒ*_∞ ≤ ε ≤ 1, the 1-NN classifier on suitable {v_c} has

    P(ĥ(x) ≠ c) ≤ 8ε / (ξ² − 2|𝒞|(1 + 1/t)·ε^{1/2})².

    ξ = min pairwise distance of a solution of (7); default (``xi=None``) the regular-simplex
    value :func:`simplex_separation` (uniform ρ, C ≤ d+1). For non-uniform ρ, |𝒞| is replaced by
    1/min_c ρ(c) and ``xi`` must be given. Vacuous (ξ² ≤ 2|𝒞|(1+1/t)√ε) → value = +inf,
    ``vacuous=True``. Source: Robinson et al. (ICLR 2021) Theorem 5 (docs/theory.md).
    Validity: 0 < ε ≤ 1, C ≥ 2, t > 0, ξ > 0.
    """
    eps = check_real("epsilon", epsilon, low=0.0, high=1.0, low_open=True)
    c = check_int("num_classes", num_classes, 2)
    t = check_real("temperature", temperature, low=0.0, low_open=True)
    if class_probs is not None:
        rho = check_probs("class_probs", class_probs)
        if rho.size != c:
            raise ValueError(f"class_probs must have num_classes = {c} entries, got {rho.size}")
        if np.any(rho <= 0):
            raise ValueError(f"class_probs must be strictly positive, got {rho.tolist()!r}")
        ceff = 1.0 / float(rho.min())
        uniform = bool(np.allclose(rho, 1.0 / c, rtol=0, atol=1e-12))
    else:
        ceff, uniform = float(c), True
    if xi is None:
        if not uniform:
            raise ValueError("xi must be given for a non-uniform class_probs, got None")
        xi_v = simplex_separation(c, t, dim)
    else:
        xi_v = check_real("xi", xi, low=0.0, high=2.0 / t, low_open=True)
    margin = xi_v * xi_v - 2.0 * ceff * (1.0 + 1.0 / t) * math.sqrt(eps)
    if margin <= 0.0:
        return HCLBound(math.inf, 1.0, True, True, xi_v, ceff, margin)
    value = 8.0 * eps / (margin * margin)
    return HCLBound(value, min(value, 1.0), False, value >= 1.0, xi_v, ceff, margin)
