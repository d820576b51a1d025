"""Several positives per anchor: the layout of quick-thoughts (Logeswaran & Lee, ICLR 2018).

Anchors ``a_i`` (A, d) are scored against one pool of candidates ``c_j`` (N, d); ``positive_mask``
marks which candidates are the anchor's positives (its neighbouring sentences), ``exclude`` which
are neither positive nor negative (the anchor's own sentence). Every other candidate is a
negative. The positive logit is the log of the positives' summed exponentials,

    s⁺_i = log Σ_{m : P_im} e^{⟨a_i, c_m⟩ / t},

the numerator of Robinson et al.'s estimator with M positives (ICLR 2021, §3 and Fig. 13:
``−log(pos.sum() / (pos.sum() + Neg))``), so that InfoNCE, the debiased objective and every
negative distribution (uniform, hard, OT, K-subsampled) read it unchanged; the debiased
correction uses the positives' mean (:func:`~hardneg.objectives.debiased.debiased_log_negative`).
"""

from __future__ import annotations

import torch
from torch import Tensor

from hardneg._numerics.lse import masked_logsumexp
from hardneg._validation import check_embeddings, check_finite_tensor, check_same_device, check_temperature
from hardneg.scores.layouts import _check_logit_range, _prepare, compute_dtype
from hardneg.scores.value import Scores

__all__ = ["multi_positive_scores"]


def _check_mask(name: str, mask: Tensor | None, shape: tuple[int, int]) -> None:
    if mask is None:
        return
    if not isinstance(mask, Tensor) or mask.dtype != torch.bool or tuple(mask.shape) != shape:
        got = (
            f"{mask.dtype} of shape {tuple(mask.shape)}" if isinstance(mask, Tensor) else type(mask).__name__
        )
        raise ValueError(f"{name} must be a bool tensor of shape {shape}, got {got}")


def multi_positive_scores(
    anchors: Tensor,
    candidates: Tensor,
    positive_mask: Tensor,
    *,
    temperature: float,
    exclude: Tensor | None = None,
    normalize: bool = True,
) -> Scores:
    """:class:`~hardneg.scores.Scores` with ``M_i ≥ 1`` positives per anchor among the candidates.

    The negatives' mask is ``¬positive_mask ∧ ¬exclude``.

    Args:
        anchors: the anchors.
        candidates: the candidate pool.
        positive_mask: True where a candidate is one of the anchor's positives (≥ 1 per row).
        temperature: t; logits are ``⟨a, c⟩ / t``.
        exclude: optional mask of candidates that are neither positive nor negative.
        normalize: L2-normalise the embeddings first.

    Shapes:
        ``anchors`` (A, d), ``candidates`` (N, d), ``positive_mask`` and ``exclude`` (A, N) bool →
        :class:`~hardneg.scores.Scores` of (A, N) with ``positive`` (A,) = ``log Σ_m e^{s⁺_im}``.

    References:
        Robinson, Chuang, Sra and Jegelka, ICLR 2021, §3 and Fig. 13 (M positives); Logeswaran and
        Lee, "An efficient framework for learning sentence representations", ICLR 2018, §3.

    Example:
        >>> a, c = torch.eye(3), torch.eye(3)
    >>> p = torch.tensor([[False, True, True], [True, False, False], [False, True, False]])
    >>> s = multi_positive_scores(a, c, p, temperature=1.0, exclude=torch.eye(3, dtype=torch.bool))
    >>> s.positive_count().tolist(), s.mask.sum(1).tolist()
    ([2.0, 1.0, 1.0], [0, 1, 1])
    """
    t = check_temperature(temperature)
    check_embeddings("anchors", anchors, check_finite=False)
    check_embeddings("candidates", candidates, check_finite=False)
    if candidates.shape[1] != anchors.shape[1]:
        raise ValueError(
            f"candidates must have shape (N, {anchors.shape[1]}) to match the anchors' dimension, "
            f"got {tuple(candidates.shape)}"
        )
    check_same_device(anchors=anchors, candidates=candidates)
    check_finite_tensor("anchors", anchors)
    check_finite_tensor("candidates", candidates)
    shape = (int(anchors.shape[0]), int(candidates.shape[0]))
    _check_mask("positive_mask", positive_mask, shape)
    _check_mask("exclude", exclude, shape)
    pm = positive_mask.to(anchors.device)
    if exclude is not None:
        pm = pm & ~exclude.to(anchors.device)
    empty = (~pm.any(dim=1)).nonzero()
    if empty.numel():
        raise ValueError(
            f"positive_mask must give every anchor at least one (non-excluded) positive; row {int(empty[0])} "
            "has none"
        )
    dtype = compute_dtype(torch.promote_types(anchors.dtype, candidates.dtype))
    a, a_norms = _prepare(anchors, normalize, dtype)
    c, c_norms = _prepare(candidates, normalize, dtype)
    if not normalize:
        _check_logit_range("anchors, candidates", a_norms, c_norms, t, dtype)
    logits = (a / t) @ c.T
    valid = ~pm if exclude is None else ~pm & ~exclude.to(anchors.device)
    return Scores(
        positive=masked_logsumexp(logits, pm),
        logits=logits,
        mask=valid,
        temperature=t,
        anchor_norms=a_norms,
        positive_norms=torch.ones_like(a_norms),  # unused: the positive cosines come from positive_mask
        candidate_norms=c_norms,
        positive_mask=pm,
    )
