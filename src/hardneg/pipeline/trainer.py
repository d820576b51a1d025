"""The Lightning ``Trainer`` of hardneg, built from plain arguments.

Checkpoints go to ``<run>/checkpoints``: ``last.ckpt`` and ``epochNNN.ckpt`` after every epoch
(what ``--resume`` continues from, passed to ``fit`` explicitly) and ``interrupted.ckpt`` when
training stops on an exception or Ctrl-C (:class:`InterruptCheckpoint`: for inspection, never
resumed from; a SIGKILL leaves the last epoch checkpoint).
Every save is atomic in the checkpoint folder itself (:mod:`hardneg.pipeline.checkpoints`). The
per-epoch history goes to ``<run>/metrics.csv`` (:mod:`hardneg.pipeline.history`: written before
each checkpoint, trimmed to the checkpoint on ``--resume``); step-level values go to
``<run>/logs/tensorboard`` when TensorBoard is installed.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Literal

import lightning as L
from lightning.pytorch.callbacks import Callback, ModelCheckpoint
from lightning.pytorch.utilities.exceptions import MisconfigurationException

from hardneg.config.errors import ConfigError

__all__ = ["QUIET_WARNINGS", "EpochCheckpoint", "InterruptCheckpoint", "build_trainer", "quiet_lightning",
           "show_progress"]

# Lightning's messages that say nothing to a hardneg user (no checkpoint warning is among them:
# the resume notices say what is loaded; "exists and is not empty" fires on every --resume).
QUIET_WARNINGS = (
    ".*LeafSpec.*",
    ".*smaller than the logging interval.*",
    ".*does not have many workers.*",
    ".*when logging on epoch level in distributed.*",
    ".*exists and is not empty.*",
)


def quiet_lightning() -> None:
    """Lightning's loggers at WARNING and :data:`QUIET_WARNINGS` ignored (the CLI and group workers)."""
    import logging
    import warnings

    for name in ("lightning.pytorch", "lightning.fabric", "lightning"):
        logging.getLogger(name).setLevel(logging.WARNING)
    for message in QUIET_WARNINGS:
        warnings.filterwarnings("ignore", message=message)


def show_progress(requested: bool = True) -> bool:
    """Progress bars only when asked, on a terminal, and not under CI."""
    return bool(requested) and sys.stderr.isatty() and not os.environ.get("CI")


class InterruptCheckpoint(Callback):
    """Save ``interrupted.ckpt`` when training stops on Ctrl-C or an exception, for inspection only.

    Deliberately *not* Lightning's ``OnExceptionCheckpoint``: with one of those configured,
    ``trainer.fit(ckpt_path=None)`` silently becomes ``ckpt_path="last"`` and resumes from the
    newer of ``interrupted.ckpt`` and ``last.ckpt`` — mid-epoch, with a loader that cannot resume
    there. A mid-epoch state is discarded: ``--resume`` passes the last finished epoch's checkpoint
    explicitly (:func:`hardneg.pipeline.experiment.train_run`). A failure to save (a full disk)
    does not hide the original error.
    """

    def __init__(self, *, dirpath: str | Path, filename: str = "interrupted") -> None:
        self.ckpt_path = str(Path(dirpath) / f"{filename}.ckpt")

    def on_exception(self, trainer: L.Trainer, *args: Any, **kwargs: Any) -> None:
        try:
            trainer.save_checkpoint(self.ckpt_path)
        except OSError as err:
            print(f"notice: could not save {self.ckpt_path}: {err.strerror or err}", file=sys.stderr)


class EpochCheckpoint(ModelCheckpoint):
    """``ModelCheckpoint`` of ``last.ckpt`` and ``epochNNN.ckpt`` that follows a moved run folder.

    A checkpoint records the absolute folder it was saved in. Resumed in a copied or moved run
    folder, Lightning's ``ModelCheckpoint`` warns that "the dirpath has changed" and keeps the old
    folder's paths, so the copy's previous ``epochNNN.ckpt`` is never replaced; here the recorded
    paths are moved to the current folder (same file names) and one notice says so. The state is
    stored under Lightning's ``ModelCheckpoint`` key, so checkpoints of either class load.
    """

    @property
    def state_key(self) -> str:
        key = super().state_key
        return "ModelCheckpoint" + key[len(type(self).__qualname__):]

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        old = state_dict.get("dirpath")
        if old is not None and self.dirpath is not None and str(old) != str(self.dirpath):
            state_dict = _moved(state_dict, str(old), str(self.dirpath))
            print(f"notice: the run folder was moved or copied (its checkpoints were saved in '{old}'); "
                  f"continuing in '{self.dirpath}'", file=sys.stderr)
        super().load_state_dict(state_dict)


def _moved(state: dict[str, Any], old: str, new: str) -> dict[str, Any]:
    """``ModelCheckpoint`` state with the paths under ``old`` moved to ``new`` (other paths dropped)."""

    def move(path: Any) -> Any:
        if not isinstance(path, str) or not path:
            return path
        return str(Path(new) / Path(path).name) if Path(path).parent == Path(old) else ""

    out = dict(state, dirpath=new)
    for key in ("best_model_path", "kth_best_model_path", "last_model_path"):
        if key in out:
            out[key] = move(out[key])
    if isinstance(out.get("best_k_models"), dict):
        out["best_k_models"] = {move(k): v for k, v in out["best_k_models"].items() if move(k)}
    return out


