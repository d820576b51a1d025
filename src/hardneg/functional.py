"""The loss engine as functions: scores → negative distribution → objective → reduction.

>>> import torch
>>> from hardneg import functional, negatives
>>> z1, z2 = torch.randn(8, 16), torch.randn(8, 16)
>>> loss = functional.contrastive_loss(z1, z2, temperature=0.5, tau_plus=0.1,
...                                    negatives=negatives.Hard(beta=1.0))
>>> loss.shape
torch.Size([])
>>> functional.contrastive_loss(z1, z2, details=True).per_anchor.shape   # as ContrastiveLoss
torch.Size([16])
"""

from __future__ import annotations

from typing import Literal, overload

import torch
from torch import Tensor

from hardneg._validation import check_rows_nonempty
from hardneg.negatives.base import NegativeDistribution
from hardneg.negatives.uniform import Uniform
from hardneg.objectives.base import Objective
from hardneg.objectives.debiased import Debiased
from hardneg.objectives.nce import InfoNCE
from hardneg.reduction import LossOutput, check_reduction, negative_diagnostics, reduce
from hardneg.scores import Scores, simclr_scores

__all__ = [
    "contrastive_loss",
    "default_objective",
    "loss_from_scores",
    "resolve_objective",
]


def default_objective(tau_plus: float) -> Objective:
    """InfoNCE for ``tau_plus == 0`` (exactly NT-Xent), else the debiased objective.

    Args:
        tau_plus: the class prior τ⁺ ∈ [0, 1) of the debiased estimator.

    References:
        Chen, Kornblith, Norouzi and Hinton, "A Simple Framework for Contrastive Learning of
        Visual Representations", ICML 2020, eq. (1) (NT-Xent); Chuang, Robinson, Lin, Torralba
        and Jegelka, "Debiased Contrastive Learning", NeurIPS 2020, §3 (the debiased objective).

    Example:
        >>> type(default_objective(0.0)).__name__, type(default_objective(0.1)).__name__
        ('InfoNCE', 'Debiased')
    """
    return InfoNCE() if tau_plus == 0 else Debiased(tau_plus)


def resolve_objective(tau_plus: float, objective: Objective | None) -> Objective:
    """The given objective, or :func:`default_objective` of ``tau_plus``; not both.

    Args:
        tau_plus: the class prior τ⁺ (must be 0 when ``objective`` is given).
        objective: an :class:`~hardneg.objectives.Objective`, or ``None``.

    References:
        Chen, Kornblith, Norouzi and Hinton, "A Simple Framework for Contrastive Learning of
        Visual Representations", ICML 2020, eq. (1) (NT-Xent); Chuang, Robinson, Lin, Torralba
        and Jegelka, "Debiased Contrastive Learning", NeurIPS 2020, §3.

    Example:
        >>> type(resolve_objective(0.0, InfoNCE())).__name__, type(resolve_objective(0.2, None)).__name__
        ('InfoNCE', 'Debiased')
    """
    if objective is None:
        return default_objective(tau_plus)
    if tau_plus != 0:
        raise ValueError(
            f"give tau_plus to the objective, not both: got tau_plus={tau_plus!r} and objective={objective!r}"
        )
    return objective


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
    per_anchor = objective(weighted)
    diag: dict[str, float] = {}
    if diagnostics:
        with torch.no_grad():
            diag = negative_diagnostics(weighted)
            diag.update({str(k): float(v) for k, v in negatives.diagnostics(weighted).items()})
            diag.update({str(k): float(v) for k, v in objective.diagnostics(weighted).items()})
        diag["loss"] = float(per_anchor.detach().mean())
    return LossOutput(loss=reduce(per_anchor, reduction), per_anchor=per_anchor, diagnostics=diag)


def _two_view_loss(
    z1: Tensor,
    z2: Tensor,
    *,
    temperature: float,
    tau_plus: float,
    negatives: NegativeDistribution | None,
    objective: Objective | None,
    normalize: bool,
    reduction: str,
    labels: Tensor | None,
    diagnostics: bool,
    generator: torch.Generator | None,
) -> LossOutput:
    objective = resolve_objective(tau_plus, objective)
    scores = simclr_scores(z1, z2, temperature=temperature, normalize=normalize, labels=labels)
    return loss_from_scores(
        scores,
        negatives=negatives,
        objective=objective,
        reduction=reduction,
        diagnostics=diagnostics,
        generator=generator,
    )


