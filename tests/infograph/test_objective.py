"""InfoGraph's local–global loss: the paper's formula (default) and the authors' released code (option).

References are written here, separately from the implementation: a float64 re-derivation of
Robinson et al. (ICLR 2021), App. B.2 with Chuang et al.'s debiasing, node by node; and a
transcription of the released ``local_global_loss_`` / ``get_*_expectation('JSD_hard')``
(HCL's graph code, built on InfoGraph's) with its 0/1 mask products.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from hardneg.infograph.objective import InfoGraphLoss, local_global_mask
from hardneg.infograph.released import RELEASED_SWITCHES, released_local_global_loss
from hardneg.negatives import Hard, OptimalTransport, Uniform
from hardneg.objectives import InfoNCE, JensenShannon

LOG2 = math.log(2.0)


def _batch(seed: int, sizes: tuple[int, ...] = (3, 5, 2, 4), d: int = 6, scale: float = 1.0):
    g = torch.Generator().manual_seed(seed)
    batch = torch.cat([torch.full((n,), i, dtype=torch.long) for i, n in enumerate(sizes)])
    local = (scale * torch.randn(len(batch), d, generator=g, dtype=torch.float64)).requires_grad_()
    global_ = (scale * torch.randn(len(sizes), d, generator=g, dtype=torch.float64)).requires_grad_()
    return local, global_, batch


def _sp(x: float) -> float:
    return max(x, 0.0) + math.log1p(math.exp(-abs(x)))


# -- the paper's formula, node by node ------------------------------------------------------------


def paper_loss(local, global_, batch, *, beta: float, tau: float, rescale: bool = True) -> float:
    """mean_u sp(−s⁺_u) + max((Σ_j q_uj sp(s_uj) − τ sp(s⁺_u)) / (1 − τ), 0), q_uj ∝ e^{β r_uj}."""
    L, G, y = local.detach().tolist(), global_.detach().tolist(), batch.tolist()
    s = [[sum(a * b for a, b in zip(li, gj)) for gj in G] for li in L]
    valid = [[j for j in range(len(G)) if j != y[u]] for u in range(len(L))]
    m = max(abs(s[u][j]) for u in range(len(L)) for j in valid[u])
    total = 0.0
    for u in range(len(L)):
        r = {j: (2 * s[u][j] / m if rescale else s[u][j]) for j in valid[u]}
        top = max(r.values())
        e = {j: math.exp(beta * (r[j] - top)) for j in valid[u]}
        z = sum(e.values())
        neg = sum(e[j] / z * _sp(s[u][j]) for j in valid[u])
        pos = s[u][y[u]]
        neg = max((neg - tau * _sp(pos)) / (1 - tau), 0.0)
        total += _sp(-pos) + neg
    return total / len(L)


@pytest.mark.parametrize("beta", [0.0, 0.5, 2.0, 10.0])
@pytest.mark.parametrize("tau", [0.0, 0.1, 0.3])
def test_default_loss_equals_the_paper_formula(beta: float, tau: float) -> None:
    for seed in range(3):
        local, global_, batch = _batch(seed)
        neg = Hard(beta=beta, rescale=True) if beta else Uniform()
        got = InfoGraphLoss(negatives=neg, tau_plus=tau)(local, global_, batch)
        expected = paper_loss(local, global_, batch, beta=beta, tau=tau)
        assert float(got.detach()) == pytest.approx(expected, rel=1e-12)


def test_uniform_infograph_is_sun_et_al_jsd_with_log4() -> None:
    local, global_, batch = _batch(4)
    s = local @ global_.T
    own = F.one_hot(batch, global_.shape[0]).bool()
    pos = s[own]
    neg = F.softplus(s[~own].view(len(batch), -1)).mean(dim=1)
    expected = (F.softplus(-pos) + neg).mean() - 2 * LOG2
    got = InfoGraphLoss(subtract_log4=True)(local, global_, batch)
    torch.testing.assert_close(got, expected, rtol=1e-12, atol=0)


def test_gradcheck_hard_debiased() -> None:
    local, global_, batch = _batch(5, sizes=(2, 3, 2), d=3)
    loss = InfoGraphLoss(negatives=Hard(beta=1.5, rescale=True), tau_plus=0.2)
    assert torch.autograd.gradcheck(lambda a, b: loss(a, b, batch), (local, global_))


def test_hard_weights_favour_the_closest_graphs() -> None:
    local, global_, batch = _batch(6)
    from hardneg.scores import pair_scores

    sc = pair_scores(local, global_[batch], global_, temperature=1.0, normalize=False,
                     mask=local_global_mask(batch, global_.shape[0]))
    p = Hard(beta=5.0, rescale=True).weigh(sc).probabilities()
    masked = sc.logits.masked_fill(~sc.mask, -math.inf)
    assert torch.equal(p.argmax(dim=1), masked.argmax(dim=1))


# -- the released code, transcribed -----------------------------------------------------------------


def _released_reference(l_enc, g_enc, batch, beta: float) -> torch.Tensor:
    """Transcription of HCL's graph loss with measure 'JSD_hard' (tau_plus left at its default 0.5)."""
    tau_plus = 0.5
    num_graphs, num_nodes = g_enc.shape[0], l_enc.shape[0]
    pos_mask = torch.zeros((num_nodes, num_graphs), dtype=torch.float64)
    neg_mask = torch.ones((num_nodes, num_graphs), dtype=torch.float64)
    for nodeidx, graphidx in enumerate(batch.tolist()):
        pos_mask[nodeidx][graphidx] = 1.0
        neg_mask[nodeidx][graphidx] = 0.0
    res = torch.mm(l_enc, g_enc.t())
    p = res * pos_mask
    ep = LOG2 - F.softplus(-p) - (tau_plus / (1 - tau_plus)) * (F.softplus(-p) + p)
    e_pos = ep.sum() / num_nodes
    q = res * neg_mask
    if beta == 0:
        eq = (F.softplus(-q) + q - LOG2) / (1 - tau_plus)
    else:
        eq = F.softplus(-q) + q
        rw = -2 * q / max(q.max(), q.min().abs())
        rw = (beta * rw).exp()
        rw = rw / rw.mean(dim=1).view(-1, 1)
        eq = rw * eq / (1 - tau_plus) - LOG2
    e_neg = eq.sum() / (num_nodes * (num_graphs - 1))
    return e_neg - e_pos


