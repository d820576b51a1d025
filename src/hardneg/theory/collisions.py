"""Collision probabilities of the latent-class model.

Source: Arora et al. (ICML 2019, App. B.1) and Ash et al. (AISTATS 2022, §3, (reconstructed; see
docs/theory.md) per docs/theory.md).
Negatives' classes c⁻_1..c⁻_K and the anchor class c⁺ are i.i.d. from the prior ρ.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from .arguments import check_int, check_real, resolve_probs

ProbsLike = Sequence[float] | NDArray[np.floating] | None

__all__ = [
    "all_collide_probability",
    "collision_count_pmf",
    "collision_probability",
    "distinct_classes_probability",
    "no_all_collide_probability",
    "no_collision_probability",
]


def _pow_one_minus(p: NDArray[np.float64], k: int) -> NDArray[np.float64]:
    """(1 − p)^k computed as exp(k·log1p(−p)) (no cancellation), with 0^0 = 1."""
    out = np.empty_like(p)
    inside = p < 1.0
    out[inside] = np.exp(k * np.log1p(-p[inside]))
    out[~inside] = 1.0 if k == 0 else 0.0
    return out


def _uniform_classes(num_classes: int | None, class_probs: ProbsLike) -> int | None:
    """C when the prior is uniform and given only by ``num_classes`` (no array is built)."""
    if class_probs is None:
        if num_classes is None:
            raise ValueError("num_classes or class_probs must be given, got neither")
        return check_int("num_classes", num_classes, 1)
    return None


def no_collision_probability(
    num_classes: int | None, num_negatives: int, class_probs: ProbsLike = None
) -> float:
    """1 − τ_K = Σ_c ρ(c)(1 − ρ(c))^K, computed directly (never as 1 − τ_K).

    Probability that none of K i.i.d. negative classes equals the anchor class.
    Uniform ρ: (1 − 1/C)^K = exp(K·log1p(−1/C)).

    Source: Arora et al. (ICML 2019) App. B.1 (τ_k), Ash et al. (AISTATS 2022) §3 (reconstructed; see
    docs/theory.md). Valid for K ≥ 0, C ≥ 1.
    """
    k = check_int("num_negatives", num_negatives, 0)
    c = _uniform_classes(num_classes, class_probs)
    if c is not None:
        if c == 1:
            return 1.0 if k == 0 else 0.0
        return math.exp(k * math.log1p(-1.0 / c))
    p = resolve_probs(num_classes, class_probs)
    return float(np.sum(p * _pow_one_minus(p, k)))


def collision_probability(
    num_classes: int | None, num_negatives: int, class_probs: ProbsLike = None
) -> float:
    """τ_K = P[some negative shares the anchor's class] = 1 − Σ_c ρ(c)(1 − ρ(c))^K.

    Uniform ρ: τ_K = 1 − (1 − 1/C)^K; τ_1 = Σ_c ρ(c)² (Arora's τ).
    Limits: K = 0 → 0; C = 1 (or a point mass) with K ≥ 1 → 1.

    Source: Arora et al. (ICML 2019) App. B.1; Ash et al. (AISTATS 2022) §3 (reconstructed; the same number).
    Validity: num_classes ≥ 1 (or class_probs a probability vector), num_negatives ≥ 0.
    Computed directly as Σ_c ρ(c)·(−expm1(K·log1p(−ρ(c)))) (accurate for tiny τ_K); use
    :func:`no_collision_probability` when you need 1 − τ_K (also computed directly).
    """
    k = check_int("num_negatives", num_negatives, 0)
    c = _uniform_classes(num_classes, class_probs)
    if c is not None:
        if c == 1:
            return 0.0 if k == 0 else 1.0
        return -math.expm1(k * math.log1p(-1.0 / c))
    p = resolve_probs(num_classes, class_probs)
    hit = np.empty_like(p)
    inside = p < 1.0
    hit[inside] = -np.expm1(k * np.log1p(-p[inside]))
    hit[~inside] = 0.0 if k == 0 else 1.0
    return float(np.sum(p * hit))


def all_collide_probability(
    num_classes: int | None, num_negatives: int, class_probs: ProbsLike = None
) -> float:
    """τ′ = P[c⁺ = c⁻_i for all i] = Σ_c ρ(c)^{K+1}.

    Source: Arora et al. (ICML 2019) App. B.1. Validity: K ≥ 0 (K = 0 gives 1), C ≥ 1.
    """
    k = check_int("num_negatives", num_negatives, 0)
    c = _uniform_classes(num_classes, class_probs)
    if c is not None:
        return math.exp(-k * math.log(c))
    p = resolve_probs(num_classes, class_probs)
    return float(np.sum(p ** (k + 1)))


def no_all_collide_probability(
    num_classes: int | None, num_negatives: int, class_probs: ProbsLike = None
) -> float:
    """1 − τ′ = Σ_c ρ(c)(1 − ρ(c)^K), computed directly as −Σ ρ·expm1(K·log ρ).

    Source: Arora et al. (ICML 2019) App. B.1. Validity: K ≥ 0 (K = 0 gives 0), C ≥ 1.
    """
    k = check_int("num_negatives", num_negatives, 0)
    c = _uniform_classes(num_classes, class_probs)
    if c is not None:
        return -math.expm1(-k * math.log(c))
    p = resolve_probs(num_classes, class_probs)
    pos = p[p > 0]
    return float(np.sum(pos * -np.expm1(k * np.log(pos))))


def distinct_classes_probability(
    num_classes: int | None, num_classes_in_task: int, class_probs: ProbsLike = None
) -> float:
    """p = P(m classes drawn i.i.d. from ρ are pairwise distinct) = m!·e_m(ρ).

    e_m is the elementary symmetric polynomial. Uniform ρ: p = Π_{j=0}^{m−1}(1 − j/C).
    With m = k + 1 this is the p of Arora's Remark in Sec. 6.1 (Arora et al. (ICML 2019)):
    L_sup(f̂) ≤ 𝓛_sup(f̂)/p. Validity: m ≥ 1; returns 0 when m > C.
    """
    m = check_int("num_classes_in_task", num_classes_in_task, 1)
    c = _uniform_classes(num_classes, class_probs)
    if c is not None:
        return 0.0 if m > c else float(np.prod([1.0 - j / c for j in range(m)]))
    p = resolve_probs(num_classes, class_probs)
    if m > p.size:
        return 0.0
    e = np.zeros(m + 1)
    e[0] = 1.0
    for pc in p:  # e_j ← e_j + pc·e_{j−1}, descending j
        e[1:] = e[1:] + pc * e[:-1]
    fact = float(np.prod(np.arange(1, m + 1, dtype=np.float64)))
    return float(fact * e[m])


def collision_count_pmf(num_negatives: int, prob: float) -> NDArray[np.float64]:
    """P(|I| = m), m = 0..K, for |I| ∼ Binomial(K, prob): the number of colliding negatives.

    For an anchor of class c, prob = ρ(c) (uniform: 1/C). Source: Ash et al. (AISTATS 2022) §3.2
    (reconstructed; agrees with Bao, Nagano & Nozawa's reading, ICML 2022).
    """
    k = check_int("num_negatives", num_negatives, 0)
    q = check_real("prob", prob, low=0.0, high=1.0)
    from scipy.stats import binom  # imported here: SciPy's stats module takes ~0.8 s to load

    return np.asarray(binom.pmf(np.arange(k + 1), k, q), dtype=np.float64)
