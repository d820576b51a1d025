"""A seeded comparison of negative distributions for InfoGraph, resumable, with honest statistics.

For each method (:func:`hardneg.graphs.methods.parse_method`) and seed: train InfoGraph for a
fixed number of epochs (:func:`hardneg.graphs.train.train_infograph`), embed every graph with the
final encoder, and score the embeddings with the SVM protocol of InfoGraph / HCL (outer
stratified 10-fold CV, C chosen by inner CV on the training folds only;
:func:`hardneg.evaluate.cross_validated_accuracy`) and a logistic-regression readout. The
reported accuracy is that of the **final epoch**: no epoch is picked on the test folds, unlike the
released code, which reports the best of its logged epochs. Spread is over training seeds; the
paired difference to the baseline (InfoGraph) is taken seed by seed (same initial weights, batch
order and CV folds).

Each run's result is written atomically to ``OUT/runs/<method>__seed<k>.json`` as it finishes, so an
interrupted comparison resumes where it stopped; ``summary.csv``, ``summary.md`` and
``accuracy_vs_beta.png`` are written at the end.
"""

from __future__ import annotations

import json
import math
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from hardneg._io import atomic_write_text

if TYPE_CHECKING:
    from hardneg.data.graphs.dataset import GraphDataset

__all__ = ["GraphCompareResult", "run_graph_compare", "summarise"]

READOUTS = ("svm", "logistic")


@dataclass
class GraphCompareResult:
    """Per-run rows (method, seed, accuracies, seconds) and the summary rows written to disk."""

    runs: list[dict[str, Any]]
    summary: list[dict[str, Any]]
    out: Path


def _slug(method: str) -> str:
    return re.sub(r"[^A-Za-z0-9.+-]+", "_", method)


def _one_run(
    dataset: GraphDataset, method: str, seed: int, *, epochs: int, batch_size: int, lr: float, folds: int
) -> dict[str, Any]:
    from hardneg.evaluate.svm_cv import cross_validated_readouts
    from hardneg.graphs.methods import parse_method
    from hardneg.graphs.train import train_infograph

    t0 = time.perf_counter()
    result = train_infograph(
        dataset, loss=parse_method(method).build(), epochs=epochs, batch_size=batch_size, lr=lr, seed=seed
    )
    t1 = time.perf_counter()
    row: dict[str, Any] = {"method": method, "seed": seed, "train_seconds": t1 - t0}
    if not np.isfinite(result.embeddings).all():
        raise FloatingPointError(f"method {method!r}, seed {seed}: NaN/Inf embeddings after training")
    scores = cross_validated_readouts(
        result.embeddings, dataset.labels, readouts=READOUTS, folds=folds, seed=seed
    )
    for readout, cv in scores.items():
        row[f"{readout}_accuracy"] = cv.mean
        row[f"{readout}_fold_std"] = cv.std
    row["eval_seconds"] = time.perf_counter() - t1
    row["final_loss"] = result.history[-1]["loss"] if result.history else math.nan
    return row


def summarise(runs: list[dict[str, Any]], *, baseline: str = "infograph") -> list[dict[str, Any]]:
    """Mean ± std over seeds per method, and the paired difference to ``baseline`` (seed by seed)."""
    from hardneg.pipeline.paired import paired_differences

    by_method: dict[str, dict[int, dict[str, Any]]] = {}
    for r in runs:
        by_method.setdefault(r["method"], {})[int(r["seed"])] = r
    values = {m: {s: {k: r[f"{k}_accuracy"] for k in READOUTS} for s, r in seeds.items()}
              for m, seeds in by_method.items()}
    paired = paired_differences(values, baseline=baseline, metrics=READOUTS) if baseline in values else {}
    rows = []
    for method, seeds in by_method.items():
        row: dict[str, Any] = {"method": method, "seeds": len(seeds)}
        for readout in READOUTS:
            acc = np.array([seeds[s][f"{readout}_accuracy"] for s in sorted(seeds)])
            row[f"{readout}_mean"] = float(acc.mean())
            row[f"{readout}_std"] = float(acc.std(ddof=1)) if len(acc) > 1 else math.nan
            if readout in paired.get(method, {}):
                mean, std, wins, n = paired[method][readout]
                row[f"{readout}_diff_mean"] = mean
                row[f"{readout}_diff_std"] = std if n > 1 else math.nan
                row[f"{readout}_wins"] = f"{wins}/{n}"
        row["train_seconds"] = float(np.mean([seeds[s]["train_seconds"] for s in seeds]))
        rows.append(row)
    return rows


def _pm(mean: float, std: float, scale: float = 100.0) -> str:
    return f"{scale * mean:.2f} ± {scale * std:.2f}" if not math.isnan(std) else f"{scale * mean:.2f}"


