"""The two kinds of modality, declared rather than detected: which step trains a config, which
modality evaluates itself, the splits each is generic over, and one argument order for all."""

from __future__ import annotations

import inspect
import typing
from typing import Any

import pytest

from hardneg.data.graphs.dataset import GraphDataset
from hardneg.data.images import LabeledImages
from hardneg.data.text.splits import TokenSplit
from hardneg.data.vectors import LabeledVectors
from hardneg.modalities import base
from hardneg.modalities.articles import Articles
from hardneg.modalities.base import (
    EvalResult,
    Modality,
    OwnStepModality,
    TwoViewModality,
    register_modality,
    trains_with_own_step,
)
from hardneg.modalities.graphs import Graphs
from hardneg.modalities.images import Images
from hardneg.modalities.latent import Latent
from hardneg.modalities.sentences import Sentences
from hardneg.pipeline.config import load_config

from .helpers import StubModality

BUILT_IN: list[tuple[type[Modality[Any, Any]], tuple[type, ...], type, bool]] = [
    # class, its kinds, the type of both splits, evaluates_itself
    (Images, (TwoViewModality,), LabeledImages, False),
    (Latent, (OwnStepModality, TwoViewModality), LabeledVectors, False),
    (Graphs, (OwnStepModality,), GraphDataset, True),
    (Articles, (OwnStepModality,), TokenSplit, False),
    (Sentences, (OwnStepModality,), TokenSplit, True),
]


@pytest.mark.parametrize(("cls", "kinds", "split", "evaluates"), BUILT_IN)
def test_each_built_in_declares_its_kinds_splits_and_evaluation(
    cls: type[Modality[Any, Any]], kinds: tuple[type, ...], split: type, evaluates: bool
) -> None:
    declared = {k for k in (TwoViewModality, OwnStepModality) if issubclass(cls, k)}
    assert declared == set(kinds)
    for parent in cls.__orig_bases__:  # type: ignore[attr-defined]
        assert typing.get_args(parent) == (split, split), parent
    assert cls.evaluates_itself is evaluates


@pytest.mark.parametrize(
    ("config", "overrides", "own"),
    [
        ("digits", [], False),
        ("latent_classes", [], False),
        ("latent_classes", ["data.layout=tuples"], True),
        ("graphs", [], True),
        ("sentences", [], True),
    ],
)
def test_the_kind_says_which_step_trains_a_config(config: str, overrides: list[str], own: bool) -> None:
    cfg = load_config(config, overrides)
    from hardneg.modalities import get_modality

    assert trains_with_own_step(get_modality(cfg.data.dataset), cfg) is own


_MEMBERS = ("check", "describe", "batch_size", "uses_labels", "memory", "data_files", "load", "dataset",
            "save", "build_encoder", "views", "own_step", "step", "evaluate", "table_metrics", "pictures")


@pytest.mark.parametrize("cls", [row[0] for row in BUILT_IN] + [Modality, TwoViewModality, OwnStepModality])
def test_every_member_takes_the_config_first(cls: type[Modality[Any, Any]]) -> None:
    for member in _MEMBERS:
        function = getattr(cls, member, None)
        if function is None:
            continue
        names = list(inspect.signature(function).parameters)
        assert names[:2] == ["self", "cfg"], f"{cls.__name__}.{member}{inspect.signature(function)}"
    # then the data, in one order: train before test, the run folder last
    evaluate = list(inspect.signature(Modality.evaluate).parameters)
    assert evaluate == ["self", "cfg", "encoder", "train", "test"]
    assert list(inspect.signature(Modality.save).parameters) == ["self", "cfg", "train", "run_dir"]


def test_a_member_a_modality_must_implement_is_named_when_missing() -> None:
    class NoEncoder(TwoViewModality[Any, Any]):
        def load(self, cfg: Any) -> Any: ...
        def dataset(self, cfg: Any, train: Any) -> Any: ...

    with pytest.raises(TypeError, match="build_encoder"):
        NoEncoder()  # type: ignore[abstract]

    class NoStep(OwnStepModality[Any, Any], StubModality):
        pass

    with pytest.raises(TypeError, match="step"):
        NoStep()  # type: ignore[abstract]


def test_an_own_evaluation_is_declared(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(base, "_REGISTRY", dict(base._REGISTRY))

    class Undeclared(StubModality):  # an evaluate alone does not replace the readouts
        datasets = ("stub-undeclared",)

        def evaluate(self, cfg: Any, encoder: Any, train: Any, test: Any) -> EvalResult:
            raise AssertionError("not called")

    assert register_modality(Undeclared()).evaluates_itself is False

    class Declared(StubModality):
        datasets = ("stub-declared",)
        evaluates_itself = True

    with pytest.raises(TypeError, match=r"Declared declares evaluates_itself = True but implements no eval"):
        register_modality(Declared())


def test_an_own_step_modality_declining_its_step_must_make_views() -> None:
    class Declines(OwnStepModality[Any, Any]):
        def load(self, cfg: Any) -> Any: ...
        def dataset(self, cfg: Any, train: Any) -> Any: ...
        def build_encoder(self, cfg: Any, train: Any) -> Any: ...
        def step(self, cfg: Any, encoder: Any, loss: Any, x: Any, *, labels: Any, generator: Any) -> Any: ...

        def own_step(self, cfg: Any) -> bool:
            return False

    with pytest.raises(TypeError, match=r"Declines: own_step\(cfg\) is false and it is not a TwoView"):
        trains_with_own_step(Declines(), load_config("digits"))
