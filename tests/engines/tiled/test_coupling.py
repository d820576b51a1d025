"""Entropic-OT negatives in the tiled engine (Jiang et al., arXiv:2111.03169, §VI): the streamed
Sinkhorn and loss against the materialised engine and an independent float64 reference."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch

from hardneg import ContrastiveLoss
from hardneg.engines.tiled.coupling import (
    OTKernel,
    TiledSinkhornResult,
    ot_weighted_lse,
    strip_rows,
    tiled_sinkhorn,
)
from hardneg.engines.tiled.mask import TileMask
from hardneg.negatives import OptimalTransport
from hardneg.objectives import Debiased, Hinge, InfoNCE, Logistic
from tests.reference.ot import reference_coupling

F64 = torch.float64


def _views(b: int, d: int, seed: int, scale: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    z1 = torch.randn(b, d, generator=g, dtype=F64) * scale
    z2 = z1 + 0.7 * scale * torch.randn(b, d, generator=g, dtype=F64)
    return z1.requires_grad_(), z2.requires_grad_()


def _loss_and_grads(loss: ContrastiveLoss, z1: torch.Tensor, z2: torch.Tensor) -> list[torch.Tensor]:
    value = loss(z1, z2)
    g1, g2 = torch.autograd.grad(value, (z1, z2))
    return [value.detach(), g1, g2]


def _engines(neg: dict, tile: int, **kw: object) -> tuple[ContrastiveLoss, ContrastiveLoss]:
    mat = ContrastiveLoss(negatives=OptimalTransport(**neg), memory_budget=1 << 40, **kw)  # type: ignore[arg-type]
    til = ContrastiveLoss(negatives=OptimalTransport(**neg), memory_budget=0, tile_size=tile, **kw)  # type: ignore[arg-type]
    return mat, til


def _reference_simclr_loss(z1: torch.Tensor, z2: torch.Tensor, t: float, eps: float) -> float:
    """NT-Xent with OT weights, written out in NumPy: cost 2 − 2cos, self and positive forbidden."""
    v = np.concatenate([z1.detach().numpy(), z2.detach().numpy()])
    v = v / np.linalg.norm(v, axis=1, keepdims=True)
    n = v.shape[0]
    b = n // 2
    cos = v @ v.T
    mask = np.ones((n, n), dtype=bool)
    idx = np.arange(n)
    mask[idx, idx] = False
    mask[idx, (idx + b) % n] = False
    p = reference_coupling(2.0 - 2.0 * cos, mask, eps, iters=4000)
    w = (n - 2) * p / p.sum(axis=1, keepdims=True)
    s = cos / t
    neg = np.log((w * np.exp(s)).sum(axis=1))
    pos = s[idx, (idx + b) % n]
    return float(np.mean(np.logaddexp(0.0, neg - pos)))  # softplus: −log e^{s⁺}/(e^{s⁺} + Σ w e^{s})


@pytest.mark.parametrize("tile", [3, 5, 16, 64])
@pytest.mark.parametrize("eps", [1.0, 0.3, 0.1])
def test_simclr_values_and_gradients_equal_materialised(tile: int, eps: float) -> None:
    z1, z2 = _views(13, 6, seed=int(eps * 10) + tile)
    mat, til = _engines({"epsilon": eps}, tile, temperature=0.4)
    for x, y in zip(_loss_and_grads(mat, z1, z2), _loss_and_grads(til, z1, z2), strict=True):
        torch.testing.assert_close(y, x, rtol=1e-6, atol=1e-9)


def test_simclr_equals_independent_numpy_reference() -> None:
    z1, z2 = _views(9, 5, seed=3)
    _, til = _engines({"epsilon": 0.2, "tol": 1e-12, "max_iter": 20000}, 4, temperature=0.5)
    ref = _reference_simclr_loss(z1, z2, 0.5, 0.2)
    assert float(til(z1, z2).detach()) == pytest.approx(ref, rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("objective", [InfoNCE(), Debiased(tau_plus=0.1), Logistic()])
def test_objectives_reading_the_weighted_sum(objective: object) -> None:
    z1, z2 = _views(10, 4, seed=5)
    mat, til = _engines({"epsilon": 0.5}, 7, temperature=0.5, objective=objective)
    for x, y in zip(_loss_and_grads(mat, z1, z2), _loss_and_grads(til, z1, z2), strict=True):
        torch.testing.assert_close(y, x, rtol=1e-6, atol=1e-9)


@pytest.mark.filterwarnings("ignore:OptimalTransport. Sinkhorn stopped:RuntimeWarning")
@pytest.mark.parametrize("tile", [4, 11])
def test_pair_layout_a_ne_n_with_mask_and_inactive_columns(tile: int) -> None:
    g = torch.Generator().manual_seed(7)
    a = torch.randn(9, 5, generator=g, dtype=F64, requires_grad=True)
    p = torch.randn(9, 5, generator=g, dtype=F64, requires_grad=True)
    c = torch.randn(23, 5, generator=g, dtype=F64, requires_grad=True)
    mask = torch.rand(9, 23, generator=g) > 0.3
    mask[:, 4] = False  # a column no anchor may use: left out of the marginals
    mask[:, 17] = False
    mask[0, :] = False
    mask[0, 2:4] = True
    outs = []
    for budget, ts in ((1 << 40, None), (0, tile)):
        loss = ContrastiveLoss(
            negatives=OptimalTransport(epsilon=0.25, tol=1e-9, max_iter=5000),
            temperature=0.3, memory_budget=budget, tile_size=ts,
        )
        out = loss.pair(a, p, c, mask=mask)
        outs.append([out.detach(), *torch.autograd.grad(out, (a, p, c))])
    for x, y in zip(*outs, strict=True):
        torch.testing.assert_close(y, x, rtol=1e-6, atol=1e-9)


def test_unnormalised_small_epsilon_is_finite_and_equal() -> None:
    z1, z2 = _views(12, 8, seed=11, scale=30.0)
    mat, til = _engines({"epsilon": 0.05}, 5, temperature=0.1, normalize=False)
    got = _loss_and_grads(til, z1, z2)
    assert all(bool(torch.isfinite(x).all()) for x in got)
    for x, y in zip(_loss_and_grads(mat, z1, z2), got, strict=True):
        torch.testing.assert_close(y, x, rtol=1e-6, atol=1e-9)


def test_exp_cost_and_log_method() -> None:
    z1, z2 = _views(8, 4, seed=2)
    for neg in ({"epsilon": 0.5, "cost": "exp", "kappa": 0.5}, {"epsilon": 0.2, "method": "log"}):
        mat, til = _engines(neg, 6, temperature=0.5)
        for x, y in zip(_loss_and_grads(mat, z1, z2), _loss_and_grads(til, z1, z2), strict=True):
            torch.testing.assert_close(y, x, rtol=1e-6, atol=1e-9)


def test_iterations_error_and_diagnostics_match_materialised() -> None:
    z1, z2 = _views(10, 4, seed=4)
    for method in ("stabilized", "log"):
        mat, til = _engines({"epsilon": 0.3, "method": method}, 6, temperature=0.5)
        dm = mat(z1, z2, details=True).diagnostics
        dt = til(z1, z2, details=True).diagnostics
        assert dt["tiled"] == 1.0 and dt["ot_converged"] == 1.0
        assert dt["ot_iterations"] == dm["ot_iterations"]
        assert dt["ot_marginal_error"] == pytest.approx(dm["ot_marginal_error"], rel=1e-6, abs=1e-12)


def test_max_iter_reached_warns_and_matches() -> None:
    z1, z2 = _views(10, 4, seed=8)
    mat, til = _engines({"epsilon": 0.05, "max_iter": 3, "tol": 1e-12}, 4, temperature=0.5)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = _loss_and_grads(til, z1, z2)
    assert any(issubclass(w.category, RuntimeWarning) and "max_iter=3" in str(w.message) for w in caught)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = _loss_and_grads(mat, z1, z2)
    for x, y in zip(want, got, strict=True):
        torch.testing.assert_close(y, x, rtol=1e-6, atol=1e-9)


def _simclr_rule(n: int) -> TileMask:
    idx = torch.arange(n)
    return TileMask(num_anchors=n, num_candidates=n, excluded=torch.stack([idx, (idx + n // 2) % n], 1))


def test_log_domain_fallback_when_shifted_sums_underflow() -> None:
    """float32, ε = 0.05, near-orthogonal points: the first sweep's shift (a bound of max_j K_ij)
    lies ~30 above the rows' maxima, so its sums would lose terms; the sweep is redone exactly."""
    v = torch.nn.functional.normalize(torch.randn(16, 64, generator=torch.Generator().manual_seed(1)), dim=1)
    rule = _simclr_rule(16)
    got = []
    for x in (v, v.double()):
        ones = torch.ones(16, dtype=x.dtype)
        kernel = OTKernel.of(OptimalTransport(epsilon=0.05), ones, ones)
        got.append(tiled_sinkhorn(x, x, rule, kernel, tol=1e-4, max_iter=10000, tile=5))
    r32, r64 = got
    assert r32.log_sweeps >= 1 and r64.log_sweeps == 0
    # the stopping sweep's marginal error lies within float32 round-off of tol (9.99e-5 against
    # 1e-4 on torch 2.4): float32 and float64 may stop one sweep apart, so the potentials are
    # compared with float64 after exactly the float32 run's sweeps
    assert r32.converged and abs(r32.iterations - r64.iterations) <= 1
    ones = torch.ones(16, dtype=torch.float64)
    kernel = OTKernel.of(OptimalTransport(epsilon=0.05), ones, ones)
    same = tiled_sinkhorn(v.double(), v.double(), rule, kernel, tol=0.0, max_iter=r32.iterations, tile=5)
    assert same.iterations == r32.iterations
    g32 = r32.g.double()
    torch.testing.assert_close(g32 - g32.mean(), same.g - same.g.mean(), rtol=0, atol=2e-5)
    # the float64 potentials give a coupling with the requested marginals
    logk = (2.0 * (v.double() @ v.double().t()) / 0.05).masked_fill(~rule.block(0, 16, 0, 16), -math.inf)
    p = (logk + r64.g[None, :] - r64.row_lse[:, None] - math.log(16)).exp()  # f = log a − r
    assert float((p.sum(1) - 1 / 16).abs().sum()) <= 1e-4
    assert float((p.sum(0) - 1 / 16).abs().sum()) <= 1e-4


