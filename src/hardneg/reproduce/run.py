"""``hardneg reproduce``: run the claims' comparisons, judge them together, write ``claims.md``.

Each experiment of :data:`~hardneg.reproduce.design.EXPERIMENTS` is an ordinary ``hardneg compare``
under ``OUT/<budget>/<experiment>/``. A finished run is reused only when its recorded config and
code equal the job's (``provenance.json``), so a changed claim, budget or code is trained again —
never a stale number. Every claim reads the seed-paired differences ``contender − baseline`` of its
metric (fixed in advance; the final epoch; nothing chosen on test data) and the claims are judged
in one Holm family fixed in advance: every claim of the budget, run or not
(:func:`~hardneg.reproduce.statistics.judge`), with a minimum detectable effect from each claim's
design. Theorem checks (a bound on measured losses) are judged apart, outside the family. A run
restricted with ``only`` is *exploratory*: unadjusted p-values, no family verdict, and its report is
written beside the full one (``claims-only-<ids>.md``), never over it. A claim whose baseline leaves
less room below 100 % than the paper's effect (or the margin) is reported as at the ceiling. An
experiment whose data is not installed runs
its embedded fallback (the report says which ran) or is listed with the command that runs it.
"""

from __future__ import annotations

import json
import math
import shlex
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from hardneg.config.errors import ConfigError
from hardneg.reproduce.claims import Claim, Experiment, OptimumShift
from hardneg.reproduce.design import Design, load_design, planned_claims
from hardneg.reproduce.registration import claim_status, register

__all__ = [
    "ReproduceInterrupted",
    "ReproduceResult",
    "claim_values",
    "command_for",
    "experiment_config",
    "judge_rows",
    "optimum_bootstrap",
    "planned_claims",
    "report_stem",
    "resume_command",
    "run_pilot",
    "run_reproduce",
]

ALPHA = 0.05  # family-wise error rate of one report


@dataclass
class ReproduceResult:
    """One row per claim (see :func:`run_reproduce`) and the folder they were written to."""

    rows: list[dict[str, Any]]
    root: Path
    seconds: float = 0.0
    report: Path | None = None  # claims.md, or claims-only-<ids>.md for an exploratory run


class ReproduceInterrupted(Exception):
    """Ctrl-C (or SIGTERM) stopped a reproduction; ``result`` is the partial report written."""

    def __init__(self, result: ReproduceResult) -> None:
        super().__init__(f"interrupted; partial report in {result.report or result.root / 'claims.md'}")
        self.result = result


def _select(budget: str, only: Sequence[str] | None) -> list[Claim]:
    design = load_design(budget)
    known = {c.id for c in design.claims}
    unknown = sorted(set(only or ()) - known)
    if unknown:
        raise ValueError(f"--only takes claim ids of budget {budget!r} among {sorted(known)}, got {unknown}")
    return [c for c in design.claims if not only or c.id in only]


def experiment_config(
    exp: Experiment, budget: str, *, data: Mapping[str, str] | None = None, device: str | None = None
) -> Any:
    """The validated ``compare`` config of ``exp`` at ``budget`` (``data``: data set → root folder;
    ``device``: ``cpu`` / ``gpu``, overriding the budget's ``train.accelerator``)."""
    from hardneg.pipeline.config import load_config

    overrides: dict[str, Any] = dict(exp.budgets[budget])
    if exp.needs is not None and data and exp.needs in data:
        overrides["data.root"] = data[exp.needs]
    if device is not None:
        overrides["train.accelerator"] = device
    overrides["compare.strategies"] = [{"name": n, "overrides": dict(ov)} for n, ov in exp.strategies.items()]
    overrides["name"] = exp.id
    return load_config(exp.config, overrides)


def report_stem(budget: str, only: Sequence[str] | None) -> str:
    """``claims`` for the full report; ``claims-only-<ids>`` (ids in the claims' order, joined by
    ``+``) for an exploratory ``only`` run, written beside it. The ids are checked claim ids."""
    if not only:
        return "claims"
    return "claims-only-" + "+".join(c.id for c in _select(budget, only))


