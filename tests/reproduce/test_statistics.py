"""Claim statistics: p-values checked against hand-worked t statistics, Holm, verdicts, bad inputs.

Every t statistic below is worked out by hand (mean, sum of squared deviations, ``s² = Σ/(n−1)``,
``se = √(s²/n)``) and written as a literal; only the t distribution's tail comes from SciPy.
"""

from __future__ import annotations

import gc
import itertools
import math
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import t as student_t

from hardneg.reproduce.statistics import (
    CEILING,
    EQUIVALENT,
    NO_VERDICT_ONE_SEED,
    NO_VERDICT_ZERO_SPREAD,
    NONINFERIOR,
    NOT_EQUIVALENT,
    NOT_SHOWN,
    NOT_SHOWN_UNSIZED,
    OPPOSITE,
    OUTCOMES,
    REPRODUCED,
    REPRODUCED_SMALLER,
    SMALLER,
    UNDERPOWERED,
    WORSE,
    ClaimTest,
    against_pvalue,
    claim_power,
    claim_pvalue,
    describe,
    design_sd,
    holm,
    holm_adjusted,
    holm_levels,
    hypotheses,
    judge,
    mde,
    plan_seeds,
    seeds_needed,
)

SUPERIORITY = ClaimTest("superiority", paper_effect=0.015)
EQUIVALENCE = ClaimTest("equivalence", margin=0.01, paper_effect=0.003)

# mean 0.023; deviations (−3, 2, −5, −1, 7)e-3, Σ² = 88e-6, s² = 22e-6, se = √(22e-6/5)
SUP_UP = [0.020, 0.025, 0.018, 0.022, 0.030]
T_UP = 0.023 / math.sqrt(22e-6 / 5)
# mean 1e-4; deviations (1.9, −1.1, 0.9, −2.1, 0.4)e-3, Σ² = 10.2e-6, s² = 2.55e-6
SUP_NULL = [0.002, -0.001, 0.001, -0.002, 0.0005]
SE_NULL = math.sqrt(2.55e-6 / 5)
# mean 0.01; deviations (0.04, −0.04, 0), Σ² = 3.2e-3, s² = 1.6e-3, se = 0.04/√3
SUP_WIDE = [0.05, -0.03, 0.01]
SE_WIDE = 0.04 / math.sqrt(3)
# mean 5e-4; deviations (0.5, −2.5, 2.5, −0.5, 1.5, −1.5)e-3, Σ² = 17.5e-6, s² = 3.5e-6
EQ_CLOSE = [0.001, -0.002, 0.003, 0.000, 0.002, -0.001]
SE_CLOSE = math.sqrt(3.5e-6 / 6)
# mean 0.03125; deviations (−1.25, 3.75, −3.25, 0.75)e-3, Σ² = 26.75e-6, s² = 26.75e-6/3
EQ_FAR = [0.030, 0.035, 0.028, 0.032]
SE_FAR = math.sqrt(26.75e-6 / 12)
# mean 1/300; deviations (50, −55, 5)/3 e-3, Σ² = 5550/9 e-6, s² = 2775/9 e-6
EQ_WIDE = [0.02, -0.015, 0.005]
SE_EQ_WIDE = math.sqrt(2775 / 9 * 1e-6 / 3)
# mean 0.011; deviations (1, −7, 9, −3)e-3, Σ² = 140e-6, s² = 140e-6/3
MODEST = [0.012, 0.004, 0.020, 0.008]
T_MODEST = 0.011 / math.sqrt(140e-6 / 12)


