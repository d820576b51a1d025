"""``hardneg reproduce``: run the claims' comparisons, judge them together, write ``claims.md``.

Each experiment of :data:`~hardneg.reproduce.claims.EXPERIMENTS` is an ordinary ``hardneg compare``
under ``OUT/<budget>/<experiment>/``. A finished run is reused only when its recorded config and
code equal the job's (``provenance.json``), so a changed claim, budget or code is trained again —
never a stale number. Every claim reads the seed-paired differences ``contender − baseline`` of its
metric (fixed in advance; the final epoch; nothing chosen on test data) and all claims of the
report are judged at once (:func:`~hardneg.reproduce.statistics.judge`: Holm–Bonferroni over the
report). A claim whose baseline leaves less room below 100 % than the paper's effect is reported
as at the ceiling, not as a failure to reproduce. An experiment whose data is not installed runs
its embedded fallback (the report says which ran) or is listed with the command that runs it.
"""

from __future__ import annotations

import math
import shlex
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hardneg.config.errors import ConfigError
from hardneg.reproduce.claims import BUDGETS, CLAIMS, EXPERIMENTS, Claim, Experiment

__all__ = [
    "ReproduceInterrupted",
    "ReproduceResult",
    "claim_values",
    "command_for",
    "experiment_config",
    "run_reproduce",
]

ALPHA = 0.05  # family-wise error rate of one report


@dataclass
class ReproduceResult:
    """One row per claim (see :func:`run_reproduce`) and the folder they were written to."""

    rows: list[dict[str, Any]]
    root: Path
    seconds: float = 0.0


class ReproduceInterrupted(Exception):
    """Ctrl-C (or SIGTERM) stopped a reproduction; ``result`` is the partial report written."""

    def __init__(self, result: ReproduceResult) -> None:
        super().__init__(f"interrupted; partial report in {result.root / 'claims.md'}")
        self.result = result


def _select(budget: str, only: Sequence[str] | None) -> list[Claim]:
    if budget not in BUDGETS:
        raise ValueError(f"--budget must be one of {list(BUDGETS)}, got {budget!r}")
    known = {c.id for c in CLAIMS if budget in c.budgets}
    unknown = sorted(set(only or ()) - known)
    if unknown:
        raise ValueError(f"--only takes claim ids of budget {budget!r} among {sorted(known)}, got {unknown}")
    return [c for c in CLAIMS if budget in c.budgets and (not only or c.id in only)]


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


def command_for(claim: Claim, budget: str, out: Path) -> str:
    """The command that runs ``claim`` once its data (and device) are there."""
    exp = EXPERIMENTS[claim.experiment]
    args = ["hardneg", "reproduce", "--budget", budget, "--only", claim.id, "--out", str(out)]
    if exp.needs is not None:
        args += ["--data", f"{exp.needs}=DIR"]
    return shlex.join(args)


def _missing(cfg: Any) -> str | None:
    """Why ``cfg``'s experiment cannot run here (its data or its device), or ``None``."""
    from hardneg.pipeline.experiment import load_data

    if cfg.train.accelerator == "gpu":
        import torch

        if not torch.cuda.is_available():
            return "needs a GPU (none here; --device cpu runs it on the CPU, for days)"
    try:
        load_data(cfg)
    except (OSError, ConfigError) as err:
        return f"needs its data ({' '.join(str(err).split())})"
    return None


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


def _mean_std(values: Sequence[float]) -> tuple[float, float]:
    import numpy as np

    if not values:
        return math.nan, math.nan
    return float(np.mean(values)), float(np.std(values, ddof=1)) if len(values) > 1 else math.nan


def _measured(claim: Claim, sides: Mapping[str, Sequence[float]]) -> dict[str, Any]:
    """Row fields: every term's mean ± std, and baseline/contender (the first term of each sign)."""
    out: dict[str, Any] = {"terms": {k: _mean_std(v) for k, v in sides.items()}}
    for side, positive in (("contender", True), ("baseline", False)):
        term = next(t for t in claim.contrast if (t.weight > 0) == positive)
        out[f"{side}_mean"], out[f"{side}_std"] = out["terms"][f"{term.strategy} {term.metric}"]
    return out


def _row(claim: Claim, **extra: Any) -> dict[str, Any]:
    t = claim.test
    return {"claim": claim.id, "text": claim.text, "quote": claim.quote, "source": claim.source,
            "metric": claim.metric, "baseline": claim.baseline, "contender": claim.contender,
            "statistic": _statistic(claim), "unit": claim.unit,
            "test": t.kind, "margin": t.margin, "paper_effect": t.paper_effect, **extra}


def _statistic(claim: Claim) -> str:
    """The contrast in words: ``hard − simclr`` or ``(C16-K16 − C16-K1) − ...`` with metrics when mixed."""
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
    """The verdict with its margin or half-width in the report's units (points of accuracy, or bits)."""
    from hardneg.reproduce.statistics import EQUIVALENT, INCONCLUSIVE

    k, name = scale(unit)
    if res.outcome == EQUIVALENT:
        return f"reproduced (equivalent within ±{k * res.test.margin:.1f} {name})"
    if res.outcome == INCONCLUSIVE:
        return f"inconclusive at ±{k * res.half_width:.2f} {name}"
    return str(res.verdict)


