"""``ContrastiveLoss``'s shorthand keywords are exact shorthands of one composition each (issue 46,
item 4): ``tau_plus=τ`` is ``objective=Debiased(τ)``, ``num_negatives=K`` is
``negatives=Subsample(num_negatives=K, base=...)``, ``collision_free=True`` is
``negatives=CollisionFree(base=...)`` (inside the Subsample) — the same values and gradients, in
float64, on the materialised and the tiled engine."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from hardneg import ContrastiveLoss, negatives
from hardneg.negatives import CollisionFree, Subsample
from hardneg.objectives import Debiased


def _value_and_grads(loss: ContrastiveLoss, z1: torch.Tensor, z2: torch.Tensor,
                     labels: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
    a, b = z1.clone().requires_grad_(True), z2.clone().requires_grad_(True)
    value = loss(a, b, labels=labels, generator=torch.Generator().manual_seed(3))
    return value.detach(), list(torch.autograd.grad(value, [a, b]))


CASES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "tau_plus": ({"tau_plus": 0.1}, {"objective": Debiased(tau_plus=0.1)}),
    "tau_plus_hard": ({"tau_plus": 0.1, "negatives": negatives.Hard(beta=1.0)},
                      {"objective": Debiased(tau_plus=0.1), "negatives": negatives.Hard(beta=1.0)}),
    "num_negatives": ({"num_negatives": 5},
                      {"negatives": Subsample(num_negatives=5, base=negatives.Uniform())}),
    "collision_free": ({"collision_free": True}, {"negatives": CollisionFree(base=negatives.Uniform())}),
    "all_three": (
        {"tau_plus": 0.1, "num_negatives": 5, "collision_free": True, "negatives": negatives.Hard(beta=0.5)},
        {"objective": Debiased(tau_plus=0.1),
         "negatives": Subsample(num_negatives=5, base=CollisionFree(base=negatives.Hard(beta=0.5)))},
    ),
}


@pytest.mark.parametrize("engine", ["materialised", "tiled"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_shorthand_equals_its_composition(case: str, engine: str) -> None:
    g = torch.Generator().manual_seed(0)
    z1, z2 = torch.randn(12, 6, generator=g, dtype=torch.float64), torch.randn(12, 6, generator=g,
                                                                               dtype=torch.float64)
    labels = torch.arange(12) % 4
    short, composed = CASES[case]
    kw = {"temperature": 0.5, "engine": engine, "tile_size": 5}
    a = _value_and_grads(ContrastiveLoss(**kw, **short), z1, z2, labels)
    b = _value_and_grads(ContrastiveLoss(**kw, **composed), z1, z2, labels)
    torch.testing.assert_close(a[0], b[0], rtol=0, atol=0)
    for x, y in zip(a[1], b[1], strict=True):
        torch.testing.assert_close(x, y, rtol=0, atol=0)


def test_tau_plus_with_an_objective_is_refused_naming_both() -> None:
    with pytest.raises(ValueError, match=r"give tau_plus to the objective, not both: got tau_plus=0\.1"):
        ContrastiveLoss(tau_plus=0.1, objective=Debiased(tau_plus=0.1))
