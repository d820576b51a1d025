"""``engine="fused"`` without running its kernel (issue 47): chosen only when asked, falling back
with the reason for what the kernel does not express, and — without triton — one clear error
while everything else is unchanged. No triton needed (the kernel's own tests:
tests/engines/tiled/test_triton_lse.py)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import hardneg.loss as loss_module
from hardneg import ContrastiveLoss, negatives, objectives
from hardneg._numerics.thresholds import THRESHOLDS
from hardneg.engines import choice
from hardneg.engines.choice import EngineChoice
from hardneg.engines.tiled.engine import speed_tile

GATHER_CROSSOVER = THRESHOLDS.gather_crossover


@pytest.fixture
def triton_present(monkeypatch: pytest.MonkeyPatch) -> None:
    """The loss and its chooser as with triton installed (its presence is checked by find_spec only)."""
    monkeypatch.setattr(choice, "require_triton", lambda: None)
    monkeypatch.setattr(loss_module, "require_triton", lambda: None)
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)


def test_auto_never_picks_the_fused_engine() -> None:
    for kw in ({}, {"memory_budget": 0}, {"negatives": negatives.Hard(beta=1.0), "tau_plus": 0.1},
               {"num_negatives": 4}):  # fmt: skip
        loss_fn = ContrastiveLoss(**kw)  # type: ignore[arg-type]
        for device in ("cpu", "cuda"):
            for n in (8, 4096, 1 << 17):
                assert loss_fn.engine_for(n, n, device=device).engine != "fused"


@pytest.mark.usefixtures("triton_present")
def test_forced_fused_engine_and_its_fallbacks_with_the_reason() -> None:
    n = 4096
    hard = ContrastiveLoss(engine="fused", negatives=negatives.Hard(beta=1.0), tau_plus=0.1)
    assert hard.engine_for(n, n, device="cuda") == EngineChoice("fused", speed_tile("cuda", n, n), "forced")
    assert ContrastiveLoss(engine="fused", memory_budget=0, tile_size=64).engine_for(8, 8, device="cuda") == (
        EngineChoice("fused", 64, "forced")
    )
    # no CUDA device and no interpreter: the tiled engine
    cpu = hard.engine_for(n, n, device="cpu")
    assert cpu.engine == "tiled"
    assert cpu.reason.startswith("not supported by the fused kernel (device type 'cpu'")
    # optimal transport: a Sinkhorn coupling
    ot = ContrastiveLoss(engine="fused", negatives=negatives.OptimalTransport(epsilon=0.5)).engine_for(
        n, n, device="cuda"
    )
    assert ot.engine == "tiled" and "Sinkhorn coupling" in ot.reason
    # objectives reading the ramp mean or the largest logit
    for objective in (objectives.Hinge(), objectives.Triplet()):
        got = ContrastiveLoss(engine="fused", objective=objective).engine_for(n, n, device="cuda")
        assert got.engine == "tiled" and f"objective={objective!r} reads the ramp mean" in got.reason
    # K-subsampled: the gathered engine where auto takes it, else tiled; an identity draw is no draw
    k_small = ContrastiveLoss(engine="fused", num_negatives=n // (2 * GATHER_CROSSOVER["cuda"]))
    got = k_small.engine_for(n, n, device="cuda", num_valid=n - 2)
    assert got.engine == "gathered"
    assert got.reason.startswith("not supported by the fused kernel (K-subsampled")
    assert "K-subsampled (8·K ≤ N on cuda" in got.reason
    k_large = ContrastiveLoss(engine="fused", num_negatives=n // 2).engine_for(n, n, device="cuda")
    assert k_large.engine == "tiled" and "K-subsampled negatives" in k_large.reason
    identity = ContrastiveLoss(engine="fused", num_negatives=n - 2)
    assert identity.engine_for(n, n, device="cuda", num_valid=n - 2).engine == "fused"


@pytest.mark.usefixtures("triton_present")
def test_the_interpreter_counts_as_a_device(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert ContrastiveLoss(engine="fused").engine_for(64, 64, device="cpu").engine == "fused"


@pytest.mark.usefixtures("triton_present")
def test_what_no_tiled_engine_computes_is_refused_as_by_the_tiled_engine() -> None:
    with pytest.raises(ValueError, match=r"tiled engine .* row-wise .*JensenShannon"):
        ContrastiveLoss(engine="fused", objective=objectives.JensenShannon()).engine_for(8, 8, device="cuda")


HIDDEN = textwrap.dedent("""
    import sys
    sys.modules["triton"] = None  # import triton -> ImportError; find_spec -> None
    import torch
    from hardneg import ContrastiveLoss, negatives
    try:
        ContrastiveLoss(engine="fused")
    except ModuleNotFoundError as err:
        print("error:", err)
    z1, z2 = torch.randn(6, 4, dtype=torch.float64), torch.randn(6, 4, dtype=torch.float64)
    kw = dict(negatives=negatives.Hard(beta=1.0), tau_plus=0.1)
    full = ContrastiveLoss(engine="materialised", **kw)(z1, z2)
    tiled = ContrastiveLoss(engine="tiled", **kw)(z1, z2)
    auto = ContrastiveLoss(**kw)
    assert torch.allclose(full, tiled, rtol=1e-10), (full, tiled)
    print(auto.engine_for(12, 12), auto.engine_for(4096, 4096, device="cuda"))
    import hardneg.engines.tiled.fused
    try:
        import hardneg.engines.tiled.triton_lse
    except ImportError:
        print("kernel module: ImportError")
""")


@pytest.mark.slow  # a fresh interpreter importing torch: ~4 s
def test_without_triton_fused_is_one_clear_error_and_nothing_else_changes() -> None:
    done = subprocess.run([sys.executable, "-c", HIDDEN], capture_output=True, text=True, timeout=300,
                          check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert lines[0] == (
        'error: engine=\'fused\' needs the "gpu" extra: pip install "hardneg[gpu]" (not installed: triton)'
    )
    assert lines[1] == (
        "EngineChoice(engine='materialised', tile=None, reason='below the speed crossover (A·N = 1048576 on "
        "cpu)') EngineChoice(engine='materialised', tile=None, reason='below the speed crossover (A·N = "
        "4611686018427387904 on cuda)')"
    )
    assert lines[2:] == ["kernel module: ImportError"]


def test_an_old_triton_is_refused_with_the_version_needed(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.metadata

    from hardneg.engines.tiled import fused

    monkeypatch.setattr(fused, "require_extra", lambda *a, **k: None)
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "3.0.0")
    with pytest.raises(ModuleNotFoundError, match=r"engine='fused' needs triton>=3\.7 .*got triton 3\.0\.0"):
        fused.require_triton()
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "3.7.1")
    fused.require_triton()
