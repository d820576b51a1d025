"""Mean classifier of Arora et al. (ICML 2019, Definition 2.1).

For a representation ``f`` and classes ``c``, ``W^μ`` has rows ``μ_c = E_{x∼D_c}[f(x)]`` (here:
the empirical class means of the fitting set) and predicts with the **inner product**

    ŷ(x) = argmax_c  μ_cᵀ f(x).

This is not ``sklearn.neighbors.NearestCentroid``: that rule is
``argmin_c ‖f(x) − μ_c‖² = argmax_c (μ_cᵀ f(x) − ½‖μ_c‖²)``, which agrees with Arora's rule
only when all class means have the same norm. ``normalize=True`` L2-normalises features
before averaging (a common variant for cosine-trained encoders); the default is the paper's rule.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

from hardneg.evaluate.arrays import as_features, as_labels

__all__ = ["MeanClassifier"]


def _l2_normalize(x: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.maximum(norm, 1e-12)


class MeanClassifier(ClassifierMixin, BaseEstimator):
    """``argmax_c μ_cᵀ f(x)`` with ``μ_c`` the class means (Arora et al., Def. 2.1).

    Args:
        normalize: L2-normalise features before computing means and scores.

    Fitted attributes:
        classes_: ``(n_classes,)`` sorted labels.
        means_: ``(n_classes, d)`` class means ``μ_c`` (float64).
        n_features_in_: feature dimension.

    Example:
        >>> import numpy as np
        >>> X = np.array([[2.0, 0.0], [4.0, 0.0], [0.0, 1.0]])
        >>> clf = MeanClassifier().fit(X, ["a", "a", "b"])
        >>> clf.means_.tolist(), clf.predict([[1.0, 0.5]]).tolist()
        ([[3.0, 0.0], [0.0, 1.0]], ['a'])
    """

    def __init__(self, *, normalize: bool = False) -> None:
        self.normalize = normalize

    def _prepare(self, X: Any) -> np.ndarray:
        features = as_features(X).astype(np.float64, copy=False)
        return _l2_normalize(features) if self.normalize else features

    def fit(self, X: Any, y: Any) -> MeanClassifier:
        """Class means of ``X: (N, d)`` grouped by ``y: (N,)``."""
        features = self._prepare(X)
        labels = as_labels(y, n=features.shape[0])
        self.classes_, encoded = np.unique(labels, return_inverse=True)
        sums = np.zeros((len(self.classes_), features.shape[1]))
        np.add.at(sums, encoded, features)
        counts = np.bincount(encoded, minlength=len(self.classes_))
        self.means_ = sums / counts[:, None]
        self.n_features_in_ = features.shape[1]
        return self

    def decision_function(self, X: Any) -> np.ndarray:
        """Scores ``μ_cᵀ f(x)``, shape ``(N, n_classes)``."""
        if not hasattr(self, "means_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError("MeanClassifier is not fitted yet; call fit(X, y) first")
        features = self._prepare(X)
        if features.shape[1] != self.n_features_in_:
            raise ValueError(f"X must have {self.n_features_in_} features, got {features.shape[1]}")
        return features @ self.means_.T

    def predict(self, X: Any) -> np.ndarray:
        """Labels ``(N,)`` by ``argmax_c μ_cᵀ f(x)`` (first class on ties)."""
        return self.classes_[np.argmax(self.decision_function(X), axis=1)]
