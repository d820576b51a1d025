"""Training InfoGraph through the pipeline: the loss numbers, seeded bits, resume, the released loss."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F

pytest.importorskip("torch_geometric")

from hardneg.config.errors import ConfigError
from hardneg.data.batches import EpochBatchSampler
from hardneg.data.graphs.synthetic import synthetic_motifs
from hardneg.infograph.objective import InfoGraphLoss
from hardneg.infograph.released import released_local_global_loss
from hardneg.modalities import get_modality
from hardneg.modalities.graphs import GraphBatches
from hardneg.negatives import Hard
from hardneg.pipeline.build import build_loss
from hardneg.pipeline.config import load_config
from hardneg.pipeline.experiment import evaluate_run, thread_limits, train_run
from hardneg.seeding import step_generator

from .helpers import TINY


def _reference_loop(cfg: Any, loss: InfoGraphLoss) -> tuple[np.ndarray, list[float]]:
    """InfoGraph trained by hand with the pipeline's seeding (weights, batch order, step generators)."""
    from torch_geometric.data import Batch

    graphs = get_modality("motifs")
    data, _ = graphs.load(cfg)
    model = graphs.build_encoder(cfg, data)
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.train.lr, weight_decay=cfg.train.weight_decay)
    sampler = EpochBatchSampler(
        num_items=len(data), batch_size=cfg.train.batch_size, seed=cfg.seed, drop_last=cfg.train.drop_last
    )
    labels = torch.as_tensor(data.labels, dtype=torch.long)
    losses = []
    model.train()
    for epoch in range(cfg.train.epochs):
        sampler.set_epoch(epoch)
        total, steps = 0.0, 0
        for step, indices in enumerate(sampler):
            local, global_, batch = model(Batch.from_data_list([data.graphs[i] for i in indices]))
            g = step_generator(cfg.seed, epoch, step)
            out = loss(local, global_, batch, labels=labels[indices], generator=g, details=True)
            optimizer.zero_grad(set_to_none=True)
            out.loss.backward()
            optimizer.step()
            total, steps = total + float(out.loss.detach()), steps + 1
        losses.append(total / steps)
    return model.embed_graphs(data.graphs, batch_size=cfg.eval.batch_size).numpy(), losses


def test_a_run_is_infograph_trained_by_hand_bit_for_bit(tmp_path: Path) -> None:
    cfg = load_config("graphs", TINY)
    res = train_run(cfg, tmp_path / "run", quiet=True)
    assert res is not None
    with thread_limits(1):
        emb, losses = _reference_loop(cfg, InfoGraphLoss(negatives=Hard(beta=1.0, rescale=True)))
    np.testing.assert_array_equal(res.test_features.numpy(), emb.astype(np.float32))
    assert [r["loss"] for r in res.history] == losses
    assert res.history[-1]["loss"] < res.history[0]["loss"]
    assert set(res.eval) == {"svm_cv", "svm_cv_fold_std"} and 0.0 <= res.eval["svm_cv"] <= 1.0
    # the saved run re-evaluates to the same numbers from its checkpoint
    again = evaluate_run(tmp_path / "run", figures_on=False, write=False)
    assert again.eval == res.eval
    summary = (tmp_path / "run" / "summary.md").read_text()
    assert "svm_cv" in summary and "final epoch" in summary


def test_runs_are_seeded(tmp_path: Path) -> None:
    a = train_run(load_config("graphs", TINY), tmp_path / "a", quiet=True)
    b = train_run(load_config("graphs", TINY), tmp_path / "b", quiet=True)
    c = train_run(load_config("graphs", [*TINY, "seed=1"]), tmp_path / "c", quiet=True)
    assert a is not None and b is not None and c is not None
    assert torch.equal(a.test_features, b.test_features) and a.history == b.history and a.eval == b.eval
    assert not torch.equal(a.test_features, c.test_features)
    assert a.test_features.shape == (40, 96) and torch.isfinite(a.test_features).all()
    assert [r["epoch"] for r in a.history] == [0.0, 1.0]


def test_resume_ends_where_an_uninterrupted_run_ends(tmp_path: Path) -> None:
    three = [*TINY, "train.epochs=3"]
    full = train_run(load_config("graphs", three), tmp_path / "full", quiet=True)
    # a run stopped after its first epoch: its last checkpoint, resumed to the full budget
    train_run(load_config("graphs", [*three, "train.epochs=1"]), tmp_path / "cut", quiet=True)
    (tmp_path / "resumed" / "checkpoints").mkdir(parents=True)
    shutil.copy(tmp_path / "cut" / "checkpoints" / "last.ckpt", tmp_path / "resumed" / "checkpoints")
    resumed = train_run(load_config("graphs", three), tmp_path / "resumed", quiet=True, resume=True)
    assert full is not None and resumed is not None
    assert resumed.history == full.history and resumed.eval == full.eval
    assert torch.equal(resumed.test_features, full.test_features)


def _batch(cfg: Any, size: int = 12) -> tuple[Any, Any, Any]:
    graphs = get_modality("motifs")
    data, _ = graphs.load(cfg)
    x, x2, labels, indices = graphs.dataset(cfg, data)[list(range(size))]
    assert x.num_graphs == size and x2.numel() == 0 and torch.equal(indices, torch.arange(size))
    return graphs, graphs.build_encoder(cfg, data), (x, labels)


