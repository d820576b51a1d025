"""The fused hard + debiased node of a small batch (``hardneg.engines.fused_node``), checked on its own.

Against the float64 re-derivation of Robinson et al.'s eq. (4) in ``tests/reference/hcl.py`` (the
direct exponentials of the authors' released code, not the node's log domain), ``gradcheck`` on
both of its log-sum-exp shifts and on both sides of the floor, the general path's accuracy in
float32, extreme settings, and the autograd contract (reductions, one view without gradient,
a retained graph, no-grad and inference mode, undefined upstream gradients).
"""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from hardneg import ContrastiveLoss, negatives
from hardneg.engines.fused_node import STATIC_SHIFT_MAX, _FusedDebiased, fused_constants, fused_debiased_loss
from tests.reference.hcl import hcl_reference_simclr

CPU = torch.device("cpu")


def _hcl(beta: float, tau_plus: float, t: float):  # type: ignore[no-untyped-def]
    """The reference's per-anchor losses as a function of the two views."""
    return lambda a, c: hcl_reference_simclr(a, c, temperature=t, tau_plus=tau_plus, beta=beta)


def _views(b: int, d: int = 6, seed: int = 0, noise: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    z1 = torch.randn(b, d, generator=g, dtype=torch.float64)
    return z1, z1 + noise * torch.randn(b, d, generator=g, dtype=torch.float64)


def _fused(
    z1: torch.Tensor, z2: torch.Tensor, beta: float, tau_plus: float, t: float, **kw: object
) -> torch.Tensor:
    dtype = torch.promote_types(z1.dtype, z2.dtype)
    out = fused_debiased_loss(z1, z2, beta=beta, tau_plus=tau_plus, temperature=t,
                              dtype=torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype,
                              **kw)  # type: ignore[arg-type]
    assert out is not None
    return out[0]


def _value_and_grads(fn, z1: torch.Tensor, z2: torch.Tensor) -> list[torch.Tensor]:  # type: ignore[no-untyped-def]
    a, b = z1.detach().clone().requires_grad_(True), z2.detach().clone().requires_grad_(True)
    value = fn(a, b)
    value.sum().backward()
    return [value.detach(), a.grad, b.grad]  # type: ignore[list-item]


@pytest.mark.parametrize("b", [2, 3, 8])
@pytest.mark.parametrize("beta", [0.0, 0.5, 1.0, 5.0])
@pytest.mark.parametrize("tau_plus", [0.01, 0.1, 0.5])
@pytest.mark.parametrize("t", [0.1, 0.5, 1.0])
def test_equals_the_papers_formula_in_float64(b: int, beta: float, tau_plus: float, t: float) -> None:
    z1, z2 = _views(b, seed=b)
    want = _value_and_grads(_hcl(beta, tau_plus, t), z1, z2)
    got = _value_and_grads(lambda a, c: _fused(a, c, beta, tau_plus, t, reduction="none"), z1, z2)
    for x, y in zip(got, want, strict=True):
        torch.testing.assert_close(x, y, rtol=1e-10, atol=1e-12)
    mean = _fused(z1, z2, beta, tau_plus, t)
    torch.testing.assert_close(mean, want[0].mean(), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize(
    "beta, t, static",
    [(1.0, 0.5, True), (0.0, 0.1, True), (50.0, 0.1, False), (400.0, 1.0, False)],
)
def test_gradcheck_with_either_shift(beta: float, t: float, static: bool) -> None:
    assert fused_constants(4, torch.float64, CPU, beta, 0.1, t).static is static
    z1, z2 = _views(4, d=5, seed=1, noise=0.3)
    z1.requires_grad_(True)
    z2.requires_grad_(True)
    assert torch.autograd.gradcheck(
        lambda a, c: _fused(a, c, beta, 0.1, t, reduction="none"), (z1, z2), eps=1e-6, atol=1e-6
    )


def test_a_large_tilt_needs_the_row_maximum_in_float32_and_gets_it() -> None:
    """2(1+β)/t above STATIC_SHIFT_MAX: the fixed shift would underflow; the row maximum is used
    (for β > 1 always: the tilted pair of hardneg._numerics.lse shifts by it)."""
    assert 2 * (1 + 0.5) / 0.02 > STATIC_SHIFT_MAX[torch.float32]
    assert not fused_constants(4, torch.float32, CPU, 0.5, 0.1, 0.02).static
    assert fused_constants(4, torch.float64, CPU, 0.5, 0.1, 0.02).static
    assert 2 * (1 + 5.0) / 0.1 > STATIC_SHIFT_MAX[torch.float32]
    for dtype in (torch.float32, torch.float64):
        c = fused_constants(4, dtype, CPU, 5.0, 0.1, 0.1)
        assert c.pair and not c.static
    z1, z2 = _views(16, d=8, seed=2)
    want = hcl_reference_simclr(z1, z2, temperature=0.1, tau_plus=0.1, beta=5.0)
    got = _fused(z1.float(), z2.float(), 5.0, 0.1, 0.1, reduction="none")
    general = ContrastiveLoss(
        temperature=0.1, tau_plus=0.1, negatives=negatives.Hard(beta=5.0), reduction="none"
    )
    general_err = (general(z1.float(), z2.float(), details=True).loss.double() - want).abs().max()
    assert (got.double() - want).abs().max() <= 3 * general_err + 1e-6  # float32 logits times (1+β)/t = 60


def test_both_sides_of_the_floor() -> None:
    """Views nearly equal to their partners with a large τ⁺: the floor N e^{−1/t} binds for some
    anchors (∂L/∂s_ij = 0 there) and not for others; values, gradients and gradcheck hold."""
    z1, z2 = _views(6, seed=3, noise=0.05)
    z2[:3] = torch.randn(3, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(9))
    beta, tau_plus, t = 1.0, 0.4, 0.5
    c = fused_constants(6, torch.float64, CPU, beta, tau_plus, t)
    # which anchors the floor binds for, from the reference's own quantities
    v = torch.nn.functional.normalize(torch.cat([z1, z2]), dim=1)
    sim = (v @ v.T / t).fill_diagonal_(float("-inf"))
    idx = torch.arange(12)
    pos = sim[idx, (idx + 6) % 12].clone()
    sim[idx, (idx + 6) % 12] = float("-inf")
    n = 10
    reweight = n * torch.exp(torch.logsumexp((1 + beta) * sim, 1) - torch.logsumexp(beta * sim, 1))
    binds = (reweight - tau_plus * n * pos.exp()) / (1 - tau_plus) <= n * math.exp(-1 / t)
    assert binds.any() and (~binds).any()
    assert c.b == 6
    want = _value_and_grads(_hcl(beta, tau_plus, t), z1, z2)
    got = _value_and_grads(lambda a, b: _fused(a, b, beta, tau_plus, t, reduction="none"), z1, z2)
    for x, y in zip(got, want, strict=True):
        torch.testing.assert_close(x, y, rtol=1e-10, atol=1e-12)
    a, b = z1.clone().requires_grad_(True), z2.clone().requires_grad_(True)
    assert torch.autograd.gradcheck(lambda p, q: _fused(p, q, beta, tau_plus, t, reduction="none"), (a, b))


@pytest.mark.parametrize(
    "beta, tau_plus, t", [(1.0, 0.1, 0.5), (5.0, 0.3, 0.2), (20.0, 0.1, 0.1), (0.0, 0.1, 0.05)]
)
def test_float32_is_as_accurate_as_the_general_path(beta: float, tau_plus: float, t: float) -> None:
    """Both paths in float32 against the general path in float64, the worst relative error of the
    value and the gradients over sizes and seeds: the fused node's is at most three times the
    general path's plus the rounding of one logit, 10 eps / t (measured: 0.4 to 2 times)."""
    loss = ContrastiveLoss(temperature=t, tau_plus=tau_plus, negatives=negatives.Hard(beta=beta))
    worst = {"fused": 0.0, "general": 0.0}
    for b, seed in ((8, 0), (8, 1), (64, 2), (64, 3)):
        z1, z2 = _views(b, d=16, seed=seed)
        z1, z2 = 3 * z1, 3 * z2
        ref = _value_and_grads(lambda a, c: loss(a, c, details=True).loss, z1, z2)
        runs = {
            "fused": _value_and_grads(loss, z1.float(), z2.float()),
            "general": _value_and_grads(lambda a, c: loss(a, c, details=True).loss, z1.float(), z2.float()),
        }
        for name, got in runs.items():
            err = max(((x.double() - y).abs().max() / y.abs().max()).item() for x, y in zip(got, ref))
            worst[name] = max(worst[name], err)
    assert worst["fused"] <= 3 * worst["general"] + 10 * torch.finfo(torch.float32).eps / t, worst


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("beta, t", [(100.0, 0.02), (0.0, 0.01), (1.0, 5.0)])
def test_extreme_settings_stay_finite(dtype: torch.dtype, beta: float, t: float) -> None:
    g = torch.Generator().manual_seed(4)
    z1 = torch.randn(16, 8, generator=g) * torch.logspace(-15, 15, 16)[:, None]
    z2 = z1 + 1e-3 * z1.abs().amax(1, keepdim=True) * torch.randn(16, 8, generator=g)
    z1, z2 = z1.to(dtype).requires_grad_(True), z2.to(dtype).requires_grad_(True)
    loss = ContrastiveLoss(temperature=t, tau_plus=0.1, negatives=negatives.Hard(beta=beta))
    value = loss(z1, z2)
    value.backward()
    assert torch.isfinite(value) and torch.isfinite(z1.grad).all() and torch.isfinite(z2.grad).all()  # type: ignore[arg-type]
    torch.testing.assert_close(value.float(), loss(z1, z2, details=True).loss.float(), rtol=1e-4, atol=1e-5)


def test_an_out_of_range_norm_is_left_to_the_general_path() -> None:
    z1, z2 = _views(4)
    z1[1] = 0.0
    assert fused_debiased_loss(z1, z2, beta=1.0, tau_plus=0.1, temperature=0.5, dtype=torch.float64) is None
    z1[1] = float("inf")
    assert fused_debiased_loss(z1, z2, beta=1.0, tau_plus=0.1, temperature=0.5, dtype=torch.float64) is None


def test_without_validation_a_zero_row_is_kept_and_passes_its_gradient() -> None:
    """``validate=False``: the branch-free normalisation of the general path (a zero row is
    divided by 1, its gradient the upstream one), no host read."""
    z1, z2 = _views(5)
    z1[2] = 0.0
    loss = ContrastiveLoss(temperature=0.5, tau_plus=0.1, negatives=negatives.Hard(beta=1.0), validate=False)
    got = _value_and_grads(loss, z1, z2)
    want = _value_and_grads(lambda a, c: loss(a, c, details=True).loss, z1, z2)
    for x, y in zip(got, want, strict=True):
        torch.testing.assert_close(x, y, rtol=1e-10, atol=1e-13)
    assert got[1][2].abs().sum() > 0


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_the_loss_and_the_per_anchor_losses_both_carry_gradients(reduction: str) -> None:
    z1, z2 = _views(4)
    w = torch.linspace(0.5, 2.0, 8, dtype=torch.float64)

    def objective(a: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        out = fused_debiased_loss(a, c, beta=1.0, tau_plus=0.1, temperature=0.5, dtype=torch.float64,
                                  reduction=reduction)
        assert out is not None
        loss, per_anchor = out
        return loss.sum() * 0.3 + (per_anchor * w).sum()

    def reference(a: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        per = hcl_reference_simclr(a, c, temperature=0.5, tau_plus=0.1, beta=1.0)
        loss = {"mean": per.mean(), "sum": per.sum(), "none": per}[reduction]
        return loss.sum() * 0.3 + (per * w).sum()

    for x, y in zip(_value_and_grads(objective, z1, z2), _value_and_grads(reference, z1, z2), strict=True):
        torch.testing.assert_close(x, y, rtol=1e-10, atol=1e-12)


def test_one_view_without_gradient_and_mixed_dtypes() -> None:
    z1, z2 = _views(4)
    a = z1.float().requires_grad_(True)
    value = _fused(a, z2, 1.0, 0.1, 0.5)  # float32 and float64 views: computed in float64
    value.backward()
    assert value.dtype == torch.float64 and a.grad is not None and a.grad.dtype == torch.float32
    want = _value_and_grads(lambda p, q: _hcl(1.0, 0.1, 0.5)(p, q).mean(), z1.float().double(), z2)
    torch.testing.assert_close(a.grad.double(), want[1], rtol=1e-5, atol=1e-7)


def test_a_retained_graph_gives_the_same_gradient_twice() -> None:
    z1, z2 = (x.requires_grad_(True) for x in _views(4))
    value = _fused(z1, z2, 2.0, 0.1, 0.5)
    value.backward(retain_graph=True)
    first = z1.grad.clone()  # type: ignore[union-attr]
    value.backward()
    torch.testing.assert_close(z1.grad, 2 * first, rtol=0, atol=0)


def test_no_grad_and_inference_mode_first_then_training() -> None:
    loss = ContrastiveLoss(temperature=0.4, tau_plus=0.2, negatives=negatives.Hard(beta=0.7))
    z1, z2 = (x.float() for x in _views(7, seed=11))
    with torch.inference_mode():
        first = loss(z1, z2)  # constants made here must serve a later backward
    with torch.no_grad():
        second = loss(z1, z2)
    a = z1.clone().requires_grad_(True)
    third = loss(a, z2)
    third.backward()
    assert torch.equal(first, second) and torch.equal(second, third.detach()) and a.grad is not None


def test_constants_are_cached_per_setting() -> None:
    one = fused_constants(4, torch.float32, CPU, 1.0, 0.1, 0.5)
    assert fused_constants(4, torch.float32, CPU, 1.0, 0.1, 0.5) is one
    other = fused_constants(4, torch.float32, CPU, 2.0, 0.1, 0.5)
    assert other.tilts.flatten().tolist() == [6.0, 4.0] and one.tilts.flatten().tolist() == [4.0, 2.0]
    with pytest.raises(ValueError, match="fused_max"):
        fused_constants(257, torch.float32, CPU, 1.0, 0.1, 0.5)


@pytest.mark.parametrize("beta, t", [(1.0, 0.5), (50.0, 0.1)])  # the fixed shift; the row maximum
@pytest.mark.parametrize("mean", [True, False])
def test_the_lean_node_equals_the_batched_one(beta: float, t: float, mean: bool) -> None:
    """Above 4B² = DENSE_LSE_MAX the node takes one tilt at a time and recomputes them in the
    backward (``lean``); forced here at a small B, it equals the batched node in float64, and
    passes gradcheck."""
    c = fused_constants(5, torch.float64, CPU, beta, 0.1, t)
    lean = dataclasses.replace(c, lean=True)
    assert not c.lean and c.static is (beta == 1.0)
    z1, z2 = _views(5, seed=5, noise=0.4)

    def node(consts):  # type: ignore[no-untyped-def]
        return lambda a, b: _FusedDebiased.apply(a, b, consts, torch.float64, True, mean)[1]

    for x, y in zip(_value_and_grads(node(lean), z1, z2), _value_and_grads(node(c), z1, z2), strict=True):
        torch.testing.assert_close(x, y, rtol=1e-12, atol=1e-14)
    a, b = z1.clone().requires_grad_(True), z2.clone().requires_grad_(True)
    assert torch.autograd.gradcheck(node(lean), (a, b))


def test_a_batch_above_the_dense_size_equals_the_papers_formula() -> None:
    z1, z2 = _views(130, d=4, seed=13)
    assert fused_constants(130, torch.float64, CPU, 1.0, 0.1, 0.5).lean
    want = _value_and_grads(lambda a, c: _hcl(1.0, 0.1, 0.5)(a, c).mean(), z1, z2)
    got = _value_and_grads(lambda a, c: _fused(a, c, 1.0, 0.1, 0.5), z1, z2)
    for x, y in zip(got, want, strict=True):
        torch.testing.assert_close(x, y, rtol=1e-10, atol=1e-14)
