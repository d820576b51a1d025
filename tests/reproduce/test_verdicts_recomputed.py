"""Every verdict of the committed findings snapshots, recomputed from their per-seed values.

For each ``docs/results/reproduce-*.json``: the per-seed statistic of every claim is rebuilt from
the snapshot's per-run values (``groups``) and the claim's contrast, and its verdict is recomputed
here with SciPy and statsmodels **directly** — ``ttest_1samp`` (a paired t-test is a one-sample
test on the differences), ``multipletests(method="holm")``, ``TTestPower`` — without
``hardneg.reproduce.statistics``. The recomputation must give the outcome the report code
(:func:`hardneg.reproduce.statistics.judge`) gives on the same values, and the numbers the
snapshot printed (mean, SD, p-values) must be the recomputed ones.

The snapshot is read by field name only (``claims[*].claim / section / test / margin /
paper_effect / metric / unit / folder / diff_mean / diff_std / p_value / p_holm / outcome``,
``groups[*].runs[*].strategy / seed / values``, ``count``); where the schema changes, adapt
:func:`_snapshot_claims` and :func:`_per_seed`.

The rules recomputed (docs/claims.md): superiority reproduced when ``H0: μ ≤ 0`` is rejected,
opposite direction (two-sided, ``mean < 0``), smaller than the paper's (``H0: μ ≥ δ``);
equivalence by TOST and ``H0: |μ| ≤ Δ``; non-inferiority by ``H0: μ ≤ −Δ`` and ``H0: μ ≥ −Δ``;
all hypotheses of the planned claims in one Holm family at α = 0.05; a non-result is *not shown*
when the run's own SD gives ≥ 80 % power at δ (at the paper's difference for parity claims) at
``α / m``, else *underpowered*; theorem checks alone at α, unadjusted.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import integrate, stats
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.power import TTestPower

ALPHA = 0.05
ROOT = Path(__file__).resolve().parents[2]
SNAPSHOTS = sorted((ROOT / "docs" / "results").glob("reproduce-*.json"))

# Verdicts printed under an earlier rule, kept until the snapshot is regenerated: snapshot → claim →
# (printed outcome, outcome under the current rules, why). Delete an entry when its snapshot is rebuilt
# (the test fails if an entry no longer applies).
STALE: dict[str, dict[str, tuple[str, str, str]]] = {}  # none: every snapshot is current


def _snapshot_claims(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The claim rows that were measured (``seeds`` ≥ 1 and a ``folder``)."""
    return [c for c in doc["claims"] if c.get("folder") and c.get("seeds")]


def _contrast(claim_id: str, group: str) -> Any:
    """The claim's definition as the report used it (arms and weights: data, not statistics)."""
    from hardneg.reproduce.design import CLAIMS, EXPERIMENTS

    claim = next(c for c in CLAIMS if c.id == claim_id)
    return claim.measured_in(EXPERIMENTS[group]) if group in EXPERIMENTS else claim


def _per_seed(doc: dict[str, Any], row: dict[str, Any]) -> tuple[np.ndarray, float | None]:
    """The claim's per-seed statistic from the snapshot's runs, and the baseline's mean (for the
    ceiling; ``None`` for contrasts of more than two arms or units other than points)."""
    group = Path(row["folder"]).name
    runs = doc["groups"][group]["runs"]
    table: dict[str, dict[int, dict[str, float]]] = {}
    for r in runs:
        table.setdefault(r["strategy"], {})[int(r["seed"])] = r["values"]
    claim = _contrast(row["claim"], group)
    if claim.shift is not None:
        shift = claim.shift
        names = [n for n, _ in (*shift.low, *shift.high)]
        seeds = sorted(set.intersection(*(set(table[n]) for n in names)))

        def best(grid: tuple[tuple[str, int], ...], s: int) -> float:
            acc = np.array([table[n][s][shift.metric] for n, _ in grid])
            ks = [k for _, k in grid]
            return math.log2(min(k for k, a in zip(ks, acc) if a == acc.max()))

        return np.array([best(shift.high, s) - best(shift.low, s) for s in seeds]), None
    terms = claim.contrast
    seeds = sorted(set.intersection(*(set(table.get(t.strategy, {})) for t in terms)))
    seeds = [s for s in seeds if all(t.metric in table[t.strategy][s] for t in terms)]
    d = np.array([sum(t.weight * table[t.strategy][s][t.metric] for t in terms) for s in seeds])
    baseline = None
    if (row.get("unit") or "points") == "points" and len(terms) == 2:
        neg = next(t for t in terms if t.weight < 0)
        baseline = float(np.mean([table[neg.strategy][s][neg.metric] for s in seeds]))
    return d, baseline


