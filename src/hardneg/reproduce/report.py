"""The reproduction report: ``claims.md``, ``claims.csv`` and ``figures/claims.png``, written atomically."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from hardneg._io import atomic_write_text

__all__ = ["claims_markdown", "summary_table", "write_report"]

_COLUMNS = (
    "claim", "verdict", "text", "quote", "source", "data", "setting", "metric", "test", "margin",
    "paper_effect", "baseline", "contender", "baseline_mean", "baseline_std", "contender_mean",
    "contender_std", "diff_mean", "diff_std", "ci_low", "ci_high", "half_width", "wins", "seeds", "p_value",
    "p_holm", "statistic", "unit", "folder", "command",
)
_NO_RESULT = ("not run here", "interrupted")  # verdicts of rows without a measurement


def _scale(r: dict[str, Any]) -> tuple[float, str]:
    """Accuracies are printed ×100 in points; other units (bits) as they are."""
    unit = r.get("unit") or "points"
    return (100.0, "points") if unit == "points" else (1.0, unit)


def _pp(x: float, r: dict[str, Any] | None = None) -> str:
    k, _ = _scale(r or {})
    return f"{k * x:+.2f}" if k == 100.0 else f"{k * x:+.3g}"


def _effect(r: dict[str, Any]) -> str:
    k, _ = _scale(r)
    if r.get("test") == "equivalence":
        return f"parity (±{k * r['margin']:.1f})"
    effect = r.get("paper_effect")
    return f"{_pp(effect, r)}" if effect is not None else "not stated"


def _difference(r: dict[str, Any]) -> str:
    k, unit = _scale(r)
    suffix = "" if unit == "points" else f" {unit}"
    if math.isnan(r.get("half_width", math.nan)):
        return f"{_pp(r['diff_mean'], r)}{suffix} (no interval)"
    width = f"{k * r['half_width']:.2f}" if unit == "points" else f"{k * r['half_width']:.3g}"
    return f"{_pp(r['diff_mean'], r)} ± {width}{suffix}"


def _terms(r: dict[str, Any]) -> str:
    """Each term of the claim's statistic: ``name mean ± std`` (% for accuracies)."""
    k, unit = _scale(r)
    pct = " %" if unit == "points" else f" {unit}"
    terms = r.get("terms") or {
        r[side]: (r.get(f"{side}_mean", math.nan), r.get(f"{side}_std", math.nan))
        for side in ("baseline", "contender")
    }
    return ", ".join(f"{name} {k * m:.4g} ± {k * s:.2g}{pct}" for name, (m, s) in terms.items())


def summary_table(rows: list[dict[str, Any]]) -> str:
    """One line per claim: data, metric, difference ± 95 % half-width, the paper's effect, Holm p, verdict."""
    lines = ["| claim | data | metric | difference (95 % CI; points unless stated) | paper's effect "
             "| p (Holm) | verdict |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["verdict"] in _NO_RESULT:
            lines.append(f"| {r['claim']} | {r.get('data') or '–'} | {r['metric']} | – | {_effect(r)} | – "
                         f"| {r['verdict']} |")
            continue
        p = r.get("p_holm", math.nan)
        lines.append(f"| {r['claim']} | {r['data']} | {r['metric']} | {_difference(r)} | {_effect(r)} "
                     f"| {'–' if math.isnan(p) else f'{p:.3g}'} | {r['verdict']} |")
    return "\n".join(lines)


def claims_markdown(rows: list[dict[str, Any]], *, budget: str, partial: str | None = None) -> str:
    """The report as Markdown: how claims are judged, a summary table, one section per claim.

    ``partial``: the report is incomplete (an interrupted reproduction); the sentence is printed
    first and every claim without a result says ``interrupted``.
    """
    from hardneg import __version__
    from hardneg.pipeline.provenance import source_digest

    lines = [
        f"# Reproduction report (budget: {budget})",
        "",
        *([f"**Partial report**: {partial}", ""] if partial else []),
        "Each claim is tested as its paper states it, on a metric fixed in advance (the paper's own "
        "first), at the final epoch (nothing is chosen on test data), from the seed-paired differences "
        "contender − baseline (same seed: same initial weights, data order and evaluation folds). "
        "Superiority claims: one-sided paired t-test; parity claims: two one-sided tests (TOST) within "
        "the margin stated. All claims of this report form one family: Holm–Bonferroni at α = 0.05 "
        "(each claim's test and the test against it), so the chance of any wrong firm verdict is at "
        "most 5 %. A zero spread or one seed gives no verdict; a non-result whose 95 % half-width x "
        "exceeds the paper's effect is *inconclusive at ±x* (the budget could not show the effect), "
        "and one whose baseline leaves less room below 100 % than the paper's effect is *at the "
        "ceiling*. Differences: mean ± half-width of the 95 % Student-t interval, in points.",
        "",
        f"Code: hardneg {__version__}, source sha256 {source_digest()[:12]}; each run folder records "
        "its config hash (`provenance.json`).",
        "",
        summary_table(rows),
        "",
    ]
    for r in rows:
        lines += [f"## {r['claim']}: {r['verdict']}", "", f"*Claim.* {r['text']}", "",
                  f"*The paper.* “{r['quote']}” — {r['source']}.", ""]
        if r["verdict"] in _NO_RESULT:
            lines += [f"*Not run.* {r['setting']}", ""]
            if r.get("command"):
                lines += [f"*To run it.* `{r['command']}`", ""]
            continue
        margin = "" if r["margin"] is None else f", margin ±{100 * r['margin']:.1f} points"
        k, unit = _scale(r)
        statistic = r.get("statistic") or f"{r['contender']} − {r['baseline']}"
        points = " points" if unit == "points" else ""
        lines += [
            f"*Data.* {r['data']}. *Setting.* {r['setting']}; metric `{r['metric']}` ({r['test']}{margin}).",
            "",
            f"*Measured.* {_terms(r)}; per seed `{statistic}` = {_difference(r)}{points} "
            f"(std {k * r['diff_std']:.3g}), positive on {r['wins']} of {r['seeds']} seeds; "
            f"p = {r['p_value']:.3g}, Holm-adjusted {r['p_holm']:.3g}; "
            f"the paper's effect: {_effect(r)} (runs in `{r['folder']}`).",
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
