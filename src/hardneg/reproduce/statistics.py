"""Claim verdicts from seed-paired differences: paired t-tests, TOST, non-inferiority, Holm, power.

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
* **Non-inferiority** ("the contender is not worse than the baseline by more than Δ", a one-sided
  parity claim such as "match, and sometimes slightly exceed"): the one-sided paired t-test of
  ``H0: μ ≤ −Δ``, ``p = P(T ≥ (mean + Δ)/se)`` (rejected: *reproduced (not worse by Δ)*), and of
  ``H0: μ ≥ −Δ``, ``p = P(T ≤ (mean + Δ)/se)`` (rejected: *worse than the margin*).

**One family, fixed in advance.** Every hypothesis of every *planned* claim (all claims of a
budget, whether they ran or not) is in one Holm family
(:func:`statsmodels.stats.multitest.multipletests`, ``method="holm"``): a claim that did not run, or
could not be tested, counts in ``m`` with ``p = 1``. The chance that any firm verdict of a report
is wrong is at most α, and a claim's verdict does not depend on which other claims ran.

**Intervals at the verdict's level.** With the family's p-values sorted, Holm tests the j-th at
``α_(j) = α / (m − j + 1)`` and stops at the first it cannot reject; with ``r`` rejections, every
hypothesis not rejected is shown at the level where the procedure stopped, ``α / (m − r)``
(:func:`holm_levels`). Each hypothesis gets the confidence bound of its own test at its level
(``ClaimResult.bounds``), so that the bound excludes the null value exactly when Holm rejected it;
the claim's headline interval (``ci_low``, ``ci_high``, ``ci_level``) is the two-sided
``1 − 2 α_for`` interval ``mean ∓ t_{1−α_for, n−1} se`` of its own hypothesis: its lower end is the
one-sided bound of a superiority or non-inferiority test (excludes 0, resp. −Δ, exactly when the
claim is reproduced), the whole interval TOST's (inside ``(−Δ, Δ)`` exactly when equivalence is).

**Power.** The power of each test at a true mean difference μ with SD σ and ``n`` seeds, at level
α (:func:`claim_power`): superiority, the noncentral t's tail with noncentrality ``√n μ / σ``
(:class:`statsmodels.stats.power.TTestPower`); non-inferiority the same at ``√n (μ + Δ) / σ``;
TOST its exact power (Phillips 1990), ``E_s[max(0, Φ(√n (Δ − μ)/σ − t_{1−α} s/σ) −
Φ(√n (−Δ − μ)/σ + t_{1−α} s/σ))]`` over ``s² ~ σ² χ²_{n−1} / (n − 1)``. Seeds are planned at the
Holm level of the first step, ``α / m`` (:func:`plan_seeds`), from a design SD: the pilot's SD, or its
upper 80 % confidence limit (:func:`design_sd`, Browne 1995). A claim states its *question*:
``"size"`` (is the effect as large as the paper's? powered at δ, or at the paper's own difference
for a parity claim) or ``"effect"`` (is there an effect at this scale? powered at the pilot's mean).

**The verdict's word from the run's own SD.** A non-result is *not shown* only when the run had at
least 80 % power at the paper's effect (equivalence and non-inferiority: at the paper's own
difference, within the margin) with **its own** SD at ``α / m``; else *underpowered*, with the
seeds that would reach 80 %. The minimum detectable effect (MDE) is reported twice: from the
design's pilot SD (``mde_design``) and from the run's SD (``mde_observed``, the one that decides).

No test is possible, and the p-values are NaN, with one seed or a **zero spread** (identical
differences up to rounding: ``s ≤ ZERO_SPREAD_ATOL + ZERO_SPREAD_RTOL |mean|``).

References: S. Holm, "A simple sequentially rejective multiple test procedure", Scandinavian
Journal of Statistics 6 (1979) 65–70; D. J. Schuirmann, "A comparison of the two one-sided tests
procedure and the power approach for assessing the equivalence of average bioavailability",
Journal of Pharmacokinetics and Biopharmaceutics 15 (1987) 657–680; K. F. Phillips, "Power of the
two one-sided tests procedure in bioequivalence", Journal of Pharmacokinetics and
Biopharmaceutics 18 (1990) 137–144; S.-C. Chow, J. Shao and H. Wang, *Sample Size Calculations in
Clinical Research*, 2nd ed., Chapman & Hall/CRC (2008), §3.1 (one-sample tests for
non-inferiority and equivalence); M. W. Browne, "On the use of a pilot sample for sample size
determination", Statistics in Medicine 14 (1995) 1933–1940; J. Cohen, *Statistical Power
Analysis for the Behavioral Sciences*, 2nd ed. (1988), ch. 2.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

__all__ = [
    "CEILING",
    "EQUIVALENT",
    "KINDS",
    "NONINFERIOR",
    "NOT_EQUIVALENT",
    "NOT_SHOWN",
    "NOT_SHOWN_UNSIZED",
    "NO_VERDICT_ONE_SEED",
    "NO_VERDICT_ZERO_SPREAD",
    "OPPOSITE",
    "OUTCOMES",
    "POWER",
    "QUESTIONS",
    "REPRODUCED",
    "REPRODUCED_SMALLER",
    "SMALLER",
    "UNDERPOWERED",
    "WORSE",
    "ZERO_SPREAD_ATOL",
    "ZERO_SPREAD_RTOL",
    "ClaimResult",
    "ClaimTest",
    "against_pvalue",
    "claim_power",
    "claim_pvalue",
    "design_sd",
    "holm",
    "holm_adjusted",
    "holm_levels",
    "hypotheses",
    "judge",
    "mde",
    "plan_seeds",
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
NONINFERIOR = "reproduced (not worse by the margin)"
WORSE = "worse than the margin"
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
    NONINFERIOR,
    WORSE,
    CEILING,
    NO_VERDICT_ZERO_SPREAD,
    NO_VERDICT_ONE_SEED,
)

POWER = 0.8  # the power at which the minimum detectable effect is computed

# A spread ``s ≤ ATOL + RTOL |mean|`` is rounding, not seed-to-seed variation (t would exceed 10⁹).
ZERO_SPREAD_ATOL = 1e-12
ZERO_SPREAD_RTOL = 1e-9

KINDS = ("superiority", "equivalence", "noninferiority")
QUESTIONS = ("size", "effect")
_KINDS = KINDS  # the former private name


def _is_real(x: object) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def _positive_or_none(name: str, x: object) -> float | None:
    if x is None:
        return None
    if not _is_real(x) or not math.isfinite(x) or x <= 0:  # type: ignore[operator, arg-type]
        raise ValueError(f"{name} must be a finite number > 0 (or None), got {x!r}")
    return float(x)  # type: ignore[arg-type]


def _a(kind: str) -> str:
    """``an equivalence``, ``a noninferiority``: the kind with its article."""
    return f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}"


def _finite_or_none(name: str, x: object) -> float | None:
    if x is None:
        return None
    if not _is_real(x) or not math.isfinite(x):  # type: ignore[arg-type]
        raise ValueError(f"{name} must be a finite number (or None), got {x!r}")
    return float(x)  # type: ignore[arg-type]


@dataclass(frozen=True)
class ClaimTest:
    """A claim's test and design, fixed before the runs.

    Attributes:
        kind: ``"superiority"`` (the contender scores higher than the baseline),
            ``"equivalence"`` (it matches the baseline within ``±margin``) or ``"noninferiority"``
            (it is not worse than the baseline by ``margin`` or more: a one-sided parity claim).
        margin: the margin Δ > 0 in the metric's units (0.01 = one point of accuracy). Required for
            equivalence and non-inferiority; must be ``None`` for superiority.
        paper_effect: the paper's effect δ in the metric's units, or ``None`` (not stated). For
            superiority it must be > 0. For equivalence and non-inferiority it is the former
            spelling of ``paper_difference`` (the two must agree when both are given).
        pilot_sd: the design's SD σ of the per-seed differences (metric units), or ``None`` (no
            pilot): the design MDE and design power are computed from it.
        paper_difference: equivalence and non-inferiority only: the paper's own difference
            contender − baseline (e.g. −0.003), at which the seeds that meet the margin and the
            power that decides *underpowered* are computed; ``None``: 0. It must lie inside
            ``(−margin, margin)`` (equivalence) or above ``−margin`` (non-inferiority).
        question: ``"size"`` (is the effect as large as the paper's? powered at δ or at the paper's
            difference) or ``"effect"`` (is there an effect at this scale? powered at
            ``pilot_mean``). It chooses the effect the design power is computed at
            (:attr:`powered_at`); the verdict's *underpowered* is always judged at the paper's.
        pilot_mean: the pilot's mean difference (metric units), required for ``question="effect"``:
            > 0 for superiority, > −margin for non-inferiority, inside ``(−margin, margin)`` for
            equivalence.

    >>> ClaimTest("equivalence", margin=0.01, paper_effect=0.003).paper_difference
    0.003
    >>> ClaimTest("noninferiority", margin=0.0045, paper_difference=-0.003).powered_at
    -0.003
    >>> ClaimTest("superiority", paper_effect=0.03, question="effect", pilot_mean=0.011).powered_at
    0.011
    """

    kind: Literal["superiority", "equivalence", "noninferiority"]
    margin: float | None = None
    paper_effect: float | None = None
    pilot_sd: float | None = None
    paper_difference: float | None = None
    question: Literal["size", "effect"] = "size"
    pilot_mean: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {list(KINDS)}, got {self.kind!r}")
        if self.question not in QUESTIONS:
            raise ValueError(f"question must be one of {list(QUESTIONS)}, got {self.question!r}")
        object.__setattr__(self, "margin", _positive_or_none("margin", self.margin))
        object.__setattr__(self, "pilot_sd", _positive_or_none("pilot_sd", self.pilot_sd))
        for name in ("paper_effect", "paper_difference", "pilot_mean"):
            object.__setattr__(self, name, _finite_or_none(name, getattr(self, name)))
        if self.question == "effect" and self.pilot_mean is None:
            raise ValueError("pilot_mean must be a finite number for question='effect' (the pilot's mean "
                             "difference the claim is powered at), got None")
        if self.kind == "superiority":
            self._check_superiority()
        else:
            self._check_parity()

    def _check_superiority(self) -> None:
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
        if self.paper_difference is not None:
            raise ValueError("paper_difference must be None for a superiority claim (its size is "
                             f"paper_effect), got {self.paper_difference!r}")
        if self.pilot_mean is not None and self.question == "effect" and self.pilot_mean <= 0:
            raise ValueError("pilot_mean must be > 0 for a superiority claim powered at the pilot's effect "
                             f"(question='effect'), got {self.pilot_mean!r}")

    def _check_parity(self) -> None:
        if self.margin is None:
            raise ValueError(f"margin must be a finite number > 0 for {_a(self.kind)} claim, got None")
        if self.paper_effect is not None and self.paper_difference is not None \
                and self.paper_effect != self.paper_difference:
            raise ValueError(
                f"paper_effect must equal paper_difference for {_a(self.kind)} claim (it is its former "
                f"name), got {self.paper_effect!r} and {self.paper_difference!r}"
            )
        if self.paper_difference is None:
            object.__setattr__(self, "paper_difference", self.paper_effect)
        delta = self.margin
        for name in ("paper_effect", "paper_difference", "pilot_mean"):
            x = getattr(self, name)
            if x is None:
                continue
            if self.kind == "equivalence" and not abs(x) < delta:
                raise ValueError(f"{name} must lie inside (−margin, margin) = (−{delta}, {delta}) for an "
                                 f"equivalence claim, got {x!r}")
            if self.kind == "noninferiority" and not x > -delta:
                raise ValueError(f"{name} must be > −margin = −{delta} for a noninferiority claim, got {x!r}")

    @property
    def powered_at(self) -> float | None:
        """The true difference the claim's design is powered at: the pilot's mean for
        ``question="effect"``; else δ (superiority; ``None`` when the paper states none) or the
        paper's difference (equivalence, non-inferiority; 0 when not stated)."""
        if self.question == "effect":
            return self.pilot_mean
        return self.paper_at

    @property
    def paper_at(self) -> float | None:
        """The paper's true difference the verdict's power is judged at: δ for superiority
        (``None``: not stated), the paper's difference (0 when not stated) otherwise."""
        if self.kind == "superiority":
            return self.paper_effect
        return 0.0 if self.paper_difference is None else self.paper_difference


