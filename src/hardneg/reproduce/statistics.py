"""Claim verdicts from seed-paired differences: one-sided t-tests, TOST, and Holm's step-down.

A claim is tested on the per-seed differences ``d_k = contender(k) − baseline(k)``, ``k = 1..n``,
with ``mean = Σ d_k / n``, ``s`` the sample std (``ddof = 1``, the project's convention),
``se = s / √n`` and ``T_{n−1}`` Student's t with ``n − 1`` degrees of freedom.

* **Superiority** ("the contender scores higher"): the one-sided paired t-test of
  ``H0: μ ≤ 0`` against ``H1: μ > 0``, ``t = mean / se``, ``p = P(T_{n−1} ≥ t)``.
* **Equivalence** ("the contender matches the baseline", within a margin ``Δ`` fixed in advance):
  Schuirmann's two one-sided tests (TOST) of ``H0: |μ| ≥ Δ`` against ``H1: |μ| < Δ``:
  ``p = max(P(T_{n−1} ≥ (mean + Δ)/se), P(T_{n−1} ≤ (mean − Δ)/se))``. TOST at level α rejects
  exactly when the two-sided ``1 − 2α`` interval ``mean ± t_{1−α, n−1} se`` lies inside ``(−Δ, Δ)``.

Each claim also has a test *against* it, whose rejection is the opposite firm verdict:
``H0: μ ≥ 0`` (rejected: *contradicted*, ``p = P(T_{n−1} ≤ t)``) for superiority, and
``H0: |μ| ≤ Δ`` (rejected: *not equivalent*, ``p = min(1, 2 min(P(T ≥ (mean − Δ)/se),
P(T ≤ (mean + Δ)/se)))``, which is ≤ α exactly when the two-sided ``1 − α`` interval lies outside
``[−Δ, Δ]``) for equivalence.

:func:`judge` puts both hypotheses of every testable claim into **one** Holm family, so the
probability that *any* firm verdict of a report (reproduced, contradicted, equivalent, not
equivalent) is wrong is at most α, whatever the dependence between the claims. The price: a
superiority claim is, in effect, held to a two-sided level.

No test is possible, and the p-value is NaN, with one seed (no spread) or a **zero spread**:
identical differences on every seed (up to rounding, ``s ≤ ZERO_SPREAD_ATOL + ZERO_SPREAD_RTOL
|mean|``) would give ``se = 0``, an infinite t and a zero-width interval — a firm verdict from no
evidence of the noise. NaN p-values are never rejected and do not count in Holm's family size.

References: S. Holm, "A simple sequentially rejective multiple test procedure", Scandinavian
Journal of Statistics 6 (1979) 65–70; D. J. Schuirmann, "A comparison of the two one-sided tests
procedure and the power approach for assessing the equivalence of average bioavailability",
Journal of Pharmacokinetics and Biopharmaceutics 15 (1987) 657–680.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

__all__ = [
    "CONTRADICTED",
    "EQUIVALENT",
    "INCONCLUSIVE",
    "NOT_EQUIVALENT",
    "NOT_REPRODUCED",
    "NO_VERDICT_ONE_SEED",
    "NO_VERDICT_ZERO_VARIANCE",
    "OUTCOMES",
    "REPRODUCED",
    "ZERO_SPREAD_ATOL",
    "ZERO_SPREAD_RTOL",
    "ClaimResult",
    "ClaimTest",
    "against_pvalue",
    "claim_pvalue",
    "holm",
    "holm_adjusted",
    "judge",
    "spread_is_zero",
]

# The outcomes of :func:`judge` (``ClaimResult.outcome``, for matching). ``ClaimResult.verdict`` is
# the same text with ``Δ`` / ``x`` replaced by the margin / the 95 % half-width.
REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
CONTRADICTED = "contradicted"
EQUIVALENT = "reproduced (equivalent within ±Δ)"
NOT_EQUIVALENT = "not equivalent"
INCONCLUSIVE = "inconclusive at ±x"
NO_VERDICT_ZERO_VARIANCE = "no verdict (zero variance)"
NO_VERDICT_ONE_SEED = "no verdict (one seed)"
OUTCOMES = (
    REPRODUCED,
    NOT_REPRODUCED,
    CONTRADICTED,
    EQUIVALENT,
    NOT_EQUIVALENT,
    INCONCLUSIVE,
    NO_VERDICT_ZERO_VARIANCE,
    NO_VERDICT_ONE_SEED,
)

# A spread ``s ≤ ATOL + RTOL |mean|`` is rounding, not seed-to-seed variation (t would exceed 10⁹).
ZERO_SPREAD_ATOL = 1e-12
ZERO_SPREAD_RTOL = 1e-9

_KINDS = ("superiority", "equivalence")


def _student_t() -> Any:
    """``scipy.stats.t``, imported here: SciPy's stats module takes ~0.8 s to load."""
    from scipy.stats import t

    return t


