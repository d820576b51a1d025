"""The ``hardneg`` command line: errors, config printing, train/evaluate/compare/sweep on a tiny budget."""

from __future__ import annotations

import csv
import json

import pytest
import yaml
from typer.testing import CliRunner

from hardneg.cli import app
from hardneg.pipeline.history import read_history
from tests.pipeline.helpers import tiny

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def test_unknown_key_exits_2_and_lists_valid_keys():
    result = invoke("train", "digits", "train.epoch=3")
    assert result.exit_code == 2
    assert "unknown config key 'train.epoch'" in result.output
    assert "did you mean 'train.epochs'" in result.output
    assert "batch_size" in result.output and "lr" in result.output


def test_invalid_value_names_key_constraint_value_and_choices():
    result = invoke("compare", "digits_compare", "loss.negatives.name=hardest")
    assert result.exit_code == 2
    assert "'loss.negatives.name'" in result.output
    assert "must be one of ['hard', 'ot', 'uniform'], got 'hardest' (did you mean 'hard'?)" in result.output


def test_a_parameter_of_another_distribution_is_refused_with_the_valid_keys():
    result = invoke("train", "digits", "loss.negatives.name=hard", "loss.negatives.epsilon=0.5")
    assert result.exit_code == 2
    assert result.output.count("error:") == 1
    assert "'loss.negatives.epsilon'" in result.output and "beta, detach_weights, rescale" in result.output


def test_missing_config_file_is_named():
    result = invoke("sweep", "missing_config.yaml")
    assert result.exit_code == 2
    assert "config file not found: 'missing_config.yaml'" in result.output


def test_malformed_override_is_explained():
    result = invoke("train", "digits", "loss.negatives.beta")
    assert result.exit_code == 2 and "key=value" in result.output


def test_missing_run_folder_is_named(tmp_path):
    result = invoke("evaluate", str(tmp_path / "nope"))
    assert result.exit_code == 2 and "nope" in result.output and "config.yaml" in result.output


def test_config_prints_the_resolved_yaml_and_configs_lists_packaged():
    result = invoke("config", "digits", "loss.negatives.beta=0.25", "train.epochs=3")
    assert result.exit_code == 0
    data = yaml.safe_load(result.output)
    assert data["loss"]["negatives"]["beta"] == 0.25 and data["train"]["epochs"] == 3
    listed = invoke("configs").output.split()
    assert "digits" in listed and "digits_compare" in listed


def test_train_then_evaluate_a_saved_run(tmp_path):
    run = tmp_path / "run"
    trained = invoke("train", "digits", *tiny("eval.figures=false"), "--out", str(run), "-q")
    assert trained.exit_code == 0, trained.output
    first = json.loads((run / "metrics.json").read_text())["eval"]
    (run / "metrics.json").unlink()
    evaluated = invoke("evaluate", str(run), "--figures")
    assert evaluated.exit_code == 0, evaluated.output
    assert "linear_top1=" in evaluated.output and "knn_top5=" in evaluated.output
    again = json.loads((run / "metrics.json").read_text())["eval"]
    assert again == pytest.approx(first, abs=1e-9)
    assert (run / "figures" / "cosine_histograms.png").is_file()


@pytest.mark.slow
def test_compare_writes_a_table_over_strategies_and_seeds(tmp_path):
    cfg = tmp_path / "cmp.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "name": "cmp",
                "compare": {
                    "seeds": [0, 1],
                    "strategies": [
                        {"name": "simclr", "overrides": {}},
                        {
                            "name": "hard",
                            "overrides": {
                                "loss.negatives": {"name": "hard", "beta": 1.0},
                                "loss.objective": {"name": "debiased", "tau_plus": 0.1},
                            },
                        },
                    ],
                },
            }
        )
    )
    out = tmp_path / "out"
    result = invoke("compare", str(cfg), *tiny("eval.every_n_epochs=1"), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "| simclr |" in result.output and "| hard |" in result.output and "±" in result.output
    rows = list(csv.DictReader((out / "results.csv").open()))
    assert sorted((r["strategy"], r["run"]) for r in rows) == [
        ("hard", "hard/seed0"),
        ("hard", "hard/seed1"),
        ("simclr", "simclr/seed0"),
        ("simclr", "simclr/seed1"),
    ]
    table = json.loads((out / "results.json").read_text())["table"]
    runs = {(r["strategy"], r["run"]): float(r["knn_top1"]) for r in rows}
    mean_hard = (runs[("hard", "hard/seed0")] + runs[("hard", "hard/seed1")]) / 2
    assert table["hard"]["knn_top1"][0] == pytest.approx(mean_hard)
    for fig in ("accuracy.png", "cosine_histograms.png", "knn_vs_epochs.png"):
        assert (out / "figures" / fig).is_file(), fig
    # --resume reuses the finished runs
    again = invoke("compare", str(cfg), *tiny("eval.every_n_epochs=1"), "--out", str(out), "--resume")
    assert again.exit_code == 0 and again.output.count("reused") == 4
    # ... and never a run whose config changed: those are trained again, naming what changed
    changed = invoke("compare", str(cfg), *tiny("eval.every_n_epochs=1", "train.epochs=2"), "--out", str(out),
                     "--resume")
    assert changed.exit_code == 0, changed.output
    assert changed.output.count("reused") == 0 and changed.output.count("train.epochs: 1 -> 2") == 4
    rows = list(csv.DictReader((out / "results.csv").open()))
    for row in rows:
        saved = (out / row["run"] / "config.yaml").read_text()
        assert "epochs: 2" in saved
        assert len(read_history(out / row["run"] / "metrics.csv")) == 2


@pytest.mark.slow
def test_sweep_over_beta_writes_table_and_curve(tmp_path):
    out = tmp_path / "sweep"
    result = invoke(
        "sweep",
        "digits",
        *tiny("loss.negatives.name=hard", "eval.linear=false"),
        "sweep.grid={loss.negatives.beta: [0.0, 2.0]}",
        "sweep.seeds=[0]",
        "--out",
        str(out),
    )
    assert result.exit_code == 0, result.output
    assert "| beta=0.0 |" in result.output and "| beta=2.0 |" in result.output
    assert (out / "figures" / "accuracy_vs_beta.png").is_file()
    cfgs = [yaml.safe_load((out / p / "seed0" / "config.yaml").read_text()) for p in ("beta=0.0", "beta=2.0")]
    assert [c["loss"]["negatives"]["beta"] for c in cfgs] == [0.0, 2.0]
    # two worker processes give the same results as one
    parallel = tmp_path / "parallel"
    again = invoke(
        "sweep",
        "digits",
        *tiny("loss.negatives.name=hard", "eval.linear=false"),
        "sweep.grid={loss.negatives.beta: [0.0, 2.0]}",
        "sweep.seeds=[0]",
        "sweep.workers=2",
        "--out",
        str(parallel),
    )
    assert again.exit_code == 0, again.output
    one = json.loads((out / "results.json").read_text())["table"]
    two = json.loads((parallel / "results.json").read_text())["table"]
    assert one == two and one["beta=0.0"] != one["beta=2.0"]


def test_sweep_grid_keys_are_validated():
    result = invoke("sweep", "digits", "sweep.grid={loss.negatives.bta: [0, 1]}")
    assert result.exit_code == 2 and "sweep.grid" in result.output and "'loss.negatives.bta'" in result.output
