"""A plug-in written for hardneg 0.2 (a direct subclass of ``Modality``, the 0.2 argument order)
still registers, with a ``DeprecationWarning`` naming what to change, and trains to the very
numbers of the same plug-in written for the 0.3 interface."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest
import torch

from hardneg.data.vectors import BatchedPairs, LabeledVectors
from hardneg.modalities import base
from hardneg.modalities.base import (
    EvalResult,
    Modality,
    OwnStepModality,
    TwoViewModality,
    register_modality,
    trains_with_own_step,
)
from hardneg.models.configured import configured_encoder
from tests.pipeline import toy_modality  # the 0.3 plug-in of docs/architecture.md

CONFIG = """\
name: toy
data: {{dataset: {dataset}, size: 64, dim: 6, classes: 3}}
model: {{encoder: mlp, width: 16, feature_dim: 8, projection_dim: 8, hidden_dim: 16}}
loss: {{negatives: {{name: hard, beta: 1.0}}}}
train: {{epochs: 2, batch_size: 32, threads: 1, progress: false}}
eval: {{knn_k: 5, kwise: [1], kwise_tasks: 10, figures: false}}
"""


class Toy02(Modality[LabeledVectors, LabeledVectors]):
    """The toy plug-in as 0.2 wrote it: ``Modality`` itself, ``dataset(train, cfg)``."""

    name = "toy02"
    datasets = ("toy02",)
    encoders = ("mlp",)
    section = toy_modality.ToyData

    def load(self, cfg: Any) -> tuple[LabeledVectors, LabeledVectors]:
        return toy_modality.Toy().load(cfg)

    def dataset(self, train: LabeledVectors, cfg: Any) -> BatchedPairs:  # type: ignore[override]
        return BatchedPairs(train)

    def build_encoder(self, cfg: Any, train: LabeledVectors) -> torch.nn.Module:
        return configured_encoder(cfg.model, in_dim=int(train.inputs.shape[1]))


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Registrations made by a test are dropped after it."""
    monkeypatch.setattr(base, "_REGISTRY", dict(base._REGISTRY))


@pytest.mark.usefixtures("registry")
def test_a_02_plugin_trains_to_the_numbers_of_the_03_one(tmp_path: Path) -> None:
    from hardneg.pipeline.config import load_config
    from hardneg.pipeline.experiment import train_run

    with pytest.warns(DeprecationWarning) as caught:
        adapted = register_modality(Toy02())
    message = str(caught[0].message)
    assert "modality Toy02 is written for hardneg 0.2" in message and "refused from 0.4" in message
    assert "subclass TwoViewModality instead of Modality" in message
    assert "dataset(train, cfg) -> dataset(cfg, train)" in message
    assert isinstance(adapted, TwoViewModality) and adapted.name == "toy02"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the 0.3 plug-in registers without a warning
        register_modality(toy_modality.Toy())
    results = {}
    for dataset in ("toy", "toy02"):
        path = tmp_path / f"{dataset}.yaml"
        path.write_text(CONFIG.format(dataset=dataset))
        cfg = load_config(path)
        assert not trains_with_own_step(base.get_modality(dataset), cfg)
        results[dataset] = train_run(cfg, tmp_path / dataset, quiet=True)
    new, old = results["toy"], results["toy02"]
    assert new is not None and old is not None
    assert old.eval == new.eval and old.history == new.history
    assert old.test_features is not None and new.test_features is not None
    assert torch.equal(old.test_features, new.test_features)


class Recorder02(Modality[Any, Any]):
    """A 0.2 plug-in with its own step and evaluation, recording how it is called."""

    name = "recorder02"
    datasets = ("recorder02",)
    encoders = ("mlp",)

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def load(self, cfg: Any) -> tuple[Any, Any]:
        return "train", "test"

    def dataset(self, train: Any, cfg: Any) -> Any:  # type: ignore[override]
        self.calls.append(("dataset", train, cfg))

    def build_encoder(self, cfg: Any, train: Any) -> Any:
        self.calls.append(("build_encoder", cfg, train))

    def step(self, cfg: Any, encoder: Any, loss: Any, x: Any, *, labels: Any, generator: Any) -> Any:
        self.calls.append(("step", cfg, encoder, loss, x, labels, generator))

    def evaluate(self, encoder: Any, train: Any, test: Any, cfg: Any) -> EvalResult:  # type: ignore[override]
        self.calls.append(("evaluate", encoder, train, test, cfg))
        return EvalResult({}, torch.zeros(0), torch.zeros(0), 0.0)

    def save(self, train: Any, run_dir: Path) -> None:  # type: ignore[override]
        self.calls.append(("save", train, run_dir))

    def pictures(self, split: Any) -> Any:  # type: ignore[override]
        self.calls.append(("pictures", split))


@pytest.mark.usefixtures("registry")
def test_a_02_plugin_is_called_in_its_own_argument_order() -> None:
    plugin = Recorder02()
    with pytest.warns(DeprecationWarning) as caught:
        adapted = register_modality(plugin)
    message = str(caught[0].message)
    for change in ("subclass OwnStepModality (it defines step) instead of Modality",
                   "evaluate(encoder, train, test, cfg) -> evaluate(cfg, encoder, train, test)",
                   "save(train, run_dir) -> save(cfg, train, run_dir)",
                   "pictures(split) -> pictures(cfg, split)",
                   "declare evaluates_itself = True (it defines evaluate)"):
        assert change in message, change
    cfg, here = object(), Path("run")
    assert isinstance(adapted, OwnStepModality) and adapted.evaluates_itself
    assert trains_with_own_step(adapted, cfg)  # type: ignore[arg-type]
    adapted.dataset(cfg, "TR")  # type: ignore[arg-type]
    adapted.build_encoder(cfg, "TR")  # type: ignore[arg-type]
    adapted.step(cfg, "ENC", "LOSS", "X", labels="Y", generator="G")  # type: ignore[arg-type]
    adapted.evaluate(cfg, "ENC", "TR", "TE")  # type: ignore[arg-type]
    adapted.save(cfg, "TR", here)  # type: ignore[arg-type]
    adapted.pictures(cfg, "TE")  # type: ignore[arg-type]
    assert plugin.calls == [
        ("dataset", "TR", cfg),
        ("build_encoder", cfg, "TR"),
        ("step", cfg, "ENC", "LOSS", "X", "Y", "G"),
        ("evaluate", "ENC", "TR", "TE", cfg),
        ("save", "TR", here),
        ("pictures", "TE"),
    ]
