"""Latent-class simulator: the data model of Arora et al. (ICML 2019 §2) made concrete.

Classes c ∼ ρ; each class is a distribution 𝒟_c over inputs. Similar pairs (x, x⁺) come from
one class (eq. 1); negatives come from the marginal 𝒟_neg = E_{c∼ρ}𝒟_c (eq. 2), so collisions
happen exactly as the theory assumes (probability τ_K, docs/theory.md).

Two families of 𝒟_c:
* ``kind="gaussian"``: x = μ_c + σ·ε in ℝ^D, μ_c ∼ N(0, s²I_D) drawn once from the seed;
* ``kind="topics"``: Wiki-3029-like bag of words — class c has a sparse topic over a vocabulary
  (``topic_words`` words with Dirichlet(1) weights); a document draws ``doc_length`` words from
  (1−λ)·topic_c + λ·uniform and is represented by its l2-normalised count vector.

Usable as a map-style ``torch.utils.data.Dataset`` yielding ``(view1, view2, label)``: two
independent samples of the same class (true positives); item i is deterministic given
(seed, i).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray
from torch.utils.data import Dataset

from hardneg.theory.arguments import check_int, check_real, resolve_probs
from hardneg.theory.collisions import collision_probability

__all__ = ["BlockBatch", "LatentClassSimulator", "TupleBatch"]


@dataclass(frozen=True)
class TupleBatch:
    """(anchor, positive, K negatives) tuples with their latent classes."""

    anchor: torch.Tensor
    """(n, D)"""
    positive: torch.Tensor
    """(n, D)"""
    negatives: torch.Tensor
    """(n, K, D)"""
    anchor_class: torch.Tensor
    """(n,) int64"""
    negative_classes: torch.Tensor
    """(n, K) int64"""


@dataclass(frozen=True)
class BlockBatch:
    """Arora's block loss inputs (eq. 12): x, b positives from c⁺, b negatives from c⁻."""

    anchor: torch.Tensor
    """(n, D)"""
    positives: torch.Tensor
    """(n, b, D)"""
    negatives: torch.Tensor
    """(n, b, D)"""
    positive_class: torch.Tensor
    negative_class: torch.Tensor


