"""Figures of a run, a comparison and a sweep (through the one writer, :mod:`hardneg.figures._figure`).

* :func:`cosine_histograms` — cosine similarity of same-label vs different-label pairs
  (Robinson et al., ICLR 2021, Fig. 5, 8–10);
* :func:`hardest_negatives_grid` — for a few anchors, the most similar other images of a random
  batch vs a random sample (HCL Fig. 12), same-label ones framed in red;
* :func:`accuracy_bars` — mean ± std accuracy per strategy (``hardneg compare``);
* :func:`curves` — accuracy against epochs, β, K, ... (``compare`` / ``sweep``).

They take plain tensors and numbers (what a run folder holds); the pipeline calls them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from hardneg.figures._figure import new_figure, save_figure

__all__ = ["accuracy_bars", "cosine_histograms", "curves", "hardest_negatives_grid"]


def _save(fig: object, path: str | Path) -> Path:
    return save_figure(fig, path, dpi=110, bbox_inches="tight")


def cosine_histograms(
    runs: Mapping[str, tuple[Tensor, Tensor]], path: str | Path, *, title: str = ""
) -> Path:
    """Same-label vs different-label cosine histograms, one curve per run (HCL Fig. 5).

    Delegates to :func:`hardneg.figures.plot_similarity_histograms`.
    """
    from hardneg.figures import plot_similarity_histograms

    return plot_similarity_histograms(runs, path, max_pairs=200_000, title=title or None)


def hardest_negatives_grid(
    images: Tensor, features: Tensor, labels: Tensor, path: str | Path, *, num_anchors: int = 4,
    batch_size: int = 128, top: int = 8, seed: int = 0,
) -> Path:
    """HCL Fig. 12: per anchor, its ``top`` nearest images in a random batch, then ``top`` random ones.

    The selection is :func:`hardneg.figures.hardest_negatives`; this figure adds several
    anchors per image and frames negatives that share the anchor's label.
    """
    from hardneg.figures import hardest_negatives as select_hardest

    g = torch.Generator().manual_seed(seed)
    n = images.shape[0]
    batch = torch.randperm(n, generator=g)[: min(batch_size, n)]
    f = torch.nn.functional.normalize(features[batch].float(), dim=1)
    anchors = list(range(min(num_anchors, len(batch))))
    cols = 1 + 2 * top
    fig, axes = new_figure(len(anchors), cols, figsize=(0.8 * cols, 0.9 * len(anchors)), squeeze=False)

    def show(ax: object, i: int, anchor_label: int | None) -> None:
        img = images[batch[i]].float()
        img = img / 255.0 if images.dtype == torch.uint8 else img
        arr = img.permute(1, 2, 0).clamp(0, 1).numpy()
        ax.imshow(arr[..., 0] if arr.shape[2] == 1 else arr, cmap="gray_r" if arr.shape[2] == 1 else None)  # type: ignore[attr-defined]
        ax.set_xticks([])  # type: ignore[attr-defined]
        ax.set_yticks([])  # type: ignore[attr-defined]
        if anchor_label is not None and int(labels[batch[i]]) == anchor_label:
            for spine in ax.spines.values():  # type: ignore[attr-defined]
                spine.set_edgecolor("red")
                spine.set_linewidth(2)

    for row, a in enumerate(anchors):
        hard_idx, random_idx = select_hardest(f.numpy(), a, num=top, seed=seed + row)
        hard, others = hard_idx.tolist(), random_idx.tolist()
        show(axes[row][0], a, None)
        axes[row][0].set_title("anchor" if row == 0 else "", fontsize=7)
        for c, j in enumerate(hard):
            show(axes[row][1 + c], j, int(labels[batch[a]]))
        for c, j in enumerate(others):
            show(axes[row][1 + top + c], j, int(labels[batch[a]]))
        for ax in axes[row][1 + len(hard) : 1 + top]:
            ax.axis("off")
    axes[0][1].set_title(f"hardest {top} in a batch of {len(batch)}", fontsize=7, loc="left")
    axes[0][1 + top].set_title("random", fontsize=7, loc="left")
    fig.suptitle("hardest vs random negatives (red frame: same label as the anchor)", fontsize=8)
    return _save(fig, path)


def accuracy_bars(
    table: Mapping[str, Mapping[str, tuple[float, float]]], path: str | Path, *, title: str = ""
) -> Path:
    """Grouped bars: ``table[strategy][metric] = (mean, std)``."""
    strategies = list(table)
    metrics = sorted({m for row in table.values() for m in row})
    width = 0.8 / max(1, len(strategies))
    fig, ax = new_figure(figsize=(1.2 + 1.3 * len(metrics), 3.0))
    x = np.arange(len(metrics))
    for i, s in enumerate(strategies):
        means = [100 * table[s].get(m, (np.nan, 0))[0] for m in metrics]
        stds = [100 * table[s].get(m, (np.nan, 0))[1] for m in metrics]
        ax.bar(x + i * width - 0.4 + width / 2, means, width, yerr=stds, capsize=2, label=s)
    ax.set_xticks(x, metrics, fontsize=8)
    ax.set_ylabel("accuracy (%)")
    lo = min((100 * v[0] for row in table.values() for v in row.values()), default=0)
    ax.set_ylim(max(0, lo - 10), 100)
    ax.legend(fontsize=7, ncol=2)
    if title:
        ax.set_title(title, fontsize=9)
    return _save(fig, path)


def curves(
    series: Mapping[str, Sequence[tuple[float, float, float]]], path: str | Path, *, xlabel: str,
    ylabel: str = "accuracy (%)", title: str = "", logx: bool = False,
) -> Path:
    """Lines with ±std bands: ``series[label] = [(x, mean, std), ...]``."""
    fig, ax = new_figure(figsize=(4.2, 3.0))
    for label, points in series.items():
        pts = sorted(points)
        xs = np.array([p[0] for p in pts], dtype=float)
        ms = 100 * np.array([p[1] for p in pts], dtype=float)
        ss = 100 * np.array([p[2] for p in pts], dtype=float)
        ax.plot(xs, ms, marker="o", ms=3, label=label)
        ax.fill_between(xs, ms - ss, ms + ss, alpha=0.2)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if logx:
        ax.set_xscale("log")
    ax.legend(fontsize=7)
    if title:
        ax.set_title(title, fontsize=9)
    return _save(fig, path)
