"""Average k-wise supervised accuracy and loss of the mean classifier (Arora et al., Arora et al. (ICML
2019)).

Definitions 2.1–2.2: a ``(k+1)``-way task ``T = {c_1, …, c_{k+1}}`` is a set of distinct classes
drawn from ``ρ^{k+1}`` conditioned on distinctness (``ρ`` = class prior). On ``T`` the mean
classifier scores ``g(x)_c = μ_cᵀ f(x)`` for ``c ∈ T`` and incurs, on a point ``(x, c)``,

* hinge loss ``ℓ(v) = max(0, 1 + max_i(−v_i))`` or
* logistic loss ``ℓ(v) = log₂(1 + Σ_i exp(−v_i))``,

with ``v = {g(x)_c − g(x)_{c'}}_{c' ≠ c}``. Points are drawn with ``D_T`` uniform over the task's
classes (the paper's main-text assumption), so a task's accuracy / loss is the *mean over its
classes* of the per-class averages. ``L^μ_sup(f)`` is the expectation over tasks; here it is a
Monte-Carlo average over ``num_tasks`` sampled tasks, or the exact weighted sum over all
``C(n, k+1)`` tasks when ``num_tasks=None``. Table 1 of the paper reports "avg-2" (binary,
``k = 1``) and "avg-10".
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from hardneg.evaluate.arrays import as_features, as_labels

__all__ = ["KWiseResult", "average_kwise_accuracy", "kwise_from_scores", "task_loss_and_accuracy"]

_MAX_EXACT_TASKS = 200_000


@dataclass(frozen=True)
class KWiseResult:
    """Average over tasks of the mean classifier's accuracy and loss."""

    accuracy: float
    loss: float
    num_tasks: int
    k: int
    loss_name: str


def _losses(margins: np.ndarray, loss: str) -> np.ndarray:
    """Per-point loss from ``v``: ``(n, k)`` differences ``g_c − g_{c'}``."""
    if loss == "hinge":
        return np.maximum(0.0, 1.0 + np.max(-margins, axis=1))
    # log2(1 + Σ exp(−v)) computed stably as logaddexp(0, logsumexp(−v)) / ln 2
    from scipy.special import logsumexp

    return np.logaddexp(0.0, logsumexp(-margins, axis=1)) / math.log(2.0)


def task_loss_and_accuracy(
    scores_by_class: list[np.ndarray], task: np.ndarray, *, loss: str = "logistic"
) -> tuple[float, float]:
    """Loss and accuracy of the mean classifier on one task (classes weighted uniformly).

    Args:
        scores_by_class: entry ``c`` holds the ``(n_c, n_classes)`` scores ``μ_{c'}ᵀ f(x)`` of
            the evaluation points of class ``c``.
        task: ``(k+1,)`` distinct class indices.

    Returns:
        ``(loss, accuracy)``; a point is correct when its class strictly beats every other
        class of the task (ties count as errors).
    """
    per_class_loss = []
    per_class_acc = []
    for pos, c in enumerate(task):
        rows = scores_by_class[c][:, task]  # (n_c, k+1)
        margins = rows[:, pos : pos + 1] - np.delete(rows, pos, axis=1)  # v: (n_c, k)
        per_class_loss.append(_losses(margins, loss).mean())
        per_class_acc.append((margins > 0).all(axis=1).mean())
    return float(np.mean(per_class_loss)), float(np.mean(per_class_acc))


def _sample_tasks(rho: np.ndarray, size: int, num_tasks: int, rng: np.random.Generator) -> list[np.ndarray]:
    """``num_tasks`` draws from ``ρ^{size}`` conditioned on distinct classes (sorted rows).

    A uniform ``ρ`` (over its support) is sampled directly without replacement, which is exactly
    the conditional law; otherwise draws are rejected until all classes differ.
    """
    support = np.flatnonzero(rho)
    p = rho[support] / rho[support].sum()
    if np.allclose(p, p[0]):
        return [np.sort(rng.choice(support, size=size, replace=False)) for _ in range(num_tasks)]
    tasks: list[np.ndarray] = []
    while len(tasks) < num_tasks:
        draw = np.sort(rng.choice(support, size=(4 * num_tasks, size), p=p), axis=1)
        ok = np.all(np.diff(draw, axis=1) != 0, axis=1)
        tasks.extend(draw[ok][: num_tasks - len(tasks)])
    return tasks


