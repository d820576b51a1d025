"""``hardneg compare`` and ``hardneg sweep``: one runner for groups of runs on the same data and budget.

A group is a list of **arms**, each a label and dotted overrides of the base config, trained once
per seed under ``<root>/<label>/seed<k>`` (ordinary run folders):

- ``compare``: the arms are ``compare.strategies`` (several negative strategies), seeds
  ``compare.seeds``;
- ``sweep``: the arms are the points of the Cartesian product of ``sweep.grid`` (β, τ⁺, ε, K, batch
  size, …), seeds ``sweep.seeds``.

Every job's config is validated before anything is written (a bad strategy or grid point is a
:class:`~hardneg.config.errors.ConfigError` naming it; duplicate seeds or labels, an empty group,
a label that is not one folder name, a grid over ``seed``: :func:`check_group`). The group
writes ``results.csv`` (one row per run), ``table.csv`` / ``table.md`` (mean ± sample std over
seeds, ddof = 1; one seed has no spread and the table says so), ``results.json``, ``summary.md``
with the seed-paired differences of every arm to the first one, and figures (accuracy bars,
cosine histograms, accuracy against β, kNN accuracy vs epochs, accuracy against each numeric
swept key). With ``resume=True`` finished runs are reused when their recorded config equals the
job's (otherwise they are trained again, and the report names the keys that changed) and
unfinished ones continue from their checkpoints; this is decided in the calling process, and only
the runs left to train go to workers. A group never passes ``force`` to a run: ``force`` empties
the group folder, and only one hardneg made (:func:`~hardneg.pipeline.run_folder.clear_folder`).
"""

from __future__ import annotations

import itertools
import json
import math
import sys
import time
import unicodedata
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hardneg._io import PARTIAL_SUFFIX, atomic_write_text
from hardneg.config import ConfigError, RunConfig
from hardneg.figures import training as figures
from hardneg.modalities import get_modality
from hardneg.modalities.readouts import ONLINE_METRIC
from hardneg.pipeline.config import dump_yaml, flat_config, with_overrides
from hardneg.pipeline.resources import check_group_memory
from hardneg.pipeline.run_folder import (
    GROUP_ENTRIES,
    GROUP_MARKER,
    FolderLock,
    RunResult,
    changed_keys,
    clear_folder,
    csv_text,
    load_result,
    reclaim_folder,
    run_dir_for,
    run_lock,
    timing_lines,
    write_marker,
)
from hardneg.pipeline.workers import Interrupted

__all__ = [
    "Arm",
    "CompareResult",
    "GroupInterrupted",
    "aggregate",
    "beta_series",
    "check_group",
    "compare_arms",
    "format_table",
    "grid_points",
    "headline_metrics",
    "paired_table",
    "point_label",
    "prepare_root",
    "run_compare",
    "run_group",
    "run_many",
    "run_seed",
    "run_sweep",
    "sum_timing",
    "sweep_arms",
    "table_metrics",
]


def table_metrics(configs: Iterable[RunConfig]) -> tuple[str, ...]:
    """The columns of a group's tables: the metrics each run's modality names for its config
    (:meth:`~hardneg.modalities.Modality.table_metrics`), in order, each once.

    >>> from hardneg.pipeline.config import load_config
    >>> cfg = load_config("graphs")
    >>> table_metrics([cfg, cfg]) == get_modality(cfg.data.dataset).table_metrics(cfg) != ()
    True
    """
    names = [m for c in configs for m in get_modality(c.data.dataset).table_metrics(c)]
    return tuple(dict.fromkeys(names))


def headline_metrics(configs: Iterable[RunConfig]) -> tuple[str, ...]:
    """The few metrics that name a group's results at a glance (its progress line, a sweep's
    ``accuracy_vs_<key>.png``): those each run's modality names for its config
    (:meth:`~hardneg.modalities.Modality.headline_metrics`), in order, each once."""
    names = [m for c in configs for m in get_modality(c.data.dataset).headline_metrics(c)]
    return tuple(dict.fromkeys(names))


def short_name(metric: str) -> str:
    """A metric's name on the progress line and in a figure's legend: its first ``_``-separated word.

    >>> short_name("top1_of_something")
    'top1'
    """
    return metric.split("_")[0]


