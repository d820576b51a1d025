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

from hardneg.engines.materialised import loss_from_scores
from hardneg.negatives.base import NegativeDistribution
from hardneg.objectives.base import Objective
from hardneg.objectives.debiased import Debiased
from hardneg.objectives.nce import InfoNCE
from hardneg.reduction import LossOutput
from hardneg.scores import simclr_scores

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
