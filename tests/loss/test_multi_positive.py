"""Several positives per anchor (quick-thoughts' neighbours): Robinson et al.'s estimator with M positives.

The reference is a plain float64 loop over anchors written from the paper (ICLR 2021, §3 and
Fig. 13–14): pos = Σ_m e^{s⁺_m}; Neg = max((Σ_j w_j e^{s_j} − N τ⁺ · mean_m e^{s⁺_m}) / (1 − τ⁺),
N e^{−1/t}) with hard weights w_j = N e^{β s_j} / Σ_k e^{β s_k}; L = −log(pos / (pos + Neg)).
"""

from __future__ import annotations

import math

import pytest
import torch

from hardneg import ContrastiveLoss, negatives, objectives
from hardneg.scores import multi_positive_scores


def _reference(a, c, pos_mask, excl, *, t, beta, tau_plus):  # type: ignore[no-untyped-def]
    a = torch.nn.functional.normalize(a.double(), dim=1)
    c = torch.nn.functional.normalize(c.double(), dim=1)
    losses = []
    for i in range(a.shape[0]):
        s = [float(a[i] @ c[j]) / t for j in range(c.shape[0])]
        pos = [math.exp(s[j]) for j in range(len(s)) if pos_mask[i, j] and not excl[i, j]]
        neg = [s[j] for j in range(len(s)) if not pos_mask[i, j] and not excl[i, j]]
        n = len(neg)
        z = sum(math.exp(beta * x) for x in neg)
        weighted = sum(n * math.exp(beta * x) / z * math.exp(x) for x in neg)
        # HCL §3: E_{v∼q_β⁺}[e^{s_v}] ≈ Σ_m e^{(β+1)s⁺_m} / Σ_m e^{β s⁺_m} (the positives reweighted)
        log_pos = [math.log(p) for p in pos]
        pos_mean = sum(math.exp((beta + 1) * x) for x in log_pos) / sum(math.exp(beta * x) for x in log_pos)
        big_neg = max((weighted - n * tau_plus * pos_mean) / (1 - tau_plus), n * math.exp(-1 / t))
        if tau_plus == 0:
            big_neg = weighted
        losses.append(-math.log(sum(pos) / (sum(pos) + big_neg)))
    return sum(losses) / len(losses)