@dataclass
class CompareResult:
    """Per-run results and the mean ± std table ``table[label][metric] = (mean, std)``; ``metrics``:
    the table's columns (:func:`table_metrics` of the group's configs)."""

    root: Path
    runs: dict[str, list[RunResult]]
    table: dict[str, dict[str, tuple[float, float]]]
    timing: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0
    written: list[Path] = field(default_factory=list)  # the group's own files, figures included
    metrics: tuple[str, ...] = ()
    headline: tuple[str, ...] = ()  # the metrics of the series figures (:func:`headline_metrics`)


def aggregate(runs: dict[str, list[RunResult]]) -> dict[str, dict[str, tuple[float, float]]]:
    """Mean and sample standard deviation (ddof = 1; NaN for one seed) of every metric per label."""
    table: dict[str, dict[str, tuple[float, float]]] = {}
    for label, results in runs.items():
        metrics = sorted({m for r in results for m in r.eval})
        row = {}
        for m in metrics:
            vals = np.array([r.eval[m] for r in results if m in r.eval], dtype=float)
            std = float(vals.std(ddof=1)) if len(vals) > 1 else math.nan  # one seed: no spread
            row[m] = (float(vals.mean()), std)
        table[label] = row
    return table


def format_table(
    table: dict[str, dict[str, tuple[float, float]]],
    *,
    label: str = "strategy",
    metrics: Sequence[str] | None = None,
    seeds: int | None = None,
) -> str:
    """Markdown table of accuracies in % (mean ± std): the columns ``metrics`` that some row holds,
    in that order (a group's :attr:`CompareResult.metrics`; ``None``: every metric, sorted)."""
    if metrics is None:
        metrics = sorted({m for row in table.values() for m in row})
    cols = [m for m in metrics if any(m in row for row in table.values())]
    head = f"| {label} | " + " | ".join(cols) + " |"
    lines = [head, "|" + "---|" * (len(cols) + 1)]
    for name, row in table.items():
        cells = [_mean_std(*row[m]) if m in row else "–" for m in cols]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    if seeds == 1:
        lines.append("\n(accuracy in %, one seed: no spread, no interval)")
    elif seeds is not None:
        lines.append(f"\n(accuracy in %, mean ± sample std over {seeds} seeds)")
    return "\n".join(lines)


def _mean_std(mean: float, std: float) -> str:
    return f"{100 * mean:.2f}" if math.isnan(std) else f"{100 * mean:.2f} ± {100 * std:.2f}"


def sum_timing(results: list[RunResult]) -> dict[str, float]:
    total: dict[str, float] = defaultdict(float)
    for r in results:
        for k, v in r.timing.items():
            total[k] += float(v)
    return dict(total)


def train_run(cfg: RunConfig, run_dir: Path, **kwargs: Any) -> RunResult | None:
    """:func:`hardneg.pipeline.experiment.train_run`, imported when a run trains: a group whose runs
    are all reused never imports Lightning (seconds of a second ``make run``)."""
    from hardneg.pipeline.experiment import train_run as train

    return train(cfg, run_dir, **kwargs)


def _job(cfg: RunConfig, run_dir: Path, resume: bool) -> tuple[RunResult | None, str]:
    """Train one run of a group (module level: picklable for worker processes).

    Never with ``force``: the group decided in its own process (:func:`run_many`) which runs are
    reused and emptied the stale ones it made; with ``resume`` an unfinished run continues.
    """
    t0 = time.perf_counter()
    result = train_run(cfg, run_dir, resume=resume, quiet=True)
    return result, _seconds(result, t0)