def _names(row: dict[str, Any]) -> tuple[str, ...]:
    if row["test"] == "superiority" and row.get("paper_effect") is not None:
        return ("for", "against", "smaller")
    return ("for", "against")


def _pvalues(d: np.ndarray, row: dict[str, Any]) -> dict[str, float]:
    """Each hypothesis' p-value with scipy.stats.ttest_1samp (NaN: one seed or zero spread)."""
    mean, sd = float(d.mean()), float(d.std(ddof=1)) if d.size > 1 else math.nan
    if d.size < 2 or not sd > 1e-12 + 1e-9 * abs(mean):
        return dict.fromkeys(_names(row), math.nan)

    def t1(mu: float, alternative: str) -> float:
        return float(stats.ttest_1samp(d, mu, alternative=alternative).pvalue)

    kind, delta = row["test"], row.get("margin")
    if kind == "superiority":
        out = {"for": t1(0.0, "greater"), "against": t1(0.0, "two-sided") if mean < 0 else 1.0}
        if row.get("paper_effect") is not None:
            out["smaller"] = t1(row["paper_effect"], "less")
        return out
    if kind == "equivalence":
        return {"for": max(t1(-delta, "greater"), t1(delta, "less")),
                "against": min(1.0, 2 * min(t1(delta, "greater"), t1(-delta, "less")))}
    return {"for": t1(-delta, "greater"), "against": t1(-delta, "less")}


def _tost_power(mu: float, sd: float, n: int, delta: float, alpha: float) -> float:
    """TOST's power: bounded by statsmodels' one-sided powers (Chow, Shao & Wang 2008, §3.1), and
    integrated over the SD's chi-square law (scipy.integrate.quad) only where the bounds straddle 80 %."""
    power = TTestPower()
    upper_side = float(power.power((delta - mu) / sd, n, alpha, alternative="larger"))
    lower_side = float(power.power((delta + mu) / sd, n, alpha, alternative="larger"))
    if min(upper_side, lower_side) < 0.8:
        return min(upper_side, lower_side)
    if upper_side + lower_side - 1 >= 0.8:
        return upper_side + lower_side - 1
    df, c = n - 1, stats.t.ppf(1 - alpha, n - 1)

    def given(v: float) -> float:
        half = c * sd * math.sqrt(v / df / n)
        lo, hi = (-delta + half - mu) * math.sqrt(n) / sd, (delta - half - mu) * math.sqrt(n) / sd
        return max(0.0, stats.norm.cdf(hi) - stats.norm.cdf(lo)) * stats.chi2.pdf(v, df)

    return float(integrate.quad(given, 0, df * (delta * math.sqrt(n) / (c * sd)) ** 2, limit=400)[0])


def _power_at_paper(d: np.ndarray, row: dict[str, Any], alpha: float) -> float:
    sd, n = float(d.std(ddof=1)), d.size
    kind, delta, paper = row["test"], row.get("margin"), row.get("paper_effect")
    if kind == "superiority":
        return float(TTestPower().power(paper / sd, n, alpha, alternative="larger"))
    mu = 0.0 if paper is None else paper
    if kind == "noninferiority":
        return float(TTestPower().power((mu + delta) / sd, n, alpha, alternative="larger"))
    return _tost_power(mu, sd, n, delta, alpha)


def _recomputed(d: np.ndarray, row: dict[str, Any], rejected: dict[str, bool], alpha_design: float,
                baseline: float | None) -> str:
    """The outcome, by the rules of docs/claims.md, from this file's own numbers."""
    mean = float(d.mean())
    if d.size < 2:
        return "no verdict (one seed)"
    if not float(d.std(ddof=1)) > 1e-12 + 1e-9 * abs(mean):
        return "no verdict (zero spread)"
    kind, paper = row["test"], row.get("paper_effect")
    needed = {"superiority": paper, "equivalence": row.get("margin")}.get(kind)
    if baseline is not None and needed is not None and 1.0 - baseline < needed:
        return "ceiling"
    if kind != "superiority":
        if rejected["for"]:
            return ("reproduced (equivalent)" if kind == "equivalence"
                    else "reproduced (not worse by the margin)")
        if rejected["against"]:
            return "not equivalent" if kind == "equivalence" else "worse than the margin"
    else:
        if rejected["for"]:
            return "reproduced, smaller than the paper's" if rejected.get("smaller") else "reproduced"
        if rejected["against"]:
            return "opposite direction"
        if rejected.get("smaller"):
            return "smaller than the paper's"
        if paper is None:
            return "not shown (the paper states no effect size)"
    return "not shown" if _power_at_paper(d, row, alpha_design) >= 0.8 else "underpowered"


