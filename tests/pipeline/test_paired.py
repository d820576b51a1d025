"""Paired differences of a comparison, and the accuracy-vs-β series of its figure."""

from __future__ import annotations

import math

import pytest

from hardneg.pipeline.config import load_config, with_overrides
from hardneg.pipeline.groups import beta_series
from hardneg.pipeline.paired import format_paired, paired_differences


def test_paired_difference_is_the_mean_and_std_of_seedwise_differences() -> None:
    values = {
        "base": {0: {"acc": 0.60, "knn": 0.5}, 1: {"acc": 0.70}, 2: {"acc": 0.65}},
        "new": {0: {"acc": 0.62, "knn": 0.4}, 1: {"acc": 0.69}, 2: {"acc": 0.70}, 7: {"acc": 0.99}},
    }
    out = paired_differences(values, baseline="base", metrics=["acc", "knn", "absent"])
    d = [0.02, -0.01, 0.05]  # seed 7 has no baseline run: not paired
    mean = sum(d) / 3
    std = math.sqrt(sum((x - mean) ** 2 for x in d) / 2)
    acc = out["new"]["acc"]
    assert acc[0] == pytest.approx(mean, abs=1e-12) and acc[1] == pytest.approx(std, abs=1e-12)
    assert (acc[2], acc[3]) == (2, 3)
    knn = out["new"]["knn"]  # one seed: a difference, no spread (NaN, not a zero-width interval)
    assert (knn.mean, knn.wins, knn.seeds) == (pytest.approx(-0.1), 0, 1) and math.isnan(knn.std)
    assert "absent" not in out["new"] and "base" not in out
    text = format_paired(out, baseline="base", metrics=["acc", "knn"])
    half = 4.302652729911275 * std / math.sqrt(3)  # t_{0.975, 2}
    lo, hi = acc.interval()
    assert (lo, hi) == pytest.approx((mean - half, mean + half), abs=1e-9)
    assert math.isnan(out["new"]["knn"].interval()[0])
    cell = f"+2.00 ± 3.00, CI [{100 * lo:+.2f}, {100 * hi:+.2f}] (2/3)"
    assert f"| new | {cell} | -10.00 (one seed: no interval) |" in text


def test_paired_difference_needs_a_known_baseline() -> None:
    with pytest.raises(ValueError, match="baseline must be one of"):
        paired_differences({"a": {}}, baseline="b", metrics=["acc"])


def test_beta_series_places_uniform_at_zero_and_groups_by_objective() -> None:
    base = load_config("graphs")
    configs = {
        "infograph": with_overrides(base, {"loss.negatives": {"name": "uniform"}}),
        "hard-2": with_overrides(base, {"loss.negatives": {"name": "hard", "beta": 2.0, "rescale": True}}),
        "ot": with_overrides(base, {"loss.negatives": {"name": "ot", "epsilon": 1.0}}),
        "debiased": with_overrides(base, {"loss.objective": {"name": "jsd", "tau_plus": 0.1},
                                          "loss.negatives": {"name": "uniform"}}),
    }
    table = {name: {"svm_cv": (0.5 + i / 10, 0.01)} for i, name in enumerate(configs)}
    series = beta_series(table, configs, "svm_cv")
    assert list(series.values()) == [[(0.0, 0.5, 0.01), (2.0, 0.6, 0.01)]]  # OT off-axis; debiased alone
    assert "tau_plus=0.0" in next(iter(series))
