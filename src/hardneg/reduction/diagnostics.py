"""Per-batch diagnostics of the negative distribution (step 4 of the loss engine).

All quantities are computed without gradients from the :class:`~hardneg.negatives.WeightedScores`
the objective used (no weight is computed a second time) and returned as Python floats.
"""

from __future__ import annotations

import torch
from torch import Tensor

from hardneg.negatives.weighted import WeightedScores
from hardneg.scores import Scores, same_label

__all__ = ["effective_sample_size", "gathered_diagnostics", "negative_diagnostics", "positive_cosine"]


def effective_sample_size(log_weights: Tensor) -> Tensor:
    """Kish's effective sample size of each row's weights: ``(Σ_j w_ij)² / Σ_j w_ij²`` (Kish, 1965).

    Computed in the log domain, ``exp(2 lse_j ℓ_ij − lse_j 2ℓ_ij)``; entries at ``−inf`` are
    absent. Uniform weights over ``N_i`` valid candidates give ``N_i``; one weight gives 1.

    Args:
        log_weights: each anchor's log-weights over its candidates (``−inf``: absent).

    Shapes:
        ``log_weights`` (A, N) → (A,).

    References:
        Kish, *Survey Sampling*, Wiley, 1965 (the effective sample size ``(Σ w)² / Σ w²``).

    Example:
        >>> lw = torch.tensor([[0.0, 0.0, 0.0, float("-inf")], [0.0, -1e4, -1e4, -1e4]])
        >>> [round(v, 4) for v in effective_sample_size(lw).tolist()]
        [3.0, 1.0]
    """
    return torch.exp(2 * torch.logsumexp(log_weights, dim=1) - torch.logsumexp(2 * log_weights, dim=1))


def positive_cosine(scores: Scores) -> Tensor:
    """cos(a_i, p_i) = s⁺_i · t / (‖a_i‖ ‖p_i‖), shape (A,), detached (one positive per anchor)."""
    denom = (scores.anchor_norms * scores.positive_norms).clamp_min(1e-12)
    return scores.positive.detach() * scores.temperature / denom


def _cosines(scores: Scores) -> tuple[Tensor, Tensor]:
    """Positive cosines (A,) — the mean over an anchor's positives when it has several — and the
    candidate cosines (A, N)."""
    t = scores.temperature
    denom = (scores.anchor_norms[:, None] * scores.candidate_norms[None, :]).clamp_min(1e-12)
    neg = scores.logits.detach() * t / denom
    if scores.positive_mask is not None:
        pm = scores.positive_mask
        pos = neg.masked_fill(~pm, 0.0).sum(dim=1) / pm.sum(dim=1).clamp_min(1)
        return pos, neg
    return positive_cosine(scores), neg


@torch.no_grad()
def negative_diagnostics(weighted: WeightedScores) -> dict[str, float]:
    """Diagnostics of one batch from the value object of step 2.

    Keys: ``num_negatives`` (mean N_i), ``ess`` and ``ess_fraction`` (mean ESS_i and
    ESS_i / N_i), ``pos_cosine`` (mean positive cosine), ``neg_cosine`` (mean cosine over valid
    negatives, unweighted) and ``neg_cosine_weighted`` (weighted by the negative distribution)
    and, with labels, ``collision_rate`` / ``collision_rate_weighted`` (fraction of negatives
    sharing the anchor's *known* label; Ash et al., AISTATS 2022, §4).

    Args:
        weighted: the :class:`~hardneg.negatives.WeightedScores` the objective used.

    Shapes:
        the weighted scores are (A, N); returns a dict of Python floats (batch means).

    References:
        Kish, *Survey Sampling*, Wiley, 1965 (ESS); Ash, Goel, Krishnamurthy and Misra,
        "Investigating the Role of Negatives in Contrastive Representation Learning", AISTATS 2022,
        §4 (collision rates); Robinson, Chuang, Sra and Jegelka, ICLR 2021, §3 (the hardness
        weighting whose cosines ``neg_cosine_weighted`` reports).

    Example:
        >>> from hardneg import negatives, simclr_scores
        >>> scores = simclr_scores(torch.randn(4, 3), torch.randn(4, 3), temperature=0.5)
        >>> uniform = negatives.Uniform()
        >>> d = negative_diagnostics(uniform.weigh(uniform.prepare(scores)))
        >>> d["num_negatives"], round(d["ess"], 4), round(d["ess_fraction"], 4)
        (6.0, 6.0, 1.0)
    """
    scores = weighted.scores
    pos_cos, neg_cos = _cosines(scores)
    same = None
    if scores.anchor_labels is not None and scores.candidate_labels is not None:
        same = same_label(scores.anchor_labels, scores.candidate_labels)
    return _diagnostics(weighted, pos_cos, neg_cos, same)


@torch.no_grad()
def gathered_diagnostics(
    weighted: WeightedScores,
    *,
    candidate_norms: Tensor,
    anchor_labels: Tensor | None = None,
    candidate_labels: Tensor | None = None,
) -> dict[str, float]:
    """:func:`negative_diagnostics` when column k of anchor i is its own candidate (the gathered
    engine: the K drawn candidates of each anchor), whose norms and labels are given per anchor.

    Shapes: ``candidate_norms`` (A, K), ``anchor_labels`` (A,), ``candidate_labels`` (A, K).
    The same keys and values as :func:`negative_diagnostics` on the (A, N) scores whose mask
    keeps those K candidates.
    """
    scores = weighted.scores
    t = scores.temperature
    neg_cos = scores.logits.detach() * t / (scores.anchor_norms[:, None] * candidate_norms).clamp_min(1e-12)
    same = None
    if anchor_labels is not None and candidate_labels is not None:
        ya = anchor_labels.to(candidate_labels.device)[:, None]
        same = (ya == candidate_labels) & (ya >= 0) & (candidate_labels >= 0)
    return _diagnostics(weighted, positive_cosine(scores), neg_cos, same)


def _diagnostics(
    weighted: WeightedScores, pos_cos: Tensor, neg_cos: Tensor, same: Tensor | None
) -> dict[str, float]:
    """The diagnostics from the positive cosines (A,), candidate cosines (A, N) and, with labels,
    the (A, N) bool "same known label as the anchor"."""
    scores = weighted.scores
    mask = scores.mask
    n_valid = scores.num_valid()
    ell = weighted.dense_log_weights().detach()
    w = ell.exp()  # weights (mean one over valid), 0 on invalid
    ess = effective_sample_size(ell)
    neg_cos = neg_cos.masked_fill(~mask, 0.0)
    out = {
        "num_negatives": float(n_valid.mean()),
        "ess": float(ess.mean()),
        "ess_fraction": float((ess / n_valid).mean()),
        "pos_cosine": float(pos_cos.mean()),
        "neg_cosine": float(neg_cos.sum() / mask.sum()),
        "neg_cosine_weighted": float(((w * neg_cos).sum(dim=1) / n_valid).mean()),
    }
    if same is not None:
        same = same & mask
        out["collision_rate"] = float(same.sum() / mask.sum())
        out["collision_rate_weighted"] = float(((w * same).sum(dim=1) / n_valid).mean())
    return out