def resume_command(budget: str, out: Path, only: Sequence[str] | None) -> str:
    """The command that continues an interrupted reproduction (keeping its ``--only``)."""
    args = ["hardneg", "reproduce", "--budget", budget, "--out", str(out)]
    for claim in only or ():
        args += ["--only", claim]
    return shlex.join(args)


def command_for(claim: Claim, budget: str, out: Path) -> str:
    """The command that runs ``claim`` once its data (and device) are there."""
    exp = load_design(budget).experiments[claim.experiment]
    args = ["hardneg", "reproduce", "--budget", budget, "--only", claim.id, "--out", str(out)]
    if exp.needs is not None:
        args += ["--data", f"{exp.needs}=DIR"]
    return shlex.join(args)


def _missing(cfg: Any, needs: str | None) -> str | None:
    """Why ``cfg``'s experiment cannot run here (its data or its device), or ``None``. Only data an
    experiment ``needs`` (installed apart) is loaded to see: embedded data is always there, and
    loading it would import what a reused run never needs (PyTorch Geometric for the motifs)."""
    from hardneg.modalities import get_modality  # not pipeline.experiment: no Lightning to reuse runs

    if cfg.train.accelerator == "gpu":
        import torch

        if not torch.cuda.is_available():
            return "needs a GPU (none here; --device cpu runs it on the CPU, for days)"
    if needs is None:
        return None
    try:
        get_modality(cfg.data.dataset).load(cfg)
    except (OSError, ConfigError) as err:
        return f"needs its data ({' '.join(str(err).split())})"
    return None


def select_setting(
    exp: Experiment, budget: str, root: Path, *, force: bool = False, device: str | None = None,
    data: Mapping[str, str] | None = None, echo: Callable[[str], None] = print,
) -> tuple[Experiment, dict[str, str]]:
    """``exp`` with its :class:`~hardneg.reproduce.claims.Selection` applied at ``budget``.

    Runs the candidates on the selection's independent draw (a ``hardneg compare`` in
    ``root/budget/<exp.id>-selection``, reused like any other; ``data``: data set → root folder, as
    for the experiment itself), picks the candidate by the paper's rule and returns the experiment
    whose ``strategy`` takes the chosen overrides, with ``{"selection": "<what was chosen, from which
    means>"}`` for the report.
    """
    from hardneg.pipeline.groups import run_compare

    sel = exp.selection
    assert sel is not None
    picked = replace(exp, id=f"{exp.id}-selection", strategies=sel.candidates, selection=None,
                     budgets={budget: {**exp.budgets[budget], **sel.budgets[budget]}})
    cfg = experiment_config(picked, budget, data=data, device=device)
    folder = root / budget / picked.id
    echo(f"reproduce: {picked.id} ({len(sel.candidates)} candidates for {sel.strategy!r} x "
         f"{len(cfg.compare.seeds)} seeds, {cfg.train.epochs} epochs) -> {folder}")
    result = run_compare(cfg, folder, resume=not force, force=force, quiet=True, echo=echo)
    means = {label: sum(float(r.eval[sel.metric]) for r in runs) / len(runs)
             for label, runs in result.runs.items() if runs}
    best = sel.choose(means)
    shown = ", ".join(f"{name} {means[name]:.4g}" for name in sel.candidates)
    note = (f"{sel.strategy} = {best}, the paper's rule (best mean {sel.metric}) applied to independent "
            f"runs ({', '.join(f'{k}={v}' for k, v in sel.budgets[budget].items())}): {shown}")
    strategies = {**exp.strategies, sel.strategy: {**exp.strategies[sel.strategy], **sel.candidates[best]}}
    return replace(exp, strategies=strategies), {"selection": note}


def _setting(exp: Experiment, cfg: Any) -> str:
    d = cfg.data
    subset = f", {d.train_subset} training items" if getattr(d, "train_subset", None) else ""
    return (f"{exp.setting}{subset}; {cfg.train.epochs} epochs, batch {cfg.train.batch_size}, "
            f"seeds {list(cfg.compare.seeds)}")