def average_kwise_accuracy(
    features: Any,
    labels: Any,
    *,
    k: int,
    num_tasks: int | None = 1000,
    seed: int = 0,
    loss: Literal["logistic", "hinge"] = "logistic",
    test_features: Any = None,
    test_labels: Any = None,
    class_prior: Literal["empirical", "uniform"] = "empirical",
) -> KWiseResult:
    """Average ``(k+1)``-way accuracy and loss of the mean classifier (Arora et al. Def. 2.2).

    Class means come from ``(features, labels)``; points are evaluated on
    ``(test_features, test_labels)`` when given, otherwise on the same data.

    Args:
        features: ``(N, d)`` representations (numpy or torch).
        labels: ``(N,)`` labels.
        k: number of negative classes; tasks have ``k + 1`` distinct classes (``k = 1``: binary).
        num_tasks: sampled tasks (``ρ^{k+1}`` conditioned on distinct classes, by rejection);
            ``None`` enumerates all ``C(n, k+1)`` tasks and weights each by ``Π_{c∈T} ρ(c)``
            (the exact expectation).
        seed: seed of the task sampling.
        loss: ``"logistic"`` or ``"hinge"``.
        class_prior: ``ρ``: ``"empirical"`` (class frequencies in ``labels``) or ``"uniform"``.

    Returns:
        :class:`KWiseResult` with mean accuracy and loss over tasks.

    Example:
        >>> import numpy as np
        >>> X = np.eye(3)[[0, 0, 1, 1, 2, 2]]
        >>> r = average_kwise_accuracy(X, [0, 0, 1, 1, 2, 2], k=1, num_tasks=None)
        >>> r.accuracy, r.num_tasks
        (1.0, 3)
    """
    from hardneg.evaluate.mean_classifier import MeanClassifier

    if not (isinstance(k, int) and k >= 1):
        raise ValueError(f"k must be a positive int (tasks have k + 1 classes), got {k!r}")
    if num_tasks is not None and not (isinstance(num_tasks, int) and num_tasks >= 1):
        raise ValueError(f"num_tasks must be a positive int or None, got {num_tasks!r}")
    if loss not in ("logistic", "hinge"):
        raise ValueError(f"loss must be one of ['hinge', 'logistic'], got {loss!r}")
    if class_prior not in ("empirical", "uniform"):
        raise ValueError(f"class_prior must be one of ['empirical', 'uniform'], got {class_prior!r}")
    if (test_features is None) != (test_labels is None):
        raise ValueError("test_features and test_labels must be given together")

    train_x = as_features(features, name="features")
    train_y = as_labels(labels, n=train_x.shape[0], name="labels")
    clf = MeanClassifier().fit(train_x, train_y)
    n_classes = len(clf.classes_)
    if k + 1 > n_classes:
        raise ValueError(f"k must satisfy k + 1 <= number of classes ({n_classes}), got k={k}")
    if test_features is None:
        eval_x, eval_y = train_x, train_y
    else:
        eval_x = as_features(test_features, name="test_features")
        eval_y = as_labels(test_labels, n=eval_x.shape[0], name="test_labels")
    unknown = np.setdiff1d(np.unique(eval_y), clf.classes_)
    if unknown.size:
        raise ValueError(f"test_labels contain classes absent from labels: {unknown.tolist()}")
    eval_idx = np.searchsorted(clf.classes_, eval_y)
    scores = clf.decision_function(eval_x)
    if class_prior == "empirical":
        rho = np.bincount(np.searchsorted(clf.classes_, train_y), minlength=n_classes) / len(train_y)
    else:
        rho = np.full(n_classes, 1.0 / n_classes)
    return kwise_from_scores(scores, eval_idx, k=k, num_tasks=num_tasks, seed=seed, loss=loss, rho=rho)


