"""PML's CrossBatchMemory and SelfSupervisedLoss take the adapter (by its PML class names) and
equal their NT-Xent / SupCon equivalents over several steps; PML's module state is untouched."""

from __future__ import annotations

import pytest
import torch

pml_losses = pytest.importorskip("pytorch_metric_learning.losses")
from pytorch_metric_learning import miners  # noqa: E402
from pytorch_metric_learning.utils import loss_and_miner_utils as lmu  # noqa: E402

from hardneg import ContrastiveLoss  # noqa: E402
from hardneg.integrations import metric_learning as ml  # noqa: E402


def _steps(n: int = 4) -> list[tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(5)
    return [(torch.randn(12, 6, generator=g, dtype=torch.float64), torch.randint(0, 4, (12,), generator=g))
            for _ in range(n)]


@pytest.mark.parametrize(("ours", "theirs"), [
    (lambda: ml.NTXentLoss(loss=ContrastiveLoss(temperature=0.2)),
     lambda: pml_losses.NTXentLoss(temperature=0.2)),
    (lambda: ml.SupConLoss(0.3), lambda: pml_losses.SupConLoss(temperature=0.3)),
])
def test_cross_batch_memory_equals_pml_over_steps(ours, theirs) -> None:  # type: ignore[no-untyped-def]
    supported = list(pml_losses.CrossBatchMemory.supported_losses())
    a = pml_losses.CrossBatchMemory(ours(), embedding_size=6, memory_size=30)
    b = pml_losses.CrossBatchMemory(theirs(), embedding_size=6, memory_size=30)
    for emb, labels in _steps():  # the memory fills, then wraps around (4 × 12 > 30)
        x, y = emb.clone().requires_grad_(), emb.clone().requires_grad_()
        la, lb = a(x, labels), b(y, labels)
        torch.testing.assert_close(la, lb, rtol=1e-6, atol=1e-6)
        la.backward()
        lb.backward()
        torch.testing.assert_close(x.grad, y.grad, rtol=1e-5, atol=1e-7)
    assert pml_losses.CrossBatchMemory.supported_losses() == supported


@pytest.mark.parametrize("symmetric", [True, False])
def test_self_supervised_loss_equals_pml(symmetric: bool) -> None:
    (emb, _), (ref, _) = _steps(2)
    ours = pml_losses.SelfSupervisedLoss(ml.NTXentLoss(0.1), symmetric=symmetric)
    theirs = pml_losses.SelfSupervisedLoss(pml_losses.NTXentLoss(temperature=0.1), symmetric=symmetric)
    torch.testing.assert_close(ours(emb, ref), theirs(emb, ref), rtol=1e-6, atol=1e-6)


def test_gathering_is_refused_and_temperatures_must_agree() -> None:
    with pytest.raises(ValueError, match=r"gather_distributed must be False.*DistributedLossWrapper"):
        ml.MetricLearningLoss(loss=ContrastiveLoss(gather_distributed=True))
    with pytest.raises(ValueError, match=r"temperature=0\.5 disagrees with loss\.temperature=0\.1"):
        ml.NTXentLoss(0.5, loss=ContrastiveLoss(temperature=0.1))


def test_a_triplet_miner_differs_by_the_multiplicity_of_repeated_negatives() -> None:
    """The documented rule: PML's NTXent counts a negative once per (a, n) pair the miner returns;
    the adapter once per distinct negative. Weighting each PML term by 1/multiplicity (written here
    from the pairs) turns PML's denominator into the adapter's."""
    emb, labels = _steps(1)[0]
    triplets = miners.TripletMarginMiner(margin=0.5, type_of_triplets="all")(emb, labels)
    a1, p, a2, n = lmu.convert_to_pairs(triplets, labels)
    assert len(set(zip(a2.tolist(), n.tolist(), strict=True))) < len(a2)  # repeated pairs exist
    ours = ml.NTXentLoss(0.2)(emb, labels, triplets)
    theirs = pml_losses.NTXentLoss(temperature=0.2)(emb, labels, triplets)
    assert not torch.allclose(ours, theirs)
    # the adapter's value, from a set of negatives per anchor
    z = torch.nn.functional.normalize(emb, dim=1)
    s = z @ z.T / 0.2
    terms = []
    for a, q in zip(a1.tolist(), p.tolist(), strict=True):
        negs = sorted({j for i, j in zip(a2.tolist(), n.tolist(), strict=True) if i == a})
        terms.append(-(s[a, q] - torch.logsumexp(torch.cat([s[a, q].view(1), s[a, negs]]), 0)))
    torch.testing.assert_close(ours, torch.stack(terms).mean(), rtol=1e-6, atol=1e-6)
