"""``hardneg compare``: several negative strategies on the same data, seeds and budget.

Every strategy of ``compare.strategies`` (a name and dotted overrides of the base config) is
trained once per seed of ``compare.seeds``; each run is an ordinary run folder under
``<root>/<strategy>/seed<k>``. The comparison writes ``results.csv`` (one row per run),
``table.csv`` / ``table.md`` (mean ± std over seeds), ``results.json``, ``summary.md`` and
figures (accuracy bars, cosine histograms per strategy, kNN accuracy vs epochs). With
``resume=True`` finished runs are reused and unfinished ones continue from their checkpoints.
"""

from __future__ import annotations

import json
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hardneg._io import atomic_write_text
from hardneg.pipeline import figures
from hardneg.pipeline.config import RunConfig, dump_yaml, with_overrides
from hardneg.pipeline.experiment import train_run
from hardneg.pipeline.run_folder import RunExists, RunResult, csv_text, load_result, run_dir_for, timing_lines

__all__ = [
    "CompareResult",
    "aggregate",
    "beta_series",
    "format_table",
    "paired_table",
    "prepare_root",
    "run_compare",
    "run_many",
    "run_seed",
    "sum_timing",
]

# the columns of the tables (those a run reports): image / vector readouts, graph CV readouts,
# Arora et al.'s Table 1 (mean classifier, avg-2 / avg-10, mu-5) and the SentEval tasks
TABLE_METRICS = (
    "linear_top1", "knn_top1", "knn_top5", "mean_top1", "svm_cv", "logistic_cv",
    "mu_avg2", "mu_avg10", "mu5_top1",
    "mr_acc", "cr_acc", "subj_acc", "mpqa_acc", "trec_acc", "msrp_acc",
)


@dataclass
class CompareResult:
    """Per-run results and the mean ± std table ``table[label][metric] = (mean, std)``."""

    root: Path
    runs: dict[str, list[RunResult]]
    table: dict[str, dict[str, tuple[float, float]]]
    timing: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0


def aggregate(runs: dict[str, list[RunResult]]) -> dict[str, dict[str, tuple[float, float]]]:
    """Mean and sample standard deviation (ddof=1; 0 for one seed) of every metric per label."""
    table: dict[str, dict[str, tuple[float, float]]] = {}
    for label, results in runs.items():
        metrics = sorted({m for r in results for m in r.eval})
        row = {}
        for m in metrics:
            vals = np.array([r.eval[m] for r in results if m in r.eval], dtype=float)
            std = float(vals.std(ddof=1)) if len(vals) > 1 else 0.0
            row[m] = (float(vals.mean()), std)
        table[label] = row
    return table


def format_table(
    table: dict[str, dict[str, tuple[float, float]]],
    *,
    label: str = "strategy",
    metrics: tuple[str, ...] = TABLE_METRICS,
    seeds: int | None = None,
) -> str:
    """Markdown table of accuracies in % (mean ± std)."""
    cols = [m for m in metrics if any(m in row for row in table.values())]
    head = f"| {label} | " + " | ".join(cols) + " |"
    lines = [head, "|" + "---|" * (len(cols) + 1)]
    for name, row in table.items():
        cells = [f"{100 * row[m][0]:.2f} ± {100 * row[m][1]:.2f}" if m in row else "–" for m in cols]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    if seeds is not None:
        lines.append(f"\n(accuracy in %, mean ± std over {seeds} seeds)")
    return "\n".join(lines)


def sum_timing(results: list[RunResult]) -> dict[str, float]:
    total: dict[str, float] = defaultdict(float)
    for r in results:
        for k, v in r.timing.items():
            total[k] += float(v)
    return dict(total)


def _job(cfg: RunConfig, run_dir: Path, resume: bool, force: bool) -> tuple[RunResult | None, str]:
    """One run of a comparison (module level: picklable for worker processes)."""
    t0 = time.perf_counter()
    done = load_result(run_dir) if resume else None
    if done is not None:
        return done, "reused"
    result = train_run(cfg, run_dir, resume=resume, force=force or not resume, quiet=True)
    return result, f"{time.perf_counter() - t0:5.1f} s"


def _worker_init() -> None:
    import logging
    import warnings

    for name in ("lightning.pytorch", "lightning.fabric", "lightning"):
        logging.getLogger(name).setLevel(logging.WARNING)
    warnings.filterwarnings("ignore")


