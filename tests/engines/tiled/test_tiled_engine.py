"""The tiled engine equals the materialised one, in value and gradient, for every supported
distribution, objective and layout — including tile sizes that do not divide the batch."""

from __future__ import annotations

import math

import pytest
import torch

from hardneg import ContrastiveLoss, negatives, objectives
from hardneg.engines.tiled import TileMask, tiled_lse
from hardneg.engines.tiled.rowmean import tiled_row_mean
from hardneg.negatives.ramp import Ramp
from hardneg.queue import MemoryQueue, QueueLoss
from tests.reference.data import views

DISTRIBUTIONS = {
    "uniform": lambda: negatives.Uniform(),
    "hard": lambda: negatives.Hard(beta=1.5),
    "hard_beta1": lambda: negatives.Hard(beta=1.0),  # 1 + β = 2β: squares instead of exponentials
    "hard_beta02": lambda: negatives.Hard(beta=0.2),  # 1 + β = 6β: a sixth power (MoCo-v2's β)
    "hard_large_beta": lambda: negatives.Hard(beta=40.0),
}
OBJECTIVES = {
    "infonce": lambda: objectives.InfoNCE(),
    "infonce_q": lambda: objectives.InfoNCE(q=64.0),
    "debiased": lambda: objectives.Debiased(0.1),
    "logistic": lambda: objectives.Logistic(base=2.0),
    "mpair": lambda: objectives.LogisticMPair(q=2.0),
    "hinge_mean": lambda: objectives.Hinge(margin=0.5, aggregate="mean"),
    "triplet": lambda: objectives.Triplet(margin=0.3),
    "triplet_mean_difference": lambda: objectives.Triplet(margin=2.0, aggregate="mean_difference"),
}


def _pair(a: ContrastiveLoss, b: ContrastiveLoss, call, inputs):  # type: ignore[no-untyped-def]
    xs = [x.detach().clone().requires_grad_(True) for x in inputs]
    ys = [x.detach().clone().requires_grad_(True) for x in inputs]
    out_a, out_b = call(a, xs), call(b, ys)
    ga = torch.autograd.grad(out_a.loss.sum(), xs)
    gb = torch.autograd.grad(out_b.loss.sum(), ys)
    return out_a, out_b, ga, gb


def _close(out_a, out_b, ga, gb, rtol: float) -> None:  # type: ignore[no-untyped-def]
    torch.testing.assert_close(out_b.loss, out_a.loss, rtol=rtol, atol=rtol)
    for x, y in zip(ga, gb):
        torch.testing.assert_close(y, x, rtol=rtol, atol=rtol)
    assert out_b.diagnostics.get("tiled") == 1.0 and "tiled" not in out_a.diagnostics


@pytest.mark.parametrize("dist", sorted(DISTRIBUTIONS))
@pytest.mark.parametrize("obj", sorted(OBJECTIVES))
@pytest.mark.parametrize(("k", "collision_free"), [(None, False), (5, False), (None, True), (6, True)])
def test_simclr_layout_equals_materialised(dist: str, obj: str, k: int | None, collision_free: bool) -> None:
    z1, z2 = views(b=23, d=6)
    labels = torch.arange(23) % 4
    kw = dict(
        temperature=0.2,
        negatives=DISTRIBUTIONS[dist](),
        objective=OBJECTIVES[obj](),
        reduction="none",
        num_negatives=k,
        collision_free=collision_free,
    )
    mat, til = ContrastiveLoss(**kw), ContrastiveLoss(memory_budget=0, tile_size=10, **kw)

    def call(loss: ContrastiveLoss, xs: list[torch.Tensor]):  # type: ignore[no-untyped-def]
        return loss(xs[0], xs[1], labels=labels, generator=torch.Generator().manual_seed(3), details=True)

    out_a, out_b, ga, gb = _pair(mat, til, call, [z1, z2])
    _close(out_a, out_b, ga, gb, rtol=1e-10)
    for key in ("num_negatives", "ess", "ess_fraction", "pos_cosine"):
        assert out_b.diagnostics[key] == pytest.approx(out_a.diagnostics[key], rel=1e-9)


@pytest.mark.parametrize(("k", "collision_free"), [(None, False), (5, False), (None, True), (6, True)])
def test_hinge_max_equals_materialised(k: int | None, collision_free: bool) -> None:
    """Arora et al.'s k-way hinge: the worst negative found tile by tile, its gradient through it."""
    z1, z2 = views(b=23, d=6)
    labels = torch.arange(23) % 4
    kw = dict(
        temperature=0.2,
        objective=objectives.Hinge(margin=2.0),
        reduction="none",
        num_negatives=k,
        collision_free=collision_free,
    )
    mat, til = ContrastiveLoss(**kw), ContrastiveLoss(memory_budget=0, tile_size=10, **kw)

    def call(loss: ContrastiveLoss, xs: list[torch.Tensor]):  # type: ignore[no-untyped-def]
        return loss(xs[0], xs[1], labels=labels, generator=torch.Generator().manual_seed(3), details=True)

    out_a, out_b, ga, gb = _pair(mat, til, call, [z1, z2])
    # both sides of the kink occur
    assert bool((out_a.per_anchor > 0).any()) and bool((out_a.per_anchor == 0).any())
    _close(out_a, out_b, ga, gb, rtol=1e-10)