def _markdown(summary: list[dict[str, Any]], *, title: str, baseline: str, epochs: int, folds: int) -> str:
    lines = [
        f"# {title}",
        "",
        f"Accuracy (%) of the final epoch ({epochs} epochs; no epoch chosen on test folds), "
        f"{folds}-fold stratified CV with C chosen by inner 5-fold CV on the training folds; "
        f"mean ± std over training seeds; paired difference to `{baseline}` seed by seed.",
        "",
        "| method | seeds | SVM | Δ SVM vs baseline | wins | logistic | Δ logistic | train s/run |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in summary:
        d_svm = _pm(r["svm_diff_mean"], r["svm_diff_std"]) if "svm_diff_mean" in r else "—"
        d_log = _pm(r["logistic_diff_mean"], r["logistic_diff_std"]) if "logistic_diff_mean" in r else "—"
        lines.append(
            f"| {r['method']} | {r['seeds']} | {_pm(r['svm_mean'], r['svm_std'])} | {d_svm} | "
            f"{r.get('svm_wins', '—')} | {_pm(r['logistic_mean'], r['logistic_std'])} | {d_log} | "
            f"{r['train_seconds']:.1f} |"
        )
    return "\n".join(lines) + "\n"


def _csv(rows: list[dict[str, Any]]) -> str:
    import csv
    import io

    keys: list[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=keys, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def _figure(runs: list[dict[str, Any]], out: Path, *, title: str) -> Path | None:
    """Accuracy vs β (HCL Fig. 3 style): InfoGraph at β = 0 and each ``hard:β``, every seed a dot."""
    from hardneg.graphs.methods import parse_method

    points = [(parse_method(r["method"]).beta, r["svm_accuracy"]) for r in runs
              if r["method"] == "infograph" or r["method"].startswith("hard:")]
    if not points:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from hardneg.figures import save_figure

    betas = sorted({b for b, _ in points if b is not None})
    fig, ax = plt.subplots(figsize=(4.5, 3.2))
    for i, b in enumerate(betas):
        acc = [100 * a for bb, a in points if bb == b]
        ax.scatter([i] * len(acc), acc, color="C0", alpha=0.5, s=14)
        ax.errorbar([i], [np.mean(acc)], yerr=[np.std(acc, ddof=1) if len(acc) > 1 else 0.0],
                    color="C3", marker="_", markersize=16, capsize=4)
    ax.set_xticks(range(len(betas)), [f"{b:g}" for b in betas])
    ax.set_xlabel("β (0 = InfoGraph)")
    ax.set_ylabel("SVM accuracy (%)")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    return save_figure(fig, out / "accuracy_vs_beta.png")


def run_graph_compare(
    dataset: GraphDataset,
    *,
    methods: list[str],
    seeds: list[int],
    out: str | Path,
    epochs: int = 20,
    batch_size: int = 128,
    lr: float = 1e-3,
    folds: int = 10,
    baseline: str = "infograph",
    log: Any = None,
) -> GraphCompareResult:
    """Run every ``method × seed`` (skipping runs already on disk) and write the summary.

    Args:
        dataset: the labelled graphs (labels are used only by the readouts).
        methods: method names (:func:`hardneg.graphs.methods.parse_method`), e.g.
            ``["infograph", "hard:1", "hard:2", "hard:10", "debiased:0.1", "ot:1"]``.
        seeds: training seeds (≥ 3 for a spread).
        out: output folder (created; runs already in ``out/runs`` are reused).
        epochs, batch_size, lr: training (HCL on the TU sets: 200 epochs, batches of 128,
            lr 1e-3; fewer epochs fit a CPU budget).
        folds: outer CV folds.
        baseline: the method paired differences are taken against.
        log: a ``print``-like callable for progress (None: silent).
    """
    from hardneg.graphs.methods import parse_method

    if not methods or not seeds:
        raise ValueError(f"methods and seeds must be non-empty, got methods={methods!r}, seeds={seeds!r}")
    for m in methods:
        parse_method(m)
    if len(set(methods)) != len(methods) or len(set(seeds)) != len(seeds):
        raise ValueError(f"methods and seeds must not repeat, got methods={methods!r}, seeds={seeds!r}")
    root = Path(out)
    (root / "runs").mkdir(parents=True, exist_ok=True)
    runs: list[dict[str, Any]] = []
    for seed in seeds:
        for method in methods:
            path = root / "runs" / f"{_slug(method)}__seed{seed}.json"
            if path.is_file():
                row = json.loads(path.read_text())
                if log:
                    log(f"{method} seed {seed}: on disk, svm {100 * row['svm_accuracy']:.2f}%")
            else:
                row = _one_run(
                    dataset, method, seed, epochs=epochs, batch_size=batch_size, lr=lr, folds=folds
                )
                atomic_write_text(path, json.dumps(row, indent=1) + "\n")
                if log:
                    log(f"{method} seed {seed}: svm {100 * row['svm_accuracy']:.2f}%  "
                        f"logistic {100 * row['logistic_accuracy']:.2f}%  ({row['train_seconds']:.1f} s)")
            runs.append(row)
    summary = summarise(runs, baseline=baseline)
    title = f"InfoGraph negatives on {dataset.name} ({len(dataset)} graphs, {dataset.num_classes} classes)"
    atomic_write_text(root / "runs.csv", _csv(runs))
    atomic_write_text(root / "summary.csv", _csv(summary))
    atomic_write_text(root / "summary.md", _markdown(summary, title=title, baseline=baseline, epochs=epochs,
                                                     folds=folds))
    _figure(runs, root, title=title)
    return GraphCompareResult(runs=runs, summary=summary, out=root)
