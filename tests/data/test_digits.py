"""Digits loader and the two-view dataset (augmentation and oracle positives)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.datasets import load_digits

from hardneg.data import (
    LabeledImages,
    load_digits_images,
    load_digits_split,
)


def test_digits_values_match_sklearn() -> None:
    d = load_digits_images()
    ref = load_digits()
    assert d.images.shape == (1797, 1, 8, 8) and d.images.dtype == torch.float32
    np.testing.assert_allclose(d.images[:, 0].numpy() * 16.0, ref.images, atol=1e-5)
    assert d.labels.tolist() == ref.target.tolist()
    assert float(d.images.min()) == 0.0 and float(d.images.max()) == 1.0


def test_digits_split_is_deterministic_stratified_and_disjoint() -> None:
    train, test = load_digits_split(test_fraction=0.25, seed=3)
    train2, test2 = load_digits_split(test_fraction=0.25, seed=3)
    assert torch.equal(train.images, train2.images) and torch.equal(test.labels, test2.labels)
    _, other = load_digits_split(test_fraction=0.25, seed=4)
    assert not torch.equal(test.images, other.images)
    assert len(train) + len(test) == 1797
    counts = torch.bincount(test.labels, minlength=10).float()
    full = torch.bincount(load_digits_images().labels, minlength=10).float()
    assert torch.all((counts - 0.25 * full).abs() <= 1.0)  # stratified up to rounding
    both = torch.bincount(train.labels, minlength=10) + torch.bincount(test.labels, minlength=10)
    assert torch.equal(both.float(), full)

    # the union of the two splits is the whole data set (multiset of image+label rows)
    def rows(d: LabeledImages) -> list[tuple[float, ...]]:
        table = torch.cat([d.images.flatten(1) * 16, d.labels[:, None].float()], 1)
        return sorted(map(tuple, table.tolist()))

    merged = LabeledImages(
        torch.cat([train.images, test.images]), torch.cat([train.labels, test.labels]), train.classes
    )
    assert rows(merged) == rows(load_digits_images())


def test_digits_split_rejects_bad_fraction() -> None:
    with pytest.raises(ValueError, match=r"test_fraction must be in \(0, 1\), got 1.5"):
        load_digits_split(test_fraction=1.5)