def _value(run: Any, metric: str) -> float:
    """``metric`` of one run: from its evaluation, or derived from its files (:mod:`.derived`)."""
    from hardneg.reproduce.derived import DERIVED, derived_metric

    if metric in DERIVED:
        return derived_metric(run.run_dir, metric)
    return float(run.eval[metric])


def claim_values(
    claim: Claim, runs: Mapping[str, Mapping[int, Any]]
) -> tuple[list[float], dict[str, list[float]]]:
    """The claim's statistic per seed, and each term's values, from ``runs`` (label → seed → run).

    The statistic of seed k is ``Σ weight × metric(strategy, k)`` over the claim's terms
    (:attr:`Claim.contrast`; by default ``contender − baseline``), on the seeds where every term was
    measured. Returns ``(statistics, {"strategy metric": values})``.
    """
    if claim.shift is not None:
        return _shift_values(claim.shift, runs)
    terms = claim.contrast
    seeds = sorted(set.intersection(*(set(runs.get(t.strategy, {})) for t in terms)))
    stats: list[float] = []
    sides: dict[str, list[float]] = {f"{t.strategy} {t.metric}": [] for t in terms}
    for s in seeds:
        try:
            values = [_value(runs[t.strategy][s], t.metric) for t in terms]
        except KeyError:  # a metric the run did not evaluate: that seed is not paired
            continue
        stats.append(sum(t.weight * v for t, v in zip(terms, values)))
        for t, v in zip(terms, values):
            sides[f"{t.strategy} {t.metric}"].append(v)
    return stats, sides


def _grid_values(shift: OptimumShift, runs: Mapping[str, Mapping[int, Any]]) -> dict[int, dict[str, float]]:
    """seed → strategy → metric, on the seeds where every strategy of the grid was measured."""
    seeds = sorted(set.intersection(*(set(runs.get(name, {})) for name in shift.strategies)))
    out: dict[int, dict[str, float]] = {}
    for s in seeds:
        try:
            out[s] = {name: _value(runs[name][s], shift.metric) for name in shift.strategies}
        except KeyError:  # a metric the run did not evaluate: that seed is not paired
            continue
    return out


def _shift_values(
    shift: OptimumShift, runs: Mapping[str, Mapping[int, Any]]
) -> tuple[list[float], dict[str, list[float]]]:
    """:func:`claim_values` of an :class:`~hardneg.reproduce.claims.OptimumShift` claim: per seed
    ``log2 K*(high) − log2 K*(low)``, and each side's ``log2 K*``."""
    grid = _grid_values(shift, runs)
    low = [math.log2(shift.best(v, shift.low)) for v in grid.values()]
    high = [math.log2(shift.best(v, shift.high)) for v in grid.values()]
    stats = [h - lo for lo, h in zip(low, high, strict=True)]  # OptimumShift.value, per seed
    return stats, {"log2 best K, fewer classes": low, "log2 best K, more classes": high}


def optimum_bootstrap(
    shift: OptimumShift, runs: Mapping[str, Mapping[int, Any]], *, resamples: int = 2000, seed: int = 0
) -> str:
    """The argmax K of the seeds' mean curve at each number of classes, with its bootstrap 95 %
    interval (seeds resampled with replacement, the same draw for every cell: the design is paired),
    and the mean curves, as one sentence of the report."""
    import numpy as np

    grid = _grid_values(shift, runs)
    if len(grid) < 2:
        return ""
    names = list(shift.strategies)
    acc = np.array([[v[n] for n in names] for v in grid.values()])  # (seeds, cells)
    rng = np.random.default_rng(seed)
    draws = acc[rng.integers(0, len(acc), size=(resamples, len(acc)))].mean(axis=1)  # (resamples, cells)
    parts = []
    for label, cells in (("fewer classes", shift.low), ("more classes", shift.high)):
        idx = [names.index(n) for n, _ in cells]
        ks = np.array([k for _, k in cells])
        mean_curve = acc[:, idx].mean(axis=0)
        best = [int(ks[int(np.argmax(row))]) for row in draws[:, idx]]
        lo = int(np.percentile(best, 2.5, method="lower"))
        hi = int(np.percentile(best, 97.5, method="higher"))
        curve = ", ".join(f"K={k}: {100 * m:.1f}" for k, m in zip(ks, mean_curve))
        parts.append(f"{cells[0][0].split('-')[0]} ({label}): best K of the mean curve "
                     f"{int(ks[int(np.argmax(mean_curve))])} (bootstrap 95 %: {lo}–{hi}; {curve} %)")
    return "; ".join(parts)