@pytest.fixture(autouse=True, scope="module")
def _no_full_collection_per_holm() -> Iterator[None]:
    """statsmodels' ``multipletests`` runs ``gc.collect()`` on every Holm correction: 50 ms or more
    in a test process that holds torch, times the hundred corrections the property tests below
    make. A collection changes no p-value; while this module runs, ``gc.collect`` does nothing."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(gc, "collect", lambda *args: 0)
        yield


def test_superiority_pvalue_is_the_one_sided_paired_t_test() -> None:
    assert T_UP == pytest.approx(10.9648198, rel=1e-7)
    p = student_t.sf(T_UP, 4)  # P(T_4 ≥ t)
    assert p == pytest.approx(1.96521e-4, rel=1e-5)
    assert claim_pvalue(SUP_UP, SUPERIORITY) == pytest.approx(p, rel=1e-12)
    assert against_pvalue(SUP_UP, SUPERIORITY) == 1.0  # a positive mean is never the opposite direction
    # the opposite data: the claim's p is the complement, the test against it is two-sided: 2 P(T ≤ t)
    down = [-d for d in SUP_UP]
    assert claim_pvalue(down, SUPERIORITY) == pytest.approx(1 - p, rel=1e-12)
    assert against_pvalue(down, SUPERIORITY) == pytest.approx(2 * p, rel=1e-9)
    t_null = 1e-4 / SE_NULL
    assert t_null == pytest.approx(0.1400280, rel=1e-6)
    assert claim_pvalue(SUP_NULL, SUPERIORITY) == pytest.approx(student_t.sf(t_null, 4), rel=1e-9)
    assert claim_pvalue(SUP_NULL, SUPERIORITY) == pytest.approx(0.447703, rel=1e-5)
    t_wide = 0.01 / SE_WIDE
    assert t_wide == pytest.approx(math.sqrt(3) / 4, rel=1e-12)
    assert claim_pvalue(SUP_WIDE, SUPERIORITY) == pytest.approx(student_t.sf(t_wide, 2), rel=1e-9)
    # df = 2 has a closed form: P(T_2 ≥ t) = (1 − t/√(t² + 2)) / 2
    assert claim_pvalue(SUP_WIDE, SUPERIORITY) == pytest.approx((1 - t_wide / math.sqrt(t_wide**2 + 2)) / 2)


def test_equivalence_pvalue_is_tost_and_the_test_against_is_outside_the_margin() -> None:
    t_low, t_high = (5e-4 + 0.01) / SE_CLOSE, (5e-4 - 0.01) / SE_CLOSE
    assert (t_low, t_high) == (pytest.approx(13.747727, rel=1e-7), pytest.approx(-12.438420, rel=1e-7))
    p_tost = max(student_t.sf(t_low, 5), student_t.cdf(t_high, 5))  # H0: μ ≤ −Δ, H0: μ ≥ +Δ
    assert p_tost == pytest.approx(2.97737e-5, rel=1e-5)
    assert claim_pvalue(EQ_CLOSE, EQUIVALENCE) == pytest.approx(p_tost, rel=1e-9)
    assert against_pvalue(EQ_CLOSE, EQUIVALENCE) == 1.0  # 2 × (≈ 1), capped

    t_high = (0.03125 - 0.01) / SE_FAR
    assert t_high == pytest.approx(14.232712, rel=1e-7)
    p_outside = 2 * student_t.sf(t_high, 3)
    assert p_outside == pytest.approx(7.51524e-4, rel=1e-5)
    assert against_pvalue(EQ_FAR, EQUIVALENCE) == pytest.approx(p_outside, rel=1e-9)
    assert claim_pvalue(EQ_FAR, EQUIVALENCE) == pytest.approx(student_t.cdf(t_high, 3), rel=1e-12)

    t_low, t_high = (1 / 300 + 0.01) / SE_EQ_WIDE, (1 / 300 - 0.01) / SE_EQ_WIDE
    assert (t_low, t_high) == (pytest.approx(1.3151919, rel=1e-7), pytest.approx(-0.6575959, rel=1e-7))
    p_tost = max(student_t.sf(t_low, 2), student_t.cdf(t_high, 2))
    assert p_tost == pytest.approx(0.289181, rel=1e-5)
    assert claim_pvalue(EQ_WIDE, EQUIVALENCE) == pytest.approx(p_tost, rel=1e-9)


@pytest.mark.parametrize(
    "diffs",
    [
        [0.01, 0.01, 0.01],  # identical
        [0.4 - 0.3, 0.8 - 0.7, 0.6 - 0.5],  # identical up to rounding: s = 5.6e-17, t would be 3e15
        [0.0, 0.0, 0.0, 0.0],
        [0.02],  # one seed
    ],
)
def test_no_test_is_possible_with_one_seed_or_a_zero_spread(diffs: list[float]) -> None:
    for test in (SUPERIORITY, EQUIVALENCE):
        assert math.isnan(claim_pvalue(diffs, test)) and math.isnan(against_pvalue(diffs, test))


def test_holm_on_a_hand_worked_example() -> None:
    # sorted: 0.005 ≤ 0.05/4 = 0.0125 yes; 0.01 ≤ 0.05/3 = 0.0167 yes; 0.03 ≤ 0.05/2 = 0.025 no: stop
    p = [0.01, 0.04, 0.03, 0.005]
    assert holm(p, 0.05) == [True, False, False, True]
    # adjusted, sorted: 4·0.005 = 0.02; max(0.02, 3·0.01) = 0.03; max(0.03, 2·0.03) = 0.06;
    # max(0.06, 1·0.04) = 0.06 (monotone)
    assert holm_adjusted(p) == pytest.approx([0.03, 0.06, 0.06, 0.02], abs=1e-15)
    # (unadjusted, all four are ≤ 0.05; Bonferroni, ≤ 0.0125, rejects the same two as Holm here)
    # capped at 1: sorted 3·0.3 = 0.9; 2·0.6 = 1.2 → 1; max(1, 0.9) = 1
    assert holm_adjusted([0.3, 0.6, 0.9]) == pytest.approx([0.9, 1.0, 1.0])
    # Holm rejects more than Bonferroni (0.04 > 0.05/2): sorted, 0.02 ≤ 0.05/2, then 0.04 ≤ 0.05/1
    assert holm([0.04, 0.02], 0.05) == [True, True]
    assert holm([0.01, 0.04, 0.03, 0.005], alpha=0.1) == [True, True, True, True]  # 0.04 ≤ 0.1


def test_holm_ignores_nan_pvalues_and_does_not_count_them() -> None:
    # m = 1, not 2: 0.03 ≤ 0.05 (counting the NaN would ask 0.03 ≤ 0.025)
    assert holm([0.03, math.nan]) == [True, False]
    adj = holm_adjusted([0.03, math.nan])
    assert adj[0] == pytest.approx(0.03) and math.isnan(adj[1])
    assert holm([0.01, math.nan, 0.04, 0.03, 0.005]) == [True, False, False, False, True]
    assert holm([math.nan, math.nan]) == [False, False] and holm([]) == []


pvalue = st.one_of(st.floats(0.0, 1.0), st.just(math.nan))


@settings(max_examples=40, deadline=None)
@given(st.lists(pvalue, max_size=30), st.floats(0.001, 0.5))
def test_holm_lies_between_bonferroni_and_unadjusted(p: list[float], alpha: float) -> None:
    m = sum(not math.isnan(x) for x in p)
    rejected = holm(p, alpha)
    unadjusted = [x <= alpha for x in p]  # NaN ≤ α is False
    bonferroni = [x <= alpha / m for x in p] if m else [False] * len(p)
    assert all(u for r, u in zip(rejected, unadjusted) if r)  # Holm ⊆ unadjusted
    assert all(r for r, b in zip(rejected, bonferroni) if b)  # Bonferroni ⊆ Holm
    adjusted = holm_adjusted(p)
    for x, a in zip(p, adjusted):
        assert math.isnan(a) if math.isnan(x) else x <= a <= 1
    pairs = sorted((x, a) for x, a in zip(p, adjusted) if not math.isnan(x))
    assert all(a1 <= a2 for (_, a1), (_, a2) in itertools.pairwise(pairs))  # monotone
    # Holm rejects the smallest p-values: every rejected one is ≤ every kept one
    kept = [x for x, r in zip(p, rejected) if not r and not math.isnan(x)]
    assert all(x <= min(kept) for x, r in zip(p, rejected) if r) if kept else True


def _power_by_hand(delta_over_sigma: float, n: int, alpha: float) -> float:
    """The one-sided paired t-test's power: P(T'_{n−1}(√n δ/σ) > t_{1−α, n−1}), noncentral t."""
    from scipy.stats import nct

    crit = student_t.ppf(1 - alpha, n - 1)
    return float(nct.sf(crit, n - 1, math.sqrt(n) * delta_over_sigma))


def test_the_mde_is_the_hand_worked_noncentral_t_solution() -> None:
    """n = 5, σ = 1, α = 0.05/10 one-sided: the δ with P(T'_4(√5 δ) > t_{0.995, 4}) = 0.8."""
    from scipy.optimize import brentq

    alpha = 0.05 / 10
    assert student_t.ppf(1 - alpha, 4) == pytest.approx(4.604094871, rel=1e-8)  # t_{0.995, 4}
    by_hand = brentq(lambda d: _power_by_hand(d, 5, alpha) - 0.8, 0.1, 20.0, xtol=1e-12)
    assert by_hand == pytest.approx(2.62897, rel=1e-4)
    assert mde(1.0, 5, alpha) == pytest.approx(by_hand, rel=1e-6)
    assert mde(0.004, 5, alpha) == pytest.approx(0.004 * by_hand, rel=1e-6)  # in the SD's units
    # the seeds that detect 1.5 σ: the first n whose power reaches 80 %
    n = seeds_needed(1.5, 1.0, alpha)
    assert _power_by_hand(1.5, n, alpha) >= 0.8 > _power_by_hand(1.5, n - 1, alpha)
    assert math.isnan(mde(1.0, 1, alpha)) and math.isnan(mde(math.nan, 5, alpha))
    assert seeds_needed(0.01, math.nan, alpha) == 0


def _tost_simulated(mu: float, n: int, margin: float, alpha: float, draws: int = 200_000) -> float:
    """TOST's power by Monte Carlo: normal differences, σ = 1, both one-sided tests at ``alpha``."""
    rng = np.random.default_rng(0)
    d = rng.normal(mu, 1.0, size=(draws, n))
    mean, se = d.mean(1), d.std(1, ddof=1) / math.sqrt(n)
    crit = student_t.ppf(1 - alpha, n - 1)
    return float(np.mean((mean - crit * se > -margin) & (mean + crit * se < margin)))


def test_the_equivalence_mde_gives_tost_80_percent_power_at_zero() -> None:
    """The smallest margin TOST meets with 80 % power when μ = 0 (its exact power), simulated."""
    alpha, n = 0.05 / 4, 5
    margin = mde(1.0, n, alpha, "equivalence")
    assert claim_power(0.0, 1.0, n, alpha, "equivalence", margin=margin) == pytest.approx(0.8, abs=1e-7)
    assert _tost_simulated(0.0, n, margin, alpha) == pytest.approx(0.8, abs=0.005)  # MC se 0.0009
    # the former answer, each one-sided test at 90 % (a Bonferroni bound), is conservative
    from scipy.optimize import brentq

    assert margin < brentq(lambda d: _power_by_hand(d, n, alpha) - 0.9, 0.1, 20.0)


@pytest.mark.parametrize(("mu", "n", "margin", "alpha"), [
    (0.0, 5, 2.0, 0.05), (-0.3, 10, 0.9, 0.05 / 4), (0.2, 30, 0.5, 0.01), (0.0, 3, 3.0, 0.05),
    (-0.3 / 1.04, 40, 0.45 / 1.04, 0.05 / 35),
])
def test_tost_power_at_a_true_difference_matches_monte_carlo(mu: float, n: int, margin: float,
                                                             alpha: float) -> None:
    """The exact TOST power (quadrature over the SD) at μ ≠ 0 agrees with 200 000 simulated runs,
    and lies above Chow, Shao & Wang's noncentral-t lower bound ``P(A) + P(B) − 1``."""
    from scipy.stats import nct

    exact = claim_power(mu, 1.0, n, alpha, "equivalence", margin=margin)
    simulated = _tost_simulated(mu, n, margin, alpha)
    mc_se = math.sqrt(max(simulated * (1 - simulated), 1e-4) / 200_000)
    assert exact == pytest.approx(simulated, abs=4 * mc_se)
    crit = student_t.ppf(1 - alpha, n - 1)
    lower = (nct.sf(crit, n - 1, math.sqrt(n) * (margin + mu))
             + nct.sf(crit, n - 1, math.sqrt(n) * (margin - mu)) - 1)
    assert exact >= lower - 1e-9
    # the same power scales with σ: (μ, Δ) in units of σ
    scaled = claim_power(3 * mu, 3.0, n, alpha, "equivalence", margin=3 * margin)
    assert scaled == pytest.approx(exact, rel=1e-7)


def test_seed_counts_at_the_papers_own_difference() -> None:
    """ot-matches-hard: the paper's difference −0.3 against ±0.45 points needs ~7× the seeds of μ = 0."""
    sd, alpha = 0.0104, 0.05 / 35
    at_zero = plan_seeds(0.0, sd, alpha, kind="equivalence", margin=0.0045)
    at_paper = plan_seeds(-0.003, sd, alpha, kind="equivalence", margin=0.0045)
    assert at_paper == 708 and at_zero == 102
    for n, kind in ((at_paper, "equivalence"), (at_zero, "equivalence")):
        mu = -0.003 if n == at_paper else 0.0
        assert claim_power(mu, sd, n, alpha, kind, margin=0.0045) >= 0.8 > claim_power(
            mu, sd, n - 1, alpha, kind, margin=0.0045)
    assert seeds_needed(0.0045, sd, alpha, "equivalence", difference=-0.003) == at_paper
    # one-sided (non-inferiority): the noncentral t at √n (μ + Δ)/σ
    ni = plan_seeds(-0.003, sd, alpha, kind="noninferiority", margin=0.0045)
    assert _power_by_hand(0.0015 / sd, ni, alpha) >= 0.8 > _power_by_hand(0.0015 / sd, ni - 1, alpha)
    assert mde(sd, ni, alpha, "noninferiority", difference=-0.003) <= 0.0045 < mde(
        sd, ni - 1, alpha, "noninferiority", difference=-0.003)
    # the equivalence MDE at the paper's difference: the margin met with 80 % power
    margin = mde(sd, 100, alpha, "equivalence", difference=-0.003)
    assert claim_power(-0.003, sd, 100, alpha, "equivalence", margin=margin) == pytest.approx(0.8, abs=1e-7)


def test_superiority_power_is_statsmodels_ttestpower_and_plan_seeds_its_inverse() -> None:
    from statsmodels.stats.power import TTestPower

    cases = ((0.011, 0.0085, 5, 0.05 / 35), (0.03, 0.0085, 5, 0.05 / 35), (0.5, 1.0, 20, 0.05))
    for effect, sd, n, alpha in cases:
        want = TTestPower().power(effect_size=effect / sd, nobs=n, alpha=alpha, alternative="larger")
        assert claim_power(effect, sd, n, alpha) == pytest.approx(want, rel=1e-10)
    n = plan_seeds(0.011, 0.0085, 0.05 / 35)
    assert claim_power(0.011, 0.0085, n, 0.05 / 35) >= 0.8 > claim_power(0.011, 0.0085, n - 1, 0.05 / 35)
    assert plan_seeds(0.011, 0.0085, 0.05 / 35, power=0.9) > n


def test_design_sd_is_the_upper_chi_square_limit() -> None:
    """Browne (1995): s √((n − 1)/χ²_{0.2, n−1}); 4 degrees of freedom inflate the SD by 1.56."""
    from scipy.stats import chi2

    assert design_sd(1.0, 5) == pytest.approx(math.sqrt(4 / chi2.ppf(0.2, 4)), rel=1e-12)
    assert chi2.ppf(0.2, 4) == pytest.approx(1.648776, rel=1e-6)
    assert design_sd(0.0071, 5) == pytest.approx(0.0071 * 1.557576, rel=1e-5)
    assert design_sd(1.0, 5, confidence=0.5) < design_sd(1.0, 5) < design_sd(1.0, 5, confidence=0.95)
    # simulated: the limit is above the true σ in 80 % of pilots
    rng = np.random.default_rng(1)
    s = rng.normal(size=(100_000, 5)).std(1, ddof=1)
    assert np.mean(s * math.sqrt(4 / chi2.ppf(0.2, 4)) >= 1.0) == pytest.approx(0.8, abs=0.005)


SIZED = ClaimTest("superiority", paper_effect=0.015)
# mean 0.01; deviations (0, 1, −1, 0, 0.5, −0.5)e-3, Σ² = 2.5e-6, s² = 0.5e-6
TIGHT = [0.010, 0.011, 0.009, 0.010, 0.0105, 0.0095]


def _one(diffs: list[float], test: ClaimTest, **kwargs: object) -> object:
    return judge({"c": diffs}, {"c": test}, **kwargs)["c"]  # type: ignore[arg-type]


def test_reproduced_is_the_one_sided_paired_t_test_after_holm() -> None:
    from scipy.stats import ttest_rel

    res = _one(SUP_UP, SIZED)
    p = student_t.sf(T_UP, 4)
    assert res.outcome == res.verdict == REPRODUCED
    assert res.p_value == pytest.approx(p, rel=1e-12)
    assert res.p_value == pytest.approx(ttest_rel(SUP_UP, [0.0] * 5, alternative="greater").pvalue, rel=1e-12)
    assert hypotheses(SIZED) == ("for", "against", "smaller")
    assert res.p_holm == pytest.approx(3 * p, rel=1e-12)  # the smallest of a family of three
    assert (res.mean, res.n, res.wins) == (pytest.approx(0.023), 5, 5)
    se = math.sqrt(22e-6 / 5)
    assert res.half_width == pytest.approx(student_t.ppf(0.975, 4) * se)
    assert res.interval == (pytest.approx(0.023 - student_t.ppf(0.95, 4) * se), math.inf)


def test_reproduced_but_smaller_than_the_paper() -> None:
    se = math.sqrt(0.5e-6 / 6)
    res = _one(TIGHT, ClaimTest("superiority", paper_effect=0.03))
    assert res.outcome == REPRODUCED_SMALLER
    assert res.p_smaller == pytest.approx(student_t.cdf((0.01 - 0.03) / se, 5), rel=1e-9)
    assert describe(res, 100, "points") == "reproduced, smaller than the paper's 3 points"


def test_opposite_direction_is_two_sided_and_never_a_plain_non_result() -> None:
    down = [-d for d in SUP_UP]
    res = _one(down, SIZED)
    p_two = 2 * student_t.sf(T_UP, 4)
    assert res.outcome == res.verdict == OPPOSITE
    assert res.p_against == pytest.approx(p_two, rel=1e-9)
    from scipy.stats import ttest_rel

    assert res.p_against == pytest.approx(ttest_rel(down, [0.0] * 5).pvalue, rel=1e-12)


def test_smaller_than_the_paper_when_mu_at_least_the_effect_is_rejected() -> None:
    from scipy.stats import ttest_1samp

    res = _one(SUP_NULL, SIZED)
    t_small = (1e-4 - 0.015) / SE_NULL
    assert res.outcome == res.verdict.split(" 0.015")[0] == SMALLER
    assert res.p_smaller == pytest.approx(student_t.cdf(t_small, 4), rel=1e-9)
    assert res.p_smaller == pytest.approx(ttest_1samp(SUP_NULL, 0.015, alternative="less").pvalue, rel=1e-9)


def _spread(mean: float, sd: float) -> list[float]:
    """Six differences with exactly this mean and sample SD."""
    z = np.array([1.0, -1.0, 0.5, -0.5, 0.2, -0.2])
    return list(mean + sd * z / z.std(ddof=1))


def test_underpowered_and_not_shown_are_decided_by_the_runs_own_sd() -> None:
    """Same data (n = 3, mean 0.01, s = 0.04), two designs: the run's own SD decides, the pilot's is
    reported beside it (issue 45: a pilot SD that promised 80 % power does not make a non-result
    "not shown" when the run itself could not see δ)."""
    alpha_design = 0.05 / 3
    under = _one(SUP_WIDE, ClaimTest("superiority", paper_effect=0.015, pilot_sd=0.04))
    assert under.outcome == UNDERPOWERED and under.mde_basis == "observed"
    assert under.alpha_design == pytest.approx(alpha_design)
    assert under.mde_design == pytest.approx(mde(0.04, 3, alpha_design)) and under.mde_design > 0.015
    n = under.seeds_needed
    effect = 0.015 / 0.04
    assert _power_by_hand(effect, n, alpha_design) >= 0.8 > _power_by_hand(effect, n - 1, alpha_design)
    assert describe(under, 100, "points") == (
        f"underpowered (MDE {100 * under.mde_observed:.3g} points > paper's 1.5 points; "
        f"{n} seeds would detect it)")
    assert under.power_observed == pytest.approx(_power_by_hand(effect, 3, alpha_design), rel=1e-9)
    # a pilot SD of 0.002 said 3 seeds detect 0.015; the run's SD says they cannot: underpowered
    pilot = _one(SUP_WIDE, ClaimTest("superiority", paper_effect=0.015, pilot_sd=0.002))
    assert pilot.outcome == UNDERPOWERED and pilot.mde_design < 0.015 < pilot.mde_observed
    assert pilot.power_design > 0.8 > pilot.power_observed
    # the run's SD gives ≥ 80 % power at δ = 0.01 and neither test rejects: not shown, whatever the pilot
    shown = _one(_spread(0.005, 0.006), ClaimTest("superiority", paper_effect=0.01, pilot_sd=0.05))
    assert shown.outcome == NOT_SHOWN and shown.mde_observed < 0.01 < shown.mde_design
    assert shown.power_observed >= 0.8 and shown.verdict == f"not shown (MDE {shown.mde_observed:.3g})"
    assert _one(_spread(0.005, 0.007), ClaimTest("superiority", paper_effect=0.01)).outcome == UNDERPOWERED
    # no effect size in the paper: nothing to be powered for
    assert _one(SUP_WIDE, ClaimTest("superiority")).outcome == NOT_SHOWN_UNSIZED


def test_the_design_power_answers_the_claims_question() -> None:
    """question="size" powers the design at δ, question="effect" at the pilot's mean."""
    alpha = 0.05 / 3
    size = _one(SUP_WIDE, ClaimTest("superiority", paper_effect=0.03, pilot_sd=0.01))
    effect = _one(SUP_WIDE, ClaimTest("superiority", paper_effect=0.03, pilot_sd=0.01, question="effect",
                                      pilot_mean=0.011))
    assert size.power_design == pytest.approx(_power_by_hand(3.0, 3, alpha), rel=1e-9)
    assert effect.power_design == pytest.approx(_power_by_hand(1.1, 3, alpha), rel=1e-9)
    assert size.outcome == effect.outcome and size.power_observed == effect.power_observed  # verdict: at δ
    parity = ClaimTest("noninferiority", margin=0.0045, paper_difference=-0.003, pilot_sd=0.0104)
    res = _one(EQ_CLOSE, parity)
    assert res.power_design == pytest.approx(_power_by_hand(0.0015 / 0.0104, 6, 0.05 / 2), rel=1e-9)


def test_equivalence_verdicts() -> None:
    from statsmodels.stats.weightstats import ttost_paired

    res = judge({"e": EQ_CLOSE, "f": EQ_FAR}, dict.fromkeys("ef", EQUIVALENCE))
    close, far = res["e"], res["f"]
    assert close.outcome == EQUIVALENT and close.verdict == "reproduced (equivalent within ±0.01)"
    assert close.p_value == pytest.approx(ttost_paired(np.array(EQ_CLOSE), np.zeros(6), -0.01, 0.01)[0])
    q = 2.015048373 * SE_CLOSE  # t_{0.95, 5}: the 1 − 2α = 90 % interval of TOST
    assert close.interval == (pytest.approx(5e-4 - q), pytest.approx(5e-4 + q))
    assert far.outcome == NOT_EQUIVALENT
    assert far.mean - far.half_width > 0.01  # the 95 % interval lies above +Δ
    # the family: 4 hypotheses, hand-worked Holm multipliers
    p_close = max(student_t.sf((5e-4 + 0.01) / SE_CLOSE, 5), student_t.cdf((5e-4 - 0.01) / SE_CLOSE, 5))
    p_far = 2 * student_t.sf((0.03125 - 0.01) / SE_FAR, 3)
    assert close.p_holm == pytest.approx(4 * p_close, rel=1e-9)  # smallest of 4
    assert far.p_against_holm == pytest.approx(3 * p_far, rel=1e-9)  # second smallest
    # neither: underpowered or not shown, by the run's own power to meet the margin at the paper's
    # difference (0 here), whatever the pilot said
    under = _one(EQ_WIDE, ClaimTest("equivalence", margin=0.01, pilot_sd=0.001))
    assert under.outcome == UNDERPOWERED and under.mde_design == pytest.approx(
        mde(0.001, 3, 0.05 / 2, "equivalence"))
    assert under.mde_observed == pytest.approx(mde(under.std, 3, 0.05 / 2, "equivalence"))
    assert describe(under).startswith("underpowered (MDE ") and "> margin 0.01;" in describe(under)
    # at the boundary with a small spread: neither test rejects, though the run could meet ±0.01
    edge = _one(_spread(0.01, 0.001), ClaimTest("equivalence", margin=0.01, pilot_sd=0.05))
    assert edge.outcome == NOT_SHOWN and edge.power_observed > 0.99
    # the paper's own difference moves the seeds needed and is said
    off = _one(EQ_WIDE, ClaimTest("equivalence", margin=0.01, paper_difference=-0.006))
    assert off.seeds_needed > under.seeds_needed
    assert describe(off, 100, "points").endswith(
        f"> margin 1 points at the paper's -0.6 points; {off.seeds_needed} seeds would detect it)")


def test_the_ceiling_overrides_every_verdict_including_a_firm_one() -> None:
    """A baseline 1 point below 100 % cannot show +1.5 points, nor parity within ±1 point at 0.5."""
    assert _one(SUP_UP, SIZED, headroom={"c": 0.01}).outcome == CEILING  # reproduced without it
    assert _one(SUP_UP, SIZED, headroom={"c": 0.02}).outcome == REPRODUCED
    assert _one(EQ_CLOSE, EQUIVALENCE, headroom={"c": 0.005}).outcome == CEILING  # equivalent without it
    assert _one(EQ_CLOSE, EQUIVALENCE, headroom={"c": 0.012}).outcome == EQUIVALENT


def test_the_family_is_fixed_in_advance_and_exploratory_runs_have_none() -> None:
    """Claims planned but not run count in m; an exploratory run judges each p-value unadjusted."""
    p = student_t.sf(T_MODEST, 3)
    assert T_MODEST == pytest.approx(3.2204702, rel=1e-7) and p == pytest.approx(0.0242834, rel=1e-5)
    test = ClaimTest("superiority")
    alone = judge({"m": MODEST}, {"m": test})["m"]
    assert alone.outcome == REPRODUCED and alone.p_holm == pytest.approx(2 * p, rel=1e-12)
    tests = {"m": test, "x": SIZED, "y": EQUIVALENCE}
    planned = judge({"m": MODEST}, tests, planned=["m", "x", "y"])["m"]  # m = 2 + 3 + 2
    assert planned.p_holm == pytest.approx(7 * p, rel=1e-12) and planned.outcome == NOT_SHOWN_UNSIZED
    assert planned.alpha_design == pytest.approx(0.05 / 7)
    # the same claim, others untestable (zero spread, one seed): still 7
    again = judge({"m": MODEST, "x": [0.01, 0.01, 0.01], "y": [0.03]}, tests, planned=["m", "x", "y"])
    assert again["m"].p_holm == pytest.approx(7 * p, rel=1e-12)
    assert again["x"].outcome == NO_VERDICT_ZERO_SPREAD and again["y"].outcome == NO_VERDICT_ONE_SEED
    exploratory = judge({"m": MODEST}, tests, planned=["m", "x", "y"], exploratory=True)["m"]
    assert exploratory.p_holm == exploratory.p_value == pytest.approx(p) and exploratory.alpha_design == 0.05
    with pytest.raises(ValueError, match=r"planned must hold every claim of diffs_by_claim, missing \['m'\]"):
        judge({"m": MODEST}, tests, planned=["x"])


def test_a_report_family_with_hand_worked_holm_multipliers() -> None:
    """Four claims, 11 hypotheses; sorted: p_eq (×11), p_up (×10), p_m (×9) = 0.219 > 0.05."""
    p = student_t.sf(T_MODEST, 3)
    test = ClaimTest("superiority", paper_effect=0.01)
    family = judge(
        {"up": SUP_UP, "eq": EQ_CLOSE, "m": MODEST, "wide": SUP_WIDE},
        {"up": SIZED, "eq": EQUIVALENCE, "m": test, "wide": SIZED},
    )
    p_eq = student_t.cdf((5e-4 - 0.01) / SE_CLOSE, 5)
    p_up = student_t.sf(T_UP, 4)
    assert family["eq"].p_holm == pytest.approx(11 * p_eq, rel=1e-9)
    assert family["up"].p_holm == pytest.approx(10 * p_up, rel=1e-9)
    assert family["m"].p_holm == pytest.approx(9 * p, rel=1e-9)
    assert family["wide"].p_holm == 1.0
    assert [r.outcome for r in family.values()] == [REPRODUCED, EQUIVALENT, UNDERPOWERED, UNDERPOWERED]
    assert list(family) == ["up", "eq", "m", "wide"]


def test_holm_matches_statsmodels_and_counts_the_planned_family() -> None:
    from statsmodels.stats.multitest import multipletests

    p = [0.01, 0.04, 0.03, 0.005]
    assert holm_adjusted(p) == pytest.approx(list(multipletests(p, method="holm")[1]))
    # m = 6 planned, two not run (p = 1): sorted 6·0.005 = 0.03, 5·0.01 = 0.05, 4·0.03 = 0.12, ...
    assert holm_adjusted(p, m=6) == pytest.approx([0.05, 0.12, 0.12, 0.03])
    assert holm(p, 0.05, m=6) == [True, False, False, True]
    with pytest.raises(ValueError, match=r"m must be at least the number of tested p-values \(4\), got 3"):
        holm(p, m=3)


@pytest.mark.parametrize("diffs", [[0.01, 0.01, 0.01], [0.4 - 0.3, 0.8 - 0.7, 0.6 - 0.5]])
def test_judge_gives_no_verdict_for_zero_spread_or_one_seed(diffs: list[float]) -> None:
    for test in (SIZED, EQUIVALENCE):
        res = judge({"z": diffs, "o": diffs[:1]}, {"z": test, "o": test})
        zero, one = res["z"], res["o"]
        assert zero.verdict == NO_VERDICT_ZERO_SPREAD and one.verdict == NO_VERDICT_ONE_SEED
        assert zero.n == 3 and zero.wins == 3 and zero.std < 1e-15
        assert one.n == 1 and math.isnan(one.std) and one.mean == diffs[0] and one.wins == 1
        for r in (zero, one):
            assert math.isnan(r.p_value) and math.isnan(r.p_holm) and math.isnan(r.half_width)
            assert math.isnan(r.p_against) and math.isnan(r.interval[0])


def test_every_outcome_is_a_distinct_constant() -> None:
    assert len(set(OUTCOMES)) == len(OUTCOMES) == 14


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kind": "superior"},
         r"kind must be one of \['superiority', 'equivalence', 'noninferiority'\], got 'superior'"),
        ({"kind": "equivalence"}, r"margin must be a finite number > 0 for an equivalence claim, got None"),
        ({"kind": "equivalence", "margin": -0.01}, r"margin must be .* > 0 \(or None\), got -0.01"),
        ({"kind": "equivalence", "margin": math.nan}, r"margin must be a finite number > 0 .*got nan"),
        ({"kind": "equivalence", "margin": True}, r"margin must be a finite number > 0 .*got True"),
        ({"kind": "superiority", "margin": 0.01}, r"margin must be None for a superiority claim.*got 0.01"),
        ({"kind": "superiority", "paper_effect": -0.01}, r"paper_effect must be > 0 for a .*-0.01"),
        ({"kind": "superiority", "paper_effect": math.inf}, r"paper_effect must be a finite number.*inf"),
        ({"kind": "equivalence", "margin": 0.01, "paper_effect": 0.02},
         r"paper_effect must lie inside \(−margin, margin\) = \(−0.01, 0.01\).*got 0.02"),
        ({"kind": "noninferiority"},
         r"margin must be a finite number > 0 for a noninferiority claim, got None"),
        ({"kind": "noninferiority", "margin": 0.01, "paper_difference": -0.01},
         r"paper_difference must be > −margin = −0.01 for a noninferiority claim, got -0.01"),
        ({"kind": "equivalence", "margin": 0.01, "paper_difference": 0.01},
         r"paper_difference must lie inside \(−margin, margin\).*got 0.01"),
        ({"kind": "equivalence", "margin": 0.01, "paper_effect": 0.002, "paper_difference": 0.003},
         r"paper_effect must equal paper_difference .*got 0.002 and 0.003"),
        ({"kind": "superiority", "paper_difference": 0.01},
         r"paper_difference must be None for a superiority"),
        ({"kind": "superiority", "question": "sign"},
         r"question must be one of \['size', 'effect'\], got 'sign'"),
        ({"kind": "superiority", "question": "effect"},
         r"pilot_mean must be a finite number for question='effect'"),
        ({"kind": "superiority", "question": "effect", "pilot_mean": -0.01},
         r"pilot_mean must be > 0 .*-0.01"),
        ({"kind": "superiority", "pilot_mean": math.nan},
         r"pilot_mean must be a finite number \(or None\), got nan"),
    ],
)
def test_bad_claim_tests_are_refused(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ClaimTest(**kwargs)


def test_bad_inputs_are_refused_naming_the_parameter() -> None:
    with pytest.raises(ValueError, match=r"diffs must hold at least one per-seed difference, got none"):
        claim_pvalue([], SUPERIORITY)
    with pytest.raises(ValueError, match=r"diffs must be finite, got nan at index 1"):
        claim_pvalue([0.1, math.nan], SUPERIORITY)
    with pytest.raises(ValueError, match=r"diffs must be a flat sequence"):
        against_pvalue([[0.1, 0.2]], SUPERIORITY)
    with pytest.raises(TypeError, match=r"test must be a ClaimTest, got str"):
        claim_pvalue([0.1, 0.2], "superiority")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"pvalues must lie in \[0, 1\] \(or be NaN\), got 1.5 at index 1"):
        holm([0.1, 1.5])
    with pytest.raises(ValueError, match=r"pvalues must lie in \[0, 1\].*got -0.1 at index 0"):
        holm_adjusted([-0.1])
    with pytest.raises(ValueError, match=r"alpha must lie in \(0, 1\), got 0"):
        holm([0.1], alpha=0)
    with pytest.raises(ValueError, match=r"alpha must lie in \(0, 0.5\), got 0.5"):
        judge({"a": SUP_UP}, {"a": SUPERIORITY}, alpha=0.5)
    with pytest.raises(ValueError, match=r"tests must hold a ClaimTest for every claim .* missing \['b'\]"):
        judge({"a": SUP_UP, "b": SUP_UP}, {"a": SUPERIORITY})
    with pytest.raises(TypeError, match=r"tests\['a'\] must be a ClaimTest, got dict"):
        judge({"a": SUP_UP}, {"a": {"kind": "superiority"}})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match=r"diffs_by_claim\['a'\] must be finite, got inf at index 0"):
        judge({"a": [math.inf, 0.1]}, {"a": SUPERIORITY})


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-0.05, 0.05), min_size=2, max_size=8), st.sampled_from([0.05, 0.1]))
def test_tests_agree_with_their_intervals(diffs: list[float], alpha: float) -> None:
    """TOST at α rejects iff the 1 − 2α interval is inside (−Δ, Δ); superiority iff the 1 − α bound > 0."""
    for test in (ClaimTest("superiority"), ClaimTest("equivalence", margin=0.01)):
        r = judge({"c": diffs}, {"c": test}, alpha=alpha)["c"]
        if math.isnan(r.p_value) or abs(r.p_value - alpha) < 1e-9:
            continue
        lo, hi = r.interval
        inside = lo > 0 if test.kind == "superiority" else -0.01 < lo and hi < 0.01
        assert (r.p_value <= alpha) == inside


