"""A FIFO memory queue of negative keys, the loss over it, and the momentum update of the key encoder.

MoCo (He et al., CVPR 2020) and MoCo-v2 (Chen et al., arXiv:2003.04297), as used with hard
negatives by Robinson et al. (ICLR 2021), App. C.1. The memory lives in a wrapper around the loss,
not in the loss (as ``CrossBatchMemory`` wraps a loss in PyTorch Metric Learning; Musgrave,
Belongie and Lim, arXiv:2008.09164, 2020): :class:`QueueLoss` scores the queries against the
queue, then enqueues the keys.

>>> import torch
>>> from hardneg import ContrastiveLoss
>>> from hardneg.queue import MemoryQueue, QueueLoss
>>> queue = MemoryQueue(size=4, dim=2)
>>> queue.enqueue(torch.tensor([[1., 0.], [0., 1.]]))
>>> queue.candidates().shape, int(queue.filled)
(torch.Size([2, 2]), 2)
>>> moco = QueueLoss(ContrastiveLoss(temperature=0.2), queue)
>>> loss = moco(torch.randn(2, 2), torch.randn(2, 2))  # the loss over the queue, then the enqueue
>>> loss.shape, int(queue.filled)
(torch.Size([]), 4)
"""

from __future__ import annotations

from typing import Literal, Protocol, overload

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from hardneg import distributed
from hardneg._validation import NonFiniteError, check_in_interval
from hardneg.reduction import LossOutput
from hardneg.scores import compute_dtype

__all__ = ["MemoryQueue", "PairLoss", "QueueLoss", "momentum_update"]


