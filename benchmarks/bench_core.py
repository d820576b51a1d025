"""Speed and memory of the core loss engine (issue: core loss engine).

Prints, for B ∈ {256, 512, 1024, 4096} and d = 128, median fwd+bwd times and the ratios
measured in this one run (absolute times drift on shared machines; ratios are the goal):

- SimCLR vs the 3-matmul floor (forward v·vᵀ, backward two matmuls)  — goal ≤ 1.3×
- debiased and hard (HCL) vs SimCLR                                   — goal ≤ 1.05×
- the authors' direct-``exp`` implementation vs ours (hard)          — goal: ours faster
- peak resident memory of one fwd+bwd (separate process per case)

``--per-call`` prints instead the fixed cost of a call, where most training runs (B = 8 to 1024,
a step of a few milliseconds): the median over many rounds of the ratio of two fwd+bwd calls made
back to back (``--calls`` rounds; fewer at B ≥ 1024), against a hand-written NT-Xent measured in
the same run (:func:`handwritten_ntxent`: ``F.normalize``, one ``v·vᵀ/t``,
the diagonal set to −inf, ``F.cross_entropy`` with the partner's index):

- SimCLR / hand-written at B ∈ {8, 64, 256}, d ∈ {8, 128}          — goal ≤ 1.15×
- hard + debiased / SimCLR at B ∈ {8, 64, 256, 1024, 4096}, d = 128 — goal ≤ 1.15×
- the operators of one call at B = 64 (torch.profiler): aten operators and host reads
  (``aten::item`` / ``aten::_local_scalar_dense``), SimCLR and hard + debiased.

``--per-call --compiled`` adds ``torch.compile`` (Inductor; on a CPU it needs a C++ compiler) of
SimCLR and of hard + debiased at B ≤ 256, where the materialised engine runs: the compiled loss
against the eager hand-written NT-Xent and the eager SimCLR, after a check that the compiled value
equals the eager one (about 10 s of compilation per shape and loss, once).

``--per-call --ref REV`` measures a before/after in **one process**: the ``src/hardneg`` of git
revision ``REV`` is exported to a temporary folder as the package ``hardneg_ref`` (its absolute
imports renamed, :func:`import_ref`) and every ratio is printed for both, the two versions'
calls interleaved in the same rounds, with ``after / before`` of SimCLR and of hard + debiased.

Why this file and ``benchmarks/bench_tiled.py`` gave different hard/SimCLR ratios with the tiled
engine (1.25 here, 1.05 there, issue 37): not the settings — both use β = 1, τ⁺ = 0.1, t = 0.5,
d = 128, no diagnostics, and at B = 4096 this file's ``engine="auto"`` runs the tiled engine with
the 1024 tile that ``bench_tiled`` forces. The estimators differ: the default table here takes
the ratio of two medians over only ``max(3, repeats // 2)`` calls at B = 4096 (3 with
``--repeats 5``), always in the same order and in the same rounds as the authors' 1.6 GiB case,
while ``bench_tiled`` takes the median of per-round ratios over rounds in rotated order. On a
shared 2-core machine three unpaired samples of a multi-second call move the ratio by ±0.2.
``--per-call`` therefore uses paired per-round ratios (alternating which call goes first) at
every B, 4096 included; its hard + debiased / SimCLR at B = 4096 is the number to compare with
``bench_tiled``'s tiled hard / simclr. (One input differs and is not expected to matter: there
``z2`` is a noisy copy of ``z1``, here an independent draw; the engines' work does not depend
on the values.)

Usage: ``python benchmarks/bench_core.py [--sizes 256 512 1024 4096] [--repeats 7]``,
``python benchmarks/bench_core.py --per-call [--calls 200] [--ref HEAD] [--compiled]``
"""

from __future__ import annotations

import argparse
import atexit
import importlib
import io
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import torch

from hardneg import ContrastiveLoss, negatives

D = 128
T = 0.5


def authors_hcl(out_1: torch.Tensor, out_2: torch.Tensor, tau_plus: float, beta: float) -> torch.Tensor:
    """The HCL authors' ``image/main.py`` criterion (direct exp, mask-select), for comparison."""
    b = out_1.shape[0]
    out_1 = torch.nn.functional.normalize(out_1, dim=1)
    out_2 = torch.nn.functional.normalize(out_2, dim=1)
    out = torch.cat([out_1, out_2], dim=0)
    neg = torch.exp(torch.mm(out, out.t().contiguous()) / T)
    mask = torch.ones((b, 2 * b), dtype=torch.bool)
    for i in range(b):
        mask[i, i] = False
        mask[i, i + b] = False
    mask = torch.cat((mask, mask), 0)
    neg = neg.masked_select(mask).view(2 * b, -1)
    pos = torch.exp(torch.sum(out_1 * out_2, dim=-1) / T)
    pos = torch.cat([pos, pos], dim=0)
    n = b * 2 - 2
    imp = (beta * neg.log()).exp()
    reweight_neg = (imp * neg).sum(dim=-1) / imp.mean(dim=-1)
    ng = (-tau_plus * n * pos + reweight_neg) / (1 - tau_plus)
    ng = torch.clamp(ng, min=n * math.e ** (-1 / T))
    return (-torch.log(pos / (pos + ng))).mean()


