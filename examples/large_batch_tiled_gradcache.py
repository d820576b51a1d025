"""A batch of 8192 pairs on a CPU: the tiled loss engine with gradient caching (GradCache).

Shows the two memory savings that make very large contrastive batches fit:

* ``ContrastiveLoss(memory_budget=0)`` always uses the tiled engine (:mod:`hardneg.engines.tiled`): the
  (2B, 2B) score matrices are never formed — the log-sum-exps over the candidates are streamed
  tile by tile with a recomputing backward — with the same values and gradients;
* :func:`hardneg.gradcache.grad_cache_step` (Gao, Zhang, Han, Callan, RepL4NLP 2021) runs the
  encoder chunk by chunk: a pass without activations, the loss and ``∂L/∂z`` on the whole batch,
  then a recomputing pass per chunk that back-propagates ``∂L/∂z_chunk``. The parameter gradients
  equal the unchunked step's (the encoder has no BatchNorm).

The loss is HCL's (Robinson et al., ICLR 2021, eq. 4: hard, debiased negatives), which the tiled
engine supports. Data: synthetic points around class centres, two noisy views (no download). The
script prints the loss per step, the bytes the materialised engine's matrices would have taken,
and the process's peak resident memory (``resource.getrusage``, Linux: KiB).

Run::

    python examples/large_batch_tiled_gradcache.py --steps 2 --batch-size 8192 --chunk-size 1024

At B = 8192 a step takes minutes on a small CPU (2 steps: 14 min 44 s wall, peak 438 MiB resident,
on a shared 2-core machine); ``--batch-size 1024`` runs in seconds.

Needs only the core install.
"""

from __future__ import annotations

import argparse
import resource
import sys

import torch
from torch import nn

from hardneg import ContrastiveLoss, negatives
from hardneg.engines.tiled import materialised_bytes
from hardneg.gradcache import grad_cache_step


def peak_rss_mib() -> float:
    """Peak resident set size of this process in MiB (``ru_maxrss``: KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 2**10


def main(argv: list[str] | None = None) -> float:
    parser = argparse.ArgumentParser(description="a large batch with the tiled engine and GradCache")
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=8192, help="pairs per batch (2B views)")
    parser.add_argument("--chunk-size", type=int, default=1024, help="encoder chunk of GradCache")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    centres = nn.functional.normalize(torch.randn(100, 64, generator=gen), dim=1)
    encoder = nn.Sequential(nn.Linear(64, 256), nn.LayerNorm(256), nn.ReLU(), nn.Linear(256, 128))
    loss_fn = ContrastiveLoss(temperature=0.5, tau_plus=0.1, negatives=negatives.Hard(beta=1.0),
                              memory_budget=0)   # 0: always the tiled engine
    optimizer = torch.optim.Adam(encoder.parameters(), lr=1e-3)

    views = 2 * args.batch_size
    print(f"B = {args.batch_size} pairs: the materialised engine would need about "
          f"{materialised_bytes(views, views, torch.float32) / 2**20:.0f} MiB for its (2B, 2B) matrices")
    loss = torch.tensor(float("nan"))
    for step in range(1, args.steps + 1):
        labels = torch.randint(len(centres), (args.batch_size,), generator=gen)
        x = 3.0 * centres[labels] + 0.5 * torch.randn(args.batch_size, 64, generator=gen)
        x1 = x + 0.3 * torch.randn(x.shape, generator=gen)
        x2 = x + 0.3 * torch.randn(x.shape, generator=gen)
        optimizer.zero_grad()
        loss = grad_cache_step(encoder, [x1, x2], lambda z: loss_fn(z[0], z[1]), chunk_size=args.chunk_size)
        optimizer.step()
        print(f"step {step:3d}  loss {loss.item():.4f}")
    print(f"final loss {loss.item():.4f}; peak resident memory {peak_rss_mib():.0f} MiB")
    return loss.item()


if __name__ == "__main__":
    main()
