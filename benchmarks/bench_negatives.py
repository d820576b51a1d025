"""Speed and memory of the negative distributions and the queue (issue 3).

Prints ratios measured in one run (medians of interleaved repeats; absolute times drift on
shared machines, ratios are the goal):

- OptimalTransport negatives fwd+bwd vs SimCLR at B = 512, d = 128            — goal ≤ 3×
- our Sinkhorn vs POT's ``ot.sinkhorn`` on the same masked problem, both run
  to the same row-marginal L1 tolerance (POT's own check is an L2 norm every 10
  iterations, so its stopThr is lowered until its L1 error is as small)       — goal: faster
- Subsample(K) loss peak memory for K ∈ {16, 256, 1022}: peak of the bytes held
  by torch's CPU allocator during one fwd+bwd, from the allocation/free events of
  ``torch.profiler.profile(profile_memory=True)`` (running sum, in time order), one
  fresh subprocess per K; the full batch without subsampling for reference    — goal: flat in K
- a 65536 × 128 memory queue (``--queue-sizes``: others), B = 256: the uniform step against its
  matmul floor (the (B, d)·(d, Q) and (B, Q)·(Q, d) products of a forward and backward pass,
  timed in the same rounds), and Hard(β = 0.2) vs uniform weights, in the default engine and in
  each forced one (``--only-queue``: just this)                                — goal ≤ 1.1×

Usage: ``python benchmarks/bench_negatives.py [--repeats 7] [--epsilon 0.5] [--tol 1e-5]
[--only-queue] [--queue-batch 256] [--queue-sizes 4096 16384 65536] [--threads 2]``
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

import numpy as np
import torch

from hardneg import ContrastiveLoss, negatives, simclr_scores
from hardneg.negatives import OptimalTransport, sinkhorn_log
from hardneg.queue import MemoryQueue, QueueLoss

B, D, T = 512, 128, 0.5


MINIMA: dict[str, float] = {}


def _time(fns: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """Median seconds per case (interleaved repeats); minima are kept in ``MINIMA``."""
    for fn in fns.values():  # warm-up
        fn()
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeats):  # interleaved, so that load changes hit every case alike
        for k, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
    MINIMA.update({k: min(v) for k, v in times.items()})
    return {k: statistics.median(v) for k, v in times.items()}


def _ratio(t: dict[str, float], a: str, b: str) -> str:
    return f"{t[a] / t[b]:.2f}x (medians; minima {MINIMA[a] / MINIMA[b]:.2f}x)"


def _fwd_bwd(loss_fn: ContrastiveLoss, z1: torch.Tensor, z2: torch.Tensor) -> Callable[[], None]:
    def run() -> None:
        a, b = z1.detach().requires_grad_(True), z2.detach().requires_grad_(True)
        loss_fn(a, b).backward()

    return run


def bench_ot(repeats: int, epsilon: float, tol: float) -> list[str]:
    torch.manual_seed(0)
    z1 = torch.randn(B, D)
    z2 = z1 + 0.5 * torch.randn(B, D)
    ot_neg = OptimalTransport(epsilon=epsilon, tol=tol)
    cases: dict[str, Callable[[], object]] = {
        "simclr": _fwd_bwd(ContrastiveLoss(temperature=T), z1, z2),
        "hard": _fwd_bwd(ContrastiveLoss(temperature=T, negatives=negatives.Hard(beta=1.0)), z1, z2),
        "ot": _fwd_bwd(ContrastiveLoss(temperature=T, negatives=ot_neg), z1, z2),
    }
    t = _time(cases, repeats)
    diag = ContrastiveLoss(temperature=T, negatives=ot_neg)(z1, z2, details=True).diagnostics
    rows = [
        f"B={B} d={D} t={T}: SimCLR fwd+bwd {1e3 * t['simclr']:.1f} ms, Hard {1e3 * t['hard']:.1f} ms, "
        f"OT(eps={epsilon}, tol={tol:g}) {1e3 * t['ot']:.1f} ms "
        f"[{int(diag['ot_iterations'])} it, err {diag['ot_marginal_error']:.2g}]",
        f"  OT / SimCLR  = {_ratio(t, 'ot', 'simclr')}   (goal <= 3x)",
        f"  Hard / SimCLR = {_ratio(t, 'hard', 'simclr')}",
    ]
    return rows + bench_sinkhorn_vs_pot(z1, z2, repeats, epsilon, tol)


def bench_sinkhorn_vs_pot(
    z1: torch.Tensor, z2: torch.Tensor, repeats: int, epsilon: float, tol: float
) -> list[str]:
    try:
        import ot
    except ImportError:  # pragma: no cover
        return ["  POT not installed (pip install pot): Sinkhorn comparison skipped"]
    scores = simclr_scores(z1, z2, temperature=T)
    neg = OptimalTransport(epsilon=epsilon, tol=tol)
    logk = neg.log_kernel(scores).detach()
    n = logk.shape[0]
    log_a = torch.full((n,), -math.log(n))
    cost = (-logk * epsilon).masked_fill(~scores.mask, 1e6).double().numpy()
    a = np.full(n, 1.0 / n)

    def l1_row_error(p: np.ndarray) -> float:
        return float(np.abs(p.sum(1) - a).sum() + np.abs(p.sum(0) - a).sum())

    # lower POT's stopThr until its coupling is as close to the marginals as ours
    ours = sinkhorn_log(logk, log_a, log_a, tol=tol, max_iter=10000)
    ours_err = l1_row_error(ours.log_coupling(logk).exp().double().numpy())
    thr = tol
    for _ in range(12):
        p = ot.sinkhorn(a, a, cost, epsilon, stopThr=thr, numItermax=100000)
        if l1_row_error(p) <= max(ours_err, tol):
            break
        thr /= 4
    pot_err = l1_row_error(p)
    at = torch.from_numpy(a)
    mt = torch.from_numpy(cost).float()
    t = _time(
        {
            "ours": lambda: sinkhorn_log(logk, log_a, log_a, tol=tol, max_iter=10000),
            "ours_log": lambda: sinkhorn_log(logk, log_a, log_a, tol=tol, max_iter=10000, method="log"),
            "pot_numpy": lambda: ot.sinkhorn(a, a, cost, epsilon, stopThr=thr, numItermax=100000),
            "pot_torch": lambda: ot.sinkhorn(
                at.float(), at.float(), mt, epsilon, stopThr=thr, numItermax=100000
            ),
        },
        repeats,
    )
    return [
        f"Sinkhorn {n}x{n} masked, eps={epsilon}: ours (stabilized, float32) {1e3 * t['ours']:.1f} ms "
        f"[L1 marginal err {ours_err:.2g}], ours (plain log) {1e3 * t['ours_log']:.1f} ms, "
        f"POT numpy float64 {1e3 * t['pot_numpy']:.1f} ms, POT torch float32 {1e3 * t['pot_torch']:.1f} ms "
        f"[stopThr {thr:.2g}, L1 err {pot_err:.2g}]",
        f"  POT(numpy) / ours = {_ratio(t, 'pot_numpy', 'ours')}",
        f"  POT(torch) / ours = {_ratio(t, 'pot_torch', 'ours')}   (goal > 1: ours faster)",
    ]


def _memory_child(k: int) -> None:
    from torch.profiler import ProfilerActivity, profile

    torch.manual_seed(0)
    z1 = torch.randn(B, D, requires_grad=True)
    z2 = torch.randn(B, D, requires_grad=True)
    sub = None if k == 0 else k
    loss_fn = ContrastiveLoss(temperature=T, negatives=negatives.Hard(beta=1.0), num_negatives=sub)
    loss_fn(z1, z2).backward()  # warm-up
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        loss_fn(z1, z2).backward()
    events = sorted(
        (e.start_ns(), e.nbytes()) for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"
    )
    held = peak = 0
    for _, nbytes in events:
        held += nbytes
        peak = max(peak, held)
    rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"k": k, "peak_bytes": peak, "rss_kib": rss_kib}))


def bench_memory() -> list[str]:
    peaks = {}
    for k in (0, 16, 256, 1022):
        out = subprocess.run(
            [sys.executable, __file__, "--memory-child", str(k)], capture_output=True, text=True, check=True
        )
        peaks[k] = json.loads(out.stdout.strip().splitlines()[-1])["peak_bytes"]
    rows = [
        f"Subsample(K) + Hard(beta=1), B={B} (2B={2 * B} anchors, N=2B-2={2 * B - 2}), peak torch CPU "
        "allocation during one fwd+bwd (profiler memory events, fresh process per K):"
    ]
    for k, v in peaks.items():
        rows.append(f"  {'no subsampling' if k == 0 else f'K={k}':>14}: {v / 2**20:.1f} MiB")
    ks = [peaks[k] for k in (16, 256, 1022)]
    rows.append(f"  max/min over K = {max(ks) / max(min(ks), 1):.2f}   (goal: flat in K)")
    return rows


def _queue_floor(q: torch.Tensor, keys: torch.Tensor) -> Callable[[], None]:
    """The matmul floor of a queue step: the (B, d)·(d, Q) logits of the forward pass and the
    (B, Q)·(Q, d) anchors' gradient of the backward pass (the keys need none), nothing else."""
    grad = torch.empty(q.shape[0], keys.shape[0])
    torch.mm(q, keys.T, out=grad)

    def run() -> None:
        torch.mm(q, keys.T, out=grad)
        torch.mm(grad, keys)

    return run


