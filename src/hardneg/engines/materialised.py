"""The materialised engine: steps 2–4 on the (A, N) :class:`~hardneg.scores.Scores`.

:func:`loss_from_scores` evaluates the negative distribution once into a
:class:`~hardneg.negatives.WeightedScores` that the objective and the diagnostics share (every
distribution and objective). On a small matrix whose weights are a closed-form tilt
(``WeightedScores.closed_tilt``) and whose objective declares the debiased row form
(:meth:`~hardneg.objectives.Objective.row_form`), the weighted sum, the debiased term and their
backward run as one autograd node (:func:`~hardneg.engines.fused_node.tilted_debiased_loss`):
the same values. :func:`materialised_bytes` is what the engine holds, read by the chooser.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from hardneg._validation import check_rows_nonempty
from hardneg.engines.fused_node import tilted_debiased_loss
from hardneg.negatives.base import NegativeDistribution
from hardneg.negatives.uniform import Uniform
from hardneg.negatives.weighted import WeightedScores
from hardneg.objectives.base import Objective
from hardneg.objectives.nce import InfoNCE
from hardneg.reduction import LossOutput, check_reduction, negative_diagnostics, reduce
from hardneg.scores import Scores

__all__ = ["hooked", "loss_from_scores", "materialised_bytes"]


def hooked(module: nn.Module) -> bool:
    """Whether calling ``module`` would run hooks (its own or global forward hooks): a node that
    bypasses the module's call is then not taken.

    Example:
        >>> hooked(InfoNCE())
        False
    """
    from torch.nn.modules import module as _module

    return bool(
        module._forward_hooks or module._forward_pre_hooks
        or _module._global_forward_hooks or _module._global_forward_pre_hooks
    )


def _row_node(objective: Objective, weighted: WeightedScores) -> Tensor | None:
    """The debiased loss as one node from the logits when the objective declares the debiased row
    form with τ⁺ > 0 and the weights are a closed-form tilt β ≥ 0 on a small dense matrix with one
    positive per anchor, else ``None`` (the objective computes it)."""
    s = weighted.scores
    beta = weighted.closed_tilt
    if beta is None or beta < 0.0 or not weighted.pending_sum or s.positive_mask is not None:
        return None
    form = objective.row_form()
    if form is None or form.kind != "debiased" or not form.tau_plus > 0.0:
        return None
    if not s.small_dense() or torch.compiler.is_compiling() or hooked(objective):
        return None
    return tilted_debiased_loss(s, beta=beta, tau_plus=form.tau_plus)


def loss_from_scores(
    scores: Scores,
    *,
    negatives: NegativeDistribution | None = None,
    objective: Objective | None = None,
    reduction: str = "mean",
    diagnostics: bool = False,
    generator: torch.Generator | None = None,
    validate: bool = True,
) -> LossOutput:
    """Steps 2–4 on precomputed :class:`Scores` (any layout: SimCLR, queue, gathered, pairs).

    The negative distribution is evaluated once into a
    :class:`~hardneg.negatives.WeightedScores`, which the objective and the diagnostics share.
    ``negatives`` defaults to :class:`~hardneg.negatives.Uniform`, ``objective`` to
    :class:`~hardneg.objectives.InfoNCE`; ``generator`` feeds random distributions (K-subsampling).
    Every anchor needs a valid negative: checked with a host read unless the layout established
    it (``Scores.nonempty``) or ``validate=False`` (:func:`~hardneg._validation.check_rows_nonempty`).

    Args:
        scores: the batch's :class:`Scores` (step 1).
        negatives: the negative distribution (default uniform).
        objective: the objective (default InfoNCE).
        reduction: ``"mean"``, ``"sum"`` or ``"none"``.
        diagnostics: fill the :class:`~hardneg.reduction.LossOutput`'s diagnostics.
        generator: the randomness of random distributions (K-subsampling), or ``None``.
        validate: check that every anchor has a valid negative (one host read).

    Shapes:
        :class:`Scores` of (A, N) → a :class:`~hardneg.reduction.LossOutput` with per-anchor
        losses (A,) and the loss reduced by ``reduction``.

    References:
        Oord, Li and Vinyals, arXiv:1807.03748, 2018, eq. (4) (InfoNCE); Robinson, Chuang, Sra
        and Jegelka, "Contrastive Learning with Hard Negative Samples", ICLR 2021, §3, eq. (4)
        (the weighted negative term); Chuang, Robinson, Lin, Torralba and Jegelka, "Debiased
        Contrastive Learning", NeurIPS 2020, §3.

    Example:
        >>> a = torch.nn.functional.normalize(torch.randn(4, 3), dim=1)
        >>> from hardneg.scores import simclr_scores
        >>> s = simclr_scores(a, a.flip(0), temperature=0.5)
        >>> out = loss_from_scores(s, reduction="none")
        >>> ref = -(s.positive - s.masked_logits().logsumexp(1).logaddexp(s.positive))  # NT-Xent
        >>> out.per_anchor.shape, torch.allclose(out.per_anchor, ref, atol=1e-5)
        (torch.Size([8]), True)
    """
    check_reduction(reduction)
    negatives = Uniform() if negatives is None else negatives
    objective = InfoNCE() if objective is None else objective
    if scores.positive_mask is not None and not objective.multi_positive:
        raise ValueError(
            f"objective {objective!r} is defined for one positive per anchor; scores with several "
            "positives (positive_mask) need InfoNCE or Debiased with a fixed tau_plus"
        )
    prepared = negatives.prepare(scores, generator=generator)
    if validate and not prepared.nonempty:
        check_rows_nonempty(prepared.num_valid())
    weighted = negatives.weigh(prepared)
    if not torch.compiler.is_compiling():  # a message only; Dynamo before 2.5 breaks on repr
        weighted.source = weighted.source or repr(negatives)
    per_anchor = _row_node(objective, weighted)
    if per_anchor is None:
        per_anchor = objective(weighted)
    diag: dict[str, float] = {}
    if diagnostics:
        with torch.no_grad():
            diag = negative_diagnostics(weighted)
            diag.update({str(k): float(v) for k, v in negatives.diagnostics(weighted).items()})
            diag.update({str(k): float(v) for k, v in objective.diagnostics(weighted).items()})
        diag["loss"] = float(per_anchor.detach().mean())
    return LossOutput(loss=reduce(per_anchor, reduction), per_anchor=per_anchor, diagnostics=diag)


def materialised_bytes(num_anchors: int, num_candidates: int, dtype: torch.dtype) -> int:
    """Peak bytes the materialised engine needs for an (A, N) batch, roughly four matrices.

    Four (A, N) floating matrices (logits, weights and their gradients) and one bool mask.

    Args:
        num_anchors: A.
        num_candidates: N.
        dtype: the compute dtype of the logits.

    Shapes:
        the batch's score matrices are (A, N); returns a number of bytes (int).

    References:
        Cheng et al. (Inf-CL), arXiv:2410.17243, 2024, §3 (the O(A·N) memory of the full
        similarity matrix that tiling removes).

    Example:
        >>> materialised_bytes(1000, 1000, torch.float32)    # 4 · 4 B + 1 B per entry
        17000000
    """
    return 4 * num_anchors * num_candidates * torch.finfo(dtype).bits // 8 + num_anchors * num_candidates


