"""The Lightning data module of the training engine: a modality's batch dataset and the epoch sampler.

The dataset (``(x, x2, labels, indices)`` per list of indices) comes from the modality
(:mod:`hardneg.modalities.base`); batching, shuffling, sharding across processes and the
drop-last rule are :class:`~hardneg.data.batches.EpochBatchSampler`'s.
"""

from __future__ import annotations

import lightning as L
from torch import Tensor
from torch.utils.data import DataLoader, Dataset

from hardneg.data.batches import EpochBatchSampler

__all__ = ["ContrastiveDataModule"]


class ContrastiveDataModule(L.LightningDataModule):
    """Training batches for the contrastive module (evaluation data is handled after fit).

    Args:
        dataset: the modality's batch dataset, indexed by a list of indices →
            ``(x, x2, labels, indices)`` (see :mod:`hardneg.modalities.base`).
        batch_size: items per batch and process.
        seed: seed of the epoch permutations.
        drop_last: drop the last incomplete batch (SimCLR's fixed N = 2B − 2 negatives).
        num_workers: DataLoader workers (0 keeps everything in the main process; batches are
            one tensor indexing, so workers rarely pay off for in-memory data).
    """

    def __init__(
        self,
        *,
        dataset: Dataset[tuple[Tensor, Tensor, Tensor, Tensor]],
        batch_size: int,
        seed: int,
        drop_last: bool = True,
        num_workers: int = 0,
    ) -> None:
        super().__init__()
        self.dataset = dataset
        self.batch_size = batch_size
        self.seed = seed
        self.drop_last = drop_last
        self.num_workers = num_workers

    def train_dataloader(self) -> DataLoader:
        world, rank = 1, 0
        if self.trainer is not None:
            world, rank = self.trainer.world_size, self.trainer.global_rank
        # a dataset whose one index is a whole batch (contiguous windows of sentences) says so
        per_step = getattr(self.dataset, "items_per_step", None)
        sampler = EpochBatchSampler(
            num_items=len(self.dataset),  # type: ignore[arg-type]
            batch_size=per_step or self.batch_size,
            seed=self.seed,
            drop_last=self.drop_last,
            num_replicas=world,
            rank=rank,
        )
        return DataLoader(self.dataset, sampler=sampler, batch_size=None, num_workers=self.num_workers)
