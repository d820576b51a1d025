"""A FIFO memory queue of negative keys and the momentum update of the key encoder.

MoCo (He et al., CVPR 2020) and MoCo-v2 (Chen et al., arXiv:2003.04297), as used with hard
negatives by Robinson et al. (ICLR 2021), App. C.1.

>>> import torch
>>> from hardneg.queue import MemoryQueue
>>> queue = MemoryQueue(size=4, dim=2)
>>> queue.enqueue(torch.tensor([[1., 0.], [0., 1.]]))
>>> queue.candidates().shape, int(queue.filled)
(torch.Size([2, 2]), 2)
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from hardneg._validation import check_in_interval

__all__ = ["MemoryQueue", "momentum_update"]


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
    are the ones overwritten (first in, first out). It writes **out of place** (the buffer is
    replaced, not mutated), so a :meth:`candidates` tensor used in the current loss stays valid for
    its backward pass: compute the loss with the queue *first*, then enqueue the new keys
    (MoCo's order: the current batch's keys are never their own negatives).

    Args:
        size: number of slots (MoCo-v2: 65536).
        dim: key dimension d.
        with_labels: also store integer labels (for collision-free negatives and diagnostics).
        dtype: dtype of the stored keys (float32 by default; keys are cast on enqueue).
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

    def __len__(self) -> int:
        return int(self.filled)

    @torch.no_grad()
    def enqueue(self, keys: Tensor, labels: Tensor | None = None) -> None:
        """Append keys (B, dim) (detached, cast to the queue's dtype); the oldest are dropped first.

        If B > size only the last ``size`` keys are kept.
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
        if not bool(torch.isfinite(keys).all()):
            bad = int((~torch.isfinite(keys)).any(dim=1).sum())
            raise ValueError(
                f"keys must be finite, got {bad} of {keys.shape[0]} rows with NaN or Inf "
                "(a non-finite key would poison every later loss computed with the queue)"
            )
        keys = keys.detach().to(device=self.keys.device, dtype=self.keys.dtype)
        if keys.shape[0] > self.size:
            keys = keys[-self.size :]
            labels = None if labels is None else labels[-self.size :]
        b = keys.shape[0]
        slots = (self.pointer + torch.arange(b, device=self.keys.device)) % self.size
        self.keys = self.keys.index_copy(0, slots, keys)
        if self.with_labels and labels is not None:
            self.labels = self.labels.index_copy(0, slots, labels.detach().to(self.labels.device, torch.long))
        self.pointer = (self.pointer + b) % self.size
        self.filled = torch.clamp(self.filled + b, max=self.size)

    def candidates(self) -> Tensor:
        """The valid keys (filled, dim), in storage order (no copy).

        Until the queue is full these are slots ``0 … filled−1``; afterwards all slots. The loss
        is a sum over candidates, so storage order is all it needs; see :meth:`ordered`.
        """
        return self.keys[: int(self.filled)]

    def candidate_labels(self) -> Tensor:
        """Labels (filled,) of :meth:`candidates` (only with ``with_labels=True``)."""
        if not self.with_labels:
            raise ValueError("candidate_labels() needs a queue built with with_labels=True")
        return self.labels[: int(self.filled)]

    def ordered(self) -> Tensor:
        """The valid keys from oldest to newest (a copy; for inspection and tests)."""
        n = int(self.filled)
        if n < self.size:
            return self.keys[:n].clone()
        return torch.roll(self.keys, shifts=-int(self.pointer), dims=0)

    def extra_repr(self) -> str:
        return f"size={self.size}, dim={self.dim}, filled={int(self.filled)}, with_labels={self.with_labels}"


@torch.no_grad()
def momentum_update(online: nn.Module, target: nn.Module, m: float = 0.999) -> None:
    """Exponential moving average of the key encoder (MoCo): ``θ_k ← m θ_k + (1 − m) θ_q``.

    Parameters are matched in order and must have equal shapes; buffers (e.g. BatchNorm
    statistics) are left to the caller, as in MoCo.

    Args:
        online: the query encoder (θ_q), trained by back-propagation.
        target: the key encoder (θ_k), updated in place.
        m: momentum in [0, 1]; MoCo uses 0.999.
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