def handwritten_ntxent(z1: torch.Tensor, z2: torch.Tensor, t: float = T) -> torch.Tensor:
    """SimCLR's NT-Xent as most code writes it: the per-call floor a loss library is compared with."""
    b = z1.shape[0]
    v = torch.nn.functional.normalize(torch.cat([z1, z2]), dim=1)
    s = v @ v.T / t
    s = s.fill_diagonal_(float("-inf"))
    target = torch.arange(2 * b, device=v.device).roll(b)
    return torch.nn.functional.cross_entropy(s, target)


def make_cases() -> dict[str, object]:
    return {
        "simclr": ContrastiveLoss(temperature=T),
        "debiased": ContrastiveLoss(temperature=T, tau_plus=0.1),
        "hard": ContrastiveLoss(temperature=T, tau_plus=0.1, negatives=negatives.Hard(beta=1.0)),
        "authors_hard": lambda a, b: authors_hcl(a, b, 0.1, 1.0),
    }


def floor_step(z1: torch.Tensor, z2: torch.Tensor) -> None:
    """The 3 matmuls any exact in-batch loss needs: v·vᵀ forward, G·v and Gᵀ·v backward."""
    v = torch.cat([z1, z2])
    s = v @ v.T
    (s @ v).sum()
    (s.T @ v).sum()


def time_cases(cases: dict[str, object], b: int, repeats: int) -> dict[str, float]:
    """Median fwd+bwd seconds of every case, the cases interleaved repeat by repeat so that the
    machine's drift affects them alike (the ratios are what is compared)."""
    g = torch.Generator().manual_seed(0)
    z1 = torch.randn(b, D, generator=g, requires_grad=True)
    z2 = torch.randn(b, D, generator=g, requires_grad=True)

    def step(fn) -> None:  # type: ignore[no-untyped-def]
        z1.grad = z2.grad = None
        if fn is None:
            with torch.no_grad():
                floor_step(z1, z2)
        else:
            fn(z1, z2).backward()

    times: dict[str, list[float]] = {name: [] for name in cases}
    for fn in cases.values():
        step(fn)  # warm up allocators and kernels
    for _ in range(repeats):
        for name, fn in cases.items():
            start = time.perf_counter()
            step(fn)
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(ts) for name, ts in times.items()}


def import_ref(rev: str) -> object:
    """The package ``hardneg`` of git revision ``rev`` imported as ``hardneg_ref`` (a copy under a
    temporary folder, ``hardneg`` renamed in its imports), beside the working tree's ``hardneg``."""
    root = Path(__file__).resolve().parents[1]
    if rev.endswith(".tar") and Path(rev).is_file():  # `git archive REV src/hardneg > FILE.tar`, made
        tar = Path(rev).read_bytes()  # where git is (a machine given a copy of the tree has none)
    else:
        tar = subprocess.run(
            ["git", "archive", rev, "src/hardneg"], cwd=root, capture_output=True, check=True
        ).stdout
    tmp = Path(tempfile.mkdtemp(prefix="hardneg_ref_"))
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)
    with tarfile.open(fileobj=io.BytesIO(tar)) as archive:
        archive.extractall(tmp, filter="data")
    pkg = tmp / "src" / "hardneg_ref"
    (tmp / "src" / "hardneg").rename(pkg)
    pattern = re.compile(r"\b(from|import) hardneg(?=[. \n])|(?<=[\"'])hardneg(?=\.)")
    def renamed(m: re.Match[str]) -> str:
        return f"{m.group(1)} hardneg_ref" if m.group(1) else "hardneg_ref"

    for path in pkg.rglob("*.py"):
        path.write_text(pattern.sub(renamed, path.read_text()))
    sys.path.insert(0, str(tmp / "src"))
    return importlib.import_module("hardneg_ref")


def compiled_cases(simclr: object, hard: object) -> dict[str, object]:
    """``torch.compile`` (Inductor, static shapes) of the two losses after ``torch._dynamo.reset()``:
    one graph for one shape, as a training loop of one batch size gets (with the graphs of several
    shapes cached, each call would test their guards in turn, a cost a training loop does not pay)."""
    import torch._dynamo

    torch._dynamo.reset()
    return {
        "simclr_compiled": torch.compile(simclr, dynamic=False),
        "hard_compiled": torch.compile(hard, dynamic=False),
    }


