"""The pipeline's one seed mixer: every random stream is seeded from a tuple of integers.

``(seed, epoch)`` orders an epoch, ``(seed, epoch, batch, rank)`` seeds a training step's
augmentations and the loss's randomness (K-subsampling), so a resumed run replays the same
streams and results do not depend on how many batches came before.
"""

from __future__ import annotations

import torch

__all__ = ["mix_seed", "step_generator"]

_MASK64 = (1 << 64) - 1


def mix_seed(*values: int) -> int:
    """A 63-bit seed mixing integers (splitmix64's finaliser; deterministic across runs).

    >>> mix_seed(1, 2, 3) == mix_seed(1, 2, 3), mix_seed(1, 2, 3) == mix_seed(1, 3, 2)
    (True, False)
    """
    z = 0x9E3779B97F4A7C15
    for v in values:
        z = (z ^ (int(v) & _MASK64)) * 0xBF58476D1CE4E5B9 & _MASK64
        z ^= z >> 31
        z = z * 0x94D049BB133111EB & _MASK64
        z ^= z >> 29
    return z & ((1 << 63) - 1)


def step_generator(seed: int, epoch: int, batch: int, rank: int = 0) -> torch.Generator:
    """The CPU generator of one training step, seeded by ``(seed, epoch, batch, rank)``."""
    return torch.Generator().manual_seed(mix_seed(seed, epoch, batch, rank))
