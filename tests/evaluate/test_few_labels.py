"""The few-label linear readout (SimCLR's semi-supervised evaluation with a frozen encoder)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from hardneg.evaluate.few_labels import few_label_linear_accuracy, few_shot_indices


def _blobs(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    means = rng.normal(size=(4, 6)) * 2.0
    y = np.repeat(np.arange(4), 40)
    x = means[y] + rng.normal(size=(160, 6)) * 1.5
    yt = np.repeat(np.arange(4), 25)
    xt = means[yt] + rng.normal(size=(100, 6)) * 1.5
    return x, y, xt, yt


def test_draws_are_class_balanced_seeded_and_independent() -> None:
    y = np.repeat(np.arange(3), [10, 10, 2])
    few = few_shot_indices(y, 4, seed=3, draw=1)
    assert np.bincount(y[few]).tolist() == [4, 4, 2]  # all of the smaller class
    assert np.array_equal(few, few_shot_indices(y, 4, seed=3, draw=1))
    assert not np.array_equal(few, few_shot_indices(y, 4, seed=3, draw=2))
    # draw 0 is the 0.2 stream (Arora et al.'s mu-5 numbers unchanged)
    rng = np.random.default_rng([3, 0x5407, 4])
    old = np.sort(np.concatenate([rng.permutation(np.flatnonzero(y == c))[:4] for c in range(3)]))
    assert np.array_equal(few_shot_indices(y, 4, seed=3), old)


def test_the_accuracy_is_the_mean_of_independent_refits_by_scikit_learn() -> None:
    x, y, xt, yt = _blobs()
    res = few_label_linear_accuracy(x, y, xt, yt, shots=3, draws=4, seed=7)
    expected = []
    for draw in range(4):  # standardise on the draw, multinomial logistic regression, score on test
        few = few_shot_indices(y, 3, seed=7, draw=draw)
        scaler = StandardScaler().fit(x[few])
        clf = LogisticRegression(C=1.0, max_iter=1000).fit(scaler.transform(x[few]), y[few])
        expected.append(float((clf.predict(scaler.transform(xt)) == yt).mean()))
    assert res.accuracies == pytest.approx(tuple(expected), abs=0)
    assert res.accuracy == pytest.approx(np.mean(expected))
    assert res.std == pytest.approx(np.std(expected, ddof=1))
    # fewer labels never need more than the pool: all labels at shots >= class size is the full readout
    full = few_label_linear_accuracy(x, y, xt, yt, shots=40, draws=1)
    scaler = StandardScaler().fit(x)
    clf = LogisticRegression(max_iter=1000).fit(scaler.transform(x), y)
    assert full.accuracy == pytest.approx(float((clf.predict(scaler.transform(xt)) == yt).mean()))


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"shots": 0}, "shots must be a positive int, got 0"),
    ({"shots": 2, "draws": 0}, "draws must be an int >= 1, got 0"),
])
def test_bad_arguments_name_the_parameter(kwargs: dict, message: str) -> None:  # type: ignore[type-arg]
    x, y, xt, yt = _blobs()
    with pytest.raises(ValueError, match=message):
        few_label_linear_accuracy(x, y, xt, yt, **kwargs)


def test_the_readouts_section_adds_the_metric_and_its_column() -> None:
    from hardneg.modalities.readouts import ReadoutEval

    section = ReadoutEval(linear_shots=[5], shot_draws=3)
    assert section.readouts()["linear_shots"] == [5] and section.readouts()["shot_draws"] == 3
    assert section.table_metrics()[:2] == ("linear_top1", "linear5shot_top1")
    assert ReadoutEval().table_metrics() == ("linear_top1", "knn_top1", "knn_top5", "mean_top1")