def _mean_std(values: Sequence[float]) -> tuple[float, float]:
    import numpy as np

    if not values:
        return math.nan, math.nan
    return float(np.mean(values)), float(np.std(values, ddof=1)) if len(values) > 1 else math.nan


def _measured(claim: Claim, sides: Mapping[str, Sequence[float]]) -> dict[str, Any]:
    """Row fields: every term's mean ± std, and baseline/contender (the first term of each sign)."""
    out: dict[str, Any] = {"terms": {k: _mean_std(v) for k, v in sides.items()}}
    if claim.shift is not None:  # the two sides' log2 K*, in the order (baseline, contender)
        (out["baseline_mean"], out["baseline_std"]), (out["contender_mean"], out["contender_std"]) = (
            out["terms"].values())
        return out
    for side, positive in (("contender", True), ("baseline", False)):
        term = next(t for t in claim.contrast if (t.weight > 0) == positive)
        out[f"{side}_mean"], out[f"{side}_std"] = out["terms"][f"{term.strategy} {term.metric}"]
    return out


def _row(claim: Claim, **extra: Any) -> dict[str, Any]:
    t = claim.test
    return {"claim": claim.id, "text": claim.text, "quote": claim.quote, "source": claim.source,
            "metric": claim.metric, "baseline": claim.baseline, "contender": claim.contender,
            "statistic": _statistic(claim), "unit": claim.unit,
            "test": t.kind, "margin": t.margin, "paper_effect": t.paper_effect, "design": claim.design,
            "paper_difference": t.paper_difference, "question": t.question,
            "delta_source": str(claim.delta.get("source", "")) if claim.delta else "",
            "section": "theorem" if claim.theorem else "claim", **extra}


def _statistic(claim: Claim) -> str:
    """The contrast in words: ``hard − simclr`` or ``(C16-K16 − C16-K1) − ...`` with metrics when mixed."""
    if claim.shift is not None:
        return (f"log2 argmax_K {claim.shift.metric}({claim.contender}) − "
                f"log2 argmax_K {claim.shift.metric}({claim.baseline})")
    metrics = {t.metric for t in claim.contrast}
    parts = []
    for i, t in enumerate(claim.contrast):
        name = t.strategy if len(metrics) == 1 else f"{t.strategy}:{t.metric}"
        w = abs(t.weight)
        sign = ("−" if t.weight < 0 else "+") if i else ("−" if t.weight < 0 else "")
        parts.append(f"{sign} {'' if w == 1 else f'{w:g}×'}{name}".strip())
    return " ".join(parts)


def scale(unit: str) -> tuple[float, str]:
    """How a claim's numbers are printed: accuracies ×100 in points, losses as they are, in bits."""
    return (100.0, "points") if unit == "points" else (1.0, unit)


def _in_units(res: Any, unit: str) -> str:
    """The verdict with its numbers in the report's units (points of accuracy, or bits)."""
    from hardneg.reproduce.statistics import describe

    k, name = scale(unit)
    return describe(res, k, name)


_DIRECTION = {"reproduced": "supported", "reproduced, smaller than the paper's": "supported",
              "reproduced (equivalent)": "supported", "opposite direction": "against",
              "not equivalent": "against", "smaller than the paper's": "smaller",
              "reproduced (not worse by the margin)": "supported", "worse than the margin": "against"}
_THEOREM = {"reproduced": "holds", "opposite direction": "violated"}


def _tests(rows: Sequence[Mapping[str, Any]], planned: Sequence[Claim], design: Design) -> dict[str, Any]:
    """Each claim's design test, with the pilot SD of the experiment that ran it."""
    claims = {c.id: c for c in design.claims}
    ran = {r["claim"]: r.get("experiment") or claims[r["claim"]].experiment for r in rows}
    return {c.id: c.design_test(ran.get(c.id, c.experiment)) for c in [*planned, *(claims[i] for i in ran)]}