def _settle(cfg: RunConfig, run_dir: Path) -> tuple[RunResult | None, str]:
    """With ``--resume``, in the group's process: ``(result, "reused")`` for a finished run whose
    recorded config and code equal ``cfg``'s (:func:`~hardneg.pipeline.run_folder.changed_keys`);
    a run whose config changed is emptied (only a run folder hardneg made:
    :func:`~hardneg.pipeline.run_folder.clear_folder`) and ``(None, why)`` says which keys changed
    — never a stale number; ``(None, "")`` for a run still to train or to continue.
    """
    changed = changed_keys(run_dir, cfg)
    if changed:
        with run_lock(run_dir) as lock:
            clear_folder(lock, "run")
        more = f" and {len(changed) - 2} more" if len(changed) > 2 else ""
        return None, f"retrained, config changed: {'; '.join(changed[:2])}{more}"
    done = load_result(run_dir)
    return (done, "reused") if done is not None else (None, "")


def _seconds(result: RunResult | None, t0: float) -> str:
    """``12.3 s: fit 5.1 s, evaluate 6.0 s`` — the run's wall time and its two main parts."""
    total = f"{time.perf_counter() - t0:5.1f} s"
    if result is None:
        return total
    parts = [f"{k} {result.timing[k]:.1f} s" for k in ("fit", "evaluate") if k in result.timing]
    return f"{total}: {', '.join(parts)}" if parts else total

def _worker_init() -> None:
    from hardneg.pipeline.trainer import quiet_lightning

    quiet_lightning()  # the same few messages as the CLI, never a checkpoint warning


class GroupInterrupted(Exception):
    """Ctrl-C (or SIGTERM) stopped a group after ``done`` of ``total`` runs.

    ``result`` holds the finished runs; the group's tables were written from them and marked
    partial. Running the same command with ``--resume`` continues: finished runs are reused and an
    interrupted run continues from its last finished epoch.
    """

    def __init__(self, result: CompareResult, done: int, total: int) -> None:
        super().__init__(f"interrupted after {done} of {total} runs; results so far in {result.root}")
        self.result, self.done, self.total = result, done, total


def run_many(
    jobs: list[tuple[str, int, RunConfig, Path]],
    *,
    resume: bool,
    quiet: bool,
    echo: Callable[[str], None],
    workers: int = 1,
) -> dict[str, list[RunResult]]:
    """Train (or reuse, with ``resume``) every ``(label, seed, config, run_dir)`` job.

    Which runs are finished and reusable is decided here, in this process (:func:`_settle`):
    only the others are trained, and a group with nothing to train starts no worker process.
    ``workers > 1`` trains them in that many supervised processes
    (:func:`~hardneg.pipeline.workers.run_supervised`: they die with this one and stop on
    Ctrl-C); each run is independent and seeded by its own config, so the results do not depend
    on ``workers``; they are collected in job order.

    Raises:
        Interrupted: on Ctrl-C / SIGTERM, with the results of every job finished on disk (a run a
            worker finished just before the interrupt included).
    """
    from hardneg.pipeline.workers import run_supervised

    def report(i: int, res: tuple[RunResult | None, str]) -> None:
        label, seed, cfg = jobs[i][0], jobs[i][1], jobs[i][2]
        if quiet or res[0] is None:
            return
        acc = ", ".join(
            f"{short_name(m)} {100 * res[0].eval[m]:.1f}"
            for m in headline_metrics([cfg])
            if m in res[0].eval
        )
        echo(f"[{i + 1}/{len(jobs)}] {label} seed {seed}: {acc} ({res[1]})")

    results: list[tuple[RunResult | None, str] | None] = [None] * len(jobs)
    notes = [""] * len(jobs)
    for i, (_, _, cfg, run_dir) in enumerate(jobs):
        if resume:
            done, notes[i] = _settle(cfg, run_dir)
            if done is not None:
                results[i] = reused = (done, notes[i])
                report(i, reused)
    todo = [i for i, res in enumerate(results) if res is None]

    def trained(k: int, res: tuple[RunResult | None, str]) -> None:
        i = todo[k]
        results[i] = done = (res[0], f"{res[1]}, {notes[i]}" if notes[i] else res[1])
        report(i, done)

    if todo:
        try:
            run_supervised(
                _job,
                [(jobs[i][2], jobs[i][3], resume) for i in todo],
                workers=workers,
                init=_worker_init,
                on_result=trained,
            )
        except Interrupted:
            raise Interrupted(_finished_on_disk(jobs, results)) from None
    return _collect(jobs, results)


