"""Cosine-similarity histograms of same-label vs different-label pairs (Robinson et al. (ICLR 2021), Fig. 5).

HCL Fig. 5 (and Figs. 8–10) overlays, for several trained encoders (SimCLR, debiased, hard,
hard + debiased), the histogram of ``cos(f(x), f(x'))`` over pairs with the **same** label (top
panel) and over pairs with **different** labels (bottom panel): a good representation pushes the
same-label mass to the right and the different-label mass to the left with little overlap.

Pairs are all unordered pairs ``i < j``, subsampled uniformly to at most ``max_pairs`` per kind
with a seeded generator.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from hardneg.evaluate.arrays import as_features, as_labels
from hardneg.figures._figure import new_figure, save_figure

__all__ = ["plot_similarity_histograms", "same_and_different_label_similarities"]


def same_and_different_label_similarities(
    features: Any,
    labels: Any,
    *,
    max_pairs: int | None = 200_000,
    seed: int = 0,
    block_size: int = 2048,
) -> tuple[np.ndarray, np.ndarray]:
    """Cosine similarities of all pairs ``i < j`` split by ``labels[i] == labels[j]``.

    Computed in row blocks (memory ``O(block_size × N)``). Unlabeled items (label ``< 0``) are
    skipped.

    Shapes:
        features ``(N, d)``, labels ``(N,)`` → two 1-D float32 arrays.

    Example:
        >>> same, diff = same_and_different_label_similarities(
        ...     [[1.0, 0.0], [2.0, 0.0], [0.0, 1.0]], [0, 0, 1])
        >>> same.tolist(), diff.tolist()
        ([1.0], [0.0, 0.0])
    """
    x = as_features(features, name="features").astype(np.float32)
    y = as_labels(labels, n=x.shape[0], name="labels")
    keep = np.ones(len(y), dtype=bool) if y.dtype.kind not in "iu" else y >= 0
    x, y = x[keep], y[keep]
    x = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    same_parts: list[np.ndarray] = []
    diff_parts: list[np.ndarray] = []
    n = x.shape[0]
    for start in range(0, n, block_size):
        stop = min(start + block_size, n)
        sim = x[start:stop] @ x.T  # (b, N)
        rows, cols = np.triu_indices(stop - start, k=1, m=n - start)
        vals = sim[rows, cols + start]
        eq = y[start:stop][rows] == y[cols + start]
        same_parts.append(vals[eq])
        diff_parts.append(vals[~eq])
    rng = np.random.default_rng(seed)
    out = []
    for parts in (same_parts, diff_parts):
        vals = np.concatenate(parts) if parts else np.empty(0, np.float32)
        if max_pairs is not None and vals.size > max_pairs:
            vals = vals[rng.choice(vals.size, size=max_pairs, replace=False)]
        out.append(np.clip(vals, -1.0, 1.0))
    return out[0], out[1]


def plot_similarity_histograms(
    runs: Mapping[str, tuple[Any, Any]],
    path: str | os.PathLike[str],
    *,
    bins: int = 100,
    max_pairs: int | None = 200_000,
    seed: int = 0,
    title: str | None = None,
    value_range: tuple[float, float] | None = None,
) -> Path:
    """Two-panel PNG: same-label (top) and different-label (bottom) histograms, one overlaid
    curve per run (HCL Fig. 5).

    Args:
        runs: name → ``(features (N, d), labels (N,))``, e.g. ``{"SimCLR": …, "HCL β=1": …}``.
        path: PNG file, written atomically.
        bins: histogram bins on ``[−1, 1]``.
        max_pairs: pairs per kind and run (uniform subsample).
        value_range: the histogram's x range; ``None`` zooms on the occupied part of
            ``[−1, 1]`` (features after a ReLU have only non-negative cosines).

    Returns:
        the written path.
    """
    if not runs:
        raise ValueError("runs must contain at least one (features, labels) entry, got {}")
    fig, (ax_same, ax_diff) = new_figure(2, 1, figsize=(6.0, 5.5), sharex=True, layout="constrained")
    pairs = {
        name: same_and_different_label_similarities(features, labels, max_pairs=max_pairs, seed=seed)
        for name, (features, labels) in runs.items()
    }
    if value_range is None:
        low = min((float(v.min()) for sd in pairs.values() for v in sd if v.size), default=-1.0)
        value_range = (max(-1.0, low - 0.02), 1.0)
    edges = np.linspace(value_range[0], value_range[1], bins + 1)
    for name, (same, diff) in pairs.items():
        for ax, vals in ((ax_same, same), (ax_diff, diff)):
            if vals.size:
                ax.hist(vals, bins=edges, density=True, histtype="stepfilled", alpha=0.35, label=name)
    ax_same.set_title("pairs with the same label")
    ax_diff.set_title("pairs with different labels")
    ax_diff.set_xlabel("cosine similarity")
    for ax in (ax_same, ax_diff):
        ax.set_ylabel("density")
        ax.legend(loc="upper left", fontsize="small")
    if title:
        fig.suptitle(title)
    return save_figure(fig, path)