def _headroom(r: Mapping[str, Any]) -> float | None:
    base = r.get("baseline_mean")
    if (r.get("unit") or "points") != "points" or base is None or not math.isfinite(base):
        return None
    return 1.0 - float(base)


def judge_rows(
    rows: list[dict[str, Any]], diffs: Mapping[str, Sequence[float]], alpha: float = ALPHA, *,
    budget: str = "small", exploratory: bool = False,
) -> None:
    """Fill in each measured row's statistics, MDE and verdict.

    The claims form one Holm family fixed in advance, :func:`planned_claims` of ``budget`` (claims
    not run count in ``m``); theorem checks are judged alone (``holds`` / ``violated``), outside
    it; ``exploratory`` (an ``--only`` run): every p-value unadjusted and no family verdict.
    """
    from hardneg.reproduce.statistics import judge

    design = load_design(budget)
    by = {c.id: c for c in design.claims}
    measured = [r for r in rows if r["claim"] in diffs]
    claims = [r for r in measured if not by[r["claim"]].theorem]
    theorems = [r for r in measured if by[r["claim"]].theorem]
    planned = design.family
    tests = _tests(measured, planned, design)
    family = [c.id for c in planned]
    family += [r["claim"] for r in claims if r["claim"] not in family]
    results = judge({r["claim"]: diffs[r["claim"]] for r in claims}, tests, alpha=alpha,
                    planned=family,
                    headroom={r["claim"]: h for r in claims if (h := _headroom(r)) is not None},
                    exploratory=exploratory)
    checks = judge({r["claim"]: diffs[r["claim"]] for r in theorems}, tests, alpha=alpha, exploratory=True)
    for r in claims:
        _fill(r, results[r["claim"]], exploratory)
    for r in theorems:
        _fill(r, checks[r["claim"]], False)
        r["verdict"] = _THEOREM.get(r["outcome"], r["verdict"])


def _fill(r: dict[str, Any], res: Any, exploratory: bool) -> None:
    unit = r.get("unit", "points")
    verdict = _in_units(res, unit)
    r.update(diff_mean=res.mean, diff_std=res.std, seeds=res.n, wins=res.wins, half_width=res.half_width,
             ci_low=res.ci_low, ci_high=res.ci_high, ci_level=res.ci_level,
             alpha_for=res.levels.get("for", math.nan), power_design=res.power_design,
             power_observed=res.power_observed, p_value=res.p_value,
             p_holm=res.p_holm, p_against=res.p_against, p_against_holm=res.p_against_holm,
             p_smaller=res.p_smaller, p_smaller_holm=res.p_smaller_holm, alpha_design=res.alpha_design,
             mde_design=res.mde_design, mde_observed=res.mde_observed, mde_basis=res.mde_basis,
             seeds_needed=res.seeds_needed, outcome=res.outcome,
             verdict=f"exploratory: {verdict}" if exploratory else verdict,
             exploratory=exploratory, direction=_DIRECTION.get(res.outcome, "neither"))


def pilot_config(exp: Experiment, design: Design, **kwargs: Any) -> Any:
    """``exp``'s config for the pilot of ``design``: the pilot's seeds and its overrides for
    ``exp`` (a disjoint draw of synthetic data), else as the design's runs."""
    assert design.pilot is not None
    extra = {"compare.seeds": list(design.pilot.seeds), **design.pilot.overrides.get(exp.id, {})}
    return experiment_config(replace(exp, budgets={design.budget: {**exp.budgets[design.budget], **extra}}),
                             design.budget, **kwargs)