def _finished_on_disk(
    jobs: list[tuple[str, int, RunConfig, Path]], results: list[tuple[RunResult | None, str] | None]
) -> list[tuple[RunResult | None, str] | None]:
    """``results`` with the runs complete on disk added (``metrics.json`` of the job's config): a
    worker may finish a run just before an interrupt stops it from answering."""
    out = list(results)
    for i, (_, _, cfg, run_dir) in enumerate(jobs):
        if out[i] is None and not changed_keys(run_dir, cfg):
            done = load_result(run_dir)
            out[i] = (done, "finished before the interrupt") if done is not None else None
    return out


def _collect(
    jobs: list[tuple[str, int, RunConfig, Path]], results: list[tuple[RunResult | None, str] | None]
) -> dict[str, list[RunResult]]:
    runs: dict[str, list[RunResult]] = defaultdict(list)
    for (label, _, _, _), res in zip(jobs, results):
        if res is not None and res[0] is not None:  # None: not finished, or a non-zero DDP rank
            runs[label].append(res[0])
    return dict(runs)


def prepare_root(
    root: Path,
    cfg: RunConfig,
    *,
    resume: bool,
    force: bool,
    kind: str = "compare",
    lock: FolderLock | None = None,
) -> None:
    """Create the group folder, marked as hardneg's (:data:`~hardneg.pipeline.run_folder.GROUP_MARKER`),
    and its config ``<kind>.yaml``.

    A used folder is refused without ``resume`` / ``force``; ``force`` (without ``resume``) empties
    it only when it is a group folder hardneg made that nobody else writes
    (:func:`~hardneg.pipeline.run_folder.clear_folder`, under ``lock``, the caller's
    :func:`~hardneg.pipeline.run_folder.run_lock` of ``root``; taken here when not given).
    """
    if not resume:
        reclaim_folder(root, "group", force=force, lock=lock, used=(
            f"folder '{root}' already holds results; pass --resume to reuse finished runs, "
            f"--force to overwrite, or --out DIR for another folder"))
    root.mkdir(parents=True, exist_ok=True)
    if not (root / GROUP_MARKER).is_file():
        write_marker(root, kind)
    atomic_write_text(root / f"{kind}.yaml", dump_yaml(cfg))


@dataclass(frozen=True)
class Arm:
    """One arm of a group: its label (folder name), its overrides and the columns naming it."""

    label: str
    overrides: dict[str, Any]
    point: dict[str, Any]


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


# The keys a group sets in each of its runs (seed from <kind>.seeds, name <label>-seed<k>, figures
# of the first seed only): a strategy or grid point may not set them, they would be overridden.
GROUP_KEYS = {
    "seed": "every run's seed comes from {kind}.seeds: list the seeds there",
    "name": "every run is named <label>-seed<k> by the group",
    "eval.figures": "the group draws the figures of each arm's first seed: set eval.figures for the "
                    "whole group, outside {where}",
}


def compare_arms(cfg: RunConfig) -> list[Arm]:
    """The arms of ``compare.strategies`` (checked by :func:`check_group`)."""
    check_group(cfg, "compare")
    return [Arm(s.name, dict(s.overrides), {"strategy": s.name}) for s in cfg.compare.strategies]


def sweep_arms(cfg: RunConfig) -> list[Arm]:
    """The arms of ``sweep.grid``, one per grid point (checked by :func:`check_group`)."""
    check_group(cfg, "sweep")
    return [Arm(point_label(p), dict(p), dict(p)) for p in grid_points(cfg.sweep.grid)]


