"""Claim verdicts from seed-paired differences: paired t-tests, TOST, Holm, and power fixed in advance.

A claim is tested on the per-seed differences ``d_k = contender(k) − baseline(k)``, ``k = 1..n``,
with ``mean = Σ d_k / n``, ``s`` the sample std (``ddof = 1``), ``se = s / √n`` and ``T_{n−1}``
Student's t with ``n − 1`` degrees of freedom. The tests are SciPy's and statsmodels':

* **Superiority** ("the contender scores higher", paper effect δ): the one-sided paired t-test
  (:func:`scipy.stats.ttest_rel`, ``alternative="greater"``) of ``H0: μ ≤ 0`` (rejected:
  *reproduced*); the two-sided test of ``H0: μ = 0`` with ``mean < 0`` (rejected: *opposite
  direction*); and, when the paper states δ, the one-sided test of ``H0: μ ≥ δ``
  (``alternative="less"`` against δ; rejected: *smaller than the paper's*).
* **Equivalence** ("the contender matches the baseline" within a margin Δ fixed in advance):
  Schuirmann's two one-sided tests of ``H0: |μ| ≥ Δ``
  (:func:`statsmodels.stats.weightstats.ttost_paired`; rejected: *reproduced (equivalent)*) and
  the test of ``H0: |μ| ≤ Δ``, ``p = min(1, 2 min(P(T ≥ (mean − Δ)/se), P(T ≤ (mean + Δ)/se)))``
  (rejected: *not equivalent*).

**One family, fixed in advance.** Every hypothesis of every *planned* claim (all claims of a
budget, whether they ran or not) is in one Holm family
(:func:`statsmodels.stats.multitest.multipletests`, ``method="holm"``): a claim that did not run, or
could not be tested, counts in ``m`` with ``p = 1``. The chance that any firm verdict of a report
is wrong is at most α, and a claim's verdict does not depend on which other claims ran.

**Power fixed in advance.** Each claim's design states a pilot SD σ of its per-seed differences
(where it came from is written with the claim). The *minimum detectable effect* (MDE) is the
effect the one-sided paired t-test detects with 80 % power at the Holm level of the first step,
``α / m`` (:class:`statsmodels.stats.power.TTestPower`: a paired test is a one-sample test on the
differences; noncentrality ``√n δ / σ``). For equivalence it is the smallest margin that TOST meets
with 80 % power when the true difference is 0 (each one-sided test at power 90 %, a Bonferroni
bound). The MDE from the pilot σ decides whether a non-result is *underpowered* or *not shown*, so
the vocabulary is fixed before the data; the MDE from the run's own SD is reported beside it.

No test is possible, and the p-values are NaN, with one seed or a **zero spread** (identical
differences up to rounding: ``s ≤ ZERO_SPREAD_ATOL + ZERO_SPREAD_RTOL |mean|``).

References: S. Holm, "A simple sequentially rejective multiple test procedure", Scandinavian
Journal of Statistics 6 (1979) 65–70; D. J. Schuirmann, "A comparison of the two one-sided tests
procedure and the power approach for assessing the equivalence of average bioavailability",
Journal of Pharmacokinetics and Biopharmaceutics 15 (1987) 657–680; J. Cohen, *Statistical Power
Analysis for the Behavioral Sciences*, 2nd ed. (1988), ch. 2.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

__all__ = [
    "CEILING",
    "EQUIVALENT",
    "NOT_EQUIVALENT",
    "NOT_SHOWN",
    "NOT_SHOWN_UNSIZED",
    "NO_VERDICT_ONE_SEED",
    "NO_VERDICT_ZERO_SPREAD",
    "OPPOSITE",
    "OUTCOMES",
    "POWER",
    "REPRODUCED",
    "REPRODUCED_SMALLER",
    "SMALLER",
    "UNDERPOWERED",
    "ZERO_SPREAD_ATOL",
    "ZERO_SPREAD_RTOL",
    "ClaimResult",
    "ClaimTest",
    "against_pvalue",
    "claim_pvalue",
    "holm",
    "holm_adjusted",
    "hypotheses",
    "judge",
    "mde",
    "seeds_needed",
    "spread_is_zero",
]

# The outcomes of :func:`judge` (``ClaimResult.outcome``): a small vocabulary fixed in advance.
REPRODUCED = "reproduced"
REPRODUCED_SMALLER = "reproduced, smaller than the paper's"
OPPOSITE = "opposite direction"
SMALLER = "smaller than the paper's"
NOT_SHOWN = "not shown"
NOT_SHOWN_UNSIZED = "not shown (the paper states no effect size)"
UNDERPOWERED = "underpowered"
EQUIVALENT = "reproduced (equivalent)"
NOT_EQUIVALENT = "not equivalent"
CEILING = "ceiling"
NO_VERDICT_ZERO_SPREAD = "no verdict (zero spread)"
NO_VERDICT_ONE_SEED = "no verdict (one seed)"
OUTCOMES = (
    REPRODUCED,
    REPRODUCED_SMALLER,
    OPPOSITE,
    SMALLER,
    NOT_SHOWN,
    NOT_SHOWN_UNSIZED,
    UNDERPOWERED,
    EQUIVALENT,
    NOT_EQUIVALENT,
    CEILING,
    NO_VERDICT_ZERO_SPREAD,
    NO_VERDICT_ONE_SEED,
)

POWER = 0.8  # the power at which the minimum detectable effect is computed

# A spread ``s ≤ ATOL + RTOL |mean|`` is rounding, not seed-to-seed variation (t would exceed 10⁹).
ZERO_SPREAD_ATOL = 1e-12
ZERO_SPREAD_RTOL = 1e-9

_KINDS = ("superiority", "equivalence")


def _is_real(x: object) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def _positive_or_none(name: str, x: object) -> float | None:
    if x is None:
        return None
    if not _is_real(x) or not math.isfinite(x) or x <= 0:  # type: ignore[operator, arg-type]
        raise ValueError(f"{name} must be a finite number > 0 (or None), got {x!r}")
    return float(x)  # type: ignore[arg-type]


@dataclass(frozen=True)
class ClaimTest:
    """A claim's test and design, fixed before the runs.

    Attributes:
        kind: ``"superiority"`` (the contender scores higher than the baseline) or
            ``"equivalence"`` (it matches the baseline within ``±margin``).
        margin: the equivalence margin Δ > 0 in the metric's units (0.01 = one point of accuracy).
            Required for equivalence; must be ``None`` for superiority.
        paper_effect: the paper's effect δ in the metric's units, or ``None`` (not stated). For
            superiority it must be > 0; for equivalence it must lie inside ``(−margin, margin)``.
        pilot_sd: the design's SD σ of the per-seed differences (metric units), or ``None`` (no
            pilot: the run's own SD is used and the report says so).

    >>> ClaimTest("equivalence", margin=0.01, paper_effect=0.003).margin
    0.01
    """

    kind: Literal["superiority", "equivalence"]
    margin: float | None = None
    paper_effect: float | None = None
    pilot_sd: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(f"kind must be one of {list(_KINDS)}, got {self.kind!r}")
        object.__setattr__(self, "margin", _positive_or_none("margin", self.margin))
        object.__setattr__(self, "pilot_sd", _positive_or_none("pilot_sd", self.pilot_sd))
        if self.paper_effect is not None:
            if not _is_real(self.paper_effect) or not math.isfinite(self.paper_effect):
                raise ValueError(f"paper_effect must be a finite number (or None), got {self.paper_effect!r}")
            object.__setattr__(self, "paper_effect", float(self.paper_effect))
        if self.kind == "superiority":
            if self.margin is not None:
                raise ValueError(
                    f"margin must be None for a superiority claim (it is the equivalence bound Δ), "
                    f"got {self.margin!r}"
                )
            if self.paper_effect is not None and self.paper_effect <= 0:
                raise ValueError(
                    "paper_effect must be > 0 for a superiority claim (the claim is that the "
                    f"contender scores higher), got {self.paper_effect!r}"
                )
        else:
            if self.margin is None:
                raise ValueError("margin must be a finite number > 0 for an equivalence claim, got None")
            if self.paper_effect is not None and not abs(self.paper_effect) < self.margin:
                raise ValueError(
                    f"paper_effect must lie inside (−margin, margin) = (−{self.margin}, {self.margin}) "
                    f"for an equivalence claim, got {self.paper_effect!r}"
                )


def hypotheses(test: ClaimTest) -> tuple[str, ...]:
    """The hypotheses a claim brings to the family: ``for``, ``against`` (opposite direction / not
    equivalent) and, for a superiority claim with a paper effect, ``smaller``."""
    if test.kind == "superiority" and test.paper_effect is not None:
        return ("for", "against", "smaller")
    return ("for", "against")


@dataclass(frozen=True)
class ClaimResult:
    """One claim judged by :func:`judge` (all numbers in the metric's units).

    Attributes:
        test: the claim's :class:`ClaimTest`.
        mean, std, n, wins: of the per-seed differences (``std`` with ddof = 1, NaN for one seed;
            ``wins``: seeds with a difference > 0).
        p_value, p_holm: the claim's own test (superiority: ``H0: μ ≤ 0``; equivalence: TOST),
            unadjusted and Holm-adjusted in the planned family (NaN: no test possible).
        p_against, p_against_holm: the test against it (opposite direction, two-sided; not
            equivalent).
        p_smaller, p_smaller_holm: ``H0: μ ≥ paper_effect`` (superiority with a paper effect; else NaN).
        interval: the interval matching the claim's unadjusted test at level α (superiority: the
            one-sided ``1 − α`` lower bound; equivalence: the ``1 − 2α`` interval of TOST).
        half_width: ``t_{0.975, n−1} se``, the half-width of the two-sided 95 % interval.
        alpha_design: the level the MDE is computed at (``α / m``; ``α`` for an exploratory run).
        mde_design: the MDE at 80 % power from the pilot SD (NaN without one).
        mde_observed: the same from the run's own SD (NaN with one seed or zero spread).
        seeds_needed: seeds that would give 80 % power for the paper's effect (superiority) or the
            margin (equivalence), from the SD the verdict used; 0 when not computable.
        mde_basis: ``"pilot"`` or ``"observed"``: which SD decided *underpowered*.
        outcome: one of :data:`OUTCOMES`.
        verdict: the outcome with its numbers (metric units; see :func:`describe`).
    """

    test: ClaimTest
    mean: float
    std: float
    n: int
    wins: int
    p_value: float
    p_holm: float
    p_against: float
    p_against_holm: float
    p_smaller: float
    p_smaller_holm: float
    interval: tuple[float, float]
    half_width: float
    alpha_design: float
    mde_design: float
    mde_observed: float
    seeds_needed: int
    mde_basis: str
    outcome: str
    verdict: str

    @property
    def mde(self) -> float:
        """The MDE that decided the verdict (the pilot's, else the run's own)."""
        return self.mde_design if self.mde_basis == "pilot" else self.mde_observed


def spread_is_zero(mean: float, std: float) -> bool:
    """Whether a sample std is zero up to rounding: ``std ≤ ZERO_SPREAD_ATOL + ZERO_SPREAD_RTOL |mean|``.

    >>> spread_is_zero(0.1, 5.6e-17), spread_is_zero(0.1, 1e-4)
    (True, False)
    """
    return bool(std <= ZERO_SPREAD_ATOL + ZERO_SPREAD_RTOL * abs(mean))


def _as_diffs(diffs: Sequence[float], name: str = "diffs") -> np.ndarray:
    try:
        arr = np.asarray(diffs, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a sequence of numbers, got {diffs!r}") from exc
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a flat sequence of per-seed differences, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} must hold at least one per-seed difference, got none")
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        raise ValueError(f"{name} must be finite, got {arr[bad[0]]} at index {int(bad[0])}")
    return arr


def _summary(arr: np.ndarray) -> tuple[float, float, int]:
    n = int(arr.size)
    mean = float(arr.mean())
    std = float(arr.std(ddof=1)) if n > 1 else math.nan
    return mean, std, n


def _testable(mean: float, std: float, n: int) -> bool:
    return n >= 2 and math.isfinite(std) and not spread_is_zero(mean, std)


def _paired(arr: np.ndarray, shift: float, alternative: str) -> float:
    """``scipy.stats.ttest_rel`` of the differences against a constant ``shift`` (paired t)."""
    from scipy.stats import ttest_rel

    return float(ttest_rel(arr, np.full_like(arr, shift), alternative=alternative).pvalue)


def _pvalues(arr: np.ndarray, test: ClaimTest) -> dict[str, float]:
    """The p-value of each of :func:`hypotheses` (NaN for all when no test is possible)."""
    names = hypotheses(test)
    if not _testable(*_summary(arr)):
        return dict.fromkeys(names, math.nan)
    if test.kind == "superiority":
        mean = float(arr.mean())
        out = {"for": _paired(arr, 0.0, "greater"),
               "against": _paired(arr, 0.0, "two-sided") if mean < 0 else 1.0}
        if test.paper_effect is not None:
            out["smaller"] = _paired(arr, test.paper_effect, "less")
        return out
    from statsmodels.stats.weightstats import ttost_paired

    assert test.margin is not None  # validated by ClaimTest
    delta = test.margin
    p_tost = float(ttost_paired(arr, np.zeros_like(arr), -delta, delta)[0])
    outside = min(1.0, 2 * min(_paired(arr, delta, "greater"), _paired(arr, -delta, "less")))
    return {"for": p_tost, "against": outside}


def claim_pvalue(diffs: Sequence[float], test: ClaimTest) -> float:
    """The p-value of the claim's own test on the per-seed differences (unadjusted).

    Superiority: one-sided paired t-test of ``H0: μ ≤ 0``, ``p = P(T_{n−1} ≥ mean / (s/√n))``.
    Equivalence (TOST, margin Δ): ``p = max(P(T ≥ (mean + Δ)/se), P(T ≤ (mean − Δ)/se))``.
    NaN — no test possible, never a verdict — with one seed or a zero spread.

    Raises:
        ValueError: ``diffs`` empty, not flat, or not finite.
        TypeError: ``test`` is not a :class:`ClaimTest`.

    >>> round(claim_pvalue([0.01, 0.03, 0.02], ClaimTest("superiority")), 4)
    0.0371
    >>> claim_pvalue([0.02, 0.02, 0.02], ClaimTest("superiority"))
    nan
    """
    _check_test(test, "test")
    return _pvalues(_as_diffs(diffs), test)["for"]


def against_pvalue(diffs: Sequence[float], test: ClaimTest) -> float:
    """The p-value of the test against the claim (unadjusted).

    Superiority: the two-sided paired t-test of ``H0: μ = 0`` when ``mean < 0`` (else 1): rejected,
    the effect is in the *opposite direction*. Equivalence: ``H0: |μ| ≤ Δ``,
    ``p = min(1, 2 min(P(T ≥ (mean − Δ)/se), P(T ≤ (mean + Δ)/se)))`` (*not equivalent*).
    NaN with one seed or a zero spread, as :func:`claim_pvalue`.
    """
    _check_test(test, "test")
    return _pvalues(_as_diffs(diffs), test)["against"]


def _check_test(test: object, name: str) -> None:
    if not isinstance(test, ClaimTest):
        raise TypeError(f"{name} must be a ClaimTest, got {type(test).__name__}")


def _check_pvalues(pvalues: Sequence[float]) -> np.ndarray:
    try:
        p = np.asarray(pvalues, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"pvalues must be a sequence of numbers, got {pvalues!r}") from exc
    if p.ndim != 1:
        raise ValueError(f"pvalues must be a flat sequence, got shape {p.shape}")
    bad = np.flatnonzero(~np.isnan(p) & ~((p >= 0) & (p <= 1)))
    if bad.size:
        raise ValueError(f"pvalues must lie in [0, 1] (or be NaN), got {p[bad[0]]} at index {int(bad[0])}")
    return p


def _check_alpha(alpha: float, upper: float = 1.0) -> None:
    if not _is_real(alpha) or not 0 < alpha < upper:
        raise ValueError(f"alpha must lie in (0, {upper:g}), got {alpha!r}")


def _holm(p: np.ndarray, alpha: float, m: int | None) -> tuple[np.ndarray, np.ndarray]:
    """statsmodels' Holm on the finite p-values, padded with ``p = 1`` up to a family of ``m``."""
    from statsmodels.stats.multitest import multipletests

    finite = np.flatnonzero(~np.isnan(p))
    size = finite.size if m is None else m
    if size < finite.size:
        raise ValueError(f"m must be at least the number of tested p-values ({finite.size}), got {m}")
    reject = np.zeros(p.size, dtype=bool)
    adjusted = np.full(p.size, math.nan)
    if finite.size:
        padded = np.concatenate([p[finite], np.ones(size - finite.size)])
        rej, adj, _, _ = multipletests(padded, alpha=alpha, method="holm")
        reject[finite], adjusted[finite] = rej[: finite.size], adj[: finite.size]
    return reject, adjusted