def run_pilot(
    *,
    budget: str,
    out: str | Path = "runs/reproduce",
    force: bool = False,
    data: Mapping[str, str] | None = None,
    device: str | None = None,
    echo: Callable[[str], None] | None = None,
) -> Path:
    """Run the pilot of ``budget``'s design into ``<out>/<budget>-pilot`` and write its results,
    ``pilot.json``: per claim its experiment and the mean, SD (ddof 1) and number of its per-seed
    differences. Committed as ``designs/pilots/<budget>.json`` before the design's own runs, it
    sets their SDs (an upper 80 % limit, :func:`~hardneg.reproduce.statistics.design_sd`) and, for
    claims asking whether there is an effect at this scale, the effect they are powered at. The
    pilot tests nothing. Returns the path of ``pilot.json``.
    """
    from hardneg._io import atomic_write_text
    from hardneg.pipeline.groups import run_compare, run_seed

    echo = echo or (lambda msg: print(msg, file=sys.stderr))
    design = load_design(budget)
    if design.pilot is None:
        raise ValueError(f"--pilot: the {budget} design ({design.path.name}) states no pilot")
    root = Path(out) / f"{budget}-pilot"
    results: dict[str, dict[str, Any]] = {}
    for exp_id in dict.fromkeys(c.experiment for c in design.claims):
        exp = design.experiments[exp_id]
        cfg = pilot_config(exp, design, data=data, device=device)
        why = _missing(cfg, exp.needs)
        if why is not None:
            echo(f"pilot: {exp.id} {why}; its claims get no pilot result")
            continue
        if exp.selection is not None and budget in exp.selection.budgets:  # the runs' own choice, reused
            exp, _ = select_setting(exp, budget, Path(out), force=force, device=device, data=data, echo=echo)
            cfg = pilot_config(exp, design, data=data, device=device)
        echo(f"pilot: {exp.id} ({len(exp.strategies)} strategies x seeds {list(design.pilot.seeds)}) "
             f"-> {root / exp.id}")
        result = run_compare(cfg, root / exp.id, resume=not force, force=force, quiet=True, echo=echo)
        runs = {label: {run_seed(r): r for r in rs} for label, rs in result.runs.items()}
        for c in design.claims:
            if c.experiment != exp_id or c.theorem:
                continue
            values, _ = claim_values(c.measured_in(exp), runs)
            mean, sd = _mean_std(values)
            results[c.id] = {"experiment": exp.id, "mean": mean, "sd": sd, "n": len(values)}
    path = root / "pilot.json"
    atomic_write_text(path, json.dumps({
        "budget": budget, "design_sha256": design.digest, "seeds": list(design.pilot.seeds),
        "overrides": design.pilot.overrides, "claims": results}, indent=2, sort_keys=True) + "\n")
    target = design.pilot.file.relative_to(design.path.parent.parent)
    echo(f"pilot: {len(results)} claims -> {path}; commit it as {target} before the runs")
    return path