@pytest.mark.parametrize("beta", [0.0, 0.8])
@pytest.mark.parametrize(
    "ramp",
    [Ramp(scale=1.0, offset=0.4), Ramp(scale=2.0, offset=0.1), Ramp(scale=1.0, offset=0.0, clip=False)],
)
def test_tiled_row_mean_against_a_float64_rederivation_and_gradcheck(beta: float, ramp: Ramp) -> None:
    """``M_i = Σ_j p_ij h(s_ij − s⁺_i)``, ``p ∝ e^{β s}`` over valid j, written out with loops."""
    g = torch.Generator().manual_seed(5)
    a = torch.randn(6, 3, generator=g, dtype=torch.float64, requires_grad=True)
    c = torch.randn(9, 3, generator=g, dtype=torch.float64, requires_grad=True)
    pos = torch.randn(6, generator=g, dtype=torch.float64, requires_grad=True)
    explicit = torch.rand(6, 9, generator=g) > 0.3
    explicit[:, 0] = True
    rule = TileMask(num_anchors=6, num_candidates=9, excluded=torch.full((6, 1), -1), explicit=explicit)
    got = tiled_row_mean(a, c, pos, beta=beta, ramp=ramp, rule=rule, tile=4)
    for i in range(6):
        js = [j for j in range(9) if explicit[i, j]]
        s = [float(a[i].detach() @ c[j].detach()) for j in js]
        w = [math.exp(beta * (x - max(s))) for x in s]
        h = [
            max(0.0, ramp.scale * (x - float(pos[i].detach())) + ramp.offset)
            if ramp.clip
            else ramp.scale * (x - float(pos[i].detach())) + ramp.offset
            for x in s
        ]
        expected = sum(wi * hi for wi, hi in zip(w, h)) / sum(w)
        assert float(got[i].detach()) == pytest.approx(expected, rel=1e-12)
    assert torch.autograd.gradcheck(
        lambda a, c, p: tiled_row_mean(a, c, p, beta=beta, ramp=ramp, rule=rule, tile=4), (a, c, pos)
    )


@pytest.mark.parametrize("normalize", [True, False])
@pytest.mark.parametrize("tile", [1, 7, 64])
def test_pair_layout_with_an_explicit_mask(normalize: bool, tile: int) -> None:
    g = torch.Generator().manual_seed(0)
    a, p, c = (torch.randn(n, 5, generator=g, dtype=torch.float64) for n in (9, 9, 31))
    mask = torch.rand(9, 31, generator=g) > 0.3
    kw = dict(temperature=0.5, tau_plus=0.05, negatives=negatives.Hard(beta=0.7), normalize=normalize)
    mat, til = ContrastiveLoss(**kw), ContrastiveLoss(memory_budget=0, tile_size=tile, **kw)

    def call(loss: ContrastiveLoss, xs: list[torch.Tensor]):  # type: ignore[no-untyped-def]
        return loss.pair(xs[0], xs[1], xs[2], mask=mask, details=True)

    _close(*_pair(mat, til, call, [a, p, c]), rtol=1e-10)


def test_memory_queue_layout_float32() -> None:
    """MoCo's queue, tiled, in float32: equal to 1e-6 relative, and the keys are enqueued the same."""
    g = torch.Generator().manual_seed(1)
    keys = torch.randn(300, 16, generator=g)
    qa, qb = MemoryQueue(size=512, dim=16), MemoryQueue(size=512, dim=16)
    qa.enqueue(keys)
    qb.enqueue(keys)
    kw = dict(temperature=0.2, negatives=negatives.Hard(beta=0.2))
    mat, til = ContrastiveLoss(**kw), ContrastiveLoss(memory_budget=0, tile_size=128, **kw)
    q, k = torch.randn(24, 16, generator=g), torch.randn(24, 16, generator=g)
    out_a, out_b, ga, gb = _pair(
        mat,
        til,
        lambda loss, xs: QueueLoss(loss, qa if loss is mat else qb)(xs[0], xs[1], details=True),
        [q, k],
    )
    _close(out_a, out_b, ga, gb, rtol=1e-6)
    torch.testing.assert_close(qa.keys, qb.keys)