def holm(pvalues: Sequence[float], alpha: float = 0.05, m: int | None = None) -> list[bool]:
    """Holm's step-down rejections at family-wise error rate ``alpha``, in the input order.

    With the ``m`` p-values sorted, reject ``H_(1), …, H_(k)`` for the largest ``k`` such that
    ``p_(j) ≤ α / (m − j + 1)`` for every ``j ≤ k``. NaN p-values (no test possible) are never
    rejected; ``m`` is the planned family size (default: the number of non-NaN p-values), the
    missing hypotheses counting as ``p = 1``.

    >>> holm([0.01, 0.04, 0.03, 0.005])
    [True, False, False, True]

    Raises:
        ValueError: ``alpha`` outside (0, 1); a p-value outside [0, 1] and not NaN; ``m`` too small.
    """
    _check_alpha(alpha)
    return [bool(x) for x in _holm(_check_pvalues(pvalues), alpha, m)[0]]


def holm_adjusted(pvalues: Sequence[float], m: int | None = None) -> list[float]:
    """Holm-adjusted p-values, in the input order: ``p̃_(k) = min(1, max_{j ≤ k} (m − j + 1) p_(j))``.

    NaN stays NaN; ``m`` as in :func:`holm`.

    >>> [round(x, 12) for x in holm_adjusted([0.01, 0.04, 0.03, 0.005])]
    [0.03, 0.06, 0.06, 0.02]
    """
    return [float(x) for x in _holm(_check_pvalues(pvalues), 0.05, m)[1]]