def run_reproduce(
    *,
    budget: str = "small",
    out: str | Path = "runs/reproduce",
    only: Sequence[str] | None = None,
    force: bool = False,
    data: Mapping[str, str] | None = None,
    device: str | None = None,
    echo: Callable[[str], None] | None = None,
) -> ReproduceResult:
    """Run the claims of ``budget`` into ``out`` and write ``claims.md`` / ``claims.csv`` / figure.

    Returns the rows written to ``claims.csv``: per claim its quote and source, the data and
    setting that ran, the metric, the baseline's and contender's mean ± std, the paired difference
    (mean, std, 95 % interval and half-width, seeds won), the paper's effect, the design's and the
    observed minimum detectable effect, the p-values and their Holm-adjusted values, and the verdict;
    claims that cannot run here say why and give the command. With ``only`` the run is exploratory
    and its report is ``claims-only-<ids>.md`` (and ``.csv``, figure) beside ``claims.md``.
    """
    from hardneg.pipeline.groups import GroupInterrupted, run_compare
    from hardneg.reproduce.report import write_report

    echo = echo or (lambda msg: print(msg, file=sys.stderr))
    start = time.perf_counter()
    claims = _select(budget, only)
    exploratory = bool(only)
    stem = report_stem(budget, only)
    design = load_design(budget)
    known = sorted({e.needs for e in design.experiments.values() if e.needs is not None})
    unknown = sorted(set(data or {}) - set(known))
    if unknown:  # a misspelt data set would otherwise be ignored silently
        raise ValueError(f"--data takes NAME=DIR with NAME among {known}, got {unknown}")
    root = Path(out)
    rows: list[dict[str, Any]] = []
    diffs: dict[str, list[float]] = {}
    reg = register(design, root / budget, fresh=force)  # fixed when the runs began (read back on resume)
    about = (f", about {design.estimate_minutes:g} minutes on 2 CPU cores (finished runs are reused)"
             if design.estimate_minutes is not None else "")
    echo(f"reproduce: the {budget} design, designs/{design.path.name} (sha256 {design.digest[:12]}){about}")

    def statuses() -> None:
        for r in rows:
            r["status"] = ("exploratory: run alone (--only)" if exploratory
                           else claim_status(design, reg, r["claim"]))

    experiments = list(dict.fromkeys(c.experiment for c in claims))
    for n, exp_id in enumerate(experiments):
        install: dict[str, str] = {}
        mine = [c for c in claims if c.experiment == exp_id]
        exp = design.experiments[exp_id]
        cfg = experiment_config(exp, budget, data=data, device=device)
        why = _missing(cfg, exp.needs)
        ran = exp.needs or cfg.data.dataset
        if why is not None and exp.fallback is not None:
            echo(f"reproduce: {exp.id} {why}; running the embedded fallback {exp.fallback!r}")
            ran = f"{exp.fallback} (fallback: {exp.id} not installed)"
            install = {"install": f"{exp.id}: {exp.install}"} if exp.install else {}
            exp = design.experiments[exp.fallback]
            cfg = experiment_config(exp, budget, device=device)
            why = _missing(cfg, exp.needs)
        if why is not None:
            rows += [_row(c, verdict="not run here", setting=why, data=exp.needs or "",
                          command=command_for(c, budget, root)) for c in mine]
            continue
        chosen: dict[str, str] = {}
        folder = root / budget / exp.id
        try:
            if exp.selection is not None and budget in exp.selection.budgets:
                exp, chosen = select_setting(exp, budget, root, force=force, device=device, data=data,
                                             echo=echo)
                cfg = experiment_config(exp, budget, data=data, device=device)
            echo(f"reproduce: {exp.id} ({len(exp.strategies)} strategies x {len(cfg.compare.seeds)} seeds, "
                 f"{cfg.train.epochs} epochs) -> {folder}")
            result = run_compare(cfg, folder, resume=not force, force=force, quiet=True, echo=echo)
        except GroupInterrupted as stop:
            again = resume_command(budget, root, only)
            left = [c for c in claims if c.experiment in experiments[n:]]
            rows += [_row(c, verdict="interrupted", setting=f"interrupted; continue with `{again}`")
                     for c in left]
            judge_rows(rows, diffs, budget=budget, exploratory=exploratory)
            statuses()
            partial = (f"interrupted during `{exp.id}` ({stop.done} of {stop.total} of its runs finished); "
                       f"{len(left)} of {len(claims)} claims have no verdict. `{again}` continues "
                       "(finished runs are reused).")
            write_report(rows, root / budget, budget=budget, partial=partial, stem=stem, registration=reg)
            raise ReproduceInterrupted(
                ReproduceResult(rows=rows, root=root / budget, seconds=time.perf_counter() - start,
                                report=root / budget / f"{stem}.md")
            ) from None
        from hardneg.pipeline.groups import run_seed

        runs = {label: {run_seed(r): r for r in rs} for label, rs in result.runs.items()}
        for c in (c.measured_in(exp) for c in mine):
            diffs[c.id], sides = claim_values(c, runs)
            extra = {"optimum": optimum_bootstrap(c.shift, runs)} if c.shift is not None else {}
            rows.append(_row(c, data=ran, setting=_setting(exp, cfg), folder=str(folder), experiment=exp.id,
                             **_measured(c, sides), **extra, **install, **chosen))
    judge_rows(rows, diffs, budget=budget, exploratory=exploratory)
    statuses()
    write_report(rows, root / budget, budget=budget, stem=stem, seconds=time.perf_counter() - start,
                 registration=reg)
    return ReproduceResult(rows=rows, root=root / budget, seconds=time.perf_counter() - start,
                           report=root / budget / f"{stem}.md")
