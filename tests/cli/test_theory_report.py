"""``hardneg theory report RUN`` on the run folder of ``hardneg train`` (tiny budgets)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from hardneg.cli import app
from tests.pipeline.helpers import tiny

runner = CliRunner()

BOUND_ROWS = ("Arora Lemma 4.3", "Arora Theorem 4.5", "Arora Thm B.1 / p (k=5)", "Ash Theorem 1 (K=5)",
              "Ash Theorem 3, reconstructed (K=5)")


def invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def latent_run(tmp_path_factory):
    run = tmp_path_factory.mktemp("runs") / "latent"
    result = invoke("train", "latent_classes", "data.latent.train_size=384", "data.latent.test_size=200",
                    "train.epochs=1", "train.batch_size=64", "train.progress=false", "eval.knn_k=20",
                    "eval.kwise=[1]", "eval.kwise_tasks=20", "eval.figures=false", "--out", str(run),
                    "--quiet")
    assert result.exit_code == 0, result.output
    return run


def test_train_writes_features_npz(latent_run):
    with np.load(latent_run / "features.npz") as data:
        assert data["features"].shape == (200, 32) and data["features"].dtype == np.float32
        assert data["labels"].shape == (200,) and data["labels"].dtype == np.int64


def test_report_on_a_run_folder_lists_every_bound(latent_run, tmp_path):
    out = tmp_path / "report.json"
    result = invoke("theory", "report", str(latent_run), "--plain", "--tuples", "2000", "--json", str(out))
    assert result.exit_code == 0, result.output
    for row in BOUND_ROWS:
        assert row in result.output, row
    for quantity in ("L_un (k=1)", "collision rate (empirical)", "s(f)", "tau_K (K=5)"):
        assert quantity in result.output
    report = json.loads(out.read_text())
    assert [r["theorem"] for r in report["bounds"]] == list(BOUND_ROWS)
    assert report["settings"]["num_samples"] == 200 and report["settings"]["dim"] == 32
    assert report["quantities"]["num_classes"] == 10.0
    # 10 equiprobable latent classes: a negative shares the anchor's class with probability ~1/10
    assert 0.05 < report["quantities"]["tau (k=1)"] < 0.15


def test_report_rich_tables(latent_run):
    result = invoke("theory", "report", str(latent_run), "--tuples", "1000")
    assert result.exit_code == 0 and "Measured vs bound" in result.output and "Lemma 4.3" in result.output


def test_image_run_folder_has_features_too(tmp_path):
    run = tmp_path / "digits"
    result = invoke("train", "digits", *tiny("eval.linear=false", "eval.figures=false"), "--out", str(run),
                    "--quiet")
    assert result.exit_code == 0, result.output
    with np.load(run / "features.npz") as data:
        assert data["features"].shape == (120, 16) and data["labels"].shape == (120,)
    report = invoke("theory", "report", str(run), "--plain", "--tuples", "500")
    assert report.exit_code == 0 and "Ash Theorem 1" in report.output


def test_report_on_a_folder_without_features_names_the_file(tmp_path):
    result = invoke("theory", "report", str(tmp_path))
    assert result.exit_code == 2 and "features.npz" in result.output


def test_bad_simulator_value_on_the_command_line_exits_2_naming_the_key(tmp_path):
    result = invoke("train", "latent_classes", "data.latent.num_classes=0", "--out", str(tmp_path / "x"))
    assert result.exit_code == 2
    assert "'data.latent.num_classes': must be >= 2, got 0" in result.output
