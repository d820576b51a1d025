"""The reproduction report: ``claims.md``, ``claims.csv``, ``claims.json`` and ``figures/claims.png``, written
atomically."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from hardneg._io import atomic_write_text

__all__ = ["claims_markdown", "report_json", "summary_table", "write_report"]

_COLUMNS = (
    "claim", "section", "verdict", "outcome", "exploratory", "status", "text", "quote", "source", "design",
    "data", "setting", "metric", "test", "margin", "paper_effect", "baseline", "contender", "baseline_mean",
    "baseline_std", "contender_mean", "contender_std", "diff_mean", "diff_std", "ci_low", "ci_high",
    "ci_level", "alpha_for", "half_width", "wins", "seeds", "alpha_design", "mde_design", "mde_observed",
    "mde_basis", "seeds_needed", "power_design", "power_observed", "question", "paper_difference",
    "delta_source", "p_value", "p_holm", "p_against", "p_against_holm", "p_smaller", "p_smaller_holm",
    "statistic", "unit", "optimum", "install", "selection",
    "folder", "command",
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
        return f"parity (±{k * r['margin']:.2g})"
    if r.get("test") == "noninferiority":
        return f"not worse by {k * r['margin']:.2g}"
    effect = r.get("paper_effect")
    return f"{_pp(effect, r)}" if effect is not None else "not stated"


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _difference(r: dict[str, Any]) -> str:
    """``mean [low, high] (level %)``: the interval at the level of the claim's own test (its Holm
    level, so that it excludes 0 or the margin exactly when the verdict says so); ``mean ± half-width``
    (95 %) for rows written before the Holm-level interval existed."""
    k, unit = _scale(r)
    suffix = "" if unit == "points" else f" {unit}"
    if _finite(r.get("ci_level")) and _finite(r.get("ci_low")) and _finite(r.get("ci_high")):
        ends = ", ".join(f"{k * r[e]:+.2f}" if k == 100.0 else f"{k * r[e]:+#.3g}"
                         for e in ("ci_low", "ci_high"))
        return f"{_pp(r['diff_mean'], r)} [{ends}]{suffix} ({_level(r['ci_level'])})"
    if math.isnan(r.get("half_width", math.nan)):
        return f"{_pp(r['diff_mean'], r)}{suffix} (no interval)"
    width = f"{k * r['half_width']:.2f}" if unit == "points" else f"{k * r['half_width']:.3g}"
    return f"{_pp(r['diff_mean'], r)} ± {width}{suffix}"


def _level(confidence: float) -> str:
    """A confidence as a percentage with the digits it needs: ``99.7 %``, ``99.86 %``, ``90 %``."""
    pct = 100 * confidence
    for digits in range(0, 6):
        text = f"{pct:.{digits}f}"
        if abs(float(text) - pct) < 0.05 * (100 - pct) or digits == 5:
            return f"{text} %"
    return f"{pct} %"  # pragma: no cover


def _terms(r: dict[str, Any]) -> str:
    """Each term of the claim's statistic: ``name mean ± std`` (% for accuracies)."""
    k, unit = _scale(r)
    pct = " %" if unit == "points" else f" {unit}"
    terms = r.get("terms") or {
        r[side]: (r.get(f"{side}_mean", math.nan), r.get(f"{side}_std", math.nan))
        for side in ("baseline", "contender")
    }
    return ", ".join(f"{name} {k * m:.4g} ± {k * s:.2g}{pct}" for name, (m, s) in terms.items())


def _mde(r: dict[str, Any]) -> str:
    """``design / observed`` minimum detectable effects (``–`` where not computable)."""
    k, _ = _scale(r)
    parts = [("–" if not math.isfinite(v) else f"{k * v:.2f}" if k == 100.0 else f"{k * v:.3g}")
             for v in (r.get("mde_design", math.nan), r.get("mde_observed", math.nan))]
    return " / ".join(parts)


def _p(x: Any) -> str:
    return "–" if x is None or x == "" or math.isnan(x) else f"{x:.3g}"