def _is_real(x: object) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


@dataclass(frozen=True)
class ClaimTest:
    """A claim's test, fixed before the runs.

    Attributes:
        kind: ``"superiority"`` (the contender scores higher than the baseline) or
            ``"equivalence"`` (it matches the baseline within ``±margin``).
        margin: the equivalence margin Δ > 0 in the metric's units (0.01 = one point of accuracy).
            Required for equivalence; must be ``None`` for superiority (a superiority test has no
            margin, and a silently ignored one would mislead).
        paper_effect: the paper's effect in the metric's units (e.g. +0.015), or ``None``. For
            superiority it must be > 0 (the claim is that the contender is higher); a non-result
            whose 95 % half-width exceeds it is *inconclusive* (this budget could not have detected
            it). For equivalence it must lie inside ``(−margin, margin)`` (else the paper itself
            contradicts the margin); it is informative only.

    >>> ClaimTest("equivalence", margin=0.01, paper_effect=0.003).margin
    0.01
    """

    kind: Literal["superiority", "equivalence"]
    margin: float | None = None
    paper_effect: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(f"kind must be one of {list(_KINDS)}, got {self.kind!r}")
        if self.margin is not None:
            if not _is_real(self.margin) or not math.isfinite(self.margin) or self.margin <= 0:
                raise ValueError(f"margin must be a finite number > 0 (or None), got {self.margin!r}")
            object.__setattr__(self, "margin", float(self.margin))
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