def hypotheses(test: ClaimTest) -> tuple[str, ...]:
    """The hypotheses a claim brings to the family: ``for``, ``against`` (opposite direction / not
    equivalent / worse than the margin) and, for a superiority claim with a paper effect,
    ``smaller``."""
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
        mde_basis: which SD decided *underpowered*: always ``"observed"`` (the run's own) since
            0.4; the pilot's decided before.
        outcome: one of :data:`OUTCOMES`.
        verdict: the outcome with its numbers (metric units; see :func:`describe`).
        levels: hypothesis → the level Holm tested it at (:func:`holm_levels`; ``alpha`` for an
            exploratory run).
        bounds: hypothesis → the confidence interval of its test at its level, ``(low, high)``
            (one-sided tests: one end infinite): the hypothesis is rejected exactly when the
            interval lies in its rejection region (``for``: above 0, above −Δ, inside ``(−Δ, Δ)``;
            ``against``: below 0, outside ``[−Δ, Δ]``, below −Δ; ``smaller``: below δ).
        ci_low, ci_high, ci_level: the headline interval, ``mean ∓ t_{1−α_for, n−1} se``, at the
            confidence ``ci_level = 1 − 2 α_for`` (``α_for``: the level of the claim's own test).
        power_design: the power of the claim's own test, with the pilot SD, at
            :attr:`ClaimTest.powered_at` with this run's seeds at ``alpha_design`` (NaN: no pilot
            or nothing to power for).
        power_observed: the same with the run's own SD at :attr:`ClaimTest.paper_at` (the power
            that decides *underpowered*: < 80 %).
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
    levels: Mapping[str, float] = field(default_factory=dict)
    bounds: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    ci_low: float = math.nan
    ci_high: float = math.nan
    ci_level: float = math.nan
    power_design: float = math.nan
    power_observed: float = math.nan

    @property
    def mde(self) -> float:
        """The MDE that decided the verdict (the run's own since 0.4)."""
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
    if test.kind == "noninferiority":
        return {"for": _paired(arr, -delta, "greater"), "against": _paired(arr, -delta, "less")}
    p_tost = float(ttost_paired(arr, np.zeros_like(arr), -delta, delta)[0])
    outside = min(1.0, 2 * min(_paired(arr, delta, "greater"), _paired(arr, -delta, "less")))
    return {"for": p_tost, "against": outside}


