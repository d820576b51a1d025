"""The vectorised float64 references of ``tests/reference/hcl.py`` equal their per-anchor loops.

The tests of the loss compare against the vectorised forms (fast at B = 64); this checks them,
values and gradients, against the plain loops they were first written as, on small batches.
"""

from __future__ import annotations

import pytest
import torch

from tests.reference.hcl import (
    hcl_reference_pairs,
    hcl_reference_pairs_loop,
    hcl_reference_simclr,
    hcl_reference_simclr_loop,
)


def _close(x: torch.Tensor, y: torch.Tensor) -> None:
    """Equal up to float64 rounding (1e-16) amplified up to 1e5-fold: at β = 1000 each negative is
    raised to the 1000th power."""
    torch.testing.assert_close(x, y, rtol=1e-11, atol=1e-11 * float(y.abs().max()))


def _values_and_grads(fn, inputs: tuple[torch.Tensor, ...]) -> list[torch.Tensor]:  # type: ignore[no-untyped-def]
    leaves = [x.detach().clone().requires_grad_(True) for x in inputs]
    out = fn(*leaves)
    w = torch.linspace(0.5, 1.5, out.numel(), dtype=torch.float64)  # a cotangent that is not uniform
    return [out.detach(), *torch.autograd.grad((out * w).sum(), leaves)]


@pytest.mark.parametrize("b", [2, 3, 7])
@pytest.mark.parametrize("beta", [0.0, 1.5, 1000.0])
@pytest.mark.parametrize("tau_plus", [0.0, 0.2])
@pytest.mark.parametrize("normalize, clamp", [(True, True), (False, False)])
def test_simclr_reference_equals_its_loop(
    b: int, beta: float, tau_plus: float, normalize: bool, clamp: bool
) -> None:
    g = torch.Generator().manual_seed(b)
    scale = 1.0 if normalize else 0.3
    views = tuple(scale * torch.randn(b, 5, generator=g, dtype=torch.float64) for _ in range(2))
    kw = dict(temperature=0.5, tau_plus=tau_plus, beta=beta, normalize=normalize, clamp=clamp)
    fast = _values_and_grads(lambda a, c: hcl_reference_simclr(a, c, **kw), views)  # type: ignore[arg-type]
    slow = _values_and_grads(lambda a, c: hcl_reference_simclr_loop(a, c, **kw), views)  # type: ignore[arg-type]
    for x, y in zip(fast, slow, strict=True):
        _close(x, y)


@pytest.mark.parametrize("a, n", [(1, 1), (3, 5), (6, 17)])
@pytest.mark.parametrize("beta", [0.0, 2.0])
def test_pairs_reference_equals_its_loop(a: int, n: int, beta: float) -> None:
    g = torch.Generator().manual_seed(a + n)
    inputs = tuple(torch.randn(k, 4, generator=g, dtype=torch.float64) for k in (a, a, n))
    kw = dict(temperature=0.3, tau_plus=0.1, beta=beta)
    fast = _values_and_grads(lambda x, p, c: hcl_reference_pairs(x, p, c, **kw), inputs)  # type: ignore[arg-type]
    slow = _values_and_grads(lambda x, p, c: hcl_reference_pairs_loop(x, p, c, **kw), inputs)  # type: ignore[arg-type]
    for x, y in zip(fast, slow, strict=True):
        _close(x, y)
