"""``LossOutput``: what one loss evaluation returns."""

from __future__ import annotations

from dataclasses import dataclass, field

from torch import Tensor

__all__ = ["LossOutput"]


@dataclass(frozen=True)
class LossOutput:
    """The reduced loss, the per-anchor losses (A,) and a dict of diagnostics (plain floats).

    Args:
        loss: the loss reduced by the loss's ``reduction``.
        per_anchor: the loss of each anchor.
        diagnostics: plain floats (ESS, cosines, collision rates, …); empty unless asked for.

    Shapes:
        ``loss`` a scalar (or (A,) with ``reduction="none"``); ``per_anchor`` (A,).

    References:
        Chen, Kornblith, Norouzi and Hinton, ICML 2020, Algorithm 1 (the loss as the mean of the
        per-anchor terms); Kish, *Survey Sampling*, Wiley, 1965 (the effective sample size reported).

    Example:
        >>> import torch
        >>> out = LossOutput(loss=torch.tensor(1.5), per_anchor=torch.tensor([1.0, 2.0]))
        >>> out.loss.item(), out.per_anchor.shape, out.diagnostics
        (1.5, torch.Size([2]), {})
    """

    loss: Tensor
    per_anchor: Tensor
    diagnostics: dict[str, float] = field(default_factory=dict)