def claim_pvalue(diffs: Sequence[float], test: ClaimTest) -> float:
    """The p-value of the claim's own test on the per-seed differences (unadjusted).

    Superiority: one-sided paired t-test of ``H0: μ ≤ 0``, ``p = P(T_{n−1} ≥ mean / (s/√n))``.
    Equivalence (TOST, margin Δ): ``p = max(P(T ≥ (mean + Δ)/se), P(T ≤ (mean − Δ)/se))``.
    Non-inferiority (margin Δ): ``H0: μ ≤ −Δ``, ``p = P(T ≥ (mean + Δ)/se)``.
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
    Non-inferiority: ``H0: μ ≥ −Δ``, ``p = P(T ≤ (mean + Δ)/se)`` (*worse than the margin*).
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


def holm_levels(pvalues: Sequence[float], alpha: float = 0.05, m: int | None = None) -> list[float]:
    """The level Holm's step-down tests each hypothesis at, in the input order.

    With the ``m`` p-values sorted (ties in input order) and ``r`` of them rejected, the j-th
    smallest is tested at ``α / (m − j + 1)`` if rejected (``j ≤ r``), and every other hypothesis
    at ``α / (m − r)``, the level at which the procedure stopped (a NaN p-value too). A
    hypothesis is rejected exactly when its p-value is at most its level, so a confidence bound at
    that level excludes the null value exactly when Holm rejects it. ``m`` as in :func:`holm`.

    Args:
        pvalues: the family's p-values (NaN: no test possible).
        alpha: the family-wise error rate, in (0, 1).
        m: the planned family size (default: the number of non-NaN p-values).

    Returns:
        One level per p-value, in (0, alpha].

    References:
        S. Holm, Scandinavian Journal of Statistics 6 (1979) 65–70.

    Example:
        >>> [round(x, 6) for x in holm_levels([0.01, 0.04, 0.03, 0.005])]
        [0.016667, 0.025, 0.025, 0.0125]
    """
    _check_alpha(alpha)
    return [float(x) for x in _holm_levels(_check_pvalues(pvalues), alpha, m)]


def _holm_levels(p: np.ndarray, alpha: float, m: int | None, reject: np.ndarray | None = None) -> np.ndarray:
    """:func:`holm_levels`; ``reject``: Holm's rejections of ``p`` when already known."""
    finite = np.flatnonzero(~np.isnan(p))
    size = finite.size if m is None else m
    if size < finite.size:
        raise ValueError(f"m must be at least the number of tested p-values ({finite.size}), got {m}")
    if reject is None:
        reject = _holm(p, alpha, m)[0]
    r = int(reject.sum())
    levels = np.full(p.size, alpha / (size - r) if size > r else alpha / max(size, 1))
    order = finite[np.argsort(p[finite], kind="stable")]
    for j, i in enumerate(order[:r]):  # the r rejected are the r smallest
        levels[i] = alpha / (size - j)
    return levels


