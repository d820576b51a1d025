"""The engine chosen for a batch: by memory budget, by the measured speed crossover, or forced
(issue 25, item 1), and the same values whichever engine computes the loss."""

from __future__ import annotations

import pytest
import torch

from hardneg import ContrastiveLoss, negatives, objectives
from hardneg._numerics.thresholds import THRESHOLDS
from hardneg.engines.choice import EngineChoice
from hardneg.engines.materialised import materialised_bytes
from hardneg.engines.tiled.engine import speed_tile

SPEED_CROSSOVER = THRESHOLDS.speed_crossover
GATHER_CROSSOVER = THRESHOLDS.gather_crossover

CPU_B = int(SPEED_CROSSOVER["cpu"] ** 0.5) // 2  # SimCLR's B at the CPU crossover (A = N = 2B)


def test_auto_below_and_above_the_speed_crossover() -> None:
    loss_fn = ContrastiveLoss()
    below = loss_fn.engine_for(2 * CPU_B - 2, 2 * CPU_B - 2)
    assert below.engine == "materialised" and below.tile is None
    assert below.reason.startswith("below the speed crossover")
    above = loss_fn.engine_for(2 * CPU_B, 2 * CPU_B)
    assert above == EngineChoice("tiled", speed_tile("cpu", 2 * CPU_B, 2 * CPU_B), above.reason)
    assert above.reason == f"speed crossover (tiled faster above A·N = {SPEED_CROSSOVER['cpu']} on cpu)"
    hard = ContrastiveLoss(tau_plus=0.1, negatives=negatives.Hard(beta=1.0))
    assert hard.engine_for(8192, 8192).engine == "tiled"
    assert hard.engine_for(8192, 8192).tile == 1024  # large batches: tiles of 1024


def test_cuda_tiles_for_memory_only() -> None:
    """Measured on an H200: the materialised engine is the faster one wherever it fits."""
    loss_fn = ContrastiveLoss(memory_budget=1 << 40)
    for n in (2 * CPU_B, 32768, 131072):  # the CPU tiles all of these for speed
        assert loss_fn.engine_for(n, n, device="cuda").engine == "materialised"
        assert loss_fn.engine_for(n, n, device="cpu").engine == "tiled"
    over = loss_fn.engine_for(1 << 20, 1 << 20, device="cuda")
    assert over.engine == "tiled" and over.reason == "memory budget"
    assert SPEED_CROSSOVER["cuda"] > (1 << 40)


def test_memory_budget_still_caps() -> None:
    loss_fn = ContrastiveLoss(memory_budget=materialised_bytes(64, 64, torch.float32))
    assert loss_fn.engine_for(64, 64).engine == "materialised"
    choice = loss_fn.engine_for(64, 65)
    assert choice.engine == "tiled" and choice.reason == "memory budget"
    assert ContrastiveLoss(memory_budget=0, tile_size=7).engine_for(4, 4) == EngineChoice(
        "tiled", 7, "memory budget"
    )


