"""``torch.compile(fullgraph=True)`` of the materialised engine: no graph break (issue 25, item 5).

``backend="eager"`` / ``"aot_eager"`` trace with Dynamo (and AOTAutograd) without Inductor, so no C++
compiler is needed; a graph break is a Dynamo matter, found by either. With ``validate=True`` the
checks compile into one ``torch._assert_async``; ``validate=False`` has none.
"""

from __future__ import annotations

import pytest
import torch

from hardneg import ContrastiveLoss, negatives

_TORCH = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2])
pytestmark = [
    pytest.mark.slow,
    # Older Dynamo breaks the graph on plain Python (attribute arithmetic, repr of a module); the
    # core's values and gradients are tested on the oldest supported torch, fullgraph on CI's.
    pytest.mark.skipif(_TORCH < (2, 13), reason="fullgraph compilation is tested on torch >= 2.13"),
]

CASES: dict[str, dict[str, object]] = {
    "uniform": {},
    "hard": {"negatives": negatives.Hard(beta=1.0)},
    "debiased": {"tau_plus": 0.1},
}


def _views() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return torch.randn(16, 8, generator=g), torch.randn(16, 8, generator=g)


@pytest.mark.parametrize("validate", [True, False])
@pytest.mark.parametrize("case", sorted(CASES))
def test_materialised_engine_has_no_graph_break(case: str, validate: bool) -> None:
    loss_fn = ContrastiveLoss(engine="materialised", validate=validate, **CASES[case])  # type: ignore[arg-type]

    def fn(z1: torch.Tensor, z2: torch.Tensor) -> torch.Tensor:
        return loss_fn(z1, z2)

    torch._dynamo.reset()
    explained = torch._dynamo.explain(fn)(*_views())
    assert explained.graph_break_count == 0, [str(r.reason)[:200] for r in explained.break_reasons]
    assert explained.graph_count == 1


@pytest.mark.parametrize("case", sorted(CASES))
def test_fullgraph_compiled_loss_and_gradient_equal_eager(case: str) -> None:
    loss_fn = ContrastiveLoss(engine="materialised", **CASES[case])  # type: ignore[arg-type]
    torch._dynamo.reset()
    compiled = torch.compile(lambda a, b: loss_fn(a, b), backend="aot_eager", fullgraph=True)
    z1, z2 = (z.double().requires_grad_(True) for z in _views())
    got = compiled(z1, z2)
    (g1,) = torch.autograd.grad(got, z1)
    want = loss_fn(z1, z2)
    (w1,) = torch.autograd.grad(want, z1)
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(g1, w1, rtol=1e-12, atol=1e-12)


def test_compiled_validation_still_refuses_a_non_finite_input() -> None:
    loss_fn = ContrastiveLoss(engine="materialised")
    torch._dynamo.reset()
    compiled = torch.compile(lambda a, b: loss_fn(a, b), backend="eager", fullgraph=True)
    z1, z2 = _views()
    assert torch.isfinite(compiled(z1, z2))
    z2[0, 0] = float("nan")
    with pytest.raises(RuntimeError, match="non-finite input"):  # torch._assert_async on a CPU
        compiled(z1, z2)