def _power(d: float, n: float, alpha: float) -> float:
    """statsmodels' power of the one-sided one-sample t-test: standardized effect ``d``, ``n`` seeds."""
    from statsmodels.stats.power import TTestPower

    p = float(TTestPower().power(effect_size=d, nobs=n, alpha=alpha, alternative="larger"))
    # the noncentral t's tail is NaN far out (noncentrality ≳ 40), where the power is 1 (or 0)
    if math.isnan(p) and abs(d) * math.sqrt(n) > 10:
        return 1.0 if d > 0 else 0.0
    return p


_GAUSS_LEGENDRE = np.polynomial.legendre.leggauss(96)  # nodes and weights on [−1, 1]


def _tost_power(mu: float, sd: float, n: int, margin: float, alpha: float) -> float:
    """Exact power of TOST at true difference ``mu`` (Phillips 1990), by quadrature over the SD.

    Both one-sided tests reject when ``−Δ + c s/√n < mean < Δ − c s/√n`` with ``c = t_{1−α, n−1}``;
    given ``s``, ``mean ~ N(μ, σ²/n)``, and ``w = √(n − 1) s/σ`` is chi-distributed with ``n − 1``
    degrees of freedom: the power is ``∫ max(0, Φ(√n (Δ − μ)/σ − c w/√(n−1)) −
    Φ(√n (−Δ − μ)/σ + c w/√(n−1))) f_χ(w) dw`` over ``w < √(n−1) √n Δ/(c σ)``, by 96-point
    Gauss–Legendre on ``√(n−1) ± 10`` (the chi density beyond is below 1e-21; error < 1e-8 against
    adaptive quadrature for 2 ≤ n ≤ 10⁶).
    """
    from scipy.stats import chi, norm
    from scipy.stats import t as student_t

    df, rn = n - 1, math.sqrt(n)
    crit = float(student_t.ppf(1 - alpha, df))
    w_max = math.sqrt(df) * margin * rn / (crit * sd)  # beyond: the interval is wider than (−Δ, Δ)
    a, b = max(0.0, math.sqrt(df) - 10.0), min(w_max, math.sqrt(df) + 10.0)
    if b <= a:
        return 0.0
    x, weights = _GAUSS_LEGENDRE
    w = (b - a) / 2 * x + (a + b) / 2
    half = crit * sd * (w / math.sqrt(df)) / rn
    lo, hi = (-margin + half - mu) * rn / sd, (margin - half - mu) * rn / sd
    inside = np.where(hi < 0, norm.cdf(hi) - norm.cdf(lo), norm.sf(lo) - norm.sf(hi))  # the accurate tail
    value = (b - a) / 2 * float(np.sum(weights * np.clip(inside, 0.0, None) * chi.pdf(w, df)))
    return min(1.0, max(0.0, value))