def per_call_ratios(
    repeats: int, ref: object | None = None, compiled: bool = False
) -> list[tuple[str, int, int, float, float]]:
    """(ratio name, B, d, ratio, denominator µs): the median over ``repeats`` rounds of the
    per-round ratio of two fwd+bwd calls made back to back (their order rotates from round to
    round), and the denominator's median time (the first ratio's denominator: the hand-written
    NT-Xent). With ``ref`` (:func:`import_ref`) the reference version's SimCLR and hard +
    debiased run in the same rounds: rows ``…(ref)`` and ``after/before``. With ``compiled``
    (:func:`compiled_cases`) the compiled losses run in the same rounds at B ≤ 256."""
    simclr, hard = make_cases()["simclr"], make_cases()["hard"]
    fns: dict[str, object] = {"handwritten": handwritten_ntxent, "simclr": simclr, "hard": hard}
    if ref is not None:
        fns["simclr_ref"] = ref.ContrastiveLoss(temperature=T)  # type: ignore[attr-defined]
        fns["hard_ref"] = ref.ContrastiveLoss(  # type: ignore[attr-defined]
            temperature=T, tau_plus=0.1, negatives=ref.negatives.Hard(beta=1.0)  # type: ignore[attr-defined]
        )
    ratios = [("simclr/handwritten", "simclr", "handwritten"), ("hard+debiased/simclr", "hard", "simclr")]
    if ref is not None:
        ratios += [
            ("simclr(ref)/handwritten", "simclr_ref", "handwritten"),
            ("hard+debiased(ref)/simclr(ref)", "hard_ref", "simclr_ref"),
            ("simclr after/before", "simclr", "simclr_ref"),
            ("hard+deb after/before", "hard", "hard_ref"),
        ]
    if compiled:
        ratios += [
            ("simclr compiled/handwritten", "simclr_compiled", "handwritten"),
            ("hard+deb compiled/simclr", "hard_compiled", "simclr"),
            ("hard+deb compiled/simclr compiled", "hard_compiled", "simclr_compiled"),
        ]
    rows = []
    plan = [(b, d) for d in (8, 128) for b in (8, 64, 256)] + [(b, 128) for b in (1024, 4096)]
    for b, d in plan:
        if compiled:  # compiled afresh per shape: a call then checks one cache entry's guards
            fns.update(compiled_cases(simclr, hard) if b <= 256 else {})
        names = [n for n in fns if b <= 256 or (n != "handwritten" and not n.endswith("_compiled"))]
        reps = repeats if b <= 256 else max(5, repeats // (8 if b < 4096 else 40))
        g = torch.Generator().manual_seed(0)
        z1 = torch.randn(b, d, generator=g, requires_grad=True)
        z2 = torch.randn(b, d, generator=g, requires_grad=True)

        def timed(fn, z1: torch.Tensor = z1, z2: torch.Tensor = z2) -> float:  # type: ignore[no-untyped-def]
            z1.grad = z2.grad = None
            start = time.perf_counter()
            fn(z1, z2).backward()
            return time.perf_counter() - start

        for _ in range(3):
            for name in names:
                timed(fns[name])
        for name in (n for n in names if n.endswith("_compiled")):
            eager = fns[name.removesuffix("_compiled")]
            got, want = fns[name](z1, z2).detach(), eager(z1, z2).detach()  # type: ignore[operator]
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6, msg=f"{name} at B={b}, d={d}")
        times: dict[str, list[float]] = {name: [] for name in names}
        for i in range(reps):
            order = names[i % len(names) :] + names[: i % len(names)]
            for name in order[::-1] if i % 2 else order:
                times[name].append(timed(fns[name]))
        for label, num, den in ratios:
            if num in times and den in times and (d == 128 or not label.startswith("hard")):
                per_round = [x / y for x, y in zip(times[num], times[den], strict=True)]
                rows.append((label, b, d, statistics.median(per_round), 1e6 * statistics.median(times[den])))
    return rows


def operator_counts(b: int = 64, d: int = 8) -> dict[str, tuple[int, int]]:
    """(aten operators, host reads) of one fwd+bwd call at (B, d), from ``torch.profiler``
    (every ``aten::`` event, nested ones included; host reads: ``aten::_local_scalar_dense``)."""
    from torch.profiler import ProfilerActivity, profile

    g = torch.Generator().manual_seed(0)
    z1 = torch.randn(b, d, generator=g, requires_grad=True)
    z2 = torch.randn(b, d, generator=g, requires_grad=True)
    out = {}
    cases = {"handwritten": handwritten_ntxent, **make_cases()}
    for name in ("handwritten", "simclr", "hard"):
        fn = cases[name]
        fn(z1, z2).backward()  # type: ignore[operator]
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            fn(z1, z2).backward()  # type: ignore[operator]
        names = [e.name for e in prof.events() if e.name.startswith("aten::")]
        out[name] = (len(names), names.count("aten::_local_scalar_dense"))
    return out