@dataclass(frozen=True)
class ClaimResult:
    """One claim judged by :func:`judge` (all numbers in the metric's units).

    Attributes:
        test: the claim's :class:`ClaimTest`.
        mean, std, n, wins: of the per-seed differences (``std`` with ddof = 1, NaN for one seed;
            ``wins``: seeds with a difference > 0).
        p_value: the p-value of the claim's own test (superiority: one-sided ``H0: μ ≤ 0``;
            equivalence: TOST), unadjusted; NaN when no test is possible.
        p_holm: its Holm-adjusted p-value in the family of the report (see :func:`holm_adjusted`);
            the claim is supported iff ``p_holm ≤ α``.
        p_against, p_against_holm: the same for the test against the claim (superiority:
            ``H0: μ ≥ 0``; equivalence: ``H0: |μ| ≤ Δ``).
        interval: the interval that matches the claim's unadjusted test at level α — superiority:
            the one-sided ``1 − α`` lower bound, ``(mean − t_{1−α} se, +inf)``; equivalence: the
            two-sided ``1 − 2α`` interval ``mean ± t_{1−α} se`` (TOST rejects iff it lies inside
            ``(−Δ, Δ)``). NaN when no test is possible.
        half_width: ``t_{0.975, n−1} se``, the half-width of the two-sided 95 % interval, for
            reporting and for *inconclusive at ±x*. NaN when no test is possible.
        outcome: one of :data:`OUTCOMES` (to match on).
        verdict: ``outcome`` with ``Δ`` / ``x`` replaced by the margin / ``half_width`` (``.3g``).
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
    interval: tuple[float, float]
    half_width: float
    outcome: str
    verdict: str


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


def _pvalues(mean: float, std: float, n: int, test: ClaimTest) -> tuple[float, float]:
    """``(p for the claim, p against it)``; NaN for both when no test is possible."""
    if not _testable(mean, std, n):
        return math.nan, math.nan
    se = std / math.sqrt(n)
    df = n - 1
    student_t = _student_t()
    if test.kind == "superiority":
        tstat = mean / se
        return float(student_t.sf(tstat, df)), float(student_t.cdf(tstat, df))
    assert test.margin is not None  # validated by ClaimTest
    t_low = (mean + test.margin) / se  # H0: μ ≤ −Δ
    t_high = (mean - test.margin) / se  # H0: μ ≥ +Δ
    p_tost = max(float(student_t.sf(t_low, df)), float(student_t.cdf(t_high, df)))
    p_outside = min(1.0, 2 * min(float(student_t.sf(t_high, df)), float(student_t.cdf(t_low, df))))
    return p_tost, p_outside


def claim_pvalue(diffs: Sequence[float], test: ClaimTest) -> float:
    """The p-value of the claim's own test on the per-seed differences (unadjusted).

    Superiority: one-sided paired t-test of ``H0: μ ≤ 0`` vs ``H1: μ > 0``,
    ``p = P(T_{n−1} ≥ mean / (s/√n))``. Equivalence (Schuirmann's TOST, margin Δ):
    ``p = max(P(T_{n−1} ≥ (mean + Δ)/(s/√n)), P(T_{n−1} ≤ (mean − Δ)/(s/√n)))``.
    ``s`` is the sample std with ddof = 1. NaN — no test possible, never a verdict — with one seed
    or a zero spread (:func:`spread_is_zero`).

    Raises:
        ValueError: ``diffs`` empty, not flat, or not finite.
        TypeError: ``test`` is not a :class:`ClaimTest`.

    >>> round(claim_pvalue([0.01, 0.03, 0.02], ClaimTest("superiority")), 4)
    0.0371
    >>> claim_pvalue([0.02, 0.02, 0.02], ClaimTest("superiority"))
    nan
    """
    _check_test(test, "test")
    return _pvalues(*_summary(_as_diffs(diffs)), test)[0]


def against_pvalue(diffs: Sequence[float], test: ClaimTest) -> float:
    """The p-value of the test against the claim (unadjusted); rejected, it is the opposite verdict.

    Superiority: ``H0: μ ≥ 0`` vs ``H1: μ < 0``, ``p = P(T_{n−1} ≤ mean/(s/√n))`` (*contradicted*).
    Equivalence: ``H0: |μ| ≤ Δ`` vs ``H1: |μ| > Δ``, the Bonferroni union of the two one-sided
    tests ``p = min(1, 2 min(P(T ≥ (mean − Δ)/(s/√n)), P(T ≤ (mean + Δ)/(s/√n))))``
    (*not equivalent*; ``p ≤ α`` iff the two-sided ``1 − α`` interval lies outside ``[−Δ, Δ]``).
    NaN with one seed or a zero spread, as :func:`claim_pvalue`.
    """
    _check_test(test, "test")
    return _pvalues(*_summary(_as_diffs(diffs)), test)[1]


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


def holm(pvalues: Sequence[float], alpha: float = 0.05) -> list[bool]:
    """Holm's step-down rejections at family-wise error rate ``alpha``, in the input order.

    With the ``m`` non-NaN p-values sorted, ``p_(1) ≤ … ≤ p_(m)``, reject ``H_(1), …, H_(k)`` for
    the largest ``k`` such that ``p_(j) ≤ α / (m − j + 1)`` for every ``j ≤ k`` (stop at the first
    failure). Holm (1979): the chance of any false rejection is ≤ α under any dependence. Ties keep
    their input order. NaN p-values (no test possible) are never rejected and are not counted in
    ``m``: a claim that could not be tested spends none of the α of those that could.

    >>> holm([0.01, 0.04, 0.03, 0.005])
    [True, False, False, True]

    Raises:
        ValueError: ``alpha`` outside (0, 1); a p-value outside [0, 1] and not NaN.
    """
    _check_alpha(alpha)
    p = _check_pvalues(pvalues)
    finite = np.flatnonzero(~np.isnan(p))
    order = finite[np.argsort(p[finite], kind="stable")]
    m = order.size
    out = [False] * p.size
    for j, i in enumerate(order):
        if not p[i] <= alpha / (m - j):
            break
        out[int(i)] = True
    return out


def holm_adjusted(pvalues: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values, in the input order: ``p̃_(k) = min(1, max_{j ≤ k} (m − j + 1) p_(j))``.

    ``p̃`` is the smallest family-wise level at which Holm's procedure rejects the hypothesis
    (``H_(k)`` rejected at level α iff ``p̃_(k) ≤ α``, up to rounding); monotone in the sorted
    order, ≥ the unadjusted p, capped at 1. NaN stays NaN and does not count in ``m``.

    >>> holm_adjusted([0.01, 0.04, 0.03, 0.005])
    [0.03, 0.06, 0.06, 0.02]

    Raises:
        ValueError: a p-value outside [0, 1] and not NaN.
    """
    p = _check_pvalues(pvalues)
    finite = np.flatnonzero(~np.isnan(p))
    order = finite[np.argsort(p[finite], kind="stable")]
    m = order.size
    out = [math.nan] * p.size
    running = 0.0
    for j, i in enumerate(order):
        running = max(running, min(1.0, (m - j) * float(p[i])))
        out[int(i)] = running
    return out


def _fmt(x: float) -> str:
    return f"{x:.3g}"


def judge(
    diffs_by_claim: Mapping[str, Sequence[float]],
    tests: Mapping[str, ClaimTest],
    alpha: float = 0.05,
) -> dict[str, ClaimResult]:
    """Judge every claim of a report at family-wise error rate ``alpha``.

    Every claim that can be tested (≥ 2 seeds, non-zero spread) brings two hypotheses to **one**
    Holm family — its own (``p_value``) and the one against it (``p_against``) — so the chance
    that any firm verdict below is wrong is ≤ α. Verdicts, with ``x`` the 95 % half-width:

    * superiority: :data:`REPRODUCED` if ``H0: μ ≤ 0`` is rejected after Holm;
      :data:`CONTRADICTED` if ``H0: μ ≥ 0`` is; else :data:`INCONCLUSIVE` (``inconclusive at
      ±x``) when ``x > paper_effect`` (this budget could not have detected the paper's effect),
      else :data:`NOT_REPRODUCED` (also when ``paper_effect`` is None: nothing to compare with).
    * equivalence: :data:`EQUIVALENT` if TOST's ``H0: |μ| ≥ Δ`` is rejected after Holm;
      :data:`NOT_EQUIVALENT` if ``H0: |μ| ≤ Δ`` is (alone and at α = 0.05: the 95 % interval lies
      outside ``[−Δ, Δ]``); else :data:`INCONCLUSIVE`.
    * :data:`NO_VERDICT_ONE_SEED` with one seed, :data:`NO_VERDICT_ZERO_VARIANCE` with a zero
      spread (:func:`spread_is_zero`): no test, NaN p-values, outside the family.

    Args:
        diffs_by_claim: claim id → per-seed differences ``contender − baseline`` (same seeds).
        tests: claim id → its :class:`ClaimTest`; every claim of ``diffs_by_claim`` needs one
            (extra entries — claims not run — are ignored and spend no α).
        alpha: the family-wise error rate, in (0, 0.5) (the equivalence interval is ``1 − 2α``).

    Returns:
        claim id → :class:`ClaimResult`, in the order of ``diffs_by_claim``.

    >>> r = judge({"a": [0.020, 0.025, 0.018, 0.022, 0.030], "b": [0.05, -0.03, 0.01]},
    ...           {"a": ClaimTest("superiority"), "b": ClaimTest("superiority", paper_effect=0.015)})
    >>> r["a"].verdict, r["b"].verdict
    ('reproduced', 'inconclusive at ±0.0994')
    """
    _check_alpha(alpha, 0.5)
    missing = [c for c in diffs_by_claim if c not in tests]
    if missing:
        raise ValueError(f"tests must hold a ClaimTest for every claim of diffs_by_claim, missing {missing}")
    for claim in diffs_by_claim:
        _check_test(tests[claim], f"tests[{claim!r}]")

    arrays = {c: _as_diffs(d, f"diffs_by_claim[{c!r}]") for c, d in diffs_by_claim.items()}
    stats = {c: _summary(a) for c, a in arrays.items()}
    claims = list(diffs_by_claim)
    ps = {c: _pvalues(*stats[c], tests[c]) for c in claims}
    family = [p for c in claims for p in ps[c]]  # (for, against) per claim; NaN ones do not count
    rejected = holm(family, alpha)
    adjusted = holm_adjusted(family)

    out: dict[str, ClaimResult] = {}
    for i, c in enumerate(claims):
        test = tests[c]
        mean, std, n = stats[c]
        p_for, p_against = ps[c]
        rej_for, rej_against = rejected[2 * i], rejected[2 * i + 1]
        if _testable(mean, std, n):
            student_t = _student_t()
            se = std / math.sqrt(n)
            half = float(student_t.ppf(0.975, n - 1)) * se
            q = float(student_t.ppf(1 - alpha, n - 1)) * se
            interval = (mean - q, math.inf) if test.kind == "superiority" else (mean - q, mean + q)
        else:
            half, interval = math.nan, (math.nan, math.nan)

        if n < 2:
            outcome = NO_VERDICT_ONE_SEED
        elif not _testable(mean, std, n):
            outcome = NO_VERDICT_ZERO_VARIANCE
        elif test.kind == "superiority":
            if rej_for:
                outcome = REPRODUCED
            elif rej_against:
                outcome = CONTRADICTED
            elif test.paper_effect is not None and half > abs(test.paper_effect):
                outcome = INCONCLUSIVE
            else:
                outcome = NOT_REPRODUCED
        else:
            outcome = EQUIVALENT if rej_for else NOT_EQUIVALENT if rej_against else INCONCLUSIVE

        text = outcome.replace("±x", "±" + _fmt(half)) if outcome == INCONCLUSIVE else outcome
        if outcome == EQUIVALENT:
            assert test.margin is not None
            text = outcome.replace("±Δ", "±" + _fmt(test.margin))
        out[c] = ClaimResult(
            test=test, mean=mean, std=std, n=n, wins=int((arrays[c] > 0).sum()),
            p_value=p_for, p_holm=adjusted[2 * i], p_against=p_against,
            p_against_holm=adjusted[2 * i + 1], interval=interval, half_width=half,
            outcome=outcome, verdict=text,
        )
    return out