def check_group(cfg: RunConfig, kind: str) -> None:
    """A group means what it says, or :class:`ConfigError` naming the key and the value:

    - it is not empty (``compare.strategies=[]``, ``sweep.grid={}`` or a key with no values);
    - no strategy or grid key sets what the group sets in each run (:data:`GROUP_KEYS`: ``seed``,
      ``name``, ``eval.figures``) nor a ``compare.*`` / ``sweep.*`` setting: a grid over seeds is
      ``sweep.seeds``;
    - every strategy name and grid-point label is one folder name (not empty, ``.`` or ``..``, no
      ``/``, ``\\`` or NUL, at most 255 bytes), distinct from the others after Unicode (NFC) and case
      normalisation (one folder on a case-insensitive file system);
    - no two strategies, and no two values of a grid key (``[1, 1.0]``), give the same run once
      validated.
    """
    if kind == "compare":
        strategies = cfg.compare.strategies
        if not strategies:
            raise ConfigError(
                "invalid value for 'compare.strategies': must name at least one strategy, got []"
            )
        for i, strategy in enumerate(strategies):
            _check_keys(strategy.overrides, f"compare.strategies[{i}].overrides", kind)
            _check_label(strategy.name, f"compare.strategies[{i}].name")
        _distinct_labels([s.name for s in strategies], "compare.strategies")
        runs = [_run_settings(cfg, dict(s.overrides), f"compare.strategies[{i}]")
                for i, s in enumerate(strategies)]
        for (i, a), (j, b) in itertools.combinations(enumerate(runs), 2):
            if a == b:
                raise ConfigError(
                    f"invalid value for 'compare.strategies': {strategies[i].name!r} and "
                    f"{strategies[j].name!r} give the same run (their overrides are equal once validated)"
                )
        return
    grid = cfg.sweep.grid
    if not grid:
        raise ConfigError("invalid value for 'sweep.grid': must hold at least one key and its values, got {}")
    _check_keys(grid, "sweep.grid", kind)
    for key, values in grid.items():
        if not values:
            raise ConfigError(
                f"invalid value for 'sweep.grid.{key}': must be a non-empty list, got {values!r}"
            )
        runs = [_run_settings(cfg, {key: v}, f"sweep.grid.{key}={v!r}") for v in values]
        for (i, a), (j, b) in itertools.combinations(enumerate(runs), 2):
            if a == b:
                raise ConfigError(
                    f"invalid value for 'sweep.grid.{key}': {values[i]!r} and {values[j]!r} give the same "
                    f"run (equal once validated), got {values!r}"
                )
    labels = [point_label(p) for p in grid_points(grid)]
    for label in labels:
        _check_label(label, f"sweep.grid point {label!r}")
    _distinct_labels(labels, "sweep.grid")


def _check_keys(overrides: dict[str, Any], where: str, kind: str) -> None:
    for key, value in overrides.items():
        for group_key, why in GROUP_KEYS.items():
            nested = isinstance(value, dict) and group_key.startswith(f"{key}.") and (
                group_key.removeprefix(f"{key}.") in value
            )
            if key == group_key or nested:
                raise ConfigError(
                    f"invalid key in '{where}': {group_key!r} is set by the group in each run "
                    f"({why.format(kind=kind, where=where)}), got {key}={value!r}"
                )
        if key.split(".")[0] in ("compare", "sweep"):
            raise ConfigError(
                f"invalid key in '{where}': {key!r} is a setting of the group, not of its runs, "
                f"got {key}={value!r}"
            )


def _check_label(label: str, where: str) -> None:
    """A strategy name / grid-point label names one folder inside the group folder, not one of the
    group's own files (:data:`~hardneg.pipeline.run_folder.GROUP_ENTRIES`, a lock file or the
    temporary file of an atomic write), also once case and Unicode form are ignored."""
    bad = (
        not label
        or label in (".", "..")
        or any(c in label for c in "/\\\0")
        or len(label.encode("utf-8", "surrogatepass")) > 255
    )
    if bad:
        raise ConfigError(
            f"invalid value for '{where}': must be one folder name (not empty, '.' or '..', no '/', "
            f"'\\' or NUL, at most 255 bytes), got {label!r}"
        )
    key = unicodedata.normalize("NFC", label).casefold()
    taken = {unicodedata.normalize("NFC", name).casefold() for name in GROUP_ENTRIES}
    if key in taken or (key.startswith(".") and key.endswith((PARTIAL_SUFFIX, ".lock"))):
        raise ConfigError(
            f"invalid value for '{where}': the group's own files take that name in its folder; must be a "
            f"folder name other than {', '.join(sorted(GROUP_ENTRIES))} and not '.<name>.lock' or "
            f"'.<name>{PARTIAL_SUFFIX}', got {label!r}"
        )


