"""A loss first called under ``torch.inference_mode()`` (an evaluation, Lightning's validation loop)
still trains afterwards: no cached constant of a call is an inference tensor."""

from __future__ import annotations

import pytest
import torch

from hardneg import ContrastiveLoss, negatives


@pytest.mark.parametrize("engine", ["materialised", "tiled"])
@pytest.mark.parametrize("b", [5, 300])
@pytest.mark.parametrize("kind", ["simclr", "hard+debiased", "ot"])
def test_training_after_an_inference_mode_call(kind: str, b: int, engine: str) -> None:
    kw = {"simclr": {}, "hard+debiased": {"tau_plus": 0.1, "negatives": negatives.Hard(beta=1.0)},
          "ot": {"negatives": negatives.OptimalTransport(epsilon=1.0)}}[kind]
    loss = ContrastiveLoss(temperature=0.5, engine=engine, **kw)
    g = torch.Generator().manual_seed(b)
    with torch.inference_mode():
        evaluated = loss(torch.randn(b, 8, generator=g), torch.randn(b, 8, generator=g))
    assert evaluated.is_inference()
    z1 = torch.randn(b, 8, generator=g, requires_grad=True)
    z2 = torch.randn(b, 8, generator=g, requires_grad=True)
    loss(z1, z2).backward()
    assert z1.grad is not None and bool(torch.isfinite(z1.grad).all())
