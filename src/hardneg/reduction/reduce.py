"""Reduction of per-anchor losses (step 4 of the loss engine)."""

from __future__ import annotations

import torch
from torch import Tensor

from hardneg._numerics.constants import constant

__all__ = ["REDUCTIONS", "check_reduction", "reduce"]

REDUCTIONS = ("mean", "sum", "none")


def check_reduction(reduction: str) -> str:
    """Return ``reduction`` if it is one of :data:`REDUCTIONS`, else raise ``ValueError``.

    Args:
        reduction: ``"mean"``, ``"sum"`` or ``"none"``.

    References:
        Paszke et al., "PyTorch: An Imperative Style, High-Performance Deep Learning Library",
        NeurIPS 2019 (the ``reduction="mean" | "sum" | "none"`` convention of its losses).

    Example:
        >>> check_reduction("sum")
        'sum'
        >>> check_reduction("max")
        Traceback (most recent call last):
        ...
        ValueError: reduction must be one of ('mean', 'sum', 'none'), got 'max'
    """
    if reduction not in REDUCTIONS:
        raise ValueError(f"reduction must be one of {REDUCTIONS}, got {reduction!r}")
    return reduction


def reduce(per_anchor: Tensor, reduction: str) -> Tensor:
    """Reduce per-anchor losses (A,) with ``"mean"``, ``"sum"`` or ``"none"``.

    Args:
        per_anchor: the per-anchor losses.
        reduction: ``"mean"``, ``"sum"`` or ``"none"``.

    Shapes:
        ``per_anchor`` (A,) → a scalar, or (A,) with ``"none"``.

    References:
        Chen, Kornblith, Norouzi and Hinton, ICML 2020, Algorithm 1 (the loss as the mean over the
        2N anchors); Paszke et al., "PyTorch: An Imperative Style, High-Performance Deep Learning Library",
        NeurIPS 2019 (the ``reduction="mean" | "sum" | "none"`` convention of its losses).

    Example:
        >>> import torch
        >>> x = torch.tensor([1.0, 2.0, 3.0])
        >>> reduce(x, "mean").item(), reduce(x, "sum").item(), reduce(x, "none").shape
        (2.0, 6.0, torch.Size([3]))
    """
    check_reduction(reduction)
    if reduction == "mean":
        x = per_anchor
        eager_cpu = x.device.type == "cpu" and not torch.compiler.is_compiling()
        if eager_cpu and x.dtype.is_floating_point and x.numel():
            # ATen's CPU mean is this sum and division (the same value, bit for bit, and the same
            # gradient), at about half its dispatch cost with the count a cached 0-dim tensor
            return x.sum() / constant(x.numel(), x)
        return per_anchor.mean()
    if reduction == "sum":
        return per_anchor.sum()
    return per_anchor
