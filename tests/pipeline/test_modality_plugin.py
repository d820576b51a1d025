"""The modality seam: a plug-in outside the package trains through ``hardneg train``; a data key
that does not apply is an error before anything is written; each loss component is built once."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hardneg.pipeline.history import read_history
from tests.pipeline.helpers import cli_env

HERE = Path(__file__).parent

TOY_CONFIG = """\
name: toy
imports: [toy_modality]
data: {dataset: toy, size: 96, dim: 6, classes: 3}
model: {encoder: mlp, width: 16, feature_dim: 8, projection_dim: 8, hidden_dim: 16}
loss:
  negatives: {name: hard, beta: 1.0}
  objective: {name: debiased, tau_plus: 0.1}
train: {epochs: 2, batch_size: 32, threads: 1, progress: false}
eval: {knn_k: 5, kwise: [1], kwise_tasks: 10, figures: false}
"""


@pytest.mark.slow
def test_toy_modality_trains_through_the_cli(tmp_path: Path) -> None:
    cfg = tmp_path / "toy.yaml"
    cfg.write_text(TOY_CONFIG)
    env = cli_env()
    env["PYTHONPATH"] = f"{HERE}:{env.get('PYTHONPATH', '')}"
    out = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "hardneg.cli", "train", str(cfg), "--out", str(out), "--quiet"],
        capture_output=True, text=True, env=env, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    metrics = json.loads((out / "metrics.json").read_text())
    assert len(read_history(out / "metrics.csv")) == 2
    assert 0.0 <= metrics["eval"]["linear_top1"] <= 1.0
    # a key the toy section does not declare is refused before any file is written
    bad = tmp_path / "bad"
    proc = subprocess.run(
        [sys.executable, "-m", "hardneg.cli", "train", str(cfg), "data.latent.num_classes=4",
         "--out", str(bad), "--quiet"],
        capture_output=True, text=True, env=env, timeout=300,
    )
    assert proc.returncode == 2
    assert "unknown config key 'data.latent'" in proc.stderr
    assert "valid keys in 'data': classes, dataset, dim, size" in proc.stderr
    assert not bad.exists()


def test_keys_of_another_modality_are_refused() -> None:
    from hardneg.config import ConfigError
    from hardneg.pipeline.config import load_config

    with pytest.raises(ConfigError, match=r"unknown config key 'data.latent'.*valid keys in 'data'"):
        load_config("digits", ["data.latent.num_classes=3"])
    with pytest.raises(ConfigError, match=r"unknown config key 'data.augment'.*valid keys in 'data'"):
        load_config("latent_classes", ["data.augment=simclr"])
    # switching data.dataset to another modality starts its section anew
    cfg = load_config("digits", ["data.dataset=latent", "model.encoder=mlp", "data.latent.num_classes=3"])
    assert cfg.data.latent.num_classes == 3  # type: ignore[attr-defined]
    assert not hasattr(cfg.data, "augment")


def test_each_loss_component_is_built_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """One ``train``: the config is validated once and each component constructed once."""
    from hardneg.negatives.hard import Hard
    from hardneg.objectives.debiased import Debiased
    from hardneg.pipeline.config import load_config
    from hardneg.pipeline.experiment import train_run

    counts = {"Hard": 0, "Debiased": 0}
    for cls in (Hard, Debiased):
        original = cls.__init__

        def counting(self, *args, __original=original, __name=cls.__name__, **kwargs):  # type: ignore[no-untyped-def]
            counts[__name] += 1
            __original(self, *args, **kwargs)

        monkeypatch.setattr(cls, "__init__", counting)
    cfg = load_config(
        "latent_classes",
        ["loss.negatives.name=hard", "loss.negatives.beta=1.0", "loss.objective.name=debiased",
         "loss.objective.tau_plus=0.1", "train.epochs=1", "train.progress=false", "train.threads=1",
         "data.latent.train_size=128", "data.latent.test_size=64", "eval.figures=false",
         "train.batch_size=64"],
    )
    assert counts == {"Hard": 1, "Debiased": 1}
    train_run(cfg, tmp_path / "run", quiet=True)
    assert counts == {"Hard": 1, "Debiased": 1}