def test_weighted_lse_matches_closed_form_with_constant_weights() -> None:
    """``log Σ_j e^{s + K + g} − r + log N`` with autograd through s only (K, g, r constants):
    a finite-difference gradcheck does not apply, as K is made from the same embeddings."""
    g = torch.Generator().manual_seed(9)
    a = torch.randn(7, 3, generator=g, dtype=F64, requires_grad=True)
    c = torch.randn(9, 3, generator=g, dtype=F64, requires_grad=True)
    an = torch.linalg.vector_norm(a.detach(), dim=1)
    cn = torch.linalg.vector_norm(c.detach(), dim=1)
    excluded = torch.tensor([[0], [3], [-1], [8], [1], [2], [5]])
    rule = TileMask(num_anchors=7, num_candidates=9, excluded=excluded)
    kernel = OTKernel(0.4, "sqeuclidean", 1.0, False, an, cn)
    pots = TiledSinkhornResult(
        g=torch.randn(9, generator=g, dtype=F64), row_lse=torch.randn(7, generator=g, dtype=F64),
        counts=torch.tensor([8, 8, 9, 8, 8, 8, 8]), iterations=1, marginal_error=0.0, converged=True,
    )
    got = ot_weighted_lse(a, c, pots, rule, kernel, temperature=0.5, tile=2)
    mask = torch.ones(7, 9, dtype=torch.bool)
    for i, j in enumerate(excluded[:, 0].tolist()):
        if j >= 0:
            mask[i, j] = False
    dot = a @ c.t()
    k = (2.0 * dot.detach() / (0.4 * an[:, None] * cn[None, :])).clamp(-5.0, 5.0)
    want = torch.logsumexp((dot / 0.5 + k + pots.g).masked_fill(~mask, -math.inf), 1)
    want = want - pots.row_lse + pots.counts.double().log()
    torch.testing.assert_close(got, want)
    w = torch.randn(7, generator=g, dtype=F64)
    grads = [torch.autograd.grad((x * w).sum(), (a, c)) for x in (got, want)]
    for x, y in zip(*grads, strict=True):
        torch.testing.assert_close(x, y)


