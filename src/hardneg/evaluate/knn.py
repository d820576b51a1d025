"""Weighted k-nearest-neighbour classifier on cosine similarity (InstDisc / HCL convention).

Wu et al., *Unsupervised Feature Learning via Non-Parametric Instance Discrimination*, CVPR 2018,
as used by HCL (Robinson et al. (ICLR 2021) §5.1, "weighted k-nearest neighbors with k = 200"; their
``test()``):
with ``ẑ = z / ‖z‖`` and training bank ``{(ẑ_j, y_j)}``, a query ``x`` takes its ``k`` most
similar training points ``N_k(x)`` by ``s_j = ⟨ẑ(x), ẑ_j⟩`` and scores each class ``c`` by

    score_c(x) = Σ_{j ∈ N_k(x)} exp(s_j / t) · 1[y_j = c],     t = 0.1,

predicting the classes by decreasing score (top-1 and top-5 accuracy). Queries are processed in
chunks of ``chunk_size`` so memory is ``O(chunk_size × N_train)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin

from hardneg.evaluate.arrays import as_features, as_labels

__all__ = ["WeightedKNN"]


class WeightedKNN(ClassifierMixin, BaseEstimator):
    """Cosine-similarity weighted kNN with weights ``exp(s / t)``.

    Args:
        k: number of neighbours (capped at the training size).
        temperature: ``t`` in ``exp(s / t)``.
        chunk_size: queries per similarity block.
        device: torch device for the similarity blocks (``"cpu"`` by default).

    Fitted attributes:
        classes_: ``(n_classes,)`` sorted labels.
        bank_: ``(N_train, d)`` float32 L2-normalised training features (torch, on ``device``).
        bank_labels_: ``(N_train,)`` int64 indices into ``classes_`` (torch).
        n_features_in_: feature dimension.

    Example:
        >>> import numpy as np
        >>> X = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9]])
        >>> knn = WeightedKNN(k=2).fit(X, [0, 0, 1, 1])
        >>> knn.predict([[1.0, 0.05], [0.05, 1.0]]).tolist()
        [0, 1]
    """

    def __init__(
        self,
        *,
        k: int = 200,
        temperature: float = 0.1,
        chunk_size: int = 1024,
        device: str | torch.device = "cpu",
    ) -> None:
        self.k = k
        self.temperature = temperature
        self.chunk_size = chunk_size
        self.device = device

    def fit(self, X: Any, y: Any) -> WeightedKNN:
        """Store the L2-normalised training features ``X: (N, d)`` and labels ``y: (N,)``."""
        if not (isinstance(self.k, int) and self.k >= 1):
            raise ValueError(f"k must be a positive int, got {self.k!r}")
        if not (isinstance(self.temperature, int | float) and self.temperature > 0):
            raise ValueError(f"temperature must be a positive float, got {self.temperature!r}")
        if not (isinstance(self.chunk_size, int) and self.chunk_size >= 1):
            raise ValueError(f"chunk_size must be a positive int, got {self.chunk_size!r}")
        features = as_features(X)
        labels = as_labels(y, n=features.shape[0])
        self.classes_, encoded = np.unique(labels, return_inverse=True)
        bank = torch.as_tensor(features, dtype=torch.float32, device=self.device)
        self.bank_ = torch.nn.functional.normalize(bank, dim=1)
        self.bank_labels_ = torch.as_tensor(encoded, dtype=torch.int64, device=self.device)
        self.n_features_in_ = features.shape[1]
        return self

    def class_scores(self, X: Any) -> np.ndarray:
        """Scores ``Σ_{j∈N_k} exp(s_j / t) 1[y_j = c]``, shape ``(N, n_classes)`` float64."""
        if not hasattr(self, "bank_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError("WeightedKNN is not fitted yet; call fit(X, y) first")
        features = as_features(X)
        if features.shape[1] != self.n_features_in_:
            raise ValueError(f"X must have {self.n_features_in_} features, got {features.shape[1]}")
        k = min(self.k, self.bank_.shape[0])
        n_classes = len(self.classes_)
        out = np.empty((features.shape[0], n_classes), dtype=np.float64)
        for start in range(0, features.shape[0], self.chunk_size):
            q = torch.as_tensor(
                features[start : start + self.chunk_size],
                dtype=torch.float32,
                device=self.device,
            )
            q = torch.nn.functional.normalize(q, dim=1)
            sim = q @ self.bank_.T  # (chunk, N_train)
            top_sim, top_idx = sim.topk(k, dim=1)
            weight = torch.exp(top_sim.double() / self.temperature)
            scores = torch.zeros(q.shape[0], n_classes, dtype=torch.float64, device=self.device)
            scores.scatter_add_(1, self.bank_labels_[top_idx], weight)
            out[start : start + q.shape[0]] = scores.cpu().numpy()
        return out

    def predict(self, X: Any) -> np.ndarray:
        """Top-1 labels ``(N,)``."""
        return self.classes_[np.argmax(self.class_scores(X), axis=1)]

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """Top-1 accuracy."""
        return self.top_k_accuracy(X, y, top=1)

    def top_k_accuracy(self, X: Any, y: Any, *, top: int = 5) -> float:
        """Fraction of queries whose label is among the ``top`` highest-scoring classes.

        Ties (e.g. several classes with score 0 when ``k`` is small) are broken towards the
        smaller class index, deterministically.
        """
        if not (isinstance(top, int) and top >= 1):
            raise ValueError(f"top must be a positive int, got {top!r}")
        scores = self.class_scores(X)
        labels = as_labels(y, n=scores.shape[0])
        order = np.argsort(-scores, axis=1, kind="stable")[:, :top]
        hits = self.classes_[order] == labels[:, None]
        return float(hits.any(axis=1).mean())
