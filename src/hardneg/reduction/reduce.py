"""Reduction of per-anchor losses (step 4 of the loss engine)."""

from __future__ import annotations

from torch import Tensor

__all__ = ["REDUCTIONS", "check_reduction", "reduce"]

REDUCTIONS = ("mean", "sum", "none")


def check_reduction(reduction: str) -> str:
    """Return ``reduction`` if it is one of :data:`REDUCTIONS`, else raise ``ValueError``."""
    if reduction not in REDUCTIONS:
        raise ValueError(f"reduction must be one of {REDUCTIONS}, got {reduction!r}")
    return reduction


def reduce(per_anchor: Tensor, reduction: str) -> Tensor:
    """Reduce per-anchor losses (A,) with ``"mean"``, ``"sum"`` or ``"none"``."""
    check_reduction(reduction)
    if reduction == "mean":
        return per_anchor.mean()
    if reduction == "sum":
        return per_anchor.sum()
    return per_anchor