def print_per_call(repeats: int, ref: str | None = None, compiled: bool = False) -> None:
    """The ``--per-call`` report (module docstring); ``ref``: a git revision to compare with;
    ``compiled``: add the ``torch.compile`` rows."""
    threads = torch.get_num_threads()
    print(f"torch {torch.__version__}, threads={threads}, fwd+bwd, medians of per-round ratios")
    if ref is not None:
        print(f"reference: src/hardneg of {ref} as hardneg_ref, interleaved in the same rounds")
    print(f"{'ratio':>34} | {'B':>5} | {'d':>4} | {'ratio':>6} | denominator µs")
    rows = per_call_ratios(repeats, import_ref(ref) if ref is not None else None, compiled)
    for name, b, d, ratio, den in sorted(rows, key=lambda r: (r[0], r[2], r[1])):
        print(f"{name:>34} | {b:>5} | {d:>4} | {ratio:>6.2f} | {den:>10.0f}")
    for name, (ops, reads) in operator_counts().items():
        print(f"operators per call, B=64 d=8, {name:>12}: {ops:>4} aten ops, {reads} host reads")


def peak_memory_mib(case: str, b: int) -> float:
    """Peak resident-memory increase of one fwd+bwd, in a fresh process.

    The high-water mark (VmHWM) is reset through ``/proc/self/clear_refs`` after the inputs exist,
    so the number is the loss's own peak, not the import's. glibc's mmap threshold is fixed at
    128 KiB (``MALLOC_MMAP_THRESHOLD_``): every buffer above it is mapped and unmapped with its
    tensor, so the peak is that of the live tensors, not of freed heap memory glibc keeps (its
    default threshold rises after the first free of a large block, and a later (2B, 2B) buffer
    then comes from the heap).
    """
    code = (
        "import torch, sys; sys.path.insert(0, 'benchmarks');"
        "from bench_core import make_cases, floor_step, D, _hwm_mib;"
        f"b={b}; g=torch.Generator().manual_seed(0);"
        "z1=torch.randn(b, D, generator=g, requires_grad=True);"
        "z2=torch.randn(b, D, generator=g, requires_grad=True);"
        f"fn=make_cases().get({case!r});"
        "open('/proc/self/clear_refs','w').write('5'); base=_hwm_mib(True);"
        "(floor_step(z1.detach(), z2.detach()) if fn is None else fn(z1, z2).backward());"
        "print(_hwm_mib(False)-base)"
    )
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "131072"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    return float(out.stdout.strip().splitlines()[-1])


def _hwm_mib(current: bool) -> float:
    """VmRSS (current=True) or VmHWM (peak since the last reset) of this process, in MiB."""
    key = "VmRSS:" if current else "VmHWM:"
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"{key} not found in /proc/self/status")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 512, 1024, 4096])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--per-call", action="store_true", help="the per-call cost (module docstring)")
    parser.add_argument("--calls", type=int, default=200, help="calls per case with --per-call")
    parser.add_argument("--ref", default=None,
                        help="with --per-call: git revision (or its `git archive` .tar) to compare with")
    parser.add_argument("--compiled", action="store_true",
                        help="with --per-call: add torch.compile (Inductor) of SimCLR and hard + debiased")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.per_call:
        print_per_call(args.calls, args.ref, args.compiled)
        return
    cases = make_cases()
    rows = []
    for b in args.sizes:
        reps = args.repeats if b < 4096 else max(3, args.repeats // 2)
        t = time_cases({"floor": None, **cases}, b, reps)
        mem = {name: peak_memory_mib(name, b) for name in ("simclr", "hard", "authors_hard")}
        rows.append(
            {
                "B": b,
                "floor_ms": 1e3 * t["floor"],
                "simclr_ms": 1e3 * t["simclr"],
                "simclr/floor": t["simclr"] / t["floor"],
                "debiased/simclr": t["debiased"] / t["simclr"],
                "hard/simclr": t["hard"] / t["simclr"],
                "authors/ours(hard)": t["authors_hard"] / t["hard"],
                "peak_MiB_simclr": mem["simclr"],
                "peak_MiB_hard": mem["hard"],
                "peak_MiB_authors": mem["authors_hard"],
            }
        )
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"torch {torch.__version__}, threads={torch.get_num_threads()}, d={D}, fwd+bwd medians")
    header = list(rows[0])
    print(" | ".join(f"{h:>18}" for h in header))
    for r in rows:
        print(" | ".join(f"{r[h]:>18.3f}" if isinstance(r[h], float) else f"{r[h]:>18}" for h in header))


if __name__ == "__main__":
    main()
