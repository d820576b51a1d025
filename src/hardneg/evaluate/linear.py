"""Linear readout: logistic regression on standardised frozen features.

The standard evaluation of a contrastive representation (SimCLR; Robinson et al. (ICLR 2021) §5.1, "linear
readout accuracy"): freeze the encoder, fit a multinomial logistic regression on ``h`` of the
training set, report accuracy on the test set. Features are standardised first
(``StandardScaler``), which makes the L2 penalty ``C`` comparable across encoders. HCL trains
the linear layer with Adam for 100 epochs; the L-BFGS solver here reaches the same convex
optimum without a learning-rate schedule.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

from hardneg.evaluate.arrays import as_features, as_labels

__all__ = ["LinearReadout"]


class LinearReadout(ClassifierMixin, BaseEstimator):
    """Standardise, then multinomial logistic regression (scikit-learn estimator API).

    Args:
        C: inverse L2 regularisation strength (> 0).
        max_iter: L-BFGS iterations.
        standardize: standardise features with training mean / std first.

    Fitted attributes:
        classes_: ``(n_classes,)`` labels seen in ``fit``.
        scaler_: the fitted ``StandardScaler`` (``None`` when ``standardize=False``).
        classifier_: the fitted ``LogisticRegression``.
        n_features_in_: feature dimension.

    Example:
        >>> import numpy as np
        >>> X = np.r_[np.zeros((5, 2)), np.ones((5, 2))] + 0.01 * np.arange(10)[:, None]
        >>> y = np.r_[np.zeros(5), np.ones(5)]
        >>> LinearReadout().fit(X, y).score(X, y)
        1.0
    """

    def __init__(self, *, C: float = 1.0, max_iter: int = 1000, standardize: bool = True) -> None:
        self.C = C
        self.max_iter = max_iter
        self.standardize = standardize

    def fit(self, X: Any, y: Any) -> LinearReadout:
        """Fit on features ``X: (N, d)`` and labels ``y: (N,)`` (numpy or torch)."""
        from sklearn.linear_model import LogisticRegression
        from sklearn.preprocessing import StandardScaler

        if not (isinstance(self.C, int | float) and self.C > 0):
            raise ValueError(f"C must be a positive float, got {self.C!r}")
        if not (isinstance(self.max_iter, int) and self.max_iter >= 1):
            raise ValueError(f"max_iter must be a positive int, got {self.max_iter!r}")
        features = as_features(X)
        labels = as_labels(y, n=features.shape[0])
        if np.unique(labels).size < 2:
            raise ValueError(f"y must contain at least 2 classes, got {np.unique(labels)}")
        self.scaler_ = StandardScaler().fit(features) if self.standardize else None
        z = self.scaler_.transform(features) if self.scaler_ is not None else features
        self.classifier_ = LogisticRegression(C=float(self.C), max_iter=self.max_iter)
        self.classifier_.fit(z, labels)
        self.classes_ = self.classifier_.classes_
        self.n_features_in_ = features.shape[1]
        return self

    def _transform(self, X: Any) -> np.ndarray:
        if not hasattr(self, "classifier_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError("LinearReadout is not fitted yet; call fit(X, y) first")
        features = as_features(X)
        if features.shape[1] != self.n_features_in_:
            raise ValueError(f"X must have {self.n_features_in_} features, got {features.shape[1]}")
        return self.scaler_.transform(features) if self.scaler_ is not None else features

    def decision_function(self, X: Any) -> np.ndarray:
        """Class scores ``(N, n_classes)`` (``(N,)`` for two classes, as in scikit-learn)."""
        z = self._transform(X)
        return self.classifier_.decision_function(z)

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities ``(N, n_classes)``."""
        z = self._transform(X)
        return self.classifier_.predict_proba(z)

    def predict(self, X: Any) -> np.ndarray:
        """Predicted labels ``(N,)``."""
        z = self._transform(X)
        return self.classifier_.predict(z)

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """Top-1 accuracy."""
        labels = as_labels(y, n=as_features(X).shape[0])
        pred = self.predict(X)
        return float(np.average(pred == labels, weights=sample_weight))