def test_noninferiority_verdicts_are_one_sided_tests_against_the_margin() -> None:
    """Jiang et al.'s "match (and sometimes slightly exceed)": H0 μ ≤ −Δ (reproduced), H0 μ ≥ −Δ (worse)."""
    from scipy.stats import ttest_1samp

    test = ClaimTest("noninferiority", margin=0.01, paper_difference=-0.003)
    assert hypotheses(test) == ("for", "against")
    res = judge({"ok": EQ_CLOSE, "bad": [-d - 0.02 for d in EQ_FAR]}, {"ok": test, "bad": test})
    ok, bad = res["ok"], res["bad"]
    assert ok.p_value == pytest.approx(ttest_1samp(EQ_CLOSE, -0.01, alternative="greater").pvalue, rel=1e-12)
    assert ok.p_value == pytest.approx(student_t.sf((5e-4 + 0.01) / SE_CLOSE, 5), rel=1e-9)
    assert ok.outcome == NONINFERIOR and describe(ok, 100, "points") == "reproduced (not worse by 1 points)"
    assert bad.p_against == pytest.approx(
        ttest_1samp([-d - 0.02 for d in EQ_FAR], -0.01, alternative="less").pvalue, rel=1e-12)
    assert bad.outcome == WORSE and bad.verdict == "worse than the margin −0.01"
    # no ceiling for a one-sided parity claim: a baseline at the ceiling does not stop "not worse"
    assert _one(EQ_CLOSE, test, headroom={"c": 0.001}).outcome == NONINFERIOR
    # neither: the run's power at the paper's difference decides, and the seeds are counted there
    wide = _one(EQ_WIDE, test)
    assert wide.outcome == UNDERPOWERED
    assert wide.seeds_needed == plan_seeds(-0.003, wide.std, 0.05 / 2, kind="noninferiority", margin=0.01)
    assert "> margin 0.01 at the paper's -0.003;" in wide.verdict


