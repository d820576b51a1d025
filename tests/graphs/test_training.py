"""InfoGraph training, the method names, the comparison runner and the ``hardneg graphs`` CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from hardneg.cli import app
from hardneg.graphs.experiment import run_graph_compare, summarise
from hardneg.graphs.methods import parse_method
from hardneg.graphs.objective import InfoGraphLoss
from hardneg.data.graphs.synthetic import synthetic_motifs
from hardneg.graphs.train import train_infograph
from hardneg.negatives import Hard, OptimalTransport


@pytest.fixture(scope="module")
def small() -> object:
    return synthetic_motifs(num_graphs=60, num_classes=3, min_nodes=10, max_nodes=20, seed=0)


def test_training_is_deterministic_and_the_loss_falls(small) -> None:
    loss = InfoGraphLoss(negatives=Hard(beta=1.0, rescale=True))
    a = train_infograph(small, loss=loss, epochs=4, batch_size=16, seed=3)
    b = train_infograph(small, loss=loss, epochs=4, batch_size=16, seed=3)
    c = train_infograph(small, loss=loss, epochs=4, batch_size=16, seed=4)
    assert np.array_equal(a.embeddings, b.embeddings)
    assert not np.array_equal(a.embeddings, c.embeddings)
    assert a.embeddings.shape == (60, 96) and np.isfinite(a.embeddings).all()
    assert [r["epoch"] for r in a.history] == [0.0, 1.0, 2.0, 3.0]
    assert a.history[-1]["loss"] < a.history[0]["loss"]


def test_training_leaves_the_global_random_state_alone(small) -> None:
    torch.manual_seed(123)
    before = torch.rand(3)
    torch.manual_seed(123)
    train_infograph(small, loss=InfoGraphLoss(), epochs=1, batch_size=32, seed=0)
    assert torch.equal(torch.rand(3), before)


def test_a_batch_of_one_graph_is_never_formed(small) -> None:
    # 60 graphs in batches of 59: the last batch would hold one graph (no negative): it is dropped
    res = train_infograph(small, loss=InfoGraphLoss(), epochs=1, batch_size=59, seed=0)
    assert np.isfinite(res.history[0]["loss"])


def test_labels_reach_the_loss_for_collision_free_negatives(small) -> None:
    res = train_infograph(small, loss=InfoGraphLoss(collision_free=True), epochs=1, batch_size=16,
                          seed=0, use_labels=True)
    assert np.isfinite(res.embeddings).all()
    with pytest.raises(ValueError, match="collision_free=True needs"):
        train_infograph(small, loss=InfoGraphLoss(collision_free=True), epochs=1, batch_size=16, seed=0)


@pytest.mark.parametrize(("kw", "match"), [
    ({"epochs": -1}, "epochs must be an int >= 0"),
    ({"batch_size": 1}, "batch_size must be an int >= 2"),
    ({"lr": float("nan")}, "lr must be a number >= 0"),
])
def test_bad_training_arguments(small, kw: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        train_infograph(small, loss=InfoGraphLoss(), **kw)


def test_method_names() -> None:
    assert parse_method("infograph").beta == 0.0
    hard = parse_method("hard:2").build()
    assert isinstance(hard.negatives, Hard) and hard.negatives.beta == 2.0 and hard.negatives.rescale
    assert parse_method("debiased:0.1").build().objective.tau_plus == 0.1
    assert isinstance(parse_method("ot:1").build().negatives, OptimalTransport)
    both = parse_method("hard-debiased:1:0.2").build()
    assert both.negatives.beta == 1.0 and both.objective.tau_plus == 0.2
    for bad, match in [("hardest", "method must be one of"), ("hard", "takes 1 ':' parameter"),
                       ("hard:x", "must be a number"), ("debiased:1.5", "tau_plus"), ("hard:-1", "beta")]:
        with pytest.raises(ValueError, match=match):
            parse_method(bad)


def test_released_method_trains(small) -> None:
    res = train_infograph(small, loss=parse_method("released:1").build(), epochs=1, batch_size=16, seed=0)
    assert np.isfinite(res.embeddings).all()


def test_summary_pairs_seeds_with_the_baseline() -> None:
    runs = [
        {"method": "infograph", "seed": 0, "svm_accuracy": 0.5, "logistic_accuracy": 0.4, "train_seconds": 1},
        {"method": "infograph", "seed": 1, "svm_accuracy": 0.7, "logistic_accuracy": 0.6, "train_seconds": 1},
        {"method": "hard:1", "seed": 0, "svm_accuracy": 0.6, "logistic_accuracy": 0.4, "train_seconds": 1},
        {"method": "hard:1", "seed": 1, "svm_accuracy": 0.7, "logistic_accuracy": 0.5, "train_seconds": 1},
    ]
    rows = {r["method"]: r for r in summarise(runs)}
    assert rows["infograph"]["svm_mean"] == pytest.approx(0.6)
    assert rows["infograph"]["svm_std"] == pytest.approx(np.std([0.5, 0.7], ddof=1))
    assert rows["hard:1"]["svm_diff_mean"] == pytest.approx(0.05)
    assert rows["hard:1"]["svm_diff_std"] == pytest.approx(np.std([0.1, 0.0], ddof=1))
    assert rows["hard:1"]["svm_wins"] == "1/2"
    assert "svm_diff_mean" not in rows["infograph"]


def test_compare_writes_results_and_resumes(small, tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    kw = {"methods": ["infograph", "hard:2"], "seeds": [0, 1], "out": out, "epochs": 2, "batch_size": 16,
          "folds": 3}
    first = run_graph_compare(small, **kw)
    files = sorted(p.name for p in (out / "runs").iterdir())
    assert files == [f"{m}__seed{s}.json" for m in ("hard_2", "infograph") for s in (0, 1)]
    for name in ("summary.md", "summary.csv", "runs.csv", "accuracy_vs_beta.png"):
        assert (out / name).stat().st_size > 0
    assert "final epoch" in (out / "summary.md").read_text()
    # resume: a run on disk is reused, not retrained (its file is marked and the mark survives)
    path = out / "runs" / "hard_2__seed1.json"
    row = json.loads(path.read_text())
    row["svm_accuracy"] = 0.123
    path.write_text(json.dumps(row))
    second = run_graph_compare(small, **kw)
    assert next(r for r in second.runs if r["method"] == "hard:2" and r["seed"] == 1)["svm_accuracy"] == 0.123
    same = [r for r in second.runs if r["method"] == "infograph"]
    assert same == [r for r in first.runs if r["method"] == "infograph"]
    assert not list(out.rglob("*.partial"))


def test_compare_refuses_bad_method_lists(small, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="must not repeat"):
        run_graph_compare(small, methods=["hard:1", "hard:1"], seeds=[0], out=tmp_path)
    with pytest.raises(ValueError, match="method must be one of"):
        run_graph_compare(small, methods=["nope"], seeds=[0], out=tmp_path)
    assert not (tmp_path / "runs").exists()


def test_cli_graphs_train_and_compare(tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(app, ["graphs", "train", "--graphs", "60", "--epochs", "1", "--method", "hard:1"])
    assert res.exit_code == 0, res.output
    assert "SVM accuracy (final epoch)" in res.output
    out = tmp_path / "c"
    res = runner.invoke(app, ["graphs", "compare", "--graphs", "60", "--epochs", "1", "--methods",
                              "infograph,hard:1", "--seeds", "0,1", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "| hard:1 | 2 |" in res.output
    bad = runner.invoke(app, ["graphs", "compare", "--data", "tu", "--out", str(out)])
    assert bad.exit_code == 2 and "--data tu needs --root DIR and --name NAME" in bad.output
    bad = runner.invoke(app, ["graphs", "train", "--method", "hard:x"])
    assert bad.exit_code == 2 and "must be a number" in bad.output