class LatentClassSimulator(Dataset[tuple[torch.Tensor, torch.Tensor, int]]):
    """Latent-class data with a known prior ρ (see module docstring).

    Keyword-only constructor. ``length`` is the nominal size seen by the ``Dataset`` API
    (samples are generated on the fly). All streaming ``sample_*`` methods draw from an
    internal ``numpy.random.Generator`` seeded with ``seed`` (or from ``rng`` when given).
    """

    def __init__(
        self,
        *,
        num_classes: int,
        input_dim: int = 32,
        kind: str = "gaussian",
        class_probs: Sequence[float] | NDArray[np.floating] | None = None,
        mean_scale: float = 1.0,
        noise_std: float = 1.0,
        vocab_size: int = 2000,
        topic_words: int = 20,
        doc_length: int = 40,
        background: float = 0.2,
        length: int = 10_000,
        seed: int = 0,
    ) -> None:
        self.num_classes = check_int("num_classes", num_classes, 1)
        if kind not in ("gaussian", "topics"):
            raise ValueError(f"kind must be 'gaussian' or 'topics', got {kind!r}")
        self.kind = kind
        self.class_probs = resolve_probs(self.num_classes, class_probs)
        self.length = check_int("length", length, 1)
        self.seed = check_int("seed", seed, 0)
        self.noise_std = check_real("noise_std", noise_std, low=0.0)
        self.rng = np.random.default_rng(self.seed)
        init = np.random.default_rng([self.seed, 1])
        if kind == "gaussian":
            self.input_dim = check_int("input_dim", input_dim, 1)
            scale = check_real("mean_scale", mean_scale, low=0.0)
            self.means = init.normal(size=(self.num_classes, self.input_dim)) * scale
        else:
            self.input_dim = check_int("vocab_size", vocab_size, 2)
            tw = check_int("topic_words", topic_words, 1)
            if tw > self.input_dim:
                raise ValueError(f"topic_words must be <= vocab_size = {self.input_dim}, got {tw}")
            self.doc_length = check_int("doc_length", doc_length, 1)
            self.background = check_real("background", background, low=0.0, high=1.0)
            topics = np.zeros((self.num_classes, self.input_dim))
            for c in range(self.num_classes):
                words = init.choice(self.input_dim, size=tw, replace=False)
                topics[c, words] = init.dirichlet(np.ones(tw))
            self.topics = (1 - self.background) * topics + self.background / self.input_dim
            self.topic_cdf = np.cumsum(self.topics, axis=1)
            self.topic_cdf[:, -1] = 1.0

    # ------------------------------------------------------------------ primitives
    def sample_classes(self, n: int, rng: np.random.Generator | None = None) -> NDArray[np.int64]:
        """n i.i.d. classes from ρ."""
        g = self.rng if rng is None else rng
        return np.asarray(g.choice(self.num_classes, size=n, p=self.class_probs), dtype=np.int64)

    def sample_inputs(
        self, classes: NDArray[np.int64], rng: np.random.Generator | None = None
    ) -> NDArray[np.float32]:
        """One input x ∼ 𝒟_c per entry of ``classes`` (any shape); returns shape + (D,)."""
        g = self.rng if rng is None else rng
        flat = np.asarray(classes, dtype=np.int64).reshape(-1)
        if self.kind == "gaussian":
            x = self.means[flat] + self.noise_std * g.normal(size=(flat.size, self.input_dim))
        else:
            u = g.random(size=(flat.size, self.doc_length))
            x = np.zeros((flat.size, self.input_dim))
            for i, c in enumerate(flat):
                words = np.searchsorted(self.topic_cdf[c], u[i], side="right")
                np.add.at(x[i], np.minimum(words, self.input_dim - 1), 1.0)
            x /= np.linalg.norm(x, axis=1, keepdims=True)
        return x.reshape(*np.shape(classes), self.input_dim).astype(np.float32)

    def _other_classes(self, anchor: NDArray[np.int64], k: int, g: np.random.Generator
                       ) -> NDArray[np.int64]:
        """K classes per row from ρ conditioned on ≠ anchor class (rejection sampling)."""
        neg = self.sample_classes(anchor.size * k, g).reshape(anchor.size, k)
        bad = neg == anchor[:, None]
        if np.any(bad) and np.all(self.class_probs[np.unique(anchor)] >= 1.0):
            raise ValueError("collision-free negatives need >= 2 classes with positive mass")
        while np.any(bad):
            neg[bad] = self.sample_classes(int(bad.sum()), g)
            bad = neg == anchor[:, None]
        return neg

    # ------------------------------------------------------------------ batches
    def sample_tuples(
        self,
        n: int,
        num_negatives: int,
        collision_free: bool = False,
        rng: np.random.Generator | None = None,
    ) -> TupleBatch:
        """n tuples (x, x⁺, x⁻_1..x⁻_K): (x, x⁺) ∼ 𝒟_sim (eq. 1), x⁻_i ∼ 𝒟_neg i.i.d. (eq. 2).

        ``collision_free=True`` resamples every negative whose class equals the anchor's, i.e.
        negatives from ρ conditioned on c⁻ ≠ c⁺ (the "collision-free" variant of Ash et al.).
        """
        g = self.rng if rng is None else rng
        nn = check_int("n", n, 1)
        k = check_int("num_negatives", num_negatives, 0)
        c = self.sample_classes(nn, g)
        if collision_free:
            if self.num_classes < 2:
                raise ValueError(
                    "num_classes must be >= 2 for collision-free negatives, "
                    f"got {self.num_classes}"
                )
            cn = self._other_classes(c, k, g)
        else:
            cn = self.sample_classes(nn * k, g).reshape(nn, k)
        return TupleBatch(
            anchor=torch.from_numpy(self.sample_inputs(c, g)),
            positive=torch.from_numpy(self.sample_inputs(c, g)),
            negatives=torch.from_numpy(self.sample_inputs(cn, g)).reshape(nn, k, self.input_dim),
            anchor_class=torch.from_numpy(c),
            negative_classes=torch.from_numpy(cn),
        )

    def sample_blocks(
        self, n: int, block_size: int, rng: np.random.Generator | None = None
    ) -> BlockBatch:
        """n blocks for Arora's block loss (eq. 12): c⁺, c⁻ ∼ ρ i.i.d.; x, x⁺_1..x⁺_b ∼ 𝒟_{c⁺};
        x⁻_1..x⁻_b ∼ 𝒟_{c⁻}."""
        g = self.rng if rng is None else rng
        nn = check_int("n", n, 1)
        b = check_int("block_size", block_size, 1)
        cp = self.sample_classes(nn, g)
        cm = self.sample_classes(nn, g)
        return BlockBatch(
            anchor=torch.from_numpy(self.sample_inputs(cp, g)),
            positives=torch.from_numpy(self.sample_inputs(np.repeat(cp[:, None], b, 1), g)),
            negatives=torch.from_numpy(self.sample_inputs(np.repeat(cm[:, None], b, 1), g)),
            positive_class=torch.from_numpy(cp),
            negative_class=torch.from_numpy(cm),
        )

    def sample_labelled(
        self, n: int, rng: np.random.Generator | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """n labelled samples (x, c), c ∼ ρ, x ∼ 𝒟_c — for evaluation / mean classifiers."""
        g = self.rng if rng is None else rng
        nn = check_int("n", n, 1)
        c = self.sample_classes(nn, g)
        return torch.from_numpy(self.sample_inputs(c, g)), torch.from_numpy(c)

    def collision_probability(self, num_negatives: int) -> float:
        """τ_K of this simulator's prior (see :func:`hardneg.theory.collision_probability`)."""
        return collision_probability(None, num_negatives, self.class_probs)

    # ------------------------------------------------------------------ Dataset API
    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor, int]:
        """(view1, view2, label): two independent samples of one class c ∼ ρ (true positives)."""
        x, positives, c = self.item_block(index, 1)
        return x, positives[0], c

    def item_block(self, index: int, block_size: int) -> tuple[torch.Tensor, torch.Tensor, int]:
        """Item ``index`` with ``block_size`` positives: ``(x (D,), x⁺_1..x⁺_b (b, D), c)``.

        All b + 1 points are independent draws of 𝒟_c, c ∼ ρ (Arora et al.'s block, ICML 2019,
        §6.3, eq. (12)), deterministic given ``(seed, index)``. The draws are sequential, so
        ``x`` and ``x⁺_1`` are item ``index``'s two views and a larger block only adds points.
        """
        if not 0 <= index < self.length:
            raise IndexError(f"index must be in [0, {self.length}), got {index}")
        b = check_int("block_size", block_size, 1)
        g = np.random.default_rng([self.seed, 2, int(index)])
        c = self.sample_classes(1, g)
        x = torch.from_numpy(self.sample_inputs(np.repeat(c, 1 + b), g))
        return x[0], x[1:], int(c[0])

    def __repr__(self) -> str:
        return (
            f"LatentClassSimulator(kind={self.kind!r}, num_classes={self.num_classes}, "
            f"input_dim={self.input_dim}, seed={self.seed})"
        )

    def describe(self) -> dict[str, Any]:
        """Plain-dict summary (for logs / configs)."""
        return {
            "kind": self.kind,
            "num_classes": self.num_classes,
            "input_dim": self.input_dim,
            "seed": self.seed,
            "class_probs_uniform": bool(np.allclose(self.class_probs, 1 / self.num_classes)),
        }
