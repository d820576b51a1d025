"""Resume means "from the last finished epoch": a Ctrl-C inside an epoch is discarded, never resumed
mid-epoch; a run folder has one writer (an OS lock naming its holder's PID)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import lightning as L
import pytest
import torch

from hardneg.pipeline import experiment
from hardneg.pipeline.config import load_config
from hardneg.pipeline.experiment import train_run
from hardneg.pipeline.run_folder import RunLocked, run_lock
from tests.pipeline.helpers import tiny

ARGS = tiny("train.epochs=2", "eval.figures=false", "eval.knn=false", "eval.linear=false",
            "train.threads=1")


class _CtrlC(L.Callback):
    """Raise KeyboardInterrupt (what Ctrl-C raises) at batch ``batch`` of epoch ``epoch``."""

    def __init__(self, epoch: int, batch: int) -> None:
        self.epoch, self.batch = epoch, batch

    def on_train_batch_start(self, trainer: L.Trainer, module: L.LightningModule, batch: object,
                             batch_idx: int) -> None:
        if trainer.current_epoch == self.epoch and batch_idx == self.batch:
            raise KeyboardInterrupt


def _interrupted(monkeypatch: pytest.MonkeyPatch, cfg, run: Path, epoch: int, batch: int) -> None:  # type: ignore[no-untyped-def]
    build = experiment.build_module

    def with_ctrl_c(*args, **kwargs):  # type: ignore[no-untyped-def]
        module, callbacks = build(*args, **kwargs)
        return module, [*callbacks, _CtrlC(epoch, batch)]

    with monkeypatch.context() as m:
        m.setattr(experiment, "build_module", with_ctrl_c)
        with pytest.raises((KeyboardInterrupt, SystemExit)):
            train_run(cfg, run, quiet=True)


def _history(run: Path) -> list[dict[str, float]]:
    return json.loads((run / "metrics.json").read_text())["history"]


@pytest.mark.parametrize(("epoch", "batch"), [(0, 1), (1, 1)])
def test_ctrl_c_inside_an_epoch_then_resume_equals_the_uninterrupted_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, epoch: int, batch: int
) -> None:
    cfg = load_config("digits", ARGS)
    reference = tmp_path / "reference"
    train_run(cfg, reference, quiet=True)
    run = tmp_path / "interrupted"
    _interrupted(monkeypatch, cfg, run, epoch, batch)
    assert (run / "checkpoints" / "interrupted.ckpt").is_file()  # kept for inspection only
    assert (run / "checkpoints" / "last.ckpt").is_file() == (epoch > 0)
    train_run(cfg, run, resume=True, quiet=True)
    assert _history(run) == _history(reference)  # bit for bit
    a = torch.load(reference / "checkpoints" / "last.ckpt", weights_only=False)["state_dict"]
    b = torch.load(run / "checkpoints" / "last.ckpt", weights_only=False)["state_dict"]
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_a_second_writer_is_refused_naming_the_holder(tmp_path: Path) -> None:
    cfg = load_config("digits", ARGS)
    run = tmp_path / "run"
    run.mkdir()
    (run / "keep.txt").write_text("another run's file")
    with run_lock(run):  # this process plays the other writer
        for kwargs in ({}, {"force": True}, {"resume": True}):
            with pytest.raises(RunLocked, match=rf"PID {os.getpid()}\b"):
                train_run(cfg, run, quiet=True, **kwargs)
    assert (run / "keep.txt").read_text() == "another run's file"  # --force deleted nothing
    assert not (run / "config.yaml").exists()
    train_run(cfg, run, quiet=True, force=True)  # released: the folder is written again
    assert (run / "metrics.json").is_file() and not (run / "keep.txt").exists()