def kwise_from_scores(
    scores: np.ndarray,
    label_index: np.ndarray,
    *,
    k: int,
    num_tasks: int | None = 1000,
    seed: int = 0,
    loss: Literal["logistic", "hinge"] = "logistic",
    rho: np.ndarray | None = None,
) -> KWiseResult:
    """Average ``(k+1)``-way accuracy and loss of *any* classifier's class scores (Arora et al. Def. 2.2).

    A task ``T`` restricts the scores ``(N, C)`` to its columns: a point of class ``c ∈ T`` is
    correct when ``scores[c]`` strictly beats the other columns of ``T``. With the mean
    classifier's scores ``μ_cᵀ f(x)`` this is :func:`average_kwise_accuracy`; with a trained
    C-way output layer it is Arora et al.'s "Tr" column of Table 1.

    Args:
        scores: ``(N, C)`` class scores of the evaluation points.
        label_index: ``(N,)`` column of each point's class (0 ≤ index < C).
        rho: ``(C,)`` class prior of the tasks (``None``: uniform over the classes with points).

    >>> s = np.array([[2.0, 1.0, 0.0], [0.0, 1.0, 3.0], [0.0, 0.0, 1.0]])
    >>> r = kwise_from_scores(s, np.array([0, 1, 2]), k=1, num_tasks=None)
    >>> round(r.accuracy, 4)  # task {0,1}: both right; {0,2}: both; {1,2}: class 1 wrong
    0.8333
    """
    scores = np.asarray(scores, dtype=np.float64)
    eval_idx = np.asarray(label_index, dtype=np.int64)
    if scores.ndim != 2 or eval_idx.shape != (scores.shape[0],):
        raise ValueError(f"scores must be (N, C), label_index (N,); got {scores.shape}, {eval_idx.shape}")
    if not (isinstance(k, int) and k >= 1):
        raise ValueError(f"k must be a positive int (tasks have k + 1 classes), got {k!r}")
    n_classes = scores.shape[1]
    if eval_idx.size and (eval_idx.min() < 0 or eval_idx.max() >= n_classes):
        raise ValueError(f"label_index must lie in [0, {n_classes}), got range "
                         f"[{eval_idx.min()}, {eval_idx.max()}]")
    present = np.bincount(eval_idx, minlength=n_classes) > 0
    rho = np.full(n_classes, 1.0 / n_classes) if rho is None else np.asarray(rho, dtype=np.float64)
    rho = np.where(present, rho, 0.0)  # a task needs evaluation points for each class
    if np.count_nonzero(rho) < k + 1:
        raise ValueError(
            f"k must satisfy k + 1 <= classes with evaluation points ({np.count_nonzero(rho)}), got k={k}"
        )

    if num_tasks is None:
        total = math.comb(int(np.count_nonzero(rho)), k + 1)
        if total > _MAX_EXACT_TASKS:
            raise ValueError(
                f"num_tasks=None enumerates all {total} tasks, more than {_MAX_EXACT_TASKS}; "
                "pass an int num_tasks"
            )
        tasks = [np.array(t) for t in itertools.combinations(np.flatnonzero(rho), k + 1)]
        weights = np.array([np.prod(rho[t]) for t in tasks])
    else:
        tasks = _sample_tasks(rho, k + 1, num_tasks, np.random.default_rng(seed))
        weights = np.ones(len(tasks))

    by_class = [scores[eval_idx == c] for c in range(n_classes)]
    results = np.array(
        [task_loss_and_accuracy(by_class, t, loss=loss) for t in tasks]
    )  # (num_tasks, 2): loss, accuracy
    weights = weights / weights.sum()
    return KWiseResult(
        accuracy=float(weights @ results[:, 1]),
        loss=float(weights @ results[:, 0]),
        num_tasks=len(tasks),
        k=k,
        loss_name=loss,
    )
