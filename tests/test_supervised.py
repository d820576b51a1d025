"""Supervised contrastive and multi-view losses against a float64 re-derivation of Khosla et al.
(NeurIPS 2020, eqs. 2-3), pytorch-metric-learning's SupConLoss, and SimCLR at V = 2."""

from __future__ import annotations

import math

import pytest
import torch

from hardneg import ContrastiveLoss, negatives
from hardneg.supervised import multi_view_loss


def _supcon_reference(z: torch.Tensor, key: torch.Tensor, t: float, variant: str) -> torch.Tensor:
    """Khosla et al.: L_out = −(1/|P|) Σ_p log(e^{s_ip} / Σ_{a≠i} e^{s_ia}); L_in = −log((1/|P|) Σ_p …)
    + log|P| (so that it is the multi-positive estimator); loops, float64, written from the paper."""
    z = torch.nn.functional.normalize(z.double(), dim=1)
    losses = []
    for i in range(len(z)):
        pos = [p for p in range(len(z)) if p != i and key[p] == key[i]]
        if not pos:
            continue
        s = [float(z[i] @ z[a]) / t for a in range(len(z))]
        denom = math.log(sum(math.exp(s[a]) for a in range(len(z)) if a != i))
        if variant == "out":
            losses.append(-sum(s[p] - denom for p in pos) / len(pos))
        else:
            losses.append(-(math.log(sum(math.exp(s[p]) for p in pos)) - denom))
    return torch.tensor(losses, dtype=torch.float64)


@pytest.mark.parametrize("variant", ["out", "in"])
def test_supervised_contrastive_equals_the_papers_formula(variant: str) -> None:
    g = torch.Generator().manual_seed(0)
    z = torch.randn(6, 3, 5, generator=g, dtype=torch.float64)
    labels = torch.tensor([0, 1, 0, 2, 1, 3])
    loss_fn = ContrastiveLoss(temperature=0.3, reduction="none")
    got = multi_view_loss(loss_fn, z, labels=labels, variant=variant)
    ref = _supcon_reference(z.reshape(18, 5), labels.repeat_interleave(3), 0.3, variant)
    torch.testing.assert_close(got, ref, rtol=1e-12, atol=1e-12)


def test_one_view_per_item_leaves_out_anchors_without_positives() -> None:
    z = torch.randn(5, 4, dtype=torch.float64)
    labels = torch.tensor([0, 0, 1, 2, 2])  # item 2 is alone with its label
    got = multi_view_loss(ContrastiveLoss(temperature=0.5, reduction="none"), z, labels=labels)
    ref = _supcon_reference(z, labels, 0.5, "out")
    assert got.shape == (4,)
    torch.testing.assert_close(got, ref, rtol=1e-12, atol=1e-12)


def test_two_views_without_labels_is_simclr_and_multi_crop_uses_every_other_view() -> None:
    g = torch.Generator().manual_seed(1)
    z1 = torch.randn(7, 6, generator=g, dtype=torch.float64)
    z2 = torch.randn(7, 6, generator=g, dtype=torch.float64)
    loss_fn = ContrastiveLoss(temperature=0.2)
    # V = 2: one positive per anchor, so L_out = L_in = NT-Xent (the anchor order differs, the mean not)
    views = torch.stack([z1, z2], dim=1)
    torch.testing.assert_close(multi_view_loss(loss_fn, views), loss_fn(z1, z2), rtol=1e-12, atol=1e-12)
    crops = torch.randn(4, 5, 6, generator=g, dtype=torch.float64)  # 4 items x 5 crops
    ref = _supcon_reference(crops.reshape(20, 6), torch.arange(4).repeat_interleave(5), 0.2, "out").mean()
    torch.testing.assert_close(multi_view_loss(loss_fn, crops), ref, rtol=1e-12, atol=1e-12)


def test_every_negative_distribution_runs_and_hard_negatives_weigh_the_hardest_more() -> None:
    g = torch.Generator().manual_seed(2)
    z = torch.randn(8, 2, 16, generator=g, dtype=torch.float64, requires_grad=True)
    labels = torch.tensor([0, 0, 1, 1, 2, 2, 3, 3])
    values = {}
    for name, fn in {
        "uniform": ContrastiveLoss(temperature=0.5),
        "hard": ContrastiveLoss(temperature=0.5, negatives=negatives.Hard(beta=2.0)),
        "debiased": ContrastiveLoss(temperature=0.5, tau_plus=0.1),
        "ot": ContrastiveLoss(temperature=0.5, negatives=negatives.OptimalTransport(epsilon=0.5)),
        "k": ContrastiveLoss(temperature=0.5, num_negatives=4),
    }.items():
        out = multi_view_loss(fn, z, labels=labels, generator=torch.Generator().manual_seed(0))
        (grad,) = torch.autograd.grad(out, z)
        assert torch.isfinite(out) and torch.isfinite(grad).all(), name
        values[name] = float(out.detach())
    # the hard term is a weighted mean with more weight on large logits: never below uniform's
    assert values["hard"] >= values["uniform"]


def test_gradcheck() -> None:
    z = torch.randn(4, 2, 3, dtype=torch.float64, requires_grad=True)
    labels = torch.tensor([0, 1, 0, 1])
    fn = ContrastiveLoss(temperature=0.5, negatives=negatives.Hard(beta=1.0))
    assert torch.autograd.gradcheck(lambda x: multi_view_loss(fn, x, labels=labels), (z,))


def test_bad_input_is_refused_with_the_parameter_named() -> None:
    fn = ContrastiveLoss()
    with pytest.raises(ValueError, match="variant must be one of"):
        multi_view_loss(fn, torch.randn(4, 2, 3), variant="both")
    with pytest.raises(ValueError, match=r"views needs V >= 2, got V = 1"):
        multi_view_loss(fn, torch.randn(4, 3))
    with pytest.raises(ValueError, match=r"labels must be an integer tensor of shape \(4,\)"):
        multi_view_loss(fn, torch.randn(4, 2, 3), labels=torch.zeros(3, dtype=torch.long))
    with pytest.raises(ValueError, match="no anchor has a positive"):
        multi_view_loss(fn, torch.randn(3, 4), labels=torch.tensor([0, 1, 2]))
    with pytest.raises(ValueError, match="collision_free must be False"):
        multi_view_loss(ContrastiveLoss(collision_free=True), torch.randn(4, 2, 3))


def test_equals_pytorch_metric_learning_supcon() -> None:
    losses = pytest.importorskip("pytorch_metric_learning.losses")
    g = torch.Generator().manual_seed(3)
    emb = torch.randn(12, 8, generator=g, dtype=torch.float64)
    labels = torch.tensor([0, 1, 2, 0, 1, 2, 3, 3, 0, 4, 1, 2])  # label 4 alone: no positive
    theirs = losses.SupConLoss(temperature=0.1)(emb, labels)
    ours = multi_view_loss(ContrastiveLoss(temperature=0.1), emb, labels=labels)
    torch.testing.assert_close(ours, theirs, rtol=1e-6, atol=1e-6)
