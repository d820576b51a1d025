"""The pytorch-metric-learning adapter equals PML's own NTXentLoss / SupConLoss at β = 0, τ⁺ = 0,
with any of PML's distances it accepts (values and gradients); the two are siblings."""

from __future__ import annotations

import math

import pytest
import torch

pml_losses = pytest.importorskip("pytorch_metric_learning.losses")
from pytorch_metric_learning import distances, miners, reducers  # noqa: E402

from hardneg import ContrastiveLoss, negatives  # noqa: E402
from hardneg.integrations import metric_learning as ml  # noqa: E402
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
    with pytest.raises(TypeError, match=r"loss must be a hardneg\.ContrastiveLoss"):
        MetricLearningLoss(loss=torch.nn.MSELoss())


_DISTANCES = [
    pytest.param(lambda: distances.CosineSimilarity(), id="cosine"),
    pytest.param(lambda: distances.DotProductSimilarity(), id="dot-normalised"),
    pytest.param(lambda: distances.DotProductSimilarity(normalize_embeddings=False), id="dot"),
    pytest.param(lambda: distances.DotProductSimilarity(p=1), id="dot-l1-normalised"),
    pytest.param(lambda: distances.CosineSimilarity(power=3), id="cosine-cubed"),
    pytest.param(lambda: distances.LpDistance(), id="l2-normalised"),
    pytest.param(lambda: distances.LpDistance(normalize_embeddings=False), id="l2"),
    pytest.param(lambda: distances.LpDistance(p=1), id="l1-normalised"),
    pytest.param(lambda: distances.LpDistance(power=2), id="l2-squared"),
    pytest.param(lambda: distances.LpDistance(normalize_embeddings=False, p=3, power=2), id="l3-squared"),
]


@pytest.mark.parametrize("name", ["NTXentLoss", "SupConLoss"])
@pytest.mark.parametrize("make", _DISTANCES)
def test_a_pml_distance_means_what_it_means_in_pml(name: str, make) -> None:  # type: ignore[no-untyped-def]
    """PML's own loss with the same distance: equal values and gradients (float64), with and
    without ref_emb."""
    emb, labels = _batch(5)
    ref, ref_labels = _batch(6)
    emb = emb / 2  # unnormalised dot products of order 10 at t = 0.5
    for refs in ({}, {"ref_emb": ref, "ref_labels": ref_labels}):
        values, grads = [], []
        for cls in (getattr(ml, name), getattr(pml_losses, name)):
            x = emb.clone().requires_grad_()
            value = cls(0.5, distance=make())(x, labels, **refs)
            values.append(value.detach())
            grads.append(torch.autograd.grad(value, x)[0])
        torch.testing.assert_close(values[0], values[1], rtol=1e-9, atol=1e-10)
        torch.testing.assert_close(grads[0], grads[1], rtol=1e-8, atol=1e-10)
        assert grads[0].abs().sum() > 0


def test_hard_negatives_with_an_lp_distance_equal_a_float64_re_derivation() -> None:
    """Hard(β) on PML's LpDistance logits s = −‖a − c‖ / t: per positive pair (a, p) with N
    negatives, −s⁺ + log(e^{s⁺} + N Σ_j e^{(1+β) s_j} / Σ_j e^{β s_j}) (Robinson et al., ICLR 2021,
    eq. (4) with τ⁺ = 0), the mean over the pairs."""
    emb, labels = _batch(7)
    t, beta = 0.5, 1.5
    hard = ContrastiveLoss(temperature=t, negatives=negatives.Hard(beta=beta), normalize=False)
    loss = ml.NTXentLoss(loss=hard, distance=distances.LpDistance(normalize_embeddings=False))
    terms = []
    x = emb.tolist()
    for i in range(len(x)):
        for j in range(len(x)):
            if i == j or labels[i] != labels[j]:
                continue
            s_pos = -math.dist(x[i], x[j]) / t
            s = [-math.dist(x[i], x[k]) / t for k in range(len(x)) if labels[k] != labels[i]]
            hard = len(s) * sum(math.exp((1 + beta) * v) for v in s) / sum(math.exp(beta * v) for v in s)
            terms.append(math.log(math.exp(s_pos) + hard) - s_pos)
    expected = torch.tensor(sum(terms) / len(terms), dtype=torch.float64)
    torch.testing.assert_close(loss(emb, labels), expected, rtol=1e-10, atol=1e-12)
    uniform = ml.NTXentLoss(t, distance=distances.LpDistance(normalize_embeddings=False))(emb, labels)
    assert not torch.allclose(uniform, expected)


def test_the_default_distance_is_the_loss_s_similarity() -> None:
    assert type(ml.NTXentLoss().distance) is distances.CosineSimilarity
    plain = ml.SupConLoss(loss=ContrastiveLoss(temperature=0.1, normalize=False)).distance
    assert type(plain) is distances.DotProductSimilarity and not plain.normalize_embeddings
    assert not ml.NTXentLoss(distance=distances.LpDistance(normalize_embeddings=False)).loss.normalize


def test_an_unsupported_distance_is_refused_naming_what_is_allowed() -> None:
    allowed = r"distance must be one of pytorch_metric_learning\.distances\.\{CosineSimilarity, " \
        r"DotProductSimilarity, LpDistance\}, got "

    class Squared(distances.LpDistance):
        pass

    for bad, got in ((distances.SNRDistance(), r"SNRDistance\(\) \(SNRDistance\)"),
                     (Squared(), r"Squared\(\) \(Squared\)"), ("cosine", r"'cosine' \(str\)")):
        for make in (MetricLearningLoss, ml.NTXentLoss, ml.SupConLoss):
            with pytest.raises(ValueError, match=allowed + got):
                make(distance=bad)
    with pytest.raises(ValueError, match=r"distance=LpDistance\(normalize_embeddings=False, p=2, power=1\) "
                       r"disagrees with loss\.normalize=True"):
        ml.NTXentLoss(loss=ContrastiveLoss(), distance=distances.LpDistance(normalize_embeddings=False))
    ot = ContrastiveLoss(negatives=negatives.OptimalTransport(epsilon=0.5))
    with pytest.raises(ValueError, match=r"OptimalTransport reads cosines.*got distance=LpDistance\(norm"):
        ml.NTXentLoss(loss=ot, distance=distances.LpDistance())
    ml.NTXentLoss(loss=ot, distance=distances.CosineSimilarity())  # its cosines: accepted


def test_supcon_is_not_a_kind_of_ntxent() -> None:
    assert not isinstance(ml.SupConLoss(), ml.NTXentLoss)
    assert not isinstance(ml.NTXentLoss(), ml.SupConLoss)
    assert isinstance(ml.SupConLoss(), MetricLearningLoss) and ml.SupConLoss().positives == "all"
    assert ml.NTXentLoss().positives == "pairs"
    assert (ml.NTXentLoss().loss.temperature, ml.SupConLoss().loss.temperature) == (0.07, 0.1)
