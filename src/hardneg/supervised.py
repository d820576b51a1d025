"""Supervised contrastive learning and multi-crop views, with any negative distribution.

Views ``z`` of shape (n, V, d) — V views (crops, augmentations) of n items — are flattened to
``n·V`` anchors that are also the candidates. The positives of an anchor are the other views of
its item (``labels=None``: multi-crop, SimCLR with V ≥ 2 views; Caron et al., NeurIPS 2020) or
every other view whose item shares its label (supervised contrastive learning; Khosla et al.,
"Supervised Contrastive Learning", NeurIPS 2020); the anchor itself is excluded; every other
candidate is a negative, weighted by the loss's negative distribution (uniform, hard, debiased,
OT, K-subsampled) exactly as in :meth:`hardneg.ContrastiveLoss.multi_positive`.

With ``P(i)`` the positives of anchor i, ``s_ij = ⟨z_i, z_j⟩ / t`` and ``Neg_i`` the loss's
negative term (``Σ_{j ∉ P(i) ∪ {i}} e^{s_ij}`` for InfoNCE with uniform negatives):

* ``variant="out"`` (Khosla et al., eq. 2, ``L^sup_out``, their recommended form):
  ``L_i = log(Σ_{p ∈ P(i)} e^{s_ip} + Neg_i) − (1/|P(i)|) Σ_{p ∈ P(i)} s_ip``;
* ``variant="in"`` (their eq. 3, ``L^sup_in``, up to the constant ``log |P(i)|``):
  ``L_i = log(Σ_{p ∈ P(i)} e^{s_ip} + Neg_i) − log Σ_{p ∈ P(i)} e^{s_ip}``, the multi-positive
  estimator of Robinson et al. (ICLR 2021, §3).

``L_out = L_in + (log Σ_P e^{s_ip} − mean_P s_ip)``: the second term depends on the positives only
(it is ≥ log |P(i)| by Jensen's inequality), so both variants share the engine's negative term.
Anchors without any positive (an item alone with its label and V = 1) are left out, as in Khosla
et al.'s code. With ``reduction="mean"`` the loss is the mean over the remaining anchors.

>>> import torch
>>> from hardneg import ContrastiveLoss, negatives
>>> from hardneg.supervised import multi_view_loss
>>> z = torch.randn(8, 2, 16)                       # 8 items, 2 views each
>>> labels = torch.tensor([0, 0, 1, 1, 2, 2, 3, 3])
>>> supcon = multi_view_loss(ContrastiveLoss(temperature=0.1), z, labels=labels)
>>> hard = multi_view_loss(ContrastiveLoss(temperature=0.1, negatives=negatives.Hard(beta=1.0)), z,
...                        labels=labels)
>>> supcon.shape, bool(torch.isfinite(hard))
(torch.Size([]), True)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import Tensor

from hardneg.reduction import reduce

if TYPE_CHECKING:
    from hardneg.loss import ContrastiveLoss
    from hardneg.scores import Scores

__all__ = ["VARIANTS", "multi_view_loss", "multi_view_masks", "supervised_per_anchor"]

VARIANTS = ("out", "in")


def multi_view_masks(num_items: int, num_views: int, labels: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """``(positive_mask, exclude)`` of the flattened ``n·V`` views, both (n·V, n·V) bool.

    Row ``i·V + v`` is view v of item i. ``positive_mask[a, b]``: b ≠ a and b is a view of the same
    item (``labels=None``) or of an item with the same label; ``exclude``: the diagonal.

    Args:
        num_items: n, the items.
        num_views: V, the views of each item.
        labels: optional integer label of each item (supervised positives).

    Shapes:
        ``labels`` (n,) → ``positive_mask`` (n·V, n·V) bool, ``exclude`` (n·V, n·V) bool.

    References:
        Khosla, Teterwak, Wang, Sarna, Tian, Isola, Maschinot, Liu, Krishnan, *Supervised
        Contrastive Learning*, NeurIPS 2020, §3.2 (the positives ``P(i)``).

    Example:
        >>> positive, exclude = multi_view_masks(2, 2)
        >>> positive.int()
        tensor([[0, 1, 0, 0],
                [1, 0, 0, 0],
                [0, 0, 0, 1],
                [0, 0, 1, 0]], dtype=torch.int32)
    """
    items = torch.arange(num_items).repeat_interleave(num_views)
    key = items if labels is None else labels.reshape(-1).to("cpu").repeat_interleave(num_views)
    eye = torch.eye(num_items * num_views, dtype=torch.bool)
    return (key[:, None] == key[None, :]) & ~eye, eye


def multi_view_loss(
    loss_fn: ContrastiveLoss,
    views: Tensor,
    *,
    labels: Tensor | None = None,
    variant: str = "out",
    generator: torch.Generator | None = None,
) -> Tensor:
    """Supervised contrastive (``labels``) or multi-view / multi-crop (no labels) loss; see the module.

    Shapes: ``views`` (n, V, d) (a (n, d) tensor is one view per item and needs ``labels``),
    ``labels`` optional (n,) integers → scalar, or (A,) per anchor with positives when
    ``loss_fn.reduction == "none"``. Temperature, normalisation, negative distribution and
    objective are ``loss_fn``'s.

    Args:
        loss_fn: the loss whose temperature, normalisation, negatives, objective and reduction
            apply (``collision_free`` must be False).
        views: V views of n items (or one view per item with ``labels``).
        labels: optional integer label per item: positives are the same-label views
            (supervised contrastive); ``None``: the other views of the item (multi-view).
        variant: ``"out"`` (default, Khosla et al.'s ``L^sup_out``) or ``"in"``.
        generator: randomness of K-subsampled negatives.

    Shapes:
        ``views`` (n, V, d) or (n, d), ``labels`` (n,) → scalar, or (A,) with
        ``loss_fn.reduction == "none"`` (A: the anchors with a positive).

    References:
        Khosla et al., *Supervised Contrastive Learning*, NeurIPS 2020, eq. (2) and (3);
        Caron et al., *Unsupervised Learning of Visual Features by Contrasting Cluster
        Assignments*, NeurIPS 2020 (multi-crop); Robinson, Chuang, Sra, Jegelka, ICLR 2021, §3.

    Example:
        >>> import torch
        >>> from hardneg import ContrastiveLoss
        >>> from hardneg.negatives import Hard
        >>> labels = torch.tensor([0, 0, 1, 1, 2, 2, 3, 3])
        >>> loss = multi_view_loss(ContrastiveLoss(temperature=0.1, negatives=Hard(beta=1.0)),
        ...                        torch.randn(8, 2, 16), labels=labels, variant="in")
        >>> loss.shape, bool(torch.isfinite(loss))
        (torch.Size([]), True)
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    if loss_fn.collision_free:
        raise ValueError("loss_fn.collision_free must be False here: same-label views are positives already, "
                         "got collision_free=True")
    if not isinstance(views, Tensor) or views.dim() not in (2, 3):
        got = tuple(views.shape) if isinstance(views, Tensor) else type(views).__name__
        raise ValueError(f"views must be a tensor of shape (n, V, d) or (n, d), got {got}")
    if views.dim() == 2:
        views = views[:, None, :]
    n, v, d = views.shape
    if labels is not None:
        if not isinstance(labels, Tensor) or labels.shape != (n,) or labels.is_floating_point():
            what = (f"{labels.dtype} of shape {tuple(labels.shape)}" if isinstance(labels, Tensor)
                    else repr(labels))
            raise ValueError(f"labels must be an integer tensor of shape ({n},), got {what}")
    elif v < 2:
        raise ValueError(f"without labels the positives are the other views: views needs V >= 2, got V = {v}")
    flat = views.reshape(n * v, d)
    positive, exclude = multi_view_masks(n, v, labels)
    positive, exclude = positive.to(flat.device), exclude.to(flat.device)
    keep = positive.any(dim=1)
    if not bool(keep.any()):
        raise ValueError("no anchor has a positive: every label occurs once and there is one view per item")
    from hardneg.scores import multi_positive_scores

    with torch.autocast(flat.device.type, enabled=False):
        scores = multi_positive_scores(
            flat[keep],
            flat,
            positive[keep],
            temperature=loss_fn.temperature,
            exclude=exclude[keep],
            normalize=loss_fn.normalize,
        )
        per_anchor = supervised_per_anchor(loss_fn, scores, variant=variant, generator=generator)
    return reduce(per_anchor, loss_fn.reduction)


def supervised_per_anchor(
    loss_fn: ContrastiveLoss,
    scores: Scores,
    *,
    variant: str = "out",
    generator: torch.Generator | None = None,
) -> Tensor:
    """Per-anchor ``L_out`` or ``L_in`` (see the module) from multi-positive ``scores`` (A,).

    ``scores`` from :func:`~hardneg.scores.multi_positive_scores`: ``L_in`` is the engine's
    multi-positive loss, ``L_out = L_in + log Σ_P e^{s_ip} − mean_P s_ip``.

    Args:
        loss_fn: the loss whose negatives and objective apply.
        scores: multi-positive scores (with ``positive_mask``).
        variant: ``"out"`` (default) or ``"in"``.
        generator: randomness of K-subsampled negatives.

    Shapes:
        ``scores`` (A, N) with ``positive_mask`` (A, N) → (A,).

    References:
        Khosla et al., *Supervised Contrastive Learning*, NeurIPS 2020, eq. (2) (``L^sup_out``)
        and (3) (``L^sup_in``).

    Example:
        >>> import torch
        >>> from hardneg import ContrastiveLoss
        >>> from hardneg.scores import multi_positive_scores
        >>> z = torch.randn(4, 8)
        >>> positive, exclude = multi_view_masks(2, 2)
        >>> scores = multi_positive_scores(z, z, positive, temperature=0.5, exclude=exclude)
        >>> supervised_per_anchor(ContrastiveLoss(temperature=0.5), scores).shape
        torch.Size([4])
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    pm = scores.positive_mask
    if pm is None:
        raise ValueError("scores must have a positive_mask (multi_positive_scores), got positive_mask=None")
    per_anchor = loss_fn.compute(scores, generator=generator).per_anchor
    if variant == "in":
        return per_anchor
    mean_positive = (scores.logits * pm).sum(dim=1) / pm.sum(dim=1)
    return per_anchor + (scores.positive - mean_positive)