def _power(d: float, n: float, alpha: float) -> float:
    """statsmodels' power of the one-sided one-sample t-test: standardized effect ``d``, ``n`` seeds."""
    from statsmodels.stats.power import TTestPower

    p = float(TTestPower().power(effect_size=d, nobs=n, alpha=alpha, alternative="larger"))
    # the noncentral t's tail is NaN far out (noncentrality ≳ 40), where the power is 1
    return 1.0 if math.isnan(p) and d * math.sqrt(n) > 10 else p


def _standardized_mde(n: int, alpha: float, power: float) -> float:
    """The standardized effect ``δ/σ`` a one-sided one-sample t-test detects with ``power``.

    Solved with :func:`scipy.optimize.brentq` on statsmodels' power (its own ``solve_power`` stops
    at an effect of 10 σ, short of what 2 or 3 seeds at a Holm level need)."""
    from scipy.optimize import brentq

    if n < 2:
        return math.nan
    hi = 1.0
    while _power(hi, n, alpha) < power:  # bracket the root: power grows with the effect
        hi *= 2
        if hi > 1e12:
            return math.inf
    return float(brentq(lambda d: _power(d, n, alpha) - power, 1e-9, hi, xtol=1e-12, rtol=1e-12))


def _one_sided_power(kind: str) -> float:
    # TOST meets the margin with power ≥ 1 − 2(1 − q) when each one-sided test has power q
    return POWER if kind == "superiority" else 1 - (1 - POWER) / 2


