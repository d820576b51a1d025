"""The figure of the reproduction report: each claim's paired difference and its 95 % interval."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hardneg.figures._figure import new_figure, save_figure

__all__ = ["claims_figure"]

_COLOURS = {"supported": "C2", "against": "C3", "smaller": "C1", "neither": "C7"}


def _points(x: Any) -> list[float]:
    """``[100 x]`` for a finite number, else ``[]``."""
    return [100.0 * float(x)] if isinstance(x, (int, float)) and math.isfinite(x) else []


def _marks(r: Mapping[str, Any]) -> tuple[list[float], list[float]]:
    """The row's paper effect (±margin for equivalence, −margin for non-inferiority) and its MDE
    (±MDE, −MDE), in points."""
    mdes = _points(r.get("mde_design") if r.get("mde_basis") == "pilot" else r.get("mde_observed"))
    margin = _points(r.get("margin"))
    if r.get("test") == "equivalence" and margin:
        return [-margin[0], margin[0]], [-m for m in mdes] + mdes
    if r.get("test") == "noninferiority" and margin:  # one-sided: the bound "not worse by" below 0
        return [-margin[0]], [-m for m in mdes]
    return _points(r.get("paper_effect")), mdes


def claims_figure(rows: Sequence[Mapping[str, Any]], path: str | Path, *, budget: str) -> Path | None:
    """One row per claim that ran: mean difference (pp) with its 95 % interval, coloured by the
    verdict's direction (green: supported, red: opposite / not equivalent, orange: smaller than the
    paper's, grey: neither), the paper's effect (×; ±margin for a parity claim) and the minimum
    detectable effect at 80 % power that decided the verdict (|; ±MDE for parity).

    ``rows``: the report's rows (``claim``, ``direction``, ``diff_mean``, ``ci_low``, ``ci_high``,
    ``paper_effect`` / ``margin``, ``mde_design`` / ``mde_observed`` / ``mde_basis``, in [0, 1]
    units); claims in other units (a bound's slack in bits) are left to the table.
    Returns ``None`` (and writes nothing) when no claim has an interval.
    """
    ran = [r for r in rows if "direction" in r and not math.isnan(r["ci_low"])
           and (r.get("unit") or "points") == "points"]  # accuracies only: one axis in points
    if not ran:
        return None
    fig, ax = new_figure(figsize=(6.5, 0.45 * len(ran) + 1.4))
    labelled: set[str] = set()

    def label(name: str, marks: list[float]) -> str | None:  # each legend entry once
        if not marks or name in labelled:
            return None
        labelled.add(name)
        return name

    for i, r in enumerate(ran):
        mean = 100 * r["diff_mean"]
        err = [[mean - 100 * r["ci_low"]], [100 * r["ci_high"] - mean]]
        ax.errorbar([mean], [i], xerr=err, fmt="o", color=_COLOURS[r["direction"]], capsize=3)
        effects, mdes = _marks(r)
        ax.plot(effects, [i] * len(effects), "x", color="k", ms=6,
                label=label("paper's effect (±margin)", effects))
        ax.plot(mdes, [i] * len(mdes), "|", color="C0", ms=12, mew=2,
                label=label("MDE, 80 % power", mdes))
    ax.axvline(0.0, color="k", lw=0.8)
    ax.set_yticks(range(len(ran)), [r["claim"] for r in ran], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("contender − baseline (pp), mean and 95 % CI over seeds")
    ax.set_title(f"hardneg reproduce ({budget} budget)", fontsize=9)
    if labelled:
        ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    return save_figure(fig, path)
