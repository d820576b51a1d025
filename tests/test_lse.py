"""The fused masked log-sum-exp against plain autograd, including its backward."""

from __future__ import annotations

import torch

from hardneg._numerics.lse import masked_logsumexp, masked_tilted_lse


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


def _pair_direct(x: torch.Tensor, mask: torch.Tensor, a: float, b: float) -> torch.Tensor:
    xm = x.masked_fill(~mask, float("-inf"))
    return torch.logsumexp(a * xm, 1) - torch.logsumexp(b * xm, 1)


def test_tilted_pair_equals_two_log_sum_exps_and_passes_gradcheck() -> None:
    """b > a − b: the cancellation-free form (hardneg._numerics.lse.tilted_pair) against the difference of
    two float64 log-sum-exps, its gradient against autograd's, at every size and with an empty row."""
    from hardneg._numerics.lse import cancels

    g = torch.Generator().manual_seed(1)
    x = torch.randn(6, 9, generator=g, dtype=torch.float64, requires_grad=True)
    mask = torch.rand(6, 9, generator=g) > 0.3
    mask[:, 0] = True
    for a, b in ((2.5, 1.5), (11.0, 10.0), (1001.0, 1000.0)):
        assert cancels(a, b)
        for nonempty in (True, False):
            got = masked_tilted_lse(x, mask, a, b, nonempty=nonempty)
            torch.testing.assert_close(got, _pair_direct(x, mask, a, b), rtol=1e-12, atol=1e-12)
            g_got = torch.autograd.grad(got.sum(), x)[0]
            g_want = torch.autograd.grad(_pair_direct(x, mask, a, b).sum(), x)[0]
            torch.testing.assert_close(g_got, g_want, rtol=1e-9, atol=1e-12)
    assert torch.autograd.gradcheck(lambda t: masked_tilted_lse(t, mask, 2.5, 1.5), (x,))
    empty = mask.clone()
    empty[2] = False
    out = masked_tilted_lse(x, empty, 11.0, 10.0)
    out[[0, 1, 3, 4, 5]].sum().backward()
    assert torch.isfinite(x.grad).all() and torch.all(x.grad[2] == 0)


def test_tilted_pair_gradient_is_accurate_in_float32_where_the_softmax_difference_is_not() -> None:
    """β = 1000: (1+β) softmax((1+β)s) − β softmax(βs) in float32, against float64 on the same
    float32 logits; the cancellation-free form within 1e-5, the two rounded softmaxes (the
    general path before issue 44) off by more than 1e-4."""
    g = torch.Generator().manual_seed(2)
    v = torch.nn.functional.normalize(torch.randn(32, 16, generator=g), dim=1)
    x = (v @ v.T / 0.5).fill_diagonal_(float("-inf"))
    mask = torch.isfinite(x)
    a, b = 1001.0, 1000.0
    x64 = x.double().requires_grad_(True)
    want = torch.autograd.grad(_pair_direct(x64, mask, a, b).sum(), x64)[0]

    def error(fn) -> float:  # type: ignore[no-untyped-def]
        x32 = x.clone().requires_grad_(True)
        got = torch.autograd.grad(fn(x32).sum(), x32)[0].double().masked_fill(~mask, 0.0)
        return float((got - want.masked_fill(~mask, 0.0)).norm() / want.norm())

    assert error(lambda t: masked_tilted_lse(t, mask, a, b, nonempty=True)) <= 1e-5
    assert error(lambda t: _pair_direct(t, mask, a, b)) > 1e-4
