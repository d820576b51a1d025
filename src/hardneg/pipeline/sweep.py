"""``hardneg sweep``: a grid over dotted config keys (β, τ⁺, ε, K, batch size, ...) and seeds.

``sweep.grid`` maps dotted keys to value lists (e.g. ``{loss.beta: [0, 0.5, 1], loss.tau_plus:
[0, 0.1]}``); every point of the Cartesian product is trained once per seed of
``sweep.seeds`` under ``<root>/<key=value,...>/seed<k>``. Writes ``results.csv``, ``table.csv``
/ ``table.md`` (mean ± std per grid point), ``results.json``, ``summary.md`` and, for every swept
key, a figure of accuracy against that key (one line per combination of the other keys).
"""

from __future__ import annotations

import itertools
import json
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from hardneg._io import atomic_write_text
from hardneg.pipeline import figures
from hardneg.pipeline.compare import (
    TABLE_METRICS,
    CompareResult,
    aggregate,
    format_table,
    prepare_root,
    run_many,
    sum_timing,
)
from hardneg.pipeline.config import RunConfig, with_overrides
from hardneg.pipeline.run_folder import RunResult, csv_text, run_dir_for, timing_lines

__all__ = ["grid_points", "point_label", "run_sweep"]


def grid_points(grid: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """The Cartesian product of the grid, in key order.

    >>> grid_points({"loss.beta": [0, 1], "seed": [3]})
    [{'loss.beta': 0, 'seed': 3}, {'loss.beta': 1, 'seed': 3}]
    """
    keys = list(grid)
    return [dict(zip(keys, values)) for values in itertools.product(*(grid[k] for k in keys))]


def point_label(point: dict[str, Any]) -> str:
    """Folder-safe label of a grid point, e.g. ``beta=0.5,tau_plus=0.1``."""
    return ",".join(f"{k.split('.')[-1]}={v}" for k, v in point.items()).replace("/", "_") or "base"


def run_sweep(
    cfg: RunConfig,
    out: str | Path | None = None,
    *,
    resume: bool = False,
    force: bool = False,
    quiet: bool = False,
    echo: Callable[[str], None] | None = None,
) -> CompareResult:
    """Run the grid of ``cfg.sweep`` (see the module docstring)."""
    echo = echo or (lambda msg: print(msg, file=sys.stderr))
    start = time.perf_counter()
    root = run_dir_for(cfg, out)
    prepare_root(root, cfg, resume=resume, force=force)
    points = grid_points(cfg.sweep.grid)
    jobs = []
    labels: dict[str, dict[str, Any]] = {}
    for point in points:
        label = point_label(point)
        labels[label] = point
        for seed in cfg.sweep.seeds:
            overrides = {"seed": seed, **point}
            overrides["name"] = f"{label}-seed{overrides['seed']}"
            sub = with_overrides(cfg, overrides)
            jobs.append((label, int(overrides["seed"]), sub, root / label / f"seed{seed}"))
    if not quiet:
        echo(f"sweep: {len(points)} grid points x {len(cfg.sweep.seeds)} seeds = {len(jobs)} runs -> {root}")
    runs = run_many(jobs, resume=resume, force=force, quiet=quiet, echo=echo, workers=cfg.sweep.workers)
    table = aggregate(runs)
    result = CompareResult(
        root=root, runs=runs, table=table, timing=sum_timing([r for rs in runs.values() for r in rs])
    )
    _write_sweep(cfg, result, labels)
    result.seconds = time.perf_counter() - start
    return result


def _write_sweep(cfg: RunConfig, result: CompareResult, labels: dict[str, dict[str, Any]]) -> None:
    root = result.root
    rows = []
    for label, results in result.runs.items():
        for r in results:
            rows.append({**labels[label], "run": str(r.run_dir.relative_to(root)), **r.eval})
    atomic_write_text(root / "results.csv", csv_text(rows))
    table_rows = [
        {
            **labels[s],
            **{f"{m}_mean": v[0] for m, v in row.items()},
            **{f"{m}_std": v[1] for m, v in row.items()},
        }
        for s, row in result.table.items()
    ]
    atomic_write_text(root / "table.csv", csv_text(table_rows))
    md = format_table(result.table, label="grid point", seeds=len(cfg.sweep.seeds))
    atomic_write_text(root / "table.md", md + "\n")
    atomic_write_text(
        root / "results.json",
        json.dumps(
            {
                "grid": cfg.sweep.grid,
                "table": {s: {m: list(v) for m, v in row.items()} for s, row in result.table.items()},
                "runs": rows,
                "timing": result.timing,
            },
            indent=2,
            default=str,
        ),
    )
    if cfg.eval.figures:
        for key, values in cfg.sweep.grid.items():
            numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
            if len(values) < 2 or not numeric:
                continue
            series = _series_along(key, result.runs, labels)
            figures.curves(
                series,
                root / "figures" / f"accuracy_vs_{key.split('.')[-1]}.png",
                xlabel=key,
                title=f"accuracy vs {key} (mean ± std over seeds)",
                logx=key in ("loss.num_negatives", "train.batch_size"),
            )
    lines = [
        f"# Sweep `{cfg.name}` on {cfg.data.dataset}",
        "",
        f"grid: {cfg.sweep.grid}; seeds {cfg.sweep.seeds}",
        "",
        md,
        "",
        "Time summed over runs:",
        "```",
        *timing_lines(result.timing),
        "```",
        "",
    ]
    atomic_write_text(root / "summary.md", "\n".join(lines))


def _series_along(
    key: str, runs: dict[str, list[RunResult]], labels: dict[str, dict[str, Any]]
) -> dict[str, list[tuple[float, float, float]]]:
    """Lines ``metric [other keys]`` of (value of ``key``, mean, std)."""
    groups: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
    for label, results in runs.items():
        point = labels[label]
        rest = ",".join(f"{k.split('.')[-1]}={v}" for k, v in point.items() if k != key)
        for metric in ("linear_top1", "knn_top1"):
            vals = np.array([r.eval[metric] for r in results if metric in r.eval], dtype=float)
            if vals.size == 0 or metric not in TABLE_METRICS:
                continue
            name = metric.replace("_top1", "") + (f" [{rest}]" if rest else "")
            groups[name].append(
                (float(point[key]), float(vals.mean()), float(vals.std(ddof=1)) if vals.size > 1 else 0.0)
            )
    return dict(groups)