def _family(doc: dict[str, Any]) -> tuple[list[dict[str, Any]], int]:
    """The measured claims of the family and ``m``, the hypotheses of every planned claim."""
    claims = [c for c in doc["claims"] if (c.get("section") or "claim") == "claim"]
    planned = re.search(r"of the (\d+) planned", doc.get("count") or "")
    if planned is not None:
        assert int(planned.group(1)) == len(claims), "the snapshot lists every planned claim"
    return [c for c in _snapshot_claims(doc) if c in claims], sum(len(_names(c)) for c in claims)


@pytest.mark.skipif(not SNAPSHOTS, reason="no committed snapshot")
@pytest.mark.parametrize("path", SNAPSHOTS, ids=[p.name for p in SNAPSHOTS])
def test_every_printed_verdict_is_recomputed(path: Path) -> None:
    from hardneg.reproduce.statistics import ClaimTest, judge

    doc = json.loads(path.read_text(encoding="utf-8"))
    measured, m = _family(doc)
    values = {c["claim"]: _per_seed(doc, c) for c in measured}
    p = {c["claim"]: _pvalues(values[c["claim"]][0], c) for c in measured}
    keys = [(c["claim"], h) for c in measured for h in _names(c)]
    flat = [p[c][h] for c, h in keys]
    tested = [i for i, x in enumerate(flat) if not math.isnan(x)]
    padded = [flat[i] for i in tested] + [1.0] * (m - len(tested))  # not run, or no test: p = 1
    reject, adjusted, _, _ = multipletests(padded, alpha=ALPHA, method="holm")
    rej = dict.fromkeys(keys, False)
    adj = dict.fromkeys(keys, math.nan)
    for j, i in enumerate(tested):
        rej[keys[i]], adj[keys[i]] = bool(reject[j]), float(adjusted[j])

    tests = {c["claim"]: ClaimTest(c["test"], margin=c.get("margin"), paper_effect=c.get("paper_effect"))
             for c in doc["claims"] if (c.get("section") or "claim") == "claim"}
    report = judge({c: v[0] for c, v in values.items()}, tests, ALPHA, planned=list(tests),
                   headroom={c: 1.0 - v[1] for c, v in values.items() if v[1] is not None})
    stale = dict(STALE.get(path.name, {}))
    for c in measured:
        name = c["claim"]
        d, baseline = values[name]
        # the numbers the snapshot printed are this file's
        assert c["diff_mean"] == pytest.approx(float(d.mean()), rel=1e-9, abs=1e-12), name
        assert c["diff_std"] == pytest.approx(float(d.std(ddof=1)), rel=1e-9), name
        assert c["p_value"] == pytest.approx(p[name]["for"], rel=1e-9), name
        assert c["p_holm"] == pytest.approx(adj[name, "for"], rel=1e-9), name
        for h, field in (("against", "p_against_holm"), ("smaller", "p_smaller_holm")):
            if c.get(field) is not None and (name, h) in adj:
                assert c[field] == pytest.approx(adj[name, h], rel=1e-9), (name, field)
        mine = _recomputed(d, c, {h: rej[name, h] for h in _names(c)}, ALPHA / m, baseline)
        # the report code agrees with the recomputation ...
        assert report[name].outcome == mine, name
        assert report[name].p_holm == pytest.approx(adj[name, "for"], rel=1e-9), name
        # ... and so does the snapshot, except a verdict printed under an earlier rule
        if name in stale:
            printed, now, why = stale.pop(name)
            assert (c["outcome"], mine) == (printed, now), f"{name}: its STALE entry is out of date ({why})"
        else:
            assert c["outcome"] == mine, name
    assert not stale, f"STALE lists claims the snapshot does not hold: {sorted(stale)}"


@pytest.mark.skipif(not SNAPSHOTS, reason="no committed snapshot")
@pytest.mark.parametrize("path", SNAPSHOTS, ids=[p.name for p in SNAPSHOTS])
def test_every_theorem_check_is_recomputed(path: Path) -> None:
    """Theorem checks: one-sided t-tests alone at α, unadjusted: holds / violated / no verdict."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    checked = 0
    for c in _snapshot_claims(doc):
        if c.get("section") != "theorem":
            continue
        d, _ = _per_seed(doc, c)
        if d.size == 0:  # the snapshot keeps only the claims' metrics, not every check's: nothing to redo
            continue
        p = stats.ttest_1samp(d, 0.0, alternative="greater").pvalue
        against = stats.ttest_1samp(d, 0.0).pvalue if d.mean() < 0 else 1.0
        assert c["p_value"] == pytest.approx(p, rel=1e-9) and c["diff_mean"] == pytest.approx(d.mean())
        want = "holds" if p <= ALPHA else "violated" if against <= ALPHA else None
        if want is not None:
            assert c["verdict"] == want, c["claim"]
        checked += 1
    if not checked:
        pytest.skip("the snapshot keeps no theorem check's per-run metrics (only the claims' own)")
