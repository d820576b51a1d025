"""Nested SVM cross-validation (InfoGraph / HCL protocol) against scikit-learn's own nested CV."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from sklearn.datasets import make_blobs
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_score, cross_validate
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from hardneg.evaluate.linear import LinearReadout
from hardneg.evaluate.svm_cv import (
    DEFAULT_CS,
    CVResult,
    SVMReadout,
    cross_validated_accuracy,
    repeated_cv,
)


def _blobs(n: int = 120, d: int = 4, centers: int = 3, std: float = 0.5, seed: int = 0):
    return make_blobs(n_samples=n, n_features=d, centers=centers, cluster_std=std, random_state=seed)


def _noisy(n: int = 100, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Overlapping classes, so that C and the split matter."""
    return make_blobs(n_samples=n, n_features=3, centers=2, cluster_std=3.0, random_state=seed)


def test_separable_blobs_give_accuracy_one() -> None:
    X, y = _blobs()
    res = cross_validated_accuracy(torch.as_tensor(X, dtype=torch.float32), torch.as_tensor(y))
    assert isinstance(res, CVResult)
    assert res.fold_accuracies == (1.0,) * 10 and res.mean == 1.0 and res.std == 0.0
    assert len(res.chosen_C) == 10 and set(res.chosen_C) <= set(DEFAULT_CS)
    assert (res.readout, res.folds, res.inner_folds, res.seed) == ("svm", 10, 5, 0)
    assert str(res) == "1.000 ± 0.000 (svm, 10-fold, C chosen by 5-fold inner CV)"
    log = cross_validated_accuracy(X, y, readout="logistic", folds=3, inner_folds=3)
    assert log.mean == 1.0 and str(log).endswith("(logistic, 3-fold, C chosen by 3-fold inner CV)")
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.mean = 0.5  # type: ignore[misc]


def test_random_labels_near_chance() -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 5))
    y = rng.integers(0, 2, size=200)
    res = cross_validated_accuracy(X, y, folds=5, inner_folds=3)
    assert 0.35 < res.mean < 0.65
    log = cross_validated_accuracy(X, y, readout="logistic", folds=5, inner_folds=3)
    assert 0.35 < log.mean < 0.65


@pytest.mark.parametrize("standardize", [True, False])
def test_fold_for_fold_identical_to_sklearn_nested_cv(standardize: bool) -> None:
    X, y = _noisy(n=100, seed=1)
    X = X * np.array([1.0, 10.0, 0.1])  # unequal scales: standardisation changes the result
    seed = 3
    res = cross_validated_accuracy(X, y, folds=5, inner_folds=3, seed=seed, standardize=standardize)
    steps = [("scaler", StandardScaler()), ("svc", SVC())] if standardize else [("svc", SVC())]
    inner = StratifiedKFold(3, shuffle=True, random_state=seed)
    search = GridSearchCV(Pipeline(steps), {"svc__C": list(DEFAULT_CS)}, cv=inner, scoring="accuracy")
    outer = StratifiedKFold(5, shuffle=True, random_state=seed)
    ref = cross_validate(search, X, y, cv=outer, scoring="accuracy", return_estimator=True)
    np.testing.assert_array_equal(np.array(res.fold_accuracies), ref["test_score"])
    assert res.chosen_C == tuple(float(e.best_params_["svc__C"]) for e in ref["estimator"])
    assert res.mean == pytest.approx(ref["test_score"].mean(), abs=1e-15)
    assert res.std == pytest.approx(ref["test_score"].std(), abs=1e-15)
    # the fold assignment is the outer split's
    for k, (_, test) in enumerate(outer.split(X, y)):
        assert {res.fold_assignment[i] for i in test} == {k}


