"""The reproduction report: ``claims.md``, ``claims.csv`` and ``figures/claims.png``, written atomically."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from hardneg._io import atomic_write_text

__all__ = ["claims_markdown", "write_report"]

_COLUMNS = (
    "claim", "verdict", "text", "source", "setting", "metric", "baseline", "contender", "baseline_mean",
    "baseline_std", "contender_mean", "contender_std", "diff_mean", "diff_std", "ci_low", "ci_high",
    "wins", "seeds", "folder",
)


def _pp(x: float) -> str:
    return f"{100 * x:+.2f}"


def claims_markdown(rows: list[dict[str, Any]], *, budget: str) -> str:
    """The report as Markdown: one section per claim, then a summary table."""
    lines = [
        f"# Reproduction report (budget: {budget})",
        "",
        "Each claim is read as \"the contender scores higher than the baseline\" on a metric fixed in "
        "advance, at the final epoch (nothing is chosen on test data). The evidence is the seed-paired "
        "difference (same seed: same initial weights, data order and evaluation folds), its mean ± std "
        "over seeds and 95 % Student-t interval. Verdict: **reproduced** when the whole interval is "
        "above 0, **contradicted** when it is below 0, **not reproduced** when it holds 0.",
        "",
        "| claim | verdict | difference (pp) | 95 % CI | seeds won |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        if r["verdict"] == "not run here":
            lines.append(f"| {r['claim']} | not run here | – | – | – |")
            continue
        ci = f"[{_pp(r['ci_low'])}, {_pp(r['ci_high'])}]" if not math.isnan(r["ci_low"]) else "–"
        lines.append(f"| {r['claim']} | {r['verdict']} | {_pp(r['diff_mean'])} ± {100 * r['diff_std']:.2f} "
                     f"| {ci} | {r['wins']}/{r['seeds']} |")
    lines.append("")
    for r in rows:
        lines += [f"## {r['claim']}: {r['verdict']}", "", f"*Claim.* {r['text']}", "",
                  f"*Source.* {r['source']}", ""]
        if r["verdict"] == "not run here":
            lines += [f"*To run it.* {r['setting']}", ""]
            continue
        lines += [
            f"*Setting.* {r['setting']}; metric `{r['metric']}`.",
            "",
            f"*Measured.* {r['baseline']} {100 * r['baseline_mean']:.2f} ± {100 * r['baseline_std']:.2f} %, "
            f"{r['contender']} {100 * r['contender_mean']:.2f} ± {100 * r['contender_std']:.2f} %; paired "
            f"difference {_pp(r['diff_mean'])} ± {100 * r['diff_std']:.2f} pp, 95 % CI "
            f"[{_pp(r['ci_low'])}, {_pp(r['ci_high'])}], higher on {r['wins']} of {r['seeds']} seeds "
            f"(runs in `{r['folder']}`).",
            "",
        ]
    return "\n".join(lines)


def _figure(rows: list[dict[str, Any]], path: Path, *, budget: str) -> Path | None:
    ran = [r for r in rows if r["verdict"] != "not run here" and not math.isnan(r["ci_low"])]
    if not ran:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from hardneg.figures import save_figure

    colours = {"reproduced": "C2", "not reproduced": "C7", "contradicted": "C3"}
    fig, ax = plt.subplots(figsize=(6.0, 0.45 * len(ran) + 1.2))
    for i, r in enumerate(ran):
        mean = 100 * r["diff_mean"]
        err = [[mean - 100 * r["ci_low"]], [100 * r["ci_high"] - mean]]
        ax.errorbar([mean], [i], xerr=err, fmt="o", color=colours[r["verdict"]], capsize=3)
    ax.axvline(0.0, color="k", lw=0.8)
    ax.set_yticks(range(len(ran)), [r["claim"] for r in ran], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("contender − baseline (pp), mean and 95 % CI over seeds")
    ax.set_title(f"hardneg reproduce ({budget} budget)", fontsize=9)
    fig.tight_layout()
    return save_figure(fig, path)


def write_report(rows: list[dict[str, Any]], root: Path, *, budget: str) -> None:
    """Write ``claims.md``, ``claims.csv`` and ``figures/claims.png`` under ``root``."""
    from hardneg.pipeline.run_folder import csv_text

    root.mkdir(parents=True, exist_ok=True)
    table = [{k: r.get(k, "") for k in _COLUMNS} for r in rows]
    atomic_write_text(root / "claims.csv", csv_text(table))
    atomic_write_text(root / "claims.md", claims_markdown(rows, budget=budget) + "\n")
    _figure(rows, root / "figures" / "claims.png", budget=budget)
