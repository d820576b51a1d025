"""Worked examples (Ash §3, Arora App. C) and the exact evaluator vs brute-force enumeration."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from hardneg.theory import (
    F2_CLOSED_FORM_MAX_R,
    arora_example_nce,
    ash_example_crossings,
    ash_example_embeddings,
    ash_example_preferred_f2,
    ash_f1_nce,
    ash_f2_crude_bounds,
    ash_f2_nce,
    exact_hinge_nce,
)


def brute_hinge(tables: list[np.ndarray], k: int, mode: str = "marginal") -> float:
    """Enumerate anchor, positive and every tuple of K negative points (uniform ρ, uniform points)."""
    c_n = len(tables)
    pts = [(c, p) for c in range(c_n) for p in range(len(tables[c]))]
    total = 0.0
    for c in range(c_n):
        m = len(tables[c])
        for a, b in itertools.product(range(m), repeat=2):
            fa, fb = tables[c][a], tables[c][b]
            w_ab = 1.0 / c_n / m / m
            for negs in itertools.product(pts, repeat=k):
                w = w_ab
                for cn, _pn in negs:
                    if mode == "other-classes":
                        w *= 0.0 if cn == c else 1.0 / (c_n - 1) / len(tables[cn])
                    else:
                        w *= 1.0 / c_n / len(tables[cn])
                if w == 0.0:
                    continue
                vs = [
                    float(fa @ (fb - tables[cn][pn]))
                    for cn, pn in negs
                    if not (mode == "drop-collisions" and cn == c)
                ]
                loss = 0.0 if not vs else max(0.0, 1.0 - min(vs))
                total += w * loss
    return total


@pytest.mark.parametrize("mode", ["marginal", "other-classes", "drop-collisions"])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_exact_evaluator_vs_enumeration(mode: str, k: int) -> None:
    rng = np.random.default_rng(k)
    tables = [rng.normal(size=(2, 3)) for _ in range(3)]
    tables[1] = np.concatenate([tables[1], tables[1][:1]])  # a repeated point (ties)
    got = exact_hinge_nce(tables, k, negatives=mode)
    assert got == pytest.approx(brute_hinge(tables, k, mode), abs=1e-12)


def test_exact_evaluator_class_and_point_probs() -> None:
    # one class with two points having probs (0.25, 0.75); negatives from the same class only
    tab = [np.array([[1.0], [2.0]])]
    pp = [[0.25, 0.75]]
    ref = 0.0
    vals = [1.0, 2.0]
    for a, b, n in itertools.product(range(2), repeat=3):
        w = pp[0][a] * pp[0][b] * pp[0][n]
        ref += w * max(0.0, 1 - vals[a] * (vals[b] - vals[n]))
    assert exact_hinge_nce(tab, 1, point_probs=pp) == pytest.approx(ref, abs=1e-14)
    with pytest.raises(ValueError, match="negatives"):
        exact_hinge_nce(tab, 1, negatives="other-classes")
    with pytest.raises(ValueError, match="num_negatives"):
        exact_hinge_nce(tab, 0)


def test_f1_closed_form_vs_class_enumeration() -> None:
    for n, k in [(4, 1), (4, 3), (6, 2), (8, 4)]:
        ref = 0.0
        for tup in itertools.product(range(n), repeat=k + 1):
            c = tup[0]
            hit = any(x // 2 == c // 2 for x in tup[1:])
            ref += (1.0 if hit else 0.0) / n ** (k + 1)
        assert ash_f1_nce(n, k) == pytest.approx(ref, abs=1e-14)
        assert exact_hinge_nce(ash_example_embeddings(n, which="f1"), k) == pytest.approx(
            ref, abs=1e-12
        )
    assert ash_f1_nce(2, 3) == 1.0
    assert ash_f1_nce(10, 0) == 0.0
    with pytest.raises(ValueError, match="even"):
        ash_f1_nce(5, 2)


def f2_sigma_enumeration(n: int, k: int, r: float) -> float:
    """Enumerate classes and σ patterns: f₂(x) = (1 + σr)e_c, σ = ±1 with prob ½ each."""
    total = 0.0
    sig = (1, -1)
    for cls in itertools.product(range(n), repeat=k + 1):
        for s in itertools.product(sig, repeat=k + 2):
            c, sa, sb, sn = cls[0], s[0], s[1], s[2:]
            fa, fb = 1 + sa * r, 1 + sb * r
            vs = [fa * fb - (fa * (1 + sn[i] * r) if cls[i + 1] == c else 0.0) for i in range(k)]
            total += max(0.0, 1 - min(vs)) / n ** (k + 1) / 2 ** (k + 2)
    return total


@pytest.mark.parametrize(("n", "k", "r"), [(4, 2, 0.3), (4, 3, 0.2), (4, 2, 0.5), (6, 2, 0.8)])
def test_f2_vs_sigma_enumeration(n: int, k: int, r: float) -> None:
    ref = f2_sigma_enumeration(n, k, r)
    assert ash_f2_nce(n, k, r, method="exact") == pytest.approx(ref, abs=1e-12)
    assert ash_f2_nce(n, k, r) == pytest.approx(ref, abs=1e-12)  # auto
    if r < F2_CLOSED_FORM_MAX_R:
        assert ash_f2_nce(n, k, r, method="closed") == pytest.approx(ref, abs=1e-12)


def test_f2_theory_values() -> None:
    assert ash_f2_nce(10, 5, 0.5) == pytest.approx(0.638414, abs=1e-6)
    # the closed form is wrong beyond (√3−1)/2 (docs/theory.md: 0.615502 vs 0.638414)
    with pytest.raises(ValueError, match="r must be <"):
        ash_f2_nce(10, 5, 0.5, method="closed")
    assert F2_CLOSED_FORM_MAX_R == pytest.approx(0.366025, abs=1e-6)
    assert ash_f2_nce(10, 20, 0.3) == pytest.approx(1.02078, abs=1e-5)
    for k in (1, 5, 20, 60):
        lo, hi = ash_f2_crude_bounds(10, k, 0.3)
        assert lo - 1e-12 <= ash_f2_nce(10, k, 0.3) <= hi + 1e-12


def test_f2_monte_carlo() -> None:
    """Monte Carlo, 2·10⁵ samples, N = 10, K = 20, r = 0.3: within 5 standard errors."""
    rng = np.random.default_rng(0)
    n, k, r, m = 10, 20, 0.3, 200_000
    c = rng.integers(0, n, m)
    fa = 1 + r * rng.choice([-1, 1], m)
    fb = 1 + r * rng.choice([-1, 1], m)
    cn = rng.integers(0, n, (m, k))
    fn = 1 + r * rng.choice([-1, 1], (m, k))
    v = (fa * fb)[:, None] - np.where(cn == c[:, None], fa[:, None] * fn, 0.0)
    loss = np.maximum(0, 1 - v.min(axis=1))
    assert abs(loss.mean() - ash_f2_nce(n, k, r)) < 5 * loss.std() / math.sqrt(m)


@pytest.mark.parametrize(
    ("r", "x1", "x2"),
    [(0.1, 0.0540074, 2.75929), (0.2, 0.117355, 2.17755), (0.3, 0.193077, 1.82476)],
)
def test_asymptotic_crossings(r: float, x1: float, x2: float) -> None:
    got = ash_example_crossings(r)
    assert len(got) == 2
    assert got[0] == pytest.approx(x1, rel=1e-5)
    assert got[1] == pytest.approx(x2, rel=1e-5)


def test_finite_crossings_scale_with_n() -> None:
    lo, hi = ash_example_crossings(0.2, 2000)
    assert lo / 2000 == pytest.approx(0.117355, rel=2e-3)
    assert hi / 2000 == pytest.approx(2.17755, rel=2e-3)
    # integer K where f₂ is preferred (exact evaluator) lie between the real crossings
    lo10, hi10 = ash_example_crossings(0.3, 10)
    ks = ash_example_preferred_f2(10, 0.3, 40)
    assert ks == [k for k in range(1, 41) if lo10 < k < hi10]
    with pytest.raises(ValueError, match="r must be"):
        ash_example_crossings(0.5)


def test_arora_appendix_c_values() -> None:
    for k, val in [(1, 0.175), (5, 0.770303), (10, 1.32882), (50, 2.80506)]:
        assert arora_example_nce(10, 2.0, k) == pytest.approx(val, abs=1e-5)
    # f₀ ≡ 0 has loss 1 for any k: selected at k = 10
    assert exact_hinge_nce([np.zeros((2, 10))] * 10, 10) == pytest.approx(1.0)
    assert arora_example_nce(10, 2.0, 10) > 1.0
