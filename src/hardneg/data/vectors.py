"""The latent-class simulator as training data (``data.dataset: latent``).

Arora et al.'s data model (ICML 2019, §2; :class:`~hardneg.data.latent.LatentClassSimulator`):
a class c ∼ ρ, and a similar pair (x, x⁺) is two independent draws of 𝒟_c (eq. 1). The
training split is the first ``train_size`` items of the simulator's ``Dataset`` API — item i is
``(x_i, x⁺_i, c_i)``, deterministic given ``(seed, i)`` — materialised once, so every epoch and
every ``--resume`` sees the same pairs.

A training batch holds B pairs; the two views of a pair are the pair itself (augmentation is the
identity on vectors). The negatives of an anchor are the other views of the batch (2B − 2, or K
of them with ``loss.num_negatives``): their classes are i.i.d. draws of ρ (each drawn class
appears twice, once per view), so a negative shares the anchor's class with probability
Σ_c ρ_c² — collisions happen exactly as the theory assumes, and ``loss.collision_free`` (the
oracle) removes them using the latent labels.

With ``block_size = b`` each training item carries b positives instead of one — a block of b
points of its class (Arora et al., ICML 2019, §6.3, eq. (12)) — and a batch is a
:class:`LatentBatch` of anchors and blocks, for Arora et al.'s tuple layout (the latent
modality's own step): each anchor against its block, the negatives the other items' blocks.

Evaluation: the classifiers (linear, kNN, mean classifier, k-wise) are fitted on the first views
x_i with their classes c_i and scored on a separate labelled draw of ``test_size`` samples
(:meth:`~hardneg.data.latent.LatentClassSimulator.sample_labelled` from the generator
``numpy.random.default_rng([seed, 3])``, a stream the simulator does not use itself).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import torch
from torch import Tensor
from torch.utils.data import Dataset

from hardneg.data.images import LabeledImages
from hardneg.data.latent import LatentClassSimulator

__all__ = [
    "BatchedLatent",
    "BatchedPairs",
    "LabeledVectors",
    "LatentBatch",
    "Split",
    "load_latent_splits",
    "split_inputs",
]

# stream of numpy.random.default_rng([seed, _TEST_STREAM]) for the labelled test draw; the
# simulator itself uses default_rng(seed), [seed, 1] (means/topics) and [seed, 2, i] (item i)
_TEST_STREAM = 3


@dataclass(frozen=True)
class LabeledVectors:
    """Vectors, integer labels and class names of one split; the vector twin of ``LabeledImages``.

    Attributes:
        inputs: ``(N, D)`` float32.
        labels: ``(N,)`` int64.
        classes: class names; ``classes[labels[i]]`` names sample ``i``.
        positives: ``(N, D)`` float32, a true positive of each input (another sample of the
            same class), or ``(N, b, D)``, a block of b of them, or ``None`` (a test split).
    """

    inputs: Tensor
    labels: Tensor
    classes: tuple[str, ...]
    positives: Tensor | None = None

    def __post_init__(self) -> None:
        if self.inputs.ndim != 2:
            raise ValueError(f"inputs must have shape (N, D), got shape {tuple(self.inputs.shape)}")
        n = self.inputs.shape[0]
        if self.labels.shape != (n,):
            raise ValueError(f"labels must have shape (N,) = ({n},), got {tuple(self.labels.shape)}")
        if self.positives is not None:
            p, (n, d) = tuple(self.positives.shape), tuple(self.inputs.shape)
            if not (p == (n, d) or (len(p) == 3 and p[0] == n and p[2] == d and p[1] >= 1)):
                raise ValueError(
                    f"positives must have shape (N, D) = ({n}, {d}) or (N, b, D) = ({n}, b, {d}), got {p}"
                )

    def __len__(self) -> int:
        return int(self.inputs.shape[0])

    def head(self, n: int | None) -> LabeledVectors:
        """The first ``n`` samples (all when ``n`` is ``None`` or not smaller)."""
        if n is None or n >= len(self):
            return self
        pos = None if self.positives is None else self.positives[:n]
        return LabeledVectors(self.inputs[:n], self.labels[:n], self.classes, pos)


Split = LabeledImages | LabeledVectors
"""One split of the training pipeline's data: images, or vectors."""


def split_inputs(split: Split) -> Tensor:
    """The inputs of a split: images ``(N, C, H, W)`` or vectors ``(N, D)``."""
    return split.inputs if isinstance(split, LabeledVectors) else split.images


class BatchedPairs(Dataset[tuple[Tensor, Tensor, Tensor, Tensor]]):
    """Index with a list of indices → ``(inputs, positives, labels, indices)``.

    The batch layout of :class:`~hardneg.data.batches.BatchedImages`, for data whose positive
    pairs are given (the latent-class simulator's true pairs).

    Shapes: inputs, positives ``(B, D)`` float32; labels, indices ``(B,)`` int64.
    """

    def __init__(self, data: LabeledVectors) -> None:
        if data.positives is None:
            raise ValueError("BatchedPairs needs data with positives (a training split), got positives=None")
        self.inputs = data.inputs
        self.positives = data.positives
        self.labels = data.labels.long()

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    def __getitem__(self, indices: list[int]) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        idx = torch.as_tensor(indices, dtype=torch.long).reshape(-1)
        return self.inputs[idx], self.positives[idx], self.labels[idx], idx