def mde(sd: float, n: int, alpha: float, kind: str = "superiority") -> float:
    """The minimum detectable effect at 80 % power, in the units of ``sd``.

    Superiority: the mean difference the one-sided paired t-test at level ``alpha`` detects with
    80 % power from ``n`` seeds with SD ``sd``. Equivalence: the smallest margin TOST meets with
    ≥ 80 % power at a true difference of 0 (each one-sided test at 90 %). NaN for ``n < 2`` or no SD.

    >>> round(mde(1.0, 5, 0.05 / 10), 3)
    2.629
    """
    if not (sd > 0 and math.isfinite(sd)):
        return math.nan
    return sd * _standardized_mde(n, alpha, _one_sided_power(kind))


def seeds_needed(effect: float, sd: float, alpha: float, kind: str = "superiority") -> int:
    """The seeds that give 80 % power to detect ``effect`` (or meet the margin ``effect``); 0 if
    not computable (no SD)."""
    if not (sd > 0 and math.isfinite(sd)) or not effect > 0:
        return 0
    d, target = effect / sd, _one_sided_power(kind)
    lo, hi = 1, 2
    while _power(d, hi, alpha) < target:  # bracket, then bisect on whole seeds: power grows with n
        lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if _power(d, mid, alpha) < target else (lo, mid)
    return hi


