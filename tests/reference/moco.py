"""A transcription of MoCo's reference training loss and queue (He et al., CVPR 2020, Algorithm 1;
the authors' ``moco/builder.py``): normalised query and key, logits ``[q·k, q·queue] / T``,
cross-entropy with the positive at index 0, then the *normalised* keys replace the oldest
columns of the ``(dim, K)`` queue at the pointer. Written without hardneg.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


class MocoReference:
    """The queue as a (dim, K) matrix with a pointer, as in the reference code."""

    def __init__(self, initial_keys: torch.Tensor) -> None:
        self.queue = F.normalize(initial_keys, dim=1).T.clone()  # (dim, K), normalised at init
        self.ptr = 0

    def step(self, q: torch.Tensor, k: torch.Tensor, temperature: float) -> torch.Tensor:
        """Per-query losses (B,) of one step, then dequeue-and-enqueue of the normalised keys."""
        q = F.normalize(q, dim=1)
        k = F.normalize(k, dim=1)
        l_pos = torch.einsum("nc,nc->n", q, k).unsqueeze(-1)
        l_neg = torch.einsum("nc,ck->nk", q, self.queue.clone().detach())
        logits = torch.cat([l_pos, l_neg], dim=1) / temperature
        labels = torch.zeros(logits.shape[0], dtype=torch.long)
        loss = F.cross_entropy(logits, labels, reduction="none")
        b = k.shape[0]
        size = self.queue.shape[1]
        assert size % b == 0  # the reference code's own assumption
        self.queue[:, self.ptr : self.ptr + b] = k.T
        self.ptr = (self.ptr + b) % size
        return loss