def _distinct_labels(labels: list[str], where: str) -> None:
    seen: dict[str, str] = {}
    for label in labels:
        key = unicodedata.normalize("NFC", label).casefold()
        if key in seen:
            raise ConfigError(
                f"invalid value for '{where}': names must be distinct folder names, got {seen[key]!r} and "
                f"{label!r} (one folder once case and Unicode form are ignored)"
            )
        seen[key] = label


def _run_settings(cfg: RunConfig, overrides: dict[str, Any], where: str) -> dict[str, Any]:
    """The settings of the run that ``overrides`` of ``cfg`` give (the group's sections aside)."""
    try:
        sub = with_overrides(cfg, overrides)
    except ConfigError as err:
        raise ConfigError(f"in {where}: {err}") from None
    return {k: v for k, v in flat_config(sub).items() if k.split(".")[0] not in ("compare", "sweep")}


def _unique(values: list[Any], key: str) -> None:
    seen = [v for i, v in enumerate(values) if v in values[:i]]
    if seen:
        raise ConfigError(
            f"invalid value for '{key}': entries must be distinct, got {values!r} ({seen[0]!r} twice)"
        )


def _jobs(
    cfg: RunConfig, arms: list[Arm], seeds: list[int], root: Path, where: str
) -> list[tuple[str, int, RunConfig, Path]]:
    """Every (arm, seed) job with its validated config; nothing is written before this succeeds."""
    _unique(list(seeds), f"{where}.seeds")
    _distinct_labels([a.label for a in arms], "compare.strategies" if where == "compare" else "sweep.grid")
    jobs = []
    for i, arm in enumerate(arms):
        for n, seed in enumerate(seeds):
            extra: dict[str, Any] = {"seed": seed, "name": f"{arm.label}-seed{seed}"}
            if n > 0:  # per-run figures of the first seed only; the group has its own
                extra["eval.figures"] = False
            try:
                sub = with_overrides(cfg, {**arm.overrides, **extra})
            except ConfigError as err:
                what = (
                    f"compare.strategies[{i}] ({arm.label})"
                    if where == "compare"
                    else f"sweep.grid point {arm.label}"
                )
                raise ConfigError(f"in {what}: {err}") from None
            jobs.append((arm.label, seed, sub, root / arm.label / f"seed{seed}"))
    return jobs


def run_group(
    cfg: RunConfig,
    kind: str,
    out: str | Path | None = None,
    *,
    resume: bool = False,
    force: bool = False,
    quiet: bool = False,
    echo: Callable[[str], None] | None = None,
) -> CompareResult:
    """Run the group ``kind`` (``"compare"`` or ``"sweep"``) of ``cfg`` (see the module docstring)."""
    if kind not in ("compare", "sweep"):
        raise ValueError(f"kind must be 'compare' or 'sweep', got {kind!r}")
    echo = echo or (lambda msg: print(msg, file=sys.stderr))
    start = time.perf_counter()
    group = cfg.compare if kind == "compare" else cfg.sweep
    arms = compare_arms(cfg) if kind == "compare" else sweep_arms(cfg)
    root = run_dir_for(cfg, out)
    jobs = _jobs(cfg, arms, list(group.seeds), root, kind)
    # every run must fit before the first one starts, and `workers` of them at once
    check_group_memory([sub for _, _, sub, _ in jobs], group.workers, f"{kind}.workers")
    with run_lock(root) as lock:  # one writer per group folder (each run also locks its own)
        prepare_root(root, cfg, resume=resume, force=force, kind=kind, lock=lock)
        if not quiet:
            echo(
                f"{kind}: {len(arms)} {'strategies' if kind == 'compare' else 'grid points'} x "
                f"{len(group.seeds)} seeds = {len(jobs)} runs of {cfg.train.epochs} epochs -> {root}"
            )
        partial: tuple[int, int] | None = None
        try:
            runs = run_many(jobs, resume=resume, quiet=quiet, echo=echo, workers=group.workers)
        except Interrupted as stop:
            runs = _collect(jobs, stop.results)
            partial = (sum(r is not None for r in stop.results), len(jobs))
        configs = {label: sub for label, _, sub, _ in jobs}
        result = CompareResult(
            root=root,
            runs=runs,
            table=aggregate(runs),
            timing=sum_timing([r for rs in runs.values() for r in rs]),
            metrics=table_metrics(sub for _, _, sub, _ in jobs),
            headline=headline_metrics(sub for _, _, sub, _ in jobs),
        )
        result.written = _write_group(
            cfg, kind, result, {a.label: a.point for a in arms}, configs,
            seeds=len(group.seeds), partial=partial,
        )
    result.seconds = time.perf_counter() - start
    if partial is not None:
        raise GroupInterrupted(result, *partial)
    return result