def _fmt(x: float) -> str:
    return f"{x:.3g}"


def describe(res: ClaimResult, scale: float = 1.0, unit: str = "") -> str:
    """The verdict of ``res`` with its numbers multiplied by ``scale`` and followed by ``unit``.

    >>> describe(judge({"a": [0.05, -0.03, 0.01]}, {"a": ClaimTest("superiority", paper_effect=0.015,
    ...     pilot_sd=0.04)})["a"], 100, "points")
    "underpowered (MDE 16 points > paper's 1.5 points; 66 seeds would detect it)"
    """
    def num(x: float) -> str:
        return f"{scale * x:.3g}{' ' + unit if unit else ''}"

    test = res.test
    if res.outcome == UNDERPOWERED:
        target, name = ((test.paper_effect, "paper's") if test.kind == "superiority"
                        else (test.margin, "margin"))
        assert target is not None
        return (f"underpowered (MDE {num(res.mde)} > {name} {num(target)}; "
                f"{res.seeds_needed} seeds would detect it)")
    if res.outcome == EQUIVALENT:
        assert test.margin is not None
        return f"reproduced (equivalent within ±{num(test.margin)})"
    if res.outcome in (SMALLER, REPRODUCED_SMALLER):
        assert test.paper_effect is not None
        return f"{res.outcome} {num(test.paper_effect)}"
    if res.outcome == NOT_SHOWN_UNSIZED:
        return f"not shown (the paper states no effect size; MDE {num(res.mde)})"
    if res.outcome == NOT_SHOWN:
        return f"not shown (MDE {num(res.mde)})"
    return res.outcome


