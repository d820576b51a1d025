"""Harmonic numbers and the coupon collector (Ash et al., AISTATS 2022, Lemma 2; reconstructed, see
docs/theory.md)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Literal, overload

import numpy as np
from numpy.typing import NDArray
from scipy.special import comb

from .arguments import check_int, check_probs

__all__ = [
    "coupon_cover_probability",
    "coupon_expected_draws",
    "coupon_expected_draws_bound",
    "harmonic_number",
]

_EXACT_SUBSET_LIMIT = 20
_ASYMPTOTIC_FROM = 10**6  # harmonic_number: the expansion from here on (O(1))
_EULER_GAMMA = 0.57721566490153286061  # the Euler–Mascheroni constant γ


@overload
def harmonic_number(n: int, exact: Literal[False] = ...) -> float: ...
@overload
def harmonic_number(n: int, exact: Literal[True]) -> Fraction: ...
def harmonic_number(n: int, exact: bool = False) -> float | Fraction:
    """H_n = Σ_{j=1}^n 1/j, with H_0 = 0.

    ``exact=True`` returns a :class:`fractions.Fraction`; otherwise a float: the ``math.fsum`` of
    the terms (correctly rounded) for n < 10⁶, and from n = 10⁶ on, in O(1), the Euler–Maclaurin
    expansion ln n + γ + 1/(2n) − 1/(12n²) + 1/(120n⁴), whose omitted terms (below 1/(252n⁶)
    < 10⁻³⁷) are far under the float's rounding — never the crude ln n + 0.577.
    Source: Ash et al. (AISTATS 2022) §3.1 (harmonic numbers in Theorem 1) (reconstructed; see
    docs/theory.md); the expansion: Knuth, The Art of Computer Programming, Vol. 1, §1.2.7, eq. (3).
    Validity: integer n ≥ 0.
    """
    n = check_int("n", n, 0)
    if exact:
        return sum((Fraction(1, j) for j in range(1, n + 1)), Fraction(0))
    if n >= _ASYMPTOTIC_FROM:
        inv = 1.0 / n
        return math.log(n) + _EULER_GAMMA + inv / 2 - inv * inv / 12 + inv**4 / 120
    return math.fsum(1.0 / j for j in range(1, n + 1))


def coupon_expected_draws(
    num_coupons: int | None = None, probs: Sequence[float] | NDArray[np.floating] | None = None
) -> float:
    """E[T], T = number of i.i.d. draws until every coupon has been seen.

    * uniform over n coupons: E[T] = n·H_n (exact);
    * general probabilities p: E[T] = Σ_{∅≠S⊆[n]} (−1)^{|S|+1} / p(S) (inclusion–exclusion,
      exact; exponential cost, so n ≤ 20 is enforced — use :func:`coupon_expected_draws_bound`).

    Source: Ash et al. (AISTATS 2022) Lemma 2 (reconstructed; see docs/theory.md). Validity: n ≥ 1, p > 0
    entrywise.
    """
    if probs is None:
        if num_coupons is None:
            raise ValueError("num_coupons or probs must be given, got neither")
        n = check_int("num_coupons", num_coupons, 1)
        return n * harmonic_number(n)
    p = check_probs("probs", probs)
    if np.any(p <= 0):
        raise ValueError(f"probs must be strictly positive, got {p.tolist()!r}")
    if p.size > _EXACT_SUBSET_LIMIT:
        raise ValueError(
            f"len(probs) must be <= {_EXACT_SUBSET_LIMIT} for the exact general formula, "
            f"got {p.size}"
        )
    total = 0.0
    for size in range(1, p.size + 1):
        sign = 1.0 if size % 2 == 1 else -1.0
        for subset in itertools.combinations(p.tolist(), size):
            total += sign / math.fsum(subset)
    return total


def coupon_expected_draws_bound(probs: Sequence[float] | NDArray[np.floating]) -> float:
    """Upper bound E[T] ≤ H_n / min_i p_i (equality n·H_n when p is uniform).

    Source: Ash et al. (AISTATS 2022) Lemma 2 (reconstructed; see docs/theory.md). Validity: p a
    probability vector with positive entries.
    """
    p = check_probs("probs", probs)
    if np.any(p <= 0):
        raise ValueError(f"probs must be strictly positive, got {p.tolist()!r}")
    return harmonic_number(p.size) / float(p.min())


def coupon_cover_probability(
    num_draws: int,
    num_coupons: int | None = None,
    probs: Sequence[float] | NDArray[np.floating] | None = None,
) -> float:
    """P(T ≤ k): all coupons seen within k draws.

    * uniform: Σ_{j=0}^n (−1)^j C(n,j)(1 − j/n)^k;
    * general: Σ_{S⊆[n]} (−1)^{|S|}(1 − p(S))^k (n ≤ 20).

    For large n the alternating sum loses precision; the uniform case then uses the
    exact DP over the number of distinct coupons seen (O(n·k)) whenever n > 30.
    Source: Ash et al. (AISTATS 2022) Lemma 2 (reconstructed; see docs/theory.md). Validity: k ≥ 0, n ≥ 1.
    """
    k = check_int("num_draws", num_draws, 0)
    if probs is None:
        if num_coupons is None:
            raise ValueError("num_coupons or probs must be given, got neither")
        n = check_int("num_coupons", num_coupons, 1)
        if k < n:
            return 0.0
        if n <= 30:
            j = np.arange(n + 1)
            terms = (-1.0) ** j * comb(n, j) * (1.0 - j / n) ** k
            return float(min(1.0, max(0.0, math.fsum(terms.tolist()))))
        dist = np.zeros(n + 1)
        dist[0] = 1.0
        for _ in range(k):  # Markov chain on the number of distinct coupons seen
            stay = dist * (np.arange(n + 1) / n)
            move = dist * (1.0 - np.arange(n + 1) / n)
            dist = stay
            dist[1:] += move[:-1]
        return float(dist[n])
    p = check_probs("probs", probs)
    if p.size > _EXACT_SUBSET_LIMIT:
        raise ValueError(
            f"len(probs) must be <= {_EXACT_SUBSET_LIMIT} for the exact general formula, "
            f"got {p.size}"
        )
    total = 0.0
    for size in range(0, p.size + 1):
        sign = 1.0 if size % 2 == 0 else -1.0
        for subset in itertools.combinations(p.tolist(), size):
            total += sign * max(0.0, 1.0 - math.fsum(subset)) ** k
    return float(min(1.0, max(0.0, total)))