def test_strip_rows_bound_the_strip() -> None:
    assert strip_rows(131072, 131072, 1024) == 64  # at least 64 rows: 64·N entries
    assert strip_rows(8192, 8192, 1024) == 128  # tile²/N rows
    assert strip_rows(26, 26, 3) == 3
    assert strip_rows(5, 100, 64) == 5


def test_unsupported_settings_raise_naming_them() -> None:
    z1, z2 = _views(6, 3, seed=1)
    cases = [
        (OptimalTransport(epsilon=0.5, differentiable=True), InfoNCE(), "differentiable=True"),
        (OptimalTransport(epsilon=0.5, cost=lambda s: 1 - s.logits), InfoNCE(), "callable cost"),
        (OptimalTransport(epsilon=0.5), Hinge(margin=0.1), "objective="),
    ]
    for neg, obj, text in cases:
        loss = ContrastiveLoss(negatives=neg, objective=obj, memory_budget=0)
        with pytest.raises(ValueError, match=text):
            loss(z1, z2)
    # and the automatic choice still materialises them below the budget
    ok = ContrastiveLoss(negatives=OptimalTransport(epsilon=0.5, differentiable=True))
    assert ok.engine_for(12, 12, F64, "cpu").engine == "materialised"
    tiled = ContrastiveLoss(negatives=OptimalTransport(epsilon=0.5), memory_budget=0)
    assert tiled.engine_for(12, 12, F64, "cpu").engine == "tiled"


