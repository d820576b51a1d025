"""The :class:`Scores` value object: logits and validity mask of one batch (step 1's output).

Symbols: anchors ``a_i``, their positives ``p_i``, candidate negatives ``c_j``, temperature
``t``; positive logits ``s⁺_i = ⟨a_i, p_i⟩ / t`` and candidate logits ``s_ij = ⟨a_i, c_j⟩ / t``.
``mask[i, j]`` says whether ``c_j`` is a valid negative for ``a_i``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import torch
from torch import Tensor

from hardneg._numerics.thresholds import THRESHOLDS

__all__ = ["Scores", "count_valid", "same_label"]


@dataclass(frozen=True)
class Scores:
    """Logits and validity mask for one batch.

    Args:
        positive: the positive logits ``s⁺_i``.
        logits: the candidate logits ``s_ij``.
        mask: True where ``c_j`` is a valid negative for ``a_i``.
        temperature: the ``t`` the logits were divided by.
        anchor_norms: the anchors' norms (detached; cosine diagnostics).
        positive_norms: the positives' norms (detached).
        candidate_norms: the candidates' norms (detached).
        anchor_labels: optional integer labels of the anchors (``< 0``: unknown).
        candidate_labels: optional integer labels of the candidates.
        positive_mask: optional mask of each anchor's several positives (see Shapes).
        valid_counts: optional cached row counts of ``mask`` (int32).
        nonempty: every anchor is known to have a valid negative (see below).
        fill: optional additive form of ``mask`` in the logits' dtype (0 where valid, ``−inf``
            elsewhere), given by layouts that reuse one mask (cached with it): the masked logits
            are then one addition, whose backward is free, instead of a ``masked_fill``.
        positive_index: optional (A,) int64 column of each anchor's positive among the candidates,
            when the positive is one of them (SimCLR's layout: the partner view); its logit is
            ``s⁺_i`` up to rounding. Given with ``positive_fill`` by layouts that know it.
        positive_fill: optional additive mask (A, N) of the valid negatives **and** the positive
            column (0 there, ``−inf`` elsewhere): InfoNCE with uniform weights is then a
            cross-entropy over ``logits + positive_fill`` (:class:`~hardneg.objectives.InfoNCE`).

    Shapes:
        - ``positive``: (A,) positive logits ``s⁺_i``.
        - ``logits``: (A, N) candidate logits ``s_ij``.
        - ``mask``: (A, N) bool, True where ``c_j`` is a valid negative for ``a_i``.
        - ``anchor_norms`` (A,), ``positive_norms`` (A,), ``candidate_norms`` (N,): norms of the
          embeddings the logits were computed from (detached; for cosine diagnostics).
        - ``anchor_labels`` (A,), ``candidate_labels`` (N,): optional integer labels, used only
          by label-aware (oracle) negatives and collision diagnostics.
        - ``positive_mask``: optional (A, N) bool, True where ``c_j`` is one of the anchor's
          ``M_i ≥ 1`` positives (several positives per anchor: quick-thoughts' neighbouring
          sentences). Then ``positive`` is ``log Σ_m e^{s⁺_im}``, the log of the numerator of
          Robinson et al.'s estimator with M positives (ICLR 2021, §3: ``Ẑ⁺ = (1/M) Σ_m e^{…}``),
          and ``mask`` excludes the positives. ``None``: one positive per anchor.

    ``temperature`` is the ``t`` the logits were divided by. ``nonempty``: the layout has already
    established that every anchor has a valid negative (statically, or in its one host read), so
    the engine need not read the counts back; a new mask (:meth:`with_mask`) clears it.

    References:
        Oord, Li and Vinyals, arXiv:1807.03748, 2018, eq. (4) (InfoNCE: one positive among
        candidates); Chen, Kornblith, Norouzi and Hinton, "A Simple Framework for Contrastive Learning of
        Visual Representations", ICML 2020, eq. (1) and Algorithm 1 (logits ``⟨a, c⟩ / t``);
        Robinson, Chuang, Sra and Jegelka, ICLR 2021, §3 (the estimator with M positives).

    Example:
        >>> ones = torch.ones
        >>> s = Scores(positive=torch.zeros(2), logits=ones(2, 3), mask=ones(2, 3, dtype=torch.bool),
        ...            temperature=0.5, anchor_norms=ones(2), positive_norms=ones(2), candidate_norms=ones(3))
        >>> s.num_anchors, s.num_candidates, s.masked_logits().shape
        (2, 3, torch.Size([2, 3]))
    """

    positive: Tensor
    logits: Tensor
    mask: Tensor
    temperature: float
    anchor_norms: Tensor
    positive_norms: Tensor
    candidate_norms: Tensor
    anchor_labels: Tensor | None = None
    candidate_labels: Tensor | None = None
    positive_mask: Tensor | None = None
    valid_counts: Tensor | None = field(default=None, repr=False, compare=False)
    nonempty: bool = field(default=False, repr=False, compare=False)
    fill: Tensor | None = field(default=None, repr=False, compare=False)
    positive_index: Tensor | None = field(default=None, repr=False, compare=False)
    positive_fill: Tensor | None = field(default=None, repr=False, compare=False)

    @property
    def num_anchors(self) -> int:
        return int(self.logits.shape[0])

    @property
    def num_candidates(self) -> int:
        return int(self.logits.shape[1])

    def num_valid(self) -> Tensor:
        """Number of valid negatives ``N_i`` of each anchor, shape (A,), in the logits' dtype.

        Counted once per :class:`Scores` (an int32 row sum: summing a bool matrix into the
        default int64 costs a full copy), converted once and cached; layouts that know the counts
        pass them in. Not to be modified in place.
        """
        cached = self.__dict__.get("_num_valid")
        if cached is not None:
            return cached
        if self.valid_counts is None:
            object.__setattr__(self, "valid_counts", count_valid(self.mask))
        assert self.valid_counts is not None
        counts = self.valid_counts.to(self.logits.dtype)
        object.__setattr__(self, "_num_valid", counts)  # converted once per Scores
        return counts

    def log_num_valid(self) -> Tensor:
        """``log N_i`` (A,), computed once per :class:`Scores` (layouts with constant counts pass
        it in, :meth:`with_counts`). Not to be modified in place."""
        cached = self.__dict__.get("_log_num_valid")
        if cached is None:
            cached = self.num_valid().log()
            object.__setattr__(self, "_log_num_valid", cached)
        return cached

    def with_counts(self, num_valid: Tensor, log_num_valid: Tensor) -> Scores:
        """These scores with ``N_i`` and ``log N_i`` (A,) in the logits' dtype already known (a
        layout's cached constants): :meth:`num_valid` and :meth:`log_num_valid` return them."""
        object.__setattr__(self, "_num_valid", num_valid)
        object.__setattr__(self, "_log_num_valid", log_num_valid)
        return self

    def positive_count(self) -> Tensor | None:
        """``M_i``, the number of positives of each anchor (A,) in the logits' dtype; ``None`` for one."""
        if self.positive_mask is None:
            return None
        return count_valid(self.positive_mask).to(self.logits.dtype)

    def with_mask(self, mask: Tensor) -> Scores:
        """The same scores with another validity mask (e.g. K-subsampled, collision-free)."""
        if mask.shape != self.logits.shape or mask.dtype != torch.bool:
            raise ValueError(
                f"mask must be a bool tensor of shape {tuple(self.logits.shape)}, "
                f"got {mask.dtype} of shape {tuple(mask.shape)}"
            )
        # the additive masks and the positive's column describe the old mask: cleared
        return replace(
            self, mask=mask, valid_counts=None, nonempty=False, fill=None, positive_index=None,
            positive_fill=None,
        )

    @classmethod
    def streamed(
        cls,
        positive: Tensor,
        *,
        temperature: float,
        anchor_norms: Tensor,
        positive_norms: Tensor,
        candidate_norms: Tensor,
        valid_counts: Tensor,
        anchor_labels: Tensor | None = None,
        candidate_labels: Tensor | None = None,
    ) -> Scores:
        """The scores of an engine that never forms the (A, N) logits (the tiled engines): empty
        (A, 0) ``logits`` and ``mask``, the valid counts N_i (A,) it streamed."""
        empty = positive.new_empty(positive.shape[0], 0)
        return cls(
            positive=positive,
            logits=empty,
            mask=empty.bool(),
            temperature=temperature,
            anchor_norms=anchor_norms,
            positive_norms=positive_norms,
            candidate_norms=candidate_norms,
            anchor_labels=anchor_labels,
            candidate_labels=candidate_labels,
            valid_counts=valid_counts.to(torch.int32),
        )

    def small_dense(self) -> bool:
        """Whether these scores take the small-matrix route of the objectives (ATen's dense
        operators and one-node closed forms): an additive mask (``fill``), every row non-empty
        (``nonempty``), one positive per anchor and at most
        :attr:`~hardneg._numerics.thresholds.Thresholds.dense_lse_max`
        entries (B = 128 in SimCLR's layout)."""
        return (
            self.fill is not None
            and self.nonempty
            and self.positive_mask is None
            and self.logits.numel() <= THRESHOLDS.dense_lse_max
        )

    def masked_logits(self) -> Tensor:
        """``s_ij`` where valid, ``-inf`` elsewhere (one pass over the matrix; ``logits + fill``
        when the additive mask is known)."""
        if self.fill is not None:
            return self.logits + self.fill
        return self.logits.masked_fill(~self.mask, float("-inf"))


def count_valid(mask: Tensor) -> Tensor:
    """Row counts of a bool (A, N) mask as int32, shape (A,): N_i, each anchor's valid negatives.

    Args:
        mask: True where a candidate is a valid negative of the anchor.

    Shapes:
        ``mask`` (A, N) bool → (A,) int32.

    References:
        Chuang, Robinson, Lin, Torralba and Jegelka, "Debiased Contrastive Learning", NeurIPS
        2020, §3 (N, the number of negatives of the debiased estimator).

    Example:
        >>> count_valid(torch.tensor([[True, False, True], [False, False, True]])).tolist()
        [2, 1]
    """
    return mask.sum(dim=1, dtype=torch.int32)


def same_label(anchor_labels: Tensor, candidate_labels: Tensor) -> Tensor:
    """``y_i == y_j`` for known labels, shape (A, N) bool.

    Labels ``< 0`` mean *unknown* (e.g. STL-10's unlabelled images, keys of a MoCo queue that
    were enqueued without labels): an unknown label never equals anything, itself included, so
    it never counts as a collision and is never removed by collision-free negatives.

    Args:
        anchor_labels: integer labels of the anchors (``< 0``: unknown).
        candidate_labels: integer labels of the candidates (``< 0``: unknown).

    Shapes:
        ``anchor_labels`` (A,), ``candidate_labels`` (N,) → (A, N) bool.

    References:
        Ash, Goel, Krishnamurthy and Misra, "Investigating the Role of Negatives in Contrastive
        Representation Learning", AISTATS 2022, §4 (class collisions); Chuang et al., NeurIPS 2020,
        §3 (negatives sharing the anchor's class).

    Example:
        >>> same_label(torch.tensor([0, -1]), torch.tensor([0, 1, -1])).tolist()
        [[True, False, False], [False, False, False]]
    """
    ya = anchor_labels.to(candidate_labels.device)
    same = ya[:, None] == candidate_labels[None, :]
    return same & (ya >= 0)[:, None] & (candidate_labels >= 0)[None, :]