def _in_region(test: ClaimTest, h: str, bound: tuple[float, float]) -> bool:
    """Whether hypothesis ``h``'s interval lies in its rejection region (see ClaimResult.bounds)."""
    lo, hi = bound
    delta = test.margin or 0.0
    if h == "for":
        if test.kind == "equivalence":
            return -delta < lo and hi < delta
        return lo > (0.0 if test.kind == "superiority" else -delta)
    if h == "against":
        if test.kind == "superiority":
            return hi < 0
        if test.kind == "equivalence":
            return lo > delta or hi < -delta
        return hi < -delta
    assert h == "smaller" and test.paper_effect is not None
    return hi < test.paper_effect


def test_intervals_at_the_holm_level_agree_with_the_verdicts() -> None:
    """Over many random families: each hypothesis' interval, at the level Holm's step-down tested it
    at, lies in its rejection region exactly when Holm (statsmodels) rejected it; the headline
    interval's lower end (upper too, for TOST) is the claim's own test."""
    from statsmodels.stats.multitest import multipletests

    kinds = [ClaimTest("superiority"), ClaimTest("superiority", paper_effect=0.02),
             ClaimTest("equivalence", margin=0.01), ClaimTest("noninferiority", margin=0.01)]
    rng = np.random.default_rng(7)
    checked = rejected = 0
    for _ in range(60):
        k = int(rng.integers(2, 6))
        tests = {f"c{i}": kinds[int(rng.integers(len(kinds)))] for i in range(k)}
        diffs = {c: list(rng.normal(rng.normal(0.0, 0.02), rng.uniform(0.002, 0.02),
                                    int(rng.integers(3, 12)))) for c in tests}
        planned = [*tests, "extra"]
        res = judge(diffs, {**tests, "extra": ClaimTest("superiority")}, planned=planned)
        flat = [(c, h, getattr(res[c], {"for": "p_value", "against": "p_against", "smaller": "p_smaller"}[h]))
                for c in tests for h in hypotheses(tests[c])]
        m = len(flat) + 2
        reject = multipletests([p for *_, p in flat] + [1.0, 1.0], alpha=0.05, method="holm")[0]
        for (c, h, p), rej in zip(flat, reject):
            level = res[c].levels[h]
            if abs(p - level) < 1e-9 * level:  # a p-value on its level: the tie is rounding's
                continue
            assert (p <= level) == bool(rej)
            assert _in_region(tests[c], h, res[c].bounds[h]) == bool(rej), (c, h, p, level)
            checked += 1
            rejected += bool(rej)
        for c, r in res.items():
            assert r.ci_level == pytest.approx(1 - 2 * r.levels["for"])
            assert r.ci_low == pytest.approx(r.bounds["for"][0])
            if tests[c].kind == "equivalence":
                assert r.ci_high == pytest.approx(r.bounds["for"][1])
        assert sum(1 for r in res.values() for lv in r.levels.values() if lv < 0.05 / m - 1e-15) == 0
    assert checked > 300 and 20 < rejected < checked  # both sides of the equivalence were exercised