def test_float32_close_to_float64() -> None:
    z1, z2 = _views(64, 16, seed=12)
    _, til = _engines({"epsilon": 0.1}, 16, temperature=0.2)
    want = _loss_and_grads(til, z1, z2)
    z1f, z2f = (z1.detach().float().requires_grad_(), z2.detach().float().requires_grad_())
    got = _loss_and_grads(til, z1f, z2f)
    for x, y in zip(want, got, strict=True):
        torch.testing.assert_close(y.double(), x, rtol=2e-4, atol=2e-5)


@pytest.mark.filterwarnings("ignore:OptimalTransport. Sinkhorn stopped:RuntimeWarning")
def test_k_subsampled_ot_equals_materialised() -> None:
    """``num_negatives=K`` restricts the mask (inactive columns possible) before the coupling."""
    z1, z2 = _views(12, 5, seed=6)
    neg = {"epsilon": 0.5, "tol": 1e-9, "max_iter": 3000}
    mat, til = _engines(neg, 5, temperature=0.5, num_negatives=6)
    want = mat(z1, z2, generator=torch.Generator().manual_seed(3))
    got = til(z1, z2, generator=torch.Generator().manual_seed(3))
    for x, y in zip(
        [want.detach(), *torch.autograd.grad(want, (z1, z2))],
        [got.detach(), *torch.autograd.grad(got, (z1, z2))],
        strict=True,
    ):
        torch.testing.assert_close(y, x, rtol=1e-6, atol=1e-9)