@pytest.mark.slow
def test_logistic_identical_to_sklearn_nested_cv() -> None:
    X, y = _noisy(n=80, seed=2)
    res = cross_validated_accuracy(X, y, readout="logistic", folds=4, inner_folds=3, seed=5)
    inner = StratifiedKFold(3, shuffle=True, random_state=5)
    search = GridSearchCV(LinearReadout(), {"C": list(DEFAULT_CS)}, cv=inner, scoring="accuracy")
    ref = cross_val_score(search, X, y, cv=StratifiedKFold(4, shuffle=True, random_state=5))
    np.testing.assert_array_equal(np.array(res.fold_accuracies), ref)


def test_inner_search_never_sees_the_test_fold(monkeypatch: pytest.MonkeyPatch) -> None:
    """Spy on every fit: the rows it receives are exactly the outer training part."""
    X, y = _noisy(n=60, seed=0)
    ids = np.arange(60, dtype=np.float64)
    Xid = np.c_[X, ids]  # a column identifying the row
    seen: list[set[int]] = []
    predicted: list[set[int]] = []
    fit, predict = SVMReadout.fit, SVMReadout.predict

    def spy_fit(self: SVMReadout, X_: np.ndarray, y_: np.ndarray) -> SVMReadout:
        seen.append({int(v) for v in np.asarray(X_)[:, -1]})
        return fit(self, X_, y_)

    def spy_predict(self: SVMReadout, X_: np.ndarray) -> np.ndarray:
        predicted.append({int(v) for v in np.asarray(X_)[:, -1]})
        return predict(self, X_)

    monkeypatch.setattr(SVMReadout, "fit", spy_fit)
    monkeypatch.setattr(SVMReadout, "predict", spy_predict)
    res = cross_validated_accuracy(Xid, y, folds=5, inner_folds=3, seed=7)
    tests = [set(test.tolist()) for _, test in StratifiedKFold(5, shuffle=True, random_state=7).split(Xid, y)]
    assert len(seen) == 5 and len(predicted) == 5
    for k in range(5):
        assert seen[k].isdisjoint(tests[k])
        assert seen[k] | tests[k] == set(range(60))
        assert predicted[k] == tests[k]
        assert {i for i in range(60) if res.fold_assignment[i] == k} == tests[k]


def test_leaking_the_test_fold_would_change_the_chosen_C() -> None:
    """Data where the test points alone would pick a different C: ours picks the training-only C."""
    X, y = _noisy(n=100, seed=4)
    seed = 0
    res = cross_validated_accuracy(X, y, folds=5, inner_folds=5, seed=seed)
    outer = list(StratifiedKFold(5, shuffle=True, random_state=seed).split(X, y))
    differs = 0
    for k, (train, _) in enumerate(outer):
        honest = SVMReadout(seed=seed).fit(X[train], y[train]).C_
        leaky = SVMReadout(seed=seed).fit(X, y).C_  # a search that also saw the test fold
        assert res.chosen_C[k] == honest
        differs += honest != leaky
    assert differs > 0  # the check above would catch a leak on this data


def test_deterministic_for_a_seed_and_different_across_seeds() -> None:
    X, y = _noisy(n=60, seed=0)
    a = cross_validated_accuracy(X, y, seed=11, folds=5, inner_folds=3)
    b = cross_validated_accuracy(X, y, seed=11, folds=5, inner_folds=3)
    c = cross_validated_accuracy(X, y, seed=12, folds=5, inner_folds=3)
    assert a == b
    assert a.fold_assignment != c.fold_assignment
    assert a.fold_accuracies != c.fold_accuracies
    runs = repeated_cv(X, y, seeds=(11, 12), folds=5, inner_folds=3)
    assert runs[0] == a and runs[1] == c


