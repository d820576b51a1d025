"""Values and gradients agree with the independent float64 reference (tests/core/reference.py)."""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from hardneg import ContrastiveLoss, negatives, pair_scores
from hardneg.objectives import Debiased
from tests.reference.hcl import hcl_reference_pairs, hcl_reference_simclr

params = st.fixed_dictionaries(
    {
        "b": st.integers(2, 64),
        "d": st.integers(2, 256),
        "t": st.floats(0.05, 1.0),
        "beta": st.floats(0.0, 10.0),
        "tau_plus": st.floats(0.0, 0.5),
        "seed": st.integers(0, 2**31 - 1),
    }
)


def _rel_close(a: torch.Tensor, b: torch.Tensor, rtol: float = 1e-6) -> None:
    torch.testing.assert_close(a, b, rtol=rtol, atol=rtol * float(b.detach().abs().max().clamp_min(1e-12)))


@settings(max_examples=25, deadline=None)
@given(params)
def test_values_and_gradients_match_reference(p: dict) -> None:
    g = torch.Generator().manual_seed(p["seed"])
    z1 = torch.randn(p["b"], p["d"], generator=g, dtype=torch.float64, requires_grad=True)
    z2 = torch.randn(p["b"], p["d"], generator=g, dtype=torch.float64, requires_grad=True)
    loss_fn = ContrastiveLoss(
        temperature=p["t"],
        objective=Debiased(p["tau_plus"]),
        negatives=negatives.Hard(beta=p["beta"]),
        reduction="none",
    )
    ours = loss_fn(z1, z2)
    ref = hcl_reference_simclr(z1, z2, temperature=p["t"], tau_plus=p["tau_plus"], beta=p["beta"])
    _rel_close(ours, ref)
    w = torch.rand(ours.shape, generator=g, dtype=torch.float64)  # a random cotangent
    g_ours = torch.autograd.grad((ours * w).sum(), (z1, z2))
    g_ref = torch.autograd.grad((ref * w).sum(), (z1, z2))
    for a, b in zip(g_ours, g_ref):
        _rel_close(a, b)


@settings(max_examples=10, deadline=None)
@given(params)
def test_public_api_with_tau_plus_matches_reference(p: dict) -> None:
    """The README's ``ContrastiveLoss(temperature, tau_plus, negatives=Hard(beta))`` path."""
    g = torch.Generator().manual_seed(p["seed"])
    z1 = torch.randn(p["b"], p["d"], generator=g, dtype=torch.float64)
    z2 = torch.randn(p["b"], p["d"], generator=g, dtype=torch.float64)
    loss = ContrastiveLoss(
        temperature=p["t"], tau_plus=p["tau_plus"], negatives=negatives.Hard(beta=p["beta"])
    )(z1, z2)
    ref = hcl_reference_simclr(z1, z2, temperature=p["t"], tau_plus=p["tau_plus"], beta=p["beta"])
    _rel_close(loss, ref.mean())


@settings(max_examples=15, deadline=None)
@given(
    a=st.integers(1, 16),
    n=st.integers(1, 64),
    d=st.integers(2, 64),
    t=st.floats(0.05, 1.0),
    beta=st.floats(0.0, 10.0),
    tau_plus=st.floats(0.0, 0.5),
    seed=st.integers(0, 2**31 - 1),
)
def test_general_layout_matches_reference(
    a: int, n: int, d: int, t: float, beta: float, tau_plus: float, seed: int
) -> None:
    """A separate candidate pool (a queue), down to a single anchor."""
    g = torch.Generator().manual_seed(seed)
    anchors, positives = (torch.randn(a, d, generator=g, dtype=torch.float64) for _ in range(2))
    cands = torch.randn(n, d, generator=g, dtype=torch.float64, requires_grad=True)
    loss_fn = ContrastiveLoss(
        temperature=t, objective=Debiased(tau_plus), negatives=negatives.Hard(beta=beta), reduction="none"
    )
    ours = loss_fn.compute(pair_scores(anchors, positives, cands, temperature=t)).loss
    ref = hcl_reference_pairs(anchors, positives, cands, temperature=t, tau_plus=tau_plus, beta=beta)
    _rel_close(ours, ref)
    _rel_close(torch.autograd.grad(ours.sum(), cands)[0], torch.autograd.grad(ref.sum(), cands)[0])


def test_unnormalised_mode_matches_reference() -> None:
    g = torch.Generator().manual_seed(0)
    z1 = 0.3 * torch.randn(6, 5, generator=g, dtype=torch.float64)
    z2 = 0.3 * torch.randn(6, 5, generator=g, dtype=torch.float64)
    for tau_plus in (0.0, 0.2):
        ours = ContrastiveLoss(
            temperature=0.5,
            objective=Debiased(tau_plus),
            negatives=negatives.Hard(beta=1.5),
            normalize=False,
            reduction="none",
        )(z1, z2)
        ref = hcl_reference_simclr(z1, z2, temperature=0.5, tau_plus=tau_plus, beta=1.5, normalize=False)
        _rel_close(ours, ref)