def test_distributions_not_measured_faster_tile_only_by_memory() -> None:
    n = 4 * CPU_B
    jsd = ContrastiveLoss(objective=objectives.JensenShannon())
    assert jsd.engine_for(n, n) == EngineChoice("materialised", None, "not supported by the tiled engine")
    ot = ContrastiveLoss(negatives=negatives.OptimalTransport(epsilon=0.5))
    assert ot.engine_for(n, n).engine == "materialised"  # unsupported, or tiled by memory only
    sub = ContrastiveLoss(num_negatives=n // 4)  # N/K = 4: not gathered, tiled by memory only
    assert sub.engine_for(n, n).reason.startswith("below the speed crossover")
    assert ContrastiveLoss(negatives=negatives.Hard(target_ess=0.5)).engine_for(n, n).engine == "materialised"


def test_forced_engines() -> None:
    n = 4 * CPU_B
    assert ContrastiveLoss(engine="materialised").engine_for(n, n) == EngineChoice(
        "materialised", None, "forced"
    )
    assert ContrastiveLoss(engine="tiled").engine_for(8, 8) == EngineChoice("tiled", 512, "forced")
    with pytest.raises(ValueError, match=r"engine='materialised' needs .* above memory_budget=1000"):
        ContrastiveLoss(engine="materialised", memory_budget=1000).engine_for(n, n)
    with pytest.raises(ValueError, match=r"tiled engine .* row-wise .*JensenShannon"):
        ContrastiveLoss(engine="tiled", objective=objectives.JensenShannon()).engine_for(8, 8)
    with pytest.raises(
        ValueError,
        match=r"engine must be one of \('auto', 'materialised', 'tiled', 'gathered', 'fused'\), got 'fast'",
    ):
        ContrastiveLoss(engine="fast")


def test_the_chosen_engine_computes_the_loss_and_says_so() -> None:
    g = torch.Generator().manual_seed(0)
    b = CPU_B
    z1, z2 = (
        torch.randn(b, 4, generator=g, dtype=torch.float64),
        torch.randn(b, 4, generator=g, dtype=torch.float64),
    )
    kw = {"tau_plus": 0.1, "negatives": negatives.Hard(beta=1.0)}
    auto = ContrastiveLoss(**kw)(z1, z2, details=True)  # type: ignore[arg-type]
    mat = ContrastiveLoss(engine="materialised", **kw)(z1, z2, details=True)  # type: ignore[arg-type]
    assert auto.diagnostics.get("tiled") == 1.0 and "tiled" not in mat.diagnostics
    torch.testing.assert_close(auto.per_anchor, mat.per_anchor, rtol=1e-10, atol=1e-12)
    small = ContrastiveLoss(**kw)(z1[:8], z2[:8], details=True)  # type: ignore[arg-type]
    assert "tiled" not in small.diagnostics


def test_k_subsampled_negatives_take_the_gathered_engine_from_the_crossover() -> None:
    """``GATHER_CROSSOVER · K ≤ N``: gathered (its (A, K) matrices within the budget); else the
    engine of before; K ≥ the valid count is the identity and chosen for as its base."""
    c = GATHER_CROSSOVER["cpu"]
    n = 4 * CPU_B
    loss_fn = ContrastiveLoss(num_negatives=64, negatives=negatives.Hard(beta=1.0))
    got = loss_fn.engine_for(n, 64 * c)
    assert got == EngineChoice(
        "gathered", None, f"K-subsampled ({c}·K ≤ N on cpu: only the A·K drawn logits)"
    )
    assert loss_fn.engine_for(n, 64 * c - 1).engine != "gathered"
    assert ContrastiveLoss(num_negatives=8, collision_free=True).engine_for(n, n).engine == "gathered"
    # memory_budget bounds the gathered (A, K) matrices too: 0 always tiles
    assert ContrastiveLoss(num_negatives=8, memory_budget=0).engine_for(n, n).engine == "tiled"
    # not gatherable: optimal transport (column marginals), Subsample inside CollisionFree
    ot = ContrastiveLoss(num_negatives=8, negatives=negatives.OptimalTransport(epsilon=0.5))
    assert ot.engine_for(n, n).engine != "gathered"
    inner = ContrastiveLoss(negatives=negatives.CollisionFree(base=negatives.Subsample(num_negatives=8)))
    assert inner.engine_for(n, n).engine != "gathered"
    with pytest.raises(ValueError, match=r"gathered engine needs Subsample\(num_negatives=K\) outermost"):
        ContrastiveLoss(engine="gathered").engine_for(8, 8)
    assert ContrastiveLoss(engine="gathered", num_negatives=4).engine_for(8, 8) == EngineChoice(
        "gathered", None, "forced"
    )
    # K = every valid candidate (2B − 2 in SimCLR's layout): the identity, chosen for as SimCLR
    b = CPU_B
    full = ContrastiveLoss(num_negatives=2 * b - 2).engine_for(2 * b, 2 * b, num_valid=2 * b - 2)
    assert full == ContrastiveLoss().engine_for(2 * b, 2 * b)
    assert full.engine == "tiled"
