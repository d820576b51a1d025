"""GPU checks of the loss engines, in one run on a CUDA machine (issue: cost floor, item 4).

Not part of the tests (CI has no GPU). Prints, on the first CUDA device:

1. correctness: the tiled engine against the materialised one (values and gradients, float64 and
   float32), and the CUDA tiled float64 result against the CPU materialised one (SimCLR and hard +
   debiased, B = 1024, d = 128); bf16 inputs give a finite loss in both engines;
2. the crossover: fwd+bwd milliseconds (CUDA events, median) of the materialised and tiled engines
   and of the matmul floor (forward v·vᵀ, backward two matmuls of the same sizes) for B from 512 to
   16 384 (2B views), so that ``SPEED_CROSSOVER["cuda"]`` can be set from a measurement;
3. large batches: the tiled engine's time against the matmul floor at B = 32 768 and 65 536 (and
   larger while it fits), i.e. whether the per-tile element-wise passes or the matrix products
   dominate; with ``--compiled`` also the ``torch.compile``-fused tile body;
4. ``--per-call`` (alone with ``--only-per-call``): where most people train, the per-call cost of a
   small batch on the GPU (each extra small operation is a kernel launch, each host read a stall):
   fwd+bwd of SimCLR against a hand-written ``F.cross_entropy`` NT-Xent and of hard + debiased
   against SimCLR at B = 8 … 1024 (d = 128), medians of per-round ratios; and a MoCo step over a
   queue of 65 536 unit keys (B = 256, t = 0.2): uniform against its two-matmul floor, Hard(β = 0.2)
   against uniform.

Run::

    PYTHONPATH=src python3 benchmarks/bench_gpu.py [--max-b 131072] [--compiled] [--json OUT]
    PYTHONPATH=src python3 benchmarks/bench_gpu.py --only-per-call
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from functools import partial

import torch

from hardneg import ContrastiveLoss
from hardneg.negatives import Hard

HUGE = 1 << 62  # memory budget that never forces tiling


def _loss(kind: str, engine: str, *, compiled: bool = False) -> ContrastiveLoss:
    extra = {"negatives": Hard(beta=1.0), "tau_plus": 0.1} if kind == "hard" else {}
    return ContrastiveLoss(temperature=0.5, engine=engine, memory_budget=HUGE, compile_tiles=compiled,
                           **extra)  # type: ignore[arg-type]


def _views(b: int, d: int, dtype: torch.dtype, device: str,
           seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator(device="cpu").manual_seed(seed)
    z1 = torch.randn(b, d, generator=g, dtype=torch.float64).to(device=device, dtype=dtype)
    z2 = (z1.double().cpu() + 0.3 * torch.randn(b, d, generator=g, dtype=torch.float64)).to(device, dtype)
    return z1.requires_grad_(), z2.requires_grad_()


def _value_and_grads(loss: ContrastiveLoss, z1: torch.Tensor, z2: torch.Tensor) -> tuple[float, torch.Tensor]:
    z1.grad = z2.grad = None
    out = loss(z1, z2)
    out.backward()
    assert z1.grad is not None and z2.grad is not None
    return float(out), torch.cat([z1.grad, z2.grad]).double().cpu()


def correctness(device: str) -> dict[str, float]:
    found: dict[str, float] = {}
    for kind in ("simclr", "hard"):
        for dtype in (torch.float64, torch.float32):
            z1, z2 = _views(1024, 128, dtype, device)
            v_m, g_m = _value_and_grads(_loss(kind, "materialised"), z1, z2)
            v_t, g_t = _value_and_grads(_loss(kind, "tiled"), z1, z2)
            name = f"{kind} {str(dtype).split('.')[-1]} tiled vs materialised"
            found[f"{name}: value"] = abs(v_m - v_t)
            found[f"{name}: grad"] = float((g_m - g_t).abs().max())
        c1, c2 = _views(1024, 128, torch.float64, "cpu")
        v_c, g_c = _value_and_grads(_loss(kind, "materialised"), c1, c2)
        z1, z2 = _views(1024, 128, torch.float64, device)
        v_t, g_t = _value_and_grads(_loss(kind, "tiled"), z1, z2)
        found[f"{kind} float64 CUDA tiled vs CPU materialised: value"] = abs(v_c - v_t)
        found[f"{kind} float64 CUDA tiled vs CPU materialised: grad"] = float((g_c - g_t).abs().max())
        for engine in ("materialised", "tiled"):
            z1, z2 = _views(4096, 128, torch.bfloat16, device)
            out = _loss(kind, engine)(z1 * 30, z2 * 30)  # unnormalised, large
            out.backward()
            finite = bool(torch.isfinite(out)) and bool(torch.isfinite(z1.grad).all())  # type: ignore[arg-type]
            found[f"{kind} bf16 x30 {engine}: finite (1 = yes)"] = float(finite)
    return found


def _time(fn, reps: int) -> float:
    """Median milliseconds of ``fn`` (CUDA events), after two warm-up calls."""
    for _ in range(2):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def _floor(v: torch.Tensor) -> None:
    """The three matrix products of SimCLR's fwd+bwd: v·vᵀ, then (N,N)·(N,d) twice."""
    s = v @ v.T
    _ = s @ v
    _ = s.T @ v


