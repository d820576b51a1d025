"""Accuracy versus a parameter (β, K, τ⁺, epochs) with error bars over seeds (HCL Fig. 4)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from hardneg.figures._figure import new_figure, save_figure

__all__ = ["plot_accuracy_curves", "summarize_over_seeds"]


def summarize_over_seeds(
    values: Mapping[float, Sequence[float]],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sorted ``x``, mean and standard deviation (``ddof=0``; 0 for one seed) per ``x``.

    Example:
        >>> x, m, s = summarize_over_seeds({2.0: [0.5, 0.7], 1.0: [0.4]})
        >>> x.tolist(), m.round(6).tolist(), s.round(6).tolist()
        ([1.0, 2.0], [0.4, 0.6], [0.0, 0.1])
    """
    xs = sorted(values)
    for x in xs:
        if len(values[x]) == 0:
            raise ValueError(f"values[{x!r}] must hold at least one result, got []")
    mean = np.array([np.mean(values[x]) for x in xs], dtype=np.float64)
    std = np.array([np.std(values[x]) for x in xs], dtype=np.float64)
    return np.asarray(xs, dtype=np.float64), mean, std


def plot_accuracy_curves(
    results: Mapping[str, Mapping[float, Sequence[float]]],
    path: str | os.PathLike[str],
    *,
    xlabel: str = "β",
    ylabel: str = "accuracy",
    title: str | None = None,
    log_x: bool = False,
) -> Path:
    """PNG of mean accuracy (± one standard deviation over seeds) against a parameter.

    Args:
        results: series name → {parameter value → accuracies, one per seed},
            e.g. ``{"hard": {0.0: [0.80, 0.81], 1.0: [0.84, 0.83]}}``.
        path: PNG file, written atomically.
        log_x: logarithmic x axis (for K or ε sweeps).
    """
    if not results:
        raise ValueError("results must contain at least one series, got {}")
    fig, ax = new_figure(1, 1, figsize=(5.5, 4.0), layout="constrained")
    for name, values in results.items():
        x, mean, std = summarize_over_seeds(values)
        ax.errorbar(x, mean, yerr=std, marker="o", capsize=3, label=name)
    if log_x:
        ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    if title:
        ax.set_title(title)
    return save_figure(fig, path)
