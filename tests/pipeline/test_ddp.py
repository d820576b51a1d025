"""Data-parallel training on CPU: two gloo processes, negatives gathered across them."""

from __future__ import annotations

import json

import pytest

from hardneg.pipeline.history import read_history

from .helpers import run_cli, tiny


@pytest.mark.slow
def test_two_process_ddp_gathers_negatives_and_writes_one_run(tmp_path):
    run = tmp_path / "ddp"
    done = run_cli(["train", "digits", *tiny("train.devices=2", "train.strategy=ddp", "train.epochs=2",
                                              "eval.figures=false"), "--out", str(run), "-q"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    data = json.loads((run / "metrics.json").read_text())
    history = read_history(run / "metrics.csv")
    # each process has B = 64 images -> 2B = 128 views; gathered over 2 processes every anchor
    # sees 2 * 128 - 2 = 254 candidates (without the gather it would be 126)
    assert [row["num_negatives"] for row in history] == [254.0, 254.0]
    # 256 images, 2 processes, batch 64 -> 2 steps per epoch and process: one row per epoch
    assert [row["epoch"] for row in history] == [0.0, 1.0]
    assert set(data["eval"]) >= {"linear_top1", "knn_top1", "mean_top1"}
    assert done.stdout.count("linear_top1=") == 1  # only the global-zero process reports