def _step(loss: ContrastiveLoss, z1: torch.Tensor, z2: torch.Tensor) -> None:
    z1.grad = z2.grad = None
    loss(z1, z2).backward()


def speed(device: str, sizes: list[int], large: list[int], reps: int,
          compiled: bool) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    free = torch.cuda.mem_get_info()[0]
    for b in sizes + large:
        n = 2 * b
        row: dict[str, object] = {"B": b, "N": n}
        v = torch.randn(n, 128, device=device)
        try:
            row["floor_ms"] = _time(partial(_floor, v), reps)
        except torch.OutOfMemoryError:
            row["floor_ms"] = None
        del v
        torch.cuda.empty_cache()
        for kind in ("simclr", "hard"):
            z1, z2 = _views(b, 128, torch.float32, device)
            engines = ["tiled"] + (["materialised"] if b in sizes and 6 * n * n * 4 < free else [])
            if compiled and b in large[:1]:
                engines.append("tiled-compiled")
            for engine in engines:
                loss = _loss(kind, "tiled" if engine.startswith("tiled") else engine,
                             compiled=engine == "tiled-compiled")
                t0 = time.perf_counter()
                try:
                    ms = _time(partial(_step, loss, z1, z2), reps if b <= 16384 else 3)
                except torch.OutOfMemoryError:
                    ms = None
                torch.cuda.empty_cache()
                row[f"{kind}_{engine}_ms"] = ms
                row[f"{kind}_{engine}_wall_s"] = round(time.perf_counter() - t0, 1)
            del z1, z2
            torch.cuda.empty_cache()
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def _handwritten(z1: torch.Tensor, z2: torch.Tensor, t: float = 0.5) -> torch.Tensor:
    """SimCLR's NT-Xent as most code writes it (normalise, one product, diagonal masked)."""
    b = z1.shape[0]
    v = torch.nn.functional.normalize(torch.cat([z1, z2]), dim=1)
    s = (v @ v.T / t).fill_diagonal_(float("-inf"))
    return torch.nn.functional.cross_entropy(s, torch.arange(2 * b, device=v.device).roll(b))


def _paired_ms(fns: dict[str, object], rounds: int, calls: int) -> dict[str, list[float]]:
    """Per round and case: the mean ms of ``calls`` back-to-back calls (CUDA events), the cases
    interleaved with their order rotated."""
    for fn in fns.values():  # warm-up (allocator, kernels, autotuning)
        for _ in range(5):
            fn()  # type: ignore[operator]
    torch.cuda.synchronize()
    out: dict[str, list[float]] = {name: [] for name in fns}
    names = list(fns)
    for i in range(rounds):
        for name in names[i % len(names):] + names[: i % len(names)]:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(calls):
                fns[name]()  # type: ignore[operator]
            end.record()
            end.synchronize()
            out[name].append(start.elapsed_time(end) / calls)
    return out


def _median_ratio(times: dict[str, list[float]], a: str, b: str) -> float:
    return statistics.median(x / y for x, y in zip(times[a], times[b], strict=True))


