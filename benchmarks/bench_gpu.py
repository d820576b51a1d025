"""GPU measurements of the loss engines, side by side in one run on a CUDA machine (issues 25, 47).

Not part of the tests (CI has no GPU; ``--dry-run`` is: see below). Prints, on the first CUDA device:

1. correctness: the tiled and the fused engines against the materialised one (values and
   gradients, float64 and float32), the CUDA tiled float64 result against the CPU materialised one
   (SimCLR and hard + debiased, B = 1024, d = 128); bf16 inputs give a finite loss in every engine;
2. the comparison: fwd+bwd milliseconds (CUDA events, median) and peak memory of, side by side,
   the three-matmul floor (forward v·vᵀ, backward two products of the same sizes, in row blocks of
   8192 so that it fits at every B; float32, the loss's compute dtype), the materialised engine
   (where its (N, N) matrices fit), the tiled engine, the tiled engine with ``compile_tiles=True``,
   the fused Triton kernel (``engine="fused"``; needs triton) and Inf-CL's own loss (``inf-cl`` on
   PyPI, uniform negatives only; it keeps each view's own similarity in its denominator: the same
   (2B, 2B) products, not the same loss), for B = 4096, 8192, … up to ``--max-b`` (2B views,
   d = 128), float32 and bf16 inputs (every engine computes in float32), uniform negatives (SimCLR)
   and hard + debiased (``Hard(β = 1)``, τ⁺ = 0.1);
3. ``--per-call`` (alone with ``--only-per-call``): where most people train, the per-call cost of a
   small batch on the GPU: fwd+bwd of SimCLR against a hand-written ``F.cross_entropy`` NT-Xent and
   of hard + debiased against SimCLR at B = 8 … 1024 (d = 128), medians of per-round ratios; and a
   MoCo step over a queue of 65 536 unit keys (B = 256, t = 0.2): uniform against its two-matmul
   floor, Hard(β = 0.2) against uniform.

``--tf32`` sets ``torch.set_float32_matmul_precision("high")``: torch's float32 products and the
fused kernel's then use TF32 (default: IEEE float32 in both). ``--dry-run`` runs every code path
once on the CPU at tiny sizes (the fused kernel under Triton's interpreter, ``TRITON_INTERPRET=1``)
and writes its JSON to a temporary file unless ``--json`` is given: a test runs it, so that the
script cannot rot.

JSON (``--json docs/results/gpu-<device>.json``, written atomically)::

    {"schema": "hardneg.bench_gpu/2",
     "device": str, "torch": str, "triton": str | null, "inf_cl": str | null, "dry_run": bool,
     "d": int, "temperature": float, "float32_matmul_precision": "highest" | "high" | "medium",
     "correctness": {check: float},   # max |difference| of a value or gradient; "finite" checks 1 / 0
     "compare": [{"B": int, "N": int,  # B per view, N = 2B views
                  "dtype": "float32" | "bfloat16", "kind": "uniform" | "hard",
                  "<engine>_ms": float | null,        # median fwd+bwd; null: skipped or out of memory
                  "<engine>_peak_mib": float | null,  # peak CUDA memory above the inputs (null on a CPU)
                  "skipped": {engine: reason}},       # why an engine has no time
                 ...],                # engine ∈ floor, materialised, tiled, tiled_compiled, fused, inf_cl
     "per_call": [...], "queue": {...}}  # with --per-call / --only-per-call only

Run::

    PYTHONPATH=src python3 benchmarks/bench_gpu.py [--max-b 65536] [--tf32] [--json OUT]
    PYTHONPATH=src python3 benchmarks/bench_gpu.py --only-per-call
    PYTHONPATH=src python3 benchmarks/bench_gpu.py --dry-run      # CPU, seconds to a minute
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial

import torch
import torch.nn.functional as F

from hardneg import ContrastiveLoss
from hardneg._io import atomic_write_text
from hardneg._packages import is_installed
from hardneg.negatives import Hard

HUGE = 1 << 62  # memory budget that never forces tiling
SCHEMA = "hardneg.bench_gpu/2"
ENGINES = ("floor", "materialised", "tiled", "tiled_compiled", "fused", "inf_cl")
TEMPERATURE = 0.5


def _loss(kind: str, engine: str, *, compiled: bool = False) -> ContrastiveLoss:
    extra = {"negatives": Hard(beta=1.0), "tau_plus": 0.1} if kind == "hard" else {}
    return ContrastiveLoss(temperature=TEMPERATURE, engine=engine, memory_budget=HUGE, compile_tiles=compiled,
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
    return float(out.detach()), torch.cat([z1.grad, z2.grad]).double().cpu()


def _engines_to_check() -> list[str]:
    return ["tiled"] + (["fused"] if is_installed("triton") else [])


def correctness(device: str, b: int = 1024, d: int = 128) -> dict[str, float]:
    found: dict[str, float] = {}
    for kind in ("simclr", "hard"):
        for dtype in (torch.float64, torch.float32):
            z1, z2 = _views(b, d, dtype, device)
            v_m, g_m = _value_and_grads(_loss(kind, "materialised"), z1, z2)
            for engine in _engines_to_check():
                v_e, g_e = _value_and_grads(_loss(kind, engine), z1, z2)
                name = f"{kind} {str(dtype).split('.')[-1]} {engine} vs materialised"
                found[f"{name}: value"] = abs(v_m - v_e)
                found[f"{name}: grad"] = float((g_m - g_e).abs().max())
        c1, c2 = _views(b, d, torch.float64, "cpu")
        v_c, g_c = _value_and_grads(_loss(kind, "materialised"), c1, c2)
        z1, z2 = _views(b, d, torch.float64, device)
        v_t, g_t = _value_and_grads(_loss(kind, "tiled"), z1, z2)
        found[f"{kind} float64 {device} tiled vs CPU materialised: value"] = abs(v_c - v_t)
        found[f"{kind} float64 {device} tiled vs CPU materialised: grad"] = float((g_c - g_t).abs().max())
        for engine in ["materialised", *_engines_to_check()]:
            z1, z2 = _views(4 * b, d, torch.bfloat16, device)
            out = _loss(kind, engine)(z1 * 30, z2 * 30)  # unnormalised, large
            out.backward()
            finite = bool(torch.isfinite(out)) and bool(torch.isfinite(z1.grad).all())  # type: ignore[arg-type]
            found[f"{kind} bf16 x30 {engine}: finite (1 = yes)"] = float(finite)
    return found


def _time(fn: Callable[[], object], reps: int, device: str) -> float:
    """Median milliseconds of ``fn`` (CUDA events; ``perf_counter`` on a CPU), after two warm-up calls."""
    for _ in range(2):
        fn()
    if device != "cuda":
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(times)
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


def _floor(v: torch.Tensor, block: int = 8192) -> None:
    """The three matrix products of SimCLR's fwd+bwd, v·vᵀ then (N, N)·(N, d) twice, by row blocks
    (the same FLOPs; a (block, N) strip at a time, so that the floor fits wherever the tiled engine does)."""
    for r0 in range(0, v.shape[0], block):
        s = v[r0:r0 + block] @ v.T
        _ = s @ v
        _ = s.T @ v[r0:r0 + block]


def _step(loss: ContrastiveLoss, z1: torch.Tensor, z2: torch.Tensor) -> None:
    z1.grad = z2.grad = None
    loss(z1, z2).backward()


def _inf_cl_step(cal_inf_loss: Callable[..., torch.Tensor], z1: torch.Tensor, z2: torch.Tensor) -> None:
    """Inf-CL's loss (Cheng et al., arXiv:2410.17243) over the 2B views, each view's partner as its
    label; its denominator keeps the view's own similarity (the same products, not the same loss)."""
    z1.grad = z2.grad = None
    v = F.normalize(torch.cat([z1, z2]), dim=1)
    n = v.shape[0]
    labels = torch.arange(n, device=v.device).roll(n // 2)
    scale = torch.tensor(1.0 / TEMPERATURE, device=v.device)
    cal_inf_loss(v, v, labels=labels, scale=scale, head_dim=v.shape[1]).backward()


def _inf_cl() -> tuple[Callable[..., torch.Tensor] | None, str | None]:
    """Inf-CL's loss function and its version, or ``(None, None)`` when it is not installed."""
    try:
        from inf_cl import cal_inf_loss
    except ImportError:
        return None, None
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("inf-cl")
    except PackageNotFoundError:
        found = "unknown"
    return cal_inf_loss, found


def _peak_start(device: str) -> int:
    if device != "cuda":
        return 0
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    return torch.cuda.memory_allocated()


def _peak_mib(device: str, base: int) -> float | None:
    if device != "cuda":
        return None
    return round((torch.cuda.max_memory_allocated() - base) / 2**20, 1)


def _measure(row: dict[str, object], engine: str, fn: Callable[[], object], reps: int, device: str) -> None:
    """``row[engine_ms]`` and ``row[engine_peak_mib]`` of ``fn``, or the reason it has none."""
    base = _peak_start(device)
    ms = None
    try:
        ms = _time(fn, reps, device)
    except torch.OutOfMemoryError:
        row["skipped"][engine] = "out of memory"  # type: ignore[index]
    row[f"{engine}_ms"] = None if ms is None else round(ms, 4)
    row[f"{engine}_peak_mib"] = None if ms is None else _peak_mib(device, base)
    if device == "cuda":
        torch.cuda.empty_cache()


def _skip(row: dict[str, object], engine: str, reason: str) -> None:
    row[f"{engine}_ms"] = row[f"{engine}_peak_mib"] = None
    row["skipped"][engine] = reason  # type: ignore[index]


def compare(device: str, sizes: list[int], d: int, reps: int, dtypes: tuple[torch.dtype, ...], *,
            dry_run: bool = False) -> list[dict[str, object]]:
    """Every engine side by side, fwd+bwd, per B, input dtype and kind (module docstring, item 2);
    ``dry_run``: ``compile_tiles=True`` in the first row only (each compilation takes tens of seconds)."""
    rows: list[dict[str, object]] = []
    inf_cl, _ = _inf_cl()
    if inf_cl is None:
        print("inf_cl: skipped: inf-cl not installed", flush=True)
    fused = is_installed("triton")
    for b in sizes:
        n = 2 * b
        r = reps if b <= 16384 else 3
        fits = device != "cuda" or 6 * n * n * 4 < torch.cuda.mem_get_info()[0]
        for dtype in dtypes:
            v = torch.randn(n, d, device=device)
            floor: dict[str, object] = {"skipped": {}}
            _measure(floor, "floor", partial(_floor, v), r, device)
            del v
            for kind in ("uniform", "hard"):
                row: dict[str, object] = {"B": b, "N": n, "dtype": str(dtype).split(".")[-1], "kind": kind,
                                          "skipped": dict(floor["skipped"])}  # type: ignore[call-overload]
                row.update({k: floor[k] for k in ("floor_ms", "floor_peak_mib")})
                z1, z2 = _views(b, d, dtype, device)
                steps: dict[str, Callable[[], object] | str] = {
                    "materialised": partial(_step, _loss(kind, "materialised"), z1, z2) if fits
                    else "the (N, N) matrices do not fit",
                    "tiled": partial(_step, _loss(kind, "tiled"), z1, z2),
                    "tiled_compiled": "dry run: compiled in the first row only" if dry_run and rows
                    else partial(_step, _loss(kind, "tiled", compiled=True), z1, z2),
                    "fused": partial(_step, _loss(kind, "fused"), z1, z2) if fused
                    else "triton not installed",
                    "inf_cl": "uniform negatives only" if kind != "uniform"
                    else "inf-cl not installed" if inf_cl is None
                    else "inf-cl needs a CUDA device" if device != "cuda"
                    else partial(_inf_cl_step, inf_cl, z1, z2),
                }
                for engine, step in steps.items():
                    if isinstance(step, str):
                        _skip(row, engine, step)
                    else:
                        _measure(row, engine, step, r, device)
                del z1, z2
                rows.append(row)
                print(json.dumps(row), flush=True)
    return rows


def _handwritten(z1: torch.Tensor, z2: torch.Tensor, t: float = 0.5) -> torch.Tensor:
    """SimCLR's NT-Xent as most code writes it (normalise, one product, diagonal masked)."""
    b = z1.shape[0]
    v = F.normalize(torch.cat([z1, z2]), dim=1)
    s = (v @ v.T / t).fill_diagonal_(float("-inf"))
    return F.cross_entropy(s, torch.arange(2 * b, device=v.device).roll(b))


def _paired_ms(fns: dict[str, Callable[[], object]], rounds: int, calls: int,
               device: str) -> dict[str, list[float]]:
    """Per round and case: the mean ms of ``calls`` back-to-back calls (CUDA events; ``perf_counter``
    on a CPU), the cases interleaved with their order rotated."""
    for fn in fns.values():  # warm-up (allocator, kernels, autotuning)
        for _ in range(5 if device == "cuda" else 1):
            fn()
    if device == "cuda":
        torch.cuda.synchronize()
    out: dict[str, list[float]] = {name: [] for name in fns}
    names = list(fns)
    for i in range(rounds):
        for name in names[i % len(names):] + names[: i % len(names)]:
            if device != "cuda":
                t0 = time.perf_counter()
                for _ in range(calls):
                    fns[name]()
                out[name].append((time.perf_counter() - t0) * 1e3 / calls)
                continue
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(calls):
                fns[name]()
            end.record()
            end.synchronize()
            out[name].append(start.elapsed_time(end) / calls)
    return out


def _median_ratio(times: dict[str, list[float]], a: str, b: str) -> float:
    return statistics.median(x / y for x, y in zip(times[a], times[b], strict=True))


def per_call(device: str, sizes: tuple[int, ...] = (8, 64, 256, 1024), rounds: int = 15,
             calls: int = 50) -> list[dict[str, object]]:
    """SimCLR / hand-written and hard + debiased / SimCLR, fwd+bwd, B = 8 … 1024, d = 128."""
    rows: list[dict[str, object]] = []
    simclr = ContrastiveLoss(temperature=0.5)
    hard = ContrastiveLoss(temperature=0.5, tau_plus=0.1, negatives=Hard(beta=1.0))
    for b in sizes:
        z1, z2 = _views(b, 128, torch.float32, device)

        def step(fn: Callable[..., torch.Tensor], z1: torch.Tensor = z1,
                 z2: torch.Tensor = z2) -> Callable[[], None]:
            def f() -> None:
                z1.grad = z2.grad = None
                fn(z1, z2).backward()
            return f

        times = _paired_ms({"handwritten": step(_handwritten), "simclr": step(simclr), "hard": step(hard)},
                           rounds, calls, device)
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
    queue.enqueue(F.normalize(torch.randn(size, 128, device=device), dim=1))
    q, k = torch.randn(batch, 128, device=device), torch.randn(batch, 128, device=device)
    keys = queue.candidates()
    uniform = QueueLoss(ContrastiveLoss(temperature=0.2), queue)
    hard = QueueLoss(ContrastiveLoss(temperature=0.2, negatives=Hard(beta=0.2)), queue)

    def run(module: QueueLoss) -> Callable[[], None]:
        def f() -> None:
            qq = q.detach().requires_grad_(True)
            module(qq, k, enqueue=False).backward()
        return f

    def floor() -> None:  # forward q·Kᵀ, backward (B, Q)·(Q, d)
        s = q @ keys.T
        s @ keys

    times = _paired_ms({"floor": floor, "uniform": run(uniform), "hard": run(hard)}, rounds, calls, device)
    row = {"Q": size, "B": batch, **{f"{k}_ms": round(statistics.median(v), 4) for k, v in times.items()},
           "uniform/floor": round(_median_ratio(times, "uniform", "floor"), 3),
           "hard/uniform": round(_median_ratio(times, "hard", "uniform"), 3)}
    print(json.dumps(row), flush=True)
    return row


def _ratio(row: dict[str, object], a: str, b: str) -> str:
    x, y = row.get(a), row.get(b)
    return f"{x / y:7.2f}" if isinstance(x, float) and isinstance(y, float) and y else "      -"


def summary(rows: list[dict[str, object]]) -> None:
    """Each engine's time over the floor, and hard / uniform of the fused kernel, per row."""
    names = [e for e in ENGINES if e != "floor"]
    print("\ntime / floor (fwd+bwd)\n     B | dtype    | kind    |  floor ms | "
          + " | ".join(f"{e[:7]:>7}" for e in names) + " | fused hard/uniform")
    uniform = {(r["B"], r["dtype"]): r.get("fused_ms") for r in rows if r["kind"] == "uniform"}
    for r in rows:
        ratios = " | ".join(_ratio(r, f"{e}_ms", "floor_ms") for e in names)
        pair = {"hard": r.get("fused_ms"), "uniform": uniform.get((r["B"], r["dtype"]))}
        hard = _ratio(pair, "hard", "uniform") if r["kind"] == "hard" else ""
        head = f"{r['B']:6d} | {r['dtype']:8s} | {r['kind']:7s} | {r.get('floor_ms')!s:>9}"
        print(f"{head} | {ratios} | {hard}")


def _versions(device: str, dry_run: bool) -> dict[str, object]:
    triton_version = None
    if is_installed("triton"):
        import triton

        triton_version = triton.__version__
    name = torch.cuda.get_device_name(0) if device == "cuda" else "cpu"
    return {"schema": SCHEMA, "device": name + (" (dry run)" if dry_run else ""), "torch": torch.__version__,
            "triton": triton_version, "inf_cl": _inf_cl()[1], "dry_run": dry_run,
            "float32_matmul_precision": torch.get_float32_matmul_precision()}


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--min-b", type=int, default=4096, help="the smallest B (per view) compared")
    parser.add_argument("--max-b", type=int, default=65536, help="the largest B (per view) compared")
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--tf32", action="store_true",
                        help="float32 products in TF32 (torch's and the kernel's)")
    parser.add_argument("--json", default=None,
                        help="write the results here (e.g. docs/results/gpu-h200.json)")
    parser.add_argument("--per-call", action="store_true", help="also the small-batch per-call cost")
    parser.add_argument("--only-per-call", action="store_true", help="only the per-call and queue section")
    parser.add_argument("--dry-run", action="store_true", help="every code path once on the CPU, tiny sizes")
    args = parser.parse_args(argv)
    if args.dry_run:
        os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported: the fused kernel on the CPU
        device, d, sizes, reps, dtypes = "cpu", 16, [8], 1, (torch.float32, torch.bfloat16)
    else:
        assert torch.cuda.is_available(), "no CUDA device (--dry-run runs on a CPU)"
        device, d, reps, dtypes = "cuda", 128, args.reps, (torch.float32, torch.bfloat16)
        sizes = [b for b in (1 << k for k in range(9, 20)) if args.min_b <= b <= args.max_b]
    if args.tf32:
        torch.set_float32_matmul_precision("high")
    result: dict[str, object] = {**_versions(device, args.dry_run), "d": d, "temperature": TEMPERATURE}
    print(json.dumps(result), flush=True)
    if args.per_call or args.only_per_call:
        small = {"sizes": (8, 16), "rounds": 1, "calls": 1} if args.dry_run else {}
        result["per_call"] = per_call(device, **small)  # type: ignore[arg-type]
        q = {"size": 64, "batch": 8, "rounds": 1, "calls": 1} if args.dry_run else {}
        result["queue"] = queue_step(device, **q)  # type: ignore[arg-type]
    if not args.only_per_call:
        found = correctness(device, **({"b": 8, "d": d} if args.dry_run else {}))
        for key, value in found.items():
            print(f"{key:64s} {value:.3g}", flush=True)
        result["correctness"] = found
        rows = compare(device, sizes, d, reps, dtypes, dry_run=args.dry_run)
        summary(rows)
        result["compare"] = rows
    out = args.json
    if out is None and args.dry_run:
        out = os.path.join(tempfile.mkdtemp(prefix="bench_gpu-"), "gpu-dry-run.json")
    if out is not None:
        atomic_write_text(out, json.dumps(result, indent=1) + "\n")
        print(f"wrote {out}", flush=True)
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
