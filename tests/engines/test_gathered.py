"""The gathered engine (K-subsampled negatives at O(A·K·d)) equals the materialised and the tiled
engines — values, gradients and diagnostics, float64 — because all three draw the same K negatives
for the same generator."""

from __future__ import annotations

import math

import pytest
import torch

from hardneg import ContrastiveLoss, negatives, objectives
from hardneg.engines.gathered import gathered_logits
from hardneg.negatives import Subsample
from hardneg.queue import MemoryQueue, QueueLoss

CASES = {
    "uniform": {},
    "hard": {"negatives": negatives.Hard(beta=1.0)},
    "debiased": {"tau_plus": 0.1},
    "hard_debiased": {"negatives": negatives.Hard(beta=1.0), "tau_plus": 0.1},
    "collision_free": {"collision_free": True},
    "hard_collision_free": {"negatives": negatives.Hard(beta=1.0), "collision_free": True},
}
ENGINES = {
    "gathered": {"engine": "gathered"},
    "materialised": {"engine": "materialised"},
    "tiled": {"engine": "tiled", "tile_size": 7},
}
DIAGNOSTICS = ("num_negatives", "ess", "ess_fraction", "pos_cosine", "neg_cosine", "neg_cosine_weighted")


def _data(seed: int = 0, b: int = 13, d: int = 5) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    z1 = torch.randn(b, d, generator=g, dtype=torch.float64)
    z2 = z1 + 0.5 * torch.randn(b, d, generator=g, dtype=torch.float64)
    labels = torch.randint(-1, 4, (b,), generator=g)  # -1: unknown, kept as a negative
    return z1, z2, labels


def _run(engine: str, call, inputs: list[torch.Tensor], **kw):  # type: ignore[no-untyped-def]
    loss_fn = ContrastiveLoss(temperature=0.3, reduction="none", **ENGINES[engine], **kw)
    xs = [x.detach().clone().requires_grad_(True) for x in inputs]
    out = call(loss_fn, xs)
    grads = torch.autograd.grad(out.per_anchor.sum(), xs)
    return out, grads


def _all_equal(call, inputs: list[torch.Tensor], **kw) -> dict[str, object]:  # type: ignore[no-untyped-def]
    results = {engine: _run(engine, call, inputs, **kw) for engine in ENGINES}
    (ref, ref_grads) = results["materialised"]
    for engine in ("gathered", "tiled"):
        out, grads = results[engine]
        torch.testing.assert_close(out.per_anchor, ref.per_anchor, rtol=1e-6, atol=1e-9)
        for g, h in zip(grads, ref_grads, strict=True):
            torch.testing.assert_close(g, h, rtol=1e-6, atol=1e-9)
        for key in DIAGNOSTICS if engine == "gathered" else DIAGNOSTICS[:4]:
            assert out.diagnostics[key] == pytest.approx(ref.diagnostics[key], rel=1e-9, abs=1e-12), key
    gathered = results["gathered"][0]
    assert gathered.diagnostics["gathered"] == 1.0 and "gathered" not in ref.diagnostics
    for key in ("collision_rate", "collision_rate_weighted"):
        if key in ref.diagnostics:
            assert gathered.diagnostics[key] == pytest.approx(ref.diagnostics[key], abs=1e-12)
    return results


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("k", [1, 4, 9])
def test_two_views_three_engines_agree(case: str, k: int) -> None:
    """SimCLR's layout, both views anchors (both directions): the same K negatives and the same loss."""
    z1, z2, labels = _data()

    def call(loss_fn: ContrastiveLoss, xs: list[torch.Tensor]):  # type: ignore[no-untyped-def]
        return loss_fn(xs[0], xs[1], labels=labels, generator=torch.Generator().manual_seed(5), details=True)

    results = _all_equal(call, [z1, z2], num_negatives=k, **CASES[case])
    assert results["gathered"][0].diagnostics["num_negatives"] == k


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("with_mask", [False, True])
def test_pair_layout_three_engines_agree(case: str, with_mask: bool) -> None:
    g = torch.Generator().manual_seed(1)
    a, p, c = (torch.randn(n, 4, generator=g, dtype=torch.float64) for n in (6, 6, 17))
    ya, yc = torch.randint(0, 3, (6,), generator=g), torch.randint(-1, 3, (17,), generator=g)
    mask = torch.rand(6, 17, generator=g) > 0.3 if with_mask else None
    if mask is not None:
        mask[:, :3] = True
        yc[:3] = 5  # a label no anchor has: every anchor keeps >= 3 negatives

    def call(loss_fn: ContrastiveLoss, xs: list[torch.Tensor]):  # type: ignore[no-untyped-def]
        return loss_fn.pair(
            xs[0],
            xs[1],
            xs[2],
            mask=mask,
            anchor_labels=ya,
            candidate_labels=yc,
            generator=torch.Generator().manual_seed(2),
            details=True,
        )

    _all_equal(call, [a, p, c], num_negatives=3, **CASES[case])