def test_svm_readout_estimator_api() -> None:
    from sklearn.base import clone

    X, y = _blobs(n=60, centers=2)
    clf = SVMReadout(Cs=(0.1, 1.0, 10.0), inner_folds=3, kernel="linear", seed=1)
    assert clone(clf).get_params() == clf.get_params()
    with pytest.raises(NotFittedError):
        clf.predict(X)
    clf.fit(X, y)
    assert clf.C_ in (0.1, 1.0, 10.0) and clf.inner_scores_.shape == (3,)
    assert clf.score(X, y) == 1.0 and clf.classes_.tolist() == [0, 1]
    assert clf.decision_function(X).shape == (60,)
    assert clf.search_.best_estimator_.named_steps["svc"].kernel == "linear"
    with pytest.raises(ValueError, match="X must have 4 features, got 3"):
        clf.predict(X[:, :3])
    # ties go to the first C: on perfectly separable data every C of a small grid scores 1.0
    assert SVMReadout(Cs=(10.0, 100.0), inner_folds=3).fit(X, y).C_ == 10.0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"folds": 1}, r"folds must be an int >= 2, got 1"),
        ({"inner_folds": 1.5}, r"inner_folds must be an int >= 2, got 1.5"),
        ({"readout": "rf"}, r"readout must be one of \('svm', 'logistic'\), got 'rf'"),
        ({"Cs": ()}, r"Cs must be a non-empty sequence"),
        ({"Cs": (1.0, -1.0)}, r"Cs must contain only positive finite floats, got -1.0"),
        ({"Cs": (1.0, float("nan"))}, r"Cs must contain only positive finite floats, got nan"),
        ({"seed": -1}, r"seed must be an int >= 0, got -1"),
        ({"kernel": "cubic"}, r"kernel must be one of .* got 'cubic'"),
    ],
)
def test_parameter_errors_name_parameter_and_value(kwargs: dict, match: str) -> None:
    X, y = _blobs(n=60)
    with pytest.raises(ValueError, match=match):
        cross_validated_accuracy(X, y, **kwargs)


def test_data_errors() -> None:
    X, y = _blobs(n=60)
    with pytest.raises(ValueError, match="at least 2 classes, got only \\[0\\]"):
        cross_validated_accuracy(X, np.zeros(60, dtype=int))
    small = np.r_[np.zeros(55, dtype=int), np.ones(5, dtype=int)]
    with pytest.raises(ValueError, match="folds=10 exceeds the smallest class count 5 \\(class 1\\)"):
        cross_validated_accuracy(X, small)
    # 5 outer folds leave 4 samples of class 1 in each training part: too few for 5 inner folds
    with pytest.raises(ValueError, match=r"inner_folds=5 exceeds the smallest class count 4 .*outer fold 0"):
        cross_validated_accuracy(X, small, folds=5)
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="features must contain only finite values"):
        cross_validated_accuracy(bad, y)
    with pytest.raises(ValueError, match="labels must have shape \\(60,\\)"):
        cross_validated_accuracy(X, y[:-1])
    with pytest.raises(ValueError, match="features must have shape \\(N, d\\)"):
        cross_validated_accuracy(X[:, 0], y)
    with pytest.raises(ValueError, match="inner_folds=5 exceeds the smallest class count 2"):
        SVMReadout().fit(X[:12], np.r_[np.zeros(10), np.ones(2)])
    with pytest.raises(ValueError, match="seeds must be a non-empty sequence"):
        repeated_cv(X, y, seeds=())
    with pytest.raises(ValueError, match="not seed="):
        repeated_cv(X, y, seed=1)


def test_string_labels() -> None:
    X, y = _blobs(n=60, centers=2)
    names = np.array(["inactive", "active"])[y]
    res = cross_validated_accuracy(X, names, folds=3, inner_folds=3)
    assert res.mean == 1.0


def test_readouts_equal_one_call_per_readout_and_silence_convergence_warnings() -> None:
    import warnings

    from hardneg.evaluate.svm_cv import cross_validated_accuracy, cross_validated_readouts

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 5))
    y = (X[:, 0] + 0.5 * rng.normal(size=60) > 0).astype(int)
    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # one escaping would fail the test
        both = cross_validated_readouts(X, y, folds=3, inner_folds=2, seed=4)
    assert list(both) == ["svm", "logistic"]
    for readout, cv in both.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            alone = cross_validated_accuracy(X, y, readout=readout, folds=3, inner_folds=2, seed=4)
        assert cv.fold_accuracies == alone.fold_accuracies