def _outcome(res: dict[str, Any], test: ClaimTest, rejected: Mapping[str, bool], room: float | None) -> str:
    mean, std, n, mde_used = res["mean"], res["std"], res["n"], res["mde"]
    if n < 2:
        return NO_VERDICT_ONE_SEED
    if not _testable(mean, std, n):
        return NO_VERDICT_ZERO_SPREAD
    needed = test.paper_effect if test.kind == "superiority" else test.margin
    if room is not None and needed is not None and room < needed:
        return CEILING
    if test.kind == "equivalence":
        if rejected["for"]:
            return EQUIVALENT
        if rejected["against"]:
            return NOT_EQUIVALENT
        assert test.margin is not None
        return UNDERPOWERED if not mde_used <= test.margin else NOT_SHOWN
    smaller = rejected.get("smaller", False)
    if rejected["for"]:
        return REPRODUCED_SMALLER if smaller else REPRODUCED
    if rejected["against"]:
        return OPPOSITE
    if smaller:
        return SMALLER
    if test.paper_effect is None:
        return NOT_SHOWN_UNSIZED
    return UNDERPOWERED if not mde_used <= test.paper_effect else NOT_SHOWN


def judge(
    diffs_by_claim: Mapping[str, Sequence[float]],
    tests: Mapping[str, ClaimTest],
    alpha: float = 0.05,
    *,
    planned: Sequence[str] | None = None,
    headroom: Mapping[str, float] | None = None,
    exploratory: bool = False,
) -> dict[str, ClaimResult]:
    """Judge the claims of a report at family-wise error rate ``alpha``.

    Every hypothesis (:func:`hypotheses`) of every planned claim is in **one** Holm family of size
    ``m`` fixed in advance; the verdicts, in order:

    * :data:`NO_VERDICT_ONE_SEED`, :data:`NO_VERDICT_ZERO_SPREAD`: no test possible.
    * :data:`CEILING`: the baseline leaves less room below the metric's ceiling (``headroom``) than
      the paper's effect (superiority) or the margin (equivalence): the setting cannot tell.
    * superiority: :data:`REPRODUCED` (``H0: μ ≤ 0`` rejected; :data:`REPRODUCED_SMALLER` when
      ``H0: μ ≥ δ`` is rejected too), :data:`OPPOSITE` (two-sided, ``mean < 0``), :data:`SMALLER`
      (``H0: μ ≥ δ``); else :data:`UNDERPOWERED` when the MDE exceeds δ, :data:`NOT_SHOWN` when it
      does not, :data:`NOT_SHOWN_UNSIZED` when the paper states no δ.
    * equivalence: :data:`EQUIVALENT` (TOST), :data:`NOT_EQUIVALENT`; else :data:`UNDERPOWERED`
      when the MDE (smallest margin met with 80 % power) exceeds Δ, else :data:`NOT_SHOWN`.

    Args:
        diffs_by_claim: claim id → per-seed differences ``contender − baseline`` (same seeds).
        tests: claim id → its :class:`ClaimTest`, for every claim run and planned.
        alpha: the family-wise error rate, in (0, 0.5).
        planned: the family fixed in advance (default: the claims of ``diffs_by_claim``); claims
            not run count in ``m`` with ``p = 1``.
        headroom: claim id → the room the baseline leaves below the metric's ceiling (1 − accuracy).
        exploratory: no family: each hypothesis at ``alpha`` unadjusted (``p_holm`` = ``p_value``),
            the MDE at ``alpha`` — for ``--only`` runs, never a family verdict.

    >>> r = judge({"a": [0.020, 0.025, 0.018, 0.022, 0.030], "b": [0.05, -0.03, 0.01]},
    ...           {"a": ClaimTest("superiority"), "b": ClaimTest("superiority", paper_effect=0.015)})
    >>> r["a"].verdict, r["b"].outcome
    ('reproduced', 'underpowered')
    """
    _check_alpha(alpha, 0.5)
    family = list(diffs_by_claim) if planned is None else list(planned)
    missing = [c for c in {*diffs_by_claim, *family} if c not in tests]
    if missing:
        raise ValueError(
            f"tests must hold a ClaimTest for every claim run or planned, missing {sorted(missing)}"
        )
    outside = [c for c in diffs_by_claim if c not in family]
    if outside:
        raise ValueError(f"planned must hold every claim of diffs_by_claim, missing {outside}")
    for claim in family:
        _check_test(tests[claim], f"tests[{claim!r}]")

    arrays = {c: _as_diffs(d, f"diffs_by_claim[{c!r}]") for c, d in diffs_by_claim.items()}
    ps = {c: _pvalues(a, tests[c]) for c, a in arrays.items()}
    keys = [(c, h) for c in arrays for h in hypotheses(tests[c])]
    flat = np.array([ps[c][h] for c, h in keys], dtype=np.float64)
    m = sum(len(hypotheses(tests[c])) for c in family)
    if exploratory:
        reject, adjusted = ~np.isnan(flat) & (flat <= alpha), flat
        alpha_design = alpha
    else:
        reject, adjusted = _holm(flat, alpha, m)
        alpha_design = alpha / m
    rej = {k: bool(r) for k, r in zip(keys, reject)}
    adj = {k: float(a) for k, a in zip(keys, adjusted)}
    return {c: _result(arrays[c], tests[c], ps[c], {h: rej[c, h] for h in ps[c]},
                       {h: adj[c, h] for h in ps[c]}, alpha, alpha_design,
                       None if headroom is None else headroom.get(c)) for c in arrays}


