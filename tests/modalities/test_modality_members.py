"""What the pipeline asks of a modality instead of naming data sets or data classes: its eval section,
whether its labels name classes, its pictures and its table columns."""

from __future__ import annotations

import pytest
import torch

from hardneg.config import EvalSection
from hardneg.data.images import LabeledImages
from hardneg.data.vectors import LabeledVectors
from hardneg.modalities import get_modality, register_modality
from hardneg.pipeline.config import load_config

from .helpers import StubModality


class _OwnEval(EvalSection):
    threshold: float = 0.5


def test_a_modality_evaluated_by_the_readouts_needs_their_eval_section() -> None:
    class Bad(StubModality):
        name = "bad"
        datasets = ("bad-data",)
        eval_section = _OwnEval

    with pytest.raises(TypeError, match=r"Bad.eval_section must subclass ReadoutEval .* got _OwnEval"):
        register_modality(Bad())

    class NotASection(StubModality):
        name = "bad"
        datasets = ("bad-data",)
        eval_section = int  # type: ignore[assignment]

    with pytest.raises(TypeError, match=r"NotASection.eval_section must subclass EvalSection"):
        register_modality(NotASection())


def test_labels_of_random_noise_images_do_not_reach_the_loss() -> None:
    images = get_modality("digits")
    assert images.uses_labels(load_config("digits"))
    assert not images.uses_labels(load_config("digits", ["data.dataset=random"]))
    assert get_modality("latent").uses_labels(load_config("latent_classes"))


def test_pictures_are_the_images_of_image_data_only() -> None:
    pixels = torch.rand(4, 1, 8, 8)
    split = LabeledImages(pixels, torch.arange(4), ("a", "b", "c", "d"))
    got = get_modality("digits").pictures(load_config("digits"), split)
    assert got is not None and torch.equal(got, pixels)
    vectors = LabeledVectors(torch.rand(4, 3), torch.arange(4), ("a", "b", "c", "d"))
    assert get_modality("latent").pictures(load_config("latent_classes"), vectors) is None


@pytest.mark.parametrize(
    ("config", "columns"),
    [
        ("digits", ("linear_top1", "knn_top1", "knn_top5", "mean_top1")),
        ("latent_classes",
         ("linear_top1", "knn_top1", "knn_top5", "mean_top1", "mu_avg2", "mu_avg10", "mu5_top1")),
        ("graphs", ("svm_cv", "logistic_cv")),
        ("sentences", ("mr_acc", "cr_acc", "subj_acc", "mpqa_acc", "trec_acc", "msrp_acc")),
    ],
)
def test_each_modality_names_its_table_columns(config: str, columns: tuple[str, ...]) -> None:
    cfg = load_config(config)
    assert get_modality(cfg.data.dataset).table_metrics(cfg) == columns
