"""The validity mask of a batch as a rule, evaluated one tile at a time.

The tiled engine never holds the (A, N) mask: each tile's block is made from O(A + N) state —
per-anchor excluded candidate indices (the anchor itself and its positive in SimCLR's layout,
with a rank offset when candidates are gathered), labels (collision-free negatives), and the
per-anchor key thresholds of K-subsampling (counter-based keys, identical to the materialised
path's). An explicit (A, N) mask may still be given (1 byte per entry).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch
from torch import Tensor

from hardneg.negatives.keys import counter_keys
from hardneg.scores import same_label

__all__ = ["TileMask"]


@dataclass(frozen=True)
class TileMask:
    """Which candidates are valid negatives of which anchor, block by block.

    Attributes:
        num_anchors, num_candidates: A and N.
        excluded: (A, E) int64 candidate indices that are never negatives of the anchor
            (−1 = no exclusion), e.g. ``[i, (i + B) mod 2B]`` in SimCLR's layout.
        explicit: optional (A, N) bool mask (True = valid), ANDed with the rest.
        anchor_labels, candidate_labels: labels for collision-free negatives (``< 0`` unknown).
        collision_free: drop same-label candidates (needs labels).
        subsample_seed, subsample_threshold: K-subsampling: keep the candidates whose
            counter-based key ``key(seed, i, j)`` is ≥ the anchor's threshold (A,) int64.
    """

    num_anchors: int
    num_candidates: int
    excluded: Tensor
    explicit: Tensor | None = None
    anchor_labels: Tensor | None = None
    candidate_labels: Tensor | None = None
    collision_free: bool = False
    subsample_seed: int | None = None
    subsample_threshold: Tensor | None = None

    def base_block(self, r0: int, r1: int, c0: int, c1: int) -> Tensor:
        """The mask before K-subsampling on anchors ``r0:r1`` × candidates ``c0:c1`` (bool)."""
        device = self.excluded.device
        block = torch.ones(r1 - r0, c1 - c0, dtype=torch.bool, device=device)
        rows, cols = self._excluded_in(r0, r1, c0, c1)
        block[rows, cols] = False  # a few entries per row, not an (R, E, C) comparison
        if self.explicit is not None:
            block &= self.explicit[r0:r1, c0:c1].to(device)
        if self.collision_free:
            assert self.anchor_labels is not None and self.candidate_labels is not None
            block &= ~same_label(self.anchor_labels[r0:r1], self.candidate_labels[c0:c1])
        return block

    def keys_block(self, r0: int, r1: int, c0: int, c1: int) -> Tensor:
        """Counter-based keys of the block (int64), as :func:`~hardneg.negatives.subsample_mask` has them."""
        assert self.subsample_seed is not None
        device = self.excluded.device
        return counter_keys(
            self.subsample_seed, torch.arange(r0, r1, device=device), torch.arange(c0, c1, device=device)
        )

    def block(self, r0: int, r1: int, c0: int, c1: int) -> Tensor:
        """The validity mask of anchors ``r0:r1`` × candidates ``c0:c1`` (bool)."""
        block = self.base_block(r0, r1, c0, c1)
        if self.subsample_threshold is not None:
            block &= self.keys_block(r0, r1, c0, c1) >= self.subsample_threshold[r0:r1, None]
        return block

    @property
    def exclusions_only(self) -> bool:
        """Whether only the per-anchor excluded indices restrict the mask (the common case)."""
        return self.explicit is None and not self.collision_free and self.subsample_threshold is None

    def _excluded_in(self, r0: int, r1: int, c0: int, c1: int) -> tuple[Tensor, Tensor]:
        """Block-relative ``(rows, cols)`` of the excluded entries that fall in the block."""
        ex = self.excluded[r0:r1]
        rows, slot = torch.nonzero((ex >= c0) & (ex < c1), as_tuple=True)
        return rows, ex[rows, slot] - c0

    def fill_invalid_(self, s: Tensor, r0: int, r1: int, c0: int, c1: int) -> Tensor:
        """Set the invalid entries of the logits block ``s`` to −inf in place; return the per-row
        valid counts (r1 − r0,) int64. With exclusions only, just the few excluded entries are
        touched (no tile-sized mask is made)."""
        if self.exclusions_only:
            rows, cols = self._excluded_in(r0, r1, c0, c1)
            s[rows, cols] = float("-inf")
            return (c1 - c0) - torch.bincount(rows, minlength=r1 - r0)
        valid = self.block(r0, r1, c0, c1)
        s.masked_fill_(~valid, float("-inf"))
        return valid.sum(dim=1)

    def count_valid(self, r0: int, r1: int, c0: int, c1: int) -> Tensor:
        """Per-row valid counts (r1 − r0,) int64 of the block, as :meth:`fill_invalid_` returns them."""
        if self.exclusions_only:
            ex = self.excluded[r0:r1]
            return (c1 - c0) - ((ex >= c0) & (ex < c1)).sum(dim=1)
        return self.block(r0, r1, c0, c1).sum(dim=1)

    @property
    def symmetric_labels(self) -> bool:
        """Whether the labels (if any) read the same for anchors and candidates; with symmetric
        exclusions and no explicit mask or K-subsampling, the mask is then symmetric."""
        if not self.collision_free:
            return True
        a, c = self.anchor_labels, self.candidate_labels
        return a is not None and c is not None and a.shape == c.shape and bool(torch.equal(a, c))

    def with_subsample(self, seed: int, num_negatives: int, tile: int) -> TileMask:
        """This rule K-subsampled: each anchor's K largest keys among its valid candidates.

        The per-anchor threshold (the K-th largest valid key) is found by streaming the
        candidate tiles through a running top-K (O(A·K) memory), so the kept set equals
        :func:`~hardneg.negatives.subsample_mask` with the same seed.
        """
        rule = replace(self, subsample_seed=seed, subsample_threshold=None)
        a, n = self.num_anchors, self.num_candidates
        device = self.excluded.device
        thresholds = torch.empty(a, dtype=torch.int64, device=device)
        for r0 in range(0, a, tile):
            r1 = min(a, r0 + tile)
            best = torch.full((r1 - r0, 0), -1, dtype=torch.int64, device=device)
            for c0 in range(0, n, tile):
                c1 = min(n, c0 + tile)
                keys = rule.keys_block(r0, r1, c0, c1).masked_fill_(~rule.base_block(r0, r1, c0, c1), -1)
                merged = torch.cat([best, keys], dim=1)
                best = merged.topk(min(num_negatives, merged.shape[1]), dim=1).values
            if best.shape[1] < num_negatives or bool((best[:, -1] < 0).any()):
                have = int((best >= 0).sum(dim=1).min())
                raise ValueError(
                    "num_negatives must be <= the number of valid candidates of every anchor "
                    f"(here min_i N_i = {have} of {n} candidates), got num_negatives={num_negatives}"
                )
            thresholds[r0:r1] = best[:, -1]
        return replace(rule, subsample_threshold=thresholds)
