"""Worked examples: the exact hinge-NCE evaluator, Ash et al. §3 (f₁, f₂), Arora et al. App. C.

Sources: Ash et al. (AISTATS 2022) §3 / App. C (every formula reconstructed, see docs/theory.md)
and Arora et al. (ICML 2019) App. C (their construction; the numeric values are computed by us). Loss:
hinge ℓ(v) = max(0, 1 − min_i v_i).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import brentq
from scipy.stats import binom

from .arguments import check_int, check_probs, check_real, resolve_probs
from .deviation import to_numpy

__all__ = [
    "F2_CLOSED_FORM_MAX_R",
    "arora_example_embeddings",
    "arora_example_nce",
    "ash_example_crossings",
    "ash_example_embeddings",
    "ash_example_preferred_f2",
    "ash_f1_nce",
    "ash_f2_crude_bounds",
    "ash_f2_nce",
    "exact_hinge_nce",
]

F2_CLOSED_FORM_MAX_R: float = (math.sqrt(3.0) - 1.0) / 2.0
"""(√3 − 1)/2 ≈ 0.366025: the f₂ closed form is exact only for 0 ≤ r < this value."""


def _expected_hinge_of_min(
    values: NDArray[np.float64], probs: NDArray[np.float64], ks: NDArray[np.int64]
) -> NDArray[np.float64]:
    """E[max(0, 1 − min of k i.i.d. draws)] for each row of ``values`` and each k in ``ks``.

    values, probs: (R, M) supports with row-wise probabilities (summing to 1 over the row).
    Uses P(min ≥ u_(j)) = S_j^k, S_j = Σ_{i ≥ j} p_(i) (ascending order); ties telescope.
    Returns (R, len(ks)); k = 0 gives 0 (ℓ(empty) = 0).
    """
    order = np.argsort(values, axis=1, kind="stable")
    vs = np.take_along_axis(values, order, axis=1)
    ps = np.take_along_axis(probs, order, axis=1)
    tail = np.cumsum(ps[:, ::-1], axis=1)[:, ::-1]
    nxt = np.clip(tail - ps, 0.0, None)
    tail = np.clip(tail, 0.0, 1.0)
    h = np.maximum(0.0, 1.0 - vs)
    out = np.zeros((values.shape[0], ks.size))
    for i, k in enumerate(ks.tolist()):
        if k == 0:
            continue
        out[:, i] = np.sum(h * (tail**k - nxt**k), axis=1)
    return out


def exact_hinge_nce(
    embeddings: Sequence[Any],
    num_negatives: int,
    point_probs: Sequence[Sequence[float]] | None = None,
    class_probs: Sequence[float] | NDArray[np.floating] | None = None,
    negatives: str = "marginal",
) -> float:
    """Exact hinge NCE loss for discrete class-conditional embeddings.

    L = E[max(0, 1 − min_i f(x)ᵀ(f(x⁺) − f(x⁻_i)))], (x, x⁺) ∼ 𝒟_c², c ∼ ρ, with
    ``embeddings[c]`` the support (m_c, d) of f(x) under 𝒟_c (probabilities ``point_probs[c]``,
    default uniform) and ρ = ``class_probs`` (default uniform). Given (x, x⁺) the v_i are i.i.d.
    with finite support, and the loss depends only on min_i v_i:
    P(min = u_j) = S(u_j)^K − S(u_{j+1})^K with S the survival function (docs/theory.md).

    ``negatives``:
    * ``"marginal"`` — x⁻_i ∼ 𝒟_neg (standard L_NCE / Arora's L_un);
    * ``"other-classes"`` — x⁻_i from the marginal conditioned on c⁻_i ≠ c (collision-free);
    * ``"drop-collisions"`` — Ash's L^≠_NCE: colliding coordinates deleted, ℓ(empty) = 0.

    Source: docs/theory.md (reconstructed; see docs/theory.md); reproduces Ash et al. (AISTATS 2022) §3 and
    Arora et al. (ICML 2019) App. C.
    Validity: K ≥ 1, ≥ 1 class; "other-classes"/"drop-collisions" need ≥ 2 classes.
    """
    k = check_int("num_negatives", num_negatives, 1)
    if negatives not in ("marginal", "other-classes", "drop-collisions"):
        raise ValueError(
            "negatives must be 'marginal', 'other-classes' or 'drop-collisions', "
            f"got {negatives!r}"
        )
    tables = [to_numpy(e) for e in embeddings]
    if len(tables) == 0:
        raise ValueError("embeddings must contain at least 1 class, got 0")
    dim = tables[0].shape[-1] if tables[0].ndim == 2 else -1
    for i, t in enumerate(tables):
        if t.ndim != 2 or t.shape[0] < 1 or t.shape[1] != dim:
            raise ValueError(f"embeddings[{i}] must have shape (m >= 1, {dim}), got {t.shape}")
    rho = resolve_probs(None if class_probs is not None else len(tables), class_probs)
    if rho.size != len(tables):
        raise ValueError(f"class_probs must have {len(tables)} entries, got {rho.size}")
    if point_probs is None:
        pis = [np.full(t.shape[0], 1.0 / t.shape[0]) for t in tables]
    else:
        if len(point_probs) != len(tables):
            raise ValueError(
                f"point_probs must have {len(tables)} entries, got {len(point_probs)}"
            )
        pis = [check_probs(f"point_probs[{i}]", pp) for i, pp in enumerate(point_probs)]
        for i, (pp, t) in enumerate(zip(pis, tables)):
            if pp.size != t.shape[0]:
                raise ValueError(f"point_probs[{i}] must have {t.shape[0]} entries, got {pp.size}")
    if negatives != "marginal" and np.count_nonzero(rho) < 2:
        raise ValueError(
            f"negatives={negatives!r} needs >= 2 classes with positive mass, got {rho.tolist()!r}"
        )
    allpts = np.concatenate(tables, axis=0)
    owner = np.concatenate([np.full(t.shape[0], c) for c, t in enumerate(tables)])
    wmarg = np.concatenate([rho[c] * pis[c] for c in range(len(tables))])
    total = 0.0
    for c, (tab, pi) in enumerate(zip(tables, pis)):
        if rho[c] == 0.0:
            continue
        anchor_pos = tab @ tab.T  # (m, m): f(a)ᵀf(b)
        anchor_all = tab @ allpts.T  # (m, M): f(a)ᵀf(x⁻)
        v = (anchor_pos[:, :, None] - anchor_all[:, None, :]).reshape(-1, allpts.shape[0])
        wpair = (pi[:, None] * pi[None, :]).reshape(-1)
        if negatives == "marginal":
            probs = np.broadcast_to(wmarg, v.shape).copy()
            vals = _expected_hinge_of_min(v, probs, np.array([k]))[:, 0]
        else:
            w = np.where(owner == c, 0.0, wmarg)
            w = w / w.sum()
            probs = np.broadcast_to(w, v.shape).copy()
            if negatives == "other-classes":
                vals = _expected_hinge_of_min(v, probs, np.array([k]))[:, 0]
            else:
                ms = np.arange(k + 1)
                per_m = _expected_hinge_of_min(v, probs, ms)
                pm = binom.pmf(ms, k, 1.0 - rho[c])
                vals = per_m @ pm
        total += rho[c] * float(wpair @ vals)
    return float(total)


def ash_example_embeddings(num_classes: int, r: float = 0.0, which: str = "f1") -> list[NDArray[np.float64]]:
    """Supports of f₁ or f₂ in Ash et al. §3 (N even, each 𝒟_c uniform on 2 points).

    f₁: both points of classes 2i−1, 2i map to e_i (dimension N/2).
    f₂ (reconstructed; see docs/theory.md): f₂(x_c¹) = (1+r)e_c, f₂(x_c²) = (1−r)e_c (dimension N).
    Source: Ash et al. (AISTATS 2022) §3 / App. C (reconstructed; see docs/theory.md). Validity: N even ≥
    2, r ≥ 0 (f₂).
    """
    n = _check_even(num_classes)
    if which == "f1":
        eye = np.eye(n // 2)
        return [np.stack([eye[c // 2], eye[c // 2]]) for c in range(n)]
    if which == "f2":
        rr = check_real("r", r, low=0.0)
        eye = np.eye(n)
        return [np.stack([(1 + rr) * eye[c], (1 - rr) * eye[c]]) for c in range(n)]
    raise ValueError(f"which must be 'f1' or 'f2', got {which!r}")


def _check_even(num_classes: int) -> int:
    n = check_int("num_classes", num_classes, 2)
    if n % 2:
        raise ValueError(f"num_classes must be an even integer >= 2, got {n}")
    return n


def ash_f1_nce(num_classes: int, num_negatives: int) -> float:
    """L_NCE(f₁) = 1 − (1 − 2/N)^K (hinge): the loss is 1 iff the anchor's class or its pair
    appears among the negatives. L^μ_sup(f₁) = 1.

    Source: Ash et al. (AISTATS 2022) §3 (reconstructed, high confidence; see docs/theory.md)
    (docs/theory.md). Validity: N even ≥ 2, K ≥ 0.
    """
    n = _check_even(num_classes)
    k = check_int("num_negatives", num_negatives, 0)
    if n == 2:
        return 0.0 if k == 0 else 1.0
    return float(-math.expm1(k * math.log1p(-2.0 / n)))


def ash_f2_nce(num_classes: int, num_negatives: int, r: float, method: str = "auto") -> float:
    """L_NCE(f₂) (hinge). Closed form (reconstructed; see docs/theory.md), exact for 0 ≤ r < (√3−1)/2:

    L = q(r/2 + r²/4) + (1−q)(1+r) − 2r[(1 − 1/(2N))^K − q],  q = (1 − 1/N)^K.

    ``method="closed"`` raises for r ≥ (√3−1)/2; ``"exact"`` uses :func:`exact_hinge_nce`;
    ``"auto"`` uses the closed form when valid, else the exact evaluator.
    L^μ_sup(f₂) = r/2. Source: Ash et al. (AISTATS 2022) §3 / App. C (reconstructed, medium-high
    confidence; see docs/theory.md) (docs/theory.md).
    Validity: N even ≥ 2, K ≥ 1, r ≥ 0.
    """
    n = _check_even(num_classes)
    k = check_int("num_negatives", num_negatives, 1)
    rr = check_real("r", r, low=0.0)
    if method not in ("auto", "closed", "exact"):
        raise ValueError(f"method must be 'auto', 'closed' or 'exact', got {method!r}")
    valid = rr < F2_CLOSED_FORM_MAX_R
    if method == "closed" and not valid:
        raise ValueError(
            f"r must be < (sqrt(3)-1)/2 = {F2_CLOSED_FORM_MAX_R:.6f} for the closed form, got {rr}"
        )
    if method == "exact" or not valid:
        return exact_hinge_nce(ash_example_embeddings(n, rr, "f2"), k)
    return _f2_closed(n, float(k), rr)


def _f2_closed(n: float, k: float, r: float) -> float:
    q = math.exp(k * math.log1p(-1.0 / n))
    h = math.exp(k * math.log1p(-0.5 / n))
    return q * (r / 2 + r * r / 4) + (1 - q) * (1 + r) - 2 * r * (h - q)


def ash_f2_crude_bounds(num_classes: int, num_negatives: int, r: float) -> tuple[float, float]:
    """App. C crude bounds: (1−τ_K)a + τ_K ≤ L_NCE(f₂) ≤ (1−τ_K)a + τ_K(1+r), a = r/2 + r²/4.

    Source: Ash et al. (AISTATS 2022) App. C (reconstructed; see docs/theory.md). Validity: N even ≥ 2, K ≥
    0, 0 ≤ r ≤ 1.
    """
    n = _check_even(num_classes)
    k = check_int("num_negatives", num_negatives, 0)
    rr = check_real("r", r, low=0.0, high=1.0)
    q = math.exp(k * math.log1p(-1.0 / n))
    a = rr / 2 + rr * rr / 4
    return q * a + (1 - q), q * a + (1 - q) * (1 + rr)


def _sign_change_roots(fun: Any, grid: NDArray[np.float64]) -> list[float]:
    vals = np.array([fun(x) for x in grid])
    roots = []
    for i in range(len(grid) - 1):
        if vals[i] == 0.0:
            roots.append(float(grid[i]))
        elif vals[i] * vals[i + 1] < 0:
            roots.append(float(brentq(fun, grid[i], grid[i + 1], xtol=1e-13, rtol=1e-13)))
    return roots


def ash_example_crossings(r: float, num_classes: int | None = None) -> tuple[float, ...]:
    """Real crossing points of L_NCE(f₁) = L_NCE(f₂) (f₂ preferred strictly between them).

    * ``num_classes=None``: asymptotic N → ∞ with x = K/N, solving
      e^{−x}(r/2 + r²/4) + (1−e^{−x})(1+r) − 2r(e^{−x/2} − e^{−x}) = 1 − e^{−2x};
      e.g. r = 0.1 → (0.0540074, 2.75929).
    * finite N: crossings in real-valued K of the closed forms (1−2/N)^K etc.

    Uses the closed form, so requires 0 < r < (√3−1)/2 (use :func:`ash_example_preferred_f2`
    for larger r). Source: Ash et al. (AISTATS 2022) §3 (reconstructed; see docs/theory.md).
    """
    rr = check_real("r", r, low=0.0, high=F2_CLOSED_FORM_MAX_R, low_open=True, high_open=True)
    if num_classes is None:
        def diff(x: float) -> float:
            e1, eh, e2 = math.exp(-x), math.exp(-x / 2), math.exp(-2 * x)
            l2 = e1 * (rr / 2 + rr * rr / 4) + (1 - e1) * (1 + rr) - 2 * rr * (eh - e1)
            return l2 - (1 - e2)

        grid = np.concatenate([np.geomspace(1e-6, 1.0, 400), np.linspace(1.0, 60.0, 2000)[1:]])
        return tuple(_sign_change_roots(diff, grid))
    n = _check_even(num_classes)
    if n == 2:
        return ()

    def diff_n(k: float) -> float:
        return _f2_closed(n, k, rr) - (-math.expm1(k * math.log1p(-2.0 / n)))

    grid = np.concatenate([np.geomspace(1e-6, 1.0, 200), np.linspace(1.0, 60.0 * n, 4000)[1:]])
    return tuple(_sign_change_roots(diff_n, grid))


def ash_example_preferred_f2(num_classes: int, r: float, max_negatives: int) -> list[int]:
    """All integers K in [1, max_negatives] with L_NCE(f₂) < L_NCE(f₁) (exact evaluator; any r ≥ 0).

    Source: Ash et al. (AISTATS 2022) §3 (reconstructed; see docs/theory.md). Validity: N even ≥ 2,
    max_negatives ≥ 1.
    """
    n = _check_even(num_classes)
    kmax = check_int("max_negatives", max_negatives, 1)
    rr = check_real("r", r, low=0.0)
    return [k for k in range(1, kmax + 1) if ash_f2_nce(n, k, rr, method="auto") < ash_f1_nce(n, k)]


def arora_example_embeddings(num_classes: int, r: float) -> list[NDArray[np.float64]]:
    """Arora et al. App. C: class i uniform on 2 points, f₁(x_i¹) = (3/2)r e_i, f₁(x_i²) = (1/2)r e_i.

    (f₀ ≡ 0 has L_un = 1 for every k.) Source: Arora et al. (ICML 2019) App. C. Validity: n ≥ 2, r ≥ 0.
    """
    n = check_int("num_classes", num_classes, 2)
    rr = check_real("r", r, low=0.0)
    eye = np.eye(n)
    return [np.stack([1.5 * rr * eye[i], 0.5 * rr * eye[i]]) for i in range(n)]


def arora_example_nce(num_classes: int, r: float, num_negatives: int) -> float:
    """Exact hinge L_un(f₁) for Arora App. C (e.g. n = 10, r = 2: k=1 → 0.175, k=10 → 1.32882).

    Source: Arora et al. (ICML 2019) App. C ; values (computed by us). Validity: n ≥ 2, k ≥ 1.
    """
    return exact_hinge_nce(arora_example_embeddings(num_classes, r), num_negatives)