def test_gathered_loss_against_a_float64_rederivation() -> None:
    """Hard(β) over the drawn K, debiased (Robinson et al., eq. 4), written out with loops from the
    materialised engine's K-subsampled mask."""
    z1, z2, _ = _data(3, b=6)
    gen = lambda: torch.Generator().manual_seed(9)  # noqa: E731
    kw = {"temperature": 0.4, "negatives": negatives.Hard(beta=0.8), "tau_plus": 0.1, "num_negatives": 4}
    loss_fn = ContrastiveLoss(reduction="none", engine="gathered", **kw)  # type: ignore[arg-type]
    got = loss_fn(z1, z2, generator=gen())
    scores = Subsample(num_negatives=4, generator=gen()).prepare(ContrastiveLoss(**kw).scores(z1, z2))  # type: ignore[arg-type]
    t_plus, t = 0.1, 0.4
    for i in range(12):
        js = [j for j in range(12) if scores.mask[i, j]]
        s = [float(scores.logits[i, j]) for j in js]
        w = [math.exp(0.8 * x) for x in s]
        w = [x * len(js) / sum(w) for x in w]
        mean_neg = sum(wj * math.exp(x) for wj, x in zip(w, s)) / len(js)
        pos = math.exp(float(scores.positive[i]))
        ng = max((mean_neg - t_plus * pos) / (1 - t_plus), math.exp(-1 / t))
        assert abs(float(got[i]) + math.log(pos / (pos + len(js) * ng))) < 1e-10


def test_gathered_logits_gradcheck_and_values() -> None:
    g = torch.Generator().manual_seed(4)
    a = torch.randn(5, 3, generator=g, dtype=torch.float64, requires_grad=True)
    c = torch.randn(8, 3, generator=g, dtype=torch.float64, requires_grad=True)
    index = torch.stack([torch.randperm(8, generator=g)[:4].sort().values for _ in range(5)])
    torch.testing.assert_close(
        gathered_logits(a, c, index), (a[:, None, :] * c[index]).sum(-1), rtol=0, atol=1e-14
    )
    assert torch.autograd.gradcheck(lambda x, y: gathered_logits(x, y, index), (a, c))


def test_gathered_path_gradcheck_at_a_tiny_size() -> None:
    z1, z2, labels = _data(6, b=4, d=3)
    loss_fn = ContrastiveLoss(
        temperature=0.5,
        tau_plus=0.1,
        negatives=negatives.Hard(beta=1.0),
        collision_free=True,
        num_negatives=2,
        engine="gathered",
        reduction="none",
    )
    labels = torch.tensor([0, 1, 0, 2])

    def f(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return loss_fn(x, y, labels=labels, generator=torch.Generator().manual_seed(1))

    assert torch.autograd.gradcheck(f, (z1.clone().requires_grad_(True), z2.clone().requires_grad_(True)))


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_k_equal_to_every_valid_candidate_is_the_loss_without_subsample(engine: str) -> None:
    z1, z2, _ = _data(7, b=9)
    kw = {"temperature": 0.3, "negatives": negatives.Hard(beta=1.0), "tau_plus": 0.1}
    plain = ContrastiveLoss(engine="materialised", **kw)(z1, z2)  # type: ignore[arg-type]
    full = ContrastiveLoss(num_negatives=16, **ENGINES[engine], **kw)(z1, z2)  # type: ignore[arg-type]
    torch.testing.assert_close(full, plain, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_more_negatives_than_available_is_refused_by_every_engine(engine: str) -> None:
    z1, z2, _ = _data(8, b=5)
    with pytest.raises(ValueError, match=r"num_negatives must be <= .*min_i N_i = 8 .*got num_negatives=9"):
        ContrastiveLoss(num_negatives=9, **ENGINES[engine])(z1, z2)  # type: ignore[arg-type]


def test_auto_takes_the_gathered_engine_and_a_queue_uses_it() -> None:
    z1, z2, _ = _data(9, b=40)
    out = ContrastiveLoss(num_negatives=4)(z1, z2, details=True)  # 8·4 ≤ 78
    assert out.diagnostics.get("gathered") == 1.0
    queue = MemoryQueue(size=64, dim=5, dtype=torch.float64)
    queue.enqueue(torch.randn(64, 5, dtype=torch.float64))
    moco = QueueLoss(ContrastiveLoss(temperature=0.2, num_negatives=8), queue)
    assert moco(z1, z2, details=True, enqueue=False).diagnostics.get("gathered") == 1.0


def test_gathered_engine_refuses_what_it_cannot_compute() -> None:
    z1, z2, _ = _data(10, b=4)
    with pytest.raises(ValueError, match=r"(?s)gathered engine needs Subsample.*OptimalTransport"):
        ContrastiveLoss(
            engine="gathered", num_negatives=2, negatives=negatives.OptimalTransport(epsilon=0.5)
        )(z1, z2)
    with pytest.raises(ValueError, match="collision_free=True needs labels"):
        ContrastiveLoss(engine="gathered", num_negatives=2, collision_free=True)(z1, z2)
    with pytest.raises(ValueError, match=r"gathered engine needs Subsample\(num_negatives=K\)"):
        ContrastiveLoss(engine="gathered", objective=objectives.InfoNCE())(z1, z2)