def run_many(
    jobs: list[tuple[str, int, RunConfig, Path]],
    *,
    resume: bool,
    force: bool,
    quiet: bool,
    echo: Callable[[str], None],
    workers: int = 1,
) -> dict[str, list[RunResult]]:
    """Train (or reuse, with ``resume``) every ``(label, seed, config, run_dir)`` job.

    ``workers > 1`` runs jobs in that many spawned processes (each run is independent and
    seeded by its own config, so the results do not depend on ``workers``); results are
    collected in job order.
    """
    results: list[tuple[RunResult | None, str] | None] = [None] * len(jobs)

    def report(i: int) -> None:
        label, seed = jobs[i][0], jobs[i][1]
        res = results[i]
        if quiet or res is None or res[0] is None:
            return
        acc = ", ".join(
            f"{m.split('_')[0]} {100 * res[0].eval[m]:.1f}"
            for m in ("linear_top1", "knn_top1", "mean_top1", "svm_cv", "logistic_cv", "mr_acc", "trec_acc")
            if m in res[0].eval
        )
        echo(f"[{i + 1}/{len(jobs)}] {label} seed {seed}: {acc} ({res[1]})")

    if workers <= 1 or len(jobs) <= 1:
        for i, (_, _, cfg, run_dir) in enumerate(jobs):
            results[i] = _job(cfg, run_dir, resume, force)
            report(i)
    else:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_worker_init) as pool:
            futures = {
                pool.submit(_job, cfg, run_dir, resume, force): i
                for i, (_, _, cfg, run_dir) in enumerate(jobs)
            }
            for future in as_completed(futures):
                i = futures[future]
                results[i] = future.result()
                report(i)
    runs: dict[str, list[RunResult]] = defaultdict(list)
    for (label, _, _, _), res in zip(jobs, results):
        if res is not None and res[0] is not None:  # None: a non-zero DDP rank
            runs[label].append(res[0])
    return dict(runs)


def prepare_root(root: Path, cfg: RunConfig, *, resume: bool, force: bool) -> None:
    marker = root / "compare.yaml"
    if root.exists() and any(root.iterdir()) and not resume and not force:
        raise RunExists(
            f"folder '{root}' already holds results; pass --resume to reuse finished runs, "
            f"--force to overwrite, or --out DIR for another folder"
        )
    root.mkdir(parents=True, exist_ok=True)
    atomic_write_text(marker, dump_yaml(cfg))


def run_compare(
    cfg: RunConfig,
    out: str | Path | None = None,
    *,
    resume: bool = False,
    force: bool = False,
    quiet: bool = False,
    echo: Callable[[str], None] | None = None,
) -> CompareResult:
    """Run ``cfg.compare`` and write the comparison folder (see the module docstring)."""
    echo = echo or (lambda msg: print(msg, file=sys.stderr))
    start = time.perf_counter()
    root = run_dir_for(cfg, out)
    prepare_root(root, cfg, resume=resume, force=force)
    jobs: list[tuple[str, int, RunConfig, Path]] = []
    for strategy in cfg.compare.strategies:
        label = strategy.name
        overrides = dict(strategy.overrides)
        for n, seed in enumerate(cfg.compare.seeds):
            extra: dict[str, Any] = {"seed": seed, "name": f"{label}-seed{seed}"}
            if n > 0:  # per-run figures of the first seed only; the comparison has its own
                extra["eval.figures"] = False
            sub = with_overrides(cfg, {**overrides, **extra})
            jobs.append((label, seed, sub, root / label / f"seed{seed}"))
    if not quiet:
        echo(
            f"compare: {len({j[0] for j in jobs})} strategies x {len(cfg.compare.seeds)} seeds = "
            f"{len(jobs)} runs of {cfg.train.epochs} epochs -> {root}"
        )
    runs = run_many(jobs, resume=resume, force=force, quiet=quiet, echo=echo, workers=cfg.compare.workers)
    table = aggregate(runs)
    result = CompareResult(
        root=root, runs=runs, table=table, timing=sum_timing([r for rs in runs.values() for r in rs])
    )
    _write_compare(cfg, result, {label: sub for label, _, sub, _ in jobs})
    result.seconds = time.perf_counter() - start
    return result


def run_seed(run: RunResult) -> int:
    """The seed of a comparison run from its folder name ``seed<k>``."""
    return int(run.run_dir.name.removeprefix("seed"))


def paired_table(result: CompareResult) -> str:
    """Markdown table of every strategy's paired difference to the first one (seed by seed)."""
    from hardneg.pipeline.paired import format_paired, paired_differences

    if len(result.runs) < 2:
        return ""
    values = {label: {run_seed(r): r.eval for r in rs} for label, rs in result.runs.items()}
    baseline = next(iter(result.runs))
    table = paired_differences(values, baseline=baseline, metrics=TABLE_METRICS)
    return format_paired(table, baseline=baseline, metrics=TABLE_METRICS)


