"""Entropic-OT negatives (Jiang et al., arXiv:2111.03169, §VI) against POT and a float64 reference."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch

from hardneg import ContrastiveLoss, simclr_scores
from hardneg.functional import loss_from_scores
from hardneg.negatives import OptimalTransport, Subsample, sinkhorn_log
from hardneg.objectives import Debiased, InfoNCE
from tests.reference.data import views
from tests.reference.ot import reference_coupling

ot = pytest.importorskip("ot")
METHODS = ("stabilized", "log")


def _sphere(n: int, d: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.nn.functional.normalize(torch.randn(n, d, generator=g, dtype=torch.float64), dim=1)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("eps", [1.0, 0.3, 0.1])
def test_unmasked_coupling_matches_pot(method: str, eps: float) -> None:
    x, y = _sphere(12, 4, 0), _sphere(15, 4, 1)
    cost = torch.cdist(x, y) ** 2
    a, b = np.full(12, 1 / 12), np.full(15, 1 / 15)
    expected = ot.sinkhorn(a, b, cost.numpy(), eps, stopThr=1e-13, numItermax=200000)
    log_a = torch.full((12,), -math.log(12), dtype=torch.float64)
    log_b = torch.full((15,), -math.log(15), dtype=torch.float64)
    res = sinkhorn_log(-cost / eps, log_a, log_b, tol=1e-12, max_iter=200000, method=method)
    p = res.log_coupling(-cost / eps).exp()
    assert res.converged
    # conditional couplings P(j|i) = 12 P_ij agree to 1e-5
    np.testing.assert_allclose(12 * p.numpy(), 12 * expected, atol=1e-5, rtol=0)
    np.testing.assert_allclose(p.sum(0).numpy(), b, atol=1e-12)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("tol", [1e-3, 1e-6])
def test_marginals_hold_to_requested_tolerance(method: str, tol: float) -> None:
    x = _sphere(20, 3, 2)
    cost = torch.cdist(x, x) ** 2
    log_a = torch.full((20,), -math.log(20), dtype=torch.float64)
    res = sinkhorn_log(-cost / 0.05, log_a, log_a, tol=tol, max_iter=10000, method=method)
    p = res.log_coupling(-cost / 0.05).exp()
    assert res.converged and res.marginal_error <= tol
    row_err = float((p.sum(1) - 1 / 20).abs().sum())
    assert row_err <= tol and abs(row_err - res.marginal_error) < 1e-12
    assert float((p.sum(0) - 1 / 20).abs().max()) < 1e-12


@pytest.mark.parametrize("method", METHODS)
def test_simclr_masked_coupling_matches_reference_and_pot(method: str) -> None:
    z1, z2 = views(b=5, d=4)
    eps = 0.3
    scores = simclr_scores(z1, z2, temperature=0.5)
    dist = OptimalTransport(epsilon=eps, tol=1e-12, max_iter=100000, method=method)
    ell = dist.log_weights(scores)
    assert ell is not None
    v = torch.nn.functional.normalize(torch.cat([z1, z2]), dim=1)
    cost = (torch.cdist(v, v) ** 2).numpy()
    mask = scores.mask.numpy()
    ref = reference_coupling(cost, mask, eps)
    ref_w = mask.sum(1, keepdims=True) * ref / ref.sum(1, keepdims=True)
    np.testing.assert_allclose(ell.exp().numpy(), ref_w, atol=1e-9)
    # POT with a large finite cost on the forbidden entries (exp underflows to exactly 0)
    n = cost.shape[0]
    pot = ot.sinkhorn(np.full(n, 1 / n), np.full(n, 1 / n), np.where(mask, cost, 1e6), eps, stopThr=1e-13)
    pot_w = mask.sum(1, keepdims=True) * pot / pot.sum(1, keepdims=True)
    np.testing.assert_allclose(ell.exp().numpy(), pot_w, atol=1e-5)
    assert bool(torch.isinf(ell[~scores.mask]).all())
    torch.testing.assert_close(ell.exp().sum(1), scores.num_valid())
    assert dist.weigh(scores).info["ot_converged"] == 1.0


def test_default_cost_is_authors_squared_euclidean_and_exp_cost() -> None:
    z1, z2 = views(b=4, d=3)
    scores = simclr_scores(z1, z2, temperature=0.2)
    v = torch.nn.functional.normalize(torch.cat([z1, z2]), dim=1)
    d2 = torch.cdist(v, v) ** 2
    from hardneg.negatives import ground_cost

    torch.testing.assert_close(ground_cost(scores), d2, atol=1e-12, rtol=0)
    torch.testing.assert_close(ground_cost(scores, "exp", kappa=1.5), torch.exp(d2 - 1.5), atol=1e-12, rtol=0)
    # "exp" cost and an equivalent callable give the same weights
    a = OptimalTransport(epsilon=0.5, cost="exp", kappa=1.5).log_weights(scores)
    b = OptimalTransport(epsilon=0.5, cost=lambda s: torch.exp(ground_cost(s) - 1.5)).log_weights(scores)
    assert a is not None and b is not None
    torch.testing.assert_close(a, b)


def test_large_epsilon_is_uniform_and_weights_are_constants_by_default() -> None:
    z1, z2 = views(b=4, d=3)
    z1.requires_grad_(True)
    scores = simclr_scores(z1, z2, temperature=0.5)
    ell = OptimalTransport(epsilon=1e6).log_weights(scores)
    assert ell is not None and not ell.requires_grad
    ones = torch.ones(int(scores.mask.sum()), dtype=torch.float64)
    torch.testing.assert_close(ell[scores.mask].exp(), ones, atol=1e-5, rtol=0)
    # with constant weights the loss gradient equals that of InfoNCE with those fixed weights
    dist = OptimalTransport(epsilon=0.2)
    loss = loss_from_scores(scores, negatives=dist, objective=InfoNCE()).loss
    (grad,) = torch.autograd.grad(loss, z1)
    w = dist.log_weights(scores)
    assert w is not None
    s = simclr_scores(z1, z2, temperature=0.5)
    manual = torch.nn.functional.softplus(torch.logsumexp(s.logits + w, 1) - s.positive).mean()
    (grad2,) = torch.autograd.grad(manual, z1)
    torch.testing.assert_close(grad, grad2)


@pytest.mark.parametrize("method", METHODS)
def test_small_epsilon_and_temperature_stay_finite(method: str) -> None:
    z1, z2 = views(b=32, d=16, dtype=torch.float32)
    z1.requires_grad_(True)
    tol = 1e-4 if method == "stabilized" else 1e-3  # the plain log-domain solver is slow per iteration
    loss_fn = ContrastiveLoss(
        temperature=0.05, negatives=OptimalTransport(epsilon=0.01, tol=tol, max_iter=5000, method=method)
    )
    out = loss_fn(z1, z2, details=True)
    assert torch.isfinite(out.loss) and torch.isfinite(out.per_anchor).all()
    out.loss.backward()
    assert z1.grad is not None and torch.isfinite(z1.grad).all()
    assert out.diagnostics["ot_converged"] == 1.0 and out.diagnostics["ot_marginal_error"] <= tol


def test_non_convergence_warns_and_is_reported() -> None:
    z1, z2 = views(b=16, d=8, dtype=torch.float32)
    dist = OptimalTransport(epsilon=0.01, tol=1e-9, max_iter=3)
    loss_fn = ContrastiveLoss(temperature=0.5, negatives=dist)
    with pytest.warns(RuntimeWarning, match=r"max_iter=3 .*tol=1e-09"):
        out = loss_fn(z1, z2, details=True)
    assert out.diagnostics["ot_converged"] == 0.0
    assert out.diagnostics["ot_iterations"] == 3.0
    assert out.diagnostics["ot_marginal_error"] > 1e-9


def test_batched_sinkhorn_equals_per_problem() -> None:
    x = torch.stack([torch.cdist(_sphere(7, 3, s), _sphere(9, 3, s + 10)) ** 2 for s in range(3)])
    log_a = torch.full((3, 7), -math.log(7), dtype=torch.float64)
    log_b = torch.full((3, 9), -math.log(9), dtype=torch.float64)
    batched = sinkhorn_log(-x / 0.2, log_a, log_b, tol=1e-12, max_iter=10000)
    for i in range(3):
        single = sinkhorn_log(-x[i] / 0.2, log_a[i], log_b[i], tol=1e-12, max_iter=10000)
        got = batched.log_coupling(-x / 0.2)[i].exp()
        torch.testing.assert_close(got, single.log_coupling(-x[i] / 0.2).exp(), atol=1e-10, rtol=0)


def test_inactive_columns_and_subsample_composition() -> None:
    """Candidates valid for no anchor are left out of the marginals; composes with Subsample."""
    g = torch.Generator().manual_seed(0)
    a, p, c = (torch.randn(n, 4, generator=g, dtype=torch.float64) for n in (6, 6, 10))
    from hardneg import pair_scores

    mask = torch.ones(6, 10, dtype=torch.bool)
    mask[:, 7:] = False  # three unused candidates
    mask[torch.arange(6), torch.arange(6)] = False
    scores = pair_scores(a, p, c, temperature=0.5, mask=mask)
    dist = OptimalTransport(epsilon=0.4, tol=1e-12, max_iter=100000)
    ell = dist.log_weights(scores)
    assert ell is not None and torch.isfinite(ell[mask]).all() and torch.isinf(ell[~mask]).all()
    an, cn = torch.nn.functional.normalize(a, dim=1), torch.nn.functional.normalize(c, dim=1)
    cost = (torch.cdist(an, cn) ** 2).numpy()
    ref = reference_coupling(cost[:, :7], mask[:, :7].numpy(), 0.4)
    ref_w = mask[:, :7].sum(1, keepdim=True).numpy() * ref / ref.sum(1, keepdims=True)
    np.testing.assert_allclose(ell[:, :7].exp().numpy(), ref_w, atol=1e-9)
    gen = torch.Generator().manual_seed(1)
    sub = Subsample(num_negatives=3, base=OptimalTransport(epsilon=0.5, max_iter=200), generator=gen)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a 3-sparse mask may admit no uniform coupling
        out = loss_from_scores(scores, negatives=sub, objective=Debiased(0.1), diagnostics=True)
    assert torch.isfinite(out.loss) and "ot_iterations" in out.diagnostics


@pytest.mark.parametrize("method", METHODS)
def test_differentiable_gradcheck(method: str) -> None:
    z1, z2 = views(b=3, d=3)
    z1.requires_grad_(True)
    z2.requires_grad_(True)
    dist = OptimalTransport(epsilon=0.5, tol=1e-300, max_iter=15, differentiable=True, method=method)

    def f(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return loss_from_scores(simclr_scores(x, y, temperature=0.5), negatives=dist).per_anchor

    assert torch.autograd.gradcheck(f, (z1, z2))
    with pytest.warns(RuntimeWarning, match="max_iter=15"):
        ell = dist.log_weights(simclr_scores(z1, z2, temperature=0.5))
    assert ell is not None and ell.requires_grad


def test_bad_arguments_name_parameter_constraint_and_value() -> None:
    with pytest.raises(ValueError, match=r"epsilon must be a finite number > 0, got 0"):
        OptimalTransport(epsilon=0)
    with pytest.raises(ValueError, match=r"epsilon must be a finite number > 0, got -0.1"):
        OptimalTransport(epsilon=-0.1)
    with pytest.raises(TypeError, match="epsilon must be a real number"):
        OptimalTransport(epsilon="0.1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"cost must be one of \('sqeuclidean', 'exp'\).*'l1'"):
        OptimalTransport(epsilon=0.1, cost="l1")
    with pytest.raises(ValueError, match=r"max_iter must be an int >= 1, got 0"):
        OptimalTransport(epsilon=0.1, max_iter=0)
    with pytest.raises(ValueError, match=r"tol must be a finite number > 0"):
        OptimalTransport(epsilon=0.1, tol=0.0)
    with pytest.raises(ValueError, match=r"method must be one of"):
        OptimalTransport(epsilon=0.1, method="fast")
    z1, z2 = views(b=3)
    bad = OptimalTransport(epsilon=0.1, cost=lambda s: torch.zeros(2, 2))
    with pytest.raises(ValueError, match=r"cost callable must return .*shape \(6, 6\), got \(2, 2\)"):
        bad.log_weights(simclr_scores(z1, z2, temperature=0.5))


def test_the_cost_scale_against_jiang_et_al_and_the_equivalent_tilt() -> None:
    """The default cost is ‖â − ĉ‖² = 2 − 2cos: twice Jiang et al.'s ½‖f(x) − f(x⁻)‖² (eq. 7), so
    ``epsilon=1`` here is their ε = 0.5, and the kernel is the tilt β s with β = 2t/ε (float64, by hand)."""
    from hardneg.negatives.ot import ot_log_kernel
    from hardneg.scores import simclr_scores

    torch.manual_seed(0)
    t = 0.5
    z1, z2 = torch.randn(5, 7, dtype=torch.float64), torch.randn(5, 7, dtype=torch.float64)
    scores = simclr_scores(z1, z2, temperature=t)
    a = torch.nn.functional.normalize(torch.cat([z1, z2]), dim=1)
    paper_cost = 0.5 * torch.cdist(a, a) ** 2  # ½‖f(x) − f(x⁻)‖² on normalised outputs
    k = ot_log_kernel(scores, epsilon=1.0)
    m = scores.mask
    # equal up to an additive constant on the valid entries: the Gibbs kernel of the paper at ε = 0.5
    diff = (k - (-paper_cost / 0.5))[m]
    assert torch.allclose(diff, diff[0].expand_as(diff), atol=1e-12)
    # and the tilt exp(β s) with β = 2t/ε = 1 here: the hard arm's β at t = 0.5
    assert torch.allclose(k[m], (2 * t / 1.0) * scores.logits[m], atol=1e-12)
