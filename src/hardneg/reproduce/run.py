"""``hardneg reproduce``: run every claim's comparison and write ``claims.md`` / ``claims.csv`` / figure.

Each experiment of :data:`~hardneg.reproduce.claims.EXPERIMENTS` is an ordinary ``hardneg compare``
under ``OUT/<budget>/<experiment>/`` (finished runs are reused, so an interrupted reproduction
resumes); each claim reads the seed-paired difference ``contender − baseline`` of its metric, its
95 % Student-t interval and a verdict (:func:`~hardneg.reproduce.verdict.verdict`). The metric of
each claim is fixed in advance, every number is the final epoch, and nothing is chosen on test data.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hardneg.config.errors import ConfigError
from hardneg.reproduce.claims import BUDGETS, CLAIMS, EXPERIMENTS, NOT_RUN_HERE, Claim, Experiment
from hardneg.reproduce.verdict import verdict

__all__ = ["ReproduceInterrupted", "ReproduceResult", "run_reproduce"]


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
    known = {c.id for c in CLAIMS}
    unknown = sorted(set(only or ()) - known)
    if unknown:
        raise ValueError(f"--only takes claim ids among {sorted(known)}, got {unknown}")
    return [c for c in CLAIMS if budget in c.budgets and (not only or c.id in only)]


def _experiment_config(exp: Experiment, budget: str) -> Any:
    from hardneg.pipeline.config import load_config

    strategies = [{"name": name, "overrides": dict(ov)} for name, ov in exp.strategies.items()]
    return load_config(exp.config, {**exp.budgets[budget], "compare.strategies": strategies,
                                    "name": exp.id})


def _setting(exp: Experiment, cfg: Any) -> str:
    return f"{exp.setting}; {cfg.train.epochs} epochs, {len(cfg.compare.seeds)} seeds"


def _claim_row(claim: Claim, exp: Experiment, cfg: Any, result: Any, folder: Path) -> dict[str, Any]:
    from hardneg.pipeline.groups import run_seed
    from hardneg.pipeline.paired import paired_differences

    values = {label: {run_seed(r): r.eval for r in rs} for label, rs in result.runs.items()}
    diff = paired_differences(values, baseline=claim.baseline, metrics=[claim.metric])[claim.contender]
    d = diff[claim.metric]
    lo, hi = d.interval()
    base = result.table[claim.baseline][claim.metric]
    cont = result.table[claim.contender][claim.metric]
    return {
        "claim": claim.id, "text": claim.text, "source": claim.source, "setting": _setting(exp, cfg),
        "metric": claim.metric, "baseline": claim.baseline, "contender": claim.contender,
        "baseline_mean": base[0], "baseline_std": base[1],
        "contender_mean": cont[0], "contender_std": cont[1],
        "diff_mean": d[0], "diff_std": d[1], "ci_low": lo, "ci_high": hi, "wins": d[2], "seeds": d[3],
        "verdict": verdict(d), "folder": str(folder),
    }


def _not_run_row(
    claim_id: str, text: str, source: str, why: str, verdict: str = "not run here"
) -> dict[str, Any]:
    return {"claim": claim_id, "text": text, "source": source, "setting": why, "verdict": verdict}


def run_reproduce(
    *,
    budget: str = "small",
    out: str | Path = "runs/reproduce",
    only: Sequence[str] | None = None,
    force: bool = False,
    echo: Callable[[str], None] | None = None,
) -> ReproduceResult:
    """Run the claims of ``budget`` (``small``: minutes on 2 CPU cores; ``full``: hours) into ``out``.

    Returns the rows written to ``claims.csv``: the claim, its source, the setting run, the
    baseline's and contender's mean ± std, the paired difference (mean, std, 95 % interval, seeds
    won) and the verdict; claims that need a GPU or data not installed here get the verdict
    ``not run here`` and the command that would run them.
    """
    from hardneg.pipeline.groups import GroupInterrupted, run_compare
    from hardneg.reproduce.report import write_report

    echo = echo or (lambda msg: print(msg, file=sys.stderr))
    start = time.perf_counter()
    claims = _select(budget, only)
    root = Path(out)
    rows: list[dict[str, Any]] = []
    experiments = list(dict.fromkeys(c.experiment for c in claims))
    for n, exp_id in enumerate(experiments):
        exp = EXPERIMENTS[exp_id]
        mine = [c for c in claims if c.experiment == exp_id]
        try:
            cfg = _experiment_config(exp, budget)
        except ConfigError as err:  # e.g. data.root names no installed data set
            if exp.needs is None:
                raise
            why = f"needs {exp.needs} ({' '.join(str(err).split())})"
            rows += [_not_run_row(c.id, c.text, c.source, why) for c in mine]
            continue
        folder = root / budget / exp.id
        echo(f"reproduce: {exp.id} ({len(exp.strategies)} strategies x {len(cfg.compare.seeds)} seeds, "
             f"{cfg.train.epochs} epochs) -> {folder}")
        try:
            result = run_compare(cfg, folder, resume=not force, force=force, quiet=True, echo=echo)
        except GroupInterrupted as stop:
            again = f"hardneg reproduce --budget {budget} --out {root}"
            left = [c for c in claims if c.experiment in experiments[n:]]
            why = f"interrupted; continue with `{again}`"
            rows += [_not_run_row(c.id, c.text, c.source, why, "interrupted") for c in left]
            partial = (f"interrupted during `{exp.id}` ({stop.done} of {stop.total} of its runs finished); "
                       f"{len(left)} of {len(claims)} claims have no verdict. `{again}` continues "
                       "(finished runs are reused).")
            write_report(rows, root / budget, budget=budget, partial=partial)
            raise ReproduceInterrupted(
                ReproduceResult(rows=rows, root=root / budget, seconds=time.perf_counter() - start)
            ) from None
        except (OSError, ConfigError) as err:  # the data set is not installed (data.root)
            if exp.needs is None:
                raise
            why = f"needs {exp.needs} ({' '.join(str(err).split())})"
            rows += [_not_run_row(c.id, c.text, c.source, why) for c in mine]
            continue
        rows += [_claim_row(c, exp, cfg, result, folder) for c in mine]
    if not only:
        rows += [_not_run_row(n.id, n.text, n.source, n.command) for n in NOT_RUN_HERE]
    write_report(rows, root / budget, budget=budget)
    return ReproduceResult(rows=rows, root=root / budget, seconds=time.perf_counter() - start)
