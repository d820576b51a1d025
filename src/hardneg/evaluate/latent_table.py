"""The evaluation grid of Arora et al. (ICML 2019), Table 1: three classifiers × four task families.

Classifiers on a frozen representation ``f`` (rows of the table's column groups):

* ``tr`` — a trained C-way linear output layer (:class:`~hardneg.evaluate.LinearReadout`, a
  multinomial logistic regression on standardised features);
* ``mu`` — the mean classifier ``argmax_c μ_cᵀ f(x)`` with ``μ_c`` the mean of *all* training
  points of class ``c`` (Def. 2.1; L2-normalised features, the geometry cosine-trained encoders
  use);
* ``mu{s}`` — the same with each ``μ_c`` from ``s`` labelled training points only (their μ-5).

Tasks (the table's rows): ``avg{k+1}`` — the average (k+1)-way accuracy over tasks of k+1 distinct
classes (Def. 2.2, uniform over the classes with test points; a task restricts the classifier's
C scores to its own columns, so ``tr`` is the C-way layer restricted, not one classifier trained per
task); ``top{r}`` — full C-way classification, correct when the true class is among the r best
scores (not covered by the theory).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from hardneg.evaluate.arrays import as_features, as_labels
from hardneg.evaluate.few_labels import few_shot_indices

__all__ = ["few_shot_indices", "latent_class_table", "top_r_accuracy"]


def top_r_accuracy(scores: np.ndarray, label_index: np.ndarray, r: int) -> float:
    """Fraction of rows whose true column is among the ``r`` highest scores (ties broken against it).

    >>> top_r_accuracy(np.array([[0.1, 0.9, 0.5], [0.7, 0.2, 0.1]]), np.array([2, 0]), 1)
    0.5
    >>> top_r_accuracy(np.array([[0.1, 0.9, 0.5], [0.7, 0.2, 0.1]]), np.array([2, 0]), 2)
    1.0
    """
    if not (isinstance(r, int) and r >= 1):
        raise ValueError(f"r must be a positive int, got {r!r}")
    scores = np.asarray(scores, dtype=np.float64)
    own = scores[np.arange(scores.shape[0]), label_index]
    rank = (scores >= own[:, None]).sum(axis=1)  # 1 = strictly best; ties count against the point
    return float(np.mean(rank <= r))


def latent_class_table(
    train_features: Any,
    train_labels: Any,
    test_features: Any,
    test_labels: Any,
    *,
    shots: int = 5,
    ks: Sequence[int] = (1, 9),
    tops: Sequence[int] = (1, 10),
    num_tasks: int | None = 500,
    seed: int = 0,
    linear_C: float = 1.0,
) -> dict[str, float]:
    """Arora et al.'s Table 1 for one representation: ``{clf}_{task}`` accuracies in [0, 1].

    Args:
        train_features, train_labels: ``(N, d)`` representations and labels that fit the
            classifiers (every test class must occur here).
        test_features, test_labels: ``(M, d)`` and ``(M,)`` evaluation points.
        shots: labelled points per class of the few-shot mean classifier (μ-5: 5).
        ks: negative classes of the average tasks (``k = 1`` → ``avg2``, ``k = 9`` → ``avg10``).
        tops: r of the top-r multiclass accuracies.
        num_tasks: sampled tasks per k (``None``: all of them).
        seed: seed of the task sampling and of the few-shot draw.
        linear_C: inverse L2 strength of the trained layer.

    Returns:
        Keys ``tr_avg2``, ``mu_avg2``, ``mu5_avg2``, …, ``tr_top1``, …, ``mu5_top10``.

    >>> rng = np.random.default_rng(0)
    >>> y = np.repeat(np.arange(12), 10)
    >>> X = np.eye(12)[y] * 3 + rng.normal(size=(120, 12))
    >>> t = latent_class_table(X, y, X, y, num_tasks=50)
    >>> sorted(t)[:3], t["mu_avg2"] > 0.9
    (['mu5_avg10', 'mu5_avg2', 'mu5_top1'], True)
    """
    from hardneg.evaluate.kwise import kwise_from_scores
    from hardneg.evaluate.linear import LinearReadout
    from hardneg.evaluate.mean_classifier import MeanClassifier

    x_train = as_features(train_features, name="train_features")
    y_train = as_labels(train_labels, n=x_train.shape[0], name="train_labels")
    x_test = as_features(test_features, name="test_features")
    y_test = as_labels(test_labels, n=x_test.shape[0], name="test_labels")
    classes = np.unique(y_train)
    unknown = np.setdiff1d(np.unique(y_test), classes)
    if unknown.size:
        raise ValueError(f"test_labels contain classes absent from train_labels: {unknown.tolist()}")
    for r in tops:
        if not (isinstance(r, int) and 1 <= r <= classes.size):
            raise ValueError(f"tops must hold ints in [1, {classes.size}] (the classes), got {r!r}")
    test_idx = np.searchsorted(classes, y_test)
    few = few_shot_indices(y_train, shots, seed=seed)
    scores = {
        "tr": LinearReadout(C=linear_C).fit(x_train, y_train).decision_function(x_test),
        "mu": MeanClassifier(normalize=True).fit(x_train, y_train).decision_function(x_test),
        f"mu{shots}": MeanClassifier(normalize=True)
        .fit(x_train[few], y_train[few])
        .decision_function(x_test),
    }
    table: dict[str, float] = {}
    for name, s in scores.items():
        if s.ndim == 1:  # scikit-learn's binary decision function: one column
            s = np.stack([-s, s], axis=1)
        for k in ks:
            res = kwise_from_scores(s, test_idx, k=int(k), num_tasks=num_tasks, seed=seed)
            table[f"{name}_avg{int(k) + 1}"] = res.accuracy
        for r in tops:
            table[f"{name}_top{r}"] = top_r_accuracy(s, test_idx, r)
    return table
