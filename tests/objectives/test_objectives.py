"""The loss family (Jiang et al.; Arora et al.; Robinson et al. App. B) against the float64 references."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import pytest
import torch

from hardneg import simclr_scores
from hardneg.functional import loss_from_scores
from hardneg.negatives import CollisionFree, Hard, NegativeDistribution, OptimalTransport, Subsample, Uniform
from hardneg.objectives import (
    BasicContrastive,
    Hinge,
    JensenShannon,
    Logistic,
    LogisticMPair,
    Objective,
    Triplet,
    block_loss,
)
from tests.reference.data import views
from tests.reference.objectives import block_losses, objective_losses, plain_simclr, probabilities

T = 0.5
LABELS = torch.tensor([0, 1, 2, 0])


OBJECTIVES: dict[str, Callable[[], Objective]] = {
    "logistic_mpair": lambda: LogisticMPair(q=2.0),
    "logistic_base2": lambda: Logistic(base=2.0),
    "hinge_max": lambda: Hinge(margin=1.0, aggregate="max"),
    "hinge_mean": lambda: Hinge(margin=1.0, aggregate="mean"),
    "triplet": lambda: Triplet(margin=0.5),
    "triplet_md": lambda: Triplet(margin=0.5, aggregate="mean_difference"),
    "bcl": lambda: BasicContrastive(),
    "jsd": lambda: JensenShannon(),
}


@pytest.mark.parametrize("name", sorted(OBJECTIVES))
@pytest.mark.parametrize("kind", ["uniform", "hard"])
def test_objective_matches_paper_reference(name: str, kind: str) -> None:
    if name == "hinge_max" and kind == "hard":
        pytest.skip("the max form takes no importance weights (tested to raise)")
    z1, z2 = views(b=4, d=3)
    negatives = Uniform() if kind == "uniform" else Hard(beta=0.5)
    got = loss_from_scores(
        simclr_scores(z1, z2, temperature=T),
        negatives=negatives,
        objective=OBJECTIVES[name](),
        reduction="none",
    ).per_anchor
    pos, s, valid = plain_simclr(z1, z2, T)
    expected = objective_losses(name, pos, s, probabilities(kind, s, valid))
    torch.testing.assert_close(got, torch.tensor(expected, dtype=torch.float64), atol=1e-10, rtol=1e-10)


@pytest.mark.parametrize("name", ["logistic_mpair", "triplet", "bcl", "jsd", "hinge_mean"])
def test_objective_with_ot_weights_matches_reference(name: str) -> None:
    z1, z2 = views(b=4, d=3)
    scores = simclr_scores(z1, z2, temperature=T)
    dist = OptimalTransport(epsilon=0.3, tol=1e-12, max_iter=10000)
    got = loss_from_scores(scores, negatives=dist, objective=OBJECTIVES[name](), reduction="none").per_anchor
    ell = dist.log_weights(scores)
    assert ell is not None
    pos, s, valid = plain_simclr(z1, z2, T)
    q = [{j: math.exp(float(ell[i, j])) / len(js) for j in js} for i, js in enumerate(valid)]
    expected = objective_losses(name, pos, s, q)
    torch.testing.assert_close(got, torch.tensor(expected, dtype=torch.float64), atol=1e-10, rtol=1e-10)


def _negatives(kind: str) -> NegativeDistribution:
    if kind == "uniform":
        return Uniform()
    if kind == "hard":
        return Hard(beta=0.5)
    if kind == "ot":
        return OptimalTransport(epsilon=0.5, tol=1e-300, max_iter=8, differentiable=True)
    if kind == "subsample":
        return Subsample(num_negatives=3, generator=torch.Generator().manual_seed(0))
    return CollisionFree()


@pytest.mark.parametrize("name", sorted(OBJECTIVES))
@pytest.mark.parametrize("kind", ["uniform", "hard", "ot", "subsample", "collision_free"])
def test_gradcheck_objective_by_negatives(name: str, kind: str) -> None:
    if name == "hinge_max" and kind in ("hard", "ot"):
        pytest.skip("the max form takes no importance weights")
    z1, z2 = views(b=3, d=3, seed=1)
    z1.requires_grad_(True)
    z2.requires_grad_(True)
    labels = LABELS[:3] if kind == "collision_free" else None

    def f(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        scores = simclr_scores(x, y, temperature=T, labels=labels)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # fixed iteration count for OT
            return loss_from_scores(
                scores, negatives=_negatives(kind), objective=OBJECTIVES[name](), reduction="none"
            ).per_anchor

    assert torch.autograd.gradcheck(f, (z1, z2))


def test_hinge_max_refuses_importance_weights_and_accepts_subsample() -> None:
    z1, z2 = views(b=4)
    scores = simclr_scores(z1, z2, temperature=T)
    with pytest.raises(ValueError, match=r"aggregate='max'.*cannot use importance weights.*Hard"):
        loss_from_scores(scores, negatives=Hard(beta=1.0), objective=Hinge())
    sub = Subsample(num_negatives=2, generator=torch.Generator().manual_seed(3))
    prepared = sub.prepare(scores)
    got = Hinge()(sub.weigh(prepared))
    for i in range(8):
        js = [j for j in range(8) if prepared.mask[i, j]]
        ref = max(0.0, 1.0 + max(float(prepared.logits[i, j] - prepared.positive[i]) for j in js))
        assert abs(float(got[i]) - ref) < 1e-12


@pytest.mark.parametrize("name", sorted(OBJECTIVES))
def test_small_temperature_and_epsilon_no_nan(name: str) -> None:
    z1, z2 = views(b=16, d=8, dtype=torch.float32)
    z1.requires_grad_(True)
    negatives = Uniform() if name == "hinge_max" else OptimalTransport(epsilon=0.01, tol=1e-4, max_iter=5000)
    out = loss_from_scores(
        simclr_scores(z1, z2, temperature=0.05), negatives=negatives, objective=OBJECTIVES[name]()
    )
    out.loss.backward()
    assert torch.isfinite(out.loss) and z1.grad is not None and torch.isfinite(z1.grad).all()


def test_min_max_values_at_constant_representation() -> None:
    """Jiang et al., Theorem 1: at a constant f, NCE gives log(1 + q), triplet gives η, BCL gives 0."""
    z = torch.ones(4, 3, dtype=torch.float64)
    scores = simclr_scores(z, z.clone(), temperature=1.0)
    u = Uniform().weigh(scores)
    assert torch.allclose(
        LogisticMPair(q=256.0)(u), torch.full((8,), math.log(257.0), dtype=torch.float64)
    )
    assert torch.allclose(Triplet(margin=0.3)(u), torch.full((8,), 0.3, dtype=torch.float64))
    assert torch.allclose(BasicContrastive()(u), torch.zeros(8, dtype=torch.float64))
    assert torch.allclose(
        Logistic(base=2.0)(u), torch.full((8,), math.log2(7.0), dtype=torch.float64)
    )


def test_jsd_log4_offset() -> None:
    z1, z2 = views(b=3)
    scores = simclr_scores(z1, z2, temperature=1.0)
    a = JensenShannon()(Uniform().weigh(scores))
    b = JensenShannon(subtract_log4=True)(Uniform().weigh(scores))
    torch.testing.assert_close(a - b, torch.full_like(a, 2 * math.log(2)))


def test_objective_argument_errors() -> None:
    with pytest.raises(ValueError, match=r"q must be a finite number > 0, got 0"):
        LogisticMPair(q=0)
    with pytest.raises(ValueError, match=r"base must be a finite number > 1, got 1"):
        Logistic(base=1)
    with pytest.raises(ValueError, match=r"aggregate must be one of \('max', 'mean'\), got 'soft'"):
        Hinge(aggregate="soft")
    with pytest.raises(ValueError, match=r"margin must be a finite number >= 0, got -1"):
        Triplet(margin=-1)
    with pytest.raises(ValueError, match=r"aggregate must be one of"):
        Triplet(aggregate="max")


@pytest.mark.parametrize("loss", ["hinge", "logistic"])
@pytest.mark.parametrize("m", [1, 3])
def test_block_loss_matches_reference_and_gradcheck(loss: str, m: int) -> None:
    g = torch.Generator().manual_seed(4)
    a = torch.randn(5, 3, generator=g, dtype=torch.float64, requires_grad=True)
    p = torch.randn(5, 2, 3, generator=g, dtype=torch.float64, requires_grad=True)
    n = torch.randn(5, m, 2, 3, generator=g, dtype=torch.float64, requires_grad=True)
    got = block_loss(a, p, n, loss=loss, base=2.0, reduction="none")
    torch.testing.assert_close(got, torch.tensor(block_losses(a, p, n, loss, 2.0), dtype=torch.float64))
    assert torch.autograd.gradcheck(lambda x, y, z: block_loss(x, y, z, loss=loss, base=2.0), (a, p, n))
    # b = 1 block loss is the pairwise loss of Def. 2.3
    pair = block_loss(a, p[:, :1], n[:, :, :1], loss=loss, base=2.0, reduction="none")
    torch.testing.assert_close(
        pair, torch.tensor(block_losses(a, p[:, :1], n[:, :, :1], loss, 2.0), dtype=torch.float64)
    )


def test_block_loss_errors() -> None:
    a, p, n = torch.randn(4, 3), torch.randn(4, 2, 3), torch.randn(4, 1, 2, 3)
    with pytest.raises(ValueError, match=r"negative_blocks must have shape \(4, m, 2, 3\)"):
        block_loss(a, p, torch.randn(4, 1, 3, 3))
    with pytest.raises(ValueError, match=r"positive_blocks must have 3 dimensions"):
        block_loss(a, p[:, 0], n)
    with pytest.raises(ValueError, match=r"loss must be one of \('hinge', 'logistic'\), got 'nce'"):
        block_loss(a, p, n, loss="nce")