def beta_series(
    table: dict[str, dict[str, tuple[float, float]]], configs: dict[str, RunConfig], metric: str
) -> dict[str, list[tuple[float, float, float]]]:
    """Accuracy against β of the strategies on the uniform (β = 0) / hard (β) axis, one line per objective.

    Robinson et al. (ICLR 2021), Fig. 3: InfoGraph is β = 0. Strategies with other
    distributions (OT, …) or with a β chosen per batch are not on this axis.
    """
    groups: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
    for label, cfg in configs.items():
        neg = cfg.loss.negatives
        if label not in table or metric not in table[label]:
            continue
        if neg["name"] == "uniform":
            beta = 0.0
        elif neg["name"] == "hard" and neg.get("target_ess") is None:
            beta = float(neg.get("beta", 1.0))
        else:
            continue
        obj = cfg.loss.objective
        key = ", ".join(f"{k}={v}" for k, v in obj.items())
        groups[key].append((beta, *table[label][metric]))
    return {k: v for k, v in groups.items() if len({p[0] for p in v}) >= 2}


def _write_compare(cfg: RunConfig, result: CompareResult, configs: dict[str, RunConfig]) -> None:
    root = result.root
    rows: list[dict[str, Any]] = []
    for label, results in result.runs.items():
        for r in results:
            rows.append(
                {
                    "strategy": label,
                    "run": str(r.run_dir.relative_to(root)),
                    **r.eval,
                    "final_loss": r.history[-1]["loss"] if r.history else float("nan"),
                }
            )
    atomic_write_text(root / "results.csv", csv_text(rows))
    table_rows = [
        {
            "strategy": s,
            **{f"{m}_mean": v[0] for m, v in row.items()},
            **{f"{m}_std": v[1] for m, v in row.items()},
        }
        for s, row in result.table.items()
    ]
    atomic_write_text(root / "table.csv", csv_text(table_rows))
    md = format_table(result.table, seeds=len(cfg.compare.seeds))
    atomic_write_text(root / "table.md", md + "\n")
    atomic_write_text(
        root / "results.json",
        json.dumps(
            {
                "table": {s: {m: list(v) for m, v in row.items()} for s, row in result.table.items()},
                "runs": rows,
                "timing": result.timing,
            },
            indent=2,
        ),
    )
    if cfg.eval.figures and result.runs:
        fig = root / "figures"
        figures.accuracy_bars(
            {s: {m: v for m, v in row.items() if m in TABLE_METRICS} for s, row in result.table.items()},
            fig / "accuracy.png",
            title=f"{cfg.data.dataset}: mean ± std over {len(cfg.compare.seeds)} seeds",
        )
        panels = {
            s: (rs[0].test_features, rs[0].test_labels)
            for s, rs in result.runs.items()
            if rs and rs[0].test_features is not None and rs[0].test_labels is not None
        }
        if panels:
            figures.cosine_histograms(
                panels,
                fig / "cosine_histograms.png",
                title="test cosine similarity, same vs different label (first seed)",
            )
        metric = next((m for m in TABLE_METRICS if any(m in row for row in result.table.values())), None)
        by_beta = beta_series(result.table, configs, metric) if metric else {}
        if by_beta:
            figures.curves(
                by_beta,
                fig / "accuracy_vs_beta.png",
                xlabel="β (0 = uniform negatives)",
                ylabel=f"{metric} (%)",
                title=f"{cfg.data.dataset}: mean ± std over {len(cfg.compare.seeds)} seeds",
            )
        series = _epoch_series(result.runs)
        if series:
            figures.curves(
                series,
                fig / "knn_vs_epochs.png",
                xlabel="epoch",
                title="online weighted kNN top-1 (mean ± std over seeds)",
            )
    lines = [
        f"# Compare `{cfg.name}` on {cfg.data.dataset}",
        "",
        f"{cfg.train.epochs} epochs, batch {cfg.train.batch_size}, encoder {cfg.model.encoder}, "
        f"seeds {cfg.compare.seeds}. Every accuracy is that of the final epoch's encoder: no epoch "
        "or setting is chosen on test data.",
        "",
        md,
        "",
    ]
    paired = paired_table(result)
    if paired:
        lines += ["Paired differences to the first strategy (same seed: same initial weights, data order "
                  "and evaluation folds):", "", paired, ""]
    lines += ["Time summed over runs:", "```", *timing_lines(result.timing), "```", ""]
    atomic_write_text(root / "summary.md", "\n".join(lines))


def _epoch_series(runs: dict[str, list[RunResult]]) -> dict[str, list[tuple[float, float, float]]]:
    series: dict[str, list[tuple[float, float, float]]] = {}
    for label, results in runs.items():
        by_epoch: dict[float, list[float]] = defaultdict(list)
        for r in results:
            for point in r.online:
                by_epoch[point["epoch"]].append(point["knn_top1"])
        if by_epoch:
            series[label] = [(e, float(np.mean(v)), float(np.std(v))) for e, v in sorted(by_epoch.items())]
    return series
