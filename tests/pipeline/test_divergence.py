"""A diverging run stops with one line: the epoch, the batch, the last finite loss and what to try."""

from __future__ import annotations

import math
import re
from typing import Any

import lightning as L
import pytest
import torch
from lightning.pytorch.loggers import Logger
from torch import Tensor, nn
from torch.utils.data import DataLoader

from hardneg import ContrastiveLoss
from hardneg.modalities.base import IdentityViews
from hardneg.pipeline.module import ContrastiveModule, TrainingDiverged
from hardneg.reduction import LossOutput


class _Losses(Logger):
    """The ``train/loss`` of every step, with its step."""

    def __init__(self) -> None:
        super().__init__()
        self.losses: list[tuple[int, float]] = []

    @property
    def name(self) -> str:
        return "losses"

    @property
    def version(self) -> str:
        return "0"

    def log_hyperparams(self, params: Any, *args: Any, **kwargs: Any) -> None:
        """Nothing to record."""

    def log_metrics(self, metrics: dict[str, float], step: int | None = None) -> None:
        if "train/loss" in metrics:
            self.losses.append((int(step or 0), metrics["train/loss"]))


class _Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Linear(6, 4)

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        z = self.net(x)
        return z, z


class _NaNAfter(nn.Module):
    """A loss that is finite for ``steps`` calls, then NaN (with finite embeddings)."""

    def __init__(self, steps: int) -> None:
        super().__init__()
        self.inner, self.left = ContrastiveLoss(temperature=0.5), steps
        self.negatives = self.inner.negatives  # read by the module at each epoch's end

    def forward(self, z1: Tensor, z2: Tensor, **kwargs: Any) -> LossOutput:
        out = self.inner(z1, z2, **kwargs)
        self.left -= 1
        return out if self.left >= 0 else LossOutput(out.loss * math.nan, out.per_anchor, out.diagnostics)


def _batches() -> list[tuple[Tensor, Tensor, Tensor, Tensor]]:
    g = torch.Generator().manual_seed(1)
    out = []
    for i in range(5):
        x = torch.randn(12, 6, generator=g)
        out.append((x, x + 0.1 * torch.randn(12, 6, generator=g), torch.arange(12) % 3,
                    torch.arange(12) + 12 * i))
    return out


def _fit(loss: nn.Module, **module: Any) -> tuple[str, list[tuple[int, float]]]:
    L.seed_everything(0, verbose=False)
    model = ContrastiveModule(encoder=_Encoder(), loss=loss, views=IdentityViews(), seed=0,  # type: ignore[arg-type]
                              **module)
    losses = _Losses()
    trainer = L.Trainer(max_epochs=3, logger=losses, log_every_n_steps=1, accelerator="cpu", devices=1,
                        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
    with pytest.raises(TrainingDiverged) as caught:
        trainer.fit(model, train_dataloaders=DataLoader(_batches(), batch_size=None))  # type: ignore[arg-type]
    return str(caught.value), losses.losses


def test_a_huge_learning_rate_stops_naming_the_epoch_the_loss_and_what_to_try() -> None:
    line, losses = _fit(ContrastiveLoss(temperature=0.5), optimizer="sgd", lr=1e12)
    assert "\n" not in line
    found = re.fullmatch(r"training diverged at epoch (\d+), batch (\d+) \(after (\d+) optimiser steps\): "
                         r"the embeddings are not finite \(z1 must be finite, .*\); the last finite loss was "
                         r"(\S+) \(epoch (\d+), batch (\d+)\)\. Try a lower train\.lr \(now 1e\+12\), "
                         r"train\.optimizer=adam or train\.gradient_clip_norm=1\.0", line)
    assert found, line
    epoch, batch, steps, last, last_epoch, last_batch = found.groups()
    step, logged = losses[-1]  # the last step whose loss was logged: the last finite one
    assert math.isfinite(logged) and last == f"{logged:.4g}"
    # 5 batches an epoch; the step diverging is the one after the last logged step
    assert int(steps) == len(losses) == step + 1
    assert (int(epoch), int(batch)) == ((step + 1) // 5 + 1, (step + 1) % 5 + 1)
    assert (int(last_epoch), int(last_batch)) == (step // 5 + 1, step % 5 + 1)


def test_a_non_finite_loss_stops_at_its_own_step() -> None:
    line, losses = _fit(_NaNAfter(7), optimizer="adam", lr=1e-3)  # 5 batches an epoch: epoch 2, batch 3
    assert line == ("training diverged at epoch 2, batch 3 (after 7 optimiser steps): the loss is nan; "
                    f"the last finite loss was {losses[-1][1]:.4g} (epoch 2, batch 2). Try a lower train.lr "
                    "(now 0.001), train.optimizer=sgd or train.gradient_clip_norm=1.0")
    assert len(losses) == 7
