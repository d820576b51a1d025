"""Fast routes by protocol: a user's distribution declaring a tilt takes the small route, and
every debiased node equals plain autograd of the paper's formula in float64.

The formula is written here (Chuang et al., NeurIPS 2020, eq. (6); Robinson et al., ICLR 2021,
eq. (3)), never another hand-written backward:

    Neg_i = max((Σ_j w_ij e^{s_ij} − N τ⁺ e^{s⁺_i}) / (1 − τ⁺), N e^{−1/t}),
    L_i = −log(e^{s⁺_i} / (e^{s⁺_i} + Neg_i)),   w_ij = N e^{β s_ij} / Σ_k e^{β s_ik}.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from hardneg import ContrastiveLoss
from hardneg.engines.choice import small_route
from hardneg.engines.fused_node import fused_debiased_loss, tilted_debiased_loss
from hardneg.negatives import Hard, NegativeDistribution, TileWeights, Uniform, normalize_log_weights
from hardneg.objectives import Debiased, InfoNCE
from hardneg.scores import simclr_scores


class Farthest(NegativeDistribution):
    """w_ij ∝ exp(−γ s_ij), mean one per anchor; tiles as the tilt −γ (docs/architecture.md)."""

    per_anchor_weights = True

    def __init__(self, *, gamma: float = 1.0) -> None:
        super().__init__()
        self.gamma = gamma

    def log_weights(self, scores):  # type: ignore[no-untyped-def]
        return normalize_log_weights(-self.gamma * scores.logits, scores.mask)

    def tile_weights(self) -> TileWeights:
        return TileWeights(tilt=-self.gamma)


def paper_loss(z1: torch.Tensor, z2: torch.Tensor, *, beta: float, tau_plus: float, t: float) -> torch.Tensor:
    """Per-anchor hard + debiased loss of SimCLR's 2B views, by the papers' formula, in autograd."""
    v = F.normalize(torch.cat([z1, z2]), dim=1)
    a, b = v.shape[0], z1.shape[0]
    s = v @ v.T / t
    partner = (torch.arange(a) + b) % a
    pos = s[torch.arange(a), partner]
    valid = ~torch.eye(a, dtype=torch.bool)
    valid[torch.arange(a), partner] = False
    n = a - 2
    neg_s = s[valid].view(a, n)
    w = n * torch.softmax(beta * neg_s, dim=1)
    weighted = (w * neg_s.exp()).sum(1)
    neg = torch.clamp((weighted - n * tau_plus * pos.exp()) / (1 - tau_plus), min=n * math.exp(-1 / t))
    return -torch.log(pos.exp() / (pos.exp() + neg))


def test_the_chooser_asks_the_components_not_their_class() -> None:
    assert tuple(small_route(Farthest(gamma=2.0), Debiased(0.1))) == ("tilted_debiased", -2.0, 0.1)
    assert small_route(Farthest(gamma=2.0), InfoNCE()) is None  # a tilt ≠ 0 with NCE: general path
    assert small_route(Hard(beta=1.0, rescale=True), Debiased(0.1)) is None  # Hard's own refusal
    assert small_route(Uniform(), Debiased("auto")) is None  # no row form: the estimate reads all


def test_a_user_distribution_declaring_a_tilt_takes_the_small_route_and_equals_the_general_path() -> None:
    torch.manual_seed(0)
    fast = ContrastiveLoss(temperature=0.5, negatives=Farthest(gamma=2.0), objective=Debiased(0.1))
    general = ContrastiveLoss(temperature=0.5, negatives=Farthest(gamma=2.0), objective=Debiased(0.1),
                              engine="materialised")
    assert fast.engine_for(16, 16, torch.float64, two_views=True).engine == "small"
    z1 = torch.randn(8, 5, dtype=torch.float64, requires_grad=True)
    z2 = torch.randn(8, 5, dtype=torch.float64, requires_grad=True)
    got = fast(z1, z2)
    g1, g2 = torch.autograd.grad(got, (z1, z2))
    out = general(z1, z2, details=True)  # details: the general path, never the small route
    e1, e2 = torch.autograd.grad(out.loss, (z1, z2))
    torch.testing.assert_close(got, out.loss, rtol=1e-9, atol=0)
    torch.testing.assert_close(g1, e1, rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(g2, e2, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("beta", [0.0, 0.5, 1.0, 3.0, -2.0])
@pytest.mark.parametrize("b", [4, 130])  # 130: the lean node (4B² above the dense threshold)
def test_the_views_node_equals_autograd_of_the_papers_formula(beta: float, b: int) -> None:
    torch.manual_seed(1)
    z1 = torch.randn(b, 6, dtype=torch.float64, requires_grad=True)
    z2 = torch.randn(b, 6, dtype=torch.float64, requires_grad=True)
    loss, _ = fused_debiased_loss(z1, z2, beta=beta, tau_plus=0.1, temperature=0.5, dtype=torch.float64)
    ref = paper_loss(z1, z2, beta=beta, tau_plus=0.1, t=0.5).mean()
    torch.testing.assert_close(loss, ref, rtol=1e-10, atol=0)
    got = torch.autograd.grad(loss, (z1, z2))
    want = torch.autograd.grad(ref, (z1, z2))
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("beta", [0.0, 1.0, 3.0])
def test_the_logits_node_and_the_objectives_node_equal_autograd_of_the_papers_formula(beta: float) -> None:
    torch.manual_seed(2)
    z1 = torch.randn(6, 5, dtype=torch.float64, requires_grad=True)
    z2 = torch.randn(6, 5, dtype=torch.float64, requires_grad=True)
    ref = paper_loss(z1, z2, beta=beta, tau_plus=0.1, t=0.5)
    want = torch.autograd.grad(ref.sum(), (z1, z2))
    logits_node = tilted_debiased_loss(simclr_scores(z1, z2, temperature=0.5), beta=beta, tau_plus=0.1)
    # the objective's node (Debiased on a distribution without a closed-form sum)
    objective_node = ContrastiveLoss(temperature=0.5, negatives=Farthest(gamma=-beta), tau_plus=0.1,
                                     engine="materialised", reduction="none")(z1, z2, details=True).per_anchor
    for per_anchor in (logits_node, objective_node):
        torch.testing.assert_close(per_anchor, ref, rtol=1e-10, atol=0)
        got = torch.autograd.grad(per_anchor.sum(), (z1, z2))
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w, rtol=1e-8, atol=1e-12)


def test_the_nodes_pass_gradcheck() -> None:
    torch.manual_seed(3)
    z1 = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    z2 = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)

    def views(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = fused_debiased_loss(x, y, beta=-1.5, tau_plus=0.1, temperature=0.5, dtype=torch.float64)
        assert out is not None
        return out[1]

    def logits(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return tilted_debiased_loss(simclr_scores(x, y, temperature=0.5), beta=1.0, tau_plus=0.1)

    assert torch.autograd.gradcheck(views, (z1, z2))
    assert torch.autograd.gradcheck(logits, (z1, z2))