def test_the_step_is_the_infograph_loss_of_the_batch() -> None:
    cfg = load_config("graphs", [*TINY, "loss.negatives={name: uniform}"])
    graphs, encoder, (x, labels) = _batch(cfg)
    out = graphs.step(cfg, encoder, build_loss(cfg), x, labels=labels, generator=step_generator(0, 0, 0))
    local, global_, batch = encoder(x)
    # InfoGraph's Jensen-Shannon form: mean over nodes of sp(-s+) + mean over the other graphs of sp(s)
    s = local @ global_.T
    own = F.one_hot(batch, x.num_graphs).bool()
    expected = (F.softplus(-s[own]) + F.softplus(s.masked_fill(own, 0.0)).masked_fill(own, 0.0).sum(1)
                / (x.num_graphs - 1)).mean()
    torch.testing.assert_close(out.loss, expected, rtol=1e-6, atol=1e-6)
    assert torch.equal(out.loss, InfoGraphLoss()(local, global_, batch, labels=labels))
    # hard negatives with the clipping trick, drawn from the step generator
    cfg = load_config("graphs", TINY)
    g1, g2 = step_generator(0, 1, 2), step_generator(0, 1, 2)
    out = graphs.step(cfg, encoder, build_loss(cfg), x, labels=labels, generator=g1)
    ref = InfoGraphLoss(negatives=Hard(beta=1.0, rescale=True))(
        local, global_, batch, labels=labels, generator=g2, details=True
    )
    assert torch.equal(out.loss, ref.loss) and out.diagnostics == ref.diagnostics


def test_labels_reach_the_loss_for_collision_free_negatives(tmp_path: Path) -> None:
    cfg = load_config("graphs", [*TINY, "loss.collision_free=true"])
    graphs, encoder, (x, _) = _batch(cfg)
    with pytest.raises(ValueError, match="collision_free=True needs"):
        graphs.step(cfg, encoder, build_loss(cfg), x, labels=None, generator=step_generator(0, 0, 0))
    res = train_run(cfg, tmp_path / "run", quiet=True)
    assert res is not None and torch.isfinite(res.test_features).all()


def test_encoder_and_embeddings_leave_the_global_random_state_alone() -> None:
    cfg = load_config("graphs", TINY)
    graphs = get_modality("motifs")
    data, _ = graphs.load(cfg)
    torch.manual_seed(123)
    before = torch.rand(3)
    torch.manual_seed(123)
    encoder = graphs.build_encoder(cfg, data)
    emb = encoder.embed_graphs(data.graphs, batch_size=7)
    assert torch.equal(torch.rand(3), before)
    assert emb.dtype == torch.float64 and emb.shape == (40, 96) and encoder.training
    # the batch size of the evaluation does not change what a graph embeds to
    torch.testing.assert_close(encoder.embed_graphs(data.graphs, batch_size=40), emb, rtol=1e-6, atol=1e-6)


# -- the authors' released loss as an option of the modality --------------------------------------


@pytest.mark.parametrize(("negatives", "beta"), [("{name: hard, beta: 2.0, rescale: true}", 2.0),
                                                 ("{name: uniform}", 0.0)])
def test_the_released_step_is_the_released_loss(negatives: str, beta: float) -> None:
    cfg = load_config("graphs", [*TINY, "data.graphs.released=true", f"loss.negatives={negatives}"])
    graphs, encoder, (x, labels) = _batch(cfg)
    out = graphs.step(cfg, encoder, build_loss(cfg), x, labels=labels, generator=step_generator(0, 0, 0))
    local, global_, batch = encoder(x)
    assert torch.equal(out.loss, released_local_global_loss(local, global_, batch, beta=beta))
    out.loss.backward()  # it trains the encoder
    assert all(p.grad is not None for p in encoder.parameters())


def test_a_released_run_trains_beside_the_paper_loss(tmp_path: Path) -> None:
    cfg = load_config("graphs", [*TINY, "data.graphs.released=true"])
    released = train_run(cfg, tmp_path / "r", quiet=True)
    paper = train_run(load_config("graphs", TINY), tmp_path / "p", quiet=True)
    assert released is not None and paper is not None
    assert torch.isfinite(released.test_features).all() and set(released.eval) == set(paper.eval)
    # same initial weights and batches, another loss
    assert released.history[0]["loss"] != paper.history[0]["loss"]


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("loss.negatives={name: ot, epsilon: 1.0}", "loss.negatives.name"),
        ("loss.negatives={name: hard, beta: 1.0, target_ess: 0.5}", "loss.negatives.target_ess"),
        ("loss.objective={name: infonce}", "loss.objective.name"),
        ("loss.objective={name: jsd, tau_plus: 0.1}", "loss.objective"),
        ("loss.temperature=0.5", "loss.temperature"),
        ("loss.normalize=true", "loss.normalize"),
        ("loss.num_negatives=4", "loss.num_negatives"),
        ("loss.collision_free=true", "loss.collision_free"),
        ("loss.anneal.enabled=true", "loss.anneal.enabled"),
    ],
)
def test_the_released_loss_refuses_what_it_would_ignore(override: str, key: str) -> None:
    with pytest.raises(ConfigError, match=rf"'{key.replace('.', '[.]')}'.*data\.graphs\.released"):
        load_config("graphs", ["data.graphs.released=true", override])


def test_graph_batches_keep_the_engine_layout() -> None:
    data = synthetic_motifs(num_graphs=10, seed=0)
    x, x2, labels, indices = GraphBatches(data)[[3, 1, 4]]
    assert x.num_graphs == 3 and x2.shape == (0,)
    assert labels.tolist() == data.labels[[3, 1, 4]].tolist() and indices.tolist() == [3, 1, 4]