def _no_slurm_requeue() -> list[Any]:
    """Under SLURM, Lightning's auto-requeue off: no ``hpc_ckpt_*.ckpt`` is saved mid-epoch.

    Lightning saves one on SLURM's requeue signal and ``fit(ckpt_path=None)`` then resumes from
    it (mid-epoch, like ``"last"``); here a run starts from scratch or from the epoch checkpoint
    it is given, and a requeued job continues with ``--resume``.
    """
    from lightning.pytorch.plugins.environments import SLURMEnvironment

    return [SLURMEnvironment(auto_requeue=False)] if SLURMEnvironment.detect() else []


def _strategy(name: str, accelerator: str) -> Any:
    if name == "auto":
        return "auto"
    from lightning.pytorch.strategies import DDPStrategy

    backend = "gloo" if accelerator == "cpu" else "nccl"
    start_method: Literal["spawn", "popen"] = "spawn" if name == "ddp_spawn" else "popen"
    return DDPStrategy(process_group_backend=backend, start_method=start_method)


def build_trainer(
    *,
    run_dir: str | Path,
    epochs: int,
    callbacks: list[Callback] | None = None,
    accelerator: str = "cpu",
    devices: int = 1,
    strategy: str = "auto",
    precision: str = "32-true",
    deterministic: bool = True,
    log_every_n_steps: int = 5,
    progress: bool = True,
    tensorboard: bool = True,
    gradient_clip_norm: float | None = None,
    accumulate_grad_batches: int = 1,
    options: dict[str, Any] | None = None,
) -> L.Trainer:
    """A ``Trainer`` that checkpoints every epoch and on interruption, writing the history CSV.

    Args:
        run_dir: the run folder.
        epochs: ``max_epochs``.
        callbacks: extra callbacks (β annealing, timers, online evaluation).
        accelerator, devices, strategy, precision: as in Lightning; ``strategy="ddp"`` uses
            gloo on CPU and NCCL on GPU.
        deterministic: ``torch.use_deterministic_algorithms`` (bitwise-reproducible on CPU).
        progress: show a progress bar (see :func:`show_progress`).
        tensorboard: log step-level values to TensorBoard (skipped with a notice if not installed).
        gradient_clip_norm: clip the gradient's global L2 norm to this value before each
            optimiser step (``None``: no clipping).
        accumulate_grad_batches: step the optimiser every k batches.
        options: further ``lightning.Trainer`` arguments (the config's ``trainer`` section,
            checked by :func:`~hardneg.pipeline.trainer_options.check_trainer_options`).
    """
    from hardneg.pipeline.trainer_options import check_trainer_options

    check_trainer_options(options or {})
    from lightning.pytorch.loggers import Logger

    from hardneg.pipeline.callbacks import HistoryWriter
    from hardneg.pipeline.checkpoints import AtomicCheckpointIO
    from hardneg.pipeline.history import HISTORY_FILE

    run = Path(run_dir)
    ckpt_dir = run / "checkpoints"
    loggers: list[Logger] = []
    if tensorboard:
        try:
            from lightning.pytorch.loggers import TensorBoardLogger

            loggers.append(TensorBoardLogger(save_dir=str(run), name="logs", version="tensorboard",
                                             default_hp_metric=False))
        except ModuleNotFoundError:  # pragma: no cover - tensorboard is a toolkit dependency
            print("notice: tensorboard is not installed; step-level values are not logged "
                  "(metrics.csv has the epochs)", file=sys.stderr)
    all_callbacks: list[Callback] = [
        HistoryWriter(run / HISTORY_FILE),
        EpochCheckpoint(dirpath=str(ckpt_dir), filename="epoch{epoch:03d}", auto_insert_metric_name=False,
                        every_n_epochs=1, save_top_k=1, save_last=True, save_on_train_epoch_end=True),
        InterruptCheckpoint(dirpath=ckpt_dir),
        *(callbacks or []),
    ]
    bar = show_progress(progress)
    if bar:
        try:
            from lightning.pytorch.callbacks import RichProgressBar

            all_callbacks.append(RichProgressBar(leave=False))
        except (ImportError, ModuleNotFoundError):  # pragma: no cover - rich is a toolkit dependency
            pass
    try:
        return L.Trainer(
            default_root_dir=str(run),
            max_epochs=epochs,
            accelerator=accelerator,
            devices=devices,
            strategy=_strategy(strategy, accelerator),
            precision=precision,  # type: ignore[arg-type]
            deterministic=deterministic,
            logger=loggers,
            callbacks=all_callbacks,
            plugins=[AtomicCheckpointIO(), *_no_slurm_requeue()],
            log_every_n_steps=log_every_n_steps,
            enable_progress_bar=bar,
            enable_model_summary=False,
            num_sanity_val_steps=0,
            limit_val_batches=0,
            use_distributed_sampler=False,
            benchmark=False,
            gradient_clip_val=gradient_clip_norm,
            gradient_clip_algorithm="norm" if gradient_clip_norm is not None else None,
            accumulate_grad_batches=accumulate_grad_batches,
            **(options or {}),
        )
    except MisconfigurationException as err:  # e.g. no GPU for accelerator gpu, a max_time it cannot read
        given = {"train.accelerator": accelerator, "train.devices": devices, "train.strategy": strategy,
                 "train.precision": precision, **{f"trainer.{k}": v for k, v in (options or {}).items()}}
        listed = ", ".join(f"{k}={v!r}" for k, v in given.items())
        raise ConfigError(f"lightning.Trainer refused the settings ({listed}): {' '.join(str(err).split())}"
                          ) from None
