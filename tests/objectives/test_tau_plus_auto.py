"""τ⁺ estimated from the data: the mixture-proportion estimator and ``Debiased(tau_plus="auto")``."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from hardneg import ContrastiveLoss
from hardneg.objectives import Debiased
from hardneg.objectives.prior import TauPlusEstimator, mixture_proportion


def _reference(labelled: np.ndarray, unlabelled: np.ndarray, min_fraction: float) -> float:
    """Float64 loops straight from the definition: min over labelled thresholds of F_U(t) / F_L(t)."""
    best = np.inf
    for t in labelled:
        f_l = np.mean(labelled >= t)
        if f_l + 1e-12 < min_fraction:
            continue
        best = min(best, np.mean(unlabelled >= t) / f_l)
    return float(min(max(best, 0.0), 1.0))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("min_fraction", [0.05, 0.1, 0.5, 1.0])
def test_estimator_matches_the_definition_with_ties(seed: int, min_fraction: float) -> None:
    rng = np.random.default_rng(seed)
    lab = np.round(rng.normal(1.0, 1.0, size=rng.integers(1, 60)), 1)  # rounding makes ties
    unl = np.round(rng.normal(0.0, 1.0, size=rng.integers(1, 200)), 1)
    got = mixture_proportion(torch.tensor(lab), torch.tensor(unl), min_fraction=min_fraction)
    assert got == pytest.approx(_reference(lab, unl, min_fraction), abs=1e-12)


@pytest.mark.parametrize("kappa", [0.0, 0.05, 0.1, 0.3])
def test_estimator_recovers_a_known_mixture_proportion(kappa: float) -> None:
    g = torch.Generator().manual_seed(1)
    n = 40_000
    labelled = 3.0 + torch.randn(n // 2, generator=g, dtype=torch.float64)
    from_p = torch.rand(n, generator=g) < kappa
    unlabelled = torch.where(from_p, 3.0, 0.0) + torch.randn(n, generator=g, dtype=torch.float64)
    assert mixture_proportion(labelled, unlabelled) == pytest.approx(kappa, abs=0.02)


def test_estimator_is_invariant_to_increasing_transforms() -> None:
    g = torch.Generator().manual_seed(2)
    lab, unl = torch.randn(300, generator=g) + 1, torch.randn(900, generator=g)
    base = mixture_proportion(lab, unl)
    assert mixture_proportion(lab / 0.07 + 3, unl / 0.07 + 3) == pytest.approx(base, abs=1e-12)
    assert mixture_proportion(lab.exp(), unl.exp()) == pytest.approx(base, abs=1e-12)
    assert mixture_proportion(lab, lab) == 1.0


def test_estimator_refuses_bad_input() -> None:
    with pytest.raises(ValueError, match="labelled must be a non-empty 1-d tensor"):
        mixture_proportion(torch.tensor([]), torch.ones(3))
    with pytest.raises(ValueError, match="unlabelled must be a non-empty 1-d tensor"):
        mixture_proportion(torch.ones(3), torch.ones(2, 2))
    with pytest.raises(ValueError, match=r"min_fraction must be in \(0, 1\], got 0"):
        mixture_proportion(torch.ones(3), torch.ones(3), min_fraction=0)
    for kw, match in (({"momentum": 1.0}, "momentum"), ({"tau_max": 1.0}, "tau_max"),
                      ({"min_fraction": 1.5}, "min_fraction")):
        with pytest.raises(ValueError, match=match):
            TauPlusEstimator(**kw)
    with pytest.raises(ValueError, match="tau_plus must be a number in \\[0, 1\\) or 'auto', got 'autox'"):
        Debiased("autox")


def test_running_estimate_smooths_clips_and_is_saved() -> None:
    est = TauPlusEstimator(momentum=0.5, tau_max=0.4)
    assert est.current == 0.0
    pos = torch.tensor([1.0, 2.0, 3.0, 4.0])
    mask = torch.ones(1, 4, dtype=torch.bool)
    first = mixture_proportion(pos, torch.tensor([0.0, 0.5, 3.5, 4.5]))
    est.update(pos, torch.tensor([[0.0, 0.5, 3.5, 4.5]]), mask)
    assert float(est.value) == pytest.approx(first)
    est.update(pos, torch.tensor([[5.0, 6.0, 7.0, 8.0]]), mask)  # estimate 1: v = (first + 1) / 2
    assert float(est.value) == pytest.approx(0.5 * first + 0.5)
    assert est.current == pytest.approx(min(0.5 * first + 0.5, 0.4))
    state = est.state_dict()
    fresh = TauPlusEstimator(momentum=0.5, tau_max=0.4)
    fresh.load_state_dict(state)
    assert float(fresh.value) == float(est.value) and int(fresh.updates) == 2


def _latent_batch(b: int, *, classes: int, positive: str, seed: int) -> tuple[torch.Tensor, ...]:
    """Balanced latent classes; the positive is another sample of the class, or a near copy (augmentation)."""
    g = torch.Generator().manual_seed(seed)
    means = F.normalize(torch.randn(classes, 32, generator=g, dtype=torch.float64), dim=1)
    labels = torch.arange(b) % classes
    z1 = means[labels] + 0.15 * torch.randn(b, 32, generator=g, dtype=torch.float64)
    if positive == "class":
        z2 = means[labels] + 0.15 * torch.randn(b, 32, generator=g, dtype=torch.float64)
    else:
        z2 = z1 + 0.02 * torch.randn(b, 32, generator=g, dtype=torch.float64)
    return z1, z2, labels


def test_auto_estimate_tracks_the_true_collision_rate_with_true_positives() -> None:
    loss = ContrastiveLoss(temperature=0.5, objective=Debiased("auto"))
    for step in range(5):
        z1, z2, labels = _latent_batch(400, classes=10, positive="class", seed=step)
        out = loss(z1, z2, labels=labels, details=True)
    truth = out.diagnostics["collision_rate"]  # fraction of valid negatives sharing the anchor's class
    assert truth == pytest.approx(0.1, abs=0.005)
    assert out.diagnostics["tau_plus"] == pytest.approx(truth, abs=0.03)


def test_auto_estimate_is_biased_to_zero_with_augmented_positives() -> None:
    """The documented caveat: a near copy is no sample of the class's similarities."""
    loss = ContrastiveLoss(temperature=0.5, objective=Debiased("auto"))
    z1, z2, labels = _latent_batch(400, classes=10, positive="augmented", seed=0)
    out = loss(z1, z2, labels=labels, details=True)
    assert out.diagnostics["collision_rate"] == pytest.approx(0.1, abs=0.005)
    assert out.diagnostics["tau_plus"] < 0.02