def _result(
    arr: np.ndarray, test: ClaimTest, p: Mapping[str, float], rejected: Mapping[str, bool],
    adjusted: Mapping[str, float], alpha: float, alpha_design: float, room: float | None,
) -> ClaimResult:
    from scipy.stats import t as student_t

    mean, std, n = _summary(arr)
    testable = _testable(mean, std, n)
    if testable:
        se = std / math.sqrt(n)
        half = float(student_t.ppf(0.975, n - 1)) * se
        q = float(student_t.ppf(1 - alpha, n - 1)) * se
        interval = (mean - q, math.inf) if test.kind == "superiority" else (mean - q, mean + q)
    else:
        half, interval = math.nan, (math.nan, math.nan)
    pilot = test.pilot_sd if test.pilot_sd is not None else math.nan
    design = mde(pilot, n, alpha_design, test.kind)
    observed = mde(std, n, alpha_design, test.kind) if testable else math.nan
    basis = "pilot" if test.pilot_sd is not None else "observed"
    sd_used = pilot if basis == "pilot" else std
    target = test.paper_effect if test.kind == "superiority" else test.margin
    needed = seeds_needed(target, sd_used, alpha_design, test.kind) if target is not None else 0
    fields: dict[str, Any] = {"mean": mean, "std": std, "n": n,
                              "mde": design if basis == "pilot" else observed}
    outcome = _outcome(fields, test, rejected, room)
    res = ClaimResult(
        test=test, mean=mean, std=std, n=n, wins=int((arr > 0).sum()),
        p_value=p["for"], p_holm=adjusted["for"], p_against=p["against"],
        p_against_holm=adjusted["against"], p_smaller=p.get("smaller", math.nan),
        p_smaller_holm=adjusted.get("smaller", math.nan), interval=interval, half_width=half,
        alpha_design=alpha_design, mde_design=design, mde_observed=observed, seeds_needed=needed,
        mde_basis=basis, outcome=outcome, verdict="",
    )
    object.__setattr__(res, "verdict", describe(res))
    return res
