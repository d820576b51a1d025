"""Inputs at the edge of the floating range: computed correctly, or refused naming the range.

Before: temperature 1e-39 gave NaN and 1e-38 inf, Hard(beta=1e39) NaN gradients, embeddings of
magnitude 1e19 a silently wrong loss with zero gradient (normalize=True) or NaN (normalize=False),
and a zero embedding row a gradient of 1e11.
"""

from __future__ import annotations

import pytest
import torch

from hardneg import ContrastiveLoss, negatives, pair_scores
from hardneg.queue import MemoryQueue
from tests.reference.data import views


@pytest.mark.parametrize("t", [1e-39, 1e-38, 1e-5, 1e5])
def test_temperature_outside_the_range_is_refused(t: float) -> None:
    with pytest.raises(ValueError, match=r"temperature must lie in \[0.0001, 10000\], got"):
        ContrastiveLoss(temperature=t)


@pytest.mark.parametrize("beta", [1e39, 2e6])
def test_beta_outside_the_range_is_refused(beta: float) -> None:
    with pytest.raises(ValueError, match=r"beta must lie in \[0, 1e\+06\].*got"):
        negatives.Hard(beta=beta)


def test_range_ends_stay_finite() -> None:
    z1, z2 = views(b=8, d=4, dtype=torch.float32)
    z1.requires_grad_(True)
    for t in (1e-4, 1e4):
        for tau in (0.0, 0.1):
            loss = ContrastiveLoss(temperature=t, tau_plus=tau, negatives=negatives.Hard(beta=1e6))(z1, z2)
            (g,) = torch.autograd.grad(loss, z1)
            assert torch.isfinite(loss) and torch.isfinite(g).all()


def test_huge_inputs_are_normalised_exactly() -> None:
    """Magnitude 1e19 in float32: the same loss and (scaled) gradient as the unit-scale inputs."""
    z1, z2 = views(b=6, d=5, dtype=torch.float32)
    loss_fn = ContrastiveLoss(temperature=0.5, tau_plus=0.1, negatives=negatives.Hard(beta=1.0))
    small = z1.clone().requires_grad_(True)
    big = (z1 * 1e19).requires_grad_(True)
    a = loss_fn(small, z2)
    b = loss_fn(big, z2 * 1e19)
    torch.testing.assert_close(a, b)
    (ga,) = torch.autograd.grad(a, small)
    (gb,) = torch.autograd.grad(b, big)
    assert float(ga.abs().max()) > 0
    torch.testing.assert_close(gb * 1e19, ga, rtol=1e-4, atol=1e-6)


def test_unnormalised_overflowing_logits_are_refused() -> None:
    z1, z2 = views(b=4, d=3, dtype=torch.float32)
    with pytest.raises(ValueError, match=r"logits .* may reach .* above the torch.float32 limit"):
        ContrastiveLoss(normalize=False)(z1 * 1e19, z2 * 1e19)
    with pytest.raises(ValueError, match=r"anchors, positives, candidates"):
        pair_scores(z1 * 1e19, z2, z2 * 1e19, temperature=1.0, normalize=False)


def test_zero_row_has_a_bounded_gradient() -> None:
    z1, z2 = views(b=4, d=3)
    z1 = z1.clone()
    z1[0] = 0.0
    z1.requires_grad_(True)
    loss = ContrastiveLoss(temperature=0.1)(z1, z2)
    (g,) = torch.autograd.grad(loss, z1)
    assert torch.isfinite(loss) and float(g.abs().max()) < 100.0


def test_pair_scores_promote_mixed_dtypes_like_simclr() -> None:
    z1, z2 = views(b=4, d=3, dtype=torch.float32)
    s = pair_scores(z1, z2.double(), z2, temperature=0.5)
    assert s.logits.dtype == torch.float64
    loss = ContrastiveLoss()
    torch.testing.assert_close(loss(z1, z2.double()), loss(z1.double(), z2.double()))


def test_queue_refuses_non_finite_keys() -> None:
    queue = MemoryQueue(size=4, dim=2)
    with pytest.raises(ValueError, match=r"keys must be finite, got 1 of 2 rows with NaN or Inf"):
        queue.enqueue(torch.tensor([[1.0, float("nan")], [0.0, 1.0]]))
    assert len(queue) == 0
