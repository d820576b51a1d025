"""Epoch-seeded batch sampler and batched images with oracle partners."""

from __future__ import annotations

import pytest
import torch

from hardneg.data.batches import BatchedImages, EpochBatchSampler
from hardneg.data.images import LabeledImages
from hardneg.seeding import mix_seed


def _batches(sampler, epoch):
    sampler.set_epoch(epoch)
    return list(sampler)


def test_same_seed_and_epoch_give_the_same_batches_other_epochs_differ():
    a = EpochBatchSampler(num_items=100, batch_size=16, seed=3)
    b = EpochBatchSampler(num_items=100, batch_size=16, seed=3)
    assert _batches(a, 2) == _batches(b, 2)
    assert _batches(a, 2) != _batches(a, 3)
    assert _batches(a, 2) != _batches(EpochBatchSampler(num_items=100, batch_size=16, seed=4), 2)


def test_drop_last_gives_full_batches_of_distinct_indices():
    s = EpochBatchSampler(num_items=100, batch_size=16, seed=0)
    batches = _batches(s, 0)
    assert len(batches) == len(s) == 6
    flat = [i for b in batches for i in b]
    assert all(len(b) == 16 for b in batches) and len(set(flat)) == len(flat) == 96


def test_ranks_partition_the_epoch():
    shards = [_batches(EpochBatchSampler(num_items=64, batch_size=8, seed=1, num_replicas=2, rank=r), 5)
              for r in (0, 1)]
    flat = [i for shard in shards for b in shard for i in b]
    assert sorted(flat) == list(range(64))


def test_batch_larger_than_data_is_a_clear_error():
    with pytest.raises(ValueError, match=r"train.batch_size=512 is larger than the 100 training items"):
        EpochBatchSampler(num_items=100, batch_size=512, seed=0)


def test_oracle_partners_share_the_class_and_are_other_images():
    labels = torch.tensor([0, 0, 0, 1, 1, 2, 3, 3, 3, 3])
    images = torch.arange(10, dtype=torch.float32).view(10, 1, 1, 1).expand(10, 1, 2, 2).contiguous() / 10
    ds = BatchedImages(LabeledImages(images, labels, tuple("abcd")), oracle_positive=True, seed=0)
    _x, x2, _y, idx = ds[list(range(10))]
    partners = (x2[:, 0, 0, 0] * 10).round().long()
    assert torch.equal(labels[partners], labels)
    alone = labels == 2
    assert torch.equal(partners[alone], idx[alone])  # a class of one is its own partner
    assert bool((partners[~alone] != idx[~alone]).all())
    # deterministic given the batch
    assert torch.equal(ds[list(range(10))][1], x2)


def test_without_oracle_both_views_are_the_same_images():
    images = torch.rand(6, 1, 4, 4)
    ds = BatchedImages(LabeledImages(images, torch.arange(6), tuple("abcdef")))
    x, x2, _y, idx = ds[[4, 1]]
    assert torch.equal(x, images[[4, 1]]) and torch.equal(x2, x) and idx.tolist() == [4, 1]


def test_mix_seed_is_deterministic_and_sensitive():
    assert mix_seed(1, 2, 3) == mix_seed(1, 2, 3)
    assert len({mix_seed(0, e, b) for e in range(10) for b in range(10)}) == 100
