"""The small-batch routes of the objectives (issue 37): hard + debiased as one autograd node from
the logits, and SimCLR's NT-Xent as a cross-entropy. Values against the composite operators
(bit for bit where the route promises it) and independent float64 re-derivations; gradients
against autograd through the composite and finite differences."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from hardneg import ContrastiveLoss, negatives
from hardneg.engines.fused_node import tilted_debiased_loss
from hardneg.objectives.debiased import _DebiasedLoss, debiased_log_negative
from hardneg.objectives.nce import uniform_cross_entropy
from hardneg.scores import Scores, simclr_scores


def _scores(dtype: torch.dtype, b: int = 6, d: int = 5, spread: float = 1.0) -> Scores:
    g = torch.Generator().manual_seed(b)
    z1 = torch.randn(b, d, generator=g, dtype=dtype)
    z2 = z1 + spread * torch.randn(b, d, generator=g, dtype=dtype)
    s = simclr_scores(z1, z2, temperature=0.2)
    return dataclasses.replace(
        s, logits=s.logits.detach().requires_grad_(True), positive=s.positive.detach().requires_grad_(True)
    )


def _composite(s: Scores, beta: float, tau: float) -> torch.Tensor:
    """The operators of the general route: two ATen log-sum-exps, then the debiased term."""
    xm = s.masked_logits()
    log_n = s.log_num_valid()
    if beta == 0.0:
        lws = torch.logsumexp(xm, dim=1)
    else:
        a, b = torch.tensor(1.0 + beta, dtype=xm.dtype), torch.tensor(beta, dtype=xm.dtype)
        lws = torch.logsumexp(a * xm, dim=1) - torch.logsumexp(b * xm, dim=1) + log_n
    log_neg, _ = debiased_log_negative(
        lws, s.positive, s.num_valid(), tau_plus=tau, temperature=s.temperature, log_num_valid=log_n
    )
    return torch.nn.functional.softplus(log_neg - s.positive)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize(("beta", "tau"), [(1.0, 0.1), (0.5, 0.3), (0.0, 0.1)])
def test_tilted_node_values_equal_the_composite_bit_for_bit(
    dtype: torch.dtype, beta: float, tau: float
) -> None:
    s = _scores(dtype)
    with torch.no_grad():
        got = tilted_debiased_loss(s, beta=beta, tau_plus=tau)
        want = _composite(s, beta, tau)
        log_n = s.log_num_valid()
        xm = s.masked_logits()
        if beta:
            a, b = torch.tensor(1.0 + beta, dtype=dtype), torch.tensor(beta, dtype=dtype)
            lws = torch.logsumexp(a * xm, 1) - torch.logsumexp(b * xm, 1) + log_n
        else:
            lws = torch.logsumexp(xm, 1)
        node = _DebiasedLoss.apply(lws, s.positive, log_n, tau, s.temperature)
    assert torch.equal(got, node)
    torch.testing.assert_close(got, want, rtol=1e-12 if dtype == torch.float64 else 1e-6, atol=0)



@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("beta", [2.0, 1000.0])
def test_tilted_node_values_at_beta_above_one_equal_the_general_route_bit_for_bit(
    dtype: torch.dtype, beta: float
) -> None:
    """β > 1: the node and the general route (Hard's closed form, hardneg._numerics.lse's tilted pair, then
    the debiased node) compute the same cancellation-free operators: equal bit for bit."""
    s = _scores(dtype)
    with torch.no_grad():
        got = tilted_debiased_loss(s, beta=beta, tau_plus=0.1)
        weighted = negatives.Hard(beta=beta).weigh(s)
        lws = weighted.log_weighted_sum
        want = _DebiasedLoss.apply(lws, s.positive, s.log_num_valid(), 0.1, s.temperature)
    assert torch.equal(got, want)

def _reference_float64(s: Scores, beta: float, tau: float) -> torch.Tensor:
    """Robinson et al. (ICLR 2021), eq. (4), re-derived with explicit weights in float64."""
    logits = s.logits.double()
    mask = s.mask
    n = mask.sum(1).double()
    w = torch.where(mask, torch.exp(beta * logits), 0.0)
    w = w / w.sum(1, keepdim=True) * n[:, None]
    weighted = (w * torch.where(mask, logits.exp(), 0.0)).sum(1)
    pos = s.positive.double().exp()
    neg = torch.clamp((weighted - n * tau * pos) / (1 - tau), min=n * math.exp(-1 / s.temperature))
    return -torch.log(pos / (pos + neg))


@pytest.mark.parametrize(("beta", "tau", "spread"), [(1.0, 0.1, 1.0), (2.0, 0.3, 0.05), (0.0, 0.2, 1.0)])
def test_tilted_node_equals_the_paper_and_its_gradient_equals_autograd(
    beta: float, tau: float, spread: float
) -> None:
    s = _scores(torch.float64, spread=spread)
    got = tilted_debiased_loss(s, beta=beta, tau_plus=tau)
    torch.testing.assert_close(got, _reference_float64(s, beta, tau), rtol=1e-10, atol=1e-12)
    w = torch.linspace(0.5, 1.5, got.shape[0], dtype=torch.float64)  # a non-uniform upstream gradient
    g_got = torch.autograd.grad((got * w).sum(), (s.logits, s.positive))
    g_want = torch.autograd.grad((_composite(s, beta, tau) * w).sum(), (s.logits, s.positive))
    for a, b in zip(g_got, g_want, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-14)


def test_tilted_node_backward_covers_both_branches_and_passes_gradcheck() -> None:
    s = _scores(torch.float64, b=4, d=3, spread=0.05)  # near-duplicate views: the floor binds for some
    with torch.no_grad():
        xm = s.masked_logits()
        log_n = s.log_num_valid()
        a = torch.logsumexp(3.0 * xm, 1) - torch.logsumexp(2.0 * xm, 1) + log_n
        _, binds = debiased_log_negative(a, s.positive, s.num_valid(), tau_plus=0.3, temperature=0.2)
    assert 0 < int(binds.sum()) < binds.numel(), "both branches of the backward must be exercised"

    def f(logits: torch.Tensor, positive: torch.Tensor) -> torch.Tensor:
        return tilted_debiased_loss(
            dataclasses.replace(s, logits=logits, positive=positive), beta=2.0, tau_plus=0.3
        )

    assert torch.autograd.gradcheck(f, (s.logits, s.positive))


def test_tilted_node_refuses_scores_without_an_additive_mask() -> None:
    s = dataclasses.replace(_scores(torch.float64), fill=None)
    with pytest.raises(ValueError, match="fill"):
        tilted_debiased_loss(s, beta=1.0, tau_plus=0.1)
    with pytest.raises(ValueError, match="tau_plus"):
        tilted_debiased_loss(_scores(torch.float64), beta=1.0, tau_plus=0.0)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_uniform_cross_entropy_is_nt_xent(dtype: torch.dtype) -> None:
    s = _scores(dtype)
    got = uniform_cross_entropy(s)
    # independent float64 NT-Xent: −log(e^{s⁺} / (e^{s⁺} + Σ_{valid} e^{s_ij})), s⁺ the row dot
    logits, pos = s.logits.double(), s.positive.double()
    neg = torch.where(s.mask, logits.exp(), 0.0).sum(1)
    want = -torch.log(pos.exp() / (pos.exp() + neg))
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    torch.testing.assert_close(got.double(), want, rtol=tol, atol=tol)
    # its gradient: softmax over the valid negatives and the positive, minus the positive's one-hot
    (grad,) = torch.autograd.grad(got.sum(), s.logits)
    keep = s.mask.clone()
    keep[torch.arange(keep.shape[0]), s.positive_index] = True
    p = torch.softmax(logits.masked_fill(~keep, float("-inf")), dim=1)
    p[torch.arange(keep.shape[0]), s.positive_index] -= 1.0
    torch.testing.assert_close(grad.double(), p, rtol=tol, atol=tol)


def test_contrastive_loss_takes_the_small_routes_and_not_with_detached_weights() -> None:
    """The routes change no value beyond rounding, and ``Hard(detach_weights=True)`` (whose gradient
    differs) keeps the general route: its gradient differs from the non-detached one."""
    g = torch.Generator().manual_seed(1)
    z1 = torch.randn(8, 4, generator=g, dtype=torch.float64, requires_grad=True)
    z2 = torch.randn(8, 4, generator=g, dtype=torch.float64, requires_grad=True)
    hcl = ContrastiveLoss(temperature=0.5, tau_plus=0.1, negatives=negatives.Hard(beta=1.0))
    detached = ContrastiveLoss(
        temperature=0.5, tau_plus=0.1, negatives=negatives.Hard(beta=1.0, detach_weights=True)
    )
    s = simclr_scores(z1, z2, temperature=0.5)
    want = _reference_float64(s, 1.0, 0.1).mean()
    torch.testing.assert_close(hcl(z1, z2), want, rtol=1e-12, atol=0)
    torch.testing.assert_close(detached(z1, z2), want, rtol=1e-12, atol=0)
    g_hcl = torch.autograd.grad(hcl(z1, z2), z1)[0]
    g_det = torch.autograd.grad(detached(z1, z2), z1)[0]
    assert not torch.allclose(g_hcl, g_det)


def test_a_new_mask_leaves_the_small_routes() -> None:
    """K-subsampled or collision-free negatives change the mask: the additive masks and the
    positive's column describe the old one and are dropped (the general route then runs)."""
    s = _scores(torch.float64)
    assert s.small_dense() and s.positive_fill is not None and s.positive_index is not None
    t = s.with_mask(s.mask.clone())
    assert t.fill is None and t.positive_fill is None and t.positive_index is None
    assert not t.small_dense()


def test_the_cached_simclr_constants_keep_no_logits_sized_tensor_above_the_small_route() -> None:
    """The additive masks pay only on the small route; cached at B = 4096 they held 2 × 256 MiB for
    as long as the process lived (peak of a materialised hard fwd+bwd: 1 607 MiB, 1 096 MiB without)."""
    import torch

    from hardneg._numerics.thresholds import THRESHOLDS
    from hardneg.scores.layouts import simclr_constants

    small = simclr_constants(64, torch.float32, torch.device("cpu"))
    assert small.fill is not None and small.partner_fill is not None and small.partner is not None
    b = 200  # (2B)² = 160 000 entries > DENSE_LSE_MAX
    assert (2 * b) ** 2 > THRESHOLDS.dense_lse_max
    large = simclr_constants(b, torch.float32, torch.device("cpu"))
    assert large.fill is None and large.partner_fill is None and large.partner is None
    assert large.mask.shape == (2 * b, 2 * b) and large.num_valid.shape == (2 * b,)
