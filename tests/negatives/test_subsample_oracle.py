"""K-subsampling (Ash et al., AISTATS 2022, §4) and collision-free oracle negatives."""

from __future__ import annotations

import math

import pytest
import torch

from hardneg import ContrastiveLoss, negatives, pair_scores, simclr_scores
from hardneg.functional import loss_from_scores
from hardneg.negatives import CollisionFree, Hard, Subsample, subsample_mask
from hardneg.objectives import InfoNCE
from hardneg.reduction import negative_diagnostics
from tests.reference.data import views


def _random_mask(a: int, n: int, p: float, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    mask = torch.rand(a, n, generator=g) < p
    mask[:, :8] = True  # at least 8 valid per row
    return mask


def test_subsample_keeps_exactly_k_valid_entries() -> None:
    mask = _random_mask(20, 50, 0.6, 1)
    g = torch.Generator().manual_seed(3)
    for k in (1, 5, 8):
        new = subsample_mask(mask, k, generator=g)
        assert new.dtype == torch.bool and new.shape == mask.shape
        assert torch.equal(new.sum(1), torch.full((20,), k))
        assert not bool((new & ~mask).any()), "a masked candidate was chosen"


def test_subsample_inclusion_probability_is_k_over_n_i() -> None:
    """Each valid candidate is kept with probability K/N_i (binomial, 5σ), never a masked one."""
    a, n, k, reps = 12, 30, 5, 4000
    mask = _random_mask(a, n, 0.5, 2)
    g = torch.Generator().manual_seed(7)
    counts = torch.zeros(a, n)
    co = torch.zeros(n, n)  # co-inclusion of (anchor 0, j) and (anchor 1, j')
    mask[1] = mask[0]  # two anchors with the same candidate set
    for _ in range(reps):
        new = subsample_mask(mask, k, generator=g)
        counts += new
        co += new[0].double()[:, None].float() * new[1].float()[None, :]
    n_i = mask.sum(1, keepdim=True).double()
    p = (k / n_i).expand(a, n)
    expected = reps * p
    sd = torch.sqrt(reps * p * (1 - p))
    assert float(counts[~mask].sum()) == 0.0
    z = ((counts.double() - expected) / sd)[mask]
    assert float(z.abs().max()) < 5.0, float(z.abs().max())
    # independence across anchors: P(j in S_0, j' in S_1) = p_0 p_1
    p01 = (k / float(n_i[0])) ** 2
    sel = mask[0][:, None] & mask[1][None, :]
    z2 = (co.double() - reps * p01) / math.sqrt(reps * p01 * (1 - p01))
    assert float(z2[sel].abs().max()) < 5.0
    # the two anchors do not share their draws
    assert float(co.diagonal()[mask[0]].mean()) < 0.5 * float(counts[0][mask[0]].mean())


def test_subsample_errors_name_parameter_constraint_and_value() -> None:
    with pytest.raises(ValueError, match=r"num_negatives must be an int >= 1, got 0"):
        Subsample(num_negatives=0)
    with pytest.raises(TypeError, match=r"num_negatives.*2\.5"):
        Subsample(num_negatives=2.5)  # type: ignore[arg-type]
    z1, z2 = views(b=4)
    loss = ContrastiveLoss(num_negatives=7)  # 2B - 2 = 6 candidates
    with pytest.raises(ValueError, match=r"num_negatives must be <= .*min_i N_i = 6.*got num_negatives=7"):
        loss(z1, z2)
    with pytest.raises(ValueError, match="num_negatives"):
        ContrastiveLoss(num_negatives=-1)


def test_subsample_with_all_negatives_equals_base() -> None:
    z1, z2 = views(b=5)
    full = ContrastiveLoss(tau_plus=0.1, negatives=Hard(beta=1.0))(z1, z2)
    sub = ContrastiveLoss(tau_plus=0.1, negatives=Hard(beta=1.0), num_negatives=8)(z1, z2)
    torch.testing.assert_close(full, sub)


def test_subsample_composes_with_hard_reference() -> None:
    """Subsample(K, Hard) = hard-negative weights renormalised over the K kept negatives (float64 loop)."""
    z1, z2 = views(b=5)
    gen = torch.Generator().manual_seed(11)
    dist = Subsample(num_negatives=3, base=Hard(beta=0.7), generator=gen)
    scores = dist.prepare(simclr_scores(z1, z2, temperature=0.5))
    out = InfoNCE()(dist.weigh(scores))
    for i in range(scores.num_anchors):
        js = [j for j in range(scores.num_candidates) if scores.mask[i, j]]
        assert len(js) == 3
        w = [math.exp(0.7 * float(scores.logits[i, j])) for j in js]
        w = [x * len(js) / sum(w) for x in w]
        neg = sum(wj * math.exp(float(scores.logits[i, j])) for wj, j in zip(w, js))
        pos = math.exp(float(scores.positive[i]))
        assert abs(float(out[i]) - (-math.log(pos / (pos + neg)))) < 1e-10


def test_subsample_forwards_beta_for_schedules() -> None:
    from hardneg import BetaAnnealing

    loss = ContrastiveLoss(negatives=Hard(beta=1.0), num_negatives=4)
    BetaAnnealing(beta=1.0, num_changes=2, num_epochs=10).apply(loss.negatives, 9)
    assert loss.negatives.beta == loss.negatives.base.beta < 1.0
    assert not hasattr(Subsample(num_negatives=2), "beta")


def test_collision_free_drops_same_label_candidates() -> None:
    z1, z2 = views(b=6)
    y = torch.tensor([0, 1, 0, 2, 1, 0])
    scores = simclr_scores(z1, z2, temperature=0.5, labels=y)
    prepared = CollisionFree().prepare(scores)
    yy = torch.cat([y, y])
    expected = scores.mask & (yy[:, None] != yy[None, :])
    assert torch.equal(prepared.mask, expected)
    diag = negative_diagnostics(CollisionFree().weigh(prepared))
    assert diag["collision_rate"] == 0.0 and diag["collision_rate_weighted"] == 0.0


def test_collision_free_reference_with_true_positives() -> None:
    """pair_scores with a same-class positive and oracle negatives (Ash et al. §4), float64 loop."""
    g = torch.Generator().manual_seed(5)
    a, p, c = (torch.randn(n, 4, generator=g, dtype=torch.float64) for n in (4, 4, 9))
    ya, yc = torch.tensor([0, 1, 2, 0]), torch.tensor([0, 1, 2, 0, 1, 2, 0, 1, 2])
    loss = ContrastiveLoss(temperature=0.3, collision_free=True, reduction="none")
    got = loss.pair(a, p, c, anchor_labels=ya, candidate_labels=yc)
    an, pn, cn = (torch.nn.functional.normalize(x, dim=1) for x in (a, p, c))
    for i in range(4):
        pos = math.exp(float(an[i] @ pn[i]) / 0.3)
        neg = sum(math.exp(float(an[i] @ cn[j]) / 0.3) for j in range(9) if yc[j] != ya[i])
        assert abs(float(got[i]) + math.log(pos / (pos + neg))) < 1e-10


def test_collision_free_errors() -> None:
    z1, z2 = views(b=4)
    with pytest.raises(ValueError, match="collision_free=True needs labels"):
        ContrastiveLoss(collision_free=True)(z1, z2)
    scores = simclr_scores(z1, z2, temperature=0.5)
    with pytest.raises(ValueError, match="CollisionFree negatives need labels"):
        CollisionFree().prepare(scores)
    with pytest.raises(ValueError, match=r"labels must have shape \(4,\)"):
        ContrastiveLoss(collision_free=True)(z1, z2, labels=torch.zeros(3, dtype=torch.long))
    with pytest.raises(TypeError, match="integer labels"):
        ContrastiveLoss(collision_free=True)(z1, z2, labels=torch.zeros(4))
    with pytest.raises(ValueError, match="at least one valid candidate with another label"):
        ContrastiveLoss(collision_free=True)(z1, z2, labels=torch.zeros(4, dtype=torch.long))
    with pytest.raises(TypeError, match="base must be"):
        CollisionFree(base="hard")  # type: ignore[arg-type]


def test_collision_diagnostics_are_correct() -> None:
    """collision_rate = share of valid negatives with the anchor's label; weighted = E_q[same]."""
    z1, z2 = views(b=6)
    y = torch.tensor([0, 1, 0, 2, 1, 0])
    scores = simclr_scores(z1, z2, temperature=0.5, labels=y)
    dist = Hard(beta=1.0)
    diag = negative_diagnostics(dist.weigh(scores))
    yy = torch.cat([y, y]).tolist()
    same = tot = 0
    weighted = []
    for i in range(12):
        js = [j for j in range(12) if scores.mask[i, j]]
        same += sum(yy[j] == yy[i] for j in js)
        tot += len(js)
        w = [math.exp(float(scores.logits[i, j])) for j in js]
        weighted.append(sum(wj for wj, j in zip(w, js) if yy[j] == yy[i]) / sum(w))
    assert abs(diag["collision_rate"] - same / tot) < 1e-6
    assert abs(diag["collision_rate_weighted"] - sum(weighted) / 12) < 1e-6


def test_loss_options_keep_the_public_api() -> None:
    z1, z2 = views(b=8, dtype=torch.float32)
    base = ContrastiveLoss(temperature=0.5, tau_plus=0.1, negatives=negatives.Hard(beta=1.0))
    assert isinstance(base.negatives, negatives.Hard)
    wrapped = ContrastiveLoss(num_negatives=3, collision_free=True, negatives=negatives.Hard(beta=0.5))
    assert isinstance(wrapped.negatives, Subsample)
    assert isinstance(wrapped.negatives.base, CollisionFree)
    y = torch.arange(8) % 4
    out = wrapped(z1, z2, labels=y, details=True)
    assert out.diagnostics["num_negatives"] == 3.0 and out.diagnostics["collision_rate"] == 0.0


def test_subsample_gradients_flow_only_through_kept_negatives() -> None:
    g = torch.Generator().manual_seed(0)
    a = torch.randn(3, 4, dtype=torch.float64, generator=g)
    p = torch.randn(3, 4, dtype=torch.float64, generator=g)
    c = torch.randn(10, 4, dtype=torch.float64, generator=g, requires_grad=True)
    scores = pair_scores(a, p, c, temperature=0.5)
    gen = torch.Generator().manual_seed(1)
    out = loss_from_scores(scores, negatives=Subsample(num_negatives=2, generator=gen))
    out.loss.backward()
    assert c.grad is not None
    assert int((c.grad.abs().sum(1) > 0).sum()) <= 6
