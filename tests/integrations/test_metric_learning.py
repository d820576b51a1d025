"""The pytorch-metric-learning adapter equals PML's own NTXentLoss / SupConLoss at β = 0, τ⁺ = 0."""

from __future__ import annotations

import pytest
import torch

pml_losses = pytest.importorskip("pytorch_metric_learning.losses")
from pytorch_metric_learning import miners, reducers  # noqa: E402

from hardneg import ContrastiveLoss, negatives  # noqa: E402
from hardneg.integrations.metric_learning import MetricLearningLoss  # noqa: E402


def _batch(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    emb = torch.randn(24, 10, generator=g, dtype=torch.float64)
    labels = torch.randint(0, 5, (24,), generator=g)
    labels[-1] = 7  # alone with its label: no positive pair
    return emb, labels


@pytest.mark.parametrize("t", [0.07, 0.5])
def test_pairs_equal_ntxent(t: float) -> None:
    emb, labels = _batch()
    ours = MetricLearningLoss(loss=ContrastiveLoss(temperature=t))
    torch.testing.assert_close(ours(emb, labels), pml_losses.NTXentLoss(temperature=t)(emb, labels),
                               rtol=1e-6, atol=1e-6)


def test_all_positives_equal_supcon_and_ref_emb_works() -> None:
    emb, labels = _batch(1)
    ours = MetricLearningLoss(loss=ContrastiveLoss(temperature=0.1), positives="all")
    theirs = pml_losses.SupConLoss(temperature=0.1)
    torch.testing.assert_close(ours(emb, labels), theirs(emb, labels), rtol=1e-6, atol=1e-6)
    ref, ref_labels = _batch(2)
    torch.testing.assert_close(ours(emb, labels, ref_emb=ref, ref_labels=ref_labels),
                               theirs(emb, labels, ref_emb=ref, ref_labels=ref_labels), rtol=1e-6, atol=1e-6)


def test_a_miners_pairs_and_a_reducer_are_used_as_pml_uses_them() -> None:
    emb, labels = _batch(3)
    pairs = miners.PairMarginMiner(pos_margin=0.2, neg_margin=0.8)(emb, labels)
    for reducer in (reducers.MeanReducer(), reducers.SumReducer(), reducers.AvgNonZeroReducer()):
        ours = MetricLearningLoss(loss=ContrastiveLoss(temperature=0.2), reducer=reducer)
        theirs = pml_losses.NTXentLoss(temperature=0.2, reducer=reducer)
        torch.testing.assert_close(ours(emb, labels, pairs), theirs(emb, labels, pairs), rtol=1e-6, atol=1e-6)


def test_hard_negatives_train_through_pml_with_gradients() -> None:
    emb, labels = _batch(4)
    emb.requires_grad_(True)
    hard = MetricLearningLoss(loss=ContrastiveLoss(temperature=0.2, negatives=negatives.Hard(beta=2.0)))
    uniform = MetricLearningLoss(loss=ContrastiveLoss(temperature=0.2))
    value = hard(emb, labels)
    (grad,) = torch.autograd.grad(value, emb)
    assert torch.isfinite(grad).all() and grad.abs().sum() > 0
    assert float(value.detach()) >= float(uniform(emb, labels))  # hard weights favour the largest logits


def test_bad_arguments_are_named() -> None:
    with pytest.raises(ValueError, match="positives must be one of"):
        MetricLearningLoss(positives="some")
    with pytest.raises(ValueError, match="distance is not used"):
        MetricLearningLoss(distance=object())
    with pytest.raises(TypeError, match=r"loss must be a hardneg\.ContrastiveLoss"):
        MetricLearningLoss(loss=torch.nn.MSELoss())
