"""The validity mask of a batch as a rule, evaluated one tile at a time.

The tiled engine never holds the (A, N) mask: each tile's block is made from O(A + N) state —
per-anchor excluded candidate indices (the anchor itself and its positive in SimCLR's layout,
with a rank offset when candidates are gathered), labels (collision-free negatives), and the
(A, K) indices of K-subsampling (drawn by :mod:`hardneg.negatives.draw` without the mask,
identical to the materialised path's). An explicit (A, N) mask may still be given (1 byte per
entry).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import torch
from torch import Tensor

from hardneg.negatives.draw import (
    LabelRanks,
    check_available,
    draw_ranks,
    excluded_counts,
    excluded_index,
    mask_index,
)
from hardneg.scores import count_valid, same_label

__all__ = ["TileMask"]


@dataclass(frozen=True)
class TileMask:
    """Which candidates are valid negatives of which anchor, block by block.

    Args:
        num_anchors: A.
        num_candidates: N.
        excluded: candidate indices that are never negatives of the anchor (−1 = no exclusion),
            e.g. ``[i, (i + B) mod 2B]`` in SimCLR's layout.
        explicit: optional bool mask (True = valid), ANDed with the rest.
        anchor_labels: labels of the anchors for collision-free negatives (``< 0`` unknown).
        candidate_labels: labels of the candidates (``< 0`` unknown).
        collision_free: drop same-label candidates (needs labels).
        subsample_index: K-subsampling: the indices of each anchor's K drawn candidates
            (:meth:`with_subsample`); only they are valid.

    Shapes:
        ``excluded`` (A, E) int64; ``explicit`` (A, N) bool; ``anchor_labels`` (A,),
        ``candidate_labels`` (N,); ``subsample_index`` (A, K) int64; :meth:`block` returns
        (r1 − r0, c1 − c0) bool and :meth:`count_valid` (r1 − r0,).

    References:
        Chen, Kornblith, Norouzi and Hinton, ICML 2020, eq. (1) (the 2B − 2 negatives of SimCLR's
        layout); Cheng et al., "Breaking the Memory Barrier: Near Infinite Batch Size Scaling for
        Contrastive Loss" (Inf-CL), arXiv:2410.17243, 2024, §3 (the loss computed tile by tile).

    Example:
        >>> i = torch.arange(4)
        >>> rule = TileMask(4, 4, excluded=torch.stack([i, (i + 2) % 4], dim=1))  # SimCLR, B = 2
        >>> rule.block(0, 4, 0, 4).sum(dim=1).tolist()
        [2, 2, 2, 2]
        >>> rule.block(0, 2, 0, 4).tolist()[0]     # anchor 0: not itself, not its positive 2
        [False, True, False, True]
    """

    num_anchors: int
    num_candidates: int
    excluded: Tensor
    explicit: Tensor | None = None
    anchor_labels: Tensor | None = None
    candidate_labels: Tensor | None = None
    collision_free: bool = False
    subsample_index: Tensor | None = None

    def __post_init__(self) -> None:
        if self.collision_free and (self.anchor_labels is None or self.candidate_labels is None):
            raise ValueError(
                "CollisionFree negatives need labels: anchor_labels and candidate_labels, got None"
            )

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

    def block(self, r0: int, r1: int, c0: int, c1: int) -> Tensor:
        """The validity mask of anchors ``r0:r1`` × candidates ``c0:c1`` (bool)."""
        if self.subsample_index is not None:
            return self._drawn_block(r0, r1, c0, c1)
        return self.base_block(r0, r1, c0, c1)

    def _drawn_block(self, r0: int, r1: int, c0: int, c1: int) -> Tensor:
        """The drawn candidates of the block, O(rows·K): a scatter of the indices into a
        (rows, cols + 1) buffer whose last column absorbs the indices outside ``[c0, c1)``."""
        assert self.subsample_index is not None
        idx = self.subsample_index[r0:r1]
        inside = (idx >= c0) & (idx < c1)
        cols = torch.where(inside, idx - c0, torch.full_like(idx, c1 - c0))
        buf = torch.zeros(r1 - r0, c1 - c0 + 1, dtype=torch.bool, device=idx.device)
        return buf.scatter_(1, cols, True)[:, : c1 - c0]

    @property
    def exclusions_only(self) -> bool:
        """Whether only the per-anchor excluded indices restrict the mask (the common case)."""
        return self.explicit is None and not self.collision_free and self.subsample_index is None

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
        if self.subsample_index is not None:
            idx = self.subsample_index[r0:r1]
            return ((idx >= c0) & (idx < c1)).sum(dim=1)
        return self.block(r0, r1, c0, c1).sum(dim=1)

    @property
    def symmetric_labels(self) -> bool:
        """Whether the labels (if any) read the same for anchors and candidates; with symmetric
        exclusions and no explicit mask or K-subsampling, the mask is then symmetric."""
        if not self.collision_free:
            return True
        a, c = self.anchor_labels, self.candidate_labels
        return a is not None and c is not None and a.shape == c.shape and bool(torch.equal(a, c))

    def with_subsample(self, seed: int, num_negatives: int, tile: int = 1024) -> TileMask:
        """This rule K-subsampled: each anchor's K candidates drawn by :meth:`draw` (the same
        subsets as :func:`~hardneg.negatives.subsample_mask` with the same seed). The rule itself
        when the draw is the identity (K = M_i for every anchor)."""
        index = self.draw(seed, num_negatives, tile=tile)
        return self if index is None else replace(self, subsample_index=index)

    def draw(
        self, seed: int, num_negatives: int, *, tile: int = 1024, identity: bool = False
    ) -> Tensor | None:
        """Each anchor's K = ``num_negatives`` candidates, uniformly without replacement among its
        valid ones: (A, K) int64, sorted per row (:mod:`hardneg.negatives.draw`).

        ``None`` when K = M_i for every anchor (the draw is the identity) unless ``identity``,
        which then returns every valid candidate. ``ValueError`` naming ``num_negatives`` when
        some anchor has fewer than K valid candidates.
        """
        a, k = self.num_anchors, num_negatives
        device = self.excluded.device
        counts, to_index = self._rank_map(tile)
        low, high = check_available(k, counts, self.num_candidates)
        if low == high == k or a == 0:
            if not identity:
                return None
            return to_index(torch.arange(k, device=device).expand(a, k).contiguous())
        return to_index(draw_ranks(seed, counts, k, self.num_candidates))

    def _rank_map(self, tile: int) -> tuple[Tensor, Callable[[Tensor], Tensor]]:
        """The valid counts ``M_i`` (A,) and the map rank → candidate index (A, K) → (A, K), from
        the rule's state: the exclusions in closed form, labels by one ``searchsorted``, an
        explicit mask by row cumsums of its blocks (at most ``tile`` rows, 16 Mi entries, at a time)."""
        a, n = self.num_anchors, self.num_candidates
        if self.explicit is not None:
            step = max(1, min(tile, (1 << 24) // max(1, n)))
            starts = range(0, a, step)

            def by_mask(ranks: Tensor) -> Tensor:
                parts = [
                    mask_index(ranks[r0 : r0 + step], self.base_block(r0, min(a, r0 + step), 0, n))
                    for r0 in starts
                ]
                return torch.cat(parts) if parts else ranks

            counts = [count_valid(self.base_block(r0, min(a, r0 + step), 0, n)) for r0 in starts]
            return (torch.cat(counts) if counts else self.excluded.new_zeros(0)), by_mask
        if self.collision_free:
            assert self.anchor_labels is not None and self.candidate_labels is not None
            labelled = LabelRanks(self.anchor_labels, self.candidate_labels, self.excluded, n)
            return labelled.counts(), labelled.index
        return excluded_counts(self.excluded, n), lambda ranks: excluded_index(ranks, self.excluded, n)