def _claim_power(effect: float, sd: float, n: int, alpha: float, kind: str, margin: float | None) -> float:
    """:func:`claim_power` without the checks: NaN for no SD, ``n < 2`` or no effect."""
    if not (sd > 0 and math.isfinite(sd)) or n < 2 or effect is None or not math.isfinite(effect):
        return math.nan
    if kind == "superiority":
        return _power(effect / sd, n, alpha)
    assert margin is not None
    if kind == "noninferiority":
        return _power((effect + margin) / sd, n, alpha)
    return _tost_power(effect, sd, n, margin, alpha)


def _check_kind_margin(kind: object, margin: object) -> float | None:
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {list(KINDS)}, got {kind!r}")
    if kind == "superiority":
        if margin is not None:
            raise ValueError(f"margin must be None for a superiority test, got {margin!r}")
        return None
    got = _positive_or_none("margin", margin)
    if got is None:
        raise ValueError(f"margin must be a finite number > 0 for {_a(str(kind))} test, got None")
    return got


def _check_sd(name: str, sd: object) -> float:
    if not _is_real(sd) or not math.isfinite(sd) or sd <= 0:  # type: ignore[arg-type, operator]
        raise ValueError(f"{name} must be a finite number > 0, got {sd!r}")
    return float(sd)  # type: ignore[arg-type]


def claim_power(
    effect: float, sd: float, n: int, alpha: float, kind: str = "superiority", *, margin: float | None = None,
) -> float:
    """The power of a claim's own test from ``n`` seeds when the true mean difference is ``effect``.

    * superiority (``H0: μ ≤ 0``, one-sided paired t at level α):
      ``P(T'_{n−1}(√n μ/σ) > t_{1−α, n−1})`` (statsmodels' :class:`~statsmodels.stats.power.TTestPower`);
    * non-inferiority (``H0: μ ≤ −Δ``): the same at noncentrality ``√n (μ + Δ)/σ``;
    * equivalence (TOST, ``H0: |μ| ≥ Δ``): the exact power at ``μ`` (Phillips 1990), by quadrature
      over ``s² ~ σ² χ²_{n−1}/(n − 1)`` of ``Φ(√n (Δ − μ)/σ − c s/σ) − Φ(√n (−Δ − μ)/σ + c s/σ)``
      where positive, ``c = t_{1−α, n−1}`` (Gauss–Legendre quadrature; Chow, Shao & Wang 2008,
      §3.1.3, give its noncentral-t approximation ``1 − P(T'(√n (Δ − μ)/σ) ≤ c) −
      P(T'(√n (Δ + μ)/σ) ≤ c)``, a lower bound).

    Args:
        effect: the true mean difference μ (metric units).
        sd: the SD σ of the per-seed differences, > 0.
        n: seeds, ≥ 2.
        alpha: the test's level, in (0, 1) (a Holm family's first step: ``α / m``).
        kind: ``"superiority"``, ``"equivalence"`` or ``"noninferiority"``.
        margin: Δ > 0 for equivalence and non-inferiority; ``None`` for superiority.

    Shapes:
        Scalars in, a scalar in [0, 1] out.

    References:
        J. Cohen (1988), ch. 2; K. F. Phillips, J. Pharmacokinet. Biopharm. 18 (1990) 137–144;
        S.-C. Chow, J. Shao, H. Wang, *Sample Size Calculations in Clinical Research* (2008), §3.1.

    Example:
        >>> round(claim_power(0.5, 1.0, 20, 0.05), 4)
        0.6951
        >>> round(claim_power(-0.003, 0.0104, 708, 0.05 / 35, "equivalence", margin=0.0045), 3)
        0.8
    """
    got = _check_kind_margin(kind, margin)
    sd = _check_sd("sd", sd)
    if not _is_real(effect) or not math.isfinite(effect):
        raise ValueError(f"effect must be a finite number, got {effect!r}")
    if not _is_real(n) or int(n) != n or n < 2:
        raise ValueError(f"n must be an integer >= 2, got {n!r}")
    _check_alpha(alpha)
    return _claim_power(float(effect), sd, int(n), float(alpha), str(kind), got)


def _reachable(effect: float, kind: str, margin: float | None) -> bool:
    """Whether the power at ``effect`` grows to 1 with the seeds (the effect is in the alternative)."""
    if kind == "superiority":
        return effect > 0
    assert margin is not None
    return effect > -margin if kind == "noninferiority" else abs(effect) < margin


def _plan(effect: float, sd: float, alpha: float, target: float, kind: str, margin: float | None,
          max_seeds: int) -> int:
    lo, hi = 1, 2
    while _claim_power(effect, sd, hi, alpha, kind, margin) < target:  # bracket; power grows with n
        if hi >= max_seeds:
            return 0
        lo, hi = hi, min(2 * hi, max_seeds)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if _claim_power(effect, sd, mid, alpha, kind, margin) < target else (lo, mid)
    return hi


