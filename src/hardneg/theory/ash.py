"""Ash, Goel, Krishnamurthy, Misra (AISTATS'22): "Investigating the role of negatives".

Source: Ash et al. (AISTATS 2022). The copy of the paper we worked from lost its equations, so
every formula here is reconstructed (derived from the surviving prose and proof skeleton;
docs/theory.md says how each was checked) or follows Bao, Nagano & Nozawa's (ICML 2022)
evaluation of Theorem 1. N = number of
classes (C elsewhere), K = number of negatives, q = 1 − 1/N, A = 2(N−1)H_{N−1}.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from numpy.typing import NDArray

from .arguments import check_int, check_loss, check_real, resolve_probs
from .collisions import collision_count_pmf, collision_probability, no_collision_probability
from .coupon import coupon_expected_draws, harmonic_number

ProbsLike = Sequence[float] | NDArray[np.floating] | None
KappaLike = Callable[[int, int], float] | float | str | None

__all__ = [
    "CEIL_MAX_CLASSES",
    "AshTheorem3Bound",
    "ash_coefficient",
    "ash_theorem1_bound",
    "ash_theorem3_bound",
    "collision_floor",
    "kappa_loose",
    "kappa_tau_refined",
    "optimal_num_negatives",
]

_EXACT_FRACTION_LIMIT = 2000
CEIL_MAX_CLASSES = 100_000
"""The largest N of :func:`optimal_num_negatives` with ``ceil=True`` (it tries K = 1..⌈2(N−1)H_{N−1}⌉+1)."""


def _coverage_ratio(n: int, k: int, ceil: bool) -> float:
    """max(1, A/K) or max(1, ⌈A/K⌉) with A = 2(N−1)H_{N−1} (exact Fraction when N ≤ 2000)."""
    if n <= _EXACT_FRACTION_LIMIT:
        a = 2 * (n - 1) * harmonic_number(n - 1, exact=True)
        ratio = a / k
        if ceil:
            return float(max(1, math.ceil(ratio)))
        return float(max(Fraction(1), ratio))
    ratio_f = 2.0 * (n - 1) * harmonic_number(n - 1) / k
    return float(max(1.0, math.ceil(ratio_f))) if ceil else max(1.0, ratio_f)


def ash_coefficient(
    num_classes: int | None,
    num_negatives: int,
    ceil: bool = False,
    class_probs: ProbsLike = None,
    coupon: str = "bound",
) -> float:
    """Coefficient of Ash et al. Theorem 1: L^μ_sup(f) ≤ coef·(L_NCE(f) − Λ_K).

    Uniform ρ: coef = 2·max(1, 2(N−1)H_{N−1}/K) / (1 − τ_K), 1 − τ_K = (1−1/N)^K computed as
    exp(K·log1p(−1/N)) (no cancellation). ``ceil=True`` uses the integer-copies factor
    2·max(1, ⌈2(N−1)H_{N−1}/K⌉) (rigorous version of the proof's averaging step; flag §3.2).
    Examples: N = K = 10 → 29.2082 (ceil: 34.4157).

    General ρ (reconstructed: derived, not verbatim): max_c 2·max(1, 2E[T_c]/K)/(1−ρ(c))^K, with E[T_c]
    the coupon time over 𝒞∖{c} with probabilities ρ(c′)/(1−ρ(c)); ``coupon="bound"`` uses
    E[T_c] ≤ H_{N−1}(1−ρ(c))/min_{c′≠c}ρ(c′), ``coupon="exact"`` inclusion–exclusion (N ≤ 21).

    Source: Ash et al. (AISTATS 2022) Theorem 1 (reconstructed, and as Bao, Nagano & Nozawa (ICML 2022)
    evaluate it; docs/theory.md). Validity: N ≥ 2, K ≥ 1.
    """
    k = check_int("num_negatives", num_negatives, 1)
    if class_probs is None:
        n = check_int("num_classes", num_classes, 2)
        factor = _coverage_ratio(n, k, ceil)
        return 2.0 * factor / no_collision_probability(n, k)
    if coupon not in ("bound", "exact"):
        raise ValueError(f"coupon must be 'bound' or 'exact', got {coupon!r}")
    p = resolve_probs(num_classes, class_probs, min_classes=2)
    if np.any(p <= 0):
        raise ValueError(f"class_probs must be strictly positive, got {p.tolist()!r}")
    best = 0.0
    hn = harmonic_number(p.size - 1)
    for c in range(p.size):
        rest = np.delete(p, c)
        if coupon == "bound":
            et = hn * (1.0 - p[c]) / float(rest.min())
        else:
            et = coupon_expected_draws(probs=rest / rest.sum())
        ratio = 2.0 * et / k
        factor = max(1.0, float(math.ceil(ratio - 1e-12))) if ceil else max(1.0, ratio)
        best = max(best, 2.0 * factor / math.exp(k * math.log1p(-float(p[c]))))
    return best


def optimal_num_negatives(num_classes: int, ceil: bool = False, rtol: float = 1e-9
                          ) -> tuple[int, ...]:
    """Every integer K ≥ 1 minimising :func:`ash_coefficient` (uniform ρ), ascending.

    Remark 2 (derived exactly here): g(K) = 2A/(K q^K) for K ≤ A, 2/q^K for K ≥ A; over the reals
    the minimiser is K* = 1/ln(N/(N−1)) ≈ N − ½, and on the integers K = N−1 and K = N tie
    exactly ((N−1)q^{N−1} = N q^N), so the answer is (N−1, N) for N ≥ 2 (ceil=False).
    Values are compared with relative tolerance ``rtol`` among the integers around K* (computed as
    −1/log1p(−1/N), exact to the float's rounding for any N); ties are all returned — from
    N ≈ 10⁵ on the coefficient is so flat that N−3 … N+2 tie within the default ``rtol``. O(1) in
    N (the harmonic number of a large N is O(1): :func:`~hardneg.theory.coupon.harmonic_number`).
    ``ceil=True`` brute-forces K = 1..⌈A⌉+1 (N ≤ 10⁵).
    Source: Ash et al. (AISTATS 2022) Remark 2 (reconstructed; see docs/theory.md). Validity: N ≥ 2.
    """
    n = check_int("num_classes", num_classes, 2)
    tol = check_real("rtol", rtol, low=0.0, high=1e-3)
    if ceil:
        if n > CEIL_MAX_CLASSES:
            raise ValueError(f"num_classes must be <= {CEIL_MAX_CLASSES} when ceil=True, got {n}")
        a = 2.0 * (n - 1) * harmonic_number(n - 1)
        candidates = list(range(1, math.ceil(a) + 2))
    else:
        kstar = -1.0 / math.log1p(-1.0 / n)  # not 1/log(n/(n-1)): n/(n-1) rounds for large n
        candidates = list(range(max(1, math.floor(kstar) - 2), math.ceil(kstar) + 3))
    values = np.array([ash_coefficient(n, k, ceil=ceil) for k in candidates])
    best = float(values.min())
    return tuple(k for k, v in zip(candidates, values) if v <= best * (1.0 + tol))


def collision_floor(
    num_classes: int | None,
    num_negatives: int,
    loss: str = "hinge",
    class_probs: ProbsLike = None,
    log_base: float = math.e,
) -> float:
    """Λ_K = E[ℓ_{|I|}(0⃗)] with ℓ_0 = 0 (|I| = number of colliding negatives).

    * hinge: Λ_K = τ_K;
    * logistic: Λ_K = E_{c∼ρ} Σ_{m=0}^K Bin(K, ρ(c))(m)·log_b(1+m) (natural log by default, as
      in Bao et al.; pass ``log_base=2`` for Arora's base-2 logistic).

    Source: Ash et al. (AISTATS 2022) Theorem 1 (reconstructed, and as Bao, Nagano & Nozawa (ICML 2022)
    evaluate it; docs/theory.md; log base unverified).
    Validity: K ≥ 0, C ≥ 1.
    """
    check_loss(loss)
    k = check_int("num_negatives", num_negatives, 0)
    if loss == "hinge":
        return collision_probability(num_classes, k, class_probs)
    b = check_real("log_base", log_base, low=1.0, low_open=True)
    logs = np.log1p(np.arange(k + 1)) / math.log(b)
    if class_probs is None:
        n = check_int("num_classes", num_classes, 1)
        return float(collision_count_pmf(k, 1.0 / n) @ logs)
    p = resolve_probs(num_classes, class_probs)
    return float(sum(pc * (collision_count_pmf(k, float(pc)) @ logs) for pc in p))


def ash_theorem1_bound(
    nce_loss: float,
    num_classes: int | None,
    num_negatives: int,
    loss: str = "hinge",
    ceil: bool = False,
    class_probs: ProbsLike = None,
    log_base: float = math.e,
) -> float:
    """Theorem 1 right-hand side: coef·(L_NCE(f) − Λ_K) (:func:`ash_coefficient`, :func:`collision_floor`).

    Bounds the N-way mean-classifier loss L^μ_sup(f) (single task, prior ρ, independent of K).
    Source: Ash et al. (AISTATS 2022) Theorem 1 (reconstructed, and as Bao, Nagano & Nozawa (ICML 2022)
    evaluate it). Validity: N ≥ 2, K ≥ 1. Warns if L_NCE < Λ_K.
    """
    lv = check_real("nce_loss", nce_loss, low=0.0)
    floor = collision_floor(num_classes, num_negatives, loss, class_probs, log_base)
    if lv < floor:
        warnings.warn(
            f"nce_loss={lv:g} < collision floor {floor:g}: the bound is negative", stacklevel=2
        )
    coef = ash_coefficient(num_classes, num_negatives, ceil=ceil, class_probs=class_probs)
    return coef * (lv - floor)


def kappa_tau_refined(num_classes: int, num_negatives: int) -> float:
    """κ_K = √2·√(K·τ_K/N) — the s(f) coefficient of the Theorem 3 bound derived in docs/theory.md
    (reconstructed).

    Valid (derived), monotone in K; NOT the paper's printed coefficient (not recovered).
    """
    n = check_int("num_classes", num_classes, 2)
    k = check_int("num_negatives", num_negatives, 1)
    tau = collision_probability(n, k)
    return math.sqrt(2.0) * math.sqrt(k * tau / n)


def kappa_loose(num_classes: int, num_negatives: int) -> float:
    """κ_K = √2·√(K/N) — looser valid choice dropping τ_K (reconstructed; see docs/theory.md); the total
    coefficient is
    minimised near K ≈ N/2, which fits the paper's prose better (docs/theory.md)."""
    n = check_int("num_classes", num_classes, 2)
    k = check_int("num_negatives", num_negatives, 1)
    return math.sqrt(2.0) * math.sqrt(k / n)


@dataclass(frozen=True)
class AshTheorem3Bound:
    """Result of :func:`ash_theorem3_bound`. ``reconstructed`` is always True."""

    value: float
    coefficient: float
    kappa: float
    kappa_name: str
    reconstructed: bool = True
    note: str = (
        "Ash et al. Theorem 3 is reconstructed: the paper's s(f) coefficient is not "
        "recovered (docs/theory.md); kappa is pluggable."
    )


def ash_theorem3_bound(
    nce_loss_neq: float,
    deviation: float,
    num_classes: int,
    num_negatives: int,
    kappa: KappaLike = None,
    ceil: bool = False,
) -> AshTheorem3Bound:
    """Theorem 3 (refined bound), RECONSTRUCTED (see docs/theory.md), uniform ρ:

    L^μ_sup(f) ≤ coef_K·(L^≠_NCE(f) + κ_K·s(f)), coef_K = :func:`ash_coefficient`.

    L^≠_NCE ignores the colliding coordinates (ℓ(empty) = 0); s(f) with ρ-weighting.
    ``kappa``: a callable (N, K) → κ, a number, ``"tau-refined"`` (default,
    :func:`kappa_tau_refined`, the bound derived in docs/theory.md) or ``"loose"``
    (:func:`kappa_loose`). Source: Ash et al. (AISTATS 2022) Theorem 3 (reconstructed; see docs/theory.md),
    MEDIUM–LOW confidence in κ.
    Validity: N ≥ 2, K ≥ 1, s(f) ≥ 0.
    """
    lv = check_real("nce_loss_neq", nce_loss_neq, low=0.0)
    s = check_real("deviation", deviation, low=0.0)
    n = check_int("num_classes", num_classes, 2)
    k = check_int("num_negatives", num_negatives, 1)
    if kappa is None or kappa == "tau-refined":
        kv, name = kappa_tau_refined(n, k), "tau-refined"
    elif kappa == "loose":
        kv, name = kappa_loose(n, k), "loose"
    elif isinstance(kappa, str):
        raise ValueError(f"kappa must be 'tau-refined', 'loose', a number or a callable, got {kappa!r}")
    elif callable(kappa):
        kv, name = float(kappa(n, k)), getattr(kappa, "__name__", "custom")
    else:
        kv, name = check_real("kappa", kappa, low=0.0), "constant"
    coef = ash_coefficient(n, k, ceil=ceil)
    return AshTheorem3Bound(value=coef * (lv + kv * s), coefficient=coef, kappa=kv, kappa_name=name)