def _neighbours(b: int, context: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    idx = torch.arange(b)
    dist = (idx[:, None] - idx[None, :]).abs()
    return (dist >= 1) & (dist <= context), dist == 0


@pytest.mark.parametrize(
    ("beta", "tau_plus", "context"), [(0.0, 0.0, 1), (1.0, 0.0, 2), (0.0, 0.1, 1), (2.0, 0.05, 2)]
)
def test_matches_a_plain_float64_rederivation(beta: float, tau_plus: float, context: int) -> None:
    g = torch.Generator().manual_seed(int(10 * beta + 100 * tau_plus + context))
    a, c = torch.randn(9, 5, generator=g), torch.randn(9, 5, generator=g)
    pm, ex = _neighbours(9, context)
    loss = ContrastiveLoss(
        temperature=0.5,
        negatives=negatives.Hard(beta=beta) if beta else negatives.Uniform(),
        objective=objectives.Debiased(tau_plus) if tau_plus else objectives.InfoNCE(),
    )
    got = loss.multi_positive(a.double(), c.double(), pm, exclude=ex, details=True).loss
    assert float(got) == pytest.approx(
        _reference(a, c, pm, ex, t=0.5, beta=beta, tau_plus=tau_plus), rel=1e-10
    )


def test_one_positive_per_anchor_is_the_pair_layout() -> None:
    g = torch.Generator().manual_seed(3)
    a, c = (
        torch.randn(6, 4, generator=g, dtype=torch.float64),
        torch.randn(6, 4, generator=g, dtype=torch.float64),
    )
    pm = torch.roll(torch.eye(6, dtype=torch.bool), 1, dims=1)  # positive of i: candidate i+1
    loss = ContrastiveLoss(temperature=0.2, negatives=negatives.Hard(beta=1.0), tau_plus=0.1)
    multi = loss.multi_positive(a, c, pm, details=True)
    pair = loss.pair(a, c[torch.roll(torch.arange(6), -1)], c, mask=~pm, details=True)
    torch.testing.assert_close(multi.per_anchor, pair.per_anchor, rtol=1e-12, atol=1e-12)
    assert multi.diagnostics["pos_cosine"] == pytest.approx(pair.diagnostics["pos_cosine"], rel=1e-12)


def test_gradcheck() -> None:
    g = torch.Generator().manual_seed(1)
    a = torch.randn(5, 3, generator=g, dtype=torch.float64, requires_grad=True)
    c = torch.randn(5, 3, generator=g, dtype=torch.float64, requires_grad=True)
    pm, ex = _neighbours(5)
    loss = ContrastiveLoss(temperature=0.5, negatives=negatives.Hard(beta=1.0), tau_plus=0.05)
    assert torch.autograd.gradcheck(
        lambda x, y: loss.multi_positive(x, y, pm, exclude=ex, details=True).loss, (a, c)
    )


def test_unnormalised_large_scores_small_temperature_and_bf16_stay_finite() -> None:
    g = torch.Generator().manual_seed(2)
    pm, ex = _neighbours(16)
    big = 50 * torch.randn(16, 8, generator=g)
    hard = ContrastiveLoss(
        temperature=1.0, normalize=False, negatives=negatives.Hard(beta=2.0, rescale=True), tau_plus=0.01
    )
    out = hard.multi_positive(big.requires_grad_(), big.detach().clone(), pm, exclude=ex, details=True)
    out.loss.backward()
    assert torch.isfinite(out.loss) and torch.isfinite(big.grad).all()  # type: ignore[arg-type]
    cold = ContrastiveLoss(temperature=1e-3, negatives=negatives.Hard(beta=5.0), tau_plus=0.1)
    assert torch.isfinite(
        cold.multi_positive(torch.randn(16, 8), torch.randn(16, 8), pm, exclude=ex, details=True).loss
    )
    bf = torch.randn(16, 8, generator=g).bfloat16()
    assert torch.isfinite(cold.multi_positive(bf, bf, pm, exclude=ex, details=True).loss)


def test_refusals_name_the_problem() -> None:
    pm, ex = _neighbours(4)
    x = torch.randn(4, 3)
    with pytest.raises(ValueError, match="one positive per anchor"):
        ContrastiveLoss(objective=objectives.Hinge()).multi_positive(x, x, pm, exclude=ex, details=True)
    with pytest.raises(ValueError, match="one positive per anchor"):
        ContrastiveLoss(objective=objectives.Debiased("auto")).multi_positive(x, x, pm, exclude=ex)
    with pytest.raises(ValueError, match="row 0 has none"):
        multi_positive_scores(x, x, torch.zeros(4, 4, dtype=torch.bool), temperature=0.5)
    with pytest.raises(ValueError, match=r"positive_mask must be a bool tensor of shape \(4, 4\)"):
        multi_positive_scores(x, x, pm.float(), temperature=0.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="collision_free needs labels"):
        ContrastiveLoss(collision_free=True).multi_positive(x, x, pm, exclude=ex, details=True)


def test_k_subsampling_and_ot_negatives_apply_to_the_negatives_only() -> None:
    pm, ex = _neighbours(12, 2)
    a, c = torch.randn(12, 6), torch.randn(12, 6)
    sub = ContrastiveLoss(num_negatives=3).multi_positive(
        a, c, pm, exclude=ex, generator=torch.Generator().manual_seed(0), details=True
    )
    assert sub.diagnostics["num_negatives"] == 3.0
    ot = ContrastiveLoss(negatives=negatives.OptimalTransport(epsilon=0.5)).multi_positive(
        a, c, pm, exclude=ex, details=True
    )
    assert torch.isfinite(ot.loss)