def test_automatic_choice_follows_the_memory_budget() -> None:
    z1, z2 = views(b=8, d=4)
    assert "tiled" not in ContrastiveLoss()(z1, z2, details=True).diagnostics
    # 16 x 16 float64 matrices take ~8 KiB: a 1 KiB budget tiles, with a tile derived from it
    out = ContrastiveLoss(memory_budget=1024)(z1, z2, details=True)
    assert out.diagnostics["tiled"] == 1.0
    torch.testing.assert_close(out.loss, ContrastiveLoss()(z1, z2))


def test_unsupported_combinations_name_what_to_change() -> None:
    z1, z2 = views(b=6, d=4)
    with pytest.raises(  # OT tiles with detached couplings (tests/engines/tiled/test_coupling.py)
        ValueError, match=r"tiled engine .*OptimalTransport.*differentiable=True.*memory_budget"
    ):
        ot = negatives.OptimalTransport(epsilon=0.5, differentiable=True)
        ContrastiveLoss(memory_budget=0, negatives=ot)(z1, z2)
    with pytest.raises(ValueError, match=r"row-wise .*Hinge.*JensenShannon.*Raise memory_budget"):
        ContrastiveLoss(memory_budget=0, objective=objectives.JensenShannon())(z1, z2)
    with pytest.raises(ValueError, match=r"Hinge\(aggregate='max'\) .* cannot use importance weights"):
        hard = negatives.Hard(beta=1.0)
        ContrastiveLoss(memory_budget=0, negatives=hard, objective=objectives.Hinge())(z1, z2)
    with pytest.raises(ValueError, match=r"memory_budget must be an int >= 0"):
        ContrastiveLoss(memory_budget=-1)
    with pytest.raises(ValueError, match=r"num_negatives must be <= .* min_i N_i = 10"):
        ContrastiveLoss(memory_budget=0, tile_size=4, num_negatives=11)(z1, z2)


