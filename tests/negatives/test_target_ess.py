"""β chosen per batch from a target effective sample size (``Hard(target_ess=…)``), against a plain
float64 re-derivation of Kish's ESS from explicit weights."""

from __future__ import annotations

import math

import pytest
import torch

from hardneg import ContrastiveLoss, negatives
from hardneg.negatives import beta_for_ess, ess_fraction


def _ess_fraction_by_hand(row: list[float], beta: float) -> float:
    """``1 / (N Σ_j p_j²)`` with ``p = softmax(β s)``, written out (Kish, 1965)."""
    top = max(row)
    w = [math.exp(beta * (x - top)) for x in row]
    p = [x / sum(w) for x in w]
    return 1.0 / (len(row) * sum(x * x for x in p))


def _batch(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    logits = 3.0 * torch.randn(7, 11, generator=g, dtype=torch.float64)
    mask = torch.rand(7, 11, generator=g) > 0.25
    mask[:, 0] = True
    return logits, mask


@pytest.mark.parametrize("beta", [0.0, 0.3, 2.0, 50.0])
def test_ess_fraction_equals_the_explicit_formula(beta: float) -> None:
    logits, mask = _batch()
    got = ess_fraction(logits, mask, beta=beta)
    for i in range(7):
        row = [float(logits[i, j]) for j in range(11) if mask[i, j]]
        assert float(got[i]) == pytest.approx(_ess_fraction_by_hand(row, beta), rel=1e-10)


@pytest.mark.parametrize("target", [0.9, 0.5, 0.2])
@pytest.mark.parametrize("start", [1e-3, 1.0, 300.0])
def test_beta_for_ess_hits_the_target_from_any_start(target: float, start: float) -> None:
    logits, mask = _batch(1)
    beta = beta_for_ess(logits, mask, target=target, start=start, rtol=1e-6)
    assert beta > 0
    achieved = float(ess_fraction(logits, mask, beta=beta).mean())
    assert achieved == pytest.approx(target, abs=1e-4)
    # monotone: a larger β concentrates more
    assert float(ess_fraction(logits, mask, beta=1.1 * beta).mean()) < achieved


def test_edge_targets() -> None:
    logits, mask = _batch(2)
    assert beta_for_ess(logits, mask, target=1.0) == 0.0
    # equal logits never concentrate: the target cannot be reached, β saturates at its maximum
    flat = torch.zeros(3, 5, dtype=torch.float64)
    assert beta_for_ess(flat, torch.ones(3, 5, dtype=torch.bool), target=0.5) == 1e6
    for bad in (0.0, -0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match=r"target_ess must lie in \(0, 1\]"):
            beta_for_ess(logits, mask, target=bad)
        with pytest.raises(ValueError, match=r"target_ess must lie in \(0, 1\] or be None, got"):
            negatives.Hard(target_ess=bad)


def test_the_loss_uses_the_chosen_beta_and_reports_it() -> None:
    g = torch.Generator().manual_seed(3)
    z1 = torch.randn(64, 16, generator=g, dtype=torch.float64)
    z2 = z1 + 0.3 * torch.randn(64, 16, generator=g, dtype=torch.float64)
    hard = negatives.Hard(target_ess=0.4)
    out = ContrastiveLoss(temperature=0.2, negatives=hard)(z1, z2, details=True)
    assert out.diagnostics["ess_fraction"] == pytest.approx(0.4, abs=2e-3)
    assert out.diagnostics["beta"] == hard.beta > 0
    fixed = ContrastiveLoss(temperature=0.2, negatives=negatives.Hard(beta=hard.beta))(z1, z2)
    torch.testing.assert_close(out.loss, fixed, rtol=1e-12, atol=0)
    # a colder temperature spreads the logits: the same ESS needs a smaller β
    ContrastiveLoss(temperature=0.05, negatives=hard)(z1, z2)
    assert hard.beta < out.diagnostics["beta"]


def test_tiled_engine_refuses_target_ess() -> None:
    z = torch.randn(8, 4)
    with pytest.raises(ValueError, match=r"without rescale/detach_weights/target_ess"):
        ContrastiveLoss(memory_budget=0, negatives=negatives.Hard(target_ess=0.5))(z, z + 0.1)


def test_config_accepts_target_ess_and_refuses_it_with_annealing() -> None:
    for module in ("yaml", "pydantic", "lightning"):  # the pipeline: the "cli" extra
        pytest.importorskip(module)
    from hardneg.config import ConfigError
    from hardneg.pipeline.config import load_config

    cfg = load_config("digits", ["loss.negatives.name=hard", "loss.negatives.target_ess=0.5"])
    assert cfg.loss.negatives["target_ess"] == 0.5
    with pytest.raises(ConfigError, match=r"target_ess"):
        load_config("digits", ["loss.negatives.name=hard", "loss.negatives.target_ess=1.5"])
    with pytest.raises(ConfigError, match=r"loss.anneal.enabled.*target_ess=0.5"):
        load_config(
            "digits",
            ["loss.negatives.name=hard", "loss.negatives.target_ess=0.5", "loss.anneal.enabled=true"],
        )
