"""Chunked encoder passes with cached embedding gradients (GradCache; Gao, Zhang, Han, Callan, 2021).

A contrastive loss couples every example of the batch, so the encoder's activations for the
whole batch normally live until the backward pass. Gradient caching splits the step in three:

1. embed the batch chunk by chunk **without** storing activations (``torch.no_grad``);
2. compute the loss on the detached embeddings and its gradient ``∂L/∂z`` (the loss may itself
   be tiled, :mod:`hardneg.tiled`, so neither step needs O(B²) memory);
3. re-run each chunk's forward pass with gradients and back-propagate ``∂L/∂z_chunk`` into the
   parameters (``z_chunk.backward(grad_chunk)``).

The parameter gradients equal the unchunked step's exactly (up to float round-off) when the
encoder treats examples independently: no BatchNorm in training mode (LayerNorm, GroupNorm,
BatchNorm in eval mode are exact). With BatchNorm in training mode each chunk is normalised with
its own statistics (as with smaller per-device batches); the running statistics are updated once
per chunk, by the recomputing pass only (the first pass restores them). Randomness in the encoder
(dropout) is replayed: each chunk's recompute starts from the RNG state of its first pass.

>>> import torch
>>> from torch import nn
>>> from hardneg import ContrastiveLoss
>>> from hardneg.gradcache import grad_cache_step
>>> enc = nn.Sequential(nn.Linear(8, 16), nn.LayerNorm(16), nn.ReLU(), nn.Linear(16, 4))
>>> x1, x2 = torch.randn(32, 8), torch.randn(32, 8)
>>> loss = grad_cache_step(enc, [x1, x2], lambda z: ContrastiveLoss()(z[0], z[1]), chunk_size=8)
>>> loss.shape, all(p.grad is not None for p in enc.parameters())
(torch.Size([]), True)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import Tensor, nn

__all__ = ["grad_cache_step"]


def _embedding(out: object) -> Tensor:
    """The embedding of an encoder's output: a tensor, or the last element of a tuple ``(h, z)``."""
    if isinstance(out, Tensor):
        return out
    if isinstance(out, (tuple, list)) and out and isinstance(out[-1], Tensor):
        return out[-1]
    raise TypeError(f"the encoder must return a tensor or a tuple ending with one, got {type(out).__name__}")


def grad_cache_step(
    encoder: nn.Module | Callable[[Tensor], object],
    inputs: Sequence[Tensor],
    loss_fn: Callable[[list[Tensor]], Tensor],
    *,
    chunk_size: int,
) -> Tensor:
    """One forward/backward of ``loss_fn([encoder(x) for x in inputs])`` in chunks of ``chunk_size``.

    Accumulates the parameter gradients into ``.grad`` (call ``optimizer.step()`` afterwards, as
    after ``loss.backward()``) and returns the loss, detached. ``inputs`` are the batch's views
    (e.g. ``[x1, x2]``), each (B, …); ``loss_fn`` gets the list of their embeddings (B, d).
    Peak activation memory is that of one chunk instead of the whole batch.
    """
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size must be an int >= 1, got {chunk_size!r}")
    if not inputs:
        raise ValueError("inputs must hold at least one batch of views, got none")
    module = encoder if isinstance(encoder, nn.Module) else None
    buffers = {} if module is None else {k: v.detach().clone() for k, v in module.named_buffers()}
    states: list[list[torch.Tensor]] = []
    embeddings: list[Tensor] = []
    with torch.no_grad():
        for x in inputs:
            chunks, view_states = [], []
            for chunk in x.split(chunk_size):
                view_states.append(torch.get_rng_state())
                chunks.append(_embedding(encoder(chunk)))
            embeddings.append(torch.cat(chunks).requires_grad_(True))
            states.append(view_states)
    if module is not None:
        with torch.no_grad():  # the recomputing pass is the one that updates running statistics
            for name, value in module.named_buffers():
                value.copy_(buffers[name])
    loss = loss_fn(embeddings)
    grads = torch.autograd.grad(loss, embeddings, allow_unused=True)
    rng = torch.get_rng_state()
    for x, grad, view_states in zip(inputs, grads, states):
        if grad is None:
            continue
        for chunk, g, state in zip(x.split(chunk_size), grad.split(chunk_size), view_states):
            torch.set_rng_state(state)
            _embedding(encoder(chunk)).backward(g)
    torch.set_rng_state(rng)
    return loss.detach()