def per_call(device: str, rounds: int = 15, calls: int = 50) -> list[dict[str, object]]:
    """SimCLR / hand-written and hard + debiased / SimCLR, fwd+bwd, B = 8 … 1024, d = 128."""
    rows: list[dict[str, object]] = []
    simclr = ContrastiveLoss(temperature=0.5)
    hard = ContrastiveLoss(temperature=0.5, tau_plus=0.1, negatives=Hard(beta=1.0))
    for b in (8, 64, 256, 1024):
        z1, z2 = _views(b, 128, torch.float32, device)

        def step(fn: object, z1: torch.Tensor = z1, z2: torch.Tensor = z2) -> object:
            def f() -> None:
                z1.grad = z2.grad = None
                fn(z1, z2).backward()  # type: ignore[operator]
            return f

        times = _paired_ms({"handwritten": step(_handwritten), "simclr": step(simclr), "hard": step(hard)},
                           rounds, calls)
        row = {"B": b, **{f"{k}_ms": round(statistics.median(v), 4) for k, v in times.items()},
               "simclr/handwritten": round(_median_ratio(times, "simclr", "handwritten"), 3),
               "hard/simclr": round(_median_ratio(times, "hard", "simclr"), 3)}
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def queue_step(device: str, size: int = 65536, batch: int = 256, rounds: int = 15,
               calls: int = 20) -> dict[str, object]:
    """A MoCo step over ``size`` unit keys: uniform / its floor (two matmuls), Hard(β = 0.2) / uniform."""
    from hardneg.queue import MemoryQueue, QueueLoss

    torch.manual_seed(0)
    queue = MemoryQueue(size=size, dim=128).to(device)
    queue.enqueue(torch.nn.functional.normalize(torch.randn(size, 128, device=device), dim=1))
    q, k = torch.randn(batch, 128, device=device), torch.randn(batch, 128, device=device)
    keys = queue.candidates()
    uniform = QueueLoss(ContrastiveLoss(temperature=0.2), queue)
    hard = QueueLoss(ContrastiveLoss(temperature=0.2, negatives=Hard(beta=0.2)), queue)

    def run(module: QueueLoss) -> object:
        def f() -> None:
            qq = q.detach().requires_grad_(True)
            module(qq, k, enqueue=False).backward()
        return f

    def floor() -> None:  # forward q·Kᵀ, backward (B, Q)·(Q, d)
        s = q @ keys.T
        s @ keys

    times = _paired_ms({"floor": floor, "uniform": run(uniform), "hard": run(hard)}, rounds, calls)
    row = {"Q": size, "B": batch, **{f"{k}_ms": round(statistics.median(v), 4) for k, v in times.items()},
           "uniform/floor": round(_median_ratio(times, "uniform", "floor"), 3),
           "hard/uniform": round(_median_ratio(times, "hard", "uniform"), 3)}
    print(json.dumps(row), flush=True)
    return row


def _ratio(row: dict[str, object], a: str, b: str) -> str:
    x, y = row.get(a), row.get(b)
    return f"{x / y:8.2f}" if isinstance(x, float) and isinstance(y, float) and y else "       -"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max-b", type=int, default=65536)
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--compiled", action="store_true")
    parser.add_argument("--json", default=None)
    parser.add_argument("--per-call", action="store_true", help="also the small-batch per-call cost")
    parser.add_argument("--only-per-call", action="store_true", help="only the per-call and queue section")
    args = parser.parse_args()
    assert torch.cuda.is_available(), "no CUDA device"
    device = "cuda"
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}, "
          f"tf32 matmul {torch.backends.cuda.matmul.allow_tf32}", flush=True)
    if args.per_call or args.only_per_call:
        calls = per_call(device)
        queue = queue_step(device)
        if args.json and args.only_per_call:
            with open(args.json, "w") as handle:
                json.dump({"per_call": calls, "queue": queue}, handle, indent=1)
        if args.only_per_call:
            return
    found = correctness(device)
    for key, value in found.items():
        print(f"{key:60s} {value:.3g}", flush=True)
    sizes = [512, 1024, 2048, 4096, 8192, 16384]
    large = [b for b in (32768, 65536, 131072) if b <= args.max_b]
    rows = speed(device, sizes, large, args.reps, args.compiled)
    print("\n    B |  floor ms | simclr mat/tiled | tiled/floor | hard mat/tiled | hard tiled/floor")
    for r in rows:
        floor = r.get("floor_ms")
        print(f"{r['B']:6d} | {floor if floor is None else round(floor, 2)!s:>9} | "
              f"{_ratio(r, 'simclr_materialised_ms', 'simclr_tiled_ms')} | "
              f"{_ratio(r, 'simclr_tiled_ms', 'floor_ms')} | "
              f"{_ratio(r, 'hard_materialised_ms', 'hard_tiled_ms')} | "
              f"{_ratio(r, 'hard_tiled_ms', 'floor_ms')}")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"correctness": found, "speed": rows}, handle, indent=1)


if __name__ == "__main__":
    main()
