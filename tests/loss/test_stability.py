"""No NaN/Inf in value or gradient at small temperature, large β, huge norms, float32 and bf16 —
where a direct-``exp`` implementation (the authors' style) overflows."""

from __future__ import annotations

import math

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from hardneg import ContrastiveLoss, negatives
from tests.reference.hcl import direct_exp_hcl


@settings(max_examples=40, deadline=None)
@given(
    t=st.floats(0.01, 1.0),
    beta=st.floats(0.0, 50.0),
    tau_plus=st.floats(0.0, 0.5),
    norm=st.floats(1e-2, 1e3),
    normalize=st.booleans(),
    rescale=st.booleans(),
    dtype=st.sampled_from([torch.float32, torch.bfloat16]),
    seed=st.integers(0, 2**31 - 1),
)
def test_finite_everywhere(
    t: float,
    beta: float,
    tau_plus: float,
    norm: float,
    normalize: bool,
    rescale: bool,
    dtype: torch.dtype,
    seed: int,
) -> None:
    g = torch.Generator().manual_seed(seed)
    b, d = 12, 8
    z1 = (
        (norm * torch.nn.functional.normalize(torch.randn(b, d, generator=g), dim=1))
        .to(dtype)
        .requires_grad_()
    )
    z2 = (
        (norm * torch.nn.functional.normalize(torch.randn(b, d, generator=g), dim=1))
        .to(dtype)
        .requires_grad_()
    )
    loss_fn = ContrastiveLoss(
        temperature=t,
        tau_plus=tau_plus,
        negatives=negatives.Hard(beta=beta, rescale=rescale),
        normalize=normalize,
    )
    out = loss_fn(z1, z2, details=True)
    assert torch.isfinite(out.loss)
    out.loss.backward()
    assert torch.isfinite(z1.grad).all() and torch.isfinite(z2.grad).all()
    assert all(math.isfinite(v) for v in out.diagnostics.values())


def test_direct_exp_overflows_where_log_domain_does_not() -> None:
    g = torch.Generator().manual_seed(0)
    z1 = torch.nn.functional.normalize(torch.randn(16, 8, generator=g), dim=1)
    z2 = torch.nn.functional.normalize(z1 + 0.01 * torch.randn(16, 8, generator=g), dim=1)
    t, beta, tau_plus = 0.01, 5.0, 0.1
    naive = direct_exp_hcl(z1, z2, t, tau_plus, beta)
    assert not torch.isfinite(naive)  # e^{100} overflows float32
    ours = ContrastiveLoss(temperature=t, tau_plus=tau_plus, negatives=negatives.Hard(beta=beta))(z1, z2)
    assert torch.isfinite(ours)
    # and in float64, where the direct form does not overflow, the two agree
    ref = direct_exp_hcl(z1.double(), z2.double(), t, tau_plus, beta)
    ours64 = ContrastiveLoss(temperature=t, tau_plus=tau_plus, negatives=negatives.Hard(beta=beta))(
        z1.double(), z2.double()
    )
    assert torch.isfinite(ref)
    torch.testing.assert_close(ours64, ref, rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(ours.double(), ref, rtol=1e-4, atol=1e-6)


def test_bfloat16_matches_float32() -> None:
    g = torch.Generator().manual_seed(1)
    z1, z2 = torch.randn(32, 16, generator=g), torch.randn(32, 16, generator=g)
    loss_fn = ContrastiveLoss(temperature=0.1, tau_plus=0.1, negatives=negatives.Hard(beta=1.0))
    ref = loss_fn(z1.bfloat16().float(), z2.bfloat16().float())
    torch.testing.assert_close(loss_fn(z1.bfloat16(), z2.bfloat16()), ref, rtol=1e-5, atol=1e-5)