def judge_rows(
    rows: list[dict[str, Any]], diffs: Mapping[str, Sequence[float]], alpha: float = ALPHA
) -> None:
    """Fill in each measured row's statistics and verdict (one family: Holm over the report), then
    the ceiling: a non-firm verdict whose baseline leaves less room than the paper's effect."""
    from hardneg.reproduce.statistics import CONTRADICTED, EQUIVALENT, NOT_EQUIVALENT, REPRODUCED, judge

    claims = {c.id: c for c in CLAIMS}
    measured = [r for r in rows if r["claim"] in diffs]
    results = judge({r["claim"]: diffs[r["claim"]] for r in measured},
                    {r["claim"]: claims[r["claim"]].test for r in measured}, alpha=alpha)
    for r in measured:
        res = results[r["claim"]]
        supported = res.outcome in (REPRODUCED, EQUIVALENT)
        against = res.outcome in (CONTRADICTED, NOT_EQUIVALENT)
        r.update(diff_mean=res.mean, diff_std=res.std, seeds=res.n, wins=res.wins, half_width=res.half_width,
                 ci_low=res.mean - res.half_width, ci_high=res.mean + res.half_width, p_value=res.p_value,
                 p_holm=res.p_holm, outcome=res.outcome, verdict=_in_units(res, r.get("unit", "points")),
                 direction="supported" if supported else "against" if against else "neither")
        effect, base = r["paper_effect"], r.get("baseline_mean")
        firm = supported or against
        accuracy = r.get("unit", "points") == "points"
        if accuracy and effect is not None and base is not None and not firm and 1.0 - base < effect:
            r["verdict"] = (f"inconclusive (ceiling: the baseline's {100 * base:.1f} % leaves "
                            f"{100 * (1 - base):.1f} points, less than the paper's effect of "
                            f"{100 * effect:.1f})")


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
    (mean, std, 95 % interval and half-width, seeds won), the paper's effect, the p-value and its
    Holm-adjusted value, and the verdict; claims that cannot run here say why and give the command.
    """
    from hardneg.pipeline.groups import GroupInterrupted, run_compare
    from hardneg.reproduce.report import write_report

    echo = echo or (lambda msg: print(msg, file=sys.stderr))
    start = time.perf_counter()
    claims = _select(budget, only)
    known = sorted({e.needs for e in EXPERIMENTS.values() if e.needs is not None})
    unknown = sorted(set(data or {}) - set(known))
    if unknown:  # a misspelt data set would otherwise be ignored silently
        raise ValueError(f"--data takes NAME=DIR with NAME among {known}, got {unknown}")
    root = Path(out)
    rows: list[dict[str, Any]] = []
    diffs: dict[str, list[float]] = {}
    experiments = list(dict.fromkeys(c.experiment for c in claims))
    for n, exp_id in enumerate(experiments):
        mine = [c for c in claims if c.experiment == exp_id]
        exp = EXPERIMENTS[exp_id]
        cfg = experiment_config(exp, budget, data=data, device=device)
        why = _missing(cfg)
        ran = exp.needs or cfg.data.dataset
        if why is not None and exp.fallback is not None:
            echo(f"reproduce: {exp.id} {why}; running the embedded fallback {exp.fallback!r}")
            ran = f"{exp.fallback} (fallback: {exp.id} not installed)"
            exp = EXPERIMENTS[exp.fallback]
            cfg = experiment_config(exp, budget, device=device)
            why = _missing(cfg)
        if why is not None:
            rows += [_row(c, verdict="not run here", setting=why, data=exp.needs or "",
                          command=command_for(c, budget, root)) for c in mine]
            continue
        folder = root / budget / exp.id
        echo(f"reproduce: {exp.id} ({len(exp.strategies)} strategies x {len(cfg.compare.seeds)} seeds, "
             f"{cfg.train.epochs} epochs) -> {folder}")
        try:
            result = run_compare(cfg, folder, resume=not force, force=force, quiet=True, echo=echo)
        except GroupInterrupted as stop:
            again = shlex.join(["hardneg", "reproduce", "--budget", budget, "--out", str(root)])
            left = [c for c in claims if c.experiment in experiments[n:]]
            rows += [_row(c, verdict="interrupted", setting=f"interrupted; continue with `{again}`")
                     for c in left]
            judge_rows(rows, diffs)
            partial = (f"interrupted during `{exp.id}` ({stop.done} of {stop.total} of its runs finished); "
                       f"{len(left)} of {len(claims)} claims have no verdict. `{again}` continues "
                       "(finished runs are reused).")
            write_report(rows, root / budget, budget=budget, partial=partial)
            raise ReproduceInterrupted(
                ReproduceResult(rows=rows, root=root / budget, seconds=time.perf_counter() - start)
            ) from None
        from hardneg.pipeline.groups import run_seed

        runs = {label: {run_seed(r): r for r in rs} for label, rs in result.runs.items()}
        for c in mine:
            diffs[c.id], sides = claim_values(c, runs)
            rows.append(_row(c, data=ran, setting=_setting(exp, cfg), folder=str(folder),
                             **_measured(c, sides)))
    judge_rows(rows, diffs)
    write_report(rows, root / budget, budget=budget)
    return ReproduceResult(rows=rows, root=root / budget, seconds=time.perf_counter() - start)
