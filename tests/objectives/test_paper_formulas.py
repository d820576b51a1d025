"""Formulas checked against independent float64 re-derivations from the papers (tests/reference/)."""

from __future__ import annotations

import pytest
import torch

from hardneg import ContrastiveLoss, negatives
from hardneg.objectives import Debiased
from tests.reference.hcl_multi_positive import hcl_multi_positive_loss


def _batch(seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    anchors = torch.randn(6, 5, generator=g, dtype=torch.float64)
    candidates = torch.randn(11, 5, generator=g, dtype=torch.float64)
    positive_mask = torch.rand(6, 11, generator=g) < 0.3
    positive_mask[:, 0] = True  # at least one positive per anchor
    return anchors, candidates, positive_mask


@pytest.mark.parametrize("beta", [0.0, 1.0, 3.0])
@pytest.mark.parametrize("tau_plus", [0.1, 0.3])
@pytest.mark.parametrize("estimator", ["importance", "mean"])
def test_m_positive_debiased_hard_loss_is_hcl_section_3(beta: float, tau_plus: float, estimator: str) -> None:
    t = 0.5
    anchors, candidates, pmask = _batch(int(10 * beta + 100 * tau_plus))
    loss = ContrastiveLoss(
        temperature=t,
        negatives=negatives.Hard(beta=beta),
        objective=Debiased(tau_plus, positive_estimator=estimator),  # type: ignore[arg-type]
    )
    out = loss.multi_positive(anchors, candidates, pmask, details=True)
    a = torch.nn.functional.normalize(anchors, dim=1)
    c = torch.nn.functional.normalize(candidates, dim=1)
    logits = (a @ c.T / t).tolist()
    want = [
        hcl_multi_positive_loss(
            [s for s, p in zip(row, prow) if p], [s for s, p in zip(row, prow) if not p],
            beta=beta, tau_plus=tau_plus, temperature=t, positive_estimator=estimator,
        )
        for row, prow in zip(logits, pmask.tolist())
    ]
    want_t = torch.tensor(want, dtype=torch.float64)
    torch.testing.assert_close(out.per_anchor, want_t, rtol=1e-10, atol=1e-12)


def test_the_importance_estimate_differs_from_the_plain_mean_when_beta_is_positive() -> None:
    anchors, candidates, pmask = _batch(7)
    pmask[:, 1] = True  # two positives or more: the estimators can differ

    def value(estimator: str) -> float:
        loss = ContrastiveLoss(temperature=0.5, negatives=negatives.Hard(beta=2.0),
                               objective=Debiased(0.2, positive_estimator=estimator))  # type: ignore[arg-type]
        return float(loss.multi_positive(anchors, candidates, pmask))

    assert value("importance") != pytest.approx(value("mean"), rel=1e-6)


def test_m_positive_gradients_match_finite_differences() -> None:
    anchors, candidates, pmask = _batch(3)
    loss = ContrastiveLoss(temperature=0.5, negatives=negatives.Hard(beta=1.5), objective=Debiased(0.1))
    a = anchors.clone().requires_grad_(True)
    c = candidates.clone().requires_grad_(True)
    assert torch.autograd.gradcheck(lambda x, y: loss.multi_positive(x, y, pmask), (a, c))


def test_positive_estimator_is_refused_unless_known() -> None:
    with pytest.raises(ValueError, match="positive_estimator must be 'importance' or 'mean', got 'median'"):
        Debiased(0.1, positive_estimator="median")  # type: ignore[arg-type]