def run_compare(cfg: RunConfig, out: str | Path | None = None, **kwargs: Any) -> CompareResult:
    """Run ``cfg.compare`` (:func:`run_group` with ``kind="compare"``)."""
    return run_group(cfg, "compare", out, **kwargs)


def run_sweep(cfg: RunConfig, out: str | Path | None = None, **kwargs: Any) -> CompareResult:
    """Run the grid of ``cfg.sweep`` (:func:`run_group` with ``kind="sweep"``)."""
    return run_group(cfg, "sweep", out, **kwargs)


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
    table = paired_differences(values, baseline=baseline, metrics=list(result.metrics))
    return format_paired(table, baseline=baseline, metrics=list(result.metrics))


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


def _write_group(
    cfg: RunConfig,
    kind: str,
    result: CompareResult,
    points: dict[str, dict[str, Any]],
    configs: dict[str, RunConfig],
    *,
    seeds: int,
    partial: tuple[int, int] | None = None,
) -> list[Path]:
    """Write the group's tables, summary and figures; returns the paths written."""
    root = result.root
    rows: list[dict[str, Any]] = []
    for label, results in result.runs.items():
        for r in results:
            rows.append(
                {
                    **points[label],
                    "run": str(r.run_dir.relative_to(root)),
                    **r.eval,
                    "final_loss": r.history[-1]["loss"] if r.history else float("nan"),
                }
            )
    atomic_write_text(root / "results.csv", csv_text(rows))
    table_rows = [
        {
            **points[s],
            **{f"{m}_mean": v[0] for m, v in row.items()},
            **{f"{m}_std": v[1] for m, v in row.items()},
        }
        for s, row in result.table.items()
    ]
    atomic_write_text(root / "table.csv", csv_text(table_rows))
    md = format_table(result.table, label="strategy" if kind == "compare" else "grid point",
                      metrics=result.metrics, seeds=seeds)
    atomic_write_text(root / "table.md", md + "\n")
    payload: dict[str, Any] = {
        "table": {s: {m: list(v) for m, v in row.items()} for s, row in result.table.items()},
        "runs": rows,
        "timing": result.timing,
    }
    if kind == "sweep":
        payload = {"grid": cfg.sweep.grid, **payload}
    atomic_write_text(root / "results.json", json.dumps(payload, indent=2, default=str))
    written = _group_figures(cfg, kind, result, points, configs, seeds=seeds) if cfg.eval.figures else []
    title = "Compare" if kind == "compare" else "Sweep"
    setting = (
        f"seeds {cfg.compare.seeds}"
        if kind == "compare"
        else f"grid {cfg.sweep.grid}; seeds {cfg.sweep.seeds}"
    )
    lines = [
        f"# {title} `{cfg.name}` on {get_modality(cfg.data.dataset).describe(cfg)}",
        "",
        f"{cfg.train.epochs} epochs, batch {cfg.train.batch_size}, encoder {cfg.model.encoder}, "
        f"{setting}. Every accuracy is that of the final epoch's encoder: no epoch or setting is "
        "chosen on test data.",
        "",
        *(
            [f"**Partial**: interrupted after {partial[0]} of {partial[1]} runs; the tables hold the "
             "finished runs only. Run the same command with `--resume` to finish.", ""]
            if partial is not None
            else []
        ),
        md,
        "",
    ]
    paired = paired_table(result)
    if paired:
        first = next(iter(result.runs))
        lines += [
            f"Paired differences to `{first}` (same seed: same initial weights, data order "
            "and evaluation folds):",
            "",
            paired,
            "",
        ]
    if written:
        lines += ["Figures: " + ", ".join(f"`{p.relative_to(root)}`" for p in written), ""]
    lines += ["Time summed over runs:", "```", *timing_lines(result.timing), "```", ""]
    atomic_write_text(root / "summary.md", "\n".join(lines))
    files = ["results.csv", "table.csv", "table.md", "results.json", "summary.md"]
    return [root / name for name in files] + written


