"""Negatives gathered from all processes, with gradients flowing back (``torch.distributed``).

**Off by default.** :class:`~hardneg.ContrastiveLoss` gathers only with
``gather_distributed=True`` (as lightly's and sentence-transformers' losses, whose gathering is
opt-in): embeddings that a training loop has already gathered (e.g. with Lightning's
``all_gather``) would otherwise be gathered a second time. The training pipeline turns it on
(config key ``loss.gather_distributed``, default ``true``): its loss is the single-process loss of
the global batch.

When asked, and a process group with more than one process is active, each rank keeps its own
anchors and its candidates are the candidates of all W ranks of the group (``process_group``;
the default group when ``None``), gathered by :func:`all_gather_with_grad` so that the gradient
of every rank's loss reaches the rank that produced the candidate (the backward of the gather is
a sum over ranks, an ``all_reduce`` of the full gradient of which each rank keeps its slice).
Every layout gathers: SimCLR's two views (:func:`gathered_simclr_scores`, and the tiled engine),
the pair layout (candidates gathered, the mask given for the local candidates, positives local),
the multi-positive layout (positive and exclusion masks given for the local candidates; the
other ranks' candidates are negatives), and the memory queue
(:class:`~hardneg.queue.QueueLoss` scores the local queries against the queue, which is the same
on every rank because :meth:`~hardneg.queue.QueueLoss.enqueue` gathers the keys). All ranks must
hold the same number of candidates (a clear error names the sizes otherwise).

**Reduction and DDP.** Each rank reduces over its *local* anchors (``mean`` over its A anchors).
With equal local batch sizes the mean of the W per-rank losses equals the loss of the
single-process computation on the concatenated batch, and because the gather's backward sums
the contributions of all ranks, the gradient on rank r of its local loss w.r.t. its local
embeddings is ``W · ∂L_global/∂z_r``; DistributedDataParallel's averaging of parameter
gradients over the W ranks then yields exactly ``∂L_global/∂θ``, the single-process gradient.
(With ``reduction="sum"`` DDP's averaging gives ``1/W`` of the single-process gradient of the
global sum; use ``"mean"``.)

**Per-rank choices.** Three negative distributions decide something from the local anchors
only, so that W ranks are not one process on the concatenated batch:

- :class:`~hardneg.negatives.Hard` with ``target_ess`` chooses β on every rank from that rank's
  anchors (the ranks' β differ slightly; :attr:`Hard.beta` is the local one);
- :class:`~hardneg.negatives.Subsample` (``num_negatives=K``) draws the K negatives of each
  local anchor on every rank, from the generator that rank passes (pass per-rank generators,
  e.g. :func:`hardneg.seeding.step_generator` with the rank, to get independent draws);
- :class:`~hardneg.negatives.OptimalTransport` solves the transport problem between the
  *local* anchors and the gathered candidates (its marginals are those of the local batch).

Everything else (uniform, fixed-β hard, debiased, collision-free negatives, every objective) is
exactly the single-process computation.

**Never silently local.** A loss that runs in a process group of more than one process *without*
gathering uses only its own rank's candidates as negatives (W times fewer than the global
batch): a different loss from the single-process one, with different weights after a few steps.
That may be what a loop wants (it gathered the embeddings itself), so it is allowed, but the
first such call of a process warns once (:func:`warn_local_negatives`), saying how to gather.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist
from torch import Tensor

from hardneg import _warnings
from hardneg.scores import Scores, check_two_views, pair_scores, simclr_mask

__all__ = [
    "GATHER_REMEDY",
    "all_gather_no_grad",
    "all_gather_with_grad",
    "check_equal_sizes",
    "gathered_simclr_scores",
    "is_distributed",
    "local_block",
    "rank",
    "warn_local_negatives",
    "world_size",
]

ProcessGroup = Any  # torch.distributed.ProcessGroup (``None``: the default group)


def _initialised() -> bool:
    return bool(dist.is_available() and dist.is_initialized())


def is_distributed(group: ProcessGroup | None = None) -> bool:
    """True when ``torch.distributed`` is initialised and ``group`` (default: the default group)
    has more than one process."""
    return _initialised() and int(dist.get_world_size(group)) > 1


_warned_local = False

GATHER_REMEDY = (
    "pass gather_distributed=True to ContrastiveLoss (pipeline: loss.gather_distributed=true) to "
    "score every rank's candidates"
)
"""What :func:`warn_local_negatives` tells a user of :class:`~hardneg.ContrastiveLoss` to do."""


def warn_local_negatives(group: ProcessGroup | None = None, *, remedy: str = GATHER_REMEDY) -> None:
    """Warn once per process that a loss runs distributed with local negatives only.

    Called by :class:`~hardneg.ContrastiveLoss` for every call that does not gather, and by the
    adapters (:mod:`hardneg.integrations`) with the remedy of their library; a no-op outside a
    process group of more than one process and after the first warning. The warning points at the
    user's line (:func:`hardneg._warnings.warn`).

    Args:
        group: the process group the loss would gather over (``None``: the default group).
        remedy: how to gather, in the caller's terms (default: ``gather_distributed=True``).
    """
    global _warned_local
    if _warned_local or not is_distributed(group):
        return
    _warned_local = True
    w = world_size(group)
    _warnings.warn(
        f"hardneg: the contrastive loss runs in a process group of {w} processes without "
        f"gathering, so each rank's negatives are its own batch's candidates only ({w}x fewer "
        f"than one process on the global batch, and a different loss); {remedy}, or ignore this "
        "if your loop gathered the embeddings itself",
        UserWarning,
    )


def world_size(group: ProcessGroup | None = None) -> int:
    """The number of processes of ``group`` (1 without an active process group)."""
    return int(dist.get_world_size(group)) if _initialised() else 1


def rank(group: ProcessGroup | None = None) -> int:
    """This process's rank within ``group`` (0 without an active process group)."""
    return int(dist.get_rank(group)) if _initialised() else 0


