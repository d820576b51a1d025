"""Hardest negatives of an anchor vs random ones from the same batch (Robinson et al. (ICLR 2021), Fig. 12).

HCL Fig. 12: for an anchor in a batch of 128 STL-10 images, the top row shows the 10 images with
the highest inner product ``⟨f(x), f(x⁻)⟩`` with the anchor (those the hard sampler ``q_β``
weights most), the bottom row 10 uniformly drawn images of the same batch.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hardneg.evaluate.arrays import as_features
from hardneg.figures._figure import new_figure, save_figure

__all__ = ["hardest_negatives", "plot_hardest_negatives"]


def hardest_negatives(
    features: Any,
    anchor_index: int,
    *,
    num: int = 10,
    exclude: Sequence[int] = (),
    seed: int = 0,
    cosine: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Indices of the ``num`` most similar candidates to the anchor and of ``num`` random ones.

    Candidates are all items except the anchor and ``exclude`` (e.g. the anchor's positive
    view). Similarity is the inner product (HCL), or cosine with ``cosine=True``.

    Shapes:
        features ``(N, d)`` → two ``(min(num, candidates),)`` int arrays; the first sorted by
        decreasing similarity.

    Example:
        >>> f = [[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.5, 0.5]]
        >>> hardest_negatives(f, 0, num=2)[0].tolist()
        [1, 3]
    """
    x = as_features(features, name="features").astype(np.float64)
    n = x.shape[0]
    if not (isinstance(anchor_index, int | np.integer) and 0 <= anchor_index < n):
        raise ValueError(f"anchor_index must be in [0, {n}), got {anchor_index!r}")
    if not (isinstance(num, int) and num >= 1):
        raise ValueError(f"num must be a positive int, got {num!r}")
    if cosine:
        x = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    mask = np.ones(n, dtype=bool)
    mask[anchor_index] = False
    mask[np.asarray(list(exclude), dtype=np.int64)] = False
    candidates = np.flatnonzero(mask)
    sims = x[candidates] @ x[anchor_index]
    order = np.argsort(-sims, kind="stable")[:num]
    rng = np.random.default_rng(seed)
    random = rng.choice(candidates, size=min(num, candidates.size), replace=False)
    return candidates[order], random


def _to_display(image: Any) -> np.ndarray:
    arr = image.detach().cpu().numpy() if hasattr(image, "detach") else np.asarray(image)
    arr = arr.astype(np.float64) / 255.0 if arr.dtype.kind in "iu" else arr.astype(np.float64)
    arr = np.clip(np.moveaxis(arr, 0, -1), 0.0, 1.0)  # (C, H, W) → (H, W, C)
    return arr[..., 0] if arr.shape[-1] == 1 else arr


def plot_hardest_negatives(
    images: Any,
    features: Any,
    path: str | os.PathLike[str],
    *,
    anchor_index: int,
    num: int = 10,
    exclude: Sequence[int] = (),
    seed: int = 0,
    cosine: bool = False,
) -> Path:
    """PNG: the anchor, its ``num`` hardest negatives (top row) and ``num`` random ones
    (bottom row) from the same batch (HCL Fig. 12).

    Args:
        images: ``(N, C, H, W)`` uint8 or float in ``[0, 1]`` (the batch).
        features: ``(N, d)`` embeddings of the batch.
        path: PNG file, written atomically.
    """
    hard, random = hardest_negatives(
        features, anchor_index, num=num, exclude=exclude, seed=seed, cosine=cosine
    )
    cols = 1 + max(len(hard), len(random))
    fig, axes = new_figure(2, cols, figsize=(1.2 * cols, 2.8), squeeze=False)
    for ax in axes.flat:
        ax.axis("off")
    grey = {"cmap": "gray", "vmin": 0.0, "vmax": 1.0}
    axes[0, 0].imshow(_to_display(images[anchor_index]), **grey)
    axes[0, 0].set_title("anchor", fontsize="small")
    for row, (indices, label) in enumerate(((hard, "hardest"), (random, "random"))):
        axes[row, 1].set_title(label, fontsize="small", loc="left")
        for col, idx in enumerate(indices, start=1):
            axes[row, col].imshow(_to_display(images[int(idx)]), **grey)
    return save_figure(fig, path)