@overload
def contrastive_loss(
    z1: Tensor, z2: Tensor, *, temperature: float = ..., tau_plus: float = ...,
    negatives: NegativeDistribution | None = ..., objective: Objective | None = ..., normalize: bool = ...,
    reduction: str = ..., labels: Tensor | None = ..., generator: torch.Generator | None = ...,
    details: Literal[False] = ...,
) -> Tensor: ...  # fmt: skip
@overload
def contrastive_loss(
    z1: Tensor, z2: Tensor, *, temperature: float = ..., tau_plus: float = ...,
    negatives: NegativeDistribution | None = ..., objective: Objective | None = ..., normalize: bool = ...,
    reduction: str = ..., labels: Tensor | None = ..., generator: torch.Generator | None = ...,
    details: Literal[True],
) -> LossOutput: ...  # fmt: skip
@overload
def contrastive_loss(
    z1: Tensor, z2: Tensor, *, temperature: float = ..., tau_plus: float = ...,
    negatives: NegativeDistribution | None = ..., objective: Objective | None = ..., normalize: bool = ...,
    reduction: str = ..., labels: Tensor | None = ..., generator: torch.Generator | None = ...,
    details: bool = ...,
) -> Tensor | LossOutput: ...  # fmt: skip


def contrastive_loss(
    z1: Tensor,
    z2: Tensor,
    *,
    temperature: float = 0.5,
    tau_plus: float = 0.0,
    negatives: NegativeDistribution | None = None,
    objective: Objective | None = None,
    normalize: bool = True,
    reduction: str = "mean",
    labels: Tensor | None = None,
    generator: torch.Generator | None = None,
    details: bool = False,
) -> Tensor | LossOutput:
    """Contrastive loss of two views in SimCLR's layout (2B anchors, N = 2B − 2 negatives).

    With the defaults this is SimCLR's NT-Xent; ``tau_plus > 0`` selects the debiased objective
    and ``negatives=Hard(beta)`` the hard negatives of Robinson et al. (ICLR 2021), eq. (4).
    ``details=True`` returns a :class:`~hardneg.reduction.LossOutput` (per-anchor losses and
    diagnostics), as :class:`~hardneg.ContrastiveLoss` does.

    Args:
        z1: the first views.
        z2: the second views, row-aligned with ``z1``.
        temperature: t; logits are ``⟨v_i, v_j⟩ / t``.
        tau_plus: the class prior τ⁺ ∈ [0, 1) of the debiased objective (0: InfoNCE).
        negatives: the negative distribution (default uniform).
        objective: the objective (then ``tau_plus`` must be 0).
        normalize: L2-normalise the views first.
        reduction: ``"mean"``, ``"sum"`` or ``"none"``.
        labels: optional integer labels shared by both views.
        generator: the randomness of random distributions (K-subsampling), or ``None``.
        details: return a :class:`~hardneg.reduction.LossOutput` instead of the loss.

    Shapes:
        ``z1``, ``z2`` (B, d); ``labels`` (B,) → scalar (or (2B,) with ``reduction="none"``).

    References:
        Chen, Kornblith, Norouzi and Hinton, "A Simple Framework for Contrastive Learning of
        Visual Representations", ICML 2020, eq. (1) (NT-Xent); Chuang, Robinson, Lin, Torralba
        and Jegelka, "Debiased Contrastive Learning", NeurIPS 2020, §3; Robinson, Chuang, Sra and
        Jegelka, "Contrastive Learning with Hard Negative Samples", ICLR 2021, §3, eq. (4).

    Example:
        >>> from hardneg import negatives
        >>> z1, z2 = torch.randn(8, 16), torch.randn(8, 16)
        >>> contrastive_loss(z1, z2, tau_plus=0.1, negatives=negatives.Hard(beta=1.0)).shape
        torch.Size([])
        >>> contrastive_loss(z1, z2, reduction="none").shape
        torch.Size([16])
    """
    out = _two_view_loss(
        z1, z2, temperature=temperature, tau_plus=tau_plus, negatives=negatives, objective=objective,
        normalize=normalize, reduction=reduction, labels=labels, diagnostics=details, generator=generator,
    )
    return out if details else out.loss
