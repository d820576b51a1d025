"""Entropic-OT negatives in the tiled engine against the materialised OT (issue 25, item 3).

Jiang, Ishwar, Aeron (arXiv:2111.03169), §VI: the coupling with uniform marginals solved by
Sinkhorn, ``differentiable=False`` (the default). Prints what this one run measured:

1. fwd+bwd time of tiled OT / materialised OT at B ∈ ``--sizes`` (default 4096; 2B views,
   d = 128, float32; goal ≤ 1.2 at B = 4096): each engine once per round, the order alternating
   from round to round; the ratio is the median (and range) over rounds of the two times of the
   same round. Also the Sinkhorn iterations of both (they run the same iterates) and the largest
   difference of the two losses.
2. with ``--huge``: one fwd+bwd of tiled OT at B = ``--huge-b`` (default 65 536: 131 072 views)
   in a fresh process: its time and its peak resident memory (``resource.getrusage`` ru_maxrss,
   goal < 2 GiB), next to the same process's resident memory before the loss (the inputs and
   the imports). Several minutes on 2 CPU cores.

Usage: ``python benchmarks/bench_ot_tiled.py [--repeats 3] [--epsilon 0.5] [--threads N] [--huge]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

import torch

D = 128
T = 0.5


def make_loss(tiled: bool, epsilon: float, tile: int | None):  # type: ignore[no-untyped-def]
    """``ContrastiveLoss`` with ``OptimalTransport(epsilon)`` negatives on the forced engine."""
    from hardneg import ContrastiveLoss
    from hardneg.negatives import OptimalTransport

    if tiled:
        return ContrastiveLoss(
            temperature=T, negatives=OptimalTransport(epsilon=epsilon), engine="tiled", tile_size=tile
        )
    return ContrastiveLoss(
        temperature=T,
        negatives=OptimalTransport(epsilon=epsilon),
        engine="materialised",
        memory_budget=1 << 42,
    )


def views(b: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Two correlated views (B, d) float32, as two augmentations of one batch."""
    g = torch.Generator().manual_seed(seed)
    z1 = torch.randn(b, D, generator=g)
    z2 = z1 + 0.5 * torch.randn(b, D, generator=g)
    return z1, z2


def step(loss, z1: torch.Tensor, z2: torch.Tensor) -> tuple[float, float, float]:  # type: ignore[no-untyped-def]
    """One fwd+bwd: (seconds, loss value, Sinkhorn iterations)."""
    a, b = z1.clone().requires_grad_(), z2.clone().requires_grad_()
    t0 = time.perf_counter()
    out = loss(a, b, details=True)
    out.loss.backward()
    dt = time.perf_counter() - t0
    return dt, float(out.loss.detach()), float(out.diagnostics.get("ot_iterations", float("nan")))


def speed(sizes: list[int], repeats: int, epsilon: float, tile: int | None) -> None:
    print(f"# 1. tiled OT / materialised OT, fwd+bwd, d = {D}, float32, epsilon = {epsilon}, "
          f"t = {T}, {torch.get_num_threads()} threads, {repeats} rounds")
    print("| B | tiled / materialised: median [min, max] | Sinkhorn iterations (mat, tiled) | |Δ loss| |")
    print("|---|---|---|---|")
    for b in sizes:
        z1, z2 = views(b)
        losses = {True: make_loss(True, epsilon, tile), False: make_loss(False, epsilon, tile)}
        step(losses[True], z1[:64], z2[:64])  # warm-up (allocator, first-call work)
        step(losses[False], z1[:64], z2[:64])
        ratios, its, vals = [], {}, {}
        for r in range(repeats):
            order = (True, False) if r % 2 == 0 else (False, True)
            times = {}
            for tiled in order:
                times[tiled], vals[tiled], its[tiled] = step(losses[tiled], z1, z2)
            ratios.append(times[True] / times[False])
        med = statistics.median(ratios)
        print(f"| {b} | {med:.2f} [{min(ratios):.2f}, {max(ratios):.2f}] | "
              f"{its[False]:.0f}, {its[True]:.0f} | {abs(vals[True] - vals[False]):.1e} |", flush=True)


_CHILD = """
import json, resource, sys, time, torch
sys.path.insert(0, 'benchmarks')
from bench_ot_tiled import make_loss, step, views
b, eps, threads = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
if threads > 0:
    torch.set_num_threads(threads)
z1, z2 = views(b)
loss = make_loss(True, eps, None)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
dt, value, its = step(loss, z1, z2)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": dt, "loss": value, "iterations": its, "before_kib": before, "peak_kib": peak}))
"""


def huge(b: int, epsilon: float, threads: int) -> None:
    print(f"# 2. tiled OT at B = {b} ({2 * b} views), d = {D}, one fwd+bwd in a fresh process")
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(b), str(epsilon), str(threads)],
        capture_output=True, text=True, check=True,
    )
    r = json.loads(out.stdout.strip().splitlines()[-1])
    gib = 1024.0 * 1024.0
    print(f"time {r['seconds']:.1f} s, Sinkhorn iterations {r['iterations']:.0f}, loss {r['loss']:.4f}, "
          f"peak RSS {r['peak_kib'] / gib:.2f} GiB (before the loss: {r['before_kib'] / gib:.2f} GiB; "
          "goal < 2 GiB)")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", type=int, nargs="+", default=[4096])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--epsilon", type=float, default=0.5)
    p.add_argument("--tile", type=int, default=None, help="tile side (default: the engine's speed tile)")
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    p.add_argument("--huge", action="store_true", help="also part 2 (B = --huge-b)")
    p.add_argument("--only-huge", action="store_true")
    p.add_argument("--huge-b", type=int, default=65536)
    args = p.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    if not args.only_huge:
        speed(args.sizes, args.repeats, args.epsilon, args.tile)
    if args.huge or args.only_huge:
        huge(args.huge_b, args.epsilon, args.threads)


if __name__ == "__main__":
    main()
