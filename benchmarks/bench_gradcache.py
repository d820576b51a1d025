"""A whole training step beyond the activation memory: GradCache + the tiled loss (issue: tiled engine).

Prints, measured in this run:

1. exactness: parameter gradients of one chunked step (``grad_cache_step``, tiled hard-negative
   loss) against the plain step (materialised loss, whole-batch backward) at a batch where both
   fit — largest relative difference over all parameters;
2. for growing batch sizes, each step in a fresh process whose address space is capped at its
   start-up size plus ``--cap-gib`` (``RLIMIT_AS``, a stand-in for a small accelerator's
   memory): whether the plain and the chunked step fit, their peak resident memory and time.

The encoder is a small MLP on 28×28 inputs with LayerNorm (so chunking is exact).

Usage: ``python benchmarks/bench_gradcache.py [--cap-gib 1.5] [--sizes 1024 4096 8192 16384]``
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

import torch
from torch import nn

IN, HIDDEN, OUT = 784, 1024, 128
CHUNK = 512


def encoder() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Linear(IN, HIDDEN), nn.LayerNorm(HIDDEN), nn.ReLU(),
        nn.Linear(HIDDEN, HIDDEN), nn.LayerNorm(HIDDEN), nn.ReLU(),
        nn.Linear(HIDDEN, OUT),
    )


def batch(b: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    x = torch.rand(b, IN, generator=g)
    return x, (x + 0.1 * torch.randn(b, IN, generator=g)).clamp(0, 1)


def loss_fn(tiled: bool):  # type: ignore[no-untyped-def]
    from hardneg import ContrastiveLoss, negatives

    kw: dict[str, object] = {"temperature": 0.5, "tau_plus": 0.1, "negatives": negatives.Hard(beta=1.0)}
    kw.update(memory_budget=0, tile_size=1024) if tiled else kw.update(memory_budget=1 << 62)
    return ContrastiveLoss(**kw)  # type: ignore[arg-type]


def step(b: int, chunked: bool) -> float:
    """One fwd+bwd; returns seconds."""
    from hardneg.gradcache import grad_cache_step

    enc, (x1, x2) = encoder(), batch(b)
    t0 = time.perf_counter()
    if chunked:
        loss = loss_fn(True)
        grad_cache_step(enc, [x1, x2], lambda z: loss(z[0], z[1]), chunk_size=CHUNK)
    else:
        loss_fn(False)(enc(x1), enc(x2)).backward()
    return time.perf_counter() - t0


def exactness(b: int) -> str:
    grads = []
    for chunked in (False, True):
        from hardneg.gradcache import grad_cache_step

        enc, (x1, x2) = encoder(), batch(b)
        enc.double()
        x1, x2 = x1.double(), x2.double()
        if chunked:
            loss = loss_fn(True)
            grad_cache_step(enc, [x1, x2], lambda z, f=loss: f(z[0], z[1]), chunk_size=CHUNK // 4)
        else:
            loss_fn(False)(enc(x1), enc(x2)).backward()
        grads.append([p.grad.detach().clone() for p in enc.parameters()])  # type: ignore[union-attr]
    worst = max(float(((a - c).abs().max() / a.abs().max()).item()) for a, c in zip(*grads))
    return (f"exactness at B={b} (float64, chunks of {CHUNK // 4}, tiled loss vs plain step): "
            f"max relative gradient difference {worst:.1e}")


def _child(b: int, chunked: bool, cap_gib: float, threads: int) -> dict[str, object]:
    code = (
        "import json, resource, sys, torch\n"
        f"torch.set_num_threads({threads})\n"
        "sys.path.insert(0, 'benchmarks')\n"
        "from bench_gradcache import step\n"
        "import hardneg, hardneg.gradcache, hardneg.engines.tiled\n"
        "size = int([l for l in open('/proc/self/status') if l.startswith('VmSize')][0].split()[1]) * 1024\n"
        f"cap = size + int({cap_gib} * 2**30)\n"
        "resource.setrlimit(resource.RLIMIT_AS, (cap, cap))\n"
        "try:\n"
        f"    t = step({b}, {chunked})\n"
        "except (RuntimeError, MemoryError) as err:\n"
        "    why = 'out of memory' if 'allocat' in str(err) else str(err).splitlines()[0][:80]\n"
        "    print(json.dumps({'fits': False, 'why': why})); sys.exit(0)\n"
        "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1]\n"
        "print(json.dumps({'fits': True, 'seconds': t, 'peak_mib': int(hwm) / 1024}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    lines = out.stdout.strip().splitlines()
    if not lines:
        return {"fits": False, "why": (out.stderr.strip().splitlines() or ["killed"])[-1][:80]}
    result: dict[str, object] = json.loads(lines[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cap-gib", type=float, default=1.5)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 4096, 8192, 16384])
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(exactness(1024), flush=True)
    print(f"one step, MLP {IN}-{HIDDEN}-{HIDDEN}-{OUT} with LayerNorm, hard negatives (beta=1, tau+=0.1), "
          f"address space capped at start-up + {args.cap_gib} GiB, {args.threads} threads:", flush=True)
    for b in args.sizes:
        cells = []
        for chunked in (False, True):
            r = _child(b, chunked, args.cap_gib, args.threads)
            name = f"chunked({CHUNK})+tiled" if chunked else "plain"
            if r["fits"]:
                cells.append(f"{name}: {r['seconds']:6.1f} s, peak {r['peak_mib']:6.0f} MiB")
            else:
                cells.append(f"{name}: does not fit ({r['why']})")
        print(f"  B={b:6d}: " + "; ".join(cells), flush=True)


if __name__ == "__main__":
    main()
