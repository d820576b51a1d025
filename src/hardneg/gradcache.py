"""Chunked encoder passes with cached embedding gradients (GradCache; Gao, Zhang, Han, Callan, 2021).

A contrastive loss couples every example of the batch, so the encoder's activations for the
whole batch normally live until the backward pass. Gradient caching (Gao et al., "Scaling Deep
Contrastive Learning Batch Size under Memory Limited Setup", RepL4NLP 2021, §3.2) splits the step
in three:

1. embed the batch chunk by chunk **without** storing activations (``torch.no_grad``);
2. compute the loss on the detached embeddings and its gradient ``∂L/∂z`` (the loss may itself
   be tiled, :mod:`hardneg.engines.tiled`, so neither step needs O(B²) memory);
3. re-run each chunk's forward pass with gradients and back-propagate ``∂L/∂z_chunk`` into the
   parameters (``z_chunk.backward(grad_chunk)``), i.e. ``∂L/∂θ = Σ_chunks (∂z_chunk/∂θ)ᵀ ∂L/∂z_chunk``.

The parameter gradients equal the unchunked step's exactly (up to float round-off) when the
encoder treats examples independently: no BatchNorm in training mode (LayerNorm, GroupNorm,
BatchNorm in eval mode are exact). With BatchNorm in training mode each chunk is normalised with
its own statistics (as with smaller per-device batches); the running statistics are updated once
per chunk, by the recomputing pass only (the first pass restores them). Randomness in the encoder
(dropout) is replayed: each chunk's recompute starts from the random state of its first pass, on
the CPU and on every CUDA device (when CUDA is initialised).

Inputs may be any structure of tensors — a tensor, or dicts / lists / tuples of tensors such as a
tokenizer's output ``{"input_ids": …, "attention_mask": …}``: every tensor is chunked along dim 0.

Under DistributedDataParallel the chunks' backward passes must all-reduce the gradients once per
step, not once per chunk: pass ``backward=`` (e.g. the last chunk synchronised and the others
under ``ddp.no_sync()``, as :class:`hardneg.pipeline.module.ContrastiveModule` does).

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

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

__all__ = ["CachedPass", "batch_size", "chunk_batch", "embed_without_graph", "grad_cache_step"]


def _embedding(out: object) -> Tensor:
    """The embedding of an encoder's output: a tensor, or the last element of a tuple ``(h, z)``."""
    if isinstance(out, Tensor):
        return out
    if isinstance(out, (tuple, list)) and out and isinstance(out[-1], Tensor):
        return out[-1]
    raise TypeError(
        "the encoder must return a tensor or a tuple ending with one (or pass embedding=), "
        f"got {type(out).__name__}"
    )


def _tensors(x: object) -> list[Tensor]:
    """The tensors of a nested structure (dicts / mappings, lists, tuples), depth first."""
    if isinstance(x, Tensor):
        return [x]
    if isinstance(x, Mapping):
        return [t for v in x.values() for t in _tensors(v)]
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in _tensors(v)]
    return []


def batch_size(x: object, name: str = "inputs") -> int:
    """The batch size B of a structure of tensors: the common dim-0 size of its tensors of
    dimension ≥ 1 (0-dim tensors and non-tensors are passed whole to every chunk).

    Raises ``ValueError`` naming ``name`` when it holds no such tensor or their sizes differ.
    """
    sizes = {int(t.shape[0]) for t in _tensors(x) if t.dim() >= 1}
    if len(sizes) != 1:
        what = "no tensor with a batch dimension" if not sizes else f"batch sizes {sorted(sizes)}"
        raise ValueError(f"{name} must hold tensors with one batch size along dim 0, got {what}")
    return sizes.pop()


def chunk_batch(x: Any, start: int, stop: int) -> Any:
    """Rows ``start:stop`` (dim 0) of every tensor of a nested structure; the structure (dict,
    list, tuple, named tuple; a non-dict mapping becomes a dict) and other leaves are kept."""
    if isinstance(x, Tensor):
        return x[start:stop] if x.dim() >= 1 else x
    if isinstance(x, Mapping):
        return {k: chunk_batch(v, start, stop) for k, v in x.items()}
    if isinstance(x, tuple) and hasattr(x, "_fields"):  # a named tuple
        return type(x)(*(chunk_batch(v, start, stop) for v in x))
    if isinstance(x, (list, tuple)):
        return type(x)(chunk_batch(v, start, stop) for v in x)
    return x


def _cuda_devices() -> list[int]:
    """The CUDA devices whose random state is replayed (all, once CUDA is initialised)."""
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        return list(range(torch.cuda.device_count()))
    return []


def _rng_state(devices: list[int]) -> tuple[Tensor, list[Tensor]]:
    cuda = [torch.cuda.get_rng_state(d) for d in devices]
    return torch.get_rng_state(), cuda


def _set_rng_state(state: tuple[Tensor, list[Tensor]], devices: list[int]) -> None:
    torch.set_rng_state(state[0])
    for d, s in zip(devices, state[1]):
        torch.cuda.set_rng_state(s, d)


def _default_backward(z: Tensor, grad: Tensor, last: bool) -> None:
    z.backward(grad)