def test_tiled_lse_gradcheck_and_empty_rows() -> None:
    g = torch.Generator().manual_seed(2)
    a = torch.randn(5, 3, generator=g, dtype=torch.float64, requires_grad=True)
    c = torch.randn(7, 3, generator=g, dtype=torch.float64, requires_grad=True)
    explicit = torch.rand(5, 7, generator=g) > 0.4
    explicit[2] = False  # an anchor without negatives: −inf, no gradient, no NaN
    rule = TileMask(num_anchors=5, num_candidates=7, excluded=torch.full((5, 1), -1), explicit=explicit)
    lse, counts = tiled_lse(a, c, (2.5, 1.5), rule, tile=3)
    want = torch.logsumexp(
        (a @ c.T).masked_fill(~explicit, float("-inf"))[:, :, None] * torch.tensor([2.5, 1.5]), 1
    )
    torch.testing.assert_close(lse, want)
    assert counts.tolist() == explicit.sum(1).tolist()
    keep = torch.tensor([0, 1, 3, 4])

    def f(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return tiled_lse(x, y, (2.5, 1.5), rule, tile=3)[0][keep]

    assert torch.autograd.gradcheck(f, (a, c))
    lse[keep].sum().backward()
    assert torch.isfinite(a.grad).all() and torch.isfinite(c.grad).all()


@pytest.mark.parametrize("tile", [1, 4, 7, 16])
@pytest.mark.parametrize("labelled", [False, True])
def test_symmetric_lse_equals_the_unsymmetric_pass_and_gradcheck(tile: int, labelled: bool) -> None:
    from hardneg.engines.tiled.symmetric import tiled_lse_symmetric

    g = torch.Generator().manual_seed(5)
    b = 6
    v = torch.randn(2 * b, 3, generator=g, dtype=torch.float64, requires_grad=True)
    idx = torch.arange(2 * b)
    labels = torch.cat([torch.arange(b) % 3] * 2) if labelled else None
    rule = TileMask(
        num_anchors=2 * b,
        num_candidates=2 * b,
        excluded=torch.stack([idx, (idx + b) % (2 * b)], dim=1),
        anchor_labels=labels,
        candidate_labels=labels,
        collision_free=labelled,
    )
    exps = (2.5, 1.5, 3.0)
    sym, n_sym = tiled_lse_symmetric(v, 1 / 0.3, exps, rule, tile=tile)
    # a plain float64 re-derivation: the masked logsumexp of the full matrix per exponent
    valid = torch.ones(2 * b, 2 * b, dtype=torch.bool)
    valid[idx, idx] = False
    valid[idx, (idx + b) % (2 * b)] = False
    if labels is not None:
        valid &= labels[:, None] != labels[None, :]
    s = (v @ v.T / 0.3).masked_fill(~valid, float("-inf"))
    want = torch.stack([torch.logsumexp(a * s, dim=1) for a in exps], dim=1)
    torch.testing.assert_close(sym, want, rtol=1e-12, atol=1e-12)
    assert n_sym.tolist() == valid.sum(1).tolist()
    weights = torch.randn(2 * b, 3, generator=g, dtype=torch.float64)
    (gs,) = torch.autograd.grad((sym * weights).sum(), v)
    (gw,) = torch.autograd.grad((want * weights).sum(), v)
    torch.testing.assert_close(gs, gw, rtol=1e-12, atol=1e-12)
    assert torch.autograd.gradcheck(lambda x: tiled_lse_symmetric(x, 2.0, exps, rule, tile=tile)[0], (v,))


def test_symmetric_lse_refuses_an_asymmetric_mask() -> None:
    from hardneg.engines.tiled.symmetric import tiled_lse_symmetric

    v = torch.randn(4, 2)
    rule = TileMask(
        num_anchors=4,
        num_candidates=4,
        excluded=torch.full((4, 1), -1),
        explicit=torch.ones(4, 4, dtype=torch.bool),
    )
    with pytest.raises(ValueError, match="symmetric mask"):
        tiled_lse_symmetric(v, 1.0, (1.0,), rule, tile=2)
    rule = TileMask(num_anchors=3, num_candidates=3, excluded=torch.full((3, 1), -1))
    with pytest.raises(ValueError, match="rule must be square over the 4 rows"):
        tiled_lse_symmetric(v, 1.0, (1.0,), rule, tile=2)


def test_simclr_layout_takes_the_symmetric_pass_unless_subsampled(monkeypatch: pytest.MonkeyPatch) -> None:
    import hardneg.engines.tiled.engine as engine

    calls: list[str] = []
    real_sym, real = engine.tiled_lse_symmetric, engine.tiled_lse
    monkeypatch.setattr(
        engine, "tiled_lse_symmetric", lambda *a, **k: calls.append("sym") or real_sym(*a, **k)
    )
    monkeypatch.setattr(engine, "tiled_lse", lambda *a, **k: calls.append("plain") or real(*a, **k))
    z1, z2 = views(b=9, d=4)
    ContrastiveLoss(memory_budget=0, tile_size=4, negatives=negatives.Hard(beta=1.0))(z1, z2)
    ContrastiveLoss(memory_budget=0, tile_size=4, num_negatives=5)(z1, z2)
    assert calls == ["sym", "plain"]


@pytest.mark.parametrize("dist", ["uniform", "hard_beta1", "hard_beta02", "hard"])
def test_simclr_layout_float32_small_temperature(dist: str) -> None:
    """The symmetric pass in float32 at t = 0.05 (logits up to 20): equal to the materialised engine
    to 1e-5 relative in value and gradient, with tiles that do not divide the 2B = 150 views."""
    g = torch.Generator().manual_seed(7)
    z1 = torch.randn(75, 32, generator=g)
    z2 = z1 + 0.3 * torch.randn(75, 32, generator=g)
    kw = dict(temperature=0.05, tau_plus=0.05, negatives=DISTRIBUTIONS[dist]())
    mat, til = ContrastiveLoss(**kw), ContrastiveLoss(memory_budget=0, tile_size=64, **kw)

    def call(loss: ContrastiveLoss, xs: list[torch.Tensor]):  # type: ignore[no-untyped-def]
        return loss(xs[0], xs[1], details=True)

    out_a, out_b, ga, gb = _pair(mat, til, call, [z1, z2])
    assert torch.isfinite(out_b.loss) and all(torch.isfinite(x).all() for x in gb)
    _close(out_a, out_b, ga, gb, rtol=1e-5)


@pytest.mark.slow
@pytest.mark.skipif(
    not (__import__("shutil").which("g++") or __import__("shutil").which("c++")),
    reason="torch.compile on a CPU needs a C++ compiler",
)
def test_compiled_tiles_equal_the_eager_engine() -> None:
    """compile_tiles=True (torch.compile'd fused block kernels) against the eager tiled engine and the
    materialised one, in float64, for the symmetric SimCLR pass and the plain pass (K-subsampled)."""
    g = torch.Generator().manual_seed(11)
    z1 = torch.randn(21, 6, generator=g, dtype=torch.float64)
    z2 = z1 + 0.4 * torch.randn(21, 6, generator=g, dtype=torch.float64)
    for kw in ({"negatives": negatives.Hard(beta=0.7), "tau_plus": 0.1}, {"num_negatives": 9}):
        mat = ContrastiveLoss(temperature=0.2, **kw)  # type: ignore[arg-type]
        comp = ContrastiveLoss(temperature=0.2, memory_budget=0, tile_size=16, compile_tiles=True, **kw)  # type: ignore[arg-type]

        def call(loss: ContrastiveLoss, xs: list[torch.Tensor]):  # type: ignore[no-untyped-def]
            return loss(xs[0], xs[1], generator=torch.Generator().manual_seed(4), details=True)

        _close(*_pair(mat, comp, call, [z1, z2]), rtol=1e-10)
