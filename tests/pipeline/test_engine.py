"""End-to-end runs on digits with a tiny budget (seconds each)."""

from __future__ import annotations

import json

import pytest
import torch

from hardneg.config import ConfigError
from hardneg.pipeline.build import build_loss
from hardneg.pipeline.config import load_config
from hardneg.pipeline.experiment import RunExists, evaluate_run, train_run
from hardneg.pipeline.history import read_history
from hardneg.pipeline.registry import NEGATIVES, OBJECTIVES

from .helpers import tiny

EVAL_KEYS = {"linear_top1", "knn_top1", "knn_top5", "mean_top1", "kwise1_top1"}


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    run = tmp_path_factory.mktemp("runs") / "hard"
    cfg = load_config(
        "digits",
        tiny(
            "loss.negatives.name=hard",
            "loss.negatives.beta=1.0",
            "loss.objective.name=debiased",
            "loss.objective.tau_plus=0.1",
            "train.epochs=2",
            "eval.every_n_epochs=1",
        ),
    )
    return train_run(cfg, run, quiet=True)


def test_run_folder_has_config_metrics_checkpoints_figures_summary(finished_run):
    run = finished_run.run_dir
    for name in (
        "config.yaml",
        "metrics.json",
        "metrics.csv",
        "eval.csv",
        "summary.md",
        "checkpoints/last.ckpt",
        "figures/cosine_histograms.png",
        "figures/hardest_negatives.png",
        "figures/loss.png",
        "figures/knn_vs_epochs.png",
    ):
        assert (run / name).is_file(), name
    assert list((run / "logs" / "tensorboard").glob("events.out.tfevents.*"))
    assert load_config(run / "config.yaml").loss.negatives["name"] == "hard"
    data = json.loads((run / "metrics.json").read_text())
    assert set(data["eval"]) == EVAL_KEYS
    assert all(0.0 <= v <= 1.0 for v in data["eval"].values())
    assert "history" not in data  # written once, to metrics.csv
    assert [row["epoch"] for row in read_history(run / "metrics.csv")] == [0.0, 1.0]
    assert [p["epoch"] for p in data["online_knn"]] == [1.0, 2.0]
    assert "linear_top1" in (run / "summary.md").read_text()


def test_history_logs_loss_diagnostics(finished_run):
    row = finished_run.history[-1]
    for key in ("loss", "ess", "ess_fraction", "pos_cosine", "neg_cosine", "collision_rate", "beta"):
        assert key in row, key
    # batch 64 -> 2B - 2 = 126 negatives per anchor; about 1/10 share the label
    assert row["num_negatives"] == 126.0
    assert 0.0 < row["collision_rate"] < 0.3
    assert 0.0 < row["ess_fraction"] < 1.0  # hard negatives are not uniform


def test_representation_beats_chance_by_far(finished_run):
    assert finished_run.eval["linear_top1"] > 0.5  # 10 classes: chance is 0.1


def test_evaluate_run_reproduces_the_metrics(finished_run):
    again = evaluate_run(finished_run.run_dir, figures_on=False, write=False)
    assert again.eval == pytest.approx(finished_run.eval, abs=1e-9)


def test_existing_run_folder_is_not_overwritten_silently(finished_run):
    cfg = load_config(finished_run.run_dir / "config.yaml")
    with pytest.raises(RunExists, match="--resume"):
        train_run(cfg, finished_run.run_dir, quiet=True)


def test_beta_annealing_is_applied_per_epoch(tmp_path):
    cfg = load_config(
        "digits",
        tiny(
            "loss.negatives.name=hard",
            "loss.negatives.beta=1.0",
            "loss.anneal.enabled=true",
            "loss.anneal.changes=2",
            "train.epochs=2",
            "eval.linear=false",
            "eval.figures=false",
        ),
    )
    result = train_run(cfg, tmp_path / "anneal", quiet=True)
    assert [row["beta"] for row in result.history] == [1.0, 0.5]


def test_annealing_a_distribution_without_beta_is_rejected():
    with pytest.raises(ConfigError, match=r"'loss.anneal.enabled'.*'uniform'"):
        load_config("digits", tiny("loss.negatives.name=uniform", "loss.anneal.enabled=true"))


def test_moco_mode_trains_with_a_queue(tmp_path):
    cfg = load_config(
        "digits",
        tiny(
            "train.mode=moco",
            "moco.queue_size=256",
            "moco.momentum=0.9",
            "loss.negatives.name=hard",
            "loss.negatives.beta=0.2",
            "train.epochs=2",
            "eval.figures=false",
        ),
    )
    result = train_run(cfg, tmp_path / "moco", quiet=True)
    assert result.history[-1]["num_negatives"] == 256.0  # the queue, not the batch
    state = torch.load(result.run_dir / "checkpoints" / "last.ckpt", weights_only=False)["state_dict"]
    assert {"queue.keys", "queue.pointer", "key_encoder.head.net.0.weight"} <= set(state)
    # 2 epochs x 4 batches of 64 keys were enqueued into 256 slots: the pointer wrapped to 0
    assert int(state["queue.pointer"]) == 0 and int(state["queue.filled"]) == 256
    assert result.eval["linear_top1"] > 0.3


def test_oracle_positives_and_collision_free_negatives(tmp_path):
    cfg = load_config(
        "digits", tiny("data.oracle_positive=true", "loss.collision_free=true", "eval.figures=false")
    )
    result = train_run(cfg, tmp_path / "oracle", quiet=True)
    assert result.history[-1]["collision_rate"] == 0.0  # same-label candidates are masked out
    assert result.history[-1]["num_negatives"] < 126.0


def test_every_registered_distribution_and_objective_builds_a_finite_loss():
    z1, z2 = torch.randn(8, 4), torch.randn(8, 4)
    for neg in NEGATIVES.names():
        for obj in OBJECTIVES.names():
            cfg = load_config("digits", [f"loss.negatives.name={neg}", f"loss.objective.name={obj}"])
            loss = build_loss(cfg)
            try:
                value = loss(z1, z2)
            except ValueError as err:  # the one refused pair: the max hinge cannot take weights
                assert obj == "hinge" and "non-uniform weights" in str(err), (neg, obj, err)
                continue
            assert torch.isfinite(value), (neg, obj)


def _write_cifar10(root, n_train_per_batch=40, n_test=40):
    import pickle

    import numpy as np

    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for name, n in [*((f"data_batch_{i}", n_train_per_batch) for i in range(1, 6)), ("test_batch", n_test)]:
        with (folder / name).open("wb") as fh:
            pickle.dump(
                {
                    b"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8),
                    b"labels": rng.integers(0, 10, n).tolist(),
                },
                fh,
            )
    with (folder / "batches.meta").open("wb") as fh:
        pickle.dump({b"label_names": [f"c{i}".encode() for i in range(10)]}, fh)


def test_cifar10_files_on_disk_train_through_the_reader(tmp_path):
    _write_cifar10(tmp_path / "data")
    cfg = load_config(
        "digits",
        tiny(
            "data.dataset=cifar10",
            f"data.root={tmp_path / 'data'}",
            "data.augment=simclr",
            "eval.figures=false",
            "eval.linear=false",
        ),
    )
    result = train_run(cfg, tmp_path / "cifar", quiet=True)
    assert len(result.history) == 1 and torch.isfinite(torch.tensor(result.history[0]["loss"]))
    assert "knn_top1" in result.eval
