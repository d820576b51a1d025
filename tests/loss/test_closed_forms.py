"""Closed forms, reductions between the objectives, and invariances."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from hardneg import ContrastiveLoss, functional, negatives, pair_scores, simclr_scores
from hardneg.objectives import Debiased, InfoNCE


@pytest.mark.parametrize("b", [2, 5, 32])
@pytest.mark.parametrize("beta", [0.0, 3.0])
def test_identical_embeddings_give_log_2b_minus_1(b: int, beta: float) -> None:
    z = torch.randn(1, 7, dtype=torch.float64).expand(b, 7).contiguous()
    loss = ContrastiveLoss(temperature=0.3, negatives=negatives.Hard(beta=beta))(z, z)
    assert loss.item() == pytest.approx(math.log(2 * b - 1), rel=1e-12)


def test_simclr_equals_cross_entropy_over_logits() -> None:
    """τ⁺ = 0, β = 0 is cross-entropy with the positive as the target class (NT-Xent)."""
    g = torch.Generator().manual_seed(1)
    b, t = 9, 0.2
    z1, z2 = (
        torch.randn(b, 4, generator=g, dtype=torch.float64),
        torch.randn(b, 4, generator=g, dtype=torch.float64),
    )
    v = F.normalize(torch.cat([z1, z2]), dim=1)
    sim = v @ v.T / t
    sim.fill_diagonal_(float("-inf"))  # self is never a candidate
    target = (torch.arange(2 * b) + b) % (2 * b)
    expected = F.cross_entropy(sim, target)
    for loss_fn in (
        ContrastiveLoss(temperature=t),
        ContrastiveLoss(temperature=t, negatives=negatives.Hard(beta=0.0)),
        ContrastiveLoss(temperature=t, objective=Debiased(0.0)),
    ):
        assert loss_fn(z1, z2).item() == pytest.approx(expected.item(), rel=1e-12)


def test_beta_zero_is_the_debiased_loss() -> None:
    g = torch.Generator().manual_seed(2)
    z1, z2 = torch.randn(10, 6, generator=g), torch.randn(10, 6, generator=g)
    uniform = ContrastiveLoss(temperature=0.5, tau_plus=0.2)(z1, z2)
    hard0 = ContrastiveLoss(temperature=0.5, tau_plus=0.2, negatives=negatives.Hard(beta=0.0))(z1, z2)
    assert uniform.item() == hard0.item()


def test_clamp_binds_exactly_when_numerator_below_floor() -> None:
    """Neg = max((Σ w e^s − N τ⁺ e^{s⁺})/(1 − τ⁺), N e^{−1/t}); checked anchor by anchor."""
    g = torch.Generator().manual_seed(3)
    t, tau_plus, beta = 0.5, 0.45, 0.7
    # Positives very close to their anchors make N τ⁺ e^{s⁺} large, so the floor binds for some anchors.
    a = F.normalize(torch.randn(12, 3, generator=g, dtype=torch.float64), dim=1)
    p = F.normalize(a + 0.05 * torch.randn(12, 3, generator=g, dtype=torch.float64), dim=1)
    c = F.normalize(torch.randn(20, 3, generator=g, dtype=torch.float64), dim=1)
    scores = pair_scores(a, p, c, temperature=t)
    per_anchor = functional.loss_from_scores(
        scores, negatives=negatives.Hard(beta=beta), objective=Debiased(tau_plus), reduction="none"
    ).per_anchor
    n = c.shape[0]
    binds = []
    for i in range(a.shape[0]):
        s = (c @ a[i]) / t
        sp = torch.dot(a[i], p[i]) / t
        w = n * torch.softmax(beta * s, dim=0)
        numerator = ((w * s.exp()).sum() - n * tau_plus * sp.exp()) / (1 - tau_plus)
        floor = n * math.exp(-1 / t)
        bound = bool(numerator < floor)
        binds.append(bound)
        neg = floor if bound else numerator.item()
        assert per_anchor[i].item() == pytest.approx(
            -math.log(sp.exp().item() / (sp.exp().item() + neg)), rel=1e-10
        )
    assert any(binds) and not all(binds), "the fixture must exercise both branches"
    diag = functional.loss_from_scores(
        scores, negatives=negatives.Hard(beta=beta), objective=Debiased(tau_plus), diagnostics=True
    ).diagnostics
    assert diag["clamp_fraction"] == pytest.approx(sum(binds) / len(binds))


def test_large_beta_tends_to_the_hardest_negative() -> None:
    """Robinson et al. (ICLR 2021), Prop. 3: as β → ∞, Σ_j w_ij e^{s_ij} → N_i · max_j e^{s_ij}."""
    g = torch.Generator().manual_seed(4)
    scores = simclr_scores(
        torch.randn(6, 5, generator=g, dtype=torch.float64),
        torch.randn(6, 5, generator=g, dtype=torch.float64),
        temperature=0.5,
    )
    hardest = scores.masked_logits().amax(dim=1) + scores.num_valid().log()
    errs = [
        (negatives.Hard(beta=beta).weigh(scores).log_weighted_sum - hardest).abs().max().item()
        for beta in (1.0, 10.0, 100.0, 1000.0)
    ]
    assert errs == sorted(errs, reverse=True) and errs[-1] < 1e-2


def test_hard_fast_path_equals_explicit_weights() -> None:
    g = torch.Generator().manual_seed(5)
    scores = simclr_scores(
        torch.randn(7, 5, generator=g, dtype=torch.float64),
        torch.randn(7, 5, generator=g, dtype=torch.float64),
        temperature=0.3,
    )
    hard = negatives.Hard(beta=2.5)
    explicit = torch.logsumexp(scores.logits + hard.log_weights(scores), dim=1)
    torch.testing.assert_close(hard.weigh(scores).log_weighted_sum, explicit, rtol=1e-12, atol=1e-12)


def test_weights_have_mean_one_over_valid_candidates() -> None:
    g = torch.Generator().manual_seed(6)
    scores = simclr_scores(torch.randn(5, 4, generator=g), torch.randn(5, 4, generator=g), temperature=0.1)
    for dist in (negatives.Hard(beta=3.0), negatives.Hard(beta=3.0, rescale=True)):
        w = dist.log_weights(scores).exp()
        assert torch.all(w[~scores.mask] == 0)
        torch.testing.assert_close(w.sum(dim=1), scores.num_valid())


def test_rescale_up_weights_closer_negatives() -> None:
    """HCL Fig. 14's sign: after rescaling to [−2, 2], weights still increase with similarity."""
    g = torch.Generator().manual_seed(7)
    z1, z2 = 50 * torch.randn(8, 3, generator=g), 50 * torch.randn(8, 3, generator=g)
    scores = simclr_scores(z1, z2, temperature=1.0, normalize=False)
    w = negatives.Hard(beta=1.0, rescale=True).log_weights(scores)
    for i in range(scores.num_anchors):
        valid = scores.mask[i]
        order_s = torch.argsort(scores.logits[i][valid])
        order_w = torch.argsort(w[i][valid])
        assert torch.equal(order_s, order_w)
    r = 2 * scores.logits / scores.logits[scores.mask].abs().max()
    expected = (
        F.log_softmax((r).masked_fill(~scores.mask, float("-inf")), dim=1) + scores.num_valid().log()[:, None]
    )
    torch.testing.assert_close(w[scores.mask], expected[scores.mask])


