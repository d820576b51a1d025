"""Intraclass deviation s(f) (Arora et al. eq. 9, Arora et al. (ICML 2019); Ash et al. Def. 2, Ash et al.
(AISTATS 2022) (reconstructed; see docs/theory.md))."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .arguments import check_probs

__all__ = ["intraclass_deviation", "split_by_class", "to_numpy"]


def to_numpy(x: Any) -> NDArray[np.float64]:
    """Convert a numpy array / torch tensor / nested sequence to a float64 numpy array."""
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    return np.asarray(x, dtype=np.float64)


def split_by_class(
    features: Any, labels: Any
) -> tuple[list[Any], list[NDArray[np.float64]]]:
    """Group the rows of ``features`` (n, d) by ``labels`` (n,); returns (classes, arrays)."""
    f = to_numpy(features)
    y = np.asarray(labels.detach().cpu().numpy() if hasattr(labels, "detach") else labels)
    if f.ndim != 2:
        raise ValueError(f"features must be a 2-D array (n, d), got shape {f.shape}")
    if y.ndim != 1 or y.shape[0] != f.shape[0]:
        raise ValueError(
            f"labels must be a 1-D array of length {f.shape[0]}, got shape {y.shape}"
        )
    classes = sorted(np.unique(y).tolist())
    return classes, [f[y == c] for c in classes]


def intraclass_deviation(
    embeddings: Any,
    labels: Any = None,
    class_probs: Sequence[float] | NDArray[np.floating] | None = None,
    weighting: str = "arora",
) -> float:
    """s(f) = E_{c∼w}[ √‖Σ(f,c)‖₂ · E_{x∼𝒟_c}‖f(x)‖ ].

    * ``weighting="arora"``: w = ν, ν(c) = ρ(c)²/Σρ² (Arora et al. (ICML 2019) eq. 9);
    * ``weighting="ash"``: w = ρ (Ash et al. (AISTATS 2022) Def. 2 (reconstructed; see docs/theory.md));
    the two agree for uniform ρ.

    Σ(f,c) is the population covariance (ddof = 0) of f(x), x∼𝒟_c; ‖·‖₂ the spectral norm.
    ``embeddings`` is either a mapping/sequence of per-class arrays (n_c, d), or the features
    (n, d) with ``labels`` (n,), or the tuple ``(features, labels)``.
    ``class_probs`` (ρ, in the order of the classes — sorted labels or mapping keys in sorted
    order) defaults to the empirical class frequencies n_c/n.
    Validity: every class needs ≥ 1 sample; d ≥ 1.
    """
    if weighting not in ("arora", "ash"):
        raise ValueError(f"weighting must be 'arora' or 'ash', got {weighting!r}")
    if labels is None and isinstance(embeddings, tuple) and len(embeddings) == 2:
        a, b = embeddings
        if np.ndim(to_numpy(a)) == 2 and np.ndim(to_numpy(b)) == 1:
            embeddings, labels = a, b
    if labels is not None:
        _, groups = split_by_class(embeddings, labels)
    elif isinstance(embeddings, Mapping):
        groups = [to_numpy(embeddings[k]) for k in sorted(embeddings)]
    else:
        groups = [to_numpy(g) for g in embeddings]
    if len(groups) == 0:
        raise ValueError("embeddings must contain at least 1 class, got 0")
    for i, g in enumerate(groups):
        if g.ndim != 2 or g.shape[0] < 1:
            raise ValueError(
                f"class {i} must be a 2-D array with >= 1 row, got shape {g.shape}"
            )
    sizes = np.array([g.shape[0] for g in groups], dtype=np.float64)
    if class_probs is None:
        rho = sizes / sizes.sum()
    else:
        rho = check_probs("class_probs", class_probs)
        if rho.size != len(groups):
            raise ValueError(
                f"class_probs must have one entry per class ({len(groups)}), got {rho.size}"
            )
    w = rho**2 / np.sum(rho**2) if weighting == "arora" else rho
    terms = np.empty(len(groups))
    for i, g in enumerate(groups):
        centred = g - g.mean(axis=0, keepdims=True)
        cov = centred.T @ centred / g.shape[0]
        spec = float(np.linalg.eigvalsh(cov)[-1]) if cov.size else 0.0
        terms[i] = np.sqrt(max(spec, 0.0)) * float(np.linalg.norm(g, axis=1).mean())
    return float(np.sum(w * terms))