def test_auto_uses_the_estimate_as_a_fixed_tau_plus_and_freezes_in_eval_mode() -> None:
    z1, z2, _ = _latent_batch(64, classes=4, positive="class", seed=3)
    auto = ContrastiveLoss(temperature=0.5, objective=Debiased("auto"))
    value = auto(z1, z2)
    tau = auto.objective.tau_plus
    assert 0.0 < tau < 0.5
    fixed = ContrastiveLoss(temperature=0.5, objective=Debiased(tau))
    assert torch.allclose(value, fixed(z1, z2), rtol=0, atol=1e-12)
    auto.eval()
    before = float(auto.objective.estimator.value)
    z1b, z2b, _ = _latent_batch(64, classes=4, positive="augmented", seed=4)
    auto(z1b, z2b)
    assert float(auto.objective.estimator.value) == before
    # the estimate travels with the loss's state (checkpoints, resume)
    assert any(k.endswith("estimator.value") for k in auto.state_dict())


def test_auto_gradcheck_with_the_estimate_frozen() -> None:
    loss = ContrastiveLoss(temperature=0.5, objective=Debiased("auto"))
    z1, z2, _ = _latent_batch(6, classes=3, positive="class", seed=5)  # 384 inputs: two of each class
    loss(z1, z2)
    loss.eval()
    a = z1.clone().requires_grad_(True)
    b = z2.clone().requires_grad_(True)
    assert torch.autograd.gradcheck(lambda x, y: loss(x, y), (a, b))


def test_auto_is_refused_by_the_tiled_engine_with_a_clear_error() -> None:
    z1, z2, _ = _latent_batch(16, classes=4, positive="class", seed=6)
    loss = ContrastiveLoss(objective=Debiased("auto"), memory_budget=0)
    with pytest.raises(ValueError, match="row-wise"):
        loss(z1.float(), z2.float())


def test_config_accepts_auto_and_names_a_bad_string() -> None:
    for module in ("yaml", "pydantic", "lightning"):  # the pipeline: the "cli" extra
        pytest.importorskip(module)
    from hardneg.config import ConfigError
    from hardneg.pipeline.build import build_loss
    from hardneg.pipeline.config import load_config

    cfg = load_config("digits", ["loss.objective.tau_plus=auto"])
    assert build_loss(cfg).objective.auto
    with pytest.raises(ConfigError, match="tau_plus"):
        load_config("digits", ["loss.objective.tau_plus=sometimes"])
