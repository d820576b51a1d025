"""Claim statistics: p-values checked against hand-worked t statistics, Holm, verdicts, bad inputs.

Every t statistic below is worked out by hand (mean, sum of squared deviations, ``s² = Σ/(n−1)``,
``se = √(s²/n)``) and written as a literal; only the t distribution's tail comes from SciPy.
"""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import t as student_t

from hardneg.reproduce.statistics import (
    CONTRADICTED,
    EQUIVALENT,
    INCONCLUSIVE,
    NO_VERDICT_ONE_SEED,
    NO_VERDICT_ZERO_VARIANCE,
    NOT_EQUIVALENT,
    NOT_REPRODUCED,
    OUTCOMES,
    REPRODUCED,
    ClaimTest,
    against_pvalue,
    claim_pvalue,
    holm,
    holm_adjusted,
    judge,
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


def test_superiority_pvalue_is_the_one_sided_paired_t_test() -> None:
    assert T_UP == pytest.approx(10.9648198, rel=1e-7)
    p = student_t.sf(T_UP, 4)  # P(T_4 ≥ t)
    assert p == pytest.approx(1.96521e-4, rel=1e-5)
    assert claim_pvalue(SUP_UP, SUPERIORITY) == pytest.approx(p, rel=1e-12)
    assert against_pvalue(SUP_UP, SUPERIORITY) == pytest.approx(student_t.cdf(T_UP, 4), rel=1e-12)
    # the opposite data: the claim's p is the complement, the test against it is the small one
    down = [-d for d in SUP_UP]
    assert claim_pvalue(down, SUPERIORITY) == pytest.approx(1 - p, rel=1e-12)
    assert against_pvalue(down, SUPERIORITY) == pytest.approx(p, rel=1e-9)
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


def test_judge_superiority_verdicts() -> None:
    contradicted = [-d for d in SUP_UP]
    res = judge({"up": SUP_UP}, {"up": SUPERIORITY})["up"]
    p = student_t.sf(T_UP, 4)
    # a family of two: this claim's test and the one against it (p and 1 − p)
    assert res.outcome == res.verdict == REPRODUCED
    assert res.p_value == pytest.approx(p, rel=1e-12) and res.p_holm == pytest.approx(2 * p, rel=1e-12)
    assert res.p_against_holm == pytest.approx(1 - p, rel=1e-12)
    assert (res.mean, res.n, res.wins) == (pytest.approx(0.023), 5, 5)
    assert res.std == pytest.approx(math.sqrt(22e-6))
    se = math.sqrt(22e-6 / 5)
    assert res.half_width == pytest.approx(student_t.ppf(0.975, 4) * se)
    assert res.interval == (pytest.approx(0.023 - student_t.ppf(0.95, 4) * se), math.inf)

    assert judge({"c": contradicted}, {"c": SUPERIORITY})["c"].verdict == CONTRADICTED
    # the budget resolves ±0.0020 < 0.015: a real "not reproduced"
    null = judge({"n": SUP_NULL}, {"n": SUPERIORITY})["n"]
    assert null.verdict == NOT_REPRODUCED and null.wins == 3
    assert null.half_width == pytest.approx(2.776445105 * SE_NULL) and null.half_width < 0.015
    # ±0.0994 > 0.015: this budget could not have seen the paper's effect
    wide = judge({"w": SUP_WIDE}, {"w": SUPERIORITY})["w"]
    assert wide.outcome == INCONCLUSIVE and wide.verdict == "inconclusive at ±0.0994"
    assert wide.half_width == pytest.approx(4.302652730 * SE_WIDE)
    # no paper effect to compare with: plain "not reproduced"
    assert judge({"w": SUP_WIDE}, {"w": ClaimTest("superiority")})["w"].verdict == NOT_REPRODUCED


def test_judge_equivalence_verdicts() -> None:
    res = judge({"e": EQ_CLOSE, "f": EQ_FAR, "w": EQ_WIDE}, dict.fromkeys("efw", EQUIVALENCE))
    close, far, wide = res["e"], res["f"], res["w"]
    assert close.outcome == EQUIVALENT and close.verdict == "reproduced (equivalent within ±0.01)"
    q = 2.015048373 * SE_CLOSE  # t_{0.95, 5}: the 1 − 2α = 90 % interval of TOST
    assert close.interval == (pytest.approx(5e-4 - q), pytest.approx(5e-4 + q))
    assert -0.01 < close.interval[0] and close.interval[1] < 0.01
    assert far.verdict == NOT_EQUIVALENT
    assert far.mean - far.half_width > 0.01  # the 95 % interval lies above +Δ
    assert wide.outcome == INCONCLUSIVE and wide.verdict == "inconclusive at ±0.0436"
    # the family: 6 hypotheses, the TOST ones smallest; hand-worked Holm multipliers
    p_close = max(student_t.sf((5e-4 + 0.01) / SE_CLOSE, 5), student_t.cdf((5e-4 - 0.01) / SE_CLOSE, 5))
    p_far = 2 * student_t.sf((0.03125 - 0.01) / SE_FAR, 3)
    assert close.p_holm == pytest.approx(6 * p_close, rel=1e-9)  # smallest of 6
    assert far.p_against_holm == pytest.approx(5 * p_far, rel=1e-9)  # second smallest


def test_judge_controls_the_family_wise_error() -> None:
    """A claim reproduced alone (2p = 0.0486 ≤ 0.05) is not once it shares α with three others."""
    p = student_t.sf(T_MODEST, 3)
    assert T_MODEST == pytest.approx(3.2204702, rel=1e-7) and p == pytest.approx(0.0242834, rel=1e-5)
    test = ClaimTest("superiority", paper_effect=0.01)
    alone = judge({"m": MODEST}, {"m": test})["m"]
    assert alone.verdict == REPRODUCED and alone.p_holm == pytest.approx(2 * p, rel=1e-12)
    # untestable claims spend no α: the family is still m = 2
    with_untested = judge(
        {"m": MODEST, "z": [0.01, 0.01, 0.01], "o": [0.03]},
        {"m": test, "z": SUPERIORITY, "o": EQUIVALENCE, "not run": SUPERIORITY},
    )
    assert with_untested["m"].p_holm == pytest.approx(2 * p, rel=1e-12)
    assert with_untested["z"].verdict == NO_VERDICT_ZERO_VARIANCE
    assert with_untested["o"].verdict == NO_VERDICT_ONE_SEED
    # four testable claims, eight hypotheses; sorted: p_eq (×8), p_up (×7), p (×6): 0.146 > 0.05
    family = judge(
        {"up": SUP_UP, "eq": EQ_CLOSE, "m": MODEST, "wide": SUP_WIDE},
        {"up": SUPERIORITY, "eq": EQUIVALENCE, "m": test, "wide": SUPERIORITY},
    )
    p_eq = student_t.cdf((5e-4 - 0.01) / SE_CLOSE, 5)
    p_up = student_t.sf(T_UP, 4)
    assert family["eq"].p_holm == pytest.approx(8 * p_eq, rel=1e-9)
    assert family["up"].p_holm == pytest.approx(7 * p_up, rel=1e-9)
    assert family["m"].p_holm == pytest.approx(6 * p, rel=1e-9)
    assert family["wide"].p_holm == 1.0  # 5 × 0.354, capped
    assert [r.outcome for r in family.values()] == [REPRODUCED, EQUIVALENT, INCONCLUSIVE, INCONCLUSIVE]
    assert family["m"].verdict == "inconclusive at ±0.0109"  # t_{0.975,3} se = 0.01087 > 0.01
    assert list(family) == ["up", "eq", "m", "wide"]


@pytest.mark.parametrize("diffs", [[0.01, 0.01, 0.01], [0.4 - 0.3, 0.8 - 0.7, 0.6 - 0.5]])
def test_judge_gives_no_verdict_for_zero_variance_or_one_seed(diffs: list[float]) -> None:
    for test in (SUPERIORITY, EQUIVALENCE):
        res = judge({"z": diffs, "o": diffs[:1]}, {"z": test, "o": test})
        zero, one = res["z"], res["o"]
        assert zero.verdict == NO_VERDICT_ZERO_VARIANCE and one.verdict == NO_VERDICT_ONE_SEED
        assert zero.n == 3 and zero.wins == 3 and zero.std < 1e-15
        assert one.n == 1 and math.isnan(one.std) and one.mean == diffs[0] and one.wins == 1
        for r in (zero, one):
            assert math.isnan(r.p_value) and math.isnan(r.p_holm) and math.isnan(r.half_width)
            assert math.isnan(r.p_against) and math.isnan(r.interval[0])


def test_every_outcome_is_a_distinct_constant() -> None:
    assert len(set(OUTCOMES)) == len(OUTCOMES) == 8
    verdicts = {REPRODUCED, NOT_REPRODUCED, CONTRADICTED, EQUIVALENT, NOT_EQUIVALENT, INCONCLUSIVE}
    assert verdicts < set(OUTCOMES)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kind": "superior"}, r"kind must be one of \['superiority', 'equivalence'\], got 'superior'"),
        ({"kind": "equivalence"}, r"margin must be a finite number > 0 for an equivalence claim, got None"),
        ({"kind": "equivalence", "margin": -0.01}, r"margin must be .* > 0 \(or None\), got -0.01"),
        ({"kind": "equivalence", "margin": math.nan}, r"margin must be a finite number > 0 .*got nan"),
        ({"kind": "equivalence", "margin": True}, r"margin must be a finite number > 0 .*got True"),
        ({"kind": "superiority", "margin": 0.01}, r"margin must be None for a superiority claim.*got 0.01"),
        ({"kind": "superiority", "paper_effect": -0.01}, r"paper_effect must be > 0 for a .*-0.01"),
        ({"kind": "superiority", "paper_effect": math.inf}, r"paper_effect must be a finite number.*inf"),
        ({"kind": "equivalence", "margin": 0.01, "paper_effect": 0.02},
         r"paper_effect must lie inside \(−margin, margin\) = \(−0.01, 0.01\).*got 0.02"),
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
