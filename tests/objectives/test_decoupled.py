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


def _lightly_dclw_transcription(z1: torch.Tensor, z2: torch.Tensor, t: float, sigma: float) -> torch.Tensor:
    """A float64 transcription (ours, loops over anchors) of the formula of lightly's ``DCLWLoss``
    (``lightly/loss/dcl_loss.py``): per direction, with unit rows ``a`` (anchors), ``b`` (their
    positives) and ``u_i = ⟨a_i, b_i⟩``, the weights ``w = 2 − B·softmax(u/σ)`` computed from
    *detached* embeddings, and

        L_i = −w_i u_i / t + log( Σ_{k≠i} e^{⟨a_i, a_k⟩/t} + Σ_{k≠i} e^{⟨a_i, b_k⟩/t} ),

    the mean over i; the loss is the mean of the two directions."""

    def one_way(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        a, b = F.normalize(a.double(), dim=1), F.normalize(b.double(), dim=1)
        n = a.shape[0]
        with torch.no_grad():
            w = 2 - n * torch.softmax((a * b).sum(dim=1) / sigma, dim=0)
        total = torch.zeros((), dtype=torch.float64)
        for i in range(n):
            negs = [torch.exp(a[i] @ c[k] / t) for c in (a, b) for k in range(n) if k != i]
            total = total - w[i] * (a[i] @ b[i]) / t + torch.log(torch.stack(negs).sum())
        return total / n

    return 0.5 * (one_way(z1, z2) + one_way(z2, z1))


def _value_and_grads(fn, z1: torch.Tensor, z2: torch.Tensor):  # type: ignore[no-untyped-def]
    a, b = z1.clone().requires_grad_(), z2.clone().requires_grad_()
    value = fn(a, b)
    value.backward()
    return value.detach(), a.grad, b.grad


@pytest.mark.parametrize("engine", ["materialised", "tiled"])
def test_detached_weights_equal_the_transcription_of_lightlys_dclw(engine: str) -> None:
    z1, z2 = _views()
    t, sigma = 0.2, 0.5
    loss_fn = ContrastiveLoss(temperature=t, objective=Decoupled(sigma=sigma, detach_weights=True),
                              engine=engine, tile_size=4)
    got = _value_and_grads(loss_fn, z1, z2)
    want = _value_and_grads(lambda a, b: _lightly_dclw_transcription(a, b, t, sigma), z1, z2)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, rtol=1e-10, atol=1e-12)


def test_the_weights_gradient_is_what_detach_weights_removes() -> None:
    """Equal values; the gradients differ (the weights' own term) by several percent."""
    z1, z2 = _views()
    kept, detached = (
        _value_and_grads(ContrastiveLoss(temperature=0.2, objective=Decoupled(sigma=0.5, detach_weights=d)),
                         z1, z2)
        for d in (False, True)
    )
    torch.testing.assert_close(kept[0], detached[0], rtol=1e-14, atol=0.0)
    g_kept, g_detached = torch.cat(kept[1:]), torch.cat(detached[1:])
    assert float((g_kept - g_detached).norm() / g_kept.norm()) > 1e-2


def _lightly_dcl_module():  # type: ignore[no-untyped-def]
    """lightly's ``lightly/loss/dcl_loss.py``, loaded from its file: ``import lightly.loss`` needs
    torchvision (``lightly/loss/__init__.py`` imports the dense losses), the DCL module itself does not."""
    import importlib.util
    from pathlib import Path

    lightly = pytest.importorskip("lightly")
    path = Path(lightly.__file__).parent / "loss" / "dcl_loss.py"
    spec = importlib.util.spec_from_file_location("_lightly_dcl_loss", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.filterwarnings("ignore:To copy construct from a tensor")  # lightly's torch.tensor(tensor)
def test_detached_weights_equal_lightlys_dclw_loss() -> None:
    dcl = _lightly_dcl_module()
    z1, z2 = _views(b=8, d=5)
    t, sigma = 0.2, 0.5
    ours = ContrastiveLoss(temperature=t, objective=Decoupled(sigma=sigma, detach_weights=True))
    got = _value_and_grads(ours, z1, z2)
    want = _value_and_grads(dcl.DCLWLoss(temperature=t, sigma=sigma), z1, z2)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, rtol=1e-10, atol=1e-12)


def test_detach_weights_is_a_config_parameter_and_checked() -> None:
    pytest.importorskip("pydantic", reason="the config registry needs pydantic (not in the old-torch job)")
    from hardneg.pipeline.registry import OBJECTIVES

    assert OBJECTIVES.params("decoupled") == {"sigma": None, "detach_weights": False}
    built = OBJECTIVES.build("decoupled", {"sigma": 0.5, "detach_weights": True})
    assert built.detach_weights is True and built.sigma == 0.5
    with pytest.raises(ValueError, match=r"detach_weights must be a bool \(True or False\), got 'yes'"):
        Decoupled(sigma=0.5, detach_weights="yes")  # type: ignore[arg-type]
