"""The decoupled objective (Yeh et al., ECCV 2022) against a float64 transcription of the paper's
formula, in every engine, with hard negatives and K-subsampling, and through gradcheck."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from hardneg import ContrastiveLoss, negatives
from hardneg.objectives import Decoupled


def _paper_dcl(
    z1: torch.Tensor, z2: torch.Tensor, t: float, sigma: float | None, beta: float = 0.0
) -> torch.Tensor:
    """L_DC / L_DCW written out for one direction, loops over anchors, then both directions averaged.

    L_i = −w_i ⟨z1_i, z2_i⟩/t + log Σ_{k≠i} q_ik (e^{⟨z1_i, z1_k⟩/t} + e^{⟨z1_i, z2_k⟩/t}), where
    q are HCL's importance weights e^{β s}/mean(e^{β s}) over the 2B − 2 negatives (1 for β = 0)
    and w_i = 2 − B·softmax(⟨z1, z2⟩/σ)_i (1 without σ).
    """
    def one_way(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        a, b = F.normalize(a, dim=1), F.normalize(b, dim=1)
        n = a.shape[0]
        u = (a * b).sum(dim=1)
        w = 2 - n * torch.softmax(u / sigma, dim=0) if sigma is not None else torch.ones(n, dtype=a.dtype)
        out = []
        for i in range(n):
            logits = []
            for k in range(n):
                if k != i:
                    logits += [a[i] @ a[k] / t, a[i] @ b[k] / t]
            s = torch.stack(logits)
            q = torch.exp(beta * s) / torch.exp(beta * s).mean()
            out.append(-w[i] * u[i] / t + torch.log((q * torch.exp(s)).sum()))
        return torch.stack(out)

    return torch.cat([one_way(z1, z2), one_way(z2, z1)]).mean()


def _views(b: int = 6, d: int = 5) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(3)
    z1 = torch.randn(b, d, generator=g, dtype=torch.float64)
    return z1, z1 + 0.5 * torch.randn(b, d, generator=g, dtype=torch.float64)


@pytest.mark.parametrize("sigma", [None, 0.5])
@pytest.mark.parametrize("beta", [0.0, 1.0])
@pytest.mark.parametrize("engine", ["materialised", "tiled"])
def test_equals_the_papers_formula_in_every_engine(sigma: float | None, beta: float, engine: str) -> None:
    z1, z2 = _views()
    t = 0.2
    neg = negatives.Hard(beta=beta) if beta else negatives.Uniform()
    loss_fn = ContrastiveLoss(temperature=t, objective=Decoupled(sigma=sigma), negatives=neg,
                              engine=engine, tile_size=4)
    a1, a2 = z1.clone().requires_grad_(), z2.clone().requires_grad_()
    r1, r2 = z1.clone().requires_grad_(), z2.clone().requires_grad_()
    got = loss_fn(a1, a2)
    want = _paper_dcl(r1, r2, t, sigma, beta)
    torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)
    got.backward()
    want.backward()
    torch.testing.assert_close(a1.grad, r1.grad, rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(a2.grad, r2.grad, rtol=1e-9, atol=1e-12)


def test_without_the_positive_it_differs_from_infonce_by_the_coupling_term() -> None:
    """InfoNCE = log(e^{s⁺} + Σ e^s) − s⁺ and DCL = log Σ e^s − s⁺: their difference per anchor is
    log(1 + e^{s⁺}/Σ e^s) ≥ 0 (the coupling the paper removes)."""
    z1, z2 = _views()
    nce = ContrastiveLoss(temperature=0.3)(z1, z2, details=True).per_anchor
    dcl = ContrastiveLoss(temperature=0.3, objective=Decoupled())(z1, z2, details=True).per_anchor
    assert bool((nce > dcl).all())


def test_k_subsampled_gathered_engine_equals_materialised() -> None:
    z1, z2 = _views(b=40, d=6)
    kw = {"temperature": 0.5, "objective": Decoupled(sigma=0.5), "negatives": negatives.Hard(beta=0.5),
          "num_negatives": 4}
    values = []
    for engine in ("materialised", "gathered"):
        g = torch.Generator().manual_seed(11)
        values.append(ContrastiveLoss(engine=engine, **kw)(z1, z2, generator=g))
    torch.testing.assert_close(values[0], values[1], rtol=1e-10, atol=1e-12)


def test_gradcheck() -> None:
    z1, z2 = _views(b=4, d=3)
    loss_fn = ContrastiveLoss(
        temperature=0.5, objective=Decoupled(sigma=0.5), negatives=negatives.Hard(beta=1.0)
    )
    assert torch.autograd.gradcheck(loss_fn, (z1.requires_grad_(), z2.requires_grad_()))


def test_vmf_weights_have_mean_one_and_sigma_is_checked() -> None:
    from hardneg.objectives import von_mises_fisher_weights

    w = von_mises_fisher_weights(torch.randn(9, dtype=torch.float64), 0.5)
    torch.testing.assert_close(w.mean(), torch.tensor(1.0, dtype=torch.float64))
    with pytest.raises(ValueError, match="sigma"):
        Decoupled(sigma=0.0)
