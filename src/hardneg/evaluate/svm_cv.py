"""The SVM protocol of graph contrastive papers: nested, seeded cross-validation of a frozen embedding.

InfoGraph (Sun et al., ICLR 2020, §4.1) and HCL (Robinson et al., ICLR 2021, App. D.2, which reuses
InfoGraph's evaluation code) score frozen graph embeddings ``h: (N, d)`` with labels ``y: (N,)`` by

    acc = (1 / K) Σ_{k=1..K} acc(f_k, test fold k),      K = 10,

over a stratified K-fold split, where ``f_k`` is an SVM (``SVC``, RBF kernel) whose penalty
``C ∈ {10⁻³, 10⁻², …, 10³}`` is chosen by an inner 5-fold cross-validation (``GridSearchCV``,
accuracy) on the *training part of fold k only*, then refitted on that whole training part. The
reported number is the mean over folds, ± the standard deviation over folds.

Differences from the released code, all deliberate:

* folds are seeded: the outer split is ``StratifiedKFold(folds, shuffle=True, random_state=seed)``
  and the inner one ``StratifiedKFold(inner_folds, shuffle=True, random_state=seed)`` (the released
  code shuffles the outer split with ``random_state=None`` and uses ``GridSearchCV(cv=5)``, i.e. an
  unshuffled inner split), so a number can be reproduced exactly;
* features are standardised inside each fit (``Pipeline(StandardScaler, SVC)``, scaler fitted on the
  training data of that fit) unless ``standardize=False``, which is the released protocol; the RBF
  kernel's default ``gamma = 1 / (d · Var(h))`` already rescales globally, standardisation also
  equalises the dimensions;
* ties in the inner accuracy go to the first ``C`` of ``Cs`` (``GridSearchCV``'s rule), i.e. to the
  most regularised one for the ascending default grid.

``std`` is the population standard deviation over folds (``ddof = 0``, ``np.std`` as in the
released code).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

from hardneg.evaluate.arrays import as_features, as_labels

__all__ = [
    "DEFAULT_CS",
    "CVResult",
    "SVMReadout",
    "cross_validated_accuracy",
    "cross_validated_readouts",
    "repeated_cv",
]

DEFAULT_CS: tuple[float, ...] = (1e-3, 1e-2, 1e-1, 1.0, 1e1, 1e2, 1e3)
_KERNELS = ("rbf", "linear", "poly", "sigmoid")
_READOUTS = ("svm", "logistic")


def _check_int(name: str, value: Any, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
    return int(value)


def _check_cs(Cs: Any) -> tuple[float, ...]:
    if isinstance(Cs, str | bytes) or not isinstance(Cs, Sequence | np.ndarray):
        raise ValueError(f"Cs must be a non-empty sequence of positive finite floats, got {Cs!r}")
    values = tuple(Cs)
    if not values:
        raise ValueError("Cs must be a non-empty sequence of positive finite floats, got an empty sequence")
    for c in values:
        numeric = not isinstance(c, bool) and isinstance(c, int | float | np.number)
        if not (numeric and math.isfinite(c) and c > 0):
            raise ValueError(f"Cs must contain only positive finite floats, got {c!r} in Cs={values!r}")
    return tuple(float(c) for c in values)


def _smallest_class(labels: np.ndarray) -> tuple[Any, int]:
    classes, counts = np.unique(labels, return_counts=True)
    i = int(np.argmin(counts))
    return classes[i].item() if isinstance(classes[i], np.generic) else classes[i], int(counts[i])


def _check_classes(labels: np.ndarray, *, n_splits: int, split_name: str, where: str) -> None:
    classes = np.unique(labels)
    if classes.size < 2:
        raise ValueError(f"labels must contain at least 2 classes{where}, got only {classes.tolist()!r}")
    cls, count = _smallest_class(labels)
    if n_splits > count:
        raise ValueError(
            f"{split_name}={n_splits} exceeds the smallest class count {count} (class {cls!r}){where}: "
            f"a stratified split into {n_splits} folds needs at least {n_splits} samples of every class"
        )


def _inner_search(estimator: Any, param: str, Cs: tuple[float, ...], inner_folds: int, seed: int) -> Any:
    """``GridSearchCV`` over ``param ∈ Cs`` with a seeded, shuffled stratified inner split (accuracy)."""
    from sklearn.model_selection import GridSearchCV, StratifiedKFold

    inner = StratifiedKFold(n_splits=inner_folds, shuffle=True, random_state=seed)
    return GridSearchCV(estimator, {param: list(Cs)}, cv=inner, scoring="accuracy", refit=True)


class SVMReadout(ClassifierMixin, BaseEstimator):
    """SVM whose ``C`` is chosen by an inner stratified cross-validation on the data given to ``fit``.

    ``fit(X, y)`` runs ``GridSearchCV(Pipeline(StandardScaler, SVC(kernel)), {C: Cs})`` with
    ``StratifiedKFold(inner_folds, shuffle=True, random_state=seed)`` and accuracy, then refits the
    best ``C`` on all of ``X`` (InfoGraph, Sun et al., ICLR 2020; HCL, Robinson et al., ICLR 2021,
    App. D.2). Only ``X`` is ever seen by the search, so inside an outer split no test point leaks
    into the choice of ``C``.

    Args:
        Cs: candidate penalties (positive floats); ties go to the first.
        inner_folds: folds of the inner search (>= 2, <= smallest class count of ``y``).
        kernel: ``SVC`` kernel, one of ``"rbf"`` (default, as in the papers), ``"linear"``,
            ``"poly"``, ``"sigmoid"``; other ``SVC`` parameters are scikit-learn's defaults.
        seed: ``random_state`` of the inner split.
        standardize: standardise features (scaler fitted on the training data of each fit).

    Fitted attributes:
        classes_: ``(n_classes,)`` sorted labels.
        C_: the chosen ``C``.
        inner_scores_: ``(len(Cs),)`` mean inner-validation accuracy of each candidate.
        search_: the fitted ``GridSearchCV``; ``search_.best_estimator_`` is the refitted pipeline.
        n_features_in_: feature dimension.

    Example:
        >>> import numpy as np
        >>> X = np.r_[np.zeros((10, 2)), np.ones((10, 2))] + 0.01 * np.arange(20)[:, None]
        >>> y = np.r_[np.zeros(10), np.ones(10)]
        >>> clf = SVMReadout().fit(X, y)
        >>> clf.score(X, y), clf.C_ in DEFAULT_CS
        (1.0, True)
    """

    def __init__(
        self,
        *,
        Cs: Sequence[float] = DEFAULT_CS,
        inner_folds: int = 5,
        kernel: str = "rbf",
        seed: int = 0,
        standardize: bool = True,
    ) -> None:
        self.Cs = Cs
        self.inner_folds = inner_folds
        self.kernel = kernel
        self.seed = seed
        self.standardize = standardize

    def _pipeline(self) -> Any:
        from sklearn.pipeline import Pipeline
        from sklearn.preprocessing import StandardScaler
        from sklearn.svm import SVC

        steps: list[tuple[str, Any]] = [("svc", SVC(kernel=self.kernel))]
        if self.standardize:
            steps.insert(0, ("scaler", StandardScaler()))
        return Pipeline(steps)

    def fit(self, X: Any, y: Any) -> SVMReadout:
        """Choose ``C`` by inner CV on ``X: (N, d)``, ``y: (N,)`` (numpy or torch), then refit on all."""
        Cs = _check_cs(self.Cs)
        inner_folds = _check_int("inner_folds", self.inner_folds, minimum=2)
        seed = _check_int("seed", self.seed, minimum=0)
        if self.kernel not in _KERNELS:
            raise ValueError(f"kernel must be one of {_KERNELS}, got {self.kernel!r}")
        features = as_features(X)
        labels = as_labels(y, n=features.shape[0])
        _check_classes(labels, n_splits=inner_folds, split_name="inner_folds", where=" in the training data")
        self.search_ = _inner_search(self._pipeline(), "svc__C", Cs, inner_folds, seed).fit(features, labels)
        self.C_ = float(self.search_.best_params_["svc__C"])
        self.inner_scores_ = np.asarray(self.search_.cv_results_["mean_test_score"], dtype=np.float64)
        self.classes_ = self.search_.classes_
        self.n_features_in_ = features.shape[1]
        return self

    def _checked(self, X: Any) -> np.ndarray:
        if not hasattr(self, "search_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError("SVMReadout is not fitted yet; call fit(X, y) first")
        features = as_features(X)
        if features.shape[1] != self.n_features_in_:
            raise ValueError(f"X must have {self.n_features_in_} features, got {features.shape[1]}")
        return features

    def decision_function(self, X: Any) -> np.ndarray:
        """``SVC`` decision values: ``(N,)`` for two classes, ``(N, n_classes)`` (one-vs-rest) otherwise."""
        features = self._checked(X)
        return self.search_.decision_function(features)

    def predict(self, X: Any) -> np.ndarray:
        """Predicted labels ``(N,)``."""
        features = self._checked(X)
        return self.search_.predict(features)

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """Top-1 accuracy."""
        features = self._checked(X)
        labels = as_labels(y, n=features.shape[0])
        return float(np.average(self.predict(features) == labels, weights=sample_weight))


@dataclass(frozen=True)
class CVResult:
    """Outcome of :func:`cross_validated_accuracy`.

    Attributes:
        fold_accuracies: test accuracy of each outer fold, in fold order.
        chosen_C: ``C`` chosen by the inner search in each outer fold.
        readout: ``"svm"`` or ``"logistic"``.
        folds: number of outer folds.
        inner_folds: number of inner folds.
        seed: seed of both splits.
        fold_assignment: ``(N,)`` outer test fold of each sample (an audit trail of the split).
        mean: mean of ``fold_accuracies``.
        std: population standard deviation (``ddof = 0``) of ``fold_accuracies``.
    """

    fold_accuracies: tuple[float, ...]
    chosen_C: tuple[float, ...]
    readout: str
    folds: int
    inner_folds: int
    seed: int
    fold_assignment: tuple[int, ...] = field(repr=False)
    mean: float = field(init=False)
    std: float = field(init=False)

    def __post_init__(self) -> None:
        acc = np.asarray(self.fold_accuracies, dtype=np.float64)
        object.__setattr__(self, "mean", float(acc.mean()) if acc.size else math.nan)
        object.__setattr__(self, "std", float(acc.std()) if acc.size else math.nan)

    def __str__(self) -> str:
        return (
            f"{self.mean:.3f} ± {self.std:.3f} ({self.readout}, {self.folds}-fold, "
            f"C chosen by {self.inner_folds}-fold inner CV)"
        )


def cross_validated_accuracy(
    features: Any,
    labels: Any,
    *,
    readout: str = "svm",
    folds: int = 10,
    inner_folds: int = 5,
    Cs: Sequence[float] = DEFAULT_CS,
    seed: int = 0,
    standardize: bool = True,
    kernel: str = "rbf",
) -> CVResult:
    """Nested cross-validated accuracy of a readout on frozen features (InfoGraph / HCL SVM protocol).

    For each fold ``k`` of ``StratifiedKFold(folds, shuffle=True, random_state=seed)`` over
    ``(features, labels)``: fit the readout on the training part only, with ``C ∈ Cs`` chosen by
    ``StratifiedKFold(inner_folds, shuffle=True, random_state=seed)`` inside that training part,
    and record its accuracy on test fold ``k``. Identical, fold for fold, to
    ``cross_val_score(GridSearchCV(pipeline, {C: Cs}, cv=inner), features, labels, cv=outer)``.

    Args:
        features: ``(N, d)`` embeddings (numpy or torch; finite).
        labels: ``(N,)`` class labels (any hashable values; at least 2 classes).
        readout: ``"svm"`` (:class:`SVMReadout`, ``SVC`` with ``kernel``) or ``"logistic"``
            (:class:`~hardneg.evaluate.linear.LinearReadout`, multinomial logistic regression).
        folds: outer folds (>= 2, <= the smallest class count).
        inner_folds: inner folds (>= 2, <= the smallest class count of every outer training part).
        Cs: candidate penalties (positive floats).
        seed: ``random_state`` of the outer and the inner splits.
        standardize: standardise features inside each fit (``False`` = the released protocol).
        kernel: ``SVC`` kernel when ``readout="svm"``.

    Returns:
        :class:`CVResult`; ``str(result)`` reads e.g. ``"0.812 ± 0.034 (svm, 10-fold, C chosen by
        5-fold inner CV)"``.

    Example:
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> X = np.r_[rng.normal(0, 0.1, (20, 3)), rng.normal(3, 0.1, (20, 3))]
        >>> y = np.r_[np.zeros(20, int), np.ones(20, int)]
        >>> str(cross_validated_accuracy(X, y, folds=4, inner_folds=3))
        '1.000 ± 0.000 (svm, 4-fold, C chosen by 3-fold inner CV)'
    """
    from sklearn.model_selection import StratifiedKFold

    if readout not in _READOUTS:
        raise ValueError(f"readout must be one of {_READOUTS}, got {readout!r}")
    folds = _check_int("folds", folds, minimum=2)
    inner_folds = _check_int("inner_folds", inner_folds, minimum=2)
    seed = _check_int("seed", seed, minimum=0)
    Cs = _check_cs(Cs)
    if not isinstance(standardize, bool | np.bool_):
        raise ValueError(f"standardize must be a bool, got {standardize!r}")
    if readout == "svm" and kernel not in _KERNELS:
        raise ValueError(f"kernel must be one of {_KERNELS}, got {kernel!r}")
    X = as_features(features, name="features")
    y = as_labels(labels, n=X.shape[0], name="labels")
    _check_classes(y, n_splits=folds, split_name="folds", where="")

    outer = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    splits = list(outer.split(np.zeros((X.shape[0], 1)), y))
    for k, (train, _) in enumerate(splits):
        where = f" in the training part of outer fold {k}"
        _check_classes(y[train], n_splits=inner_folds, split_name="inner_folds", where=where)

    accuracies: list[float] = []
    chosen: list[float] = []
    assignment = np.empty(X.shape[0], dtype=np.int64)
    for k, (train, test) in enumerate(splits):
        assignment[test] = k
        if readout == "svm":
            model = SVMReadout(
                Cs=Cs, inner_folds=inner_folds, kernel=kernel, seed=seed, standardize=bool(standardize)
            ).fit(X[train], y[train])
            best_c = model.C_
        else:
            from hardneg.evaluate.linear import LinearReadout

            model = _inner_search(LinearReadout(standardize=bool(standardize)), "C", Cs, inner_folds, seed)
            model.fit(X[train], y[train])
            best_c = float(model.best_params_["C"])
        accuracies.append(float(np.mean(model.predict(X[test]) == y[test])))
        chosen.append(best_c)
    return CVResult(
        fold_accuracies=tuple(accuracies),
        chosen_C=tuple(chosen),
        readout=readout,
        folds=folds,
        inner_folds=inner_folds,
        seed=seed,
        fold_assignment=tuple(int(a) for a in assignment),
    )


def cross_validated_readouts(
    features: Any, labels: Any, *, readouts: Sequence[str] = ("svm", "logistic"), **kwargs: Any
) -> dict[str, CVResult]:
    """:func:`cross_validated_accuracy` of each readout on the same features and folds.

    The grid's largest C values may stop lbfgs at its iteration limit; those ConvergenceWarnings
    are expected by the protocol and silenced here. ``kwargs`` go to every call (folds, seed, …).
    """
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    out = {}
    for readout in readouts:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            out[readout] = cross_validated_accuracy(features, labels, readout=readout, **kwargs)
    return out


def repeated_cv(
    features: Any, labels: Any, *, seeds: Sequence[int] = (0, 1, 2), **kwargs: Any
) -> list[CVResult]:
    """:func:`cross_validated_accuracy` once per seed (fresh outer and inner splits each time).

    The spread of ``[r.mean for r in results]`` is the split-to-split variation of the protocol,
    which the released code's unseeded folds leave unreported. ``kwargs`` go to
    :func:`cross_validated_accuracy` (``seed`` is taken from ``seeds``).
    """
    if "seed" in kwargs:
        raise ValueError("repeated_cv takes seeds=..., not seed=...")
    if isinstance(seeds, str | bytes) or not isinstance(seeds, Sequence) or len(seeds) == 0:
        raise ValueError(f"seeds must be a non-empty sequence of ints, got {seeds!r}")
    return [cross_validated_accuracy(features, labels, seed=s, **kwargs) for s in seeds]
