"""Quick-thoughts (Logeswaran & Lee, ICLR 2018) with the negatives of Robinson et al. (ICLR 2021, §5.3).

Two encoders of one architecture with separate weights, ``f`` (the anchor's) and ``g`` (the
candidates'), embed a batch of **contiguous** sentences ``s_1 … s_B``; the scores are
``f(s_i)ᵀ g(s_j)`` — unnormalised, temperature 1 by default, as in QT. The sentences within
``context`` positions of ``s_i`` in the same document are its positives (M_i ≤ 2·context of
them), the anchor itself is excluded, and every other sentence of the batch is a negative. Two
forms of the loss:

- ``positives="sum"`` (default) — Robinson et al.'s estimator with M positives (§3, Fig. 13–14):
  ``L_i = −log( Σ_m e^{s⁺_im} / (Σ_m e^{s⁺_im} + Neg_i) )`` where ``Neg_i`` is the uniform, hard
  (β; the clipping trick of Fig. 14 with ``Hard(rescale=True)`` for unnormalised scores), debiased
  (τ⁺) or OT negative term over the non-positive sentences
  (:meth:`~hardneg.ContrastiveLoss.multi_positive`).
- ``positives="mean"`` — the released QT code: softmax cross-entropy of each row against targets
  ``1/M_i`` on the positives, ``L_i = −(1/M_i) Σ_m s⁺_im + log Σ_{j≠i} e^{s_ij}``, i.e. one
  NCE term per (anchor, positive) pair whose denominator holds every other sentence, the other
  positives included (:meth:`~hardneg.ContrastiveLoss.pair` on the pairs, averaged over
  each anchor's pairs, then over anchors).

``self_score="zero"`` reproduces a detail of the released code: the diagonal ``f(s_i)ᵀg(s_i)`` is
set to 0 and *left in the softmax* (a candidate of logit 0, here a zero vector); the default
``"exclude"`` removes it. The QT representation evaluated downstream is ``[f(s); g(s)]``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import torch
from torch import Tensor, nn

if TYPE_CHECKING:
    from hardneg.loss import ContrastiveLoss
    from hardneg.reduction import LossOutput

__all__ = ["QuickThoughts", "context_positives", "quick_thoughts_loss"]

PositiveForm = Literal["sum", "mean"]
SelfScore = Literal["exclude", "zero"]


def context_positives(documents: Tensor, *, context: int = 1) -> Tensor:
    """``P[i, j]``: ``0 < |i − j| ≤ context`` and sentences i and j in the same document, (B, B) bool.

    >>> context_positives(torch.tensor([0, 0, 0, 1, 1])).int().tolist()[2:4]
    [[0, 1, 0, 0, 0], [0, 0, 0, 0, 1]]
    """
    if isinstance(context, bool) or not isinstance(context, int) or context < 1:
        raise ValueError(f"context must be an int >= 1, got {context!r}")
    idx = torch.arange(documents.shape[0], device=documents.device)
    dist = (idx[:, None] - idx[None, :]).abs()
    return (dist >= 1) & (dist <= context) & (documents[:, None] == documents[None, :])


def quick_thoughts_loss(
    loss: ContrastiveLoss,
    anchors: Tensor,
    candidates: Tensor,
    documents: Tensor,
    *,
    context: int = 1,
    positives: PositiveForm = "sum",
    self_score: SelfScore = "exclude",
    generator: torch.Generator | None = None,
) -> LossOutput:
    """The QT loss of a batch of contiguous sentences (see the module docstring).

    Shapes: ``anchors`` = f(s) (B, d), ``candidates`` = g(s) (B, d), ``documents`` (B,) document
    index of each sentence → :class:`~hardneg.reduction.LossOutput` whose ``per_anchor`` holds one
    loss per sentence that has a positive in the batch (a sentence whose neighbours fall outside
    the batch or its document has none and is not an anchor; it stays a candidate).
    """
    from hardneg.reduction import LossOutput

    if positives not in ("sum", "mean"):
        raise ValueError(f"positives must be 'sum' or 'mean', got {positives!r}")
    if self_score not in ("exclude", "zero"):
        raise ValueError(f"self_score must be 'exclude' or 'zero', got {self_score!r}")
    b = anchors.shape[0]
    pm = context_positives(documents, context=context)
    rows = pm.any(dim=1)
    if not bool(rows.any()):
        raise ValueError("no sentence of the batch has a neighbour of its document in the batch")
    eye = torch.eye(b, dtype=torch.bool, device=anchors.device)
    cand = candidates
    if self_score == "zero":  # the released code: the diagonal's score is 0 and stays in the softmax
        cand = torch.cat([candidates, candidates.new_zeros(1, candidates.shape[1])])
        pm = torch.cat([pm, pm.new_zeros(b, 1)], dim=1)
        eye = torch.cat([eye, eye.new_zeros(b, 1)], dim=1)
    if positives == "sum":
        return loss.multi_positive(
            anchors[rows], cand, pm[rows], exclude=eye[rows], generator=generator, details=True
        )
    pairs = pm.nonzero()  # (P, 2): anchor i, positive p
    i, p = pairs[:, 0], pairs[:, 1]
    mask = ~(eye[i] | torch.nn.functional.one_hot(p, cand.shape[0]).bool())
    out = loss.pair(anchors[i], cand[p], cand, mask=mask, generator=generator, details=True)
    per_pair = out.per_anchor if out.per_anchor.dim() else out.per_anchor.expand(i.shape[0])
    weights = 1.0 / pm.sum(dim=1).to(per_pair.dtype)
    per_anchor = torch.zeros(b, dtype=per_pair.dtype, device=per_pair.device).index_add(
        0, i, per_pair * weights[i]
    )
    per_anchor = per_anchor[rows]
    return LossOutput(loss=per_anchor.mean(), per_anchor=per_anchor, diagnostics=out.diagnostics)


class QuickThoughts(nn.Module):
    """The QT model: encoders ``f`` and ``g`` (same architecture, separate weights).

    ``forward(tokens) -> (h, z)`` with ``h = [f(s); g(s)]``, the representation evaluated
    downstream (Logeswaran & Lee concatenate both encoders), and ``z = f(s)``.

    Args:
        f, g: sentence encoders ``(B, L) int64 → (B, d)`` with a ``feature_dim`` attribute.

    The loss's layout (context, the form of the positive term) is not the model's: the training
    step passes ``f(s)`` and ``g(s)`` to :func:`quick_thoughts_loss`.
    """

    def __init__(
        self,
        *,
        f: nn.Module,
        g: nn.Module,
    ) -> None:
        super().__init__()
        if f is g:
            raise ValueError("f and g must be separate modules (quick-thoughts trains two encoders)")
        self.f, self.g = f, g
        self.feature_dim = int(f.feature_dim) + int(g.feature_dim)  # type: ignore[arg-type]

    def forward(self, tokens: Tensor) -> tuple[Tensor, Tensor]:
        zf = self.f(tokens)
        return torch.cat([zf, self.g(tokens)], dim=1), zf