def _check_int(name: str, value: int, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int >= {low}, got {value!r} of type {type(value).__name__}")
    if value < low:
        raise ValueError(f"{name} must be an int >= {low}, got {value}")
    return value


class MemoryQueue(nn.Module):
    """FIFO queue of the last ``size`` keys (and optionally their labels), as registered buffers.

    Buffers (saved in ``state_dict``, moved by ``.to()``, broadcast by DDP): ``keys`` (size, dim),
    ``pointer`` (the slot the next key is written to), ``filled`` (how many slots hold keys) and,
    with ``with_labels=True``, ``labels`` (size,) int64.

    :meth:`enqueue` writes detached keys at ``pointer`` with wrap-around, so that the oldest keys
    are the ones overwritten (first in, first out). The queue remembers how many of its newest keys
    are unit rows (:meth:`keys_normalized`: told by the caller, or read with the finiteness check),
    so that a loss that normalises need not normalise them again at every step. It writes **out
    of place** (the buffer is replaced, not mutated), so a :meth:`candidates` tensor used in the
    current loss stays valid for its backward pass: compute the loss with the queue *first*, then
    enqueue the new keys (MoCo's order: the current batch's keys are never their own negatives).

    Args:
        size: number of slots (MoCo-v2: 65536).
        dim: key dimension d.
        with_labels: also store integer labels (for collision-free negatives and diagnostics).
        dtype: dtype of the stored keys (float32 by default; keys are cast on enqueue).

    Shapes:
        ``keys`` buffer (size, dim); ``labels`` buffer (size,) int64 (−1: unknown);
        :meth:`enqueue` takes keys (B, dim) and labels (B,); :meth:`candidates` returns
        (filled, dim) and :meth:`candidate_labels` (filled,).

    References:
        He, Fan, Wu, Xie and Girshick, "Momentum Contrast for Unsupervised Visual Representation
        Learning", CVPR 2020, §3.2 (the dictionary as a queue) and Algorithm 1 (enqueue, dequeue);
        Chen, Fan, Girshick and He, arXiv:2003.04297, 2020 (MoCo-v2: K = 65536).

    Example:
        >>> q = MemoryQueue(size=3, dim=2)
        >>> q.enqueue(torch.ones(2, 2))
        >>> q.enqueue(torch.zeros(2, 2))        # wraps around: the oldest key is overwritten
        >>> len(q), q.candidates().shape, q.candidates().sum().item()
        (3, torch.Size([3, 2]), 2.0)
    """

    keys: Tensor
    pointer: Tensor
    filled: Tensor
    labels: Tensor

    def __init__(self, size: int, dim: int, *, with_labels: bool = False, dtype: torch.dtype = torch.float32):
        super().__init__()
        self.size = _check_int("size", size, 1)
        self.dim = _check_int("dim", dim, 1)
        self.with_labels = bool(with_labels)
        self.register_buffer("keys", torch.zeros(self.size, self.dim, dtype=dtype))
        self.register_buffer("pointer", torch.zeros((), dtype=torch.long))
        self.register_buffer("filled", torch.zeros((), dtype=torch.long))
        if self.with_labels:
            self.register_buffer("labels", torch.full((self.size,), -1, dtype=torch.long))
        self._filled_seen: tuple[Tensor, int, int] | None = None
        # (keys buffer, its version, how many of the newest keys are unit rows): valid while the
        # buffer is that object at that version (an enqueue replaces it; load_state_dict, .to()
        # and in-place edits leave the count unknown: re-read once by keys_normalized)
        self._unit_seen: tuple[Tensor, int, int] | None = None

    def _filled(self) -> int:
        """``filled`` as a Python int, read from the buffer once per value: cached against the
        buffer object and its version counter (an enqueue replaces it, ``load_state_dict`` and
        ``.to()`` write or replace it), so a training step reads no tensor value for it."""
        seen, buf = self._filled_seen, self.filled
        if seen is None or seen[0] is not buf or seen[1] != buf._version:
            seen = (buf, buf._version, int(buf))
            self._filled_seen = seen
        return seen[2]

    def __len__(self) -> int:
        return self._filled()

    def _unit_run(self) -> int | None:
        """How many of the newest keys are known to be unit rows, or ``None`` when the buffer was
        changed other than by :meth:`enqueue` (then unknown)."""
        seen, buf = self._unit_seen, self.keys
        if seen is None or seen[0] is not buf or seen[1] != buf._version:
            return None
        return seen[2]

    @torch.no_grad()
    def keys_normalized(self) -> bool:
        """Whether every stored key is a unit row (L2 norm 1 within 16 ulps of the queue's dtype).

        Known without reading a tensor value while the keys were enqueued as unit rows
        (``normalized=True``, as :class:`QueueLoss` does when its loss normalises, or found so by
        the finiteness check of :meth:`enqueue`); after ``load_state_dict``, ``.to()`` or an
        in-place edit of the buffer, the norms are read once (one host read) and remembered.
        False for an empty queue.
        """
        n = self._filled()
        run = self._unit_run()
        if run is None:
            run = n if n and bool(self._unit_rows(self.keys[:n])) else 0
            self._unit_seen = (self.keys, self.keys._version, run)
        return n > 0 and run >= n

    def _unit_rows(self, keys: Tensor) -> Tensor:
        """0-dim bool: every row of ``keys`` has norm 1 within 16 ulps of the queue's dtype."""
        if keys.shape[0] == 0:
            return torch.ones((), dtype=torch.bool, device=keys.device)
        tol = 16 * torch.finfo(self.keys.dtype).eps
        norms = torch.linalg.vector_norm(keys.to(self.keys.dtype), dim=1)
        return (norms - 1).abs().amax() <= tol

    @torch.no_grad()
    def enqueue(
        self,
        keys: Tensor,
        labels: Tensor | None = None,
        *,
        check_finite: bool = True,
        normalized: bool | None = None,
    ) -> None:
        """Append keys (B, dim) (detached, cast to the queue's dtype); the oldest are dropped first.

        If B > size only the last ``size`` keys are kept. ``check_finite=False`` skips the
        finiteness check (a host read), for keys already checked (:class:`QueueLoss` enqueues the
        keys its loss call has just validated). ``normalized``: ``True`` — the caller vouches that
        the keys are unit rows in the queue's dtype (what :class:`QueueLoss` enqueues when its loss
        normalises); ``False`` — they are not; ``None`` — found out in the finiteness check's host
        read (no read, and counted as not unit, with ``check_finite=False``). See
        :meth:`keys_normalized`.

        Shapes: ``keys`` (B, dim); ``labels`` (B,) (with ``with_labels=True``).
        """
        if not isinstance(keys, Tensor) or keys.dim() != 2 or keys.shape[1] != self.dim:
            got: object = tuple(keys.shape) if isinstance(keys, Tensor) else type(keys).__name__
            raise ValueError(f"keys must have shape (B, dim={self.dim}) to match the queue's dim, got {got}")
        if self.with_labels:
            if labels is None or not isinstance(labels, Tensor) or labels.shape != (keys.shape[0],):
                got = tuple(labels.shape) if isinstance(labels, Tensor) else repr(labels)
                raise ValueError(
                    f"labels must be a tensor of shape ({keys.shape[0]},) for a queue with with_labels=True, "
                    f"got {got}"
                )
        elif labels is not None:
            raise ValueError("labels were given but the queue was built with with_labels=False")
        if check_finite:
            flags = [torch.isfinite(keys).all()]
            if normalized is None:  # read in the same host read as the finiteness
                flags.append(self._unit_rows(keys))
            read = torch.stack(flags).tolist()
            if not read[0]:
                bad = int((~torch.isfinite(keys)).any(dim=1).sum())
                raise NonFiniteError(
                    f"keys must be finite, got {bad} of {keys.shape[0]} rows with NaN or Inf "
                    "(a non-finite key would poison every later loss computed with the queue)"
                )
            if normalized is None:
                normalized = bool(read[1])
        keys = keys.detach().to(device=self.keys.device, dtype=self.keys.dtype)
        if keys.shape[0] > self.size:
            keys = keys[-self.size :]
            labels = None if labels is None else labels[-self.size :]
        b = keys.shape[0]
        filled = min(self._filled() + b, self.size)
        run = self._unit_run()
        # the newest keys known to be unit rows: these b, and those before them if they were
        run = min((run or 0) + b, self.size) if normalized else 0
        slots = (self.pointer + torch.arange(b, device=self.keys.device)) % self.size
        self.keys = self.keys.index_copy(0, slots, keys)
        if self.with_labels and labels is not None:
            self.labels = self.labels.index_copy(0, slots, labels.detach().to(self.labels.device, torch.long))
        self.pointer = (self.pointer + b) % self.size
        self.filled = torch.clamp(self.filled + b, max=self.size)
        self._filled_seen = (self.filled, self.filled._version, filled)
        self._unit_seen = (self.keys, self.keys._version, run)

    def candidates(self) -> Tensor:
        """The valid keys (filled, dim), in storage order (no copy).

        Until the queue is full these are slots ``0 … filled−1``; afterwards all slots. The loss
        is a sum over candidates, so storage order is all it needs; see :meth:`ordered`.
        """
        return self.keys[: self._filled()]

    def candidate_labels(self) -> Tensor:
        """Labels (filled,) of :meth:`candidates` (only with ``with_labels=True``)."""
        if not self.with_labels:
            raise ValueError("candidate_labels() needs a queue built with with_labels=True")
        return self.labels[: self._filled()]

    def ordered(self) -> Tensor:
        """The valid keys from oldest to newest (a copy; for inspection and tests)."""
        n = self._filled()
        if n < self.size:
            return self.keys[:n].clone()
        return torch.roll(self.keys, shifts=-int(self.pointer), dims=0)

    def extra_repr(self) -> str:
        return f"size={self.size}, dim={self.dim}, filled={self._filled()}, with_labels={self.with_labels}"


class PairLoss(Protocol):
    """What :class:`QueueLoss` needs of its loss: :class:`hardneg.ContrastiveLoss` has it.

    A structural type, so that this module does not import :mod:`hardneg.loss`.

    Shapes:
        ``pair(anchors, positives, candidates)``: anchors and positives (A, d), candidates (N, d),
        ``mask`` (A, N) bool, labels (A,) and (N,) → a scalar, (A,) with ``reduction="none"``,
        or a :class:`~hardneg.reduction.LossOutput` with ``details=True``. :class:`QueueLoss`
        passes ``candidates_normalized=True`` when its queue holds unit keys (which the loss then
        need not normalise again), else ``False``.

    References:
        PEP 544 (Levkivskyi, Lehtosalo and Langa, 2017): structural subtyping by protocols.

    Example:
        >>> from hardneg import ContrastiveLoss
        >>> isinstance(ContrastiveLoss(), nn.Module), callable(getattr(ContrastiveLoss(), "pair"))
        (True, True)
    """

    normalize: bool
    gather_distributed: bool

    def pair(
        self,
        anchors: Tensor,
        positives: Tensor,
        candidates: Tensor,
        *,
        mask: Tensor | None = ...,
        anchor_labels: Tensor | None = ...,
        candidate_labels: Tensor | None = ...,
        generator: torch.Generator | None = ...,
        details: bool = ...,
        gather: bool = ...,
        candidates_normalized: bool = ...,
    ) -> Tensor | LossOutput: ...


class QueueLoss(nn.Module):
    """MoCo(-v2)'s loss: each query against its key (positive) and a memory queue's keys (negatives).

    A wrapper that owns the queue and its enqueue; the wrapped :class:`~hardneg.ContrastiveLoss`
    keeps no state. One call is ``loss.pair(q, k, queue.candidates())`` with the loss's negative
    distribution and objective (Robinson et al., ICLR 2021, App. C.1 use ``Hard(beta=0.2)`` with
    ``tau_plus=0`` on N = 65536 keys), **then** — after the loss is computed, so the batch is never
    its own negative — :meth:`enqueue` of the keys, as MoCo's reference code does (He et al.,
    CVPR 2020, Algorithm 1). The queue's buffers are written out of place, so the loss's backward
    pass stays valid after the enqueue. ``k`` should come from the momentum encoder (no gradient).

    With labels and a queue built with ``with_labels=True``, the queue's labels are the candidate
    labels (collision-free negatives, collision diagnostics).

    Args:
        loss: the contrastive loss, a :class:`~hardneg.ContrastiveLoss` (its ``normalize``,
            ``gather_distributed``, negatives, objective and memory budget apply).
        queue: the :class:`MemoryQueue` of keys, already holding some (MoCo fills it with random
            unit vectors first).

    Shapes:
        ``q``, ``k`` (B, d) with d the queue's ``dim``; ``labels`` optional (B,) → a scalar (or
        (B,) with ``reduction="none"``), a :class:`~hardneg.reduction.LossOutput` with
        ``details=True``; the queue's (filled, d) keys are the candidates.

    References:
        He, Fan, Wu, Xie and Girshick, CVPR 2020, eq. (1) (InfoNCE over the queue) and Algorithm 1;
        Chen, Fan, Girshick and He, arXiv:2003.04297, 2020 (MoCo-v2); Robinson, Chuang, Sra and
        Jegelka, "Contrastive Learning with Hard Negative Samples", ICLR 2021, App. C.1.

    Example:
        >>> from hardneg import ContrastiveLoss
        >>> queue = MemoryQueue(size=8, dim=4)
        >>> queue.enqueue(torch.randn(4, 4))
        >>> moco = QueueLoss(ContrastiveLoss(temperature=0.2), queue)
        >>> out = moco(torch.randn(3, 4), torch.randn(3, 4), details=True)
        >>> out.per_anchor.shape, len(queue)     # scored against 4 keys, then 3 enqueued
        (torch.Size([3]), 7)
    """

    def __init__(self, loss: PairLoss, queue: MemoryQueue) -> None:
        super().__init__()
        if not isinstance(loss, nn.Module) or not callable(getattr(loss, "pair", None)):
            raise TypeError(
                "loss must be a hardneg.ContrastiveLoss (a module with the pair layout), "
                f"got {type(loss).__name__}"
            )
        if not isinstance(queue, MemoryQueue):
            raise TypeError(f"queue must be a hardneg.queue.MemoryQueue, got {type(queue).__name__}")
        self.loss = loss
        self.queue = queue

    @overload
    def forward(
        self,
        q: Tensor,
        k: Tensor,
        *,
        labels: Tensor | None = ...,
        generator: torch.Generator | None = ...,
        details: Literal[False] = ...,
        enqueue: bool = ...,
    ) -> Tensor: ...

    @overload
    def forward(
        self,
        q: Tensor,
        k: Tensor,
        *,
        labels: Tensor | None = ...,
        generator: torch.Generator | None = ...,
        details: Literal[True],
        enqueue: bool = ...,
    ) -> LossOutput: ...

    @overload
    def forward(
        self,
        q: Tensor,
        k: Tensor,
        *,
        labels: Tensor | None = ...,
        generator: torch.Generator | None = ...,
        details: bool = ...,
        enqueue: bool = ...,
    ) -> Tensor | LossOutput: ...

    def forward(
        self,
        q: Tensor,
        k: Tensor,
        *,
        labels: Tensor | None = None,
        generator: torch.Generator | None = None,
        details: bool = False,
        enqueue: bool = True,
    ) -> Tensor | LossOutput:
        """The loss of queries ``q`` with keys ``k`` over the queue, then (``enqueue``) the keys enqueued.

        ``details=True`` returns a :class:`~hardneg.reduction.LossOutput` (per-query losses and
        diagnostics). ``enqueue=False`` leaves the queue as it is (evaluation, benchmarks).

        Shapes: ``q``, ``k`` (B, d); ``labels`` optional (B,) → scalar (or (B,) with
        ``reduction="none"``).
        """
        queue = self.queue
        if len(queue) == 0:
            raise ValueError("queue is empty: enqueue keys before the first QueueLoss call (got filled=0)")
        if q.dim() != 2 or q.shape[1] != queue.dim:
            raise ValueError(
                f"q must have shape (B, dim={queue.dim}) to match the queue, got {tuple(q.shape)}"
            )
        cand_labels = queue.candidate_labels() if (labels is not None and queue.with_labels) else None
        # keys stored normalised are not normalised again when they enter the scores as they are
        # (the queue's dtype is the call's compute dtype): the same values, one pass over N·d less
        unit = (
            self.loss.normalize
            and isinstance(k, Tensor)
            and queue.keys.dtype == q.dtype == compute_dtype(torch.promote_types(q.dtype, k.dtype))
            and queue.keys_normalized()
        )
        out = self.loss.pair(  # the pair layout, materialised or tiled by the loss's memory budget
            q,
            k,
            queue.candidates().to(q.dtype),
            anchor_labels=labels if cand_labels is not None else None,
            candidate_labels=cand_labels,
            generator=generator,
            details=details,
            gather=False,  # the queue is the same on every rank: the enqueue gathers the keys
            candidates_normalized=bool(unit),
        )
        if enqueue:  # a ContrastiveLoss has validated k (or validation is off): no second read
            self._enqueue(k, labels, check_finite=not hasattr(self.loss, "validate"))
        return out

    def enqueue(self, k: Tensor, labels: Tensor | None = None) -> None:
        """Enqueue keys in the form in which they enter the scores: detached and, when the loss
        normalises, L2-normalised; gathered from all ranks first when distributed (with
        ``gather_distributed``), so that every rank's queue stays identical. On a queue with labels,
        keys without labels are stored with the unknown label −1 (never a collision).

        Shapes: ``k`` (B, d); ``labels`` optional (B,).
        """
        self._enqueue(k, labels, check_finite=True)

    @torch.no_grad()
    def _enqueue(self, k: Tensor, labels: Tensor | None, *, check_finite: bool) -> None:
        keys = k.detach()
        unit: bool | None = None  # unknown: found out with the finiteness check, if there is one
        if self.loss.normalize:
            keys = F.normalize(keys, dim=1)
            # unit rows, still unit to the queue's precision after the enqueue's cast unless that
            # cast widens them (normalised in bfloat16, stored in float32)
            if torch.finfo(keys.dtype).eps <= torch.finfo(self.queue.keys.dtype).eps:
                unit = True
        lab = None
        if self.queue.with_labels:
            lab = (
                labels
                if labels is not None
                else torch.full((keys.shape[0],), -1, dtype=torch.long, device=keys.device)
            )
        group = getattr(self.loss, "process_group", None)
        if not self.loss.gather_distributed:
            distributed.warn_local_negatives(group)  # each rank's queue holds its own keys only
        elif distributed.is_distributed(group):
            keys = distributed.all_gather_no_grad(keys, group=group)
            lab = None if lab is None else distributed.all_gather_no_grad(lab, group=group)
        self.queue.enqueue(keys, lab, check_finite=check_finite, normalized=unit)


@torch.no_grad()
def momentum_update(online: nn.Module, target: nn.Module, m: float = 0.999) -> None:
    """Exponential moving average of the key encoder (MoCo): ``θ_k ← m θ_k + (1 − m) θ_q``.

    Parameters are matched in order and must have equal shapes; buffers (e.g. BatchNorm
    statistics) are left to the caller, as in MoCo.

    Args:
        online: the query encoder (θ_q), trained by back-propagation.
        target: the key encoder (θ_k), updated in place.
        m: momentum in [0, 1]; MoCo uses 0.999.

    Shapes:
        every parameter of ``target`` has the shape of the matching parameter of ``online``.

    References:
        He, Fan, Wu, Xie and Girshick, "Momentum Contrast for Unsupervised Visual Representation
        Learning", CVPR 2020, §3.2, eq. (2) (momentum update, m = 0.999).

    Example:
        >>> online, target = nn.Linear(2, 1, bias=False), nn.Linear(2, 1, bias=False)
        >>> _ = online.weight.data.fill_(1.0), target.weight.data.fill_(0.0)
        >>> momentum_update(online, target, m=0.9)
        >>> [round(w, 4) for w in target.weight.data.flatten().tolist()]    # 0.9 · 0 + 0.1 · 1
        [0.1, 0.1]
    """
    m = check_in_interval("m", m, low=0.0, high=1.0, closed_high=True)
    po, pt = list(online.parameters()), list(target.parameters())
    if len(po) != len(pt):
        raise ValueError(
            f"online and target must have the same parameters, got {len(po)} and {len(pt)} parameter tensors"
        )
    for i, (a, b) in enumerate(zip(po, pt)):
        if a.shape != b.shape:
            raise ValueError(
                f"online and target parameter #{i} must have the same shape, "
                f"got {tuple(a.shape)} and {tuple(b.shape)}"
            )
        b.mul_(m).add_(a.detach(), alpha=1.0 - m)
