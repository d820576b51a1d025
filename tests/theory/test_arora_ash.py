"""Arora et al. and Ash et al. calculators against independent computations / docs/theory.md values."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from hardneg.theory import (
    C_PRIME_HINGE,
    C_PRIME_LOGISTIC,
    arora_coefficients,
    arora_lemma_4_3_bound,
    arora_proposition_6_2_bound,
    arora_theorem_4_5_bound,
    arora_theorem_b1_bound,
    ash_coefficient,
    ash_theorem1_bound,
    ash_theorem3_bound,
    c_prime,
    collision_floor,
    competitive_gamma,
    generalization_gap,
    intraclass_deviation,
    kappa_loose,
    kappa_tau_refined,
    loss_upper_bound,
    optimal_num_negatives,
)


def enumerate_taus(rho: list[float], k: int) -> tuple[float, float, float]:
    tau1 = sum(p * p for p in rho)
    tk = tp = 0.0
    for tup in itertools.product(range(len(rho)), repeat=k + 1):
        w = math.prod(rho[c] for c in tup)
        if any(c == tup[0] for c in tup[1:]):
            tk += w
        if all(c == tup[0] for c in tup[1:]):
            tp += w
    return tau1, tk, tp


@pytest.mark.parametrize("rho", [[0.25] * 4, [0.5, 0.3, 0.2], [0.7, 0.1, 0.1, 0.1]])
@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("loss", ["hinge", "logistic"])
def test_arora_coefficients_enumeration(rho: list[float], k: int, loss: str) -> None:
    tau1, tk, tp = enumerate_taus(rho, k)
    cp = math.sqrt(2) if loss == "hinge" else math.sqrt(2) / math.log(2)
    co = arora_coefficients(k, class_probs=rho, loss=loss)
    assert co.alpha == pytest.approx((1 - tp) / (1 - tk), rel=1e-12)
    assert co.beta == pytest.approx(cp * k * tau1 / (1 - tk), rel=1e-12)
    assert co.eta == pytest.approx(1 / (1 - tk), rel=1e-12)
    assert co.tau_k == pytest.approx(tk, abs=1e-14)
    assert co.tau_prime == pytest.approx(tp, abs=1e-14)
    if k == 1:
        assert co.alpha == pytest.approx(1.0)


def test_arora_uniform_large_c_limits() -> None:
    co = arora_coefficients(1, num_classes=10**6)
    assert co.alpha == pytest.approx(1.0)
    assert co.eta == pytest.approx(1.0, abs=1e-5)
    assert co.beta == pytest.approx(math.sqrt(2) * 1e-6, rel=1e-5)
    co5 = arora_coefficients(5, num_classes=1000)
    assert co5.beta == pytest.approx(math.sqrt(2) * 5 / 1000 / (1 - 1 / 1000) ** 5, rel=1e-12)


def test_c_prime_values() -> None:
    assert c_prime("hinge") == C_PRIME_HINGE == pytest.approx(1.41421356, rel=1e-8)
    assert c_prime("logistic") == C_PRIME_LOGISTIC == pytest.approx(2.04028, rel=1e-5)
    with pytest.raises(ValueError, match="loss"):
        c_prime("square")


def test_arora_bounds_values() -> None:
    # C = 4 uniform: τ = 1/4
    assert arora_lemma_4_3_bound(0.7, 4) == pytest.approx((0.7 - 0.25) / 0.75)
    assert arora_lemma_4_3_bound(0.7, 4, gen=0.1) == pytest.approx((0.7 - 0.25 + 0.1) / 0.75)
    assert arora_proposition_6_2_bound(0.5, 4) == pytest.approx((0.5 - 0.25) / 0.75)
    assert arora_theorem_4_5_bound(0.4, 0.2, 4) == pytest.approx(
        0.4 + math.sqrt(2) * 0.25 / 0.75 * 0.2
    )
    tk = 1 - 0.75**3
    assert arora_theorem_b1_bound(0.4, 0.2, 3, 4, gen=0.05) == pytest.approx(
        (1 - 4 * 0.25**4) / (1 - tk) * 0.4 + math.sqrt(2) * 3 * 0.25 / (1 - tk) * 0.2
        + 0.05 / (1 - tk)
    )
    with pytest.warns(UserWarning, match="tau"):
        assert arora_lemma_4_3_bound(0.1, 4) < 0
    with pytest.raises(ValueError, match="1 - tau"):
        arora_lemma_4_3_bound(0.5, 1)
    with pytest.raises(ValueError, match="num_negatives"):
        arora_coefficients(0, 10)
    with pytest.raises(ValueError, match="1 - tau_k"):
        arora_coefficients(2, class_probs=[1.0, 0.0])


def test_generalization_constants_theory_values() -> None:
    assert generalization_gap(100, 10_000, 0.05, 1.0, 1) == pytest.approx(0.324730, abs=2e-6)
    assert generalization_gap(100, 10_000, 0.05, 1.0, 4) == pytest.approx(0.394012, abs=2e-6)
    assert loss_upper_bound("hinge", 1.0, 1) == 3.0
    assert loss_upper_bound("logistic", 1.0, 1) == pytest.approx(3.06851, abs=1e-5)
    assert loss_upper_bound("logistic", 1.0, 4) == pytest.approx(4.93339, abs=1e-5)
    assert competitive_gamma(2.0, 0.1, 0.01) == pytest.approx(2.06509, abs=1e-5)
    assert competitive_gamma(0.5, 0.1, 0.01) == pytest.approx(1.23883, abs=1e-5)
    with pytest.raises(ValueError, match="delta"):
        generalization_gap(1, 10, 0.0)


def test_intraclass_deviation_hand_computed() -> None:
    a = np.array([[1.0, 0.0], [-1.0, 0.0]])  # cov diag(1,0): √1·E‖f‖=1 → 1
    b = np.array([[0.0, 2.0], [0.0, -2.0], [0.0, 2.0], [0.0, -2.0]])  # √4·2 = 4
    # empirical ρ = (1/3, 2/3); Arora ν ∝ ρ² = (1/5, 4/5); Ash weights ρ
    assert intraclass_deviation([a, b]) == pytest.approx(0.2 * 1 + 0.8 * 4)
    assert intraclass_deviation([a, b], weighting="ash") == pytest.approx(1 / 3 + 8 / 3)
    assert intraclass_deviation({"x": a, "y": b}, class_probs=[0.5, 0.5]) == pytest.approx(2.5)
    feats = np.concatenate([a, b])
    labels = np.array([0, 0, 1, 1, 1, 1])
    assert intraclass_deviation((feats, labels)) == pytest.approx(3.4)
    assert intraclass_deviation(feats, labels) == pytest.approx(3.4)
    torch = pytest.importorskip("torch")
    assert intraclass_deviation(torch.tensor(feats), torch.tensor(labels)) == pytest.approx(3.4)
    # a constant embedding per class has s(f) = 0
    assert intraclass_deviation([np.ones((3, 2)), -np.ones((2, 2))]) == 0.0
    with pytest.raises(ValueError, match="weighting"):
        intraclass_deviation([a, b], weighting="x")


def test_lemma_4_4_monte_carlo() -> None:
    """L⁼_un − 1 ≤ c′·s(f) (hinge), estimated by Monte Carlo on Gaussian class clusters."""
    rng = np.random.default_rng(1)
    classes = [rng.normal(size=3) * 0.5 + rng.normal(size=(400, 3)) * 0.3 for _ in range(3)]
    s = intraclass_deviation(classes)
    tot = 0.0
    for x in classes:  # uniform ρ → ν uniform
        i, j, k = rng.integers(0, 400, size=(3, 20000))
        v = np.sum(x[i] * (x[j] - x[k]), axis=1)
        tot += np.mean(np.maximum(0, 1 - v)) / 3
    assert tot - 1 <= C_PRIME_HINGE * s


# --------------------------------------------------------------------- Ash et al.

def ref_coef(n: int, k: int, ceil: bool = False) -> float:
    h = sum(1.0 / j for j in range(1, n))
    ratio = 2 * (n - 1) * h / k
    factor = max(1, math.ceil(ratio)) if ceil else max(1.0, ratio)
    return 2 * factor / (1 - 1 / n) ** k


def test_ash_coefficient_theory_values() -> None:
    assert ash_coefficient(10, 10) == pytest.approx(29.2082, abs=1e-4)
    assert ash_coefficient(10, 10, ceil=True) == pytest.approx(34.4157, abs=1e-4)


@pytest.mark.parametrize("n", [2, 3, 10, 57, 100])
@pytest.mark.parametrize("k", [1, 4, 10, 99, 1000])
def test_ash_coefficient_formula(n: int, k: int) -> None:
    assert ash_coefficient(n, k) == pytest.approx(ref_coef(n, k), rel=1e-10)
    assert ash_coefficient(n, k, ceil=True) == pytest.approx(ref_coef(n, k, True), rel=1e-10)


def test_ash_coefficient_no_underflow_and_general_prior() -> None:
    # N = 2: 1 − τ_K = 2^-K exactly; coef = 2·max(1, 2/K)·2^K
    assert ash_coefficient(2, 100) == pytest.approx(2.0 * 2.0**100, rel=1e-12)
    for k in (1, 5, 20):
        u = ash_coefficient(6, k)
        assert ash_coefficient(None, k, class_probs=[1 / 6] * 6) == pytest.approx(u, rel=1e-9)
        assert ash_coefficient(
            None, k, class_probs=[1 / 6] * 6, coupon="exact"
        ) == pytest.approx(u, rel=1e-9)
    skew = ash_coefficient(None, 3, class_probs=[0.5, 0.25, 0.25])
    assert skew >= ash_coefficient(3, 3)


def exact_coef(n: int, k: int) -> Fraction:
    a = 2 * (n - 1) * sum((Fraction(1, j) for j in range(1, n)), Fraction(0))
    q = Fraction(n - 1, n)
    return 2 * max(Fraction(1), a / k) / q**k


@pytest.mark.parametrize("n", range(2, 26))
def test_optimal_num_negatives_brute_force(n: int) -> None:
    a = 2 * (n - 1) * sum(1.0 / j for j in range(1, n))
    vals = {k: exact_coef(n, k) for k in range(1, math.ceil(a) + 3)}
    best = min(vals.values())
    expected = tuple(k for k, v in vals.items() if v == best)
    assert expected == (n - 1, n)  # the exact tie of Remark 2
    assert optimal_num_negatives(n) == expected


def test_optimal_num_negatives_large_and_ceil() -> None:
    assert optimal_num_negatives(100) == (99, 100)
    assert optimal_num_negatives(10_000) == (9_999, 10_000)
    for n in (5, 10, 30):
        a = 2 * (n - 1) * sum(1.0 / j for j in range(1, n))
        vals = [ref_coef(n, k, True) for k in range(1, math.ceil(a) + 3)]
        best = min(vals)
        exp = tuple(k + 1 for k, v in enumerate(vals) if v <= best * (1 + 1e-9))
        assert optimal_num_negatives(n, ceil=True) == exp
    with pytest.raises(ValueError, match=r"num_classes must be an integer >= 2, got 1"):
        optimal_num_negatives(1)


def test_collision_floor_enumeration() -> None:
    rho = [0.5, 0.3, 0.2]
    for k in (1, 2, 4):
        hinge = logi = logi2 = 0.0
        for tup in itertools.product(range(3), repeat=k + 1):
            w = math.prod(rho[c] for c in tup)
            m = sum(c == tup[0] for c in tup[1:])
            hinge += w * (1.0 if m > 0 else 0.0)
            logi += w * math.log(1 + m)
            logi2 += w * math.log2(1 + m)
        assert collision_floor(None, k, "hinge", rho) == pytest.approx(hinge, abs=1e-14)
        assert collision_floor(None, k, "logistic", rho) == pytest.approx(logi, abs=1e-14)
        assert collision_floor(None, k, "logistic", rho, log_base=2) == pytest.approx(
            logi2, abs=1e-14
        )
    # uniform C = 3, K = 2: P(m=1) = 4/9, P(m=2) = 1/9
    assert collision_floor(3, 2, "logistic") == pytest.approx(
        4 / 9 * math.log(2) + 1 / 9 * math.log(3)
    )
    assert collision_floor(3, 0, "logistic") == 0.0


def test_ash_theorem_1_and_3() -> None:
    coef = ref_coef(10, 5)
    tau = 1 - 0.9**5
    assert ash_theorem1_bound(0.8, 10, 5) == pytest.approx(coef * (0.8 - tau), rel=1e-10)
    with pytest.warns(UserWarning):
        ash_theorem1_bound(0.0, 10, 5)
    b = ash_theorem3_bound(0.3, 0.1, 10, 5)
    assert b.reconstructed is True and b.kappa_name == "tau-refined"
    assert b.kappa == pytest.approx(math.sqrt(2) * math.sqrt(5 * tau / 10))
    assert b.value == pytest.approx(coef * (0.3 + b.kappa * 0.1), rel=1e-10)
    loose = ash_theorem3_bound(0.3, 0.1, 10, 5, kappa="loose")
    assert loose.kappa == pytest.approx(math.sqrt(2 * 5 / 10))
    custom = ash_theorem3_bound(0.3, 0.1, 10, 5, kappa=lambda n, k: 0.0)
    assert custom.value == pytest.approx(coef * 0.3, rel=1e-10)
    assert ash_theorem3_bound(0.3, 0.1, 10, 5, kappa=1.0).kappa == 1.0
    with pytest.raises(ValueError, match="kappa"):
        ash_theorem3_bound(0.3, 0.1, 10, 5, kappa="nope")
    assert kappa_loose(10, 5) > kappa_tau_refined(10, 5)
    # loose κ-only coefficient coef·κ is minimised near N/2 (docs/theory.md): K = 5 for N = 10
    ks = range(1, 40)
    vals = [ref_coef(10, k) * math.sqrt(k / 10) for k in ks]
    assert list(ks)[int(np.argmin(vals))] == 5


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: ash_coefficient(1, 5), "num_classes"),
        (lambda: ash_coefficient(10, 0), "num_negatives"),
        (lambda: ash_coefficient(None, 2, class_probs=[1.0, 0.0]), "class_probs"),
        (lambda: collision_floor(10, 2, "l2"), "loss"),
        (lambda: ash_theorem1_bound(-1.0, 10, 2), "nce_loss"),
    ],
)
def test_ash_errors(call: object, name: str) -> None:
    with pytest.raises(ValueError, match=name):
        call()  # type: ignore[operator]
