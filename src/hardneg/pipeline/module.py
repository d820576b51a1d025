"""``ContrastiveModule``: the LightningModule of hardneg's training engine (SimCLR and MoCo-v2).

One training step (SimCLR; Robinson et al., ICLR 2021, §5.1 / App. D.1):

1. two views of the batch from the batched augmentation, drawn from the step generator
   ``(seed, epoch, batch, rank)`` (the second view comes from another image of the same class
   when the data module gives oracle partners);
2. ``(h, z) = encoder(x)`` for both views;
3. ``loss(z1, z2, labels=..., generator=g, details=True)``: scores → negative distribution →
   objective, with negatives gathered across processes by the loss itself under DDP; labels are
   used only by collision-free negatives and by the collision-rate diagnostics; the step
   generator ``g`` is the only randomness of the loss (K-subsampling).

MoCo-v2 (Robinson et al., ICLR 2021, App. C.1): queries from the online encoder, keys from a
momentum copy (no gradient), negatives from a :class:`~hardneg.queue.MemoryQueue`, through
:class:`~hardneg.queue.QueueLoss` (the wrapper that owns the queue and enqueues the keys after
the loss).

The module takes plain objects (an encoder, a loss, an augmentation); configuration is resolved
by :mod:`hardneg.pipeline.experiment`.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import math
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import lightning as L
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from hardneg._validation import NonFiniteError
from hardneg.loss import ContrastiveLoss
from hardneg.modalities.base import ViewMaker
from hardneg.queue import MemoryQueue, QueueLoss, momentum_update
from hardneg.reduction import LossOutput
from hardneg.seeding import mix_seed, step_generator

__all__ = ["ContrastiveModule", "TrainingDiverged"]

MODES = ("simclr", "moco")


class TrainingDiverged(RuntimeError):
    """The loss or the embeddings of a training step are no longer finite (NaN or Inf): one line
    naming the epoch, the batch, the last finite loss and the settings to try."""


class ContrastiveModule(L.LightningModule):
    """Contrastive pre-training of ``encoder`` with ``loss``.

    Args:
        encoder: returns ``(h, z)`` (see :class:`~hardneg.models.Encoder`).
        loss: the contrastive loss (its ``negatives`` may be re-parameterised by callbacks,
            e.g. β annealing).
        views: the modality's view maker, ``views(x, x2, generator=g) -> (v1, v2)`` (see
            :class:`~hardneg.modalities.base.ViewMaker`): a batched augmentation, or the given
            pairs as they are; ``None`` with ``step``.
        mode: ``"simclr"`` or ``"moco"``.
        seed: seed of the per-step generators.
        optimizer: ``"adam"`` or ``"sgd"``; ``lr``, ``weight_decay``, ``sgd_momentum``.
        queue_size, moco_momentum: MoCo's queue length and key-encoder momentum ``m``.
        use_labels: pass labels to the loss (diagnostics; required by collision-free negatives).
        grad_cache_chunk: embed the views in chunks of this size without storing activations
            (:func:`~hardneg.gradcache.grad_cache_step`); ``None`` embeds the whole batch.
        step: the modality's own step ``step(encoder, loss, x, labels=, generator=) -> LossOutput``
            (graphs: nodes against graphs); replaces views + two encoder passes (SimCLR mode only).
    """

    def __init__(
        self,
        *,
        encoder: nn.Module,
        loss: ContrastiveLoss,
        views: ViewMaker | None,
        mode: str = "simclr",
        seed: int = 0,
        optimizer: str = "adam",
        lr: float = 1e-3,
        weight_decay: float = 1e-6,
        sgd_momentum: float = 0.9,
        queue_size: int = 4096,
        moco_momentum: float = 0.99,
        use_labels: bool = True,
        grad_cache_chunk: int | None = None,
        step: Callable[..., LossOutput] | None = None,
        lr_schedule: str = "constant",
        warmup_epochs: int = 0,
        num_epochs: int = 1,
    ) -> None:
        super().__init__()
        from hardneg.schedules import lr_factor

        lr_factor(0, num_epochs=num_epochs, warmup_epochs=warmup_epochs, schedule=lr_schedule)  # checks
        self.lr_schedule, self.warmup_epochs, self.num_epochs = lr_schedule, warmup_epochs, num_epochs
        if mode not in MODES:
            raise ValueError(f"mode must be one of {list(MODES)}, got {mode!r}")
        if optimizer not in ("adam", "sgd"):
            raise ValueError(f"optimizer must be one of ['adam', 'sgd'], got {optimizer!r}")
        self.encoder = encoder
        self.loss_fn = loss
        if views is None and step is None:
            raise ValueError("views is needed unless the modality trains with its own step")
        self.views = views
        self.grad_cache_chunk = grad_cache_chunk
        if grad_cache_chunk is not None and mode != "simclr":
            raise ValueError(f"grad_cache_chunk needs mode='simclr', got mode={mode!r}")
        if step is not None and (mode != "simclr" or grad_cache_chunk is not None):
            raise ValueError(
                "a modality with its own step trains in mode='simclr' without grad_cache_chunk, "
                f"got mode={mode!r}, grad_cache_chunk={grad_cache_chunk!r}"
            )
        self.modality_step = step
        self.automatic_optimization = grad_cache_chunk is None  # GradCache steps the optimiser itself
        self.mode = mode
        self.seed = int(seed)
        self.optimizer_name = optimizer
        self.lr = lr
        self.weight_decay = weight_decay
        self.sgd_momentum = sgd_momentum
        self.moco_momentum = moco_momentum
        self.use_labels = use_labels
        self.key_encoder: nn.Module | None = None
        self.queue: MemoryQueue | None = None
        if mode == "moco":
            self.key_encoder = copy.deepcopy(encoder)
            for p in self.key_encoder.parameters():
                p.requires_grad_(False)
            dim = int(getattr(encoder, "projection_dim", 0) or 0)
            if dim <= 0:
                raise ValueError("mode='moco' needs an encoder with a projection_dim attribute")
            self.queue = MemoryQueue(queue_size, dim, with_labels=True)
            g = torch.Generator().manual_seed(mix_seed(seed, 0x9E7E))
            self.queue.enqueue(
                F.normalize(torch.randn(queue_size, dim, generator=g), dim=1),
                torch.full((queue_size,), -1, dtype=torch.long),
            )
        # per-epoch history of averaged step metrics (saved in checkpoints)
        self.history: list[dict[str, float]] = []
        self._epoch_sums: dict[str, float] = defaultdict(float)
        self._epoch_count = 0
        # wall time per phase, seconds (not saved: it describes this process)
        self.timings: dict[str, float] = defaultdict(float)
        # the last step's metrics and batch size, until the batch-end hook logs them
        self._step_metrics: tuple[dict[str, float], int] | None = None
        self._logged_step = -1  # the optimiser step whose metrics were written last
        self._step_loss = 0.0  # the loss of the step being taken, read once by _record
        self._last_finite: tuple[float, int, int] | None = None  # the last finite loss, its epoch and batch

    # -- optimisation -------------------------------------------------------------------------
    def configure_optimizers(self) -> Any:
        """The optimiser, and a per-epoch learning-rate schedule unless it is constant without warm-up
        (:func:`hardneg.schedules.lr_factor`; stepped by Lightning, or by this module's epoch end
        under manual optimisation)."""
        from hardneg.schedules import lr_factor

        params = [p for p in self.encoder.parameters() if p.requires_grad]
        opt: torch.optim.Optimizer
        if self.optimizer_name == "adam":
            opt = torch.optim.Adam(params, lr=self.lr, weight_decay=self.weight_decay)
        else:
            opt = torch.optim.SGD(params, lr=self.lr, weight_decay=self.weight_decay,
                                  momentum=self.sgd_momentum)
        if self.lr_schedule == "constant" and self.warmup_epochs == 0:
            return opt
        factor = functools.partial(lr_factor, num_epochs=self.num_epochs, warmup_epochs=self.warmup_epochs,
                                   schedule=self.lr_schedule)
        scheduler = torch.optim.lr_scheduler.LambdaLR(opt, factor)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": scheduler, "interval": "epoch"}}

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """``(h, z)`` of the online encoder."""
        return self.encoder(x)

    # -- one step ---------------------------------------------------------------------------
    def _generator(self, batch_idx: int) -> torch.Generator:
        rank = self.global_rank if self._trainer is not None else 0
        return step_generator(self.seed, self.current_epoch, batch_idx, rank)

    def training_step(self, batch: tuple[Tensor, Tensor, Tensor, Tensor], batch_idx: int) -> Tensor:
        """One step (see the module's docstring); a non-finite loss or non-finite embeddings raise
        :class:`TrainingDiverged`, which says where and what to try."""
        try:
            loss = self._step(batch, batch_idx)
        except NonFiniteError as err:  # the loss's input check: the encoder's output is not finite
            raise self._diverged(batch_idx, f"the embeddings are not finite ({err})") from None
        value = self._step_loss
        if not math.isfinite(value):
            raise self._diverged(batch_idx, f"the loss is {value}")
        self._last_finite = (value, self.current_epoch, batch_idx)
        return loss

    def _diverged(self, batch_idx: int, what: str) -> TrainingDiverged:
        """The error of a diverged step: where, the last finite loss, and the settings to try."""
        steps = f"after {self.global_step} optimiser steps"
        where = f"epoch {self.current_epoch + 1}, batch {batch_idx + 1} ({steps})"
        if self._last_finite is None:
            before = "no earlier step of this process had a finite loss (check the data, too)"
        else:
            loss, epoch, batch = self._last_finite
            before = f"the last finite loss was {loss:.4g} (epoch {epoch + 1}, batch {batch + 1})"
        other = "adam" if self.optimizer_name == "sgd" else "sgd"
        tries = [f"a lower train.lr (now {self.lr:g})", f"train.optimizer={other}"]
        trainer = self._trainer
        if trainer is not None and self.automatic_optimization:  # GradCache steps without clipping
            clip = trainer.gradient_clip_val
            tries.append("train.gradient_clip_norm=1.0" if clip is None else
                         f"a smaller train.gradient_clip_norm (now {float(clip):g})")
        if trainer is not None and str(trainer.precision).startswith("16"):
            tries.append("train.precision=32-true or bf16-mixed (float16 overflows above 65504)")
        return TrainingDiverged(f"training diverged at {where}: {what}; {before}. Try "
                                f"{', '.join(tries[:-1])} or {tries[-1]}")

    def _step(self, batch: tuple[Tensor, Tensor, Tensor, Tensor], batch_idx: int) -> Tensor:
        x, x2, labels, indices = batch
        t0 = time.perf_counter()
        g = self._generator(batch_idx)
        lab = labels if self.use_labels else None
        if self.modality_step is not None:
            out = self.modality_step(self.encoder, self.loss_fn, x, labels=lab, generator=g)
            self.timings["loss_forward"] += time.perf_counter() - t0  # encoder and loss together
            self._record(out, batch_size=int(indices.shape[0]))
            return out.loss
        assert self.views is not None  # checked in __init__
        v1, v2 = self.views(x, x2, generator=g)
        t1 = time.perf_counter()
        if self.mode == "simclr":
            if self.grad_cache_chunk is not None:
                out, t2 = self._grad_cache_step(v1, v2, lab, g)
            else:
                _, z1 = self.encoder(v1)
                _, z2 = self.encoder(v2)
                t2 = time.perf_counter()
                out = self.loss_fn(z1, z2, labels=lab, generator=g, details=True)
        else:
            assert self.key_encoder is not None and self.queue is not None  # set in __init__ for moco
            _, q = self.encoder(v1)
            with torch.no_grad():
                _, k = self.key_encoder(v2)
            t2 = time.perf_counter()
            out = self._queue_loss()(q, k, labels=lab, generator=g, details=True)
        t3 = time.perf_counter()
        self.timings["augment"] += t1 - t0
        self.timings["encoder_forward"] += t2 - t1
        self.timings["loss_forward"] += t3 - t2
        self._record(out, batch_size=int(indices.shape[0]))
        return out.loss

    def _queue_loss(self) -> QueueLoss:
        """MoCo's loss over this module's queue (``mode="moco"``): the wrapper around ``loss_fn``
        and ``queue`` (built per call, so that the checkpoint keeps the queue under ``queue.*``)."""
        assert self.queue is not None, "_queue_loss() needs mode='moco'"
        return QueueLoss(self.loss_fn, self.queue)

    def _grad_cache_step(
        self, v1: Tensor, v2: Tensor, labels: Tensor | None, g: torch.Generator
    ) -> tuple[LossOutput, float]:
        """GradCache under Lightning's manual optimisation: zero, chunked step, optimiser step.

        Every recomputed chunk is back-propagated by :meth:`manual_backward` (the strategy's
        backward: precision scaling, and under DDP the reducer prepared for the step). Under
        DistributedDataParallel all chunks but the last run inside ``no_sync()``, so that their
        gradients accumulate locally and the last chunk's backward all-reduces the sum: exactly
        one all-reduce per gradient bucket per step, and the same averaged gradient on every rank
        as the unchunked step (Gao et al., RepL4NLP 2021, §3.2, with DDP's gradient averaging).
        """
        from torch.nn.parallel import DistributedDataParallel

        from hardneg.gradcache import grad_cache_step

        holder: dict[str, LossOutput] = {}

        def loss(z: list[Tensor]) -> Tensor:
            holder["out"] = self.loss_fn(z[0], z[1], labels=labels, generator=g, details=True)
            return holder["out"].loss

        wrapped = self.trainer.strategy.model if self._trainer is not None else None
        ddp = wrapped if isinstance(wrapped, DistributedDataParallel) else None

        def backward(z: Tensor, grad: Tensor, last: bool) -> None:
            if self._trainer is None:  # a module used outside a Trainer
                z.backward(grad)
                return
            sync = contextlib.nullcontext() if (ddp is None or last) else ddp.no_sync()
            with sync:
                self.manual_backward(z, grad)

        assert self.grad_cache_chunk is not None
        opt = self.optimizers()
        opt.zero_grad()  # type: ignore[union-attr]
        grad_cache_step(self.encoder, [v1, v2], loss, chunk_size=self.grad_cache_chunk, backward=backward)
        opt.step()  # type: ignore[union-attr]
        return holder["out"], time.perf_counter()

    def on_train_batch_end(self, outputs: Any, batch: Any, batch_idx: int) -> None:
        if self.key_encoder is not None:
            # θ_k ← m θ_k + (1 − m) θ_q; the key encoder's BatchNorm keeps its own statistics (MoCo)
            momentum_update(self.encoder, self.key_encoder, self.moco_momentum)
        self._log_step()

    # -- metrics ----------------------------------------------------------------------------
    def _record(self, out: LossOutput, *, batch_size: int) -> None:
        metrics = {"loss": float(out.loss.detach())}
        self._step_loss = metrics["loss"]
        for key, value in out.diagnostics.items():
            if key != "loss":
                metrics[key] = float(value)
        for key, value in metrics.items():
            self._epoch_sums[key] += value
        self._epoch_count += 1
        self._step_metrics = ({f"train/{k}": v for k, v in metrics.items()}, batch_size)
        if self._trainer is None:  # outside a Trainer (e.g. under Fabric): no batch-end hook follows
            self._log_step()

    def _log_step(self) -> None:
        """Write the step's metrics to the loggers every ``log_every_n_steps`` optimiser steps (and
        on the step where training is stopped), through the public ``Logger.log_metrics``.

        ``self.log`` costs about a millisecond per metric on every step, also on the steps whose
        values never reach a logger; here only the written steps cost anything. The steps and values
        are those Lightning's own step logging writes (step numbers from 0, an ``epoch`` key).
        Called from the batch-end hook, after the callbacks' (which may stop training).
        """
        pending, self._step_metrics = self._step_metrics, None
        if pending is None:
            return
        metrics, batch_size = pending
        if self._trainer is None:  # outside a Trainer (e.g. under Fabric): no log_every_n_steps
            self.log_dict(metrics, on_step=True, on_epoch=False, batch_size=batch_size, sync_dist=False)
            return
        trainer = self.trainer
        step = trainer.global_step  # optimiser steps so far, this batch's included
        every = max(1, int(getattr(trainer, "log_every_n_steps", 50)))  # the Trainer argument
        if not trainer.loggers or step == self._logged_step or (step % every and not trainer.should_stop):
            return
        self._logged_step = step
        row = {**metrics, "epoch": self.current_epoch}
        for logger in trainer.loggers:
            logger.log_metrics(row, step=step - 1)

    def on_train_epoch_start(self) -> None:
        self._epoch_sums = defaultdict(float)
        self._epoch_count = 0
        optimizers = self.trainer.optimizers
        self._epoch_lr = float(optimizers[0].param_groups[0]["lr"]) if optimizers else float(self.lr)

    def on_train_epoch_end(self) -> None:
        n = max(1, self._epoch_count)
        row: dict[str, float] = {"epoch": float(self.current_epoch)}
        row["lr"] = self._epoch_lr  # Lightning may already have stepped the schedule for the next epoch
        beta = getattr(self.loss_fn.negatives, "beta", None)
        if beta is not None:
            row["beta"] = float(beta)
        for key, value in self._epoch_sums.items():
            row[key] = value / n
        if self.trainer.world_size > 1:  # average over processes
            vec = torch.tensor(
                [row[k] for k in sorted(row) if k != "epoch"], dtype=torch.float64, device=self.device
            )
            vec = self.trainer.strategy.reduce(vec, reduce_op="mean")
            for k, v in zip([k for k in sorted(row) if k != "epoch"], vec.tolist()):
                row[k] = float(v)
        self.history.append(row)
        # The row reaches metrics.csv through HistoryWriter, before the epoch's checkpoint is
        # written; the loggers (TensorBoard) get it here, flushed at once.
        metrics = {f"epoch/{k}": v for k, v in row.items() if k != "epoch"}
        metrics["epoch"] = float(self.current_epoch)
        for logger in self.loggers:
            logger.log_metrics(metrics, step=self.global_step)
            logger.save()
        if not self.automatic_optimization:  # Lightning steps schedulers only under automatic optimisation
            scheduler = self.lr_schedulers()
            if scheduler is not None:
                scheduler.step()  # type: ignore[union-attr]

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        checkpoint["hardneg_history"] = copy.deepcopy(self.history)

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        self.history = copy.deepcopy(checkpoint.get("hardneg_history", []))
