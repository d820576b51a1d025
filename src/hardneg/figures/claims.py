"""The figure of the reproduction report: each claim's paired difference and its 95 % interval."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hardneg.figures._figure import new_figure, save_figure

__all__ = ["claims_figure"]

_COLOURS = {"supported": "C2", "against": "C3", "neither": "C7"}


def claims_figure(rows: Sequence[Mapping[str, Any]], path: str | Path, *, budget: str) -> Path | None:
    """One row per claim that ran: mean difference (pp) with its 95 % interval, coloured by the
    verdict's direction (green: supported, red: contradicted / not equivalent, grey: neither).

    ``rows``: the report's rows (``claim``, ``direction``, ``diff_mean``, ``ci_low``, ``ci_high`` in
    [0, 1] units); claims in other units (a bound's slack in bits) are left to the table.
    Returns ``None`` (and writes nothing) when no claim has an interval.
    """
    ran = [r for r in rows if "direction" in r and not math.isnan(r["ci_low"])
           and (r.get("unit") or "points") == "points"]  # accuracies only: one axis in points
    if not ran:
        return None
    fig, ax = new_figure(figsize=(6.0, 0.45 * len(ran) + 1.2))
    for i, r in enumerate(ran):
        mean = 100 * r["diff_mean"]
        err = [[mean - 100 * r["ci_low"]], [100 * r["ci_high"] - mean]]
        ax.errorbar([mean], [i], xerr=err, fmt="o", color=_COLOURS[r["direction"]], capsize=3)
    ax.axvline(0.0, color="k", lw=0.8)
    ax.set_yticks(range(len(ran)), [r["claim"] for r in ran], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("contender − baseline (pp), mean and 95 % CI over seeds")
    ax.set_title(f"hardneg reproduce ({budget} budget)", fontsize=9)
    fig.tight_layout()
    return save_figure(fig, path)
