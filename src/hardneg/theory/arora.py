"""Arora, Khandeparkar, Khodak, Plevrakis, Saunshi (ICML'19): bounds of the CURL paper.

Source: Arora et al. (ICML 2019) (LaTeX of the preliminary version); formulas per docs/theory.md
τ = τ_1 = Σ_c ρ(c)², τ_k = 1 − Σ_c ρ(c)(1−ρ(c))^k, τ′ = Σ_c ρ(c)^{k+1}.
All "Gen_M" arguments default to 0 (the population statement); supply a value from
:func:`generalization_gap` (explicit constants are reconstructed (see docs/theory.md)) for the
finite-sample bound.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .arguments import check_int, check_loss, check_real, resolve_probs
from .collisions import (
    collision_probability,
    no_all_collide_probability,
    no_collision_probability,
)

ProbsLike = Sequence[float] | NDArray[np.floating] | None

__all__ = [
    "C_PRIME_HINGE",
    "C_PRIME_LOGISTIC",
    "AroraCoefficients",
    "arora_coefficients",
    "arora_lemma_4_3_bound",
    "arora_proposition_6_2_bound",
    "arora_theorem_4_5_bound",
    "arora_theorem_b1_bound",
    "c_prime",
    "competitive_gamma",
    "generalization_gap",
    "loss_upper_bound",
]

C_PRIME_HINGE: float = math.sqrt(2.0)
"""c′ for the hinge loss: √2 (reconstructed: read off the proof of Lemma A.1, Arora et al. (ICML 2019))."""
C_PRIME_LOGISTIC: float = math.sqrt(2.0) / math.log(2.0)
"""c′ for the base-2 logistic loss: √2/ln 2 ≈ 2.04028 (reconstructed: proof of Lemma A.1, Arora et al.
(ICML 2019))."""


def c_prime(loss: str = "hinge") -> float:
    """The constant c′ of Lemma 4.4: L⁼_un(f) − 1 ≤ c′·s(f).

    hinge → √2; "logistic" (Arora's base-2 logistic, ℓ(v) = log₂(1 + Σ e^{−v_i})) → √2/ln 2.
    Source: Arora et al. (ICML 2019) Lemma 4.4 / Lemma A.1; the values are reconstructed (see docs/theory.md).
    """
    return C_PRIME_HINGE if check_loss(loss) == "hinge" else C_PRIME_LOGISTIC


@dataclass(frozen=True)
class AroraCoefficients:
    """Coefficients of Theorem B.1 (k negatives): bound = α·L^≠_un + β·s(f) + η·Gen_M."""

    num_negatives: int
    alpha: float
    """α = (1 − τ′)/(1 − τ_k)."""
    beta: float
    """β = c′·k·τ_1/(1 − τ_k) (coefficient of s(f))."""
    eta: float
    """η = 1/(1 − τ_k)."""
    tau: float
    """τ = τ_1 = Σ ρ²."""
    tau_k: float
    tau_prime: float
    c_prime: float


def arora_coefficients(
    num_negatives: int,
    num_classes: int | None = None,
    class_probs: ProbsLike = None,
    loss: str = "hinge",
) -> AroraCoefficients:
    """α, β, η of Arora et al. Theorem B.1 (formal Theorem 6.1).

    E_{𝒯∼𝒟}[(ρ⁺_min/p_max)·L^μ_sup(𝒯, f̂)] ≤ α·L^≠_un(f) + β·s(f) + η·Gen_M with
    α = (1−τ′)/(1−τ_k), β = c′·k·τ_1/(1−τ_k), η = 1/(1−τ_k).
    For k = 1: α = 1, β = c′τ/(1−τ), η = 1/(1−τ) (Theorem 4.5).

    Source: Arora et al. (ICML 2019) Thm B.1; c′ (reconstructed; see docs/theory.md). 1−τ_k and 1−τ′ are
    computed directly.
    Validity: k ≥ 1, C ≥ 2 (τ_k < 1); raises otherwise.
    """
    k = check_int("num_negatives", num_negatives, 1)
    if class_probs is not None:
        class_probs = resolve_probs(num_classes, class_probs)
        num_classes = None
    elif num_classes is None:
        raise ValueError("num_classes or class_probs must be given, got neither")
    one_minus_tk = no_collision_probability(num_classes, k, class_probs)
    if one_minus_tk <= 0.0:
        raise ValueError(
            f"1 - tau_k must be > 0 (needs at least 2 classes with positive mass), "
            f"got {one_minus_tk!r}"
        )
    tau1 = collision_probability(num_classes, 1, class_probs)
    one_minus_tp = no_all_collide_probability(num_classes, k, class_probs)
    cp = c_prime(loss)
    return AroraCoefficients(
        num_negatives=k,
        alpha=one_minus_tp / one_minus_tk,
        beta=cp * k * tau1 / one_minus_tk,
        eta=1.0 / one_minus_tk,
        tau=tau1,
        tau_k=collision_probability(num_classes, k, class_probs),
        tau_prime=1.0 - one_minus_tp,
        c_prime=cp,
    )


def _tau1(num_classes: int | None, class_probs: ProbsLike) -> tuple[float, float]:
    one_minus = no_collision_probability(num_classes, 1, class_probs)
    if one_minus <= 0.0:
        raise ValueError(f"1 - tau must be > 0 (needs >= 2 classes), got {one_minus!r}")
    return collision_probability(num_classes, 1, class_probs), one_minus


def arora_lemma_4_3_bound(
    unsup_loss: float,
    num_classes: int | None = None,
    class_probs: ProbsLike = None,
    gen: float = 0.0,
) -> float:
    """Lemma 4.3 / Theorem 4.1: L^μ_sup(f) ≤ (L_un(f) − τ + Gen_M)/(1 − τ).

    L^μ_sup is the average binary mean-classifier loss (uniform 𝒟_𝒯); L_un uses k = 1.
    Source: Arora et al. (ICML 2019) Lemma 4.3 (Theorem 4.1 adds Gen_M/(1−τ)).
    Validity: C ≥ 2. Warns if L_un < τ (impossible for a true L_un, Jensen: L_un ≥ τ).
    """
    lu = check_real("unsup_loss", unsup_loss, low=0.0)
    g = check_real("gen", gen, low=0.0)
    tau, one_minus = _tau1(num_classes, class_probs)
    if lu < tau:
        warnings.warn(
            f"unsup_loss={lu:g} < tau={tau:g}: impossible for a population L_un (Jensen); "
            "the bound is negative",
            stacklevel=2,
        )
    return (lu - tau + g) / one_minus


def arora_theorem_4_5_bound(
    unsup_loss_neq: float,
    deviation: float,
    num_classes: int | None = None,
    class_probs: ProbsLike = None,
    loss: str = "hinge",
    gen: float = 0.0,
) -> float:
    """Theorem 4.5: L_sup(f̂) ≤ L^μ_sup(f̂) ≤ L^≠_un(f) + β·s(f) + η·Gen_M.

    β = c′·τ/(1−τ), η = 1/(1−τ), k = 1. Source: Arora et al. (ICML 2019) Thm 4.5; c′ (reconstructed; see
    docs/theory.md).
    Validity: C ≥ 2, s(f) ≥ 0.
    """
    lneq = check_real("unsup_loss_neq", unsup_loss_neq, low=0.0)
    s = check_real("deviation", deviation, low=0.0)
    g = check_real("gen", gen, low=0.0)
    co = arora_coefficients(1, num_classes, class_probs, loss)
    return lneq + co.beta * s + co.eta * g


def arora_theorem_b1_bound(
    unsup_loss_neq: float,
    deviation: float,
    num_negatives: int,
    num_classes: int | None = None,
    class_probs: ProbsLike = None,
    loss: str = "hinge",
    gen: float = 0.0,
) -> float:
    """Theorem B.1 right-hand side: α·L^≠_un(f) + β·s(f) + η·Gen_M (see :func:`arora_coefficients`).

    Bounds E_{𝒯∼𝒟}[(ρ⁺_min/p_max)·L^μ_sup(𝒯, f̂)]; for uniform ρ the weight is 1. Divide by
    :func:`~hardneg.theory.collisions.distinct_classes_probability` (Sec. 6.1 remark) to bound
    the Def. 2.2 average over (k+1) distinct classes. Source: Arora et al. (ICML 2019) Thm B.1.
    """
    lneq = check_real("unsup_loss_neq", unsup_loss_neq, low=0.0)
    s = check_real("deviation", deviation, low=0.0)
    g = check_real("gen", gen, low=0.0)
    co = arora_coefficients(num_negatives, num_classes, class_probs, loss)
    return co.alpha * lneq + co.beta * s + co.eta * g


def arora_proposition_6_2_bound(
    block_loss: float, num_classes: int | None = None, class_probs: ProbsLike = None
) -> float:
    """Proposition 6.2: L_sup(f) ≤ (L^block_un(f) − τ)/(1 − τ) ≤ (L_un(f) − τ)/(1 − τ).

    L^block_un is the block loss of eq. (12) with b positives and b negatives, in Def. 2.3's units:
    the hinge or the *base-2* logistic loss (ℓ(0) = 1, what the bound assumes), as
    :func:`hardneg.objectives.block_loss` computes by default; a natural-log value (``base=math.e``)
    is ln 2 times too small and makes the bound invalid.
    Source: Arora et al. (ICML 2019) Prop 6.2. Validity: C ≥ 2.
    """
    lb = check_real("block_loss", block_loss, low=0.0)
    tau, one_minus = _tau1(num_classes, class_probs)
    return (lb - tau) / one_minus


def loss_upper_bound(loss: str, radius: float, num_negatives: int) -> float:
    """B with 0 ≤ ℓ ≤ B when ‖f‖ ≤ R (so |v_i| ≤ 2R²).

    hinge: B = 1 + 2R²; base-2 logistic: B = log₂(1 + k·e^{2R²}).
    Source: Arora et al. (ICML 2019) Lemma 4.2 proof (App. A.3); explicit form (reconstructed; see
    docs/theory.md).
    """
    check_loss(loss)
    r = check_real("radius", radius, low=0.0, low_open=True)
    k = check_int("num_negatives", num_negatives, 1)
    if loss == "hinge":
        return 1.0 + 2.0 * r * r
    return math.log2(1.0 + k * math.exp(2.0 * r * r))


def generalization_gap(
    rademacher: float,
    num_samples: int,
    delta: float,
    radius: float = 1.0,
    num_negatives: int = 1,
    loss: str = "hinge",
    lipschitz: float = 1.0,
) -> float:
    """Explicit Gen_M of Lemma 4.2 (reconstructed; see docs/theory.md):

    Gen_M ≤ 4√3·η_ℓ·R·√k·ℛ_𝒮(ℱ)/M + 3B√(log(4/δ)/(2M)) + 3B√(log(2/δ)/(2M)).

    ℛ_𝒮 is the unnormalised Rademacher average of eq. (16); B from :func:`loss_upper_bound`.
    Source: Arora et al. (ICML 2019) Lemma 4.2 / Lemma A.2 (paper states O(·) only; constants traced from the
    proof; reconstructed, see docs/theory.md). Validity: M ≥ 1, 0 < δ < 1, R > 0.
    """
    rad = check_real("rademacher", rademacher, low=0.0)
    m = check_int("num_samples", num_samples, 1)
    d = check_real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    r = check_real("radius", radius, low=0.0, low_open=True)
    k = check_int("num_negatives", num_negatives, 1)
    lip = check_real("lipschitz", lipschitz, low=0.0)
    b = loss_upper_bound(loss, r, k)
    return (
        4.0 * math.sqrt(3.0) * lip * r * math.sqrt(k) * rad / m
        + 3.0 * b * math.sqrt(math.log(4.0 / d) / (2.0 * m))
        + 3.0 * b * math.sqrt(math.log(2.0 / d) / (2.0 * m))
    )


def competitive_gamma(radius: float, sigma: float, epsilon: float) -> float:
    """γ of Lemma 5.1 with the explicit constant from App. A.2 (reconstructed; see docs/theory.md):

    γ = 1 + 2Rσ√(2 log R + log(3/ε)) for R ≥ 1, and 1 + 2Rσ√(log(3/ε)) for R < 1.
    Source: Arora et al. (ICML 2019) Lemma 5.1 (statement γ = 1 + c′Rσ√log(R/ε)); constant (reconstructed;
    see docs/theory.md).
    Validity: R > 0, σ ≥ 0, 0 < ε < 3.
    """
    r = check_real("radius", radius, low=0.0, low_open=True)
    s = check_real("sigma", sigma, low=0.0)
    e = check_real("epsilon", epsilon, low=0.0, high=3.0, low_open=True, high_open=True)
    inner = math.log(3.0 / e) + (2.0 * math.log(r) if r >= 1.0 else 0.0)
    return 1.0 + 2.0 * r * s * math.sqrt(inner)
