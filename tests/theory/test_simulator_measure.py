"""Latent-class simulator (collision rate vs τ_K by Monte Carlo) and measured-vs-bound reports."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from hardneg.data.latent import LatentClassSimulator
from hardneg.theory.measure import load_features, measure_bounds


def tau_enum(rho: list[float], k: int) -> float:
    return 1.0 - sum(p * (1 - p) ** k for p in rho)


@pytest.mark.parametrize(
    ("rho", "k"), [([0.1] * 10, 5), ([0.5, 0.3, 0.2], 3), ([1 / 50] * 50, 40)]
)
def test_empirical_collision_rate(rho: list[float], k: int) -> None:
    """Monte Carlo over 20 000 tuples: |rate − τ_K| < 4 standard errors."""
    sim = LatentClassSimulator(num_classes=len(rho), class_probs=rho, input_dim=2, seed=3)
    batch = sim.sample_tuples(20_000, k)
    rate = (batch.negative_classes == batch.anchor_class[:, None]).any(dim=1).float().mean()
    tau = tau_enum(rho, k)
    se = math.sqrt(tau * (1 - tau) / 20_000)
    assert abs(float(rate) - tau) < 4 * se
    assert sim.collision_probability(k) == pytest.approx(tau, abs=1e-12)
    # negatives come from the marginal: class frequencies ≈ ρ
    freq = np.bincount(batch.negative_classes.reshape(-1).numpy(), minlength=len(rho))
    freq = freq / freq.sum()
    assert np.allclose(freq, rho, atol=0.01)


def test_collision_free_and_shapes() -> None:
    sim = LatentClassSimulator(num_classes=3, input_dim=4, seed=0)
    b = sim.sample_tuples(500, 6, collision_free=True)
    assert not (b.negative_classes == b.anchor_class[:, None]).any()
    assert b.anchor.shape == (500, 4) and b.negatives.shape == (500, 6, 4)
    assert b.anchor.dtype == torch.float32
    blk = sim.sample_blocks(50, 5)
    assert blk.positives.shape == (50, 5, 4) and blk.negatives.shape == (50, 5, 4)
    with pytest.raises(ValueError, match="num_classes"):
        LatentClassSimulator(num_classes=1, seed=0).sample_tuples(3, 1, collision_free=True)


def test_gaussian_class_structure() -> None:
    sim = LatentClassSimulator(num_classes=4, input_dim=8, noise_std=0.5, mean_scale=2.0, seed=1)
    x, y = sim.sample_labelled(4000)
    for c in range(4):
        m = x[y == c].numpy().mean(axis=0)
        assert np.allclose(m, sim.means[c], atol=0.1)
        assert x[y == c].numpy().std(axis=0).mean() == pytest.approx(0.5, abs=0.05)


def test_topics_kind() -> None:
    sim = LatentClassSimulator(num_classes=30, kind="topics", vocab_size=300, seed=0)
    x, _y = sim.sample_labelled(200)
    assert x.shape == (200, 300)
    assert torch.all(x >= 0)
    assert torch.allclose(x.norm(dim=1), torch.ones(200), atol=1e-5)
    with pytest.raises(ValueError, match="topic_words"):
        LatentClassSimulator(num_classes=3, kind="topics", vocab_size=5, topic_words=10)


def test_dataset_api() -> None:
    sim = LatentClassSimulator(num_classes=5, input_dim=3, length=100, seed=7)
    assert len(sim) == 100
    v1, v2, lab = sim[10]
    w1, w2, lab2 = sim[10]
    assert torch.equal(v1, w1) and torch.equal(v2, w2) and lab == lab2
    assert not torch.equal(v1, v2)
    loader = torch.utils.data.DataLoader(sim, batch_size=25)
    a, _b, labels = next(iter(loader))
    assert a.shape == (25, 3) and labels.shape == (25,)
    other = LatentClassSimulator(num_classes=5, input_dim=3, length=100, seed=8)
    assert not torch.equal(other[10][0], v1)
    with pytest.raises(IndexError):
        sim[100]
    with pytest.raises(ValueError, match="kind"):
        LatentClassSimulator(num_classes=3, kind="images")
    with pytest.raises(TypeError):
        LatentClassSimulator(3)  # type: ignore[misc]


def test_measure_on_one_hot_features() -> None:
    """f(x) = e_y: v = 1 − 1[c⁻ = c] so hinge L_un equals the collision rate; s(f) = 0."""
    rng = np.random.default_rng(0)
    y = rng.integers(0, 5, 3000)
    f = np.eye(5)[y]
    rep = measure_bounds(f, y, num_negatives=3, num_tuples=20_000, block_size=2)
    q = rep.quantities
    assert q["s(f)"] == 0.0
    assert q["L_un (K=3)"] == pytest.approx(q["collision rate (empirical)"], abs=1e-12)
    assert q["L_un^neq Arora (K=3)"] == 0.0
    assert q["mean-classifier accuracy"] == 1.0
    assert q["L^mu_sup binary avg"] == 0.0
    assert q["L^mu_sup 5-way (Ash)"] == 0.0
    assert q["L^mu_sup 4-wise avg"] == 0.0
    tau_k = q["tau_K (K=3)"]
    assert abs(q["collision rate (empirical)"] - tau_k) < 4 * math.sqrt(tau_k / 20_000)
    for r in rep.rows:  # (L − floor)-type bounds are ≈ 0 up to (amplified) Monte Carlo noise
        if not any(t in r.theorem for t in ("Lemma 4.3", "Prop 6.2", "Ash Theorem 1")):
            assert r.holds, r
        elif "Ash" not in r.theorem:
            assert r.bound > -0.02, r
    d = rep.to_dict()
    assert {"settings", "quantities", "bounds"} <= set(d)
    assert "Ash Theorem 1" in rep.to_text()
    logi = measure_bounds(f, y, num_negatives=1, loss="logistic", num_tuples=2000)
    # base-2 logistic at v ∈ {0, 1}: same class → log2(2) = 1
    assert logi.quantities["L_un (k=1)"] >= logi.quantities["tau (k=1)"] - 0.05


def test_load_features(tmp_path: Path) -> None:
    f = np.random.default_rng(0).normal(size=(20, 3))
    y = np.arange(20) % 4
    np.savez(tmp_path / "features.npz", features=f, labels=y)
    f2, y2 = load_features(tmp_path)
    assert np.allclose(f, f2) and np.array_equal(y, y2)
    np.savez(tmp_path / "bad.npz", feats=f)
    with pytest.raises(ValueError, match="features"):
        load_features(tmp_path / "bad.npz")
    with pytest.raises(FileNotFoundError):
        load_features(tmp_path / "missing.npz")
    with pytest.raises(ValueError, match="2 classes"):
        measure_bounds(f, np.zeros(20, dtype=int))
