"""Whether labels can be split as a nested stratified cross-validation splits them, on the labels alone.

The cross-validated readouts (InfoGraph's SVM protocol, SentEval's binary tasks) split the items
with ``StratifiedKFold(folds, shuffle=True, random_state=seed)`` and choose ``C`` inside each
training part with ``StratifiedKFold(inner_folds, ...)``. Both need at least two classes and,
for every class, at least as many items as folds — in the whole set for the outer split and in
each outer training part for the inner one. :func:`nested_cv_problem` runs the outer split on the
labels (no features: instantaneous) and reports the first shortfall, so a run can refuse its data
before training instead of after it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["FoldProblem", "nested_cv_problem"]


@dataclass(frozen=True)
class FoldProblem:
    """A class with fewer items than folds: ``count`` items of class ``label`` (called ``name``) where
    ``needed`` are required, in the whole set (``fold is None``) or in the training part of outer
    fold ``fold``."""

    label: Any
    count: int
    needed: int
    fold: int | None = None
    name: str | None = None

    def __str__(self) -> str:
        cls = repr(self.name if self.name is not None else self.label)
        if self.fold is None:
            return f"class {cls} has {self.count} item(s), fewer than the {self.needed} folds"
        return (
            f"class {cls} keeps {self.count} item(s) in the training part of outer fold "
            f"{self.fold}, fewer than the {self.needed} inner folds"
        )


def _smallest(labels: np.ndarray) -> tuple[Any, int]:
    classes, counts = np.unique(labels, return_counts=True)
    i = int(np.argmin(counts))
    value = classes[i]
    return (value.item() if isinstance(value, np.generic) else value), int(counts[i])


def nested_cv_problem(
    labels: Any, *, folds: int, inner_folds: int | None, seed: int, class_names: Sequence[str] | None = None
) -> FoldProblem | None:
    """The first class too small for the outer (``folds``) or inner (``inner_folds``) stratified split.

    ``labels`` must hold at least two classes (check that first; the message belongs to the
    caller, who knows the file). ``inner_folds=None`` checks the outer split only. With
    ``class_names``, integer label ``i`` is called ``class_names[i]`` in the problem's message.

    >>> print(nested_cv_problem([0] * 5 + [1] * 3, folds=4, inner_folds=None, seed=0))
    class 1 has 3 item(s), fewer than the 4 folds
    >>> nested_cv_problem([0, 1] * 10, folds=2, inner_folds=5, seed=0) is None
    True
    """
    from sklearn.model_selection import StratifiedKFold

    y = np.asarray(labels).reshape(-1)
    if np.unique(y).size < 2:
        raise ValueError(f"labels must hold at least 2 classes, got {np.unique(y).tolist()}")
    def named(label: Any) -> str | None:
        return None if class_names is None else str(class_names[int(label)])

    label, count = _smallest(y)
    if count < folds:
        return FoldProblem(label, count, folds, name=named(label))
    if inner_folds is None:
        return None
    outer = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    for k, (train, _) in enumerate(outer.split(np.zeros((y.size, 1)), y)):
        label, count = _smallest(y[train])
        if count < inner_folds:
            return FoldProblem(label, count, inner_folds, fold=k, name=named(label))
    return None
