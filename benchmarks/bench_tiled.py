"""Speed and memory of the tiled loss engine against the materialised one (issue: tiled engine).

Prints ratios measured in this one run (absolute times drift on shared machines):

1. fwd+bwd time, tiled / materialised, at B ∈ {1024, 4096} (goal ≤ 1.1× at B = 4096), for
   SimCLR, debiased, hard (β = 1, τ⁺ = 0.1) and K-subsampled (K = 256) negatives, each case
   once per round in an order rotated from round to round; and each against the 3-matmul floor
   (v·vᵀ and its two backward matmuls). A ratio is the median (and quartiles) over rounds of
   the two times of the same round.
2. peak resident memory of one fwd+bwd (VmHWM of a fresh process) for growing B: the tiled
   path grows linearly in B, the materialised one quadratically (it stops where it would need
   more than ``--max-gib``).
3. the default engine (``engine="auto"``: by the measured speed crossover within the memory
   budget, issue 25) against the faster of the two forced engines, at B ∈ {256, 512, 1024, 4096}
   (``--engine-sizes``; goal: default / faster ≤ 1.05 everywhere), SimCLR and hard negatives,
   with the engine and reason ``ContrastiveLoss.engine_for`` gives.
4. K-subsampled / SimCLR, default engine, fwd+bwd, at B ∈ {1024, 4096} (``--subsample-sizes``)
   for K = 64 (the gathered engine: only the A·K drawn logits; goal ≤ 0.5× at B = 4096) and
   K = N = 2B − 2 (every candidate: the identity, no draw; goal ≤ 1.2×), with the engine chosen.
   Printed with part 3 (``--only-engine``).
5. with ``--huge``: one fwd+bwd at B = 65 536 (131 072 views, d = 128) for SimCLR, debiased,
   hard and K-subsampled negatives, its time and peak memory (several minutes each on 2 cores).

Usage: ``python benchmarks/bench_tiled.py [--repeats 5] [--huge] [--threads 2]``
(``--only-engine``: just parts 3 and 4)
(``--only-huge --huge-cases simclr hard``: just those cases of part 3; ``--compiled``: part 1
also with ``compile_tiles=True``, the first call of each size compiling for tens of seconds).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

import torch

D = 128
T = 0.5
CASES = ("simclr", "debiased", "hard", "subsample")


def make_loss(case: str, tiled: bool | None, tile: int | None = 1024):  # type: ignore[no-untyped-def]
    """The loss of a case: tiled (``tile``; ``None``: the engine's speed tile), materialised, or
    with ``tiled=None`` the default engine choice."""
    from hardneg import ContrastiveLoss, negatives

    kw: dict[str, object] = {"temperature": T}
    if case.endswith("+compiled"):  # the same case with torch.compile'd tile kernels
        case = case.removesuffix("+compiled")
        kw["compile_tiles"] = True
    if case == "debiased":
        kw["tau_plus"] = 0.1
    elif case == "hard":
        kw.update(tau_plus=0.1, negatives=negatives.Hard(beta=1.0))
    elif case == "subsample":
        kw.update(num_negatives=256, negatives=negatives.Hard(beta=1.0))
    if tiled:
        kw.update(engine="tiled", tile_size=tile)
    elif tiled is not None:
        kw.update(engine="materialised", memory_budget=1 << 62)
    return ContrastiveLoss(**kw)  # type: ignore[arg-type]


def _views(b: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    z1 = torch.randn(b, D, generator=g)
    return z1, z1 + 0.5 * torch.randn(b, D, generator=g)


def _step(loss, z1: torch.Tensor, z2: torch.Tensor) -> float:  # type: ignore[no-untyped-def]
    a, b = z1.clone().requires_grad_(True), z2.clone().requires_grad_(True)
    t0 = time.perf_counter()
    loss(a, b, generator=torch.Generator().manual_seed(1)).backward()
    return time.perf_counter() - t0


def _floor(z1: torch.Tensor, z2: torch.Tensor) -> float:
    v = torch.cat([z1, z2]).requires_grad_(True)
    t0 = time.perf_counter()
    s = v @ v.T
    s.backward(torch.ones_like(s))
    return time.perf_counter() - t0


def speed(sizes: list[int], repeats: int, compiled: bool = False) -> list[str]:
    lines = []
    cases = CASES + (("simclr+compiled", "hard+compiled") if compiled else ())
    for b in sizes:
        z1, z2 = _views(b)
        fns = {"floor": lambda z1=z1, z2=z2: _floor(z1, z2)}
        for case in cases:
            fns[f"{case}/mat"] = lambda c=case, z1=z1, z2=z2: _step(make_loss(c, False), z1, z2)
            fns[f"{case}/tiled"] = lambda c=case, z1=z1, z2=z2: _step(make_loss(c, True), z1, z2)
        times = _rounds(fns, repeats)
        med = {k: statistics.median(v) for k, v in times.items()}

        def r(a: str, b: str, times: dict[str, list[float]] = times) -> str:
            return _paired(times[a], times[b])

        lines.append(
            f"B={b} d={D} (2B={2 * b} views), {repeats} rounds; floor {1e3 * med['floor']:.0f} ms "
            "(ratios: median [quartiles] of the per-round ratios)"
        )
        for case in cases:
            m, t = med[f"{case}/mat"], med[f"{case}/tiled"]
            lines.append(
                f"  {case:>9}: materialised {1e3 * m:7.0f} ms, tiled {1e3 * t:7.0f} ms, "
                f"tiled/mat = {r(f'{case}/tiled', f'{case}/mat')}, "
                f"tiled/floor = {r(f'{case}/tiled', 'floor')}"
            )
        for case in ("debiased", "hard", "subsample"):
            lines.append(
                f"  {case:>9} / simclr: materialised {r(f'{case}/mat', 'simclr/mat')}, "
                f"tiled {r(f'{case}/tiled', 'simclr/tiled')}"
            )
        if compiled:
            lines.append(
                f"  compiled: hard / simclr (tiled) {r('hard+compiled/tiled', 'simclr+compiled/tiled')}"
            )
    return lines


def engine_choice(sizes: list[int], repeats: int) -> list[str]:
    """Default engine / the faster forced engine per B (median [quartiles] of per-round ratios)."""
    lines = ["default engine (engine='auto') / the faster of materialised and tiled, fwd+bwd:"]
    for b in sizes:
        z1, z2 = _views(b)
        for case in ("simclr", "hard"):
            fns = {
                kind: lambda c=case, t=tiled, z1=z1, z2=z2: _step(make_loss(c, t, None), z1, z2)
                for kind, tiled in (("default", None), ("mat", False), ("tiled", True))
            }
            times = _rounds(fns, repeats)
            faster = [min(m, t) for m, t in zip(times["mat"], times["tiled"], strict=True)]
            choice = make_loss(case, None).engine_for(2 * b, 2 * b, torch.float32, "cpu")
            lines.append(
                f"  B={b:5d} {case:>6}: default/faster = {_paired(times['default'], faster)}, "
                f"tiled/mat = {_paired(times['tiled'], times['mat'])}; default: {choice.engine}"
                f"{'' if choice.tile is None else f' (tile {choice.tile})'}, {choice.reason}"
            )
    return lines


def subsample_ratios(sizes: list[int], repeats: int) -> list[str]:
    """K-subsampled / SimCLR (both with the default engine) per B, K = 64 and K = 2B − 2."""
    from hardneg import ContrastiveLoss

    lines = ["K-subsampled / SimCLR, default engine (engine='auto'), fwd+bwd, uniform negatives:"]
    for b in sizes:
        z1, z2 = _views(b)
        losses = {
            "simclr": ContrastiveLoss(temperature=T),
            "K=64": ContrastiveLoss(temperature=T, num_negatives=64),
            "K=N": ContrastiveLoss(temperature=T, num_negatives=2 * b - 2),
        }
        fns = {k: lambda loss=loss, z1=z1, z2=z2: _step(loss, z1, z2) for k, loss in losses.items()}
        times = _rounds(fns, repeats)
        for k in ("K=64", "K=N"):
            choice = losses[k].engine_for(2 * b, 2 * b, num_valid=2 * b - 2)
            lines.append(
                f"  B={b:5d} {k:>5}: {1e3 * statistics.median(times[k]):7.0f} ms, simclr "
                f"{1e3 * statistics.median(times['simclr']):7.0f} ms, "
                f"ratio {_paired(times[k], times['simclr'])}; {choice.engine}, {choice.reason}"
            )
    return lines


def _rounds(fns: dict[str, Callable[[], float]], repeats: int) -> dict[str, list[float]]:
    """Each function once per round, the order rotated from round to round (so that no case always
    runs after the same neighbour), after one warm-up call each."""
    names = list(fns)
    times: dict[str, list[float]] = {k: [] for k in names}
    for fn in fns.values():
        fn()
    for i in range(repeats):
        k0 = i % len(names)
        for k in names[k0:] + names[:k0]:
            times[k].append(fns[k]())
    return times


def _paired(num: list[float], den: list[float]) -> str:
    """Median and quartiles of the per-round ratios ``num[i] / den[i]`` (the two timed minutes
    apart at most, so slow drift of the machine cancels)."""
    ratios = sorted(a / b for a, b in zip(num, den, strict=True))
    q = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
    return f"{q[1]:.2f} [{q[0]:.2f}, {q[2]:.2f}]"


def _peak(case: str, b: int, tiled: bool, threads: int, tile: int = 1024) -> dict[str, float]:
    code = (
        "import json, sys, time, torch\n"
        f"torch.set_num_threads({threads})\n"
        "sys.path.insert(0, 'benchmarks')\n"
        "from bench_tiled import make_loss, _views, _step\n"
        f"z1, z2 = _views({b})\n"
        f"t = _step(make_loss({case!r}, {tiled}, tile={tile}), z1, z2)\n"
        "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1]\n"
        "print(json.dumps({'seconds': t, 'peak_mib': int(hwm) / 1024}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def memory(sizes: list[int], max_gib: float, threads: int) -> list[str]:
    lines = [
        "peak resident MiB of one fwd+bwd (fresh process; includes ~300 MiB of torch itself), hard negatives:"
    ]
    for b in sizes:
        tiled = _peak("hard", b, True, threads)
        # the materialised engine holds about four (2B)^2 float32 matrices
        need_gib = 4 * (2 * b) ** 2 * 4 / 2**30
        mat = _peak("hard", b, False, threads) if need_gib <= max_gib else None
        mat_txt = f"{mat['peak_mib']:8.0f}" if mat else f"  (needs ~{need_gib:.0f} GiB: not run)"
        lines.append(f"  B={b:6d}: tiled {tiled['peak_mib']:8.0f}, materialised {mat_txt}")
    return lines


def huge(threads: int, cases: tuple[str, ...] = CASES, tile: int = 1024) -> list[str]:
    b = 65536
    lines = [f"B={b} (131072 views, d={D}), one fwd+bwd each, tiled (tile {tile}), {threads} threads:"]
    for case in cases:
        r = _peak(case, b, True, threads, tile=tile)
        lines.append(f"  {case:>9}: {r['seconds']:7.1f} s, peak {r['peak_mib']:7.0f} MiB")
    lines.append(
        f"  materialised limit: B ~ {int((24 * 2**30 / 16) ** 0.5 / 2)} on 24 GiB "
        "(four (2B)^2 float32 matrices)"
    )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 4096])
    parser.add_argument("--memory-sizes", type=int, nargs="+", default=[1024, 2048, 4096, 8192, 16384])
    parser.add_argument("--max-gib", type=float, default=6.0)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--huge", action="store_true", help="also B = 65536 (several minutes per case)")
    parser.add_argument("--huge-cases", nargs="+", choices=CASES, default=list(CASES))
    parser.add_argument("--only-huge", action="store_true", help="skip the speed and memory tables")
    parser.add_argument("--compiled", action="store_true", help="also with compile_tiles=True")
    parser.add_argument("--engine-sizes", type=int, nargs="+", default=[256, 512, 1024, 4096])
    parser.add_argument("--only-engine", action="store_true", help="only the default-engine tables")
    parser.add_argument("--subsample-sizes", type=int, nargs="+", default=[1024, 4096])
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if not args.only_huge:
        for line in engine_choice(args.engine_sizes, args.repeats):
            print(line, flush=True)
        for line in subsample_ratios(args.subsample_sizes, args.repeats):
            print(line, flush=True)
    if args.only_engine:
        return
    if not args.only_huge:
        for line in speed(args.sizes, args.repeats, args.compiled):
            print(line, flush=True)
        for line in memory(args.memory_sizes, args.max_gib, args.threads):
            print(line, flush=True)
    if args.huge or args.only_huge:
        for line in huge(args.threads, tuple(args.huge_cases)):
            print(line, flush=True)


if __name__ == "__main__":
    main()