class _AllGather(torch.autograd.Function):
    """``y = [x_0; x_1; …; x_{W−1}]`` (concatenation along dim 0, rank order) with the adjoint
    backward: ``∂L/∂x_r = Σ_s (∂L_s/∂y)[r·n:(r+1)·n]``, the slice of rank r of the gradients of
    all ranks summed by one ``all_reduce``."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, group: ProcessGroup | None) -> Tensor:
        ctx.group = group
        ctx.n = int(x.shape[0])
        parts = [torch.empty_like(x) for _ in range(dist.get_world_size(group))]
        dist.all_gather(parts, x.contiguous(), group=group)
        return torch.cat(parts, dim=0)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, None]:
        grad = grad.contiguous().clone()
        dist.all_reduce(grad, op=dist.ReduceOp.SUM, group=ctx.group)
        r = int(dist.get_rank(ctx.group))
        return grad[r * ctx.n : (r + 1) * ctx.n], None


def check_equal_sizes(name: str, x: Tensor, group: ProcessGroup | None = None) -> None:
    """Refuse a gather of tensors whose shapes differ between the ranks of ``group``: raise a
    ``ValueError`` that names ``name`` and every rank's shape (a no-op on one process).

    A collective: every rank of ``group`` must call it.
    """
    if not is_distributed(group):
        return
    if x.dim() > 8:
        raise ValueError(f"{name} must have at most 8 dimensions to be gathered, got {x.dim()}")
    shape = torch.tensor([x.dim(), *x.shape, *([0] * (8 - x.dim()))], device=x.device)
    shapes = all_gather_no_grad(shape, group=group).view(-1, shape.numel())
    if bool((shapes != shape).any()):
        per_rank = [tuple(row[1 : 1 + row[0]]) for row in shapes.tolist()]
        raise ValueError(
            f"gathering {name} across processes needs the same shape on every rank, got shapes per "
            f"rank {per_rank} (the batch size must be equal on every rank: use drop_last=True in "
            "the data loader)"
        )


def all_gather_with_grad(x: Tensor, *, group: ProcessGroup | None = None) -> Tensor:
    """Concatenate ``x`` (n, ...) of every rank of ``group`` along dim 0, in rank order,
    differentiably → (W·n, ...).

    The backward pass sums the incoming gradients of all ranks (``all_reduce``) and returns each
    rank its slice, so that with a loss ``L_s`` on every rank s, ``∂/∂x_r`` is ``Σ_s ∂L_s/∂x_r``
    (the adjoint of the gather). All ranks must pass the same shape (not checked here: see
    :func:`check_equal_sizes`); without an active process group (or a group of one) ``x`` is
    returned as is.
    """
    if not is_distributed(group):
        return x
    out: Tensor = _AllGather.apply(x, group)
    return out


@torch.no_grad()
def all_gather_no_grad(x: Tensor, *, group: ProcessGroup | None = None) -> Tensor:
    """Concatenate ``x`` (n, ...) of every rank of ``group`` along dim 0 without gradients
    (labels, queue keys, masks) → (W·n, ...)."""
    if not is_distributed(group):
        return x
    parts = [torch.empty_like(x) for _ in range(dist.get_world_size(group))]
    dist.all_gather(parts, x.contiguous(), group=group)
    return torch.cat(parts, dim=0)


def gathered_simclr_scores(
    z1: Tensor,
    z2: Tensor,
    *,
    temperature: float,
    normalize: bool = True,
    labels: Tensor | None = None,
    group: ProcessGroup | None = None,
) -> Scores:
    """SimCLR's layout with candidates gathered from all W ranks of ``group``.

    Anchors are this rank's views ``v = [z1; z2]`` (2B); candidates are ``[v_0; v_1; …; v_{W−1}]``
    (2B·W, rank order, with gradients). Local anchor ``i`` is global candidate ``r·2B + i`` and
    its positive is local view ``(i + B) mod 2B``, i.e. global candidate ``r·2B + (i + B) mod 2B``;
    both are masked (Chen et al., ICML 2020, eq. (1), with the negatives of the global batch).
    Without an active process group this is :func:`~hardneg.simclr_scores`'s layout (one rank).

    Shapes: ``z1``, ``z2`` (B, d), the same B on every rank; ``labels`` optional (B,) →
    :class:`Scores` with A = 2B, N = 2B·W.
    """
    b = check_two_views(z1, z2)
    if b < 1:
        raise ValueError(f"batch size B (z1.shape[0]) must be >= 1, got {b}")
    r = rank(group)
    check_equal_sizes("the views z1, z2", z1, group)
    v = torch.cat([z1, z2], dim=0)  # (2B, d)
    candidates = all_gather_with_grad(v, group=group)  # (2B·W, d)
    pos_idx = (torch.arange(2 * b, device=v.device) + b) % (2 * b)
    mask = simclr_mask(b, v.device, rank=r, world_size=candidates.shape[0] // (2 * b))
    anchor_labels = candidate_labels = None
    if labels is not None:
        if not isinstance(labels, Tensor) or labels.shape != (b,):
            got = tuple(labels.shape) if isinstance(labels, Tensor) else type(labels).__name__
            raise ValueError(f"labels must be a tensor of shape ({b},), got {got}")
        anchor_labels = torch.cat([labels, labels]).to(v.device)
        candidate_labels = all_gather_no_grad(anchor_labels, group=group)
    return pair_scores(
        v,
        v[pos_idx],
        candidates,
        temperature=temperature,
        mask=mask,
        normalize=normalize,
        anchor_labels=anchor_labels,
        candidate_labels=candidate_labels,
    )


def local_block(local: Tensor, *, fill: bool, group: ProcessGroup | None = None) -> Tensor:
    """An (A, N) bool matrix about this rank's candidates placed in the (A, N·W) matrix about the
    gathered ones: columns ``r·N … (r+1)·N − 1`` are ``local``, every other column is ``fill``.

    The pair layout's ``mask`` (other ranks' candidates are valid negatives: ``fill=True``) and
    the multi-positive layout's ``positive_mask`` / ``exclude`` (``fill=False``).
    """
    w = world_size(group)
    if w == 1 or not is_distributed(group):
        return local
    a, n = int(local.shape[0]), int(local.shape[1])
    out = torch.full((a, n * w), bool(fill), dtype=torch.bool, device=local.device)
    r = rank(group)
    out[:, r * n : (r + 1) * n] = local
    return out
