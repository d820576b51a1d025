"""InfoNCE / NT-Xent with importance-weighted negatives."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

from hardneg._validation import check_positive
from hardneg.negatives.weighted import WeightedScores
from hardneg.objectives.base import Objective, RowForm
from hardneg.scores import Scores

__all__ = ["InfoNCE", "info_nce", "partner_cross_entropy", "uniform_cross_entropy"]

_NCE_FORM = RowForm("nce")  # softplus(a − s⁺): the form is stateless, made once


def info_nce(
    log_weighted_sum: Tensor, positive: Tensor, num_valid: Tensor | None, *, q: float | None = None
) -> Tensor:
    r"""Per-anchor NCE loss with weighted negatives (Robinson et al., ICLR 2021, eq. (1)/(3)).

        L_i = −log( e^{s⁺_i} / (e^{s⁺_i} + (Q/N_i) Σ_{j valid} w_ij e^{s_ij}) )
            = softplus( log Σ_j w_ij e^{s_ij} + log(Q/N_i) − s⁺_i ),

    ``Q = N_i`` when ``q`` is None.

    Args:
        log_weighted_sum: ``log Σ_j w_ij e^{s_ij}`` over each anchor's valid negatives.
        positive: the positive logits ``s⁺_i``.
        num_valid: ``N_i``, valid negatives per anchor (read only with ``q``; may be ``None`` without).
        q: a fixed negative weight Q > 0; ``None`` (default): ``Q = N_i``.

    Shapes:
        all (A,) → (A,).

    References:
        Oord, Li, Vinyals, *Representation Learning with Contrastive Predictive Coding*,
        arXiv:1807.03748, 2018, eq. (4); Robinson, Chuang, Sra, Jegelka, ICLR 2021, eq. (1)
        and (3).

    Example:
        >>> import torch
        >>> info_nce(torch.tensor([0.0]), torch.tensor([0.0]), torch.tensor([1.0]))  # −log(1/2)
        tensor([0.6931])
    """
    log_neg = log_weighted_sum
    if q is not None:
        if num_valid is None:
            raise ValueError("num_valid must be given (the N_i of each anchor) with q, got None")
        log_neg = log_neg + math.log(q) - num_valid.log()
    return F.softplus(log_neg - positive)


def uniform_cross_entropy(scores: Scores) -> Tensor:
    r"""SimCLR's NT-Xent as a cross-entropy when the positive is one of the candidates (Scores with
    ``positive_index`` and ``positive_fill``, SimCLR's layout): per anchor

        L_i = −log softmax_j(s_ij + f_ij)[p_i] = lse_{j valid or j = p_i}(s_ij) − s_{i p_i},

    with ``f`` = ``positive_fill`` (0 on the valid negatives and the positive column ``p_i``).
    Equal to :func:`info_nce` with uniform weights and ``Q = N_i``,
    ``softplus(lse_{j valid} s_ij − s⁺_i)``, up to rounding (here ``s⁺_i`` is read from the logit
    matrix, not from the row dot product); one ``log_softmax`` and one ``nll_loss`` (ATen's CPU
    ``logsumexp`` costs several times a ``log_softmax`` on small matrices), whose backward is
    the softmax minus the one-hot of the positive. :class:`InfoNCE` takes it for uniform weights
    on matrices of at most :attr:`~hardneg._numerics.thresholds.Thresholds.dense_lse_max` entries
    (:meth:`Scores.small_dense`).

    Args:
        scores: the scores, with ``positive_index`` and ``positive_fill``.

    Shapes:
        ``scores`` (A, N) → (A,).

    References:
        Chen, Kornblith, Norouzi, Hinton, *A Simple Framework for Contrastive Learning of Visual
        Representations*, ICML 2020, eq. (1) (NT-Xent as a softmax over the 2B − 1 other views).

    Example:
        >>> import torch
        >>> from hardneg.scores import simclr_scores
        >>> s = simclr_scores(torch.randn(4, 8), torch.randn(4, 8), temperature=0.5)
        >>> lse = s.masked_logits().logsumexp(dim=1)
        >>> bool(torch.allclose(uniform_cross_entropy(s), F.softplus(lse - s.positive), atol=1e-6))
        True
    """
    if scores.positive_fill is None or scores.positive_index is None:
        raise ValueError("scores must carry positive_index and positive_fill (SimCLR's layout), got None")
    return partner_cross_entropy(scores.logits, scores.positive_fill, scores.positive_index)


def partner_cross_entropy(logits: Tensor, positive_fill: Tensor, positive_index: Tensor) -> Tensor:
    r""":func:`uniform_cross_entropy` on its tensors: ``−log softmax_j(s_ij + f_ij)[p_i]``, one
    ``log_softmax`` and one ``nll_loss``.

    Args:
        logits: the logits ``s_ij``.
        positive_fill: the additive mask ``f`` (0 on the valid negatives and the positive's column).
        positive_index: each anchor's positive column ``p_i``.

    Shapes:
        ``logits``, ``positive_fill`` (A, N); ``positive_index`` (A,) int64 → (A,).

    References:
        Chen, Kornblith, Norouzi, Hinton, ICML 2020, eq. (1).

    Example:
        >>> import torch
        >>> s = torch.tensor([[0.0, 1.0, -1.0]])
        >>> fill = torch.tensor([[float("-inf"), 0.0, 0.0]])  # the anchor itself excluded
        >>> got = partner_cross_entropy(s, fill, torch.tensor([1]))
        >>> bool(torch.allclose(got, torch.log1p(torch.exp(torch.tensor(-2.0)))))  # softplus(-1 - 1)
        True
    """
    return F.nll_loss(F.log_softmax(logits + positive_fill, dim=1), positive_index, reduction="none")


class InfoNCE(Objective):
    r"""The NCE objective with weighted negatives (:func:`info_nce`).

    ``Q = N_i`` (``q=None``, the default, as in practice) makes uniform weights exactly
    SimCLR's NT-Xent, i.e. cross-entropy over ``[s⁺_i, s_i·]``. A fixed ``q`` gives the weighted
    NCE of Jiang et al. (arXiv:2111.03169), eq. (1), ``log(1 + (q/m) Σ e^{v_i})``.

    Args:
        q: a fixed weight Q > 0 of the negative term; ``None`` (default): ``Q = N_i``.

    Shapes:
        ``weighted`` with A anchors × N candidates → (A,).

    References:
        Oord, Li, Vinyals, *Representation Learning with Contrastive Predictive Coding*,
        arXiv:1807.03748, 2018, eq. (4) (InfoNCE); Chen, Kornblith, Norouzi, Hinton, ICML 2020
        (NT-Xent); Robinson, Chuang, Sra, Jegelka, ICLR 2021, eq. (1) and (3).

    Example:
        >>> import torch
        >>> from hardneg import ContrastiveLoss
        >>> from hardneg.negatives import Hard
        >>> from hardneg.objectives import InfoNCE
        >>> nce = ContrastiveLoss(temperature=0.5, negatives=Hard(beta=0.5), objective=InfoNCE())
        >>> loss = nce(torch.randn(8, 16), torch.randn(8, 16))
        >>> loss.shape, bool(torch.isfinite(loss))
        (torch.Size([]), True)
    """

    row_reducible = True  # reads only s⁺_i, N_i and log Σ_j w_ij e^{s_ij}: the tiled engine computes it
    multi_positive = True  # M positives: s⁺_i = log Σ_m e^{s⁺_im}, L = −log(Σ e^{s⁺} / (Σ e^{s⁺} + Neg))

    def __init__(self, *, q: float | None = None):
        super().__init__()
        self.q = None if q is None else check_positive("q", q)

    def forward(self, weighted: WeightedScores) -> Tensor:
        s = weighted.scores
        if self.q is None and weighted.closed_tilt == 0.0 and weighted.pending_sum and s.small_dense():
            if s.positive_fill is not None and not torch.compiler.is_compiling():
                return uniform_cross_entropy(s)  # SimCLR's layout: one log_softmax, no logsumexp
        # N_i only with a fixed Q: with Q = N_i it cancels (no count is converted per call)
        num_valid = None if self.q is None else s.num_valid()
        return info_nce(weighted.log_weighted_sum, s.positive, num_valid, q=self.q)

    def row_form(self) -> RowForm | None:
        """``RowForm("nce")`` (``softplus(a − s⁺)``) for the symmetric InfoNCE (``q=None``)."""
        return _NCE_FORM if self.q is None else None

    def _config(self) -> dict[str, object]:
        return {"q": self.q}
