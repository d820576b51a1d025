"""The theory package's controlled experiments as sweeps on the latent-class modality.

``theory_ash_tradeoff`` (Ash et al., AISTATS 2022), ``theory_arora_block`` (Arora et al., ICML
2019, §6.3) and ``theory_hcl_beta`` (Robinson et al., ICLR 2021, Fig. 4 middle) are packaged
configs run by ``hardneg sweep``; here they validate, a tiny version of each runs, and the tuple
layout they train with computes the papers' losses.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest
import torch
from torch import nn

from hardneg import ContrastiveLoss
from hardneg.objectives import Logistic, block_loss

THEORY_CONFIGS = {
    "theory_ash_tradeoff": {"data.latent.num_classes", "loss.num_negatives", "loss.collision_free"},
    "theory_arora_block": {"data.block_size"},
    "theory_hcl_beta": {"loss.negatives.beta"},
}

TINY = {
    "data.latent.train_size": 96,
    "data.latent.test_size": 60,
    "data.latent.input_dim": 6,
    "model.width": 8,
    "model.feature_dim": 4,
    "model.hidden_dim": 8,
    "model.projection_dim": 4,
    "train.batch_size": 16,
    "eval.knn_k": 5,
    "eval.kwise_tasks": 10,
    "eval.figures": False,
    "sweep.seeds": [0],
}

TINY_GRIDS = {
    "theory_ash_tradeoff": {
        "data.latent.num_classes": [3],
        "loss.num_negatives": [2],
        "loss.collision_free": [False, True],
    },
    "theory_arora_block": {"data.block_size": [1, 3]},
    "theory_hcl_beta": {"loss.negatives.beta": [0.0, 2.0]},
}


class Identity(nn.Module):
    """An encoder returning ``(x, x)``: the loss sees the inputs themselves."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return x, x


@pytest.mark.parametrize("name", sorted(THEORY_CONFIGS))
def test_theory_configs_validate_with_every_grid_point(name: str) -> None:
    from hardneg.pipeline.config import load_config, packaged_config_names

    assert name in packaged_config_names()
    cfg = load_config(name, check_groups=True)
    assert cfg.data.dataset == "latent" and cfg.data.layout == "tuples"  # type: ignore[attr-defined]
    assert set(cfg.sweep.grid) == THEORY_CONFIGS[name]
    assert len(cfg.sweep.seeds) >= 2  # a sample std (ddof = 1) in table.md


@pytest.mark.parametrize("name", sorted(THEORY_CONFIGS))
def test_tiny_theory_sweep_runs(name: str, tmp_path: Path) -> None:
    from hardneg.pipeline.config import load_config
    from hardneg.pipeline.groups import run_sweep

    cfg = load_config(name, {**TINY, "sweep.grid": TINY_GRIDS[name]}, check_groups=True)
    result = run_sweep(cfg, tmp_path / name, quiet=True)
    assert len(result.runs) == 2 and all(len(r) == 1 for r in result.runs.values())
    rows = list(csv.DictReader((tmp_path / name / "results.csv").open()))
    assert len(rows) == 2 and all(0.0 <= float(r["mean_top1"]) <= 1.0 for r in rows)
    k = TINY_GRIDS[name].get("loss.num_negatives", [cfg.loss.num_negatives])[0]
    for runs in result.runs.values():
        assert runs[0].history[-1]["num_negatives"] == k  # K of the other B - 1 = 15 items' positives
    if name == "theory_ash_tradeoff":
        free = next(rs for label, rs in result.runs.items() if "collision_free=True" in label)
        assert free[0].history[-1]["collision_rate"] == 0.0


def test_tuple_layout_is_the_nce_of_each_anchors_own_negatives() -> None:
    """Uniform, InfoNCE, b = 1: −log(e^{s⁺/t} / (e^{s⁺/t} + Σ_{j≠i} e^{s_ij/t})).

    s⁺ = ⟨a_i, p_i⟩ and s_ij = ⟨a_i, p_j⟩: each anchor's negatives are the other items' positives.
    """
    from hardneg.modalities.latent import tuple_loss

    g = torch.Generator().manual_seed(0)
    a = nn.functional.normalize(torch.randn(5, 3, generator=g), dim=1)
    p = nn.functional.normalize(torch.randn(5, 3, generator=g), dim=1)
    t = 0.5
    pos = [math.exp(float(a[i] @ p[i]) / t) for i in range(5)]
    neg = [sum(math.exp(float(a[i] @ p[j]) / t) for j in range(5) if j != i) for i in range(5)]
    ref = sum(-math.log(pos[i] / (pos[i] + neg[i])) for i in range(5)) / 5
    got = tuple_loss(Identity(), ContrastiveLoss(temperature=t), a, p[:, None])
    assert float(got.loss) == pytest.approx(ref, rel=1e-5)
    assert got.per_anchor.shape == (5,)


def test_tuple_layout_with_blocks_is_arora_block_loss() -> None:
    """Logistic objective, uniform weights: Arora et al.'s eq. (12) with the other items' blocks."""
    from hardneg.modalities.latent import tuple_loss

    g = torch.Generator().manual_seed(1)
    n, b, d, t = 6, 4, 5, 0.5
    anchors, blocks = torch.randn(n, d, generator=g), torch.randn(n, b, d, generator=g)
    fa = nn.functional.normalize(anchors, dim=-1)
    fb = nn.functional.normalize(blocks, dim=-1)
    negative_blocks = torch.stack([fb[[j for j in range(n) if j != i]] for i in range(n)])  # (n, n-1, b, d)
    ref = block_loss(fa / t, fb, negative_blocks, loss="logistic", base=math.e)  # the training form
    got = tuple_loss(Identity(), ContrastiveLoss(temperature=t, objective=Logistic()), anchors, blocks)
    assert float(got.loss) == pytest.approx(float(ref), rel=1e-5)


def test_tuple_layout_collision_free_k_subset() -> None:
    from hardneg.modalities.latent import tuple_loss

    g = torch.Generator().manual_seed(2)
    labels = torch.tensor([0, 1, 0, 1, 2, 2, 0, 1])
    x = torch.randn(8, 1, 3, generator=g)
    loss = ContrastiveLoss(num_negatives=3, collision_free=True)
    out = tuple_loss(
        Identity(),
        loss,
        torch.randn(8, 3, generator=g),
        x,
        labels=labels,
        generator=torch.Generator().manual_seed(0),
    )
    assert out.diagnostics["num_negatives"] == 3.0 and out.diagnostics["collision_rate"] == 0.0