def grad_cache_step(
    encoder: nn.Module | Callable[[Any], object],
    inputs: Sequence[Any],
    loss_fn: Callable[[list[Tensor]], Tensor],
    *,
    chunk_size: int,
    embedding: Callable[[object], Tensor] | None = None,
    backward: Callable[[Tensor, Tensor, bool], None] | None = None,
) -> Tensor:
    """One forward/backward of ``loss_fn([embedding(encoder(x)) for x in inputs])`` in chunks of
    ``chunk_size`` (Gao et al., RepL4NLP 2021, §3.2).

    Accumulates the parameter gradients into ``.grad`` (call ``optimizer.step()`` afterwards, as
    after ``loss.backward()``) and returns the loss, detached. ``inputs`` are the batch's views
    (e.g. ``[x1, x2]``), each a tensor (B, …) or a structure of tensors with batch dimension B
    (dicts, lists, tuples: a tokenizer's output); ``loss_fn`` gets the list of their embeddings
    (B, d). Peak activation memory is that of one chunk instead of the whole batch.

    Args:
        encoder: called with one chunk of one view (the same structure as the view).
        inputs: the views.
        loss_fn: the loss of the list of embeddings.
        chunk_size: rows per chunk (≥ 1).
        embedding: reads the embedding (B, d) from the encoder's output (default: the output if
            it is a tensor, else the last element of a tuple ``(h, z)``).
        backward: ``backward(z_chunk, grad_chunk, last)`` back-propagates one recomputed chunk
            (default ``z_chunk.backward(grad_chunk)``); ``last`` is True for the step's last
            chunk, the one that should synchronise gradients under DDP.
    """
    cached = embed_without_graph(encoder, inputs, chunk_size=chunk_size, embedding=embedding)
    loss = loss_fn(cached.embeddings)
    grads = torch.autograd.grad(loss, cached.embeddings, allow_unused=True)
    cached.backward(grads, backward=backward)
    return loss.detach()


@dataclass
class CachedPass:
    """GradCache's first pass (steps 1–2 of the module docstring), kept for its recompute (step 3).

    ``embeddings``: one (B, d) tensor per view, detached and requiring gradients (the loss is
    computed on them); the rest is what :meth:`backward` needs to re-run each chunk exactly.
    """

    embeddings: list[Tensor]
    encoder: nn.Module | Callable[[Any], object]
    inputs: Sequence[Any]
    bounds: list[list[tuple[int, int]]]
    states: list[list[tuple[Tensor, list[Tensor]]]]
    devices: list[int]
    read: Callable[[object], Tensor]

    def backward(
        self,
        grads: Sequence[Tensor | None],
        *,
        backward: Callable[[Tensor, Tensor, bool], None] | None = None,
    ) -> None:
        """Step 3: re-run every chunk with gradients from the random state of its first pass and
        back-propagate its rows of ``grads`` (``∂L/∂z`` per view; ``None``: the view is skipped),
        through ``backward(z_chunk, grad_chunk, last)`` (default ``z_chunk.backward(grad_chunk)``).
        The random state after the first pass is kept."""
        step_backward = _default_backward if backward is None else backward
        work = [
            (x, start, stop, g[start:stop], state)
            for x, g, view_bounds, view_states in zip(self.inputs, grads, self.bounds, self.states)
            if g is not None
            for (start, stop), state in zip(view_bounds, view_states)
        ]
        with torch.random.fork_rng(devices=self.devices):
            for i, (x, start, stop, g, state) in enumerate(work):
                _set_rng_state(state, self.devices)
                step_backward(self.read(self.encoder(chunk_batch(x, start, stop))), g, i == len(work) - 1)


def embed_without_graph(
    encoder: nn.Module | Callable[[Any], object],
    inputs: Sequence[Any],
    *,
    chunk_size: int,
    embedding: Callable[[object], Tensor] | None = None,
) -> CachedPass:
    """GradCache's first pass: every view embedded chunk by chunk under ``torch.no_grad`` (random
    states recorded per chunk; an ``nn.Module``'s buffers restored afterwards, so that only the
    recomputing pass updates running statistics). Arguments as :func:`grad_cache_step`; compute
    the loss on ``.embeddings``, then call :meth:`CachedPass.backward` with its gradients."""
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size must be an int >= 1, got {chunk_size!r}")
    if isinstance(inputs, (Tensor, Mapping)) or not isinstance(inputs, Sequence) or not inputs:
        got = type(inputs).__name__ if not isinstance(inputs, Sequence) or inputs else "an empty sequence"
        raise ValueError(f"inputs must be a non-empty list of views (one per encoder pass), got {got}")
    read = _embedding if embedding is None else embedding
    sizes = [batch_size(x, f"inputs[{i}]") for i, x in enumerate(inputs)]
    bounds = [[(s, min(s + chunk_size, n)) for s in range(0, n, chunk_size)] for n in sizes]
    devices = _cuda_devices()
    module = encoder if isinstance(encoder, nn.Module) else None
    buffers = {} if module is None else {k: v.detach().clone() for k, v in module.named_buffers()}
    states: list[list[tuple[Tensor, list[Tensor]]]] = []
    embeddings: list[Tensor] = []
    with torch.no_grad():
        for x, view_bounds in zip(inputs, bounds):
            chunks, view_states = [], []
            for start, stop in view_bounds:
                view_states.append(_rng_state(devices))
                chunks.append(read(encoder(chunk_batch(x, start, stop))))
            embeddings.append(torch.cat(chunks).requires_grad_(True))
            states.append(view_states)
        if module is not None:  # the recomputing pass is the one that updates running statistics
            for name, value in module.named_buffers():
                value.copy_(buffers[name])
    return CachedPass(embeddings, encoder, inputs, bounds, states, devices, read)