def plan_seeds(
    effect: float, sd: float, alpha: float, power: float = POWER, kind: str = "superiority", *,
    margin: float | None = None, max_seeds: int = 1_000_000,
) -> int:
    """The fewest seeds (≥ 2) whose :func:`claim_power` at the true difference ``effect`` reaches ``power``.

    Pass the Holm level of the first step, ``alpha = α / m`` (``m`` the family's hypotheses): the
    claim then has that power whatever the other claims' p-values. For the SD, use the pilot's upper
    confidence limit (:func:`design_sd`) rather than the pilot's SD itself (Browne 1995).

    Args:
        effect: the true mean difference the claim is powered at: δ (superiority, > 0), the paper's
            difference (equivalence: inside ``(−Δ, Δ)``; non-inferiority: above ``−Δ``), or the
            pilot's mean (``question="effect"``).
        sd: the design SD of the per-seed differences, > 0.
        alpha: the level, in (0, 1).
        power: the power wanted, in (0, 1).
        kind, margin: as in :func:`claim_power`.
        max_seeds: the largest answer searched; 0 is returned beyond it.

    References:
        S.-C. Chow, J. Shao, H. Wang, *Sample Size Calculations in Clinical Research* (2008), §3.1;
        M. W. Browne, Statistics in Medicine 14 (1995) 1933–1940.

    Example:
        >>> plan_seeds(0.5, 1.0, 0.05)
        27
        >>> plan_seeds(0.0, 1.0, 0.05, kind="equivalence", margin=0.5)
        36
        >>> plan_seeds(-0.003, 0.0104, 0.05 / 35, kind="equivalence", margin=0.0045)  # not 68 (at μ = 0)
        708
    """
    got = _check_kind_margin(kind, margin)
    sd = _check_sd("sd", sd)
    if not _is_real(effect) or not math.isfinite(effect):
        raise ValueError(f"effect must be a finite number, got {effect!r}")
    _check_alpha(alpha)
    if not _is_real(power) or not 0 < power < 1:
        raise ValueError(f"power must lie in (0, 1), got {power!r}")
    if not _is_real(max_seeds) or int(max_seeds) != max_seeds or max_seeds < 2:
        raise ValueError(f"max_seeds must be an integer >= 2, got {max_seeds!r}")
    if not _reachable(float(effect), str(kind), got):
        region = {"superiority": "> 0", "noninferiority": f"> −margin = −{got}",
                  "equivalence": f"inside (−margin, margin) = (−{got}, {got})"}[str(kind)]
        raise ValueError(f"effect must be {region} for {kind} (else no number of seeds reaches the "
                         f"power), got {effect!r}")
    return _plan(float(effect), sd, float(alpha), float(power), str(kind), got, int(max_seeds))


def design_sd(pilot_sd: float, n_pilot: int, confidence: float = 0.8) -> float:
    """The upper ``confidence`` limit of an SD estimated from a pilot of ``n_pilot`` seeds.

    ``σ_design = s √((n − 1) / χ²_{1−confidence, n−1})``, ``χ²_{q, ν}`` the q-quantile of the
    chi-square with ν degrees of freedom (``(n − 1) s²/σ² ~ χ²_{n−1}`` for normal differences).
    Planning seeds with it instead of ``s`` gives the planned power with probability ``confidence``
    over the pilot's own noise (Browne 1995 recommends the 80 % limit).

    Args:
        pilot_sd: the pilot's sample SD (ddof = 1), > 0.
        n_pilot: the pilot's seeds, ≥ 2.
        confidence: the one-sided confidence, in (0, 1).

    References:
        M. W. Browne, "On the use of a pilot sample for sample size determination", Statistics in
        Medicine 14 (1995) 1933–1940.

    Example:
        >>> round(design_sd(1.0, 5), 4)  # 4 degrees of freedom: ×1.56
        1.5576
    """
    from scipy.stats import chi2

    sd = _check_sd("pilot_sd", pilot_sd)
    if not _is_real(n_pilot) or int(n_pilot) != n_pilot or n_pilot < 2:
        raise ValueError(f"n_pilot must be an integer >= 2, got {n_pilot!r}")
    if not _is_real(confidence) or not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    df = int(n_pilot) - 1
    return sd * math.sqrt(df / float(chi2.ppf(1 - confidence, df)))


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


def mde(sd: float, n: int, alpha: float, kind: str = "superiority", *, difference: float = 0.0) -> float:
    """The minimum detectable effect at 80 % power, in the units of ``sd``.

    Superiority: the mean difference the one-sided paired t-test at level ``alpha`` detects with
    80 % power from ``n`` seeds with SD ``sd``. Non-inferiority: the smallest margin Δ the test of
    ``H0: μ ≤ −Δ`` meets with 80 % power when the true difference is ``difference``
    (``Δ = σ d₈₀ − difference``). Equivalence: the smallest margin Δ > |difference| TOST meets with
    80 % power at that true difference (its exact power, :func:`claim_power`). NaN for ``n < 2`` or
    no SD.

    >>> round(mde(1.0, 5, 0.05 / 10), 3)
    2.629
    """
    from scipy.optimize import brentq

    if not (sd > 0 and math.isfinite(sd)) or n < 2:
        return math.nan
    d80 = _standardized_mde(n, alpha, POWER)
    if kind == "superiority":
        return sd * d80
    if kind == "noninferiority":
        return sd * d80 - difference
    mu = abs(difference)
    lo, hi = mu, mu + sd
    while _tost_power(mu, sd, n, hi, alpha) < POWER:
        lo, hi = hi, mu + 2 * (hi - mu)
        if hi - mu > 1e12 * sd:
            return math.inf
    return float(brentq(lambda m: _tost_power(mu, sd, n, m, alpha) - POWER, lo, hi, xtol=1e-12 * sd,
                        rtol=1e-10))


