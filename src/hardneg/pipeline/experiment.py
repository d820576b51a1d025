"""Orchestration: train a config into a run folder, or re-evaluate a saved run.

The objects come from :mod:`hardneg.pipeline.build`, the files are written by
:mod:`hardneg.pipeline.run_folder`; this module runs the Lightning fit and the evaluation between
them.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lightning as L
import torch

from hardneg._io import atomic_write_text
from hardneg._signals import STOP_SIGNALS, interrupt_signals
from hardneg.config import RunConfig
from hardneg.data.vectors import Split, split_inputs
from hardneg.figures import training as figures
from hardneg.modalities import get_modality
from hardneg.modalities.base import EvalResult, evaluate_owners
from hardneg.modalities.readouts import ONLINE_METRIC, ReadoutEval, evaluate_encoder
from hardneg.pipeline.build import build_module
from hardneg.pipeline.callbacks import OnlineKNN, PhaseTimer, RunIdentity
from hardneg.pipeline.checkpoints import (
    CheckpointError,
    checkpoint_epochs,
    checkpoint_run_digest,
    config_digest,
    newest_intact_checkpoint,
    read_checkpoint,
    remove_partial_checkpoints,
)
from hardneg.pipeline.config import dump_yaml, load_config
from hardneg.pipeline.data import ContrastiveDataModule
from hardneg.pipeline.module import ContrastiveModule
from hardneg.pipeline.provenance import PROVENANCE_FILE, provenance
from hardneg.pipeline.resources import check_memory, stage
from hardneg.pipeline.run_folder import (
    RunExists,
    RunResult,
    forget_failed_start,
    load_result,
    prepare_run_dir,
    read_json,
    run_dir_for,
    run_lock,
    timing_lines,
    write_features,
    write_outputs,
)
from hardneg.pipeline.trainer import build_trainer
from hardneg.pipeline.trainer_options import check_training_steps

__all__ = [
    "STOP_SIGNALS",
    "RunExists",
    "RunResult",
    "TrainingStopped",
    "evaluate_run",
    "interrupt_signals",
    "load_data",
    "thread_limits",
    "timing_lines",
    "train_run",
    "write_features",
]


def _is_child_process() -> bool:
    """A DDP worker re-launched by Lightning (it must not touch the run folder's setup)."""
    return int(os.environ.get("LOCAL_RANK", "0")) > 0


def load_data(cfg: RunConfig) -> tuple[Any, Any]:
    """``(train, test)`` of ``data.dataset`` through its modality (of the split types it declares)."""
    return get_modality(cfg.data.dataset).load(cfg)


@contextlib.contextmanager
def thread_limits(threads: int | None) -> Iterator[None]:
    """Limit torch intra-op threads and BLAS/OpenMP pools (scikit-learn) to ``threads``.

    Small ops on few shared cores are much faster single-threaded: on a 2-core machine with
    other load, a 2-thread L-BFGS readout of 1 797 vectors took 4 s instead of 0.02 s.
    """
    if threads is None:
        yield
        return
    from threadpoolctl import threadpool_limits

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with threadpool_limits(limits=threads):
            yield
    finally:
        torch.set_num_threads(before)


class TrainingStopped(KeyboardInterrupt):
    """Training stopped by a signal (``signum``: SIGINT, SIGTERM or SIGHUP); the run is resumable."""

    def __init__(self, message: str, signum: int) -> None:
        super().__init__(message)
        self.signum = signum


def train_run(
    cfg: RunConfig,
    run_dir: str | Path | None = None,
    *,
    resume: bool = False,
    force: bool = False,
    quiet: bool = False,
) -> RunResult | None:
    """Train, evaluate and write a run folder; returns ``None`` on non-zero DDP ranks.

    With ``resume=True`` the run continues from ``checkpoints/last.ckpt`` (the last finished
    epoch) and ends with the same metrics as an uninterrupted run of the same config on CPU.

    Raises:
        TrainingStopped: SIGINT, SIGTERM or SIGHUP during training (``interrupted.ckpt`` is saved,
            the run continues with ``resume=True``).
        ConfigError: settings that give no training step (``trainer.limit_train_batches=0``).
    """
    run = run_dir_for(cfg, run_dir)
    check_memory(cfg, get_modality(cfg.data.dataset))  # refuse what cannot fit, before any allocation
    if _is_child_process():  # a DDP worker: rank 0 holds the folder's lock and set it up
        with thread_limits(cfg.train.threads):
            return _train_run(cfg, run, resume=resume, quiet=quiet)
    with run_lock(run) as lock:  # one writer per run folder, taken before anything is written or deleted
        cfg = prepare_run_dir(cfg, run, resume=resume, force=force, lock=lock)
        try:
            text = dump_yaml(cfg)
            atomic_write_text(run / "config.yaml", text)
            atomic_write_text(run / PROVENANCE_FILE, json.dumps(provenance(text, cfg), indent=2))
            with thread_limits(cfg.train.threads):
                result = _train_run(cfg, run, resume=resume, quiet=quiet)
        except BaseException:
            forget_failed_start(lock)  # failed before training (the data, the model): nothing stays
            raise
        # again once it ran: the code it ran is every hardneg module loaded by now
        atomic_write_text(run / PROVENANCE_FILE, json.dumps(provenance(text, cfg), indent=2))
        return result


def _train_run(cfg: RunConfig, run: Path, *, resume: bool, quiet: bool) -> RunResult | None:
    t_start = time.perf_counter()
    child = _is_child_process()
    if not child:
        remove_partial_checkpoints(run / "checkpoints")
    found = None
    if resume:
        found = newest_intact_checkpoint(run / "checkpoints", report=_silent if child else None,
                                         set_aside=not child)
    L.seed_everything(cfg.seed, workers=True, verbose=False)
    t0 = time.perf_counter()
    with stage("loading the data", cfg, ["data"]):
        train, test = load_data(cfg)
    t_data = time.perf_counter() - t0
    modality = get_modality(cfg.data.dataset)
    if not child:
        modality.save(cfg, train, run)
    with stage("building the model", cfg, ["model"]):
        module, callbacks = build_module(cfg, train)
    timer = PhaseTimer()
    callbacks.append(timer)
    callbacks.append(RunIdentity(config_digest(cfg)))
    online: OnlineKNN | None = None
    e = cfg.eval
    if isinstance(e, ReadoutEval) and e.every_n_epochs > 0:  # the engine readouts' online kNN
        online = OnlineKNN(
            train_inputs=split_inputs(train)[train.labels >= 0],
            train_labels=train.labels[train.labels >= 0],
            test_inputs=split_inputs(test),
            test_labels=test.labels,
            every_n_epochs=e.every_n_epochs,
            k=e.knn_k,
            temperature=e.knn_temperature,
            batch_size=e.batch_size,
            metric=ONLINE_METRIC,
        )
        callbacks.append(online)
    t = cfg.train
    dataset = modality.dataset(cfg, train)
    datamodule = ContrastiveDataModule(
        dataset=dataset,
        batch_size=t.batch_size,
        seed=cfg.seed,
        drop_last=t.drop_last,
        num_workers=t.num_workers,
    )
    check_training_steps(dict(cfg.trainer), batches_per_epoch=len(datamodule.train_dataloader()),
                         epochs=t.epochs)
    trainer = build_trainer(
        run_dir=run,
        epochs=t.epochs,
        callbacks=callbacks,
        accelerator=t.accelerator,
        devices=t.devices,
        strategy=t.strategy,
        precision=t.precision,
        deterministic=t.deterministic,
        log_every_n_steps=t.log_every_n_steps,
        progress=t.progress and not quiet,
        gradient_clip_norm=t.gradient_clip_norm,
        accumulate_grad_batches=t.accumulate_grad_batches,
        options=dict(cfg.trainer),
    )
    # Always an explicit choice: the last finished epoch's intact checkpoint, or none (from scratch:
    # no OnExceptionCheckpoint is configured, so Lightning does not turn None into "last").
    # A mid-epoch interrupted.ckpt is never resumed from (its loader position cannot be restored).
    ckpt = found[0] if found else None
    folder = run / "checkpoints"
    had_any = folder.is_dir() and any(folder.iterdir())
    if resume and not child and (had_any or not quiet):  # a group's brand-new run: no notice
        print(_resume_notice(folder, found), file=sys.stderr)
    t_setup = time.perf_counter() - t_start
    _fit(trainer, module, datamodule, ckpt, run, cfg)
    if not trainer.is_global_zero:
        return None
    timing = {"setup": t_setup, "data_load": t_data, "fit": timer.fit_seconds, "steps": float(timer.steps)}
    for source in (module.timings, timer.timings):
        timing.update({k: float(v) for k, v in source.items()})
    with stage("evaluating", cfg, ["eval"]):
        result = _evaluate_and_write(
            cfg, run, module, train, test, timing=timing, online=online.curve if online else []
        )
    result.timing["total"] = time.perf_counter() - t_start
    write_outputs(cfg, result)
    return result


def _fit(trainer: L.Trainer, module: ContrastiveModule, datamodule: ContrastiveDataModule,
         ckpt: Path | None, run: Path, cfg: RunConfig) -> None:
    """``trainer.fit``; a stop signal (or Lightning's exit after one) becomes :class:`TrainingStopped`."""
    from lightning.pytorch.utilities.exceptions import SIGTERMException

    stopped: int | None = None
    with interrupt_signals() as received:
        try:
            with stage("training", cfg, ["train.batch_size", "model"]):
                trainer.fit(module, datamodule=datamodule, ckpt_path=str(ckpt) if ckpt else None)
        except SIGTERMException:  # Lightning's own SIGTERM handling (ours was not installed)
            stopped = signal.SIGTERM
        except KeyboardInterrupt:
            stopped = received[-1] if received else signal.SIGINT
        except SystemExit as err:  # Lightning exits with 1 after a KeyboardInterrupt
            if err.code in (0, None) and not received:
                raise
            stopped = received[-1] if received else signal.SIGINT
    if stopped is None and trainer.interrupted:
        stopped = received[-1] if received else signal.SIGINT
    if stopped is not None:
        name = signal.Signals(stopped).name
        message = f"training stopped by {name}; continue with --resume (checkpoints in '{run}/checkpoints')"
        raise TrainingStopped(message, stopped) from None


def _evaluate_and_write(
    cfg: RunConfig,
    run: Path,
    module: ContrastiveModule,
    train: Split,
    test: Split,
    *,
    timing: dict[str, float],
    online: list[dict[str, float]],
) -> RunResult:
    e = cfg.eval
    modality = get_modality(cfg.data.dataset)
    if modality.evaluates_itself:
        res = modality.evaluate(cfg, module.encoder, train, test)
    else:
        res = _evaluate_views(cfg, module, train, test)
    test_labels = torch.as_tensor(test.labels)
    timing["evaluate"] = res.seconds
    if e.figures:
        t0 = time.perf_counter()
        fig_dir = run / "figures"
        figures.cosine_histograms(
            {cfg.name: (res.test_features, test_labels)},
            fig_dir / "cosine_histograms.png",
            title="cosine similarity of test representations",
        )
        pictures = modality.pictures(cfg, test)  # a grid of pictures; data without one has none
        if pictures is not None:
            figures.hardest_negatives_grid(
                pictures, res.test_features, test.labels, fig_dir / "hardest_negatives.png", seed=cfg.seed
            )
        hist = module.history
        if hist:
            figures.curves(
                {"train loss": [(r["epoch"] + 1, r["loss"], 0.0) for r in hist]},
                fig_dir / "loss.png",
                xlabel="epoch",
                ylabel="loss × 100",
            )
        if online:
            figures.curves(
                {"kNN top-1": [(r["epoch"], r[ONLINE_METRIC], 0.0) for r in online]},
                fig_dir / "knn_vs_epochs.png",
                xlabel="epoch",
            )
        timing["figures"] = time.perf_counter() - t0
    return RunResult(
        run_dir=run,
        history=list(module.history),
        eval=res.metrics,
        online=online,
        timing=timing,
        test_features=res.test_features,
        test_labels=test_labels,
    )


def _evaluate_views(cfg: RunConfig, module: ContrastiveModule, train: Split, test: Split) -> EvalResult:
    """Linear / kNN / mean-classifier / k-wise readouts of the backbone's ``h``, as the run's
    ``eval`` section sets them (:meth:`~hardneg.modalities.readouts.ReadoutEval.readouts`)."""
    e = cfg.eval
    if not isinstance(e, ReadoutEval):
        raise TypeError(
            f"data.dataset {cfg.data.dataset!r}: a modality without its own evaluate needs an eval section "
            f"of the engine's readouts (ReadoutEval), got {type(e).__name__}"
        )
    return evaluate_encoder(
        module.encoder, train=train, test=test, **e.readouts(), batch_size=e.batch_size, seed=cfg.seed
    )


def evaluate_run(
    run_dir: str | Path,
    *,
    checkpoint: str | Path | None = None,
    figures_on: bool = True,
    write: bool = True,
    overrides: dict[str, Any] | None = None,
) -> RunResult:
    """Re-evaluate a saved run from its checkpoint and config.

    Only the run's own final checkpoint, evaluated with the run's own settings, rewrites the
    run's results (``metrics.json``, ``eval.csv``, ``summary.md``, figures). Every other
    evaluation is written *beside* them — appended to the ``evaluations`` list of ``metrics.json``
    with its checkpoint, the epochs it finished, its global step and whether it is this run's —
    never over them:

    - ``overrides`` of evaluation settings (dotted ``eval.*`` keys of the run's modality's ``eval``
      section, e.g. ``{"eval.knn_k": 20}``; those of ``hardneg evaluate``'s options come from
      :meth:`~hardneg.modalities.Modality.evaluate_overrides`);
    - a checkpoint of an earlier epoch of this run (an older ``epochNNN.ckpt``, a mid-epoch
      ``interrupted.ckpt``, or the newest intact one when the final ones are damaged);
    - a checkpoint of another run: each checkpoint records the digest of its run's config
      (:func:`~hardneg.pipeline.checkpoints.config_digest`, which ignores the keys ``--resume``
      may change); a different digest is another run even when its weights fit. A checkpoint
      that records none (saved by an older hardneg) counts as this run's only inside the run's
      own ``checkpoints/`` folder.

    The final checkpoint is the one that finished as many epochs as ``metrics.json``'s history
    holds (``train.epochs`` before the run wrote one). A run without ``metrics.json`` has not
    finished: an evaluation other than its own final one is printed, not written.

    The default checkpoint is the run's newest intact one (``last.ckpt`` unless it is damaged;
    see :func:`hardneg.pipeline.checkpoints.newest_intact_checkpoint`). A damaged checkpoint, or
    one whose weights do not fit the run's model, raises
    :class:`~hardneg.pipeline.checkpoints.CheckpointError`; an ``eval`` key of another modality's
    evaluation is a ``ValueError`` naming the modalities it applies to. When it writes
    (``write`` or ``figures_on``) it holds the run folder's lock
    (:func:`~hardneg.pipeline.run_folder.run_lock`): a folder another process is writing raises
    :class:`~hardneg.pipeline.run_folder.RunLocked` naming that process.
    """
    run = Path(run_dir)
    cfg_path = run / "config.yaml"
    if not cfg_path.is_file():
        raise FileNotFoundError(f"no run folder at '{run}': config.yaml not found")
    extra = dict(overrides or {})
    outside = sorted(k for k in extra if not k.startswith("eval."))
    if outside:
        raise ValueError(f"overrides of a saved run may change eval.* keys only, got {outside}")
    _check_eval_keys(load_config(cfg_path), extra, run)  # before the override is refused as a key
    saved = load_config(cfg_path, extra)
    # Writing (metrics, figures, removing a killed save's temporary files) needs the folder's
    # lock, taken before anything is touched; a read-only evaluation removes nothing.
    writes = write or figures_on
    with run_lock(run) if writes else contextlib.nullcontext():
        if checkpoint is not None:
            ckpt = Path(checkpoint)
            state = read_checkpoint(ckpt)
        else:
            if writes:
                remove_partial_checkpoints(run / "checkpoints")
            found = newest_intact_checkpoint(run / "checkpoints")
            if found is None:
                raise FileNotFoundError(f"no intact checkpoint in '{run / 'checkpoints'}'")
            ckpt, state = found
        other = _not_the_final_checkpoint(saved, run, ckpt, state)
        own = not extra and other is None
        cfg = load_config(cfg_path, {"eval.figures": bool(figures_on) and own, **extra})
        with thread_limits(cfg.train.threads):
            result = _evaluate_saved(cfg, run, ckpt, state, write=write and own)
        if write and not own:
            _append_evaluation(run, extra, ckpt, state, result.eval, this_run=other != _FOREIGN, note=other)
        return result


_FOREIGN = "a checkpoint of another run"


def _check_eval_keys(cfg: RunConfig, overrides: dict[str, Any], run: Path) -> None:
    """An ``eval.*`` override that another modality's evaluation reads, not the run's, is a
    ``ValueError`` naming the modalities it applies to and the run's data set."""
    modality = get_modality(cfg.data.dataset)
    for dotted in overrides:
        key = dotted.removeprefix("eval.")
        if key in modality.eval_section.model_fields:
            continue
        owners = sorted({m.name for m in evaluate_owners(key)})
        if owners:
            raise ValueError(
                f"{dotted} evaluates runs of {', '.join(owners)}; the run '{run}' was trained on data set "
                f"'{cfg.data.dataset}' ({modality.name})"
            )


def _not_the_final_checkpoint(cfg: RunConfig, run: Path, ckpt: Path, state: dict[str, Any]) -> str | None:
    """``None`` for the run's own final checkpoint, else what the checkpoint is (for the notice)."""
    digest = checkpoint_run_digest(state)
    if digest is None:  # saved before checkpoints recorded their run: the run's own folder decides
        ours = ckpt.resolve().parent == (run / "checkpoints").resolve()
    else:
        ours = digest == config_digest(cfg)
    if not ours:
        return _FOREIGN
    result = load_result(run)
    final = len(result.history) if result is not None and result.history else cfg.train.epochs
    done = checkpoint_epochs(state)
    if done == final:
        return None
    return f"epoch {done} of {final} of this run, not its final checkpoint"


def _read_json(path: Path) -> dict[str, Any]:
    """The run's ``metrics.json`` as a mapping; one that is not JSON is a ``ValueError`` naming it
    (never read as empty and written over)."""
    data = read_json(path)
    return data if isinstance(data, dict) else {}


def _append_evaluation(run: Path, overrides: dict[str, Any], ckpt: Path, state: dict[str, Any],
                       metrics: dict[str, float], *, this_run: bool, note: str | None) -> None:
    """Add one evaluation to ``metrics.json``'s ``evaluations`` list (atomically), beside the run's
    own results; a run that has not finished (no ``metrics.json``) gets nothing written."""
    path = run / "metrics.json"
    what = f"{ckpt} is {note}" if note else f"an evaluation with {sorted(overrides)}"
    if not path.is_file():
        print(f"notice: {what}; the run has not finished (no metrics.json), so the results are printed, "
              "not written", file=sys.stderr)
        return
    data = _read_json(path)
    data.setdefault("evaluations", []).append({
        "overrides": overrides,
        "checkpoint": str(ckpt),
        "epochs": checkpoint_epochs(state),
        "global_step": int(state.get("global_step", 0)),
        "this_run": this_run,
        "eval": metrics,
    })
    atomic_write_text(path, json.dumps(data, indent=2, sort_keys=True))
    if note:
        print(f"notice: {what}: its results are added to {path} under 'evaluations'; the run's own "
              "results are unchanged", file=sys.stderr)


def _resume_notice(folder: Path, found: tuple[Path, dict[str, Any]] | None) -> str:
    """Where ``--resume`` starts, and that a mid-epoch ``interrupted.ckpt`` is not resumed from."""
    partial = folder / "interrupted.ckpt"
    newer = partial.is_file() and (found is None or partial.stat().st_mtime >= found[0].stat().st_mtime)
    dropped = f"; the partial epoch in '{partial}' (saved mid-epoch) is discarded" if newer else ""
    if found is None:
        return f"notice: no intact epoch checkpoint in '{folder}'; starting from scratch{dropped}"
    epoch = int(found[1].get("epoch", 0)) + 1
    return f"notice: resuming from '{found[0]}' (the end of epoch {epoch}){dropped}"


def _silent(_: str) -> None:
    """Report nothing (DDP workers leave messages to rank 0)."""


def _evaluate_saved(
    cfg: RunConfig, run: Path, ckpt: Path, state: dict[str, Any], *, write: bool
) -> RunResult:
    L.seed_everything(cfg.seed, workers=True, verbose=False)
    train, test = load_data(cfg)
    module, _ = build_module(cfg, train)
    try:
        module.load_state_dict(state["state_dict"])
    except RuntimeError as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise CheckpointError(
            f"{ckpt} is not a readable hardneg checkpoint of this run (its weights do not fit the "
            f"model of config.yaml: {first})"
        ) from None
    module.on_load_checkpoint(state)
    online = []
    for key, value in state.get("callbacks", {}).items():
        if key.startswith("OnlineKNN") and isinstance(value, dict):
            online = value.get("curve", [])
    previous = _read_json(run / "metrics.json") if (run / "metrics.json").is_file() else {}
    result = _evaluate_and_write(
        cfg, run, module, train, test, timing=dict(previous.get("timing", {})), online=online
    )
    if write:
        write_outputs(cfg, result)
        if previous.get("evaluations"):  # the evaluations beside the run's results stay
            data = _read_json(run / "metrics.json")
            data["evaluations"] = previous["evaluations"]
            atomic_write_text(run / "metrics.json", json.dumps(data, indent=2, sort_keys=True))
    return result
