"""The training step writes its metrics to the loggers every ``log_every_n_steps`` steps only.

``ContrastiveModule`` writes step metrics with ``Logger.log_metrics`` on the steps that are
logged, instead of ``self.log`` on every step (a millisecond per metric per step). The loggers
must receive, at those steps, exactly what a run logging every step receives (same seed, same
batches), also when a callback stops training between two logging steps (that step is written).
"""

from __future__ import annotations

from typing import Any

import lightning as L
import pytest
import torch
from lightning.pytorch.loggers import Logger
from torch import Tensor, nn
from torch.utils.data import DataLoader

from hardneg import ContrastiveLoss
from hardneg.modalities.base import IdentityViews
from hardneg.pipeline.module import ContrastiveModule


class _Recorder(Logger):
    """Every ``log_metrics`` call: ``(step, metrics)``."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[int | None, dict[str, float]]] = []

    @property
    def name(self) -> str:
        return "recorder"

    @property
    def version(self) -> str:
        return "0"

    def log_hyperparams(self, params: Any, *args: Any, **kwargs: Any) -> None:
        """Nothing to record."""

    def log_metrics(self, metrics: dict[str, float], step: int | None = None) -> None:
        self.calls.append((step, dict(metrics)))


class _Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Linear(6, 4)

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        z = self.net(x)
        return z, z


class _StopAt(L.Callback):
    def __init__(self, batch_idx: int) -> None:
        self.batch_idx = batch_idx

    def on_train_batch_end(self, trainer: L.Trainer, pl_module: L.LightningModule, outputs: Any,
                           batch: Any, batch_idx: int) -> None:
        if batch_idx == self.batch_idx:
            trainer.should_stop = True


def _batches() -> list[tuple[Tensor, Tensor, Tensor, Tensor]]:
    g = torch.Generator().manual_seed(1)
    out = []
    for i in range(7):
        x = torch.randn(12, 6, generator=g)
        out.append((x, x + 0.1 * torch.randn(12, 6, generator=g), torch.arange(12) % 3,
                    torch.arange(12) + 12 * i))
    return out


def _fit(callbacks: list[L.Callback], every: int = 3) -> list[tuple[int | None, dict[str, float]]]:
    L.seed_everything(0, verbose=False)
    module = ContrastiveModule(encoder=_Encoder(), loss=ContrastiveLoss(temperature=0.5),
                               views=IdentityViews(), seed=0)
    recorder = _Recorder()
    trainer = L.Trainer(max_epochs=2, logger=recorder, callbacks=callbacks, log_every_n_steps=every,
                        accelerator="cpu", devices=1, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False, deterministic=True)
    trainer.fit(module, train_dataloaders=DataLoader(_batches(), batch_size=None))  # type: ignore[arg-type]
    return [(step, m) for step, m in recorder.calls if any(k.startswith("train/") for k in m)]


@pytest.mark.parametrize("stop_at", [None, 1])
def test_the_loggers_get_what_logging_every_step_gave(stop_at: int | None) -> None:
    gated = _fit([] if stop_at is None else [_StopAt(stop_at)])
    every = _fit([] if stop_at is None else [_StopAt(stop_at)], every=1)
    steps = [step for step, _ in gated]
    # 7 batches per epoch, 2 epochs, a write every 3 steps; a stop at batch 1 writes step 1 alone
    assert steps == ([2, 5, 8, 11] if stop_at is None else [1])
    assert [step for step, _ in every] == list(range(14 if stop_at is None else 2))
    assert gated == [(step, m) for step, m in every if step in steps]
    assert {"train/loss", "train/ess", "train/pos_cosine", "epoch"} <= set(gated[0][1])
