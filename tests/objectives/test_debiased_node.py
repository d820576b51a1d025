"""The debiased term as one autograd node (issue 37): the same values as the composite operators,
bit for bit, and its closed-form backward against autograd through them and finite differences."""

from __future__ import annotations

import math

import pytest
import torch

from hardneg.objectives.debiased import _DebiasedLoss, debiased_log_negative


def _inputs(dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    lws = (torch.randn(64, generator=g, dtype=dtype) * 3 + 2).requires_grad_(True)
    pos = (torch.randn(64, generator=g, dtype=dtype) * 3).requires_grad_(True)
    log_n = torch.full((64,), math.log(30.0), dtype=dtype)
    return lws, pos, log_n


def _composite(
    lws: torch.Tensor, pos: torch.Tensor, log_n: torch.Tensor, tau: float, t: float
) -> torch.Tensor:
    log_neg, _ = debiased_log_negative(
        lws, pos, log_n.exp(), tau_plus=tau, temperature=t, log_num_valid=log_n
    )
    return torch.nn.functional.softplus(log_neg - pos)


@pytest.mark.parametrize(("tau", "t"), [(0.1, 0.5), (0.3, 0.2), (0.01, 1.0)])
def test_values_equal_the_composite_bit_for_bit(tau: float, t: float) -> None:
    lws, pos, log_n = _inputs(torch.float32)
    with torch.no_grad():
        got = _DebiasedLoss.apply(lws, pos, log_n, tau, t)
        want = _composite(lws, pos, log_n, tau, t)
    assert torch.equal(got, want)


@pytest.mark.parametrize(("tau", "t"), [(0.1, 0.5), (0.3, 0.2), (0.01, 1.0)])
def test_gradient_equals_autograd_through_the_composite_in_float64(tau: float, t: float) -> None:
    lws, pos, log_n = _inputs(torch.float64)
    w = torch.linspace(0.5, 1.5, 64, dtype=torch.float64)  # a non-uniform upstream gradient
    got = torch.autograd.grad((_DebiasedLoss.apply(lws, pos, log_n, tau, t) * w).sum(), (lws, pos))
    want = torch.autograd.grad((_composite(lws, pos, log_n, tau, t) * w).sum(), (lws, pos))
    _, floor_binds = debiased_log_negative(lws, pos, log_n.exp(), tau_plus=tau, temperature=t)
    assert 0 < int(floor_binds.sum()) < 64  # both branches of the backward are compared
    for a, b in zip(got, want, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)
    assert torch.autograd.gradcheck(lambda a, b: _DebiasedLoss.apply(a, b, log_n, tau, t), (lws, pos))
