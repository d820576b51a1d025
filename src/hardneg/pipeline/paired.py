"""Paired differences between strategies trained on the same seeds.

Two strategies run with seed ``k`` share their initial weights, data order and evaluation
folds, so the seed-by-seed difference ``acc_s(k) − acc_base(k)`` removes the variance they share;
its mean ± sample std over seeds and the number of seeds on which the strategy wins are what a
claim "s beats the baseline" rests on (much more than two overlapping mean ± std intervals).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np

__all__ = ["PairedDifference", "format_paired", "paired_differences"]


class PairedDifference(NamedTuple):
    """``(mean, std, wins, seeds)`` of the per-seed differences (std with ddof = 1; NaN for one seed)."""

    mean: float
    std: float
    wins: int
    seeds: int

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """Student-t confidence interval of the mean difference, ``mean ± t_{n−1} std / √n``.

        ``(nan, nan)`` with one seed (no spread to scale by).
        """
        from scipy.stats import t

        if self.seeds < 2:
            return (math.nan, math.nan)
        half = float(t.ppf(0.5 + level / 2, self.seeds - 1)) * self.std / math.sqrt(self.seeds)
        return (self.mean - half, self.mean + half)


def paired_differences(
    values: Mapping[str, Mapping[int, Mapping[str, float]]],
    *,
    baseline: str,
    metrics: Sequence[str],
) -> dict[str, dict[str, PairedDifference]]:
    """``out[strategy][metric]`` = paired difference to ``baseline`` over the seeds both ran.

    Args:
        values: ``values[strategy][seed][metric]`` (e.g. accuracies in [0, 1]).
        baseline: the strategy every other one is compared to.
        metrics: the metrics to compare (those missing for a pair of runs are skipped).

    >>> v = {"a": {0: {"acc": 0.5}, 1: {"acc": 0.6}}, "b": {0: {"acc": 0.7}, 1: {"acc": 0.6}}}
    >>> d = paired_differences(v, baseline="a", metrics=["acc"])["b"]["acc"]
    >>> round(d[0], 3), round(d[1], 3), d[2], d[3]
    (0.1, 0.141, 1, 2)
    """
    if baseline not in values:
        raise ValueError(f"baseline must be one of {sorted(values)}, got {baseline!r}")
    base = values[baseline]
    out: dict[str, dict[str, PairedDifference]] = {}
    for name, runs in values.items():
        if name == baseline:
            continue
        row: dict[str, PairedDifference] = {}
        for metric in metrics:
            seeds = [s for s in runs if s in base and metric in runs[s] and metric in base[s]]
            if not seeds:
                continue
            diff = np.array([runs[s][metric] - base[s][metric] for s in seeds], dtype=float)
            std = float(diff.std(ddof=1)) if len(diff) > 1 else math.nan  # one seed: no spread
            row[metric] = PairedDifference(float(diff.mean()), std, int((diff > 0).sum()), len(diff))
        out[name] = row
    return out


def format_paired(
    table: Mapping[str, Mapping[str, PairedDifference]], *, baseline: str, metrics: Sequence[str]
) -> str:
    """Markdown table of paired differences in percentage points: ``+1.20 ± 1.36 (4/5)``."""
    cols = [m for m in metrics if any(m in row for row in table.values())]
    lines = [f"| strategy − {baseline} | " + " | ".join(cols) + " |", "|" + "---|" * (len(cols) + 1)]
    for name, row in table.items():
        cells = []
        for m in cols:
            if m not in row:
                cells.append("–")
                continue
            mean, std, wins, n = row[m]
            lo, hi = row[m].interval()
            if n < 2:
                cells.append(f"{100 * mean:+.2f} (one seed: no interval)")
                continue
            ci = f", CI [{100 * lo:+.2f}, {100 * hi:+.2f}]"
            cells.append(f"{100 * mean:+.2f} ± {100 * std:.2f}{ci} ({wins}/{n})")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append(
        "\n(percentage points, mean ± std over seeds of the seed-by-seed difference, its 95 % "
        "Student-t confidence interval; (w/n): seeds on which the strategy scored higher)"
    )
    return "\n".join(lines)
