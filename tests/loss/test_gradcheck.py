"""``torch.autograd.gradcheck`` in float64 for every objective × negative distribution."""

from __future__ import annotations

import pytest
import torch

from hardneg import ContrastiveLoss, negatives
from hardneg.objectives import Debiased, InfoNCE

DISTRIBUTIONS = {
    "uniform": lambda: negatives.Uniform(),
    "hard": lambda: negatives.Hard(beta=1.3),
    "hard-rescaled": lambda: negatives.Hard(beta=0.8, rescale=True),
}
OBJECTIVES = {
    "infonce": lambda: InfoNCE(),
    "infonce-q": lambda: InfoNCE(q=3.0),
    "debiased": lambda: Debiased(0.1),
}


@pytest.mark.parametrize("dist", sorted(DISTRIBUTIONS))
@pytest.mark.parametrize("obj", sorted(OBJECTIVES))
@pytest.mark.parametrize("normalize", [True, False])
def test_gradcheck(dist: str, obj: str, normalize: bool) -> None:
    g = torch.Generator().manual_seed(0)
    z1 = (0.5 * torch.randn(4, 3, generator=g, dtype=torch.float64)).requires_grad_()
    z2 = (0.5 * torch.randn(4, 3, generator=g, dtype=torch.float64)).requires_grad_()
    loss_fn = ContrastiveLoss(
        temperature=0.7,
        negatives=DISTRIBUTIONS[dist](),
        objective=OBJECTIVES[obj](),
        normalize=normalize,
        reduction="none",
    )
    assert torch.autograd.gradcheck(lambda a, b: loss_fn(a, b), (z1, z2), eps=1e-6, atol=1e-6)


def test_gradcheck_when_clamp_binds() -> None:
    """Anchors on the floor get no negative-side gradient; still smooth away from the kink."""
    g = torch.Generator().manual_seed(1)
    z1 = torch.randn(4, 3, generator=g, dtype=torch.float64)
    z2 = (z1 + 0.01 * torch.randn(4, 3, generator=g, dtype=torch.float64)).requires_grad_()
    z1.requires_grad_()
    loss_fn = ContrastiveLoss(temperature=0.5, tau_plus=0.45, reduction="none")
    assert loss_fn(z1, z2, details=True).diagnostics["clamp_fraction"] > 0
    assert torch.autograd.gradcheck(lambda a, b: loss_fn(a, b), (z1, z2), eps=1e-7, atol=1e-6)


def test_detached_weights_are_constants_in_the_backward_pass() -> None:
    """detach_weights=True: the gradient is that of Σ_j w_ij e^{s_ij} with w frozen at its value."""
    from hardneg import simclr_scores
    from hardneg.objectives.nce import InfoNCE as _InfoNCE

    g = torch.Generator().manual_seed(2)
    z1 = torch.randn(4, 3, generator=g, dtype=torch.float64, requires_grad=True)
    z2 = torch.randn(4, 3, generator=g, dtype=torch.float64, requires_grad=True)
    loss_fn = ContrastiveLoss(temperature=0.5, negatives=negatives.Hard(beta=2.0, detach_weights=True))
    got = torch.autograd.grad(loss_fn(z1, z2), (z1, z2))
    with torch.no_grad():
        frozen = negatives.Hard(beta=2.0).log_weights(simclr_scores(z1, z2, temperature=0.5))

    class Frozen(negatives.NegativeDistribution):
        def log_weights(self, scores):  # type: ignore[no-untyped-def]
            return frozen

    def f(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return ContrastiveLoss(temperature=0.5, negatives=Frozen(), objective=_InfoNCE())(a, b)

    want = torch.autograd.grad(f(z1, z2), (z1, z2))
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b)
    assert torch.autograd.gradcheck(f, (z1, z2))
