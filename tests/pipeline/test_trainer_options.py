"""The ``trainer:`` passthrough, learning-rate schedules, gradient accumulation and data workers."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from hardneg.config.errors import ConfigError
from hardneg.pipeline.config import load_config, parse_overrides
from hardneg.pipeline.experiment import train_run
from hardneg.schedules import lr_factor
from tests.pipeline.helpers import tiny


def _cfg(*extra: str):  # type: ignore[no-untyped-def]
    return load_config("digits", parse_overrides(tiny("eval.knn=false", "eval.figures=false", *extra)))


def test_lr_factor_closed_forms() -> None:
    assert [lr_factor(e, num_epochs=5) for e in range(5)] == [1.0] * 5
    assert [lr_factor(e, num_epochs=5, warmup_epochs=2) for e in range(3)] == [0.5, 1.0, 1.0]
    got = [lr_factor(e, num_epochs=6, warmup_epochs=2, schedule="cosine") for e in range(6)]
    want = [0.5, 1.0] + [0.5 * (1 + math.cos(math.pi * k / 4)) for k in range(4)]
    assert got == pytest.approx(want, abs=1e-15)
    with pytest.raises(ValueError, match=r"warmup_epochs must be an int in \[0, num_epochs = 3\), got 3"):
        lr_factor(0, num_epochs=3, warmup_epochs=3)
    with pytest.raises(ValueError, match="schedule must be one of"):
        lr_factor(0, num_epochs=3, schedule="step")


@pytest.mark.parametrize("chunk", ["null", "32"])  # automatic optimisation, and GradCache's manual one
def test_a_cosine_schedule_with_warm_up_sets_each_epochs_rate(tmp_path: Path, chunk: str) -> None:
    cfg = _cfg("train.epochs=4", "train.lr=0.01", "train.lr_schedule=cosine", "train.warmup_epochs=1",
               f"train.grad_cache_chunk={chunk}")
    result = train_run(cfg, tmp_path / "run", quiet=True)
    assert result is not None
    rates = [row["lr"] for row in result.history]
    want = [0.01 * lr_factor(e, num_epochs=4, warmup_epochs=1, schedule="cosine") for e in range(4)]
    assert rates == pytest.approx(want, rel=1e-12)


def test_trainer_options_accumulation_and_workers_reach_lightning(tmp_path: Path) -> None:
    # 256 items / 64 per batch = 4 batches an epoch; limit_train_batches=2 keeps 2; accumulating 2
    # batches makes one optimiser step of them
    cfg = _cfg("trainer.limit_train_batches=2", "train.accumulate_grad_batches=2", "train.num_workers=1")
    result = train_run(cfg, tmp_path / "run", quiet=True)
    assert result is not None and result.timing["steps"] == 2
    import torch

    ckpt = torch.load(tmp_path / "run" / "checkpoints" / "last.ckpt", weights_only=False)
    assert ckpt["global_step"] == 1  # one optimiser step for the two batches


def test_trainer_keys_the_pipeline_owns_or_lightning_lacks_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"'trainer\.max_epochs': the pipeline sets it; use train"):
        _cfg("trainer.max_epochs=3")
    with pytest.raises(ConfigError, match=r"unknown key 'trainer\.max_epoch': lightning\.Trainer takes"):
        _cfg("trainer.max_epoch=3")
    with pytest.raises(ConfigError, match=r"'train\.accumulate_grad_batches': GradCache steps the optimiser"):
        _cfg("train.grad_cache_chunk=16", "train.accumulate_grad_batches=2")
    with pytest.raises(ConfigError, match=r"'train.warmup_epochs': must be < train.epochs = 1, got 1"):
        _cfg("train.warmup_epochs=1")


def test_a_yaml_trainer_section_is_read(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("data: {dataset: digits}\ntrainer: {max_time: '00:00:10:00', detect_anomaly: false}\n")
    cfg = load_config(path)
    assert cfg.trainer == {"max_time": "00:00:10:00", "detect_anomaly": False}
