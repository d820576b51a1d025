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


_NO_RESULT = ("not run here", "interrupted")  # verdicts of rows without a measurement


def claims_markdown(rows: list[dict[str, Any]], *, budget: str, partial: str | None = None) -> str:
    """The report as Markdown: one section per claim, then a summary table.

    ``partial``: the report is incomplete (an interrupted reproduction); the sentence is printed
    first and every claim without a result says ``interrupted``.
    """
    lines = [
        f"# Reproduction report (budget: {budget})",
        "",
        *([f"**Partial report**: {partial}", ""] if partial else []),
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
        if r["verdict"] in _NO_RESULT:
            lines.append(f"| {r['claim']} | {r['verdict']} | – | – | – |")
            continue
        ci = f"[{_pp(r['ci_low'])}, {_pp(r['ci_high'])}]" if not math.isnan(r["ci_low"]) else "–"
        lines.append(f"| {r['claim']} | {r['verdict']} | {_pp(r['diff_mean'])} ± {100 * r['diff_std']:.2f} "
                     f"| {ci} | {r['wins']}/{r['seeds']} |")
    lines.append("")
    for r in rows:
        lines += [f"## {r['claim']}: {r['verdict']}", "", f"*Claim.* {r['text']}", "",
                  f"*Source.* {r['source']}", ""]
        if r["verdict"] in _NO_RESULT:
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


def write_report(rows: list[dict[str, Any]], root: Path, *, budget: str, partial: str | None = None) -> None:
    """Write ``claims.md``, ``claims.csv`` and ``figures/claims.png`` under ``root`` (``partial``: see
    :func:`claims_markdown`)."""
    from hardneg.figures.claims import claims_figure
    from hardneg.pipeline.run_folder import csv_text

    root.mkdir(parents=True, exist_ok=True)
    table = [{k: r.get(k, "") for k in _COLUMNS} for r in rows]
    atomic_write_text(root / "claims.csv", csv_text(table))
    atomic_write_text(root / "claims.md", claims_markdown(rows, budget=budget, partial=partial) + "\n")
    claims_figure(rows, root / "figures" / "claims.png", budget=budget)