@pytest.mark.parametrize("beta", [0.0, 1.0, 2.0, 10.0])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_released_switches_on_match_the_released_code(beta: float, seed: int) -> None:
    local, global_, batch = _batch(seed, sizes=(4, 1, 6, 3, 2), scale=0.7)
    ours = released_local_global_loss(local, global_, batch, beta=beta, tau_plus=0.05)
    ref = _released_reference(local, global_, batch, beta)
    assert float(ours.detach()) == pytest.approx(float(ref.detach()), rel=1e-6)
    g1 = torch.autograd.grad(ours, (local, global_))
    g2 = torch.autograd.grad(ref, (local, global_))
    for a, b in zip(g1, g2):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-12)


@pytest.mark.parametrize("beta", [0.0, 1.0, 2.0])
@pytest.mark.parametrize("tau", [0.0, 0.1])
def test_released_switches_off_are_the_paper_formula(beta: float, tau: float) -> None:
    local, global_, batch = _batch(7)
    off = dict.fromkeys(RELEASED_SWITCHES, False)
    ours = released_local_global_loss(local, global_, batch, beta=beta, tau_plus=tau, **off)
    neg = Hard(beta=beta, rescale=True) if beta else Uniform()
    default = InfoGraphLoss(negatives=neg, tau_plus=tau, subtract_log4=True)
    out = default(local, global_, batch, details=True)
    assert out.diagnostics.get("clamp_fraction", 0.0) == 0.0  # the floor does not bind here
    torch.testing.assert_close(ours, out.loss, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("switch", RELEASED_SWITCHES)
def test_each_switch_changes_the_loss(switch: str) -> None:
    local, global_, batch = _batch(8)
    off = dict.fromkeys(RELEASED_SWITCHES, False)
    base = released_local_global_loss(local, global_, batch, beta=1.0, tau_plus=0.1, **off)
    on = {**off, switch: True}
    flipped = released_local_global_loss(local, global_, batch, beta=1.0, tau_plus=0.1, **on)
    assert abs(float(base) - float(flipped)) > 1e-4
    gb = torch.autograd.grad(base, local)[0]
    gf = torch.autograd.grad(flipped, local)[0]
    if switch != "masked_entries":  # every switch but this one changes the gradient for sure
        assert (gb - gf).abs().max() > 1e-6


def test_released_code_depends_on_batch_size_ours_does_not() -> None:
    """At an uninformative discriminator (S ≡ 0) InfoGraph's JSD is 0 for any batch; the released
    code (τ⁺ = 0.5) gives B·log 2 (its masked zeros: (B − 1)·log 2) plus B/(B − 1)·log 2."""
    for b in (2, 4, 8):
        local = torch.zeros(3 * b, 4, dtype=torch.float64)
        global_ = torch.zeros(b, 4, dtype=torch.float64)
        batch = torch.arange(b).repeat_interleave(3)
        ours = InfoGraphLoss(subtract_log4=True)(local, global_, batch)
        assert float(ours) == pytest.approx(0.0, abs=1e-15)
        rel = released_local_global_loss(local, global_, batch, beta=1.0)
        assert float(rel) == pytest.approx((b + b / (b - 1)) * LOG2, rel=1e-12)


def test_released_fixed_tau_plus_ignores_the_given_prior() -> None:
    local, global_, batch = _batch(9)
    a = released_local_global_loss(local, global_, batch, beta=1.0, tau_plus=0.0)
    b = released_local_global_loss(local, global_, batch, beta=1.0, tau_plus=0.3)
    assert float(a) == float(b)
    c = released_local_global_loss(local, global_, batch, beta=1.0, tau_plus=0.3, fixed_tau_plus=False)
    assert float(c) != float(a)


# -- other distributions, objectives, options, robustness ----------------------------------------


def test_any_distribution_and_objective_work_on_graphs() -> None:
    local, global_, batch = _batch(10)
    labels = torch.tensor([0, 1, 0, 1])
    for loss in (
        InfoGraphLoss(negatives=OptimalTransport(epsilon=0.5)),
        InfoGraphLoss(num_negatives=2),
        InfoGraphLoss(collision_free=True),
        InfoGraphLoss(objective=InfoNCE()),
        InfoGraphLoss(objective=JensenShannon(tau_plus=0.25)),
    ):
        value = loss(local, global_, batch, labels=labels, generator=torch.Generator().manual_seed(0))
        assert torch.isfinite(value)
        (gl,) = torch.autograd.grad(value, local)
        assert torch.isfinite(gl).all()


def test_collision_free_removes_same_class_graphs() -> None:
    local, global_, batch = _batch(11)
    labels = torch.tensor([0, 1, 0, 1])
    out = InfoGraphLoss(collision_free=True)(local, global_, batch, labels=labels, details=True)
    # each node keeps only the graphs of the other class: 2 negatives out of 3
    uniform_other = InfoGraphLoss()(local, global_, batch, labels=labels, details=True)
    assert float(out.loss) != float(uniform_other.loss)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_large_scores_and_beta_stay_finite(dtype: torch.dtype) -> None:
    local, global_, batch = _batch(12, scale=30.0)
    local = local.detach().to(dtype).requires_grad_()
    global_ = global_.detach().to(dtype).requires_grad_()
    for loss in (InfoGraphLoss(negatives=Hard(beta=50.0, rescale=True), tau_plus=0.4),
                 InfoGraphLoss(negatives=Hard(beta=1000.0, rescale=True))):
        value = loss(local, global_, batch)
        assert torch.isfinite(value)
        grads = torch.autograd.grad(value, (local, global_))
        assert all(torch.isfinite(g).all() for g in grads)


def test_empty_graph_and_isolated_nodes_are_fine() -> None:
    # graph 1 has no nodes (its pooled embedding is zero): it is still a valid negative
    local, _, _ = _batch(13, sizes=(3, 2))
    global_ = torch.randn(3, 6, dtype=torch.float64)
    global_[1] = 0.0
    batch = torch.tensor([0, 0, 0, 2, 2])
    assert torch.isfinite(InfoGraphLoss()(local, global_, batch))


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (lambda l, g, b: (l, g[:1], torch.zeros_like(b)), r"at least 2 graphs .* got 1"),
        (lambda l, g, b: (l, g, b + 10), r"outside \[0, 4\)"),
        (lambda l, g, b: (l, g, b[:-1]), r"batch must have shape"),
        (lambda l, g, b: (l, g[:, :3], b), r"same dimension"),
        (lambda l, g, b: (l, g, b.float()), r"integer tensor"),
        (lambda l, g, b: (l[:0], g, b[:0]), r"no nodes"),
    ],
)
def test_bad_batches_get_clear_errors(args, match: str) -> None:
    local, global_, batch = _batch(14)
    with pytest.raises(ValueError, match=match):
        InfoGraphLoss()(*args(local, global_, batch))
    if "no nodes" not in match:
        with pytest.raises(ValueError, match=match):
            released_local_global_loss(*args(local, global_, batch), beta=1.0)


def test_tau_plus_with_a_custom_objective_is_refused() -> None:
    with pytest.raises(ValueError, match="tau_plus and subtract_log4 configure the default"):
        InfoGraphLoss(objective=InfoNCE(), tau_plus=0.1)
    with pytest.raises(ValueError, match="labels must be a tensor of shape"):
        local, global_, batch = _batch(15)
        InfoGraphLoss()(local, global_, batch, labels=torch.tensor([0, 1]))


def test_default_value_is_infographs_plus_2_log_2_with_the_same_gradient() -> None:
    """The documented difference: ``InfoGraphLoss()`` = InfoGraph's value + 2 log 2, same gradients."""
    local, global_, batch = _batch(5)
    a = local.clone().requires_grad_(True)
    b = local.clone().requires_grad_(True)
    plain = InfoGraphLoss()(a, global_, batch)
    infograph = InfoGraphLoss(subtract_log4=True)(b, global_, batch)
    gap = torch.tensor(2 * LOG2, dtype=plain.dtype)
    torch.testing.assert_close(plain - infograph, gap, rtol=0, atol=1e-12)
    plain.backward()
    infograph.backward()
    torch.testing.assert_close(a.grad, b.grad, rtol=0, atol=0)