def summary_table(rows: list[dict[str, Any]]) -> str:
    """One line per claim: data, metric, difference with its interval at the verdict's level, the
    paper's effect, the MDE (design / observed), the Holm p (unadjusted for an exploratory run),
    verdict."""
    lines = ["| claim | data | metric | difference [interval at the verdict's level] (points unless "
             "stated) | paper's effect "
             "| MDE, 80 % power (design / observed) | p (Holm) | verdict | status |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["verdict"] in _NO_RESULT:
            lines.append(f"| {r['claim']} | {r.get('data') or '–'} | {r['metric']} | – | {_effect(r)} "
                         "| – | – "
                         f"| {r['verdict']} | {_status(r)} |")
            continue
        lines.append(f"| {r['claim']} | {r['data']} | {r['metric']} | {_difference(r)} | {_effect(r)} "
                     f"| {_mde(r)} | {_p(r.get('p_holm'))} | {r['verdict']} | {_status(r)} |")
    return "\n".join(lines)


def _status(r: dict[str, Any]) -> str:
    """``confirmatory`` or ``exploratory`` (the reason is in the claim's section); ``–`` for rows
    written before registration existed."""
    status = str(r.get("status") or "")
    return status.split(":", 1)[0] if status else "–"


def _count(rows: list[dict[str, Any]], budget: str) -> str:
    """How many claims of the family were reproduced, of those planned (theorem checks apart)."""
    from hardneg.reproduce.design import planned_claims
    from hardneg.reproduce.statistics import EQUIVALENT, NONINFERIOR, REPRODUCED, REPRODUCED_SMALLER

    planned = {c.id for c in planned_claims(budget)}
    done = [r for r in rows if r["claim"] in planned
            and r.get("outcome") in (REPRODUCED, REPRODUCED_SMALLER, EQUIVALENT, NONINFERIOR)]
    ran = [r for r in rows if r["claim"] in planned and r.get("outcome")]
    confirmed = [r for r in ran if r.get("status") == "confirmatory"]
    registered = (f" {len(confirmed)} of the {len(ran)} verdicts confirmatory (design and pilot committed "
                  "before the runs)." if any(r.get("status") for r in rows) else "")
    return (f"Claims reproduced: {len(done)} of the {len(planned)} planned for this budget ({len(ran)} "
            f"judged here; theorem checks apart, below).{registered}")


_HOW = (
    "Each claim is tested as its paper states it, on a metric fixed in advance (the paper's own "
    "first), at the final epoch (nothing is chosen on test data), from the seed-paired differences "
    "contender − baseline (same seed: same initial weights, data order and evaluation folds). "
    "Superiority claims: paired t-tests (reproduced: H0 μ ≤ 0; opposite direction: two-sided; smaller "
    "than the paper's: H0 μ ≥ the paper's effect); parity claims: two one-sided tests (TOST) within a "
    "margin derived from the paper, or, where the paper's words are one-sided, non-inferiority "
    "(H0 μ ≤ −margin). Every claim planned for this budget is in one Holm family fixed "
    "in advance (a claim that did not run counts as planned), so the chance of any wrong firm verdict "
    "is at most 5 %. *Not shown* needs at least 80 % power at the paper's effect (for parity: to meet "
    "the margin at the paper's own difference) with the run's own SD at the Holm level of the first "
    "step α/m; otherwise the non-result is *underpowered*. The minimum detectable effect (MDE, 80 % "
    "power at α/m) is shown twice: from the design's pilot SD and from the run's own SD (the one that "
    "decides). A baseline leaving less room below 100 % than the paper's effect "
    "(or the margin) gives *ceiling*; one seed or a zero spread, *no verdict*. Differences: mean "
    "[interval], in points, the interval at the level Holm tested the claim's own hypothesis at "
    "(two-sided 1 − 2α_i: its lower end is the one-sided bound of a superiority or non-inferiority "
    "test, the whole interval TOST's), so an interval excludes 0 (or the margin) exactly when its "
    "verdict says reproduced. Definitions: docs/claims.md."
)
_EXPLORATORY = (
    "**Exploratory** (`--only`): these claims ran alone; their p-values are unadjusted and their "
    "verdicts are not the family's (the full report, `claims.md`, is the one that counts). The MDE is "
    "at α = 0.05."
)


def _smaller(r: dict[str, Any]) -> str:
    """The test of ``H0: μ ≥ paper's effect``, when the claim has one."""
    p = r.get("p_smaller")
    if p is None or p == "" or math.isnan(p):
        return ""
    return f"; smaller than the paper's: p = {_p(p)}, adjusted {_p(r.get('p_smaller_holm'))}"


def _power(r: dict[str, Any]) -> str:
    """``; power 0.31 (design) / 0.12 (observed)`` when the row has them."""
    names = (("power_design", "design"), ("power_observed", "observed"))
    parts = [f"{r[k]:.2g} ({name})" for k, name in names if _finite(r.get(k))]
    return f"; power {' / '.join(parts)}" if parts else ""


def _claim_section(r: dict[str, Any]) -> list[str]:
    lines = [f"## {r['claim']}: {r['verdict']}", "", f"*Claim.* {r['text']}", "",
             f"*The paper.* “{r['quote']}” — {r['source']}.", ""]
    if r.get("design"):
        lines += [f"*Design.* {r['design']}.", ""]
    if r.get("delta_source"):
        lines += [f"*The paper's effect δ.* {r['delta_source']}.", ""]
    if r.get("status"):
        lines += [f"*Status.* {r['status']}.", ""]
    if r["verdict"] in _NO_RESULT:
        lines += [f"*Not run.* {r['setting']}", ""]
        if r.get("command"):
            lines += [f"*To run it.* `{r['command']}`", ""]
        return lines
    margin = "" if r["margin"] is None else f", margin {'' if r['test'] == 'noninferiority' else '±'}" \
        f"{100 * r['margin']:.2g} points"
    k, unit = _scale(r)
    statistic = r.get("statistic") or f"{r['contender']} − {r['baseline']}"
    points = " points" if unit == "points" else ""
    mde = ""
    if "mde_design" in r:
        design, observed = _mde(r).split(" / ")
        basis = ("the run's own SD decides" if r.get("mde_basis") == "observed"
                 else f"{r['mde_basis']} SD decides")
        mde = (f"; MDE at 80 % power (α = {r['alpha_design']:.3g}): design {design} (pilot SD), "
               f"observed {observed}{points} ({basis}){_power(r)}")
    return [
        *lines,
        f"*Data.* {r['data']}. *Setting.* {r['setting']}; metric `{r['metric']}` ({r['test']}{margin}).",
        "",
        f"*Measured.* {_terms(r)}; per seed `{statistic}` = {_difference(r)}{points} "
        f"(std {k * r['diff_std']:.3g}), positive on {r['wins']} of {r['seeds']} seeds; "
        f"p = {r['p_value']:.3g}, Holm-adjusted {_p(r.get('p_holm'))}; "
        f"against: p = {_p(r.get('p_against'))}, "
        f"adjusted {_p(r.get('p_against_holm'))}{_smaller(r)}; the paper's effect: {_effect(r)}{mde} "
        f"(runs in `{r['folder']}`).",
        "",
        *([f"*Optimum.* {r['optimum']}.", ""] if r.get("optimum") else []),
        *([f"*Setting chosen first.* {r['selection']}.", ""] if r.get("selection") else []),
    ]


def _registered(reg: dict[str, Any] | None) -> list[str]:
    """The design line: its file, SHA-256, and whether it (and its pilot) were committed when the
    runs began."""
    if not reg:
        return []
    pilot = f" and its pilot `designs/pilots/{reg['pilot']}`" if reg.get("pilot") else " (no pilot)"
    when = (f"committed (at {reg['commit']}) before the runs began on {reg['began']}" if reg.get("committed")
            else f"not committed when the runs began ({reg['commit']}): every verdict is exploratory")
    return [f"Design: `designs/{reg['design']}` (sha256 {reg['design_sha256'][:12]}){pilot}, {when}. "
            "A verdict is *confirmatory* when its design and pilot were fixed before its runs and "
            "are unchanged since; otherwise *exploratory*, with the reason.", ""]


def claims_markdown(rows: list[dict[str, Any]], *, budget: str, partial: str | None = None,
                    registration: dict[str, Any] | None = None) -> str:
    """The report as Markdown: how claims are judged, the claims' table, the theorem checks, one
    section per claim.

    ``partial``: the report is incomplete (an interrupted reproduction); the sentence is printed
    first and every claim without a result says ``interrupted``. Rows marked ``exploratory`` (an
    ``--only`` run) make the report say so first.
    """
    from hardneg import __version__
    from hardneg.pipeline.provenance import source_digest

    claims = [r for r in rows if r.get("section", "claim") == "claim"]
    theorems = [r for r in rows if r.get("section") == "theorem"]
    exploratory = any(r.get("exploratory") for r in rows)
    lines = [
        f"# Reproduction report (budget: {budget}){' — exploratory' if exploratory else ''}",
        "",
        *([f"**Partial report**: {partial}", ""] if partial else []),
        *([_EXPLORATORY, ""] if exploratory else []),
        _HOW,
        "",
        f"Code: hardneg {__version__}, source sha256 {source_digest()[:12]}; each run folder records "
        "its config hash (`provenance.json`).",
        "",
        *_registered(registration),
    ]
    hints = sorted({r["install"] for r in rows if r.get("install")})
    if hints:
        lines += ["**Data not installed**: some claims ran on an embedded fallback (their `data` column "
                  "says which). To run them on the real data, install it: " + "; ".join(hints) + ".", ""]
    if claims:
        lines += [summary_table(claims), "", *([] if exploratory else [_count(claims, budget), ""])]
    if theorems:
        lines += ["## Theorem checks", "",
                  "A theorem checked on measured quantities (the bound minus the loss it bounds): a "
                  "check of the measurement, tested alone (one-sided, α = 0.05: *holds* / *violated*), "
                  "outside the claims' family and their count.", "", summary_table(theorems), ""]
    for r in rows:
        lines += _claim_section(r)
    return "\n".join(lines)


def _json_value(x: Any) -> Any:
    """A JSON-safe cell: NumPy scalars become Python numbers, NaN and infinities ``None``."""
    if hasattr(x, "item") and not isinstance(x, (str, bytes)):
        x = x.item()
    return None if isinstance(x, float) and not math.isfinite(x) else x


def report_json(
    rows: list[dict[str, Any]], *, budget: str, partial: str | None = None, seconds: float | None = None,
    registration: dict[str, Any] | None = None,
) -> str:
    """``<stem>.json``: the rows of ``<stem>.csv`` (NaN as ``null``) with what produced them — the budget,
    the commit (:func:`~hardneg.reproduce.snapshot.source_commit`), the source digest, the wall time
    ``seconds`` (``null`` when not given), the count of claims reproduced, and whether the report is
    partial or exploratory."""
    import json

    from hardneg.pipeline.provenance import source_digest
    from hardneg.reproduce.snapshot import source_commit

    claims = [r for r in rows if r.get("section", "claim") == "claim"]
    exploratory = any(r.get("exploratory") for r in rows)
    doc = {"budget": budget, "commit": source_commit(), "source_sha256": source_digest()[:12],
           "seconds": seconds, "partial": partial is not None, "exploratory": exploratory,
           "registration": registration,
           "count": _count(claims, budget) if claims and not exploratory else None,
           "rows": [{k: _json_value(r.get(k, "")) for k in _COLUMNS} for r in rows]}
    return json.dumps(doc, indent=1, ensure_ascii=False, allow_nan=False) + "\n"


def write_report(
    rows: list[dict[str, Any]], root: Path, *, budget: str, partial: str | None = None, stem: str = "claims",
    seconds: float | None = None, registration: dict[str, Any] | None = None,
) -> None:
    """Write ``<stem>.md``, ``<stem>.csv``, ``<stem>.json`` and ``figures/<stem>.png`` under ``root``
    (``partial``: see :func:`claims_markdown`; ``stem``: ``claims``, or ``claims-only-<ids>`` for an
    exploratory run; ``seconds``: the wall time so far, recorded in ``<stem>.json``; see
    :func:`report_json`)."""
    from hardneg.figures.claims import claims_figure
    from hardneg.pipeline.run_folder import csv_text

    root.mkdir(parents=True, exist_ok=True)
    table = [{k: r.get(k, "") for k in _COLUMNS} for r in rows]
    atomic_write_text(root / f"{stem}.csv", csv_text(table))
    atomic_write_text(root / f"{stem}.json",
                      report_json(rows, budget=budget, partial=partial, seconds=seconds,
                                  registration=registration))
    atomic_write_text(root / f"{stem}.md",
                      claims_markdown(rows, budget=budget, partial=partial, registration=registration) + "\n")
    claims_figure(rows, root / "figures" / f"{stem}.png", budget=budget)
