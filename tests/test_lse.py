"""The fused masked log-sum-exp against plain autograd, including its backward."""

from __future__ import annotations

import torch

from hardneg._lse import masked_logsumexp, masked_tilted_lse


def test_matches_autograd_logsumexp_and_gradcheck() -> None:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(5, 7, generator=g, dtype=torch.float64, requires_grad=True)
    mask = torch.rand(5, 7, generator=g) > 0.3
    mask[:, 0] = True
    for a, b in ((1.0, 0.0), (2.5, 1.5), (0.3, 0.0)):
        got = masked_tilted_lse(x, mask, a, b)
        xm = x.masked_fill(~mask, float("-inf"))
        want = torch.logsumexp(a * xm, 1) - (torch.logsumexp(b * xm, 1) if b else 0.0)
        torch.testing.assert_close(got, want)
        assert torch.autograd.gradcheck(lambda t, a=a, b=b: masked_tilted_lse(t, mask, a, b), (x,))


def test_empty_row_is_minus_inf_without_nan_elsewhere() -> None:
    x = torch.randn(3, 4, requires_grad=True)
    mask = torch.ones(3, 4, dtype=torch.bool)
    mask[1] = False
    out = masked_logsumexp(x, mask)
    assert out[1] == float("-inf") and torch.isfinite(out[[0, 2]]).all()
    out[[0, 2]].sum().backward()
    assert torch.isfinite(x.grad).all() and torch.all(x.grad[1] == 0)


def test_extreme_logits_stay_finite() -> None:
    x = torch.tensor([[1e30, -1e30, 0.0], [88.0, 89.0, 90.0]], requires_grad=True)
    out = masked_tilted_lse(x, torch.ones(2, 3, dtype=torch.bool), 11.0, 10.0)
    assert torch.isfinite(out).all()
    out.sum().backward()
    assert torch.isfinite(x.grad).all()


def test_underflowing_tilt_is_log_n() -> None:
    """b = 1e-60 is 0 in float32, so lse(b·x) = log N_i: compared with a float64 log-sum-exp."""
    x = torch.randn(3, 5)
    mask = torch.ones(3, 5, dtype=torch.bool)
    mask[0, :2] = False
    got = masked_tilted_lse(x, mask, 1.0, 1e-60)
    x64 = x.double().masked_fill(~mask, float("-inf"))
    want = torch.logsumexp(x64, dim=1) - mask.sum(1).double().log()
    torch.testing.assert_close(got.double(), want, rtol=1e-6, atol=1e-6)
