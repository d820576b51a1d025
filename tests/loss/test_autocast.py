"""Mixed precision does not change the loss: under ``torch.autocast`` (bf16 and fp16 on the CPU) the
similarity and every exponent run in float32, in the materialised, the tiled and the gathered engine."""

from __future__ import annotations

import pytest
import torch

from hardneg import ContrastiveLoss
from hardneg.negatives import Hard, Subsample, Uniform
from hardneg.objectives import Debiased, InfoNCE

ENGINES = {"materialised": {}, "tiled": {"memory_budget": 0, "tile_size": 16}}
LOSSES = {
    "simclr": lambda: (Uniform(), InfoNCE()),
    "hcl": lambda: (Hard(beta=1.0), Debiased(tau_plus=0.1)),
}


def _loss(engine: str, kind: str) -> ContrastiveLoss:
    negatives, objective = LOSSES[kind]()
    return ContrastiveLoss(negatives=negatives, objective=objective, temperature=0.1, **ENGINES[engine])


def _views(dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return (torch.randn(48, 24, generator=g).to(dtype).requires_grad_(),
            torch.randn(48, 24, generator=g).to(dtype).requires_grad_())


@pytest.mark.parametrize("half", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("kind", list(LOSSES))
@pytest.mark.parametrize("engine", list(ENGINES))
def test_autocast_gives_the_float32_loss_and_gradient(engine: str, kind: str, half: torch.dtype) -> None:
    loss = _loss(engine, kind)
    z1, z2 = _views()
    ref = loss(z1, z2)
    ref_grad = torch.autograd.grad(ref, (z1, z2))
    with torch.autocast("cpu", dtype=half):
        out = loss(z1, z2)
    grad = torch.autograd.grad(out, (z1, z2))
    assert out.dtype == torch.float32
    torch.testing.assert_close(out, ref, rtol=0, atol=1e-6)
    for a, b in zip(grad, ref_grad):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-6)


@pytest.mark.parametrize("half", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("engine", ["gathered", "materialised", "tiled"])
def test_k_subsampled_negatives_under_autocast_in_every_engine(engine: str, half: torch.dtype) -> None:
    """K = 8 of 94 candidates (the gathered engine's case) with hard weights and debiasing: the same
    draw (same generator) gives the float32 loss and gradient under autocast, in every engine."""
    kw = {"tiled": {"engine": "tiled", "tile_size": 16}}.get(engine, {"engine": engine})
    loss = ContrastiveLoss(negatives=Subsample(num_negatives=8, base=Hard(beta=1.0)),
                           objective=Debiased(tau_plus=0.1), temperature=0.1, **kw)
    assert loss.engine_for(96, 96, num_valid=94).engine == engine
    z1, z2 = _views()
    ref = loss(z1, z2, generator=torch.Generator().manual_seed(3))
    ref_grad = torch.autograd.grad(ref, (z1, z2))
    with torch.autocast("cpu", dtype=half):
        out = loss(z1, z2, generator=torch.Generator().manual_seed(3))
    grad = torch.autograd.grad(out, (z1, z2))
    assert out.dtype == torch.float32
    torch.testing.assert_close(out, ref, rtol=0, atol=1e-6)
    for a, b in zip(grad, ref_grad):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-6)


@pytest.mark.parametrize("engine", list(ENGINES))
def test_half_precision_embeddings_are_scored_in_float32_under_autocast(engine: str) -> None:
    """What an autocast encoder hands the loss: bf16 embeddings. The loss equals the float32 loss of
    the same (rounded) values; the engines agree."""
    loss = _loss(engine, "hcl")
    z1, z2 = _views(torch.bfloat16)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = loss(z1, z2)
    ref = loss(z1.detach().float(), z2.detach().float())
    torch.testing.assert_close(out, ref, rtol=0, atol=1e-6)
    (g1,) = torch.autograd.grad(out, (z1,))
    assert g1.dtype == torch.bfloat16 and torch.isfinite(g1.float()).all()


def test_the_pair_layout_under_autocast() -> None:
    loss = _loss("materialised", "hcl")
    g = torch.Generator().manual_seed(1)
    a, p, c = (torch.randn(n, 16, generator=g) for n in (20, 20, 64))
    ref = loss.pair(a, p, c)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = loss.pair(a, p, c)
    torch.testing.assert_close(out, ref, rtol=0, atol=1e-6)


def test_without_the_float32_guard_autocast_would_change_the_loss() -> None:
    """The guard is needed: a bf16 similarity moves HCL at t = 0.1 by far more than 1e-6."""
    z1, z2 = (v.detach() for v in _views())
    z = torch.nn.functional.normalize(torch.cat([z1, z2]), dim=1)
    exact = z @ z.T
    with torch.autocast("cpu", dtype=torch.bfloat16):
        rounded = z @ z.T
    assert (rounded.float() - exact).abs().max() / 0.1 > 1e-3


def test_the_low_level_entry_agrees_with_forward_under_autocast() -> None:
    """``compute(scores(z1, z2))`` is documented as ``forward(z1, z2, details=True)``: under autocast
    too, and both equal the float32 loss."""
    loss = _loss("materialised", "hcl")
    z1, z2 = (v.detach() for v in _views())
    ref = loss(z1, z2)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        low = loss.compute(loss.scores(z1, z2)).loss
        high = loss(z1, z2)
    torch.testing.assert_close(low, ref, rtol=0, atol=1e-6)
    torch.testing.assert_close(high, ref, rtol=0, atol=1e-6)
