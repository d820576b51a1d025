"""Callbacks of the training engine: β annealing, phase timing, online kNN accuracy, run identity.

What a callback logs is written to the loggers (TensorBoard) and flushed at once (:func:`log_now`),
not through ``LightningModule.log``, which hands values to the loggers only after the epoch's
checkpoint is saved. The per-epoch history (``metrics.csv``) has its own writer,
:class:`~hardneg.pipeline.history.HistoryWriter`, which writes it before every checkpoint.
"""

from __future__ import annotations

import time
from collections import defaultdict
from pathlib import Path
from typing import Any, cast

import lightning as L
import torch
from torch import Tensor

from hardneg.pipeline.history import write_history
from hardneg.schedules import BetaAnnealing

__all__ = ["BetaAnnealingCallback", "HistoryWriter", "OnlineKNN", "PhaseTimer", "RunIdentity", "log_now"]


def log_now(trainer: L.Trainer, metrics: dict[str, float]) -> None:
    """Write ``metrics`` (with the current epoch) to every logger and flush them, now."""
    if not trainer.is_global_zero:
        return
    row = {**metrics, "epoch": float(trainer.current_epoch)}
    for logger in trainer.loggers:
        logger.log_metrics(row, step=trainer.global_step)
        logger.save()


class RunIdentity(L.Callback):
    """Records the run's config digest in every checkpoint (``callbacks["RunIdentity"]``).

    ``hardneg evaluate`` compares it with the digest of the run folder's ``config.yaml`` to tell a
    checkpoint of this run from one of another run whose weights happen to fit
    (:func:`hardneg.pipeline.checkpoints.config_digest`).
    """

    def __init__(self, config_sha256: str) -> None:
        self.config_sha256 = config_sha256

    def state_dict(self) -> dict[str, Any]:
        return {"config_sha256": self.config_sha256}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """The digest is the config's, not the checkpoint's: nothing to restore."""


class BetaAnnealingCallback(L.Callback):
    """Set ``β`` of the loss's negative distribution from a schedule at each epoch start.

    HCL App. D.1: β starts at its configured value and drops by β/ℓ every e/ℓ epochs. The value
    is a function of the epoch only, so a resumed run sets the same β as an uninterrupted one.
    """

    def __init__(self, schedule: BetaAnnealing) -> None:
        self.schedule = schedule

    def on_train_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        negatives = cast(Any, pl_module).loss_fn.negatives
        beta = self.schedule.apply(negatives, trainer.current_epoch)
        log_now(trainer, {"schedule/beta": float(beta)})


class PhaseTimer(L.Callback):
    """Wall time of the phases the module does not time itself.

    ``data``: from the end of one step to the start of the next (fetching the batch plus
    Lightning's own bookkeeping); ``backward``; ``optimizer`` (the step, zero-grad and momentum
    updates). The module times ``augment``, ``encoder_forward`` and ``loss_forward``.
    """

    def __init__(self) -> None:
        self.timings: dict[str, float] = defaultdict(float)
        self.steps = 0
        self._last_end: float | None = None
        self._backward_start = 0.0
        self._backward_end = 0.0
        self._fit_start = 0.0
        self.fit_seconds = 0.0

    def on_fit_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._fit_start = time.perf_counter()

    def on_fit_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.fit_seconds = time.perf_counter() - self._fit_start

    def on_train_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._last_end = time.perf_counter()

    def on_train_batch_start(self, trainer: L.Trainer, pl_module: L.LightningModule, batch: Any,
                             batch_idx: int) -> None:
        if self._last_end is not None:
            self.timings["data"] += time.perf_counter() - self._last_end

    def on_before_backward(self, trainer: L.Trainer, pl_module: L.LightningModule, loss: Tensor) -> None:
        self._backward_start = time.perf_counter()

    def on_after_backward(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._backward_end = time.perf_counter()
        self.timings["backward"] += self._backward_end - self._backward_start

    def on_train_batch_end(self, trainer: L.Trainer, pl_module: L.LightningModule, outputs: Any,
                           batch: Any, batch_idx: int) -> None:
        now = time.perf_counter()
        self.timings["optimizer"] += now - self._backward_end
        self._last_end = now
        self.steps += 1


class OnlineKNN(L.Callback):
    """Weighted-kNN top-1 accuracy of the frozen backbone every ``every_n_epochs`` epochs.

    HCL §6.3 / Fig. 11 (accuracy vs epochs with k = 200). Only the global-zero process
    evaluates; the curve (``{"epoch": e, metric: accuracy}`` points, ``metric`` named by the
    readouts that ask for it) is stored in the callback's state, so it survives ``--resume``.
    """

    def __init__(self, *, train_inputs: Tensor, train_labels: Tensor, test_inputs: Tensor,
                 test_labels: Tensor, every_n_epochs: int, metric: str, k: int = 200,
                 temperature: float = 0.1, batch_size: int = 512) -> None:
        self.train_inputs, self.train_labels = train_inputs, train_labels
        self.test_inputs, self.test_labels = test_inputs, test_labels
        self.metric = metric
        self.every_n_epochs = every_n_epochs
        self.k = k
        self.temperature = temperature
        self.batch_size = batch_size
        self.curve: list[dict[str, float]] = []

    def on_train_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        epoch = trainer.current_epoch + 1
        if self.every_n_epochs <= 0 or epoch % self.every_n_epochs != 0 or not trainer.is_global_zero:
            return
        from hardneg.evaluate import WeightedKNN, extract_features

        encoder = cast(Any, pl_module).encoder
        with torch.random.fork_rng(devices=[]):
            train_h = extract_features(encoder, self.train_inputs, batch_size=self.batch_size)
            test_h = extract_features(encoder, self.test_inputs, batch_size=self.batch_size)
        knn = WeightedKNN(k=self.k, temperature=self.temperature).fit(train_h, self.train_labels)
        acc = float(knn.score(test_h, self.test_labels))
        self.curve.append({"epoch": float(epoch), self.metric: acc})
        log_now(trainer, {f"online/{self.metric}": acc})

    def state_dict(self) -> dict[str, Any]:
        return {"curve": list(self.curve)}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.curve = list(state_dict.get("curve", []))


class HistoryWriter(L.Callback):
    """Keeps ``<run>/metrics.csv`` equal to the training module's ``history``
    (:mod:`hardneg.pipeline.history`): written when training starts (after ``--resume``: exactly the
    checkpoint's rows), before every checkpoint is saved, and when training ends.

    Args:
        path: the file (``<run folder>/metrics.csv``).

    Only the global-zero process writes. The module is any ``LightningModule`` with a ``history``
    list of per-epoch dicts; without one nothing is written.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._written: list[dict[str, float]] | None = None  # the rows on disk, as last written

    def _write(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        rows = getattr(pl_module, "history", None)
        if not trainer.is_global_zero or not isinstance(rows, list):
            return
        # an epoch's two checkpoints (epochNNN.ckpt, last.ckpt) find the same rows: written once
        if rows == self._written and self.path.is_file():
            return
        write_history(self.path, rows)
        self._written = [dict(row) for row in rows]

    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._write(trainer, pl_module)

    def on_save_checkpoint(self, trainer: L.Trainer, pl_module: L.LightningModule,
                           checkpoint: dict[str, Any]) -> None:
        self._write(trainer, pl_module)

    def on_train_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._write(trainer, pl_module)