def test_holm_levels_on_a_hand_worked_example() -> None:
    """p sorted 0.005, 0.01, 0.03, 0.04 (m = 4): 0.005 ≤ 0.05/4, 0.01 ≤ 0.05/3, 0.03 > 0.05/2 stops:
    the rejected at 0.0125 and 0.0167, the others at 0.025, where the step-down stopped."""
    assert holm_levels([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.05 / 3, 0.025, 0.025, 0.0125])
    assert holm([0.01, 0.04, 0.03, 0.005]) == [True, False, False, True]
    # m = 6 planned (two not run): 0.005 ≤ 0.05/6 and 0.01 ≤ 0.05/5 rejected, 0.04 > 0.05/4 stops
    levels = holm_levels([0.01, 0.04, math.nan, 0.005], m=6)
    assert levels == pytest.approx([0.01, 0.0125, 0.0125, 0.05 / 6])
    # the interval a reviewer reads: hard-beats-debiased (+1.21 ± 0.86 at 95 %, 5 of 5 positive)
    hbd = [0.0121 + 0.00695 * z for z in (1.2, -1.1, 0.3, 0.5, -0.9)]
    others = {f"o{i}": ClaimTest("superiority") for i in range(12)}  # planned, not run: 24 hypotheses
    r = judge({"hbd": hbd}, {"hbd": ClaimTest("superiority", paper_effect=0.019), **others},
              planned=["hbd", *others])["hbd"]
    assert r.ci_low < 0 < r.mean - r.half_width  # the 95 % interval excludes 0, the Holm-level one does not
    assert r.outcome != REPRODUCED and r.levels["for"] == pytest.approx(0.05 / 27)
