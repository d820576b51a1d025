"""Batched index datasets and the epoch-seeded batch sampler of every modality.

Reproducibility contract (what makes ``--resume`` end where an uninterrupted run ends):

* the order of epoch ``e`` is a permutation drawn from a generator seeded by ``(seed, e)``
  (:class:`EpochBatchSampler`), so restarting at epoch ``e`` replays the same batches; it is also
  the one place where the last incomplete batch is dropped or kept (``drop_last``);
* the same-class partner of each item (oracle positives, sentences of one article) is drawn from
  a generator seeded by the batch's own indices (:class:`SameClassPartners`), so it does not
  depend on how many batches came before.

The drop-last rule lives here alone: with ``drop_last`` the last incomplete batch is dropped
(SimCLR's fixed N = 2B − 2 negatives); without it the last batch is kept unless it holds a single
item, which has no negatives.

Batches are fetched with one tensor indexing per batch (the sampler yields whole batches and
the dataset indexes with a list), not item by item.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import torch
from torch import Tensor
from torch.utils.data import Dataset, Sampler

from hardneg.data.images import LabeledImages, to_float_images
from hardneg.seeding import mix_seed

__all__ = ["BatchedImages", "EpochBatchSampler", "SameClassPartners"]


class EpochBatchSampler(Sampler[list[int]]):
    """Shuffled batches of indices, reshuffled per epoch from ``(seed, epoch)``, sharded by rank.

    Like ``DistributedSampler`` + ``BatchSampler``: the permutation is padded (or truncated with
    ``drop_last``) to a multiple of ``num_replicas``, rank ``r`` takes every ``num_replicas``-th
    index from ``r``, then consecutive batches of ``batch_size``. Lightning calls
    :meth:`set_epoch` at each epoch start.
    """

    def __init__(
        self,
        *,
        num_items: int,
        batch_size: int,
        seed: int,
        drop_last: bool = True,
        shuffle: bool = True,
        num_replicas: int = 1,
        rank: int = 0,
    ) -> None:
        if num_items < 1 or batch_size < 1:
            raise ValueError(f"num_items and batch_size must be >= 1, got {num_items} and {batch_size}")
        if not 0 <= rank < num_replicas:
            raise ValueError(f"rank must be in [0, {num_replicas}), got {rank}")
        self.num_items = num_items
        self.batch_size = batch_size
        self.seed = seed
        self.drop_last = drop_last
        self.shuffle = shuffle
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        per_rank = num_items // num_replicas if drop_last else math.ceil(num_items / num_replicas)
        self._per_rank = per_rank
        if drop_last and per_rank < batch_size:
            raise ValueError(
                f"train.batch_size={batch_size} is larger than the {per_rank} training items per "
                f"process; lower train.batch_size or set train.drop_last=false"
            )

    def set_epoch(self, epoch: int) -> None:
        """Select the permutation of ``epoch``."""
        self.epoch = int(epoch)

    def __len__(self) -> int:
        if self.drop_last or self._per_rank % self.batch_size == 1:
            return self._per_rank // self.batch_size
        return math.ceil(self._per_rank / self.batch_size)

    def __iter__(self) -> Iterator[list[int]]:
        if self.shuffle:
            g = torch.Generator().manual_seed(mix_seed(self.seed, self.epoch, 0x5A))
            order = torch.randperm(self.num_items, generator=g)
        else:
            order = torch.arange(self.num_items)
        total = self._per_rank * self.num_replicas
        if total > self.num_items:  # pad by wrapping around
            order = torch.cat([order, order[: total - self.num_items]])
        shard = order[:total][self.rank :: self.num_replicas].tolist()
        for start in range(0, len(shard), self.batch_size):
            batch = shard[start : start + self.batch_size]
            if len(batch) < self.batch_size and (self.drop_last or len(batch) == 1):
                return  # dropped; a last batch of one item (no negatives) always is
            yield batch


class SameClassPartners:
    """For each index, another item of its class (true positives), drawn reproducibly per batch.

    The partner of each index is drawn from a generator seeded by ``(seed, the batch's first
    indices, its length)``, so it does not depend on how many batches came before; an item alone
    in its class, or unlabelled (label < 0), is its own partner. Used by oracle positives of
    images and by the sentence-of-the-same-article positives of text.
    """

    def __init__(self, labels: Tensor, *, seed: int) -> None:
        self.labels = labels.long()
        self.seed = int(seed)
        self._members: dict[int, Tensor] = {}
        self._position = torch.zeros(len(self.labels), dtype=torch.long)
        for value in torch.unique(self.labels).tolist():
            if value >= 0:
                members = torch.nonzero(self.labels == value).flatten()
                self._members[value] = members
                self._position[members] = torch.arange(members.numel())

    def __call__(self, indices: Tensor) -> Tensor:
        """Same-class partner index of each index, shape of ``indices``."""
        g = torch.Generator().manual_seed(mix_seed(self.seed, 0x0AC1E, *indices[:8].tolist(), len(indices)))
        out = indices.clone()
        offsets = torch.rand(len(indices), generator=g, dtype=torch.float64)
        for i, idx in enumerate(indices.tolist()):
            members = self._members.get(int(self.labels[idx]))
            if members is None or members.numel() < 2:
                continue
            m = members.numel()
            step = 1 + int(offsets[i] * (m - 1))  # uniform in 1..m-1: never the item itself
            out[i] = members[(int(self._position[idx]) + step) % m]
        return out


class BatchedImages(Dataset[tuple[Tensor, Tensor, Tensor, Tensor]]):
    """Index with a list of indices → ``(images, partner_images, labels, indices)``.

    ``partner_images`` are the same images, or with ``oracle_positive`` another image of the
    same class for each one (true positives, :class:`SameClassPartners`). Images stay in their
    stored dtype until indexed (uint8 CIFAR stays compact).

    Shapes: images ``(B, C, H, W)`` float32 in [0, 1]; labels, indices ``(B,)`` int64.
    """

    def __init__(self, data: LabeledImages, *, oracle_positive: bool = False, seed: int = 0) -> None:
        self.images = data.images
        self.labels = data.labels.long()
        self.oracle_positive = bool(oracle_positive)
        self.seed = int(seed)
        self._partners = SameClassPartners(self.labels, seed=seed) if self.oracle_positive else None

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    def partners(self, indices: Tensor) -> Tensor:
        """Same-class partner index of each index (seeded by the batch's indices)."""
        return indices if self._partners is None else self._partners(indices)

    def __getitem__(self, indices: list[int]) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        idx = torch.as_tensor(indices, dtype=torch.long).reshape(-1)
        x = to_float_images(self.images[idx])
        partner = self.partners(idx)
        x2 = x if not self.oracle_positive else to_float_images(self.images[partner])
        return x, x2, self.labels[idx], idx