def test_permutation_and_view_swap_invariance() -> None:
    g = torch.Generator().manual_seed(8)
    z1, z2 = (
        torch.randn(10, 6, generator=g, dtype=torch.float64),
        torch.randn(10, 6, generator=g, dtype=torch.float64),
    )
    loss_fn = ContrastiveLoss(
        temperature=0.4, tau_plus=0.1, negatives=negatives.Hard(beta=1.0), reduction="none"
    )
    base = loss_fn(z1, z2)
    perm = torch.randperm(10, generator=g)
    permuted = loss_fn(z1[perm], z2[perm])
    torch.testing.assert_close(permuted, torch.cat([base[:10][perm], base[10:][perm]]))
    swapped = loss_fn(z2, z1)
    torch.testing.assert_close(swapped, torch.cat([base[10:], base[:10]]))
    scaled = loss_fn(3.0 * z1, 0.5 * z2)  # normalised embeddings: scale-invariant
    torch.testing.assert_close(scaled, base)


def test_effective_sample_size() -> None:
    g = torch.Generator().manual_seed(9)
    z1, z2 = torch.randn(16, 8, generator=g), torch.randn(16, 8, generator=g)
    ess = []
    for beta in (0.0, 1.0, 5.0):
        loss_fn = ContrastiveLoss(temperature=0.5, negatives=negatives.Hard(beta=beta))
        diag = loss_fn(z1, z2, details=True).diagnostics
        ess.append(diag["ess"])
        # Kish's formula written out directly for anchor 0
    assert ess[0] == pytest.approx(30.0, rel=1e-5)
    assert ess[0] > ess[1] > ess[2]
    scores = simclr_scores(z1, z2, temperature=0.5)
    w = negatives.Hard(beta=1.0).log_weights(scores).exp()
    kish = (w.sum(1) ** 2 / (w**2).sum(1)).mean()
    assert ess[1] == pytest.approx(kish.item(), rel=1e-5)


def test_collision_diagnostics_count_same_label_negatives() -> None:
    g = torch.Generator().manual_seed(10)
    b = 8
    z1, z2 = torch.randn(b, 4, generator=g), torch.randn(b, 4, generator=g)
    labels = torch.tensor([0, 0, 1, 1, 1, 2, 3, 3])
    diag = ContrastiveLoss(temperature=0.5)(z1, z2, labels=labels, details=True).diagnostics
    # by hand: view i of label y has 2*count(y) - 2 same-label negatives out of 2B - 2
    counts = torch.bincount(labels)
    same = sum(2 * (2 * counts[y].item() - 2) for y in labels.tolist())
    assert diag["collision_rate"] == pytest.approx(same / (2 * b * (2 * b - 2)))
    assert diag["collision_rate_weighted"] == pytest.approx(diag["collision_rate"], rel=1e-5)


def test_infonce_q_weight() -> None:
    """OT paper eq. (1): log(1 + (q/m) Σ e^{v_i}) with v_i = s_i − s⁺."""
    g = torch.Generator().manual_seed(11)
    a, p, c = (torch.randn(k, 3, generator=g, dtype=torch.float64) for k in (4, 4, 9))
    scores = pair_scores(a, p, c, temperature=1.0)
    out = functional.loss_from_scores(scores, objective=InfoNCE(q=2.0), reduction="none").per_anchor
    v = scores.logits - scores.positive[:, None]
    torch.testing.assert_close(out, torch.log1p(2.0 / 9 * v.exp().sum(1)))
