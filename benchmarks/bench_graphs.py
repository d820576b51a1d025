"""Speed of InfoGraph training steps and of our graph loss against the authors' formula.

Prints ratios measured in this one run (absolute times drift on shared machines):

1. one training step (GIN encoder + heads + loss + Adam) on the embedded synthetic family,
   batches of 128 graphs: graphs/s and the loss's share of the step (its forward + backward
   timed alone on the same batch), for InfoGraph (uniform), hard (β = 1) and OT (ε = 1).
2. our loss (``InfoGraphLoss``, hard β = 1 with the clipping trick, debiased τ⁺ = 0.1) against
   the authors' released formula (``released_local_global_loss``, all switches on) on the same
   batch: forward + backward time ratio and peak extra resident memory ratio (a fresh process
   per measurement, peak reset with ``/proc/self/clear_refs``), at 128 and 1024 graphs of ~30
   nodes.

Usage: ``python benchmarks/bench_graphs.py [--repeats 5] [--threads 2]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

import torch

D = 96


def _batch(graphs: int, nodes_per_graph: int = 30, seed: int = 0) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(seed)
    sizes = torch.randint(10, 2 * nodes_per_graph - 10, (graphs,), generator=g)
    batch = torch.repeat_interleave(torch.arange(graphs), sizes)
    local = torch.randn(len(batch), D, generator=g)
    global_ = 3.0 * torch.randn(graphs, D, generator=g)
    return local, global_, batch


def _ours():  # type: ignore[no-untyped-def]
    from hardneg.infograph import InfoGraphLoss
    from hardneg.negatives import Hard

    return lambda l, g, b: InfoGraphLoss(negatives=Hard(beta=1.0, rescale=True), tau_plus=0.1)(l, g, b)


def _released():  # type: ignore[no-untyped-def]
    from hardneg.infograph import released_local_global_loss

    return lambda l, g, b: released_local_global_loss(l, g, b, beta=1.0)


def _fwd_bwd(fn, local: torch.Tensor, global_: torch.Tensor, batch: torch.Tensor) -> float:  # type: ignore[no-untyped-def]
    a, b = local.clone().requires_grad_(), global_.clone().requires_grad_()
    t0 = time.perf_counter()
    fn(a, b, batch).backward()
    return time.perf_counter() - t0


def training_steps(repeats: int) -> list[str]:
    from torch_geometric.loader import DataLoader

    from hardneg.data.graphs.synthetic import synthetic_motifs
    from hardneg.infograph import InfoGraphLoss
    from hardneg.models.gin import InfoGraphModel
    from hardneg.negatives import Hard, OptimalTransport

    data = synthetic_motifs(num_graphs=600, seed=0)
    batch = next(iter(DataLoader(data.graphs, batch_size=128, shuffle=False)))
    lines = [f"1. one training step, {batch.num_graphs} graphs / {batch.num_nodes} nodes per batch "
             f"(median of {repeats}):"]
    losses_by_name = {
        "infograph": lambda: InfoGraphLoss(),
        "hard β=1": lambda: InfoGraphLoss(negatives=Hard(beta=1.0, rescale=True)),
        "OT ε=1": lambda: InfoGraphLoss(negatives=OptimalTransport(epsilon=1.0)),
    }
    for method, build in losses_by_name.items():
        torch.manual_seed(0)
        model = InfoGraphModel(in_dim=data.num_features)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        loss = build()
        steps, losses = [], []
        for _ in range(repeats + 1):
            t0 = time.perf_counter()
            local, global_, b = model(batch)
            value = loss(local, global_, b)
            opt.zero_grad()
            value.backward()
            opt.step()
            steps.append(time.perf_counter() - t0)
            losses.append(_fwd_bwd(loss, local.detach(), global_.detach(), b))
        step, lossed = statistics.median(steps[1:]), statistics.median(losses[1:])
        lines.append(f"   {method:10s}: {batch.num_graphs / step:7.0f} graphs/s, step {1e3 * step:6.1f} ms, "
                     f"loss fwd+bwd {1e3 * lossed:5.1f} ms = {100 * lossed / step:4.1f}% of the step")
    return lines


def _peak(which: str, graphs: int, threads: int) -> dict[str, float]:
    code = (
        "import json, sys, time, torch\n"
        f"torch.set_num_threads({threads})\n"
        "sys.path.insert(0, 'benchmarks')\n"
        "from bench_graphs import _batch, _ours, _released, _fwd_bwd\n"
        f"fn = _{which}()\n"
        f"l, g, b = _batch({graphs})\n"
        "_fwd_bwd(fn, *_batch(8, seed=1))  # warm up the code paths\n"
        "def rss(key):\n"
        "    return int([x for x in open('/proc/self/status') if x.startswith(key)][0].split()[1])\n"
        "open('/proc/self/clear_refs', 'w').write('5')\n"
        "base = rss('VmRSS')\n"
        "t = _fwd_bwd(fn, l, g, b)\n"
        "print(json.dumps({'seconds': t, 'extra_mib': (rss('VmHWM') - base) / 1024}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def ours_vs_released(repeats: int, threads: int) -> list[str]:
    lines = ["2. our loss (hard β=1, τ⁺=0.1) vs the released formula (β=1), same batch, fwd+bwd:"]
    ours, rel = _ours(), _released()
    for graphs in (128, 1024):
        local, global_, batch = _batch(graphs)
        t_o, t_r = [], []
        for _ in range(repeats + 1):  # interleaved
            t_o.append(_fwd_bwd(ours, local, global_, batch))
            t_r.append(_fwd_bwd(rel, local, global_, batch))
        mo, mr = statistics.median(t_o[1:]), statistics.median(t_r[1:])
        po, pr = _peak("ours", graphs, threads), _peak("released", graphs, threads)
        lines.append(
            f"   B={graphs:5d} graphs ({len(batch)} nodes): time ours {1e3 * mo:7.1f} ms, released "
            f"{1e3 * mr:7.1f} ms, ours/released = {mo / mr:.2f}; peak extra memory ours "
            f"{po['extra_mib']:.0f} MiB, released {pr['extra_mib']:.0f} MiB, ratio "
            f"{po['extra_mib'] / max(pr['extra_mib'], 1e-9):.2f}"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    for line in training_steps(args.repeats) + ours_vs_released(args.repeats, args.threads):
        print(line, flush=True)


if __name__ == "__main__":
    main()