class LatentBatch(NamedTuple):
    """The ``x`` of a latent-class batch: the anchors and their positives.

    ``positives`` ``(B, D)``: one positive per anchor, the two views of SimCLR's layout;
    ``(B, b, D)``: a block of b positives per anchor, Arora et al.'s tuple layout (ICML 2019,
    eq. (2); the block loss, eq. (12), for b > 1).
    """

    anchors: Tensor
    """(B, D)"""
    positives: Tensor
    """(B, D) or (B, b, D)"""


class BatchedLatent(Dataset[tuple[LatentBatch, Tensor, Tensor, Tensor]]):
    """Index with a list of indices → ``(LatentBatch(inputs, positives), positives, labels, indices)``.

    The batch of the latent modality's own step: ``x`` carries both the anchors and their
    positives (pairs ``(B, D)`` or blocks ``(B, b, D)``, as the split holds them).
    """

    def __init__(self, data: LabeledVectors) -> None:
        if data.positives is None:
            raise ValueError("BatchedLatent needs data with positives (a training split), got positives=None")
        self.inputs = data.inputs
        self.positives = data.positives
        self.labels = data.labels.long()

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    def __getitem__(self, indices: list[int]) -> tuple[LatentBatch, Tensor, Tensor, Tensor]:
        idx = torch.as_tensor(indices, dtype=torch.long).reshape(-1)
        positives = self.positives[idx]
        return LatentBatch(self.inputs[idx], positives), positives, self.labels[idx], idx


def load_latent_splits(
    *,
    num_classes: int,
    class_probs: Sequence[float] | None = None,
    kind: str = "gaussian",
    input_dim: int = 32,
    mean_scale: float = 1.0,
    noise_std: float = 1.0,
    vocab_size: int = 2000,
    topic_words: int = 20,
    doc_length: int = 40,
    background: float = 0.2,
    train_size: int = 4096,
    test_size: int = 1024,
    seed: int = 0,
    block_size: int | None = None,
) -> tuple[LabeledVectors, LabeledVectors]:
    """``(train, test)`` from one :class:`~hardneg.data.latent.LatentClassSimulator`.

    ``train``: items ``0 .. train_size − 1`` of the simulator's ``Dataset`` API, i.e. pairs
    ``(x, x⁺)`` of one class c ∼ ρ (``inputs``, ``positives``, ``labels`` = c). ``test``:
    ``test_size`` labelled samples x ∼ 𝒟_c, c ∼ ρ, independent of the training pairs. The
    simulator's arguments are passed through (see its docstring); ``input_dim`` is the
    dimension of ``gaussian`` data, ``vocab_size`` that of ``topics`` data. With
    ``block_size = b`` the positives are blocks ``(train_size, b, D)``
    (:meth:`~hardneg.data.latent.LatentClassSimulator.item_block`: the same anchors, and the
    first positive of each block is the pair's positive).

    Example:
        >>> train, test = load_latent_splits(num_classes=3, input_dim=4, train_size=6, test_size=5)
        >>> tuple(train.inputs.shape), tuple(train.positives.shape), tuple(test.inputs.shape)
        ((6, 4), (6, 4), (5, 4))
    """
    train, test = _latent_splits(
        num_classes=num_classes, class_probs=None if class_probs is None else tuple(class_probs), kind=kind,
        input_dim=input_dim, mean_scale=mean_scale, noise_std=noise_std, vocab_size=vocab_size,
        topic_words=topic_words, doc_length=doc_length, background=background, train_size=train_size,
        test_size=test_size, seed=seed, block_size=block_size,
    )
    # copies: a caller may change its split in place, never the cached one
    return (LabeledVectors(train.inputs.clone(), train.labels.clone(), train.classes,
                           None if train.positives is None else train.positives.clone()),
            LabeledVectors(test.inputs.clone(), test.labels.clone(), test.classes))


# A run's data is a pure function of its ``data.latent`` section (seeded): the runs of a comparison
# or a reproduction in one process (Ash et al.'s grid: 140 runs on two data sets) draw it once.
# Drawing is item by item (the simulator's Dataset API), about a second for 2 560 pairs.
@functools.lru_cache(maxsize=8)
def _latent_splits(
    *, num_classes: int, class_probs: tuple[float, ...] | None, kind: str, input_dim: int, mean_scale: float,
    noise_std: float, vocab_size: int, topic_words: int, doc_length: int, background: float, train_size: int,
    test_size: int, seed: int, block_size: int | None,
) -> tuple[LabeledVectors, LabeledVectors]:
    sim = LatentClassSimulator(
        num_classes=num_classes, input_dim=input_dim, kind=kind,
        class_probs=None if class_probs is None else list(class_probs), mean_scale=mean_scale,
        noise_std=noise_std, vocab_size=vocab_size, topic_words=topic_words, doc_length=doc_length,
        background=background, length=train_size, seed=seed,
    )
    items = [sim.item_block(i, block_size or 1) for i in range(len(sim))]
    x = torch.stack([item[0] for item in items])
    x_pos = torch.stack([item[1] for item in items])
    if block_size is None:
        x_pos = x_pos[:, 0]  # pairs: (N, D)
    y = torch.tensor([item[2] for item in items], dtype=torch.long)
    x_test, y_test = sim.sample_labelled(test_size, rng=np.random.default_rng([seed, _TEST_STREAM]))
    classes = tuple(str(c) for c in range(num_classes))
    return (LabeledVectors(x, y, classes, x_pos),
            LabeledVectors(x_test.float(), y_test.long(), classes))
