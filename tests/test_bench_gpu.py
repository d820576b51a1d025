"""``benchmarks/bench_gpu.py --dry-run`` (issue 47): every code path of the GPU benchmark once, on the
CPU at tiny sizes, so that the script cannot rot between GPU runs; its JSON has the documented
schema. The fused kernel runs under Triton's interpreter when triton is installed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hardneg._packages import is_installed

ROOT = Path(__file__).resolve().parents[1]
ENGINES = ("floor", "materialised", "tiled", "tiled_compiled", "fused", "inf_cl")


@pytest.mark.slow  # compile_tiles compiles once (tens of seconds on a CPU)
def test_bench_gpu_dry_run_writes_the_documented_json(tmp_path: Path) -> None:
    out = tmp_path / "results" / "gpu-dry-run.json"
    script = ROOT / "benchmarks" / "bench_gpu.py"
    done = subprocess.run(
        [sys.executable, str(script), "--dry-run", "--per-call", "--json", str(out)],
        capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["schema"] == "hardneg.bench_gpu/2" and result["dry_run"] is True
    assert result["device"] == "cpu (dry run)" and result["d"] == 16
    assert {"per_call", "queue", "correctness", "compare"} <= set(result)
    fused = is_installed("triton")
    assert result["triton"] is not None if fused else result["triton"] is None
    checks = result["correctness"]
    assert checks["hard float64 tiled vs materialised: grad"] < 1e-12
    if fused:
        assert checks["hard float64 fused vs materialised: value"] < 1e-12
        assert checks["simclr bf16 x30 fused: finite (1 = yes)"] == 1.0
    rows = result["compare"]
    assert [(r["dtype"], r["kind"]) for r in rows] == [
        ("float32", "uniform"), ("float32", "hard"), ("bfloat16", "uniform"), ("bfloat16", "hard"),
    ]
    for row in rows:
        for engine in ENGINES:
            timed = row[f"{engine}_ms"]
            assert (timed is None) == (engine in row["skipped"]), (engine, row)
            assert row[f"{engine}_peak_mib"] is None  # CPU: no CUDA memory statistics
        assert row["floor_ms"] > 0 and row["materialised_ms"] > 0 and row["tiled_ms"] > 0
        assert (row["fused_ms"] is not None) == fused
    assert rows[0]["tiled_compiled_ms"] > 0  # compiled once, in the first row
    if not is_installed("inf_cl"):
        assert "inf_cl: skipped: inf-cl not installed" in done.stdout
        assert rows[0]["skipped"]["inf_cl"] == "inf-cl not installed"
    assert rows[1]["skipped"]["inf_cl"] == "uniform negatives only"
