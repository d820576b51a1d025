"""The run folder: its layout, the writers of its files, resuming into it.

A run folder holds::

    config.yaml            the resolved config (what --resume and `hardneg evaluate` read)
    provenance.json        hash of the config, package version and hash of the code that ran
    metrics.json           per-epoch history, evaluation, online kNN curve, timing
    metrics.csv            per-epoch history (loss and loss diagnostics, β)
    eval.csv               evaluation metrics (linear / kNN / mean classifier / k-wise)
    features.npz           test-set backbone features `features` (n, d) float32 and `labels`
                           (n,) int64: the input of `hardneg theory report RUN`
    summary.md             a short human-readable summary
    checkpoints/           last.ckpt (every epoch), epochNNN.ckpt, interrupted.ckpt
    logs/csv, logs/tensorboard
    figures/               cosine histograms, hardest negatives (images only), loss (and kNN) curves

Every file is written atomically (:mod:`hardneg._io`). ``hardneg compare`` and ``hardneg sweep``
use the same writers (:func:`csv_text`, :func:`timing_lines`, :func:`load_result`).
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from hardneg._io import atomic_write_bytes, atomic_write_text
from hardneg.pipeline.config import (
    ConfigError,
    RunConfig,
    flat_config,
    load_config,
    with_overrides,
)

__all__ = [
    "RunExists",
    "RunLocked",
    "RunResult",
    "changed_keys",
    "csv_text",
    "load_result",
    "prepare_run_dir",
    "run_dir_for",
    "run_lock",
    "timing_lines",
    "write_features",
    "write_outputs",
]

# Keys that may differ between the saved config and the one given with --resume.
_RESUME_FREE = {"train.progress", "train.threads", "out_dir", "eval"}


class RunExists(FileExistsError):
    """The run folder already holds a run and neither resume nor force was asked."""


class RunLocked(RunExists):
    """Another live process is writing the run folder (it holds the folder's lock)."""


@contextlib.contextmanager
def run_lock(run_dir: str | Path) -> Iterator[None]:
    """Hold the run folder's lock while writing it: one writer per folder.

    An OS file lock (``flock``) on ``.<name>.lock`` beside the folder (outside it, so that
    ``--force`` can delete the folder while holding it), with the holder's PID written in it; the
    OS releases it when the holder exits, however it dies. A second writer gets
    :class:`RunLocked` naming the holder's PID, before it writes or deletes anything.
    """
    import fcntl

    run = Path(run_dir)
    for folder in (run, *run.parents):
        if folder.exists() and not folder.is_dir():
            what = "Not a directory (the output folder is a file)" if folder == run else "Not a directory"
            raise NotADirectoryError(20, what, str(folder))
    try:
        run.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(run.parent / f".{run.name}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as err:  # a read-only or full disk: name the run folder, not the lock file
        raise OSError(err.errno, err.strerror, str(run)) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            raise RunLocked(
                f"run folder '{run}' is being written by another hardneg process (PID {holder}); "
                "wait for it to finish or stop it, or use --out DIR for another folder"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock


@dataclass
class RunResult:
    """What a finished run produced (also written to ``metrics.json``)."""

    run_dir: Path
    history: list[dict[str, float]]
    eval: dict[str, float]
    online: list[dict[str, float]] = field(default_factory=list)
    timing: dict[str, float] = field(default_factory=dict)
    test_features: torch.Tensor | None = field(default=None, repr=False)
    test_labels: torch.Tensor | None = field(default=None, repr=False)

    def to_json(self) -> dict[str, Any]:
        return {"history": self.history, "eval": self.eval, "online_knn": self.online, "timing": self.timing}


def run_dir_for(cfg: RunConfig, out: str | Path | None = None) -> Path:
    """``out`` if given, else ``<cfg.out_dir>/<cfg.name>``."""
    return Path(out) if out is not None else Path(cfg.out_dir) / cfg.name


def _check_resume_config(saved: RunConfig, new: RunConfig) -> None:
    a, b = flat_config(saved), flat_config(new)
    diff = [
        k
        for k in sorted(a)
        if a[k] != b.get(k) and k not in _RESUME_FREE and k.split(".")[0] not in _RESUME_FREE
    ]
    if diff:
        listing = ", ".join(f"{k}: {a[k]!r} -> {b.get(k)!r}" for k in diff[:8])
        raise ConfigError(
            f"--resume needs the run's own config; these keys differ from the saved config.yaml: {listing}"
        )


def changed_keys(run_dir: str | Path, cfg: RunConfig) -> list[str]:
    """The keys in which ``cfg`` differs from the config a run folder recorded (``[]`` when the folder
    has no config), and the code that changed since (version, source hash: see
    :mod:`hardneg.pipeline.provenance`): what makes a finished run's metrics stale for ``cfg``.

    Every key counts (evaluation settings too) except ``train.progress``, ``out_dir`` and a
    ``train.threads`` left unset in ``cfg`` (the run recorded the one it resolved).
    """
    from hardneg.pipeline.provenance import stale_provenance

    saved_path = Path(run_dir) / "config.yaml"
    if not saved_path.is_file():
        return []
    a, b = flat_config(load_config(saved_path)), flat_config(cfg)
    free = {"train.progress", "out_dir"} | ({"train.threads"} if cfg.train.threads is None else set())
    keys = [f"{k}: {a.get(k)!r} -> {b.get(k)!r}" for k in sorted(set(a) | set(b))
            if a.get(k) != b.get(k) and k not in free]
    return keys + stale_provenance(run_dir)


def _check_resume_threads(saved: RunConfig, new: RunConfig) -> None:
    had, asked = saved.train.threads, new.train.threads
    if had is not None and asked is not None and had != asked:
        raise ConfigError(
            f"'train.threads': the run was trained with {had} thread(s), got {asked}; CPU results depend "
            f"on the thread count, so a resumed run is bit-identical to an uninterrupted one only with "
            f"the same count: leave train.threads out to use the run's {had}, or start a new run"
        )


def prepare_run_dir(cfg: RunConfig, run_dir: Path, *, resume: bool, force: bool) -> RunConfig:
    """Check and prepare ``run_dir``; returns the config the run uses.

    A new run records its thread count: ``train.threads`` left unset is resolved to the torch
    default of this machine (CPU results depend on it). ``resume=True`` continues the saved
    config (only ``train.progress``, ``out_dir`` and ``eval`` may differ); a different explicit
    ``train.threads`` is refused (:class:`ConfigError`), an unset one takes the run's.
    """
    saved_path = run_dir / "config.yaml"
    if run_dir.exists() and not run_dir.is_dir():
        raise NotADirectoryError(20, "Not a directory (the output folder is a file)", str(run_dir))
    if resume and saved_path.is_file():
        saved = load_config(saved_path)
        _check_resume_config(saved, cfg)
        _check_resume_threads(saved, cfg)
        threads = saved.train.threads if saved.train.threads is not None else cfg.train.threads
        return _with_threads(
            load_config(saved_path, {"train.progress": cfg.train.progress, "out_dir": cfg.out_dir}), threads
        )
    if not resume and run_dir.exists() and any(run_dir.iterdir()):
        if not force:
            raise RunExists(
                f"run folder '{run_dir}' already holds a run; pass --resume to continue it, "
                f"--force to overwrite it, or --out DIR for another folder"
            )
        shutil.rmtree(run_dir)
    return _with_threads(cfg, cfg.train.threads)


def _with_threads(cfg: RunConfig, threads: int | None) -> RunConfig:
    resolved = threads if threads is not None else torch.get_num_threads()
    return cfg if cfg.train.threads == resolved else with_overrides(cfg, {"train.threads": resolved})


def csv_text(rows: list[dict[str, Any]]) -> str:
    keys: list[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=keys, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


_PHASES = ("data", "augment", "encoder_forward", "loss_forward", "backward", "optimizer")


def timing_lines(timing: dict[str, float]) -> list[str]:
    """Human-readable breakdown of where the time went."""
    fit = timing.get("fit", 0.0)
    lines = []
    for phase in _PHASES:
        if phase in timing:
            share = 100 * timing[phase] / fit if fit else 0.0
            lines.append(f"{phase:>16}: {timing[phase]:7.2f} s ({share:4.1f}% of fit)")
    if fit:
        other = fit - sum(timing.get(p, 0.0) for p in _PHASES)
        lines.append(f"{'lightning/other':>16}: {other:7.2f} s ({100 * other / fit:4.1f}% of fit)")
    for key in ("setup", "fit", "evaluate", "figures", "total"):
        if key in timing:
            lines.append(f"{key:>16}: {timing[key]:7.2f} s")
    return lines


def write_features(path: str | Path, features: torch.Tensor, labels: torch.Tensor) -> Path:
    """Write ``features.npz`` atomically: ``features`` (n, d) float32, ``labels`` (n,) int64.

    The format :func:`hardneg.theory.measure.load_features` reads, so ``hardneg theory report
    RUN`` puts the measured losses of the run's test representation next to the bounds.
    """
    f = features.detach().cpu().numpy().astype(np.float32)
    y = labels.detach().cpu().numpy().astype(np.int64)
    if f.ndim != 2 or y.shape != (f.shape[0],):
        raise ValueError(f"features must be (n, d) and labels (n,), got {f.shape} and {y.shape}")
    buf = io.BytesIO()
    np.savez(buf, features=f, labels=y)
    return atomic_write_bytes(path, buf.getvalue())


def _component(section: dict[str, Any]) -> str:
    """``hard(beta=1.0, detach_weights=False, ...)``: exactly the resolved parameters of a component."""
    params = ", ".join(f"{k}={v}" for k, v in section.items() if k != "name")
    return f"{section['name']}({params})"


def write_outputs(cfg: RunConfig, result: RunResult) -> None:
    run = result.run_dir
    if result.test_features is not None and result.test_labels is not None:
        write_features(run / "features.npz", result.test_features, result.test_labels)
    atomic_write_text(run / "metrics.json", json.dumps(result.to_json(), indent=2, sort_keys=True))
    atomic_write_text(run / "metrics.csv", csv_text(result.history))
    eval_rows = [{"metric": k, "value": v} for k, v in result.eval.items()]
    atomic_write_text(run / "eval.csv", csv_text(eval_rows))
    from hardneg.modalities import get_modality

    modality = get_modality(cfg.data.dataset)
    lines = [
        f"# Run `{cfg.name}`",
        "",
        f"- data: {modality.describe(cfg)}; encoder: {cfg.model.encoder}; mode: {cfg.train.mode}",
        f"- loss: {_component(cfg.loss.negatives)} negatives, objective {_component(cfg.loss.objective)}, "
        f"t={cfg.loss.temperature}, K={cfg.loss.num_negatives}, collision_free={cfg.loss.collision_free}"
        f"{', beta annealed' if cfg.loss.anneal.enabled else ''}",
        f"- {cfg.train.epochs} epochs, batch {modality.batch_size(cfg)}, {cfg.train.optimizer} "
        f"lr={cfg.train.lr} wd={cfg.train.weight_decay}, seed {cfg.seed}",
        "",
    ]
    if result.history:
        first, last = result.history[0], result.history[-1]
        lines.append(
            f"Train loss: {first['loss']:.4f} (epoch 1) -> {last['loss']:.4f} (epoch {len(result.history)})"
        )
        diag = ", ".join(
            f"{k}={last[k]:.3f}"
            for k in ("ess_fraction", "pos_cosine", "neg_cosine", "collision_rate")
            if k in last
        )
        if diag:
            lines.append(f"Last-epoch diagnostics: {diag}")
        lines.append("")
    lines += ["| metric | accuracy (%) |", "|---|---|"]
    lines += [f"| {k} | {100 * v:.2f} |" for k, v in result.eval.items()]
    lines += ["", "Accuracies of the final epoch's encoder (no epoch is chosen on test data)."]
    lines += ["", "Time:", "```", *timing_lines(result.timing), "```", ""]
    atomic_write_text(run / "summary.md", "\n".join(lines))


def load_result(run_dir: str | Path) -> RunResult | None:
    """The result of a finished run (from ``metrics.json``), or ``None`` if it did not finish."""
    path = Path(run_dir) / "metrics.json"
    if not path.is_file():
        return None
    data = json.loads(path.read_text())
    return RunResult(
        run_dir=Path(run_dir),
        history=data.get("history", []),
        eval=data.get("eval", {}),
        online=data.get("online_knn", []),
        timing=data.get("timing", {}),
    )
