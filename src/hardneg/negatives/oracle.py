"""Label-aware (oracle) negatives: no candidate shares the anchor's label (Ash et al., AISTATS 2022, §4)."""

from __future__ import annotations

import torch
from torch import Tensor

from hardneg.negatives.base import NegativeDistribution
from hardneg.negatives.wrapper import MaskWrapper
from hardneg.scores import Scores, same_label

__all__ = ["CollisionFree", "collision_free_mask"]


def collision_free_mask(mask: Tensor, anchor_labels: Tensor, candidate_labels: Tensor) -> Tensor:
    """``mask_ij ∧ ¬(y_i = y_j)``, unknown labels (``< 0``) never equal (:func:`~hardneg.scores.same_label`).

    Raises ``ValueError`` if some anchor is left without a valid candidate (Ash et al. skip such
    a batch; we refuse it loudly).

    Args:
        mask: each anchor's valid candidates before the restriction.
        anchor_labels: integer class of each anchor (``< 0``: unknown).
        candidate_labels: integer class of each candidate (``< 0``: unknown).

    Shapes:
        ``mask`` (A, N) bool, ``anchor_labels`` (A,), ``candidate_labels`` (N,) → (A, N) bool.

    References:
        Ash, Goel, Krishnamurthy, Misra, *Investigating the Role of Negatives in Contrastive
        Representation Learning*, AISTATS 2022, §4; Arora, Khandeparkar, Khodak, Plevrakis,
        Saunshi, *A Theoretical Analysis of Contrastive Unsupervised Representation Learning*,
        ICML 2019, §2 (class collision).

    Example:
        >>> import torch
        >>> mask = torch.ones(2, 3, dtype=torch.bool)
        >>> collision_free_mask(mask, torch.tensor([0, 1]), torch.tensor([0, 1, -1]))
        tensor([[False,  True,  True],
                [ True, False,  True]])
    """
    out = mask & ~same_label(anchor_labels.to(mask.device), candidate_labels.to(mask.device))
    empty = ~out.any(dim=1)
    if bool(empty.any()):
        rows = torch.nonzero(empty).flatten()[:5].tolist()
        raise ValueError(
            "CollisionFree: every anchor needs at least one valid candidate with another label, "
            f"got {int(empty.sum())} anchors without one (e.g. rows {rows})"
        )
    return out


class CollisionFree(MaskWrapper):
    r"""Drop every candidate whose label equals the anchor's: ``mask_ij ← mask_ij ∧ (y_i ≠ y_j)``.

    The *oracle* negative distribution of Ash et al. (AISTATS 2022), §4 and Fig. 3 (right), and
    of the latent-class framework of Arora et al. (ICML 2019), §2 ("class collision"): negatives
    are drawn only from classes other than the anchor's, which removes the collision term of the
    bounds. Needs labels — ``Scores.anchor_labels`` (A,) and ``Scores.candidate_labels`` (N,),
    e.g. ``simclr_scores(..., labels=y)`` or ``pair_scores(..., anchor_labels=, candidate_labels=)``;
    the positive may be any same-class example (a "true positive", with :func:`pair_scores`).
    ``base`` (default uniform) weights the remaining candidates.

    Unknown labels (``< 0``, e.g. STL-10's unlabelled images) never collide: such candidates stay
    negatives and such anchors keep every candidate, so on fully unlabelled data this is the
    ``base`` distribution unchanged.

    When to choose it: controlled experiments with known labels (an upper reference for what
    debiasing with τ⁺ tries to approximate without labels); never with real unlabeled data.

    Args:
        base: the distribution over the remaining candidates (default
            :class:`~hardneg.negatives.Uniform`).

    Shapes:
        ``scores`` (A, N) with ``anchor_labels`` (A,) and ``candidate_labels`` (N,) →
        :class:`~hardneg.negatives.WeightedScores` (A, N) on the restricted mask
        (:func:`collision_free_mask`).

    References:
        Ash, Goel, Krishnamurthy, Misra, *Investigating the Role of Negatives in Contrastive
        Representation Learning*, AISTATS 2022, §4 and Fig. 3; Arora, Khandeparkar, Khodak,
        Plevrakis, Saunshi, ICML 2019, §2.

    Example:
        >>> import torch
        >>> from hardneg import ContrastiveLoss
        >>> from hardneg.negatives import CollisionFree, Hard
        >>> oracle = ContrastiveLoss(temperature=0.5, negatives=CollisionFree(base=Hard(beta=1.0)))
        >>> labels = torch.tensor([0, 1, 2, 3, 0, 1, 2, 3])
        >>> loss = oracle(torch.randn(8, 16), torch.randn(8, 16), labels=labels)
        >>> loss.shape, bool(torch.isfinite(loss))
        (torch.Size([]), True)
    """

    def __init__(self, *, base: NegativeDistribution | None = None):
        super().__init__(base)

    def restrict(self, scores: Scores, *, generator: torch.Generator | None = None) -> Scores:
        if scores.anchor_labels is None or scores.candidate_labels is None:
            raise ValueError(
                "CollisionFree negatives need labels: Scores.anchor_labels and Scores.candidate_labels "
                "must be tensors, got "
                f"anchor_labels={'None' if scores.anchor_labels is None else 'tensor'}, "
                f"candidate_labels={'None' if scores.candidate_labels is None else 'tensor'} "
                "(pass labels= to the loss or simclr_scores, "
                "or anchor_labels=/candidate_labels= to pair_scores)"
            )
        mask = collision_free_mask(scores.mask, scores.anchor_labels, scores.candidate_labels)
        return scores.with_mask(mask)