def seeds_needed(
    effect: float, sd: float, alpha: float, kind: str = "superiority", *, difference: float = 0.0
) -> int:
    """The seeds that give 80 % power to detect ``effect`` (superiority) or to meet the margin
    ``effect`` when the true difference is ``difference`` (equivalence, non-inferiority); 0 if not
    computable (no SD, or no number of seeds reaches it). See :func:`plan_seeds`."""
    if not (sd > 0 and math.isfinite(sd)) or not effect > 0:
        return 0
    at, margin = (effect, None) if kind == "superiority" else (difference, effect)
    if not _reachable(at, kind, margin):
        return 0
    return _plan(at, sd, alpha, POWER, kind, margin, 1_000_000)


def _fmt(x: float) -> str:
    return f"{x:.3g}"


def describe(res: ClaimResult, scale: float = 1.0, unit: str = "") -> str:
    """The verdict of ``res`` with its numbers multiplied by ``scale`` and followed by ``unit``.

    >>> describe(judge({"a": [0.05, -0.03, 0.01]}, {"a": ClaimTest("superiority", paper_effect=0.015,
    ...     pilot_sd=0.04)})["a"], 100, "points")
    "underpowered (MDE 16 points > paper's 1.5 points; 66 seeds would detect it)"
    """
    def num(x: float, signed: bool = False) -> str:
        return f"{scale * x:{'+' if signed else ''}.3g}{' ' + unit if unit else ''}"

    test = res.test
    if res.outcome == UNDERPOWERED:
        if test.kind == "superiority":
            assert test.paper_effect is not None
            target = f"paper's {num(test.paper_effect)}"
        else:
            assert test.margin is not None
            at = test.paper_at or 0.0
            target = f"margin {num(test.margin)}" + (f" at the paper's {num(at, True)}" if at else "")
        return f"underpowered (MDE {num(res.mde)} > {target}; {res.seeds_needed} seeds would detect it)"
    if res.outcome == EQUIVALENT:
        assert test.margin is not None
        return f"reproduced (equivalent within ±{num(test.margin)})"
    if res.outcome == NONINFERIOR:
        assert test.margin is not None
        return f"reproduced (not worse by {num(test.margin)})"
    if res.outcome == WORSE:
        assert test.margin is not None
        return f"worse than the margin −{num(test.margin)}"
    if res.outcome in (SMALLER, REPRODUCED_SMALLER):
        assert test.paper_effect is not None
        return f"{res.outcome} {num(test.paper_effect)}"
    if res.outcome == NOT_SHOWN_UNSIZED:
        return f"not shown (the paper states no effect size; MDE {num(res.mde)})"
    if res.outcome == NOT_SHOWN:
        return f"not shown (MDE {num(res.mde)})"
    return res.outcome


def _outcome(res: dict[str, Any], test: ClaimTest, rejected: Mapping[str, bool], room: float | None) -> str:
    mean, std, n, power = res["mean"], res["std"], res["n"], res["power"]
    if n < 2:
        return NO_VERDICT_ONE_SEED
    if not _testable(mean, std, n):
        return NO_VERDICT_ZERO_SPREAD
    needed = {"superiority": test.paper_effect, "equivalence": test.margin}.get(test.kind)
    if room is not None and needed is not None and room < needed:
        return CEILING
    if test.kind != "superiority":
        if rejected["for"]:
            return EQUIVALENT if test.kind == "equivalence" else NONINFERIOR
        if rejected["against"]:
            return NOT_EQUIVALENT if test.kind == "equivalence" else WORSE
        return NOT_SHOWN if power >= POWER else UNDERPOWERED
    smaller = rejected.get("smaller", False)
    if rejected["for"]:
        return REPRODUCED_SMALLER if smaller else REPRODUCED
    if rejected["against"]:
        return OPPOSITE
    if smaller:
        return SMALLER
    if test.paper_effect is None:
        return NOT_SHOWN_UNSIZED
    return NOT_SHOWN if power >= POWER else UNDERPOWERED


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
      (``H0: μ ≥ δ``); else :data:`UNDERPOWERED` when the run's power at δ (its own SD, level
      ``α / m``) is below 80 %, :data:`NOT_SHOWN` when it is not, :data:`NOT_SHOWN_UNSIZED` when
      the paper states no δ.
    * equivalence: :data:`EQUIVALENT` (TOST), :data:`NOT_EQUIVALENT`; non-inferiority:
      :data:`NONINFERIOR` (``H0: μ ≤ −Δ``), :data:`WORSE` (``H0: μ ≥ −Δ``); else
      :data:`UNDERPOWERED` when the run's power to meet Δ at the paper's difference is below 80 %,
      else :data:`NOT_SHOWN`.

    Each result carries the level Holm tested each hypothesis at and the matching confidence bounds
    (:func:`holm_levels`; ``ClaimResult.bounds``, ``ci_low`` / ``ci_high`` / ``ci_level``).

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
        levels = np.full(flat.size, alpha)
        alpha_design = alpha
    else:
        reject, adjusted = _holm(flat, alpha, m)
        levels = _holm_levels(flat, alpha, m, reject)
        alpha_design = alpha / m
    rej = {k: bool(r) for k, r in zip(keys, reject)}
    adj = {k: float(a) for k, a in zip(keys, adjusted)}
    lev = {k: float(a) for k, a in zip(keys, levels)}
    return {c: _result(arrays[c], tests[c], ps[c], {h: rej[c, h] for h in ps[c]},
                       {h: adj[c, h] for h in ps[c]}, {h: lev[c, h] for h in ps[c]}, alpha, alpha_design,
                       None if headroom is None else headroom.get(c)) for c in arrays}