def _group_figures(
    cfg: RunConfig,
    kind: str,
    result: CompareResult,
    points: dict[str, dict[str, Any]],
    configs: dict[str, RunConfig],
    *,
    seeds: int,
) -> list[Path]:
    """The group's figures; returns the paths written."""
    fig = result.root / "figures"
    out: list[Path] = []
    if not result.runs:
        return out
    spread = f"mean ± std over {seeds} seeds" if seeds > 1 else "one seed"
    if kind == "compare":
        figures.accuracy_bars(
            {s: {m: v for m, v in row.items() if m in result.metrics} for s, row in result.table.items()},
            fig / "accuracy.png",
            title=f"{cfg.data.dataset}: {spread}",
        )
        out.append(fig / "accuracy.png")
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
            out.append(fig / "cosine_histograms.png")
        metric = next((m for m in result.metrics if any(m in row for row in result.table.values())), None)
        by_beta = beta_series(result.table, configs, metric) if metric else {}
        if by_beta:
            figures.curves(
                by_beta,
                fig / "accuracy_vs_beta.png",
                xlabel="β (0 = uniform negatives)",
                ylabel=f"{metric} (%)",
                title=f"{cfg.data.dataset}: {spread}",
            )
            out.append(fig / "accuracy_vs_beta.png")
        series = _epoch_series(result.runs)
        if series:
            figures.curves(
                series,
                fig / "knn_vs_epochs.png",
                xlabel="epoch",
                title="online weighted kNN top-1 (mean ± std over seeds)",
            )
            out.append(fig / "knn_vs_epochs.png")
        return out
    for key, values in cfg.sweep.grid.items():
        numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
        if len(values) < 2 or not numeric:
            continue
        path = fig / f"accuracy_vs_{key.split('.')[-1]}.png"
        figures.curves(
            _series_along(key, result.runs, points, result.headline),
            path,
            xlabel=key,
            title=f"accuracy vs {key} ({spread})",
            logx=key in ("loss.num_negatives", "train.batch_size"),
        )
        out.append(path)
    return out


def _std(vals: np.ndarray) -> float:
    return float(vals.std(ddof=1)) if vals.size > 1 else 0.0  # a figure's error bar: none for one seed


def _epoch_series(runs: dict[str, list[RunResult]]) -> dict[str, list[tuple[float, float, float]]]:
    series: dict[str, list[tuple[float, float, float]]] = {}
    for label, results in runs.items():
        by_epoch: dict[float, list[float]] = defaultdict(list)
        for r in results:
            for point in r.online:
                by_epoch[point["epoch"]].append(point[ONLINE_METRIC])
        if by_epoch:
            series[label] = [(e, float(np.mean(v)), _std(np.array(v))) for e, v in sorted(by_epoch.items())]
    return series


def _series_along(
    key: str, runs: dict[str, list[RunResult]], labels: dict[str, dict[str, Any]], metrics: tuple[str, ...]
) -> dict[str, list[tuple[float, float, float]]]:
    """Lines ``metric [other keys]`` of (value of ``key``, mean, std), one per metric of ``metrics``
    (the group's :func:`headline_metrics`) that a run reported."""
    groups: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
    for label, results in runs.items():
        point = labels[label]
        rest = ",".join(f"{k.split('.')[-1]}={v}" for k, v in point.items() if k != key)
        for metric in metrics:
            vals = np.array([r.eval[metric] for r in results if metric in r.eval], dtype=float)
            if vals.size == 0:
                continue
            name = short_name(metric) + (f" [{rest}]" if rest else "")
            groups[name].append((float(point[key]), float(vals.mean()), _std(vals)))
    return dict(groups)