def bench_queue(repeats: int, batch: int = 256, sizes: tuple[int, ...] = (65536,)) -> list[str]:
    """A MoCo step over a queue of Q unit keys (d = 128, B queries, t = 0.2, fwd+bwd): the uniform
    step against its matmul floor (the two products of :func:`_queue_floor`, timed in the same
    rounds) and Hard(β = 0.2) / uniform, in the default engine (``engine="auto"``: tiled from the
    speed crossover, issue 25) and in each forced engine; each ratio is the median of the
    per-round ratios (and its quartiles), the cases interleaved with their order rotated."""
    rows: list[str] = []
    for size in sizes:
        rows += _bench_queue_size(repeats, batch, size)
    return rows


def _bench_queue_size(repeats: int, batch: int, size: int) -> list[str]:
    torch.manual_seed(0)
    queue = MemoryQueue(size=size, dim=D)
    queue.enqueue(torch.nn.functional.normalize(torch.randn(size, D), dim=1))
    q = torch.randn(batch, D)
    k = torch.randn(batch, D)

    def run(loss_fn: ContrastiveLoss) -> Callable[[], None]:
        def f() -> None:
            qq = q.detach().requires_grad_(True)
            QueueLoss(loss_fn, queue)(qq, k, enqueue=False).backward()

        return f

    engines = {"default": {}, "materialised": {"engine": "materialised"}, "tiled": {"engine": "tiled"}}
    fns: dict[str, Callable[[], object]] = {"floor": _queue_floor(q, queue.candidates())}
    for name, kw in engines.items():
        fns[f"uniform/{name}"] = run(ContrastiveLoss(temperature=0.2, **kw))  # type: ignore[arg-type]
        fns[f"hard/{name}"] = run(ContrastiveLoss(temperature=0.2, negatives=negatives.Hard(beta=0.2), **kw))  # type: ignore[arg-type]
    for fn in fns.values():  # warm-up
        fn()
    times: dict[str, list[float]] = {name: [] for name in fns}
    for i in range(repeats):  # interleaved, the order rotated from round to round
        names = list(fns)[i % len(fns) :] + list(fns)[: i % len(fns)]
        for name in names:
            t0 = time.perf_counter()
            fns[name]()
            times[name].append(time.perf_counter() - t0)

    def paired(a: str, b: str) -> str:
        r = sorted(x / y for x, y in zip(times[a], times[b], strict=True))
        qs = statistics.quantiles(r, n=4) if len(r) > 1 else [r[0]] * 3
        return f"{qs[1]:.2f}x [{qs[0]:.2f}, {qs[2]:.2f}]"

    def ms(name: str) -> str:
        return f"{1e3 * statistics.median(times[name]):.1f} ms"

    choice = ContrastiveLoss(temperature=0.2).engine_for(batch, size)
    rows = [
        f"MoCo queue {size}x{D}, B={batch}, t=0.2, fwd+bwd (median [quartiles] of per-round ratios); "
        f"default engine: {choice.engine} ({choice.reason})",
        f"  uniform step {ms('uniform/default')}, Hard(beta=0.2) step {ms('hard/default')}, "
        f"matmul floor {ms('floor')} ((B,d)x(d,Q) + (B,Q)x(Q,d))",
        f"  uniform / matmul floor = {paired('uniform/default', 'floor')}",
    ]
    for name in engines:
        rows.append(
            f"  {name:>12}: Hard(beta=0.2) / uniform = {paired(f'hard/{name}', f'uniform/{name}')}"
            + ("   (goal <= 1.1x)" if name == "default" else "")
        )
    rows.append(f"  uniform: tiled / materialised = {paired('uniform/tiled', 'uniform/materialised')}")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=11)
    parser.add_argument("--epsilon", type=float, default=0.5)
    parser.add_argument("--tol", type=float, default=1e-5)
    parser.add_argument("--memory-child", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--only-queue", action="store_true", help="only the queue's Hard / uniform")
    parser.add_argument("--queue-batch", type=int, default=256)
    parser.add_argument("--queue-sizes", type=int, nargs="+", default=[65536], help="queue sizes Q")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    args = parser.parse_args()
    if args.memory_child is not None:
        _memory_child(args.memory_child)
        return
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}")
    if args.only_queue:
        rows = bench_queue(args.repeats, args.queue_batch, tuple(args.queue_sizes))
    else:
        rows = bench_ot(args.repeats, args.epsilon, args.tol) + bench_memory()
        rows += bench_queue(args.repeats, args.queue_batch, tuple(args.queue_sizes))
    for row in rows:
        print(row)


if __name__ == "__main__":
    main()
