"""The names of ``ContrastiveLoss`` in hardneg 0.1, kept as one-line delegates that warn.

``detailed``, ``pair_forward``, ``pair_detailed``, ``multi_positive_detailed``, ``queue_forward``
and ``queue_detailed`` became ``details=True`` on the layout methods and
:class:`hardneg.queue.QueueLoss` in 0.2; each still works, warns (``DeprecationWarning``, at the
caller's line) and is removed in 0.3 (``REMOVED_IN``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor

from hardneg import _warnings
from hardneg.reduction import LossOutput

if TYPE_CHECKING:
    from hardneg.queue import MemoryQueue

__all__ = ["REMOVED_IN", "DeprecatedAliases", "deprecated"]

REMOVED_IN = "0.3"  # the release that drops the deprecated names of 0.1


def deprecated(old: str, new: str, *, owner: str = "ContrastiveLoss") -> None:
    """Warn that ``<owner>.<old>`` is deprecated in favour of ``new`` (``DeprecationWarning`` at
    the user's line, :func:`hardneg._warnings.warn`), naming the release that removes it."""
    _warnings.warn(f"{owner}.{old} is deprecated; use {new} — removed in {REMOVED_IN}", DeprecationWarning)


class DeprecatedAliases:
    """Mixin of :class:`~hardneg.ContrastiveLoss`: its 0.1 names, removed in 0.3."""

    def detailed(
        self,
        z1: Tensor,
        z2: Tensor,
        *,
        labels: Tensor | None = None,
        generator: torch.Generator | None = None,
    ) -> LossOutput:
        """Deprecated: ``loss_fn(z1, z2, details=True)`` (:meth:`~hardneg.ContrastiveLoss.forward`)."""
        deprecated("detailed", "loss_fn(z1, z2, details=True)")
        loss: Any = self  # a ContrastiveLoss (not imported: hardneg.loss imports this module)
        return loss.forward(z1, z2, labels=labels, generator=generator, details=True)

    def pair_detailed(
        self,
        anchors: Tensor,
        positives: Tensor,
        candidates: Tensor,
        *,
        mask: Tensor | None = None,
        anchor_labels: Tensor | None = None,
        candidate_labels: Tensor | None = None,
        generator: torch.Generator | None = None,
    ) -> LossOutput:
        """Deprecated: :meth:`~hardneg.ContrastiveLoss.pair` with ``details=True``."""
        deprecated("pair_detailed", "pair(..., details=True)")
        loss: Any = self  # a ContrastiveLoss (not imported: hardneg.loss imports this module)
        return loss.pair(
            anchors, positives, candidates, mask=mask, anchor_labels=anchor_labels,
            candidate_labels=candidate_labels, generator=generator, details=True,
        )

    def pair_forward(
        self,
        anchors: Tensor,
        positives: Tensor,
        candidates: Tensor,
        *,
        mask: Tensor | None = None,
        anchor_labels: Tensor | None = None,
        candidate_labels: Tensor | None = None,
        generator: torch.Generator | None = None,
    ) -> Tensor:
        """Deprecated: :meth:`~hardneg.ContrastiveLoss.pair`."""
        deprecated("pair_forward", "pair(...)")
        loss: Any = self  # a ContrastiveLoss (not imported: hardneg.loss imports this module)
        return loss.pair(
            anchors, positives, candidates, mask=mask, anchor_labels=anchor_labels,
            candidate_labels=candidate_labels, generator=generator,
        )

    def multi_positive_detailed(
        self,
        anchors: Tensor,
        candidates: Tensor,
        positive_mask: Tensor,
        *,
        exclude: Tensor | None = None,
        generator: torch.Generator | None = None,
    ) -> LossOutput:
        """Deprecated: :meth:`~hardneg.ContrastiveLoss.multi_positive` with ``details=True``."""
        deprecated("multi_positive_detailed", "multi_positive(..., details=True)")
        loss: Any = self  # a ContrastiveLoss (not imported: hardneg.loss imports this module)
        return loss.multi_positive(
            anchors, candidates, positive_mask, exclude=exclude, generator=generator, details=True
        )

    def queue_detailed(
        self,
        q: Tensor,
        k: Tensor,
        queue: MemoryQueue,
        *,
        labels: Tensor | None = None,
        enqueue: bool = True,
        generator: torch.Generator | None = None,
        diagnostics: bool = True,
    ) -> LossOutput:
        """Deprecated: ``QueueLoss(loss_fn, queue)(q, k, details=True)`` (:mod:`hardneg.queue`)."""
        from hardneg.queue import QueueLoss

        deprecated("queue_detailed", "hardneg.queue.QueueLoss(loss_fn, queue)(q, k, details=True)")
        loss: Any = self  # a ContrastiveLoss (not imported: hardneg.loss imports this module)
        out = QueueLoss(loss, queue)(q, k, labels=labels, enqueue=enqueue, generator=generator, details=True)
        return out if diagnostics else replace(out, diagnostics={})

    def queue_forward(
        self,
        q: Tensor,
        k: Tensor,
        queue: MemoryQueue,
        *,
        labels: Tensor | None = None,
        enqueue: bool = True,
        generator: torch.Generator | None = None,
    ) -> Tensor:
        """Deprecated: ``QueueLoss(loss_fn, queue)(q, k)`` (:mod:`hardneg.queue`)."""
        from hardneg.queue import QueueLoss

        deprecated("queue_forward", "hardneg.queue.QueueLoss(loss_fn, queue)(q, k)")
        loss: Any = self  # a ContrastiveLoss (not imported: hardneg.loss imports this module)
        return QueueLoss(loss, queue)(q, k, labels=labels, enqueue=enqueue, generator=generator)