def _bounds(mean: float, se: float, n: int, test: ClaimTest, levels: Mapping[str, float]
            ) -> dict[str, tuple[float, float]]:
    """Each hypothesis' confidence interval at its level (see ``ClaimResult.bounds``)."""
    from scipy.stats import t as student_t

    def q(level: float) -> float:
        return float(student_t.ppf(1 - level, n - 1)) * se

    inf = math.inf
    out: dict[str, tuple[float, float]] = {}
    a_for, a_against = levels["for"], levels["against"]
    if test.kind == "equivalence":
        out["for"] = (mean - q(a_for), mean + q(a_for))
    else:
        out["for"] = (mean - q(a_for), inf)
    if test.kind == "noninferiority":
        out["against"] = (-inf, mean + q(a_against))
    else:  # two-sided tests: the 1 − α interval
        out["against"] = (mean - q(a_against / 2), mean + q(a_against / 2))
    if "smaller" in levels:
        out["smaller"] = (-inf, mean + q(levels["smaller"]))
    return out


def _result(
    arr: np.ndarray, test: ClaimTest, p: Mapping[str, float], rejected: Mapping[str, bool],
    adjusted: Mapping[str, float], levels: Mapping[str, float], alpha: float, alpha_design: float,
    room: float | None,
) -> ClaimResult:
    from scipy.stats import t as student_t

    mean, std, n = _summary(arr)
    testable = _testable(mean, std, n)
    bounds: dict[str, tuple[float, float]] = {}
    ci = (math.nan, math.nan)
    if testable:
        se = std / math.sqrt(n)
        half = float(student_t.ppf(0.975, n - 1)) * se
        q = float(student_t.ppf(1 - alpha, n - 1)) * se
        interval = (mean - q, math.inf) if test.kind != "equivalence" else (mean - q, mean + q)
        bounds = _bounds(mean, se, n, test, levels)
        q_for = float(student_t.ppf(1 - levels["for"], n - 1)) * se
        ci = (mean - q_for, mean + q_for)
    else:
        half, interval = math.nan, (math.nan, math.nan)
    pilot = test.pilot_sd if test.pilot_sd is not None else math.nan
    margin = test.margin
    at = test.paper_at
    diff = 0.0 if test.kind == "superiority" or at is None else at
    design = mde(pilot, n, alpha_design, test.kind, difference=diff)
    observed = mde(std, n, alpha_design, test.kind, difference=diff) if testable else math.nan
    power_design = (_claim_power(test.powered_at, pilot, n, alpha_design, test.kind, margin)
                    if test.powered_at is not None else math.nan)
    power_observed = (_claim_power(at, std, n, alpha_design, test.kind, margin)
                      if testable and at is not None else math.nan)
    target = test.paper_effect if test.kind == "superiority" else margin
    needed = (seeds_needed(target, std, alpha_design, test.kind, difference=diff)
              if target is not None and testable else 0)
    fields: dict[str, Any] = {"mean": mean, "std": std, "n": n, "power": power_observed}
    outcome = _outcome(fields, test, rejected, room)
    res = ClaimResult(
        test=test, mean=mean, std=std, n=n, wins=int((arr > 0).sum()),
        p_value=p["for"], p_holm=adjusted["for"], p_against=p["against"],
        p_against_holm=adjusted["against"], p_smaller=p.get("smaller", math.nan),
        p_smaller_holm=adjusted.get("smaller", math.nan), interval=interval, half_width=half,
        alpha_design=alpha_design, mde_design=design, mde_observed=observed, seeds_needed=needed,
        mde_basis="observed", outcome=outcome, verdict="", levels=dict(levels), bounds=bounds,
        ci_low=ci[0], ci_high=ci[1], ci_level=1 - 2 * levels["for"], power_design=power_design,
        power_observed=power_observed,
    )
    object.__setattr__(res, "verdict", describe(res))
    return res
